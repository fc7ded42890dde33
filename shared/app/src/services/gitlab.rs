//! The run path on GitLab (gitlab.com or self-managed: `GITLAB_URL`,
//! `GITLAB_TOKEN`): the policy gate of a recorded issue or merge request
//! arrival, a merge request's changed files, the checkout's archive, and
//! the publication, each through `agent_zero_forges::gitlab`.
//!
//! A merge request (opened, or new commits) is a proactive review of its
//! current head: the gate reads it (state, draft, head, `diff_refs`,
//! author) and its author's access level, and GitHub's `pull_request`
//! rules decide (`decide::admit_change_request`).
//!
//! The gate reads what the arrival only names: the repository's policy
//! from its default branch, the issue's title, text and state, and each
//! account's access level on the project (`GET .../members/all/:user_id`,
//! GitLab's answer to GitHub's `author_association`, inherited memberships
//! included). The same rules as GitHub's then decide
//! (`decide::admit_issue`): the level maps onto the association the policy
//! lists (Owner → `OWNER`; Maintainer and Developer, who may push, →
//! `COLLABORATOR`; Reporter, Guest and no membership → `NONE`), and someone
//! other than the author who added the label vouches for the issue only
//! with push access (GitLab lets a Reporter label issues, which is no
//! vouch).
//!
//! A diff note (a `Note Hook` of `type: DiffNote` on a merge request) is
//! review feedback: its gate reads the merge request (open, head,
//! `diff_refs`), finds the note's discussion among the merge request's
//! discussions (by the id the hook names), and takes the sender's notes in
//! it (untrusted, capped; the path and new-side line of each note's
//! `position`) as the feedback; the sender's access level decides as an
//! issue author's does (`decide::admit_read`, trigger `feedback`).
//!
//! The project is named by its path (`group/subgroup/project`); the
//! publication's `owner` is the namespace and `repo` the last segment.

use agent_zero_contracts::{FeedbackItem, FeedbackKind, UntrustedText};
use agent_zero_engine::{
    Admission, AdmitError, ChangedFile, ChangedFiles, Forge, ForgeError, Publication, Received, Stimulus,
};
use agent_zero_forges::gitlab::api::{GitLabApi, GitLabClient, GitLabError};
use agent_zero_github::{IgnoreReason, MAX_BODY_BYTES, MAX_POLICY_BYTES, MAX_TITLE_BYTES, POLICY_PATH};
use agent_zero_ports::HttpClient;
use agent_zero_runner::CheckoutSource;
use serde_json::{Value, json};

use agent_zero_contracts::Sha;

use super::decide::{ChangeRequestFacts, IssueFacts, Where, admit_change_request, admit_issue, admit_read, policy_of};
use super::workspace::CheckoutPort;
use crate::Settings;
use crate::forge_settings::GitLabSettings;

/// Each GitLab call is bounded by this.
const TIMEOUT_MS: u64 = 20_000;
/// GitLab's Developer: the lowest level that may push.
const DEVELOPER: u32 = 30;
/// GitLab's Owner.
const OWNER: u32 = 50;
/// Most changed files a review lists (three pages of 100), as on GitHub.
const MAX_REVIEW_FILES: usize = 300;
/// Notes of one discussion read as feedback at most.
const MAX_FEEDBACK_ITEMS: usize = 20;
/// Longest path a feedback item names.
const MAX_PATH_BYTES: usize = 1_024;

/// The API of the configured instance and its settings.
fn configured(settings: &Settings) -> Result<(GitLabApi, &GitLabSettings), String> {
    let gitlab =
        settings.gitlab().map_err(|e| e.message)?.ok_or("no GitLab variable is set (GITLAB_URL, GITLAB_TOKEN)")?;
    Ok((GitLabApi::new(&gitlab.url, TIMEOUT_MS), gitlab))
}

/// `group/sub/project` as the publication's owner (the namespace) and repo.
fn split(project: &str) -> Result<(&str, &str), String> {
    project
        .rsplit_once('/')
        .filter(|(namespace, name)| !namespace.is_empty() && !name.is_empty())
        .ok_or_else(|| format!("`{project}` is not a GitLab project path (`namespace/project`)"))
}

/// A GitLab error as the gate's: retried when asking again may help.
fn admit_error(what: &str, e: &GitLabError) -> AdmitError {
    if e.retryable() {
        AdmitError::Unavailable(format!("{what}: {e}"))
    } else {
        AdmitError::Invalid(format!("{what}: {e}"))
    }
}

