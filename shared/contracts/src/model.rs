//! The model a repository asks for: one provider vocabulary for the
//! policy, the model layer and the operator's settings.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// A model provider a policy may name. `claude-code` and `codex-cli`
/// (reference providers that drive a local subprocess) parse, for
/// compatibility, and are refused when a run calls them, so the operator's
/// fallback provider answers ([`Self::needs_subprocess`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelProvider {
    AiGateway,
    Anthropic,
    Google,
    OpenAi,
    OpenAiCompatible,
    ClaudeCode,
    CodexCli,
}

impl ModelProvider {
    /// Every provider, in declaration order.
    pub const ALL: &'static [Self] = &[
        Self::AiGateway,
        Self::Anthropic,
        Self::Google,
        Self::OpenAi,
        Self::OpenAiCompatible,
        Self::ClaudeCode,
        Self::CodexCli,
    ];

    /// The wire name (`openai-compatible`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AiGateway => "ai-gateway",
            Self::Anthropic => "anthropic",
            Self::Google => "google",
            Self::OpenAi => "openai",
            Self::OpenAiCompatible => "openai-compatible",
            Self::ClaudeCode => "claude-code",
            Self::CodexCli => "codex-cli",
        }
    }

    /// Whether this provider drives a local CLI, which the edge cannot start.
    pub const fn needs_subprocess(self) -> bool {
        matches!(self, Self::ClaudeCode | Self::CodexCli)
    }

    /// Parses a wire name; the error says why a name is not usable.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(provider) = Self::ALL.iter().find(|p| p.as_str() == text) {
            return Ok(*provider);
        }
        Err(format!(
            "unknown model provider `{text}`, expected one of: {}",
            Self::ALL.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
        ))
    }
}

impl std::fmt::Display for ModelProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ModelProvider {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ModelProvider {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(ProviderVisitor)
    }
}

/// Fails inside the visitor so the YAML error carries `model.provider`.
struct ProviderVisitor;

impl de::Visitor<'_> for ProviderVisitor {
    type Value = ModelProvider;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a model provider name")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        ModelProvider::parse(text).map_err(E::custom)
    }
}

/// Which model the repository asks for. Never an endpoint or a key: the
/// operator's environment holds those (`model.baseUrl` is an error).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ModelPolicy {
    pub provider: ModelProvider,
    /// Non-blank model name. Absent, the operator's `AGENT_ZERO_MODEL`
    /// names it, else [`DEFAULT_MODEL`], as in the reference (the core has
    /// no environment: the model layer reads the variable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// USD per million input tokens; cost is reported only when both are set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_cost_per_million_tokens: Option<f64>,
    /// USD per million output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_cost_per_million_tokens: Option<f64>,
}

/// The model of a policy that names none, when `AGENT_ZERO_MODEL` is unset.
pub const DEFAULT_MODEL: &str = "gpt-5";

impl Default for ModelPolicy {
    fn default() -> Self {
        Self {
            provider: ModelProvider::OpenAiCompatible,
            name: None,
            input_cost_per_million_tokens: None,
            output_cost_per_million_tokens: None,
        }
    }
}

impl ModelPolicy {
    /// Cost in USD of a call, when both prices are configured; never guessed.
    pub fn cost_usd(&self, input_tokens: u64, output_tokens: u64) -> Option<f64> {
        let input = self.input_cost_per_million_tokens?;
        let output = self.output_cost_per_million_tokens?;
        Some((input_tokens as f64 * input + output_tokens as f64 * output) / 1_000_000.0)
    }
}
