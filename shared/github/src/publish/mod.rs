//! Publication: the results of a run go back where the work was asked for,
//! without widening authority.
//!
//! - the `Agent Zero` check run on the pull request head (one per task,
//!   edited in place);
//! - for a proactive run whose finding was accepted: one pull-request
//!   review (`event: COMMENT`) with the finding as a line comment on the
//!   right side of the diff (once per head and finding, see `review.rs`),
//!   without findings already posted, and a "resolved in {sha}" reply to
//!   each earlier finding of ours the head no longer holds;
//! - the validation comment, on the issue of an issue run or on the pull
//!   request whose review feedback started the run (one per subject, edited
//!   in place; none when the run failed before a verdict). Ours means
//!   written by our own login *and* marked with the subject (see
//!   `comment_target.rs`); without a known login no comment is written at all;
//! - for a completed, accepted, verified, not high-impact change: a fresh
//!   branch through the Git data API and a pull request.
//!
//! The adapter only creates or edits what it wrote: no labels, no closing,
//! no other comment, no ref update. [`publish`] never fails: each step's
//! outcome is in the [`PublishReport`]; a rate limit stops the publication
//! with [`RetryAfter`] and never sleeps. I/O only through the client's
//! [`agent_zero_ports::HttpClient`]; time comes in as `now_ms`.

mod check_run;
mod comment;
mod pull_request;
mod rest;
mod review;
mod suggestion;
mod thread;

use agent_zero_evidence::{render_issue_comment, render_pull_request_body, render_thread_answer};
use agent_zero_forges::publication::{comment_target, eligibility, pull_request_title};
use agent_zero_ports::HttpClient;

pub use agent_zero_forges::publication::{
    CHECK_RUN_NAME, CheckRunStatus, MAX_PUBLISHED_FILES, PublishFile, PublishPolicy, PublishReport, PublishRequest,
    PublishStep, PublishedPullRequest, RetryAfter, StepOutcome, StepReport, branch_name,
};
pub use comment::MAX_COMMENT_PAGES;

use crate::client::{GitHubClient, RepositoryInfo, repo_path};
use rest::{Halt, Rest};

/// Bytes kept free in a review body for its marker line.
const REVIEW_MARKER_ROOM: usize = 160;

/// Why the comment step writes nothing when our login is unknown.
const LOGIN_UNKNOWN: &str =
    "the app's own GitHub login is not known, so no comment can be told apart as ours; nothing was written";

/// Publishes a finished run: check run, issue comment, verified pull
/// request, in that order. Never fails; see [`PublishReport`].
pub async fn publish<H: HttpClient>(client: &GitHubClient<'_, H>, request: &PublishRequest<'_>) -> PublishReport {
    let rest = Rest { client, now_ms: request.now_ms };
    let mut report = PublishReport::default();
    if let Err(ms) = run(&rest, request, &mut report).await {
        report.retry_after = Some(RetryAfter { ms });
    }
    report
}

/// Creates or updates the task's check run while it is still moving
/// (`status` [`CheckRunStatus::InProgress`]), or with any title and
/// summary. `Err` is a rate limit.
#[allow(clippy::too_many_arguments)] // the check run's own fields
pub async fn publish_check_run<H: HttpClient>(
    client: &GitHubClient<'_, H>,
    owner: &str,
    repo: &str,
    head_sha: &str,
    task_id: &str,
    status: CheckRunStatus,
    title: &str,
    summary: &str,
    now_ms: u64,
) -> Result<StepOutcome, RetryAfter> {
    let rest = Rest { client, now_ms };
    match check_run::upsert(&rest, owner, repo, head_sha, task_id, status, title, summary).await {
        Ok(outcome) => Ok(outcome),
        Err(Halt::Failed(reason)) => Ok(StepOutcome::Failed { reason }),
        Err(Halt::RetryAfter(ms)) => Err(RetryAfter { ms }),
    }
}