/// GitLab's access level as the association `triggers.authorAssociations` lists.
const fn association(level: u32) -> &'static str {
    match level {
        OWNER.. => "OWNER",
        DEVELOPER.. => "COLLABORATOR",
        _ => "NONE",
    }
}

/// The policy gate of a GitLab arrival: an issue (opened, or labelled)
/// or a merge request (opened, or updated with new commits). Reads,
/// decides, never writes.
///
/// Beside the admission, the policy it read: what intake
/// screens the project's next arrivals with (`intake_gate`).
pub(crate) async fn gate<H: HttpClient>(
    settings: &Settings,
    http: &H,
    received: &Received,
) -> Result<(Admission, agent_zero_agent::Policy), AdmitError> {
    let arrival = &received.delivery;
    let (api, gitlab) = configured(settings).map_err(AdmitError::Invalid)?;
    let token = gitlab.token.as_ref().ok_or_else(|| AdmitError::Invalid("GITLAB_TOKEN is not set".into()))?;
    let client = GitLabClient::new(http, &api, Some(token));
    let project = received.repository.as_str();
    split(project).map_err(AdmitError::Invalid)?;
    let number = arrival
        .get("number")
        .and_then(Value::as_u64)
        .ok_or_else(|| AdmitError::Invalid("the recorded arrival names no issue or merge request number".into()))?;
    let info = client.project(project).await.map_err(|e| admit_error("the project", &e))?;
    let policy_bytes = client
        .raw_file(project, POLICY_PATH, &info.default_branch, usize::try_from(MAX_POLICY_BYTES).unwrap_or(usize::MAX))
        .await
        .map_err(|e| admit_error("the repository policy", &e))?;
    let policy = policy_of(policy_bytes, &info.default_branch)?;
    let read_policy = policy.clone();
    let read = Read { client: &client, project, number, default_branch: &info.default_branch, policy };
    let admission = match arrival.get("arrival").and_then(Value::as_str) {
        Some("change-request-opened" | "change-request-updated") => admit_merge_request(received, read).await,
        Some("review-comment") => admit_diff_note(received, read).await,
        _ => admit_issue_arrival(received, read).await,
    }?;
    Ok((admission, read_policy))
}

/// What every gate reads first.
struct Read<'a, H> {
    client: &'a GitLabClient<'a, H>,
    project: &'a str,
    number: u64,
    default_branch: &'a str,
    policy: agent_zero_agent::Policy,
}

async fn admit_issue_arrival<H: HttpClient>(received: &Received, read: Read<'_, H>) -> Result<Admission, AdmitError> {
    let Read { client, project, number, default_branch, policy } = read;
    let (owner, repo) = split(project).map_err(AdmitError::Invalid)?;
    let sender = received.delivery.get("sender").and_then(Value::as_str).unwrap_or_default();
    let issue = client.issue(project, number).await.map_err(|e| admit_error("the issue", &e))?;
    if issue.state != "opened" {
        let reason = agent_zero_github::IgnoreReason::IssueNotOpen { number };
        return Ok(Admission::Declined { reason: reason.code().to_owned(), message: reason.to_string() });
    }
    // A confidential issue's text is for its project's members, never a
    // model's prompt (intake does not read `Confidential Issue Hook` for
    // the same reason; an issue made confidential after its hook is caught
    // here).
    if issue.confidential {
        return Ok(Admission::Declined {
            reason: "confidential-issue".into(),
            message: format!("issue #{number} is confidential: its text is not sent to a model"),
        });
    }
    let Some(author) = issue.author.as_ref().filter(|a| !a.username.is_empty()) else {
        return Err(AdmitError::Invalid(format!("GitLab names no author of issue #{number}")));
    };
    let author_association = association(level(client, project, author.id, &author.username).await?);
    // Someone else who labelled the issue vouches for it only if they may push.
    let vouched_by = if !sender.is_empty() && !sender.eq_ignore_ascii_case(&author.username) {
        let labeller = client.user_by_username(sender).await.map_err(|e| admit_error("the labeller", &e))?;
        match labeller {
            Some(user) if level(client, project, user.id, sender).await? >= DEVELOPER => Some(sender),
            _ => None,
        }
    } else {
        None
    };
    let facts = IssueFacts {
        owner,
        repo,
        default_branch,
        number,
        title: &issue.title,
        body: &issue.description,
        url: Some(issue.web_url.clone()).filter(|u| !u.is_empty()),
        labels: issue.labels.clone(),
        // The labels GitLab's hook says were added (`changes.labels`).
        added: received
            .delivery
            .get("added")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default(),
        sender,
        author: &author.username,
        author_association,
        vouched_by,
    };
    admit_issue(received, &facts, policy, agent_zero_contracts::ForgeKind::GitLab)
}

