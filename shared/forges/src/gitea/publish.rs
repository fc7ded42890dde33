//! Publication on Gitea and Forgejo, by the rules every forge shares
//! ([`crate::publication`]): the same eligibility, subject marker, branch
//! name and title as on GitHub, through Gitea's own calls.
//!
//! - a commit status (context `Agent Zero`) on a pull request's head: Gitea
//!   has no check runs;
//! - the validation comment on the issue (or on the pull request whose
//!   review feedback started the run), found again by our login and its
//!   subject marker and edited in place;
//! - for review feedback, the answer in each reviewer's line comment's
//!   conversation (`thread.rs`: a new review at the same path and line);
//! - a verified change: one commit on a fresh branch through the contents
//!   API ("change files"), then a pull request. Gitea's contents API sets
//!   no file mode, so a change to an executable file or a link is left to
//!   a person (named in the step), never committed with the wrong mode.
//!
//! - a proactive run's review: one Gitea review, its body the summary and
//!   its line comments the findings ([`super::review`]);
//! - review feedback's verified change: one commit on a side branch from
//!   the pull request's head, named in the answer ([`super::side_branch`]).
//!
//! Gitea has no suggestion blocks (a comment says so where GitHub would
//! carry one). [`publish`] never fails: each step's outcome is in the
//! report; a retryable failure is marked so the caller tries again.

use agent_zero_contracts::Trigger;
use agent_zero_evidence::{render_issue_comment, render_pull_request_body, render_thread_answer};
use agent_zero_ports::HttpClient;

use super::api::{CommitStatus, GiteaClient, GiteaError};
use crate::publication::comment_target::{CommentTarget, carries, marked};
use crate::publication::eligibility::{comment_refusal, comment_target, pull_request_refusal};
use crate::publication::{
    CHECK_RUN_NAME, PublishReport, PublishRequest, PublishStep, PublishedPullRequest, StepOutcome, branch_name,
    concluded, pull_request_title, status_description, status_state,
};

/// Why the comment step writes nothing when our login is unknown.
const LOGIN_UNKNOWN: &str =
    "the token's own Gitea login is not known, so no comment can be told apart as ours; nothing was written";

/// What one publication did, and whether a step failed in a way worth
/// trying again (Gitea unreachable, 429, 5xx).
#[derive(Debug, Default)]
pub struct GiteaReport {
    pub report: PublishReport,
    /// The first retryable failure, if any.
    pub retry: Option<String>,
}

/// Publishes a finished run on Gitea. Never fails; see [`GiteaReport`].
pub async fn publish<H: HttpClient>(client: &GiteaClient<'_, H>, request: &PublishRequest<'_>) -> GiteaReport {
    let mut out = GiteaReport::default();
    let (owner, repo) = (request.owner, request.repo);
    let bundle = request.bundle;
    let settle = |out: &mut GiteaReport, step, result: Result<StepOutcome, GiteaError>| {
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(e) => {
                if e.retryable() && out.retry.is_none() {
                    out.retry = Some(e.to_string());
                }
                StepOutcome::failed(e.to_string())
            }
        };
        out.report.push(step, outcome);
    };

    let status = match request.head_sha {
        Some(sha) => {
            let (output, status) = concluded(request);
            let description = status_description(status, &output.title);
            let status = CommitStatus {
                state: status_state(status),
                context: CHECK_RUN_NAME,
                description: &description,
                target_url: request.render.evidence_url,
            };
            client.create_status(owner, repo, sha, &status).await.map(|()| StepOutcome::Created { url: None })
        }
        None => Ok(StepOutcome::skipped("the run has no pull request head")),
    };
    settle(&mut out, PublishStep::Status, status);

    // A proactive run's review: one Gitea review with its line comments.
    if let (true, Some(pr), Some(head)) = (request.posts_review(), bundle.pull_request.as_ref(), request.head_sha) {
        let reviewed = super::review::publish(client, request, pr.number, head).await;
        settle(&mut out, PublishStep::Review, reviewed);
    }

    let comment = match (comment_refusal(request), comment_target(request)) {
        (None, Some((owner, repo, number))) => match (request.bot_login, CommentTarget::of(request)) {
            (None, _) => Ok(StepOutcome::failed(LOGIN_UNKNOWN)),
            (_, Err(reason)) => Ok(StepOutcome::Failed { reason }),
            (Some(login), Ok(subject)) => {
                let marker = subject.marker();
                let mut render = request.render;
                render.max_bytes = render.max_bytes.saturating_sub(marker.len() + 1);
                let text = marked(&render_issue_comment(bundle, &render), &marker);
                upsert_comment(client, owner, repo, number, login, &marker, &text).await
            }
        },
        (reason, _) => Ok(StepOutcome::skipped(reason.unwrap_or("the run has no issue"))),
    };
    settle(&mut out, PublishStep::IssueComment, comment);

    // A reviewer's line comment is answered in its conversation too.
    let asked = super::thread::asked(request.feedback);
    let feedback_on = bundle.pull_request.as_ref().filter(|_| bundle.trigger == Trigger::Feedback);
    if let (None, Some(pr), false) = (comment_refusal(request), feedback_on, asked.is_empty()) {
        let answer = match (request.bot_login, request.head_sha) {
            (None, _) => Ok(StepOutcome::failed(LOGIN_UNKNOWN)),
            (_, None) => Ok(StepOutcome::skipped("the run has no pull request head")),
            (Some(login), Some(head)) => {
                let mut text = render_thread_answer(bundle, &request.render);
                let mut retried = false;
                if !bundle.changed_files.is_empty() {
                    let side = super::side_branch::publish(client, request, head).await;
                    retried = side.outcome.as_ref().is_err_and(GiteaError::retryable);
                    settle(&mut out, PublishStep::SideBranch, side.outcome);
                    text.push_str(&side.said);
                }
                // An answer is posted once and never edited: while the side
                // branch waits for a retry, so does the answer that names it.
                if retried {
                    Ok(StepOutcome::skipped("the side branch is tried again first, and the answer then names it"))
                } else {
                    super::thread::answer(client, owner, repo, pr.number, head, login, &asked, &text).await
                }
            }
        };
        settle(&mut out, PublishStep::ThreadAnswer, answer);
    }

    if let Some(reason) = pull_request_refusal(request) {
        out.report.push(PublishStep::PullRequest, StepOutcome::Skipped { reason });
        return out;
    }
    let Some(issue) = request.issue else { return out };
    let Some(branch) = branch_name(request.policy.branch_prefix, issue.number, request.task_id) else {
        let reason = "issues.branchPrefix and the task id do not make a safe branch name";
        out.report.push(PublishStep::Branch, StepOutcome::failed(reason));
        return out;
    };
    let base = match request.default_branch.filter(|b| !b.is_empty()) {
        Some(base) => Ok(base.to_owned()),
        None => client.repository(owner, repo).await.map(|r| r.default_branch),
    };
    let base = match base {
        Ok(base) => base,
        Err(e) => {
            settle(&mut out, PublishStep::Branch, Err(e));
            return out;
        }
    };
    let title = pull_request_title(request, issue);
    let message = format!("{title}\n\nAgent-Zero-Task: {}", request.task_id);
    let branch_outcome = publish_branch(client, request, &base, &branch, &message).await;
    let published = matches!(branch_outcome, Ok(StepOutcome::Created { .. } | StepOutcome::Reused { .. }));
    settle(&mut out, PublishStep::Branch, branch_outcome);
    if !published {
        out.report.push(PublishStep::PullRequest, StepOutcome::skipped("no branch was published"));
        return out;
    }
    let body = render_pull_request_body(bundle, &request.render);
    let pull = match client.open_pull_request(owner, repo, &branch).await {
        Ok(Some(existing)) => Ok((StepOutcome::Reused { url: Some(existing.html_url.clone()) }, existing)),
        Ok(None) => client
            .create_pull_request(owner, repo, &branch, &base, &title, &body)
            .await
            .map(|created| (StepOutcome::Created { url: Some(created.html_url.clone()) }, created)),
        Err(e) => Err(e),
    };
    match pull {
        Ok((outcome, pull)) => {
            out.report.push(PublishStep::PullRequest, outcome);
            out.report.pull_request =
                Some(PublishedPullRequest { number: pull.number, url: pull.html_url, branch: branch.clone() });
        }
        Err(e) => settle(&mut out, PublishStep::PullRequest, Err(e)),
    }
    out
}

