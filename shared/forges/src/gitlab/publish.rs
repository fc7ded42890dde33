//! Publication on GitLab, by the rules every forge shares
//! ([`crate::publication`]): the same eligibility, subject marker, branch
//! name and title as on GitHub and Gitea, through GitLab's own calls. The
//! project is `{owner}/{repo}` of the request: the namespace (`group/sub`)
//! and the project's own path.
//!
//! - a commit status (name `Agent Zero`) on a merge request's head: GitLab
//!   has no check runs (and so no annotations);
//! - the validation note on the issue (or on the merge request whose
//!   review a feedback run answers), found again by our username and its
//!   subject marker and edited in place;
//! - a verified change: one commit on a fresh branch through the commits
//!   API (`start_sha` the default branch's head; never `force`), then a
//!   merge request. An `update` keeps the file's mode at the base and a
//!   `create` makes a regular file, so the verified tree's mode is set
//!   with a `chmod` action where the base differs; a link or anything but
//!   a regular or executable file is left to a person.
//!
//! - a reviewer's diff note answered by a reply in its discussion
//!   ([`super::thread`]), found again by our username and its marker (the
//!   verdict then is that reply and the status: no note on the merge
//!   request);
//! - the review of a proactive run on a merge request: its line comments
//!   as discussions placed on the diff and its summary as one note
//!   ([`super::review`]).
//!
//! [`publish`] never fails: each step's outcome is in the report; a
//! retryable failure is marked so the caller tries again.

use agent_zero_contracts::{TreeFile, Trigger};
use agent_zero_evidence::{render_issue_comment, render_pull_request_body, render_thread_answer};
use agent_zero_ports::HttpClient;

use super::api::{CommitAction, CommitStatus, GitLabClient, GitLabError, Noteable};
use crate::publication::comment_target::{CommentTarget, carries, marked};
use crate::publication::eligibility::{comment_refusal, comment_target, pull_request_refusal};
use crate::publication::{
    CHECK_RUN_NAME, PublishReport, PublishRequest, PublishStep, PublishedPullRequest, StepOutcome, branch_name, capped,
    concluded, pull_request_title, status_description, status_state,
};

/// Why the comment step writes nothing when our username is unknown.
const LOGIN_UNKNOWN: &str =
    "the token's own GitLab username is not known, so no note can be told apart as ours; nothing was written";

/// Why a diff note's run writes no note on the merge request.
const IN_THREAD: &str = "the verdict is the reply in the diff note's discussion";

/// The thread answer's last line, written for a forge that also posts the
/// validation comment.
const EVIDENCE_IN_COMMENT: &str = "The evidence is in the Agent Zero comment on this pull request.";
/// What it says on GitLab instead.
const EVIDENCE_IN_STATUS: &str = "The evidence is linked from the `Agent Zero` commit status on the head.";

/// Said under an answer that proposed a change: an answer carries no
/// suggestion block (as on GitHub; a review's line discussions do).
const NO_SUGGESTIONS: &str =
    "\n\nAn answer carries no suggestion block: the proposed change is in the evidence, not here.";

/// Mode of a file the verified tree does not list (regular), as on GitHub.
const FILE_MODE: &str = "100644";
/// An executable file's mode.
const EXECUTABLE_MODE: &str = "100755";
/// The largest file at the base whose existence and mode are read (from
/// its metadata, without its bytes); a larger one fails the branch step,
/// naming it.
const MAX_BASE_FILE_BYTES: usize = 8 * 1024 * 1024;

/// What one publication did, and whether a step failed in a way worth
/// trying again (GitLab unreachable, 429, 5xx).
#[derive(Debug, Default)]
pub struct GitLabReport {
    pub report: PublishReport,
    /// The first retryable failure, if any.
    pub retry: Option<String>,
}

