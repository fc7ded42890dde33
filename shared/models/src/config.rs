//! One provider's operator-side settings: where to send, with which key,
//! at what price. Built by [`crate::select_models`]; never from policy alone.

use thiserror::Error;

use agent_zero_contracts::ModelProvider;
use agent_zero_ports::Secret;

/// Default per-request timeout (the reference's 120 s).
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Default output token limit: a plan carries whole files.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 16_384;

/// Official endpoints; `openai-compatible` defaults to OpenAI like the reference.
pub const fn default_base_url(kind: ModelProvider) -> Option<&'static str> {
    match kind {
        ModelProvider::OpenAi | ModelProvider::OpenAiCompatible => Some("https://api.openai.com/v1"),
        ModelProvider::Anthropic => Some("https://api.anthropic.com/v1"),
        ModelProvider::Google => Some("https://generativelanguage.googleapis.com/v1beta"),
        ModelProvider::AiGateway => Some("https://ai-gateway.vercel.sh/v1"),
        ModelProvider::ClaudeCode | ModelProvider::CodexCli => None,
    }
}

/// Explicit prices from policy (`model.inputCostPerMillionTokens`,
/// `model.outputCostPerMillionTokens`); cost is never guessed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    pub input_per_million_tokens: f64,
    pub output_per_million_tokens: f64,
}

impl Pricing {
    /// USD for the given token counts.
    pub fn cost_usd(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input_per_million_tokens + output_tokens as f64 * self.output_per_million_tokens)
            / 1_000_000.0
    }
}

/// Everything one adapter needs. `Debug` shows no key.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    pub kind: ModelProvider,
    pub model: String,
    /// Without a trailing slash (`https://api.openai.com/v1`).
    pub base_url: String,
    /// `None` only for CLI providers and key-less local servers.
    pub api_key: Option<Secret>,
    pub pricing: Option<Pricing>,
    pub timeout_ms: u64,
    pub max_output_tokens: u32,
}

impl ProviderConfig {
    /// A config at the provider's official endpoint with default limits.
    pub fn new(kind: ModelProvider, model: impl Into<String>, api_key: Option<Secret>) -> Self {
        Self {
            kind,
            model: model.into(),
            base_url: default_base_url(kind).unwrap_or_default().to_owned(),
            api_key,
            pricing: None,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        }
    }
}

/// Why the operator configuration cannot select a model.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A provider name outside the closed list.
    #[error("`{field}`: unknown model provider `{value}`")]
    UnknownProvider { field: &'static str, value: String },
    /// The model name is empty, too long, or has characters its URL cannot carry.
    #[error("`{field}`: invalid model name: {reason}")]
    InvalidModelName { field: &'static str, reason: &'static str },
    /// A price is negative or not a number.
    #[error("`{field}` must be a non-negative number")]
    InvalidCost { field: &'static str },
    /// The provider's adapter is not in this build.
    #[error(
        "`{field}`: model provider `{provider}` is left out of this build (it has {built}; add `{provider}` to `AGENT_ZERO_PROVIDERS` when building)"
    )]
    NotBuilt { field: &'static str, provider: ModelProvider, built: String },
    /// The provider's credential variable is not set.
    #[error("model provider `{provider}` needs `{variable}`")]
    MissingCredential { provider: ModelProvider, variable: &'static str },
    /// A credential holds characters an HTTP header cannot carry.
    #[error("`{variable}` is not a valid header value")]
    InvalidCredential { variable: &'static str },
    /// `AGENT_ZERO_MODEL_BASE_URL` is not a plain http(s) URL.
    #[error("`AGENT_ZERO_MODEL_BASE_URL`: {reason}")]
    InvalidBaseUrl { reason: &'static str },
    /// Only one of the two fallback variables is set.
    #[error("`AGENT_ZERO_MODEL_FALLBACK_PROVIDER` and `AGENT_ZERO_MODEL_FALLBACK_MODEL` must be set together")]
    IncompleteFallback,
    /// The fallback names a CLI provider, which is never a fallback.
    #[error("`AGENT_ZERO_MODEL_FALLBACK_PROVIDER` must be an API-key provider, not `{provider}`")]
    CliFallback { provider: ModelProvider },
}