/// Edits our comment carrying `marker`, or posts one.
async fn upsert_comment<H: HttpClient>(
    client: &GiteaClient<'_, H>,
    owner: &str,
    repo: &str,
    number: u64,
    login: &str,
    marker: &str,
    text: &str,
) -> Result<StepOutcome, GiteaError> {
    let comments = client.comments(owner, repo, number).await?;
    let ours = comments
        .into_iter()
        .find(|c| c.user.as_ref().is_some_and(|u| u.login.eq_ignore_ascii_case(login)) && carries(&c.body, marker));
    match ours {
        Some(existing) if existing.body == text => Ok(StepOutcome::Reused { url: existing.html_url }),
        Some(existing) => {
            let edited = client.edit_comment(owner, repo, existing.id, text).await?;
            Ok(StepOutcome::Updated { url: edited.html_url })
        }
        None => {
            let created = client.create_comment(owner, repo, number, text).await?;
            Ok(StepOutcome::Created { url: created.html_url })
        }
    }
}

/// The branch with the run's files on `base`'s head: one "change files"
/// commit, or the branch an earlier attempt of this publication made
/// (reused only when it is exactly that commit: `base`'s head as its one
/// parent, the run's files and no other, each with the run's content).
/// Anything else on that name is never overwritten.
async fn publish_branch<H: HttpClient>(
    client: &GiteaClient<'_, H>,
    request: &PublishRequest<'_>,
    base: &str,
    branch: &str,
    message: &str,
) -> Result<StepOutcome, GiteaError> {
    let (owner, repo) = (request.owner, request.repo);
    if branch == base {
        return Ok(StepOutcome::failed("refusing to write the default branch"));
    }
    if let Some(reason) = super::commit::not_a_regular_file(request) {
        return Ok(StepOutcome::Failed { reason });
    }
    let base_head = client.branch_head(owner, repo, base).await?;
    if let Some(existing) = client.branch_head_if_any(owner, repo, branch).await? {
        if super::commit::is_this_publication(client, request, &base_head, &existing, branch).await? {
            return Ok(StepOutcome::Reused { url: None });
        }
        return Ok(StepOutcome::failed(format!(
            "branch {branch} already exists with other content; it is never overwritten"
        )));
    }
    let shas = super::commit::file_shas(client, request, &base_head).await?;
    let changes = super::commit::file_changes(request, &shas);
    if changes.is_empty() {
        return Ok(StepOutcome::skipped("no file differs from the base"));
    }
    match client.change_files(owner, repo, base, branch, message, &changes).await {
        Ok(_) => Ok(StepOutcome::Created { url: None }),
        // Made meanwhile by someone else (or a concurrent attempt): never overwritten.
        Err(GiteaError::Status { status: 409 | 422, message: Some(m), .. }) if m.contains("already exists") => {
            Ok(StepOutcome::failed(format!(
                "branch {branch} already exists (created concurrently); it is never overwritten"
            )))
        }
        Err(e) => Err(e),
    }
}
