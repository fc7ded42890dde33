//! The model providers a repository may ask for.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// A model API the edge can call over HTTP. `claude-code` and `codex-cli`
/// (reference providers that drive a local subprocess) are refused when
/// parsed, with that reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelProvider {
    AiGateway,
    Anthropic,
    Google,
    OpenAi,
    OpenAiCompatible,
}

impl ModelProvider {
    /// Every provider, in declaration order.
    pub const ALL: &'static [Self] =
        &[Self::AiGateway, Self::Anthropic, Self::Google, Self::OpenAi, Self::OpenAiCompatible];

    /// The wire name (`openai-compatible`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AiGateway => "ai-gateway",
            Self::Anthropic => "anthropic",
            Self::Google => "google",
            Self::OpenAi => "openai",
            Self::OpenAiCompatible => "openai-compatible",
        }
    }

    /// Parses a wire name; the error says why a name is not usable.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(provider) = Self::ALL.iter().find(|p| p.as_str() == text) {
            return Ok(*provider);
        }
        Err(match text {
            "claude-code" | "codex-cli" => {
                format!("`{text}` drives a local subprocess, which the edge does not have")
            }
            _ => format!(
                "unknown model provider `{text}`, expected one of: {}",
                Self::ALL.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
            ),
        })
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
