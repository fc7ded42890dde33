//! `runtime::Decider` over `agent-zero-models`: the task policy's
//! `model {provider, name, costs}` plus operator credentials select the
//! provider (and fallback); every answer becomes a fact.

use agent_zero_agent::Policy;
use agent_zero_engine::{ModelOutcome, ModelPurpose, ModelRequest};
use agent_zero_models::{ConfigError, DecisionRequest, ErrorClass, ModelClient, ModelSelection, SchemaName};
use agent_zero_ports::{Clock, HttpClient};

use crate::Settings;

/// The model port of one tick.
pub(crate) struct ModelDecider<'a, C, K> {
    selection: Result<ModelSelection, ConfigError>,
    http: &'a C,
    clock: &'a K,
}

impl<'a, C: HttpClient, K: Clock> ModelDecider<'a, C, K> {
    /// The model port under `policy`; `model_timeout_ms` is the operator's
    /// bound on each call (`AGENT_ZERO_MODEL_TIMEOUT_MS`, validated with the
    /// settings: edge invocations are short).
    pub(crate) fn new(
        policy: &Policy,
        settings: &Settings,
        model_timeout_ms: Option<u64>,
        http: &'a C,
        clock: &'a K,
    ) -> Self {
        let mut selection = settings.model_selection(policy);
        if let (Ok(selection), Some(ms)) = (selection.as_mut(), model_timeout_ms) {
            selection.primary.timeout_ms = ms;
            if let Some(fallback) = selection.fallback.as_mut() {
                fallback.timeout_ms = ms;
            }
        }
        Self { selection, http, clock }
    }
}

impl<C: HttpClient, K: Clock> agent_zero_engine::Decider for ModelDecider<'_, C, K> {
    async fn decide(&self, request: &ModelRequest) -> ModelOutcome {
        let selection = match &self.selection {
            Ok(selection) => selection,
            Err(e) => return ModelOutcome::Unavailable { reason: format!("model not configured: {e}") },
        };
        let schema = match request.purpose {
            ModelPurpose::Understand => SchemaName::Understand,
            ModelPurpose::Plan => SchemaName::Plan,
        };
        let mut ask = DecisionRequest::new(request.system.clone(), request.context.clone(), schema);
        ask.previous_violation = request.previous_violation.clone();
        match selection.provider(self.http, self.clock).decide(&ask).await {
            Ok(decision) => ModelOutcome::Decided { decision: decision.decision, usage: decision.usage },
            Err(error) => match error.class() {
                ErrorClass::Unusable => ModelOutcome::Unusable {
                    violation: error.violation().unwrap_or("unusable answer").to_owned(),
                    usage: error.usage().cloned().unwrap_or_default(),
                },
                ErrorClass::RetryAfter(ms) => {
                    ModelOutcome::Unavailable { reason: format!("rate limited; retry after {ms} ms") }
                }
                _ => ModelOutcome::Unavailable { reason: error.to_string() },
            },
        }
    }
}