/// The gate of a merge request opened or updated with new commits: a
/// proactive review of its current head, by GitHub's `pull_request` rules.
/// The author's access level on this (the target) project is what the
/// rules check, whoever pushed; a merge request from a fork is reviewed
/// the same way (its head is readable in the target project, where GitLab
/// keeps `refs/merge-requests/:iid/head`), and its author is usually no
/// member, so it runs only when the policy lists `NONE` or the merge
/// request carries `triggers.optInLabel`.
async fn admit_merge_request<H: HttpClient>(received: &Received, read: Read<'_, H>) -> Result<Admission, AdmitError> {
    use agent_zero_github::IgnoreReason;
    let Read { client, project, number, default_branch, policy } = read;
    let (owner, repo) = split(project).map_err(AdmitError::Invalid)?;
    let sender = received.delivery.get("sender").and_then(Value::as_str).unwrap_or_default();
    let mr = client.merge_request(project, number).await.map_err(|e| admit_error("the merge request", &e))?;
    let declined =
        |reason: IgnoreReason| Admission::Declined { reason: reason.code().to_owned(), message: reason.to_string() };
    if mr.state != "opened" {
        return Ok(declined(IgnoreReason::PullRequestNotOpen { number }));
    }
    if mr.is_draft() {
        return Ok(declined(IgnoreReason::DraftPullRequest { number }));
    }
    let Some(refs) = mr.diff_refs.as_ref().filter(|r| Sha::is_valid(&r.head_sha) && Sha::is_valid(&mr.sha)) else {
        // GitLab computes the diff after the hook: asking again helps.
        return Err(AdmitError::Unavailable(format!(
            "GitLab has not computed the diff of merge request !{number} yet"
        )));
    };
    let Some(author) = mr.author.as_ref().filter(|a| !a.username.is_empty()) else {
        return Err(AdmitError::Invalid(format!("GitLab names no author of merge request !{number}")));
    };
    let author_association = association(level(client, project, author.id, &author.username).await?);
    let base_sha = Some(refs.base_sha.as_str()).filter(|s| Sha::is_valid(s));
    let facts = ChangeRequestFacts {
        owner,
        repo,
        default_branch,
        number,
        head_sha: &mr.sha.to_ascii_lowercase(),
        base_sha,
        title: &mr.title,
        body: &mr.description,
        labels: mr.labels.clone(),
        sender,
        author: &author.username,
        author_association,
    };
    admit_change_request(received, &facts, policy, agent_zero_contracts::ForgeKind::GitLab)
}

fn declined(reason: &IgnoreReason) -> Admission {
    Admission::Declined { reason: reason.code().to_owned(), message: reason.to_string() }
}

