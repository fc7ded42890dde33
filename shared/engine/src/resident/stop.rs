//! Why a `needs-human` task waits: its stop, read from the resident model
//! alone (the fold records which stop an approval lifted; the conclusion
//! and the approval's effect name it).

use agent_zero_contracts::{Refusal, TaskState};

use super::{Attempt, Resident};
use crate::fact::WriteOutcome;

/// The stop code of a finding validation found inconclusive.
pub(crate) const FINDING_INCONCLUSIVE: &str = "finding-inconclusive";
/// The stop code of a change that still failed its checks with every
/// attempt of `agent.maxAttempts` used.
pub(crate) const REPAIRS_EXHAUSTED: &str = "repairs-exhausted";

/// Why a `needs-human` task waits, as a refusal with a stable code: the
/// stop it reached from the state before it (an inconclusive finding, a
/// write link, used-up repairs, the review of the diff). `None` for a task
/// that does not wait. A person's approval is of this stop, and of no other.
pub(crate) fn stop_reason(resident: &Resident) -> Option<Refusal> {
    if resident.state != TaskState::NeedsHuman {
        return None;
    }
    let attempt = &resident.attempt;
    match resident.path.iter().rev().nth(1)? {
        TaskState::Validating => {
            let reasons = attempt.finding.as_ref().map(|f| f.rejection_reasons.join(" ")).unwrap_or_default();
            let message = format!("the evidence is inconclusive: {reasons}");
            Some(Refusal { code: FINDING_INCONCLUSIVE.into(), message: message.trim_end().to_owned() })
        }
        TaskState::Planning => match &attempt.write {
            Some(WriteOutcome::Refused { refusal } | WriteOutcome::NeedsHuman { refusal }) => Some(refusal.clone()),
            _ => None,
        },
        TaskState::Verifying => {
            let message = format!(
                "verification still fails after {} attempt(s) (agent.maxAttempts {})",
                resident.attempts(),
                resident.max_attempts
            );
            Some(Refusal { code: REPAIRS_EXHAUSTED.into(), message })
        }
        TaskState::Reviewing => review_refusal(attempt).or_else(|| crate::witness::fix_refusal(resident)),
        _ => None,
    }
}

/// The review stop, recorded like a refusal so the report says why.
pub(crate) fn review_refusal(attempt: &Attempt) -> Option<Refusal> {
    if !attempt.reviewed {
        return None;
    }
    if !attempt.out_of_scope.is_empty() {
        let message =
            format!("the diff changes files outside the authorised change: {}", attempt.out_of_scope.join(", "));
        return Some(Refusal { code: "diff-out-of-scope".into(), message });
    }
    if attempt.changed_files.is_empty() {
        let message = "every check passed but the checkout is unchanged, so nothing was fixed".into();
        return Some(Refusal { code: "no-change".into(), message });
    }
    None
}
