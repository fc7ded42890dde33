//! The model port: one request type in, one decision (or a typed error) out.

use agent_zero_contracts::{AgentDecision, Usage};

use crate::ModelError;
use agent_zero_contracts::ModelProvider;

/// Which step asks for a decision; names the structured-output schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaName {
    /// Decide whether the claim or issue holds, and how risky a change is.
    Understand,
    /// Plan the change: steps, acceptance criteria, proposed file contents.
    Plan,
}

impl SchemaName {
    /// The schema/tool name sent to providers (`[a-zA-Z0-9_-]{1,64}` on every wire).
    pub const fn wire_name(self) -> &'static str {
        match self {
            Self::Understand => "agent_zero_understand",
            Self::Plan => "agent_zero_plan",
        }
    }

    /// One sentence telling the model what this step's answer is for.
    pub const fn purpose(self) -> &'static str {
        match self {
            Self::Understand => {
                "Decide, from repository evidence only, whether the claim or request holds; classify severity and change risk."
            }
            Self::Plan => {
                "Plan the narrowest change that resolves the finding: steps, verifiable acceptance criteria, and complete new file contents."
            }
        }
    }
}

/// One request for a structured decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRequest {
    /// Operator-authored instructions (never untrusted text).
    pub system: String,
    /// The rendered, already bounded context (see [`crate::render_context`]).
    pub context: String,
    pub schema: SchemaName,
    /// Why the model's previous answer was unusable, shown back to it so it
    /// can correct itself (the seed's "an invalid answer is a fact").
    pub previous_violation: Option<String>,
    /// How long the caller is still willing to wait on a rate limit, in ms.
    /// A 429 whose `retry-after` fits answers [`ModelError::RetryAfter`]
    /// (the caller re-enqueues the tick with that delay); a longer or
    /// unknown delay makes the provider unavailable. 0 by default.
    pub retry_budget_ms: u64,
}

impl DecisionRequest {
    /// A first attempt with no rate-limit budget.
    pub fn new(system: impl Into<String>, context: impl Into<String>, schema: SchemaName) -> Self {
        Self { system: system.into(), context: context.into(), schema, previous_violation: None, retry_budget_ms: 0 }
    }
}

/// Which provider and model produced an answer (recorded with the decision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: ModelProvider,
    pub model: String,
}

/// A decision that passed the schema, with what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelAnswer {
    pub decision: AgentDecision,
    pub usage: Usage,
    /// The provider that answered: the fallback's, when it was used.
    pub answered_by: ModelRef,
}

/// A model that answers [`DecisionRequest`]s. Async without a `Send` bound:
/// both guests are single-threaded.
pub trait ModelClient {
    /// The configured provider and model (the primary's, for a fallback pair).
    fn model(&self) -> ModelRef;

    /// Asks for one decision. Exactly one outbound call per provider tried.
    async fn decide(&self, request: &DecisionRequest) -> Result<ModelAnswer, ModelError>;
}