/// Each step in turn; `Err(ms)` on a rate limit.
async fn run<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    request: &PublishRequest<'_>,
    report: &mut PublishReport,
) -> Result<(), u64> {
    let bundle = request.bundle;
    let (owner, repo) = (request.owner, request.repo);

    let outcome = match request.head_sha {
        Some(sha) => {
            let (output, status) = agent_zero_forges::publication::concluded(request);
            check_run::upsert(rest, owner, repo, sha, request.task_id, status, &output.title, &output.summary).await
        }
        None => Ok(StepOutcome::skipped("the run has no pull request head")),
    };
    report.push(PublishStep::CheckRun, settle(outcome)?);

    review::publish(rest, request, report).await?;

    let outcome = match (eligibility::comment_refusal(request), eligibility::comment_target(request)) {
        (None, Some((owner, repo, number))) => match (request.bot_login, comment_target::CommentTarget::of(request)) {
            (None, _) => Ok(StepOutcome::failed(LOGIN_UNKNOWN)),
            (_, Err(reason)) => Ok(StepOutcome::Failed { reason }),
            (Some(login), Ok(subject)) => {
                let marker = subject.marker();
                // The marker line is added to the rendered text: keep the
                // whole within the limit.
                let mut render = request.render;
                render.max_bytes = render.max_bytes.saturating_sub(marker.len() + 1);
                let text = render_issue_comment(bundle, &render);
                let ours = comment::Ours { login, marker: &marker };
                comment::upsert(rest, owner, repo, number, ours, &text).await
            }
        },
        (reason, _) => Ok(StepOutcome::skipped(reason.unwrap_or("the run has no issue"))),
    };
    report.push(PublishStep::IssueComment, settle(outcome)?);

    // Another reviewer's line comment is answered in its own thread too.
    if let (
        None,
        Ok(comment_target::CommentTarget::Feedback { pull_request, source: comment_target::Source::ReviewComment(id) }),
    ) = (eligibility::comment_refusal(request), comment_target::CommentTarget::of(request))
    {
        let outcome = match request.bot_login {
            None => Ok(StepOutcome::failed(LOGIN_UNKNOWN)),
            Some(login) => {
                let text = render_thread_answer(bundle, &request.render);
                thread::answer(rest, owner, repo, pull_request, id, login, &text).await
            }
        };
        report.push(PublishStep::ThreadAnswer, settle(outcome)?);
    }

    if let Some(reason) = eligibility::pull_request_refusal(request) {
        report.push(PublishStep::PullRequest, StepOutcome::Skipped { reason });
        return Ok(());
    }
    let Some(issue) = request.issue else {
        return Ok(()); // refused above
    };
    let Some(branch) = branch_name(request.policy.branch_prefix, issue.number, request.task_id) else {
        let reason = "issues.branchPrefix and the task id do not make a safe branch name";
        report.push(PublishStep::Branch, StepOutcome::failed(reason));
        return Ok(());
    };
    let base = match default_branch(rest, request).await {
        Ok(base) => base,
        Err(halt) => {
            report.push(PublishStep::Branch, settle(Err(halt))?);
            return Ok(());
        }
    };
    let title = pull_request_title(request, issue);
    let message = format!("{title}\n\nAgent-Zero-Task: {}", request.task_id);
    let outcome =
        pull_request::publish_branch(rest, owner, repo, &base, &branch, &message, request.files, &request.bundle.tree)
            .await;
    let outcome = settle(outcome)?;
    let published = matches!(outcome, StepOutcome::Created { .. } | StepOutcome::Reused { .. });
    report.push(PublishStep::Branch, outcome);
    if !published {
        report.push(PublishStep::PullRequest, StepOutcome::skipped("no branch was published"));
        return Ok(());
    }

    let branch = pull_request::Branch { name: branch, base };
    let body = render_pull_request_body(bundle, &request.render);
    match pull_request::open(rest, owner, repo, &branch, &title, &body).await {
        Ok((outcome, pull)) => {
            report.push(PublishStep::PullRequest, outcome);
            report.pull_request = pull;
        }
        Err(halt) => report.push(PublishStep::PullRequest, settle(Err(halt))?),
    }
    Ok(())
}

/// A step's result as an outcome; `Err(ms)` stops the publication.
fn settle(result: Result<StepOutcome, Halt>) -> Result<StepOutcome, u64> {
    match result {
        Ok(outcome) => Ok(outcome),
        Err(Halt::Failed(reason)) => Ok(StepOutcome::Failed { reason }),
        Err(Halt::RetryAfter(ms)) => Err(ms),
    }
}

async fn default_branch<H: HttpClient>(rest: &Rest<'_, '_, H>, request: &PublishRequest<'_>) -> Result<String, Halt> {
    if let Some(branch) = request.default_branch.filter(|b| !b.is_empty()) {
        return Ok(branch.to_owned());
    }
    let url = rest.url(&format!("/repos/{}", repo_path(request.owner, request.repo)?));
    let info: RepositoryInfo = rest.json("get repository", http::Method::GET, &url, None).await?;
    Ok(info.default_branch)
}
