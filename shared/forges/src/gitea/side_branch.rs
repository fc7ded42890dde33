//! A review-feedback run's verified change on Gitea and Forgejo, as a
//! commit the pull request's author can take. GitHub would post it as
//! suggestion blocks; Gitea has none, so it goes on a side branch made
//! from the pull request's head:
//!
//! - when: the run was review feedback on a pull request and its change is
//!   publishable by the rules every forge shares
//!   ([`change_refusal`]: the same as for an issue's pull request, less
//!   the issue);
//! - the branch: `{issues.branchPrefix}pr-{n}-{task id}`
//!   ([`branch_name`], held to the same safety check, and to Gitea's 100
//!   bytes for a branch name), created at the head the run checked
//!   (`POST .../branches`, `old_ref_name` the head's sha);
//! - the commit: one "change files" commit of the run's files on that
//!   branch (`POST .../contents`, `branch` and `new_branch` the side
//!   branch: Gitea commits on it), its message ending
//!   `Agent-Zero-Task: {id}`. The contents API sets no file mode, so a
//!   change to an executable file or a link is left to a person, named
//!   (`commit::not_a_regular_file`, the issue path's rule too).
//!
//! Never forced. Found again on a retry: a branch whose tip is exactly
//! this task's commit (the head as its one parent, the trailer, the run's
//! files and no other, each with the run's content) is reused; a branch
//! still at the head (an earlier attempt made it and stopped before its
//! commit) gets the commit; anything else on that name is a failed step
//! naming the branch.
//!
//! The thread answer then says where the change is; when the step was
//! refused or failed, it keeps saying the change is in the evidence, and
//! why there is no side branch.

use agent_zero_contracts::Trigger;
use agent_zero_ports::HttpClient;

use super::api::{GiteaClient, GiteaError};
use super::commit::NO_SUGGESTIONS;
use crate::publication::eligibility::change_refusal;
use crate::publication::{PublishRequest, StepOutcome, branch_name};

/// Said under an answer whose change is on a side branch; the text after
/// it is the commit, the branch and its page.
const ON_A_SIDE_BRANCH: &str = "\n\nGitea has no suggestion blocks: the verified change is commit";

/// Gitea's longest branch name (`CreateBranchRepoOption`'s `MaxSize(100)`).
const MAX_BRANCH_BYTES: usize = 100;

/// What the side-branch step did, and what the thread answer says of it.
#[derive(Debug)]
pub(super) struct SideBranch {
    pub(super) outcome: Result<StepOutcome, GiteaError>,
    /// Appended to the thread answer.
    pub(super) said: String,
}

/// Publishes the run's change on its side branch from `head`, when it may.
pub(super) async fn publish<H: HttpClient>(
    client: &GiteaClient<'_, H>,
    request: &PublishRequest<'_>,
    head: &str,
) -> SideBranch {
    let (outcome, commit) = match side_branch(request) {
        Err(reason) => (Ok(StepOutcome::Skipped { reason }), None),
        Ok(Err(reason)) => (Ok(StepOutcome::Failed { reason }), None),
        Ok(Ok((branch, number))) => match commit(client, request, head, &branch, number).await {
            Ok((outcome, sha)) => (Ok(outcome), sha.map(|sha| (sha, branch))),
            Err(e) => (Err(e), None),
        },
    };
    let said = match (&outcome, commit) {
        (Ok(outcome), Some((sha, branch))) => {
            let url = outcome.url().unwrap_or_default();
            format!("{ON_A_SIDE_BRANCH} {sha} on branch `{branch}` ({url}).")
        }
        (Ok(outcome), None) => {
            let reason = outcome.reason().unwrap_or("no commit was made");
            format!("{NO_SUGGESTIONS} No side branch: {}.", plain(reason, request.render.secrets))
        }
        (Err(e), _) => format!("{NO_SUGGESTIONS} No side branch: {}.", plain(&e.to_string(), request.render.secrets)),
    };
    SideBranch { outcome, said }
}

/// The side branch's name and the pull request's number (`Ok(Ok(..))`);
/// why there is none for this run (`Err`, skipped), or why its name is
/// unusable (`Ok(Err)`, failed).
fn side_branch(request: &PublishRequest<'_>) -> Result<Result<(String, u64), String>, String> {
    let bundle = request.bundle;
    let pr = match (&bundle.pull_request, bundle.trigger) {
        (Some(pr), Trigger::Feedback) => pr,
        _ => return Err("the run is not review feedback on a pull request".into()),
    };
    if let Some(reason) = change_refusal(request) {
        return Err(reason);
    }
    let prefix = format!("{}pr-", request.policy.branch_prefix);
    Ok(match branch_name(&prefix, pr.number, request.task_id) {
        Some(name) if name.len() <= MAX_BRANCH_BYTES => Ok((name, pr.number)),
        Some(name) => Err(format!("branch {name} is longer than Gitea's {MAX_BRANCH_BYTES} bytes")),
        None => Err("issues.branchPrefix and the task id do not make a safe branch name".into()),
    })
}

/// The branch with the run's commit on `head`: the outcome, and the
/// commit's sha when the branch holds it.
async fn commit<H: HttpClient>(
    client: &GiteaClient<'_, H>,
    request: &PublishRequest<'_>,
    head: &str,
    branch: &str,
    number: u64,
) -> Result<(StepOutcome, Option<String>), GiteaError> {
    let (owner, repo) = (request.owner, request.repo);
    if let Some(reason) = super::commit::not_a_regular_file(request) {
        return Ok((StepOutcome::Failed { reason }, None));
    }
    let url = Some(client.branch_url(owner, repo, branch)?);
    let trailer = format!("Agent-Zero-Task: {}", request.task_id);
    match client.branch_head_if_any(owner, repo, branch).await? {
        Some(tip) if tip.eq_ignore_ascii_case(head) => {}
        Some(tip) => {
            let ours = client.commit_with_message(owner, repo, &tip).await?.commit.message.contains(&trailer)
                && super::commit::is_this_publication(client, request, head, &tip, branch).await?;
            if ours {
                return Ok((StepOutcome::Reused { url }, Some(tip)));
            }
            let reason = format!("branch {branch} already exists with other content; it is never overwritten");
            return Ok((StepOutcome::Failed { reason }, None));
        }
        None => match client.create_branch_at(owner, repo, branch, head).await {
            Ok(()) => {}
            Err(GiteaError::Status { status: 409, .. }) => {
                let reason = format!("branch {branch} already exists (created concurrently); it is never overwritten");
                return Ok((StepOutcome::Failed { reason }, None));
            }
            Err(e) => return Err(e),
        },
    }
    let shas = super::commit::file_shas(client, request, head).await?;
    let changes = super::commit::file_changes(request, &shas);
    if changes.is_empty() {
        return Ok((StepOutcome::skipped("no file differs from the pull request's head"), None));
    }
    let message = format!("Agent Zero: the change verified for pull request #{number}\n\n{trailer}");
    // `new_branch` equal to `branch`: Gitea commits on that branch.
    let sha = client.change_files(owner, repo, branch, branch, &message, &changes).await?;
    Ok((StepOutcome::Created { url }, Some(sha)))
}

/// `reason` on one line, without the deployment's secrets, for the answer.
fn plain(reason: &str, secrets: &[&str]) -> String {
    let mut text: String = reason.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        text = text.replace(secret, "[redacted]");
    }
    text.trim_end_matches('.').to_owned()
}