/// The gate of a diff note: review feedback on an open merge request. The
/// hook names the note's discussion; its notes by the sender (not system
/// notes, not empty) are the feedback, read from GitLab (never the hook's
/// copy), each with the path and new-side line it is placed at.
async fn admit_diff_note<H: HttpClient>(received: &Received, read: Read<'_, H>) -> Result<Admission, AdmitError> {
    let Read { client, project, number, default_branch, policy } = read;
    let (owner, repo) = split(project).map_err(AdmitError::Invalid)?;
    let arrival = &received.delivery;
    let sender = arrival.get("sender").and_then(Value::as_str).unwrap_or_default();
    if sender.is_empty() {
        return Err(AdmitError::Invalid("the recorded diff note arrival names no sender".into()));
    }
    let mr = client.merge_request(project, number).await.map_err(|e| admit_error("the merge request", &e))?;
    if mr.state != "opened" {
        return Ok(declined(&IgnoreReason::PullRequestNotOpen { number }));
    }
    let Some(refs) = mr.diff_refs.as_ref().filter(|r| Sha::is_valid(&r.head_sha) && Sha::is_valid(&mr.sha)) else {
        return Err(AdmitError::Unavailable(format!(
            "GitLab has not computed the diff of merge request !{number} yet"
        )));
    };
    let not_found = |why: String| Admission::Declined { reason: "discussion-not-found".into(), message: why };
    let Some(id) = arrival.get("discussion").and_then(Value::as_str).filter(|d| !d.is_empty()) else {
        return Ok(not_found(format!("the diff note on merge request !{number} names no discussion")));
    };
    let (discussions, more) =
        client.discussions(project, number).await.map_err(|e| admit_error("the merge request's discussions", &e))?;
    let Some(discussion) = discussions.iter().find(|d| d.id == id) else {
        return Ok(not_found(missing_discussion(number, id, discussions.len(), more)));
    };
    let items: Vec<FeedbackItem> = discussion
        .notes
        .iter()
        .filter(|n| !n.system && n.author.as_ref().is_some_and(|u| u.username.eq_ignore_ascii_case(sender)))
        .filter(|n| !n.body.trim().is_empty())
        .take(MAX_FEEDBACK_ITEMS)
        .map(|n| {
            let position = n.position.as_ref();
            FeedbackItem {
                id: format!("review-comment:{}", n.id),
                kind: FeedbackKind::ReviewComment,
                body: UntrustedText::capped(&n.body, MAX_BODY_BYTES),
                author: sender.to_owned(),
                requested_changes: false,
                path: position
                    .and_then(|p| p.new_path.clone())
                    .filter(|p| p.len() <= MAX_PATH_BYTES && agent_zero_contracts::is_repository_relative_path(p)),
                line: position.and_then(|p| p.new_line).filter(|l| *l > 0),
            }
        })
        .collect();
    if items.is_empty() {
        return Ok(declined(&IgnoreReason::EmptyFeedback { what: "diff note".into() }));
    }
    let association = match client.user_by_username(sender).await.map_err(|e| admit_error("the sender", &e))? {
        Some(user) => association(level(client, project, user.id, sender).await?),
        None => "NONE",
    };
    let title = UntrustedText::capped(&mr.title, MAX_TITLE_BYTES);
    let base_sha = Some(refs.base_sha.to_ascii_lowercase()).filter(|s| Sha::is_valid(s));
    let fields = json!({
        "subject": {
            "type": "pull-request", "owner": owner, "repo": repo, "number": number,
            "headSha": mr.sha.to_ascii_lowercase(), "baseSha": base_sha,
        },
        "title": title,
        "feedback": items,
        "requestedChanges": false,
        "gate": { "gate": "feedback" },
        "author": { "login": sender, "association": association, "bot": false },
    });
    let at = Where { owner, repo, default_branch, sender };
    admit_read(received, &at, "feedback", fields, policy, agent_zero_contracts::ForgeKind::GitLab)
}

/// The access level of `user_id` on `project`, as the gate's error.
/// Why a diff note's discussion `id` was not found among the `read`
/// discussions of merge request `number`: past the pages read (`more`),
/// it may exist, and the message says so rather than that it does not.
fn missing_discussion(number: u64, id: &str, read: usize, more: bool) -> String {
    if more {
        format!(
            "merge request !{number} has more discussions than this version reads ({read} of them), and `{id}` \
             is not among those read: nothing was validated"
        )
    } else {
        format!("merge request !{number} has no discussion `{id}`: nothing to validate")
    }
}

async fn level<H: HttpClient>(
    client: &GitLabClient<'_, H>,
    project: &str,
    user_id: u64,
    login: &str,
) -> Result<u32, AdmitError> {
    client.access_level(project, user_id).await.map_err(|e| admit_error(&format!("{login}'s access level"), &e))
}

/// Publishes to GitLab.
pub(crate) struct GitLabForge<'a, H> {
    pub(crate) settings: &'a Settings,
    pub(crate) http: &'a H,
    pub(crate) now_ms: u64,
}