/// Publishes a finished run on GitLab. Never fails; see [`GitLabReport`].
pub async fn publish<H: HttpClient>(client: &GitLabClient<'_, H>, request: &PublishRequest<'_>) -> GitLabReport {
    let mut out = GitLabReport::default();
    let project = format!("{}/{}", request.owner, request.repo);
    let bundle = request.bundle;
    let settle = |out: &mut GitLabReport, step, result: Result<StepOutcome, GitLabError>| {
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
        Some(sha) => post_status(client, request, &project, sha).await,
        None => Ok(StepOutcome::skipped("the run has no merge request head")),
    };
    settle(&mut out, PublishStep::Status, status);

    if request.posts_review() {
        let mut report = PublishReport::default();
        let reviewed = super::review::publish(client, request, &project, &mut report).await;
        match reviewed {
            Ok(()) => out.report.steps.extend(report.steps),
            Err(e) => settle(&mut out, PublishStep::Review, Err(e)),
        }
    }

    // A reviewer's diff note is answered in its discussion, not by a note
    // on the merge request.
    let asked = super::thread::asked(request.feedback);
    let feedback_on = bundle.pull_request.as_ref().filter(|_| bundle.trigger == Trigger::Feedback);
    let in_thread = feedback_on.is_some() && !asked.is_empty();
    let comment = match (comment_refusal(request), comment_target(request)) {
        (None, Some(_)) if in_thread => Ok(StepOutcome::skipped(IN_THREAD)),
        (None, Some((owner, repo, _))) => match (request.bot_login, CommentTarget::of(request)) {
            (None, _) => Ok(StepOutcome::failed(LOGIN_UNKNOWN)),
            (_, Err(reason)) => Ok(StepOutcome::Failed { reason }),
            (Some(login), Ok(subject)) => {
                let on = match subject {
                    CommentTarget::Issue(iid) => Noteable::Issue(iid),
                    CommentTarget::Feedback { pull_request, .. } => Noteable::MergeRequest(pull_request),
                };
                let marker = subject.marker();
                let mut render = request.render;
                render.max_bytes = render.max_bytes.saturating_sub(marker.len() + 1);
                let text = marked(&render_issue_comment(bundle, &render), &marker);
                upsert_note(client, &format!("{owner}/{repo}"), on, login, &marker, &text).await
            }
        },
        (reason, _) => Ok(StepOutcome::skipped(reason.unwrap_or("the run has no issue"))),
    };
    settle(&mut out, PublishStep::IssueComment, comment);

    // A reviewer's diff note is answered in its discussion instead.
    if let (None, Some(pr), false) = (comment_refusal(request), feedback_on, asked.is_empty()) {
        let answer = match request.bot_login {
            None => Ok(StepOutcome::failed(LOGIN_UNKNOWN)),
            Some(login) => {
                let mut text = render_thread_answer(bundle, &request.render);
                // No note on the merge request carries the evidence here.
                if let Some(kept) = text.strip_suffix(EVIDENCE_IN_COMMENT) {
                    text = format!("{kept}{EVIDENCE_IN_STATUS}");
                }
                if !bundle.changed_files.is_empty() {
                    text.push_str(NO_SUGGESTIONS);
                }
                super::thread::answer(client, &project, pr.number, login, &asked, &text).await
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
        None => client.project(&project).await.map(|p| p.default_branch),
    };
    let base = match base {
        Ok(base) if base.is_empty() => {
            let reason = "the project has no default branch (no commit yet)";
            out.report.push(PublishStep::Branch, StepOutcome::failed(reason));
            return out;
        }
        Ok(base) => base,
        Err(e) => {
            settle(&mut out, PublishStep::Branch, Err(e));
            return out;
        }
    };
    let title = pull_request_title(request, issue);
    let message = format!("{title}\n\nAgent-Zero-Task: {}", request.task_id);
    let branch_outcome = publish_branch(client, request, &project, &base, &branch, &message).await;
    let published = matches!(branch_outcome, Ok(StepOutcome::Created { .. } | StepOutcome::Reused { .. }));
    settle(&mut out, PublishStep::Branch, branch_outcome);
    if !published {
        out.report.push(PublishStep::PullRequest, StepOutcome::skipped("no branch was published"));
        return out;
    }
    let description = render_pull_request_body(bundle, &request.render);
    let merge_request = match client.open_merge_request(&project, &branch).await {
        Ok(Some(existing)) => Ok((StepOutcome::Reused { url: Some(existing.web_url.clone()) }, existing)),
        Ok(None) => match client.create_merge_request(&project, &branch, &base, &title, &description).await {
            Ok(created) => Ok((StepOutcome::Created { url: Some(created.web_url.clone()) }, created)),
            // Opened meanwhile (a concurrent attempt): GitLab allows one
            // open merge request per source branch; that one is ours.
            Err(e) if e.status() == Some(409) => match client.open_merge_request(&project, &branch).await {
                Ok(Some(existing)) => Ok((StepOutcome::Reused { url: Some(existing.web_url.clone()) }, existing)),
                Ok(None) => Err(e),
                Err(again) => Err(again),
            },
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    match merge_request {
        Ok((outcome, merge_request)) => {
            out.report.push(PublishStep::PullRequest, outcome);
            out.report.pull_request =
                Some(PublishedPullRequest { number: merge_request.iid, url: merge_request.web_url, branch });
        }
        Err(e) => settle(&mut out, PublishStep::PullRequest, Err(e)),
    }
    out
}

/// The run's commit status on `sha`, in GitLab's states (`failure` is
/// `failed`). GitLab refuses to move a status that is still pending to
/// pending again; that status is already what this publication says.
async fn post_status<H: HttpClient>(
    client: &GitLabClient<'_, H>,
    request: &PublishRequest<'_>,
    project: &str,
    sha: &str,
) -> Result<StepOutcome, GitLabError> {
    let (output, status) = concluded(request);
    let description = status_description(status, &output.title);
    let state = match status_state(status) {
        "failure" => "failed",
        other => other,
    };
    let status = CommitStatus {
        state,
        name: CHECK_RUN_NAME,
        description: &description,
        target_url: request.render.evidence_url,
    };
    match client.create_status(project, sha, &status).await {
        Ok(()) => Ok(StepOutcome::Created { url: None }),
        Err(e)
            if state == "pending"
                && e.status() == Some(400)
                && e.message()
                    .is_some_and(|m| m.contains("Cannot transition status") && m.contains("from :pending")) =>
        {
            Ok(StepOutcome::Reused { url: None })
        }
        Err(e) => Err(e),
    }
}

/// Edits our note carrying `marker`, or posts one.
async fn upsert_note<H: HttpClient>(
    client: &GitLabClient<'_, H>,
    project: &str,
    on: Noteable,
    login: &str,
    marker: &str,
    text: &str,
) -> Result<StepOutcome, GitLabError> {
    let notes = client.notes(project, on).await?;
    let ours = notes.into_iter().find(|n| {
        !n.system
            && n.author.as_ref().is_some_and(|u| u.username.eq_ignore_ascii_case(login))
            && carries(&n.body, marker)
    });
    match ours {
        Some(existing) if existing.body == text => Ok(StepOutcome::Reused { url: existing.web_url }),
        Some(existing) => {
            let edited = client.edit_note(project, on, existing.id, text).await?;
            Ok(StepOutcome::Updated { url: edited.web_url })
        }
        None => {
            let created = client.create_note(project, on, text).await?;
            Ok(StepOutcome::Created { url: created.web_url })
        }
    }
}

/// The mode `path` is published with: the verified tree's, else regular.
/// A link or anything else is refused: its blob would be the link target,
/// not what was verified.
fn tree_mode<'t>(tree: &'t [TreeFile], path: &str) -> Result<&'t str, String> {
    match tree.iter().find(|t| t.path == path).map(|t| t.mode.as_str()) {
        None => Ok(FILE_MODE),
        Some(mode @ (FILE_MODE | EXECUTABLE_MODE)) => Ok(mode),
        Some(other) => Err(format!(
            "`{}` has mode {other} in the verified tree; only files are published, so this change is left to a person",
            capped(path)
        )),
    }
}

/// The branch with the run's files on `base`'s head: one commit through
/// the commits API, or the branch an earlier attempt of this publication
/// made (reused only when it is exactly that commit: `base`'s head as its
/// one parent, the run's files and no other, each with the run's content
/// and mode). Anything else on that name is never overwritten.
async fn publish_branch<H: HttpClient>(
    client: &GitLabClient<'_, H>,
    request: &PublishRequest<'_>,
    project: &str,
    base: &str,
    branch: &str,
    message: &str,
) -> Result<StepOutcome, GitLabError> {
    if branch == base {
        return Ok(StepOutcome::failed("refusing to write the default branch"));
    }
    let mut modes = Vec::with_capacity(request.files.len());
    for file in request.files {
        match (file.content, tree_mode(&request.bundle.tree, file.path)) {
            (None, _) => modes.push(FILE_MODE),
            (Some(_), Ok(mode)) => modes.push(mode),
            (Some(_), Err(reason)) => return Ok(StepOutcome::Failed { reason }),
        }
    }
    let base_head = client.branch_head(project, base).await?;
    if let Some(existing) = client.branch_head_if_any(project, branch).await? {
        if is_this_publication(client, request, project, &base_head, &existing, &modes).await? {
            return Ok(StepOutcome::Reused { url: None });
        }
        return Ok(StepOutcome::failed(format!(
            "branch {branch} already exists with other content; it is never overwritten"
        )));
    }
    let mut actions = Vec::with_capacity(request.files.len() * 2);
    for (file, mode) in request.files.iter().zip(&modes) {
        let at_base = client.file_meta(project, file.path, &base_head, MAX_BASE_FILE_BYTES).await?;
        let executable = *mode == EXECUTABLE_MODE;
        match (file.content, at_base) {
            (Some(content), None) => {
                actions.push(CommitAction::Create { path: file.path, content });
                if executable {
                    actions.push(CommitAction::Chmod { path: file.path, executable });
                }
            }
            (Some(content), Some(meta)) => {
                actions.push(CommitAction::Update { path: file.path, content });
                if meta.executable != executable {
                    actions.push(CommitAction::Chmod { path: file.path, executable });
                }
            }
            (None, Some(_)) => actions.push(CommitAction::Delete { path: file.path }),
            (None, None) => {}
        }
    }
    if actions.is_empty() {
        return Ok(StepOutcome::skipped("no file differs from the base"));
    }
    match client.create_commit(project, branch, &base_head, message, &actions).await {
        Ok(_) => Ok(StepOutcome::Created { url: None }),
        // Made meanwhile by someone else (or a concurrent attempt): GitLab
        // answers "A branch called '…' already exists"; never overwritten.
        Err(e) if e.status() == Some(400) && e.message().is_some_and(|m| m.contains("already exists")) => {
            Ok(StepOutcome::failed(format!(
                "branch {branch} already exists (created concurrently); it is never overwritten"
            )))
        }
        Err(e) => Err(e),
    }
}

/// Whether `head` (the tip of the branch) is the commit this publication
/// makes: one parent, `base_head`; the run's files changed and no other;
/// each holding the run's content and mode (or gone, when the run deleted
/// it).
async fn is_this_publication<H: HttpClient>(
    client: &GitLabClient<'_, H>,
    request: &PublishRequest<'_>,
    project: &str,
    base_head: &str,
    head: &str,
    modes: &[&str],
) -> Result<bool, GitLabError> {
    let commit = client.commit(project, head).await?;
    if !matches!(commit.parent_ids.as_slice(), [parent] if parent.eq_ignore_ascii_case(base_head)) {
        return Ok(false);
    }
    let diff = client.commit_diff(project, head).await?;
    let mut changed: Vec<&str> = diff
        .iter()
        .flat_map(|d| {
            let old = (d.renamed_file || d.deleted_file).then_some(d.old_path.as_str());
            old.into_iter().chain((!d.deleted_file).then_some(d.new_path.as_str()))
        })
        .collect();
    let mut ours: Vec<&str> = request.files.iter().map(|f| f.path).collect();
    changed.sort_unstable();
    changed.dedup();
    ours.sort_unstable();
    if changed != ours {
        return Ok(false);
    }
    for (file, mode) in request.files.iter().zip(modes) {
        let entry = diff
            .iter()
            .find(|d| if file.content.is_some() { d.new_path == file.path } else { d.old_path == file.path });
        let shape_ok = match (file.content, entry) {
            (Some(_), Some(d)) => !d.deleted_file && (d.b_mode.is_empty() || d.b_mode == *mode),
            (None, Some(d)) => d.deleted_file,
            (_, None) => false,
        };
        if !shape_ok {
            return Ok(false);
        }
        let limit = file.content.map_or(1, |c| c.len() + 1);
        let there = client.raw_file(project, file.path, head, limit).await?;
        if there.as_deref() != file.content {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_published_with_its_verified_mode_and_a_link_never() {
        let file = |path: &str, mode: &str| TreeFile {
            path: path.into(),
            sha256: "0".repeat(64),
            bytes: 1,
            mode: mode.into(),
        };
        let tree = [file("run.sh", "100755"), file("a.py", "100644"), file("link", "120000")];
        assert_eq!(tree_mode(&tree, "run.sh"), Ok("100755"));
        assert_eq!(tree_mode(&tree, "a.py"), Ok("100644"));
        assert_eq!(tree_mode(&tree, "new.rs"), Ok("100644"), "a file the tree does not list is regular");
        let refused = tree_mode(&tree, "link").unwrap_err();
        assert!(refused.contains("`link` has mode 120000") && refused.contains("left to a person"), "{refused}");
    }
}
