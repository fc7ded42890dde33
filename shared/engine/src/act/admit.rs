//! The steps of a delivery that awaits its policy gate: read the policy
//! and admit or decline it, or fail once GitHub was unreachable too long.
//! Nothing ran, so nothing is concluded or published.

use agent_zero_contracts::TaskState;

use super::{Acted, StepContext, transition};
use crate::fact::{Admission, Fact};
use crate::ports::{AdmitError, Forge};
use crate::resident::FoldError;
use crate::step::{Step, admission_backoff};
use crate::store::TickStats;

/// Acts on `step` for a task with no stimulus yet.
pub(super) async fn awaiting<P: Forge>(
    step: &Step<'_>,
    cx: &StepContext<'_>,
    publisher: &P,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let r = cx.resident;
    let fail = |reason: String| {
        let facts = vec![transition(r, TaskState::Failed, &reason, None), Fact::Failure { reason: reason.clone() }];
        Acted::now(facts)
    };
    match step {
        Step::Admit { received } => {
            stats.publications += 1;
            match publisher.admit(received).await {
                Ok(Admission::Admitted(stimulus)) => Acted::now(vec![Fact::Admitted { stimulus }]),
                Ok(Admission::Declined { reason, message }) => Acted::now(vec![
                    Fact::Declined { reason, message: message.clone() },
                    transition(r, TaskState::Ignored, &message, None),
                ]),
                Err(AdmitError::Unavailable(reason)) => Acted::after(
                    vec![Fact::AdmissionError { reason }],
                    admission_backoff(cx.limits, r.intake.errors + 1),
                ),
                Err(AdmitError::Invalid(reason)) => fail(reason),
            }
        }
        Step::Fail { reason } => fail(reason.clone()),
        // No other step is chosen before the admission.
        _ => Acted::now(Vec::new()),
    }
}
