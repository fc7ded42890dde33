//! The model providers a repository may ask for.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// A model provider a policy may name. `claude-code` and `codex-cli`
/// (reference providers that drive a local subprocess) parse, for
/// compatibility, and are refused when a run calls them, so the operator's
/// fallback provider answers ([`Self::needs_subprocess`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
