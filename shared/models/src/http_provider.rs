//! The shared pipeline every HTTP provider runs: build the wire request,
//! send it through the host's [`HttpClient`] with a [`RequestTimeout`],
//! time it with the [`Clock`], classify the status, read the envelope, and
//! hand the answer to the one decision parser.

use agent_zero_ports::{Clock, HttpClient, HttpError, RequestTimeout, ResponseLimit};

#[cfg(feature = "anthropic")]
use crate::anthropic;
use crate::decode::{decision_from_value, parse_decision};
#[cfg(feature = "google")]
use crate::gemini;
#[cfg(feature = "openai")]
use crate::openai;
use agent_zero_ports::Secret;

use crate::redact::redact;
use crate::wire::{Answer, Reply, error_detail, retry_after_ms};
use crate::{
    DecisionRequest, ModelAnswer, ModelClient, ModelError, ModelRef, ProviderConfig, UnusableKind, missing_adapter,
};
use agent_zero_contracts::ModelProvider;

/// Why CLI providers are refused here.
pub const CLI_REFUSAL: &str = "it drives a local CLI subprocess, which the edge cannot run";

/// Why a provider whose adapter this build leaves out is refused.
const NOT_BUILT: &str = "its adapter is not in this build";

/// The most bytes a provider's answer may carry: a decision is a few KiB
/// of JSON, so 4 MiB leaves room for verbose envelopes while a provider
/// answering without end is cut off by the host instead of held whole.
pub(crate) const MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;

/// A provider reached over outbound HTTP, configured by a [`ProviderConfig`].
pub struct HttpProvider<'a, C, K> {
    config: &'a ProviderConfig,
    http: &'a C,
    clock: &'a K,
}

impl<C, K> std::fmt::Debug for HttpProvider<'_, C, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider").field("config", self.config).finish_non_exhaustive()
    }
}

impl<'a, C: HttpClient, K: Clock> HttpProvider<'a, C, K> {
    /// An adapter over the host's HTTP client and clock.
    pub fn new(config: &'a ProviderConfig, http: &'a C, clock: &'a K) -> Self {
        Self { config, http, clock }
    }

    fn secrets(&self) -> Vec<&Secret> {
        self.config.api_key.iter().collect()
    }

    fn build(&self, request: &DecisionRequest) -> Result<http::Request<Vec<u8>>, ModelError> {
        let provider = self.config.kind;
        let built = match provider {
            ModelProvider::ClaudeCode | ModelProvider::CodexCli => {
                return Err(ModelError::Refused { provider, reason: CLI_REFUSAL });
            }
            // Selection refuses these first (`ConfigError::NotBuilt`); a
            // configuration made by hand meets the same refusal here.
            _ if missing_adapter(provider).is_some() => Err(NOT_BUILT),
            #[cfg(feature = "anthropic")]
            ModelProvider::Anthropic => anthropic::build(self.config, request),
            #[cfg(feature = "google")]
            ModelProvider::Google => gemini::build(self.config, request),
            // The rest are the OpenAI-style APIs.
            #[cfg(feature = "openai")]
            _ => openai::build(self.config, request),
            #[cfg(not(feature = "openai"))]
            _ => Err(NOT_BUILT),
        };
        let mut built = built.map_err(|reason| ModelError::Misconfigured { provider, reason })?;
        built.extensions_mut().insert(RequestTimeout(self.config.timeout_ms));
        ResponseLimit::set(&mut built, MAX_RESPONSE_BYTES);
        Ok(built)
    }

    fn read(&self, body: &[u8], request: &DecisionRequest) -> Result<Reply, String> {
        #[cfg(not(feature = "anthropic"))]
        let _ = request;
        match self.config.kind {
            // `build` refused the call before anything was sent.
            kind if missing_adapter(kind).is_some() => Err(NOT_BUILT.to_owned()),
            #[cfg(feature = "anthropic")]
            ModelProvider::Anthropic => anthropic::parse(body, request.schema.wire_name()),
            #[cfg(feature = "google")]
            ModelProvider::Google => gemini::parse(body),
            #[cfg(feature = "openai")]
            _ => openai::parse(body),
            #[cfg(not(feature = "openai"))]
            _ => Err(NOT_BUILT.to_owned()),
        }
    }

    fn status_error(&self, response: &http::Response<Vec<u8>>, budget_ms: u64) -> ModelError {
        let provider = self.config.kind;
        let status = response.status().as_u16();
        let detail = || redact(&error_detail(response.body()), &self.secrets());
        match status {
            429 => match retry_after_ms(response.headers(), response.body()) {
                Some(ms) if ms <= budget_ms => ModelError::RetryAfter { provider, retry_after_ms: ms },
                hint => ModelError::RateLimited { provider, retry_after_ms: hint },
            },
            408 | 500..=599 => ModelError::ServerError { provider, status, detail: detail() },
            400..=499 => ModelError::Rejected { provider, status, detail: detail() },
            _ => ModelError::BadResponse { provider, detail: format!("unexpected HTTP status {status}") },
        }
    }
}

impl<C: HttpClient, K: Clock> ModelClient for HttpProvider<'_, C, K> {
    fn model(&self) -> ModelRef {
        ModelRef { provider: self.config.kind, model: self.config.model.clone() }
    }

    async fn decide(&self, request: &DecisionRequest) -> Result<ModelAnswer, ModelError> {
        let provider = self.config.kind;
        let outbound = self.build(request)?;
        let started = self.clock.now_ms();
        let sent = self.http.send(outbound).await;
        let latency_ms = self.clock.now_ms().saturating_sub(started);
        let response = sent.map_err(|e| match e {
            HttpError::Timeout(ms) => ModelError::Timeout { provider, timeout_ms: ms },
            HttpError::TooLarge { limit } => ModelError::BadResponse {
                provider,
                detail: format!("the answer is over the {limit}-byte response limit"),
            },
            other => ModelError::Transport { provider, detail: redact(&other.to_string(), &self.secrets()) },
        })?;
        if !response.status().is_success() {
            return Err(self.status_error(&response, request.retry_budget_ms));
        }
        let reply = self
            .read(response.body(), request)
            .map_err(|detail| ModelError::BadResponse { provider, detail: redact(&detail, &self.secrets()) })?;
        let usage = reply.usage(latency_ms, self.config.pricing);
        let unusable = |kind, violation: String| ModelError::Unusable {
            provider,
            kind,
            violation: redact(&violation, &self.secrets()),
            usage: usage.clone(),
        };
        let parsed = match reply.answer {
            Answer::Text(text) => parse_decision(&text),
            Answer::Structured(value) => decision_from_value(value),
            Answer::Refusal(words) => {
                let words = if words.trim().is_empty() { "no reason given".into() } else { words };
                return Err(unusable(UnusableKind::Refusal, format!("the model declined to answer: {words}")));
            }
            Answer::Truncated => {
                let limit = self.config.max_output_tokens;
                return Err(unusable(
                    UnusableKind::Truncated,
                    format!("the answer was cut at the {limit}-token output limit; answer more briefly"),
                ));
            }
            Answer::Missing(what) => {
                return Err(unusable(UnusableKind::MalformedJson, format!("no answer: {what}")));
            }
        };
        match parsed {
            Ok(decision) => Ok(ModelAnswer { decision, usage, answered_by: self.model() }),
            Err(e) => Err(unusable(e.kind, e.violation)),
        }
    }
}
