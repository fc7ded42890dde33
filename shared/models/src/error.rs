//! Why a model call produced no decision, classified for the caller.
//!
//! Three outcomes matter to the engine: the provider was *unavailable*
//! (a fallback may try; the tick may be retried), the answer was *unusable*
//! (an ordinary fact: the next tick shows the model its violation), or the
//! request was *rejected* (operator configuration to fix; nobody retries).
//! Every message is redacted and short: no credential, auth header or full
//! response body ever reaches a variant.

use agent_zero_contracts::Usage;
use thiserror::Error;

use agent_zero_contracts::ModelProvider;

/// What was wrong with an answer the provider did give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnusableKind {
    /// The text was not JSON.
    MalformedJson,
    /// JSON, but not a decision our schema accepts.
    SchemaViolation,
    /// The model or the provider's filter declined to answer.
    Refusal,
    /// Generation stopped at the output token limit.
    Truncated,
}

impl UnusableKind {
    /// A stable code for records (`malformed-json`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::MalformedJson => "malformed-json",
            Self::SchemaViolation => "schema-violation",
            Self::Refusal => "refusal",
            Self::Truncated => "truncated",
        }
    }
}

/// How the caller should treat a [`ModelError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The provider could not answer: a fallback may be tried.
    Unavailable,
    /// Rate limited within the caller's budget: call again after this many ms.
    RetryAfter(u64),
    /// The provider refused the request itself (credential, model name,
    /// request shape): an operator must fix the configuration.
    Rejected,
    /// The answer could not be used: record it and show the model next tick.
    Unusable,
}

/// Why no decision came back.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider cannot run at the edge (`claude-code`, `codex-cli`).
    #[error("model provider `{provider}` is refused at the edge: {reason}")]
    Refused { provider: ModelProvider, reason: &'static str },
    /// Connection, TLS, or a destination the host does not allow.
    #[error("model provider `{provider}` could not be reached: {detail}")]
    Transport { provider: ModelProvider, detail: String },
    /// No response within the request's timeout.
    #[error("model provider `{provider}` did not answer within {timeout_ms} ms")]
    Timeout { provider: ModelProvider, timeout_ms: u64 },
    /// HTTP 5xx (including Anthropic's 529 overloaded) or 408.
    #[error("model provider `{provider}` failed with HTTP {status}: {detail}")]
    ServerError { provider: ModelProvider, status: u16, detail: String },
    /// HTTP 429 with no retry hint, or one longer than the caller's budget.
    #[error("model provider `{provider}` is rate limited{}", retry_suffix(*retry_after_ms))]
    RateLimited { provider: ModelProvider, retry_after_ms: Option<u64> },
    /// HTTP 429 whose retry hint fits the caller's budget.
    #[error("model provider `{provider}` is rate limited; retry after {retry_after_ms} ms")]
    RetryAfter { provider: ModelProvider, retry_after_ms: u64 },
    /// HTTP 4xx other than 408/429: bad credential, unknown model, bad request.
    #[error("model provider `{provider}` rejected the request with HTTP {status}: {detail}")]
    Rejected { provider: ModelProvider, status: u16, detail: String },
    /// The configuration cannot form a request (e.g. a key no header can carry).
    #[error("model provider `{provider}` is misconfigured: {reason}")]
    Misconfigured { provider: ModelProvider, reason: &'static str },
    /// A 2xx whose envelope is not the provider's response shape.
    #[error("model provider `{provider}` sent an unreadable response: {detail}")]
    BadResponse { provider: ModelProvider, detail: String },
    /// The provider answered, but the answer is not a usable decision.
    #[error("model answer from `{provider}` is unusable ({}): {violation}", kind.as_str())]
    Unusable {
        provider: ModelProvider,
        kind: UnusableKind,
        /// Short, redacted, safe to show the model on its next attempt.
        violation: String,
        /// Tokens were spent all the same.
        usage: Usage,
    },
    /// The primary was unavailable and so was the fallback.
    #[error("{primary}; the fallback failed too: {fallback}")]
    FallbackFailed { primary: Box<Self>, fallback: Box<Self> },
}

fn retry_suffix(retry_after_ms: Option<u64>) -> String {
    match retry_after_ms {
        Some(ms) => format!(" for {ms} ms, beyond the retry budget"),
        None => String::new(),
    }
}

impl ModelError {
    /// How the caller should treat this error.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Refused { .. }
            | Self::Transport { .. }
            | Self::Timeout { .. }
            | Self::ServerError { .. }
            | Self::RateLimited { .. }
            | Self::BadResponse { .. } => ErrorClass::Unavailable,
            Self::RetryAfter { retry_after_ms, .. } => ErrorClass::RetryAfter(*retry_after_ms),
            Self::Rejected { .. } | Self::Misconfigured { .. } => ErrorClass::Rejected,
            Self::Unusable { .. } => ErrorClass::Unusable,
            Self::FallbackFailed { fallback, .. } => fallback.class(),
        }
    }

    /// Whether a fallback provider may be tried.
    pub fn is_unavailable(&self) -> bool {
        self.class() == ErrorClass::Unavailable
    }

    /// The description to record and show the model next tick, when the
    /// answer was unusable.
    pub fn violation(&self) -> Option<&str> {
        match self {
            Self::Unusable { violation, .. } => Some(violation),
            Self::FallbackFailed { fallback, .. } => fallback.violation(),
            _ => None,
        }
    }

    /// Tokens spent on an unusable answer.
    pub fn usage(&self) -> Option<&Usage> {
        match self {
            Self::Unusable { usage, .. } => Some(usage),
            Self::FallbackFailed { fallback, .. } => fallback.usage(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        let p = ModelProvider::OpenAi;
        let usage = Usage { input_tokens: 1, output_tokens: 2, latency_ms: 3, cost_usd: None };
        let unusable = ModelError::Unusable {
            provider: p,
            kind: UnusableKind::Truncated,
            violation: "cut".into(),
            usage: usage.clone(),
        };
        assert_eq!(unusable.class(), ErrorClass::Unusable);
        assert_eq!(unusable.violation(), Some("cut"));
        assert_eq!(unusable.usage(), Some(&usage));
        assert!(ModelError::Timeout { provider: p, timeout_ms: 5 }.is_unavailable());
        assert!(!ModelError::Rejected { provider: p, status: 401, detail: String::new() }.is_unavailable());
        let retry = ModelError::RetryAfter { provider: p, retry_after_ms: 900 };
        assert_eq!(retry.class(), ErrorClass::RetryAfter(900));
        let limited = ModelError::RateLimited { provider: p, retry_after_ms: Some(60_000) };
        assert_eq!(
            limited.to_string(),
            "model provider `openai` is rate limited for 60000 ms, beyond the retry budget"
        );
        let both = ModelError::FallbackFailed { primary: Box::new(limited), fallback: Box::new(unusable) };
        assert_eq!(both.class(), ErrorClass::Unusable);
        assert_eq!(both.violation(), Some("cut"));
    }
}
