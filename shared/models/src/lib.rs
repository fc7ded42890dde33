//! Model providers for Agent Zero Edge: one [`ModelClient`] port, five
//! HTTP adapters (OpenAI, Anthropic, Google Gemini, Vercel AI Gateway,
//! OpenAI-compatible servers), one decision parser shared by all of them,
//! a [`FallbackProvider`], provider selection from operator variables, and
//! the context budget.
//!
//! I/O boundary: every outbound call goes through
//! [`agent_zero_ports::HttpClient`] (the host's `Fetch` or
//! `spin_sdk::http::send`) with a [`agent_zero_ports::RequestTimeout`];
//! latency is read from [`agent_zero_ports::Clock`]. Nothing here sleeps:
//! a 429 whose `retry-after` fits the caller's budget comes back as
//! [`ModelError::RetryAfter`] and the engine re-enqueues its tick with that
//! delay. `claude-code` and `codex-cli` need a subprocess and are refused
//! as unavailable, so a configured fallback takes over.
//!
//! Credentials are held in [`Secret`] (never printed) and appear only in
//! their provider's auth header; errors carry redacted, capped details.

#![forbid(unsafe_code)]
#![allow(async_fn_in_trait)]

#[cfg(not(any(feature = "openai", feature = "anthropic", feature = "google")))]
compile_error!("agent-zero-models needs at least one adapter: the `openai`, `anthropic` or `google` feature");

#[cfg(feature = "anthropic")]
mod anthropic;
mod config;
mod context;
mod decode;
mod error;
mod fallback;
#[cfg(feature = "google")]
mod gemini;
mod http_provider;
mod kind;
#[cfg(feature = "openai")]
mod openai;
mod prompt;
mod provider;
mod redact;
mod schema;
mod select;
mod wire;

#[cfg(feature = "anthropic")]
pub use anthropic::ANTHROPIC_VERSION;
pub use config::{
    ConfigError, DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_TIMEOUT_MS, Pricing, ProviderConfig, default_base_url,
};
pub use context::{ContextPiece, MIN_PARTIAL_BYTES, PieceKind, RenderedContext, render_context};
pub use decode::{AnswerError, MAX_VIOLATION_CHARS, decision_from_value, parse_decision};
pub use error::{ErrorClass, ModelError, UnusableKind};
pub use fallback::FallbackProvider;
pub use http_provider::{CLI_REFUSAL, HttpProvider};
pub use kind::{built_providers, credential_variables, missing_adapter};
pub use prompt::render_user_message;
pub use provider::{DecisionRequest, ModelAnswer, ModelClient, ModelRef, SchemaName};
pub use redact::redact;
pub use schema::{decision_gemini_schema, decision_json_schema};
pub use select::{
    BASE_URL_VARIABLE, FALLBACK_MODEL_VARIABLE, FALLBACK_PROVIDER_VARIABLE, MODEL_VARIABLE, ModelSelection,
    default_model, select_models,
};
