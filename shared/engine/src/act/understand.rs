//! Understand: ask the model to interpret the input against the checkout.

use agent_zero_contracts::TaskState;

use super::{Acted, Run};
use crate::fact::{Fact, ModelOutcome, ModelPurpose};
use crate::ports::Decider;
use crate::render::model_request;
use crate::resident::FoldError;
use crate::store::TickStats;

pub(super) async fn understand<D: Decider>(
    run: &Run<'_>,
    decider: &D,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    stats.model_calls += 1;
    let request = model_request(run.r, run.stimulus, ModelPurpose::Understand, run.cx.key.clone());
    let outcome = decider.decide(&request).await;
    let delay_ms = run.model_delay(&outcome);
    let decided = matches!(outcome, ModelOutcome::Decided { .. });
    let mut facts = vec![Fact::ModelCall { purpose: ModelPurpose::Understand, outcome }];
    if decided {
        facts.push(run.transition(TaskState::Validating, "Testing the claim against repository evidence", None));
    }
    Acted::after(facts, delay_ms)
}
