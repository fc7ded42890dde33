//! What a parsed delivery becomes under its repository's policy, whatever
//! forge it came from: declined with GitHub's rules' reason, or the run's
//! stimulus. Pure; the gates of each forge (`admission.rs`, `gitea.rs`)
//! read what it needs first.

use agent_zero_contracts::{PullRequestRef, RunMode};
use agent_zero_engine::{Admission, Received, Stimulus, TaskInput};
use agent_zero_github::{ParsedDelivery, Subject};

/// Admits or declines `parsed` under `policy`. Pure.
pub(crate) fn admit_or_decline(
    received: &Received,
    parsed: &ParsedDelivery,
    policy: agent_zero_agent::Policy,
) -> Admission {
    if let Err(reason) = parsed.admit(&crate::intake_gate::switches(&policy)) {
        return Admission::Declined { reason: reason.code().to_owned(), message: reason.to_string() };
    }
    // Webhooks never raise the mode: the policy's own mode is the ceiling.
    let mode: RunMode = policy.restrict_mode(None);
    let mut input = TaskInput {
        feedback: parsed.feedback.clone(),
        installation_id: parsed.installation_id,
        ..TaskInput::default()
    };
    match &parsed.subject {
        Subject::PullRequest(pr) => input.pull_request = Some(PullRequestRef { ..pr.clone() }),
        Subject::Issue(issue) => {
            input.issue = Some(issue.clone());
            input.issue_body = parsed.body.clone();
        }
        #[allow(unreachable_patterns)]
        _ => {}
    }
    Admission::Admitted(Box::new(Stimulus {
        task_id: received.task_id.clone(),
        repository: received.repository.clone(),
        trigger: parsed.trigger,
        mode,
        source: received.source.clone(),
        input,
        policy,
    }))
}