impl<H: HttpClient> Forge for GitLabForge<'_, H> {
    /// The merge request's changed files with their hunks (`GET
    /// .../merge_requests/:iid/diffs`), at most [`MAX_REVIEW_FILES`]. The
    /// whole merge request each time: GitLab's review does not narrow to
    /// what changed since an earlier one.
    async fn changed_files(&self, stimulus: &Stimulus) -> Result<ChangedFiles, ForgeError> {
        let unavailable = |reason: String| ForgeError::Unavailable(reason);
        let Some(pr) = &stimulus.input.pull_request else {
            return Err(unavailable("the task names no merge request".into()));
        };
        let (api, gitlab) = configured(self.settings).map_err(unavailable)?;
        let client = GitLabClient::new(self.http, &api, gitlab.token.as_ref());
        let listed =
            client.merge_request_diffs(&stimulus.repository, pr.number, MAX_REVIEW_FILES).await.map_err(|e| {
                if e.retryable() { ForgeError::Failed(e.to_string()) } else { ForgeError::Unavailable(e.to_string()) }
            })?;
        let cut =
            listed.more.then(|| format!("GitLab lists more changed files than the {MAX_REVIEW_FILES} a review reads"));
        let files = listed
            .files
            .iter()
            .map(|d| {
                let file = agent_zero_forges::gitlab::diff::review_file(d);
                ChangedFile {
                    path: file.path,
                    status: file.status.to_owned(),
                    patch: file.patch,
                    additions: file.additions,
                    deletions: file.deletions,
                }
            })
            .collect();
        Ok(ChangedFiles { files, cut, ..ChangedFiles::default() })
    }

    async fn publish(&self, publication: Publication<'_>) -> Result<String, String> {
        let settings = self.settings;
        let stimulus = publication.stimulus;
        let (api, gitlab) = match configured(settings) {
            Ok(configured) => configured,
            Err(reason) => return Ok(format!("stored only: {reason}")),
        };
        let Some(token) = gitlab.token.as_ref() else {
            return Ok("stored only: GITLAB_TOKEN is not set".into());
        };
        let (owner, repo) = split(&stimulus.repository)?;
        let client = GitLabClient::new(self.http, &api, Some(token));
        let inputs = super::publishing::PublishInputs::of(settings, publication);
        let mut request = inputs.request(owner, repo, self.now_ms);
        let login =
            super::publishing::own_login(&request, async { client.own_user().await.map(|user| user.username) }).await;
        request.bot_login = login.as_ref().ok().and_then(Option::as_deref);
        let published = agent_zero_forges::gitlab::publish::publish(&client, &request).await;
        super::publishing::settled("GitLab", published.retry, &login, &published.report)
    }
}

/// The checkout of a GitLab project: the ref resolved to its commit and
/// that commit's archive, downloaded with the token (`PRIVATE-TOKEN`) by
/// whoever downloads it (never the sandbox's commands).
pub(crate) struct GitLabCheckout<'a, H> {
    pub(crate) settings: &'a Settings,
    pub(crate) http: &'a H,
}

impl<H: HttpClient> CheckoutPort for GitLabCheckout<'_, H> {
    async fn source(&self, repository: &str, git_ref: &str) -> Result<(String, CheckoutSource), String> {
        let failed = |e: &dyn std::fmt::Display| format!("checkout of `{repository}` from GitLab: {e}");
        let (api, gitlab) = configured(self.settings).map_err(|e| failed(&e))?;
        let client = GitLabClient::new(self.http, &api, gitlab.token.as_ref());
        let commit = if agent_zero_contracts::Sha::is_valid(git_ref) {
            git_ref.to_ascii_lowercase()
        } else {
            let branch = match git_ref {
                "HEAD" => client.project(repository).await.map_err(|e| failed(&e))?.default_branch,
                other => other.to_owned(),
            };
            client.branch_head(repository, &branch).await.map_err(|e| failed(&e))?
        };
        let (url, token) = client.archive(repository, &commit).map_err(|e| failed(&e))?;
        let authorization = token.map(|value| agent_zero_runner::ArchiveAuth { name: "private-token", value });
        Ok((commit.clone(), CheckoutSource::Archive { url: agent_zero_ports::Secret::new(url), commit, authorization }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_levels_map_onto_associations_and_paths_split_at_the_last_slash() {
        assert_eq!(
            [0, 5, 10, 20, 30, 40, 50].map(association),
            ["NONE", "NONE", "NONE", "NONE", "COLLABORATOR", "COLLABORATOR", "OWNER"]
        );
        assert_eq!(split("acme/tools/calc").unwrap(), ("acme/tools", "calc"));
        assert_eq!(split("acme/calc").unwrap(), ("acme", "calc"));
        for bad in ["calc", "/calc", "acme/"] {
            assert!(split(bad).unwrap_err().contains(bad), "{bad}");
        }
    }
}
