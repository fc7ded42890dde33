//! Discover the checkout: list its files, resolve the checks (the
//! policy's, or the repository's own tooling), and for a pull-request
//! review or review feedback on a pull request read the pull request's
//! diff from the forge.

use agent_zero_contracts::{OmittedItem, TaskState, Trigger};

use super::{Acted, Ports, Run};
use crate::discover::{MANIFESTS, default_checks};
use crate::fact::{Fact, LeaseRecord};
use crate::ports::{Decider, Forge, ForgeError, Workspace, WorkspaceError};
use crate::render::MAX_LISTED_FILES;
use crate::resident::FoldError;
use crate::store::TickStats;

pub(super) async fn discover<D: Decider, W: Workspace, P: Forge>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    ports: &Ports<'_, D, W, P>,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let stimulus = run.stimulus;
    stats.sandbox_calls += 1;
    let files = match ports.workspace.list_files(lease).await {
        Ok(files) => files,
        Err(e) => return run.sandbox_failed("list-files", e),
    };
    let mut checks: Vec<Vec<String>> = stimulus.policy.checks.iter().map(|c| c.argv.clone()).collect();
    if checks.is_empty() {
        let manifests: Vec<String> =
            MANIFESTS.iter().filter(|m| files.iter().any(|f| f == *m)).map(|m| (*m).to_owned()).collect();
        let mut package_json = None;
        if !manifests.is_empty() {
            stats.sandbox_calls += 1;
            match ports.workspace.read_files(lease, &manifests).await {
                Ok(read) => package_json = read.into_iter().find(|(p, _)| p == "package.json").and_then(|(_, c)| c),
                Err(e) => return run.sandbox_failed("read-manifests", e),
            }
        }
        checks = default_checks(&files, package_json.as_deref());
    }
    let (mut diff, mut review) = (None, None);
    // A review reads the pull request, and so does review feedback on one:
    // a reviewer's claim is about the change.
    let pull_request = stimulus.input.pull_request.as_ref();
    let on_a_pull_request = match stimulus.trigger {
        Trigger::Proactive => true,
        Trigger::Feedback => pull_request.is_some(),
        Trigger::Issue => false,
    };
    if on_a_pull_request {
        // The pull request's own diff (`base...head`) from the forge:
        // a clean checkout of the head has no working-tree changes.
        let head = pull_request.map(|pr| pr.head_sha.as_str());
        match ports.publisher.changed_files(stimulus).await {
            Ok(listed) => {
                let budget = crate::review::Budget::of(&stimulus.policy.review).beside(&files);
                let (text, ledger) = crate::review::read(&listed, head, budget);
                (diff, review) = (Some(text), Some(ledger));
            }
            Err(ForgeError::Unavailable(reason)) => review = Some(crate::review::unlisted(reason, head)),
            Err(ForgeError::Failed(reason)) => {
                return run.sandbox_failed("pull-request-files", WorkspaceError::Failed(reason));
            }
        }
    }
    let mut omitted = Vec::new();
    if files.len() > MAX_LISTED_FILES {
        omitted.push(OmittedItem {
            kind: "context".into(),
            subject: "repository file list".into(),
            reason: format!("the model was shown the first {MAX_LISTED_FILES} of {} paths", files.len()),
        });
    }
    if checks.is_empty() {
        omitted.push(OmittedItem {
            kind: "check".into(),
            subject: "checks".into(),
            reason: "no checks configured in .agent-zero.yml and none discovered".into(),
        });
    }
    let message = format!("Interpreting the {} against the checkout", stimulus.trigger);
    Acted::now(vec![
        Fact::Discovered { files, checks, diff, omitted, review },
        run.transition(TaskState::Understanding, &message, None),
    ])
}
