//! The run path on Gitea and Forgejo (`GITEA_URL`, `GITEA_TOKEN`): the
//! policy gate of a recorded arrival, the checkout's archive, and the
//! publication, each through `agent_zero_forges::gitea`.
//!
//! The gate reads what the arrival only names: the repository's policy
//! from its default branch (never a pull request's head), the issue's
//! title, text and state, and each account's permission on the repository
//! (`GET .../collaborators/{login}/permission`, Gitea's answer to GitHub's
//! `author_association`; Gitea answers it only to a repository admin, so
//! the token's account must be one). The same rules as GitHub's then decide
//! (`agent_zero_github::ParsedDelivery::admit`): the permission maps onto
//! the association the policy lists (`owner` → `OWNER`, `admin` and `write`
//! → `COLLABORATOR`, `read` and `none` → `NONE`), and someone other than
//! the author who added the label vouches for the issue (Gitea lets only
//! accounts that may write issues label one). A `label_updated` delivery
//! names no label, so the issue's timeline says what the sender's change
//! added: only adding the required label starts a run, as on GitHub.
//!
//! A pull request opened or given new commits is a proactive review of
//! its current head: the gate reads it (state, merged, draft, head, base,
//! author, labels) and its author's permission, and GitHub's
//! `pull_request` rules decide (`decide::admit_change_request`, shared
//! with GitLab's merge requests). A fork's pull request is reviewed the
//! same way (its author's permission on the base repository decides).
//!
//! A review is review feedback: its gate reads the pull request (open, its
//! head and base), and, since Gitea's delivery names no review, the
//! sender's newest review and its line comments (or its text when it has
//! none; untrusted, capped); the sender's permission decides as an issue
//! author's does. Its changed files are the pull request's diff
//! (`agent_zero_forges::gitea::diff`).

use agent_zero_contracts::{FeedbackItem, FeedbackKind, UntrustedText};
use agent_zero_engine::{
    Admission, AdmitError, ChangedFile, ChangedFiles, Forge, ForgeError, Publication, Received, Stimulus,
};
use agent_zero_forges::gitea::api::{GiteaApi, GiteaClient, GiteaError};
use agent_zero_github::{MAX_BODY_BYTES, MAX_POLICY_BYTES, MAX_TITLE_BYTES, POLICY_PATH};
use agent_zero_ports::HttpClient;
use agent_zero_runner::CheckoutSource;
use serde_json::{Value, json};

use super::decide::{ChangeRequestFacts, IssueFacts, Where, admit_change_request, admit_issue, admit_read};
use super::workspace::CheckoutPort;
use crate::Settings;
use crate::forge_settings::GiteaSettings;

/// Each Gitea call is bounded by this.
const TIMEOUT_MS: u64 = 20_000;
/// Line comments of one review read as feedback at most.
const MAX_FEEDBACK_ITEMS: usize = 20;
/// Changed files of a pull request a review reads at most.
const MAX_REVIEW_FILES: usize = 300;
/// Longest path a feedback item names.
const MAX_PATH_BYTES: usize = 1_024;

/// The API of the configured instance and its settings; when it is not
/// configured, what to set (a task fails with it: setting it is a person's).
fn configured(settings: &Settings) -> Result<(GiteaApi, &GiteaSettings), String> {
    let gitea = settings.gitea().map_err(|e| e.message)?.ok_or("no Gitea variable is set (GITEA_URL, GITEA_TOKEN)")?;
    let url = gitea.url.as_deref().ok_or("GITEA_URL is not set: the Gitea instance cannot be reached")?;
    Ok((GiteaApi::new(url, TIMEOUT_MS), gitea))
}

fn split(repository: &str) -> Result<(&str, &str), String> {
    repository.split_once('/').ok_or_else(|| format!("`{repository}` is not `owner/name`"))
}

/// A Gitea error as the gate's: retried when asking again may help.
fn admit_error(what: &str, e: &GiteaError) -> AdmitError {
    if e.retryable() {
        AdmitError::Unavailable(format!("{what}: {e}"))
    } else {
        AdmitError::Invalid(format!("{what}: {e}"))
    }
}

/// Gitea's permission as the association `triggers.authorAssociations` lists.
fn association(permission: &str) -> &'static str {
    match permission {
        "owner" => "OWNER",
        "admin" | "write" => "COLLABORATOR",
        _ => "NONE",
    }
}

/// The policy gate of a Gitea or Forgejo arrival (an issue opened or
/// labelled, a pull request opened or synchronized, a review with line
/// comments): reads, decides, never writes.
///
/// Beside the admission, the policy it read: what intake
/// screens the repository's next arrivals with (`intake_gate`).
pub(crate) async fn gate<H: HttpClient>(
    settings: &Settings,
    http: &H,
    received: &Received,
) -> Result<(Admission, agent_zero_agent::Policy), AdmitError> {
    let arrival = &received.delivery;
    let (api, gitea) = configured(settings).map_err(AdmitError::Invalid)?;
    let client = GiteaClient::new(http, &api, gitea.token.as_ref());
    let (owner, repo) = split(&received.repository).map_err(AdmitError::Invalid)?;
    let number = arrival
        .get("number")
        .and_then(Value::as_u64)
        .ok_or_else(|| AdmitError::Invalid("the recorded arrival names no issue or pull request number".into()))?;
    let sender = arrival.get("sender").and_then(Value::as_str).unwrap_or_default().to_owned();
    let gate = Gate { client, received, owner, repo, number, sender };

    let info = gate.client.repository(owner, repo).await.map_err(|e| admit_error("the repository", &e))?;
    let policy_bytes = gate
        .client
        .raw_file(owner, repo, POLICY_PATH, &info.default_branch, MAX_POLICY_BYTES)
        .await
        .map_err(|e| admit_error("the repository policy", &e))?;
    let policy = super::decide::policy_of(policy_bytes, &info.default_branch)?;
    let read_policy = policy.clone();
    let admission = match arrival.get("arrival").and_then(Value::as_str) {
        Some("review-comment") => gate.review(&info.default_branch, policy).await,
        Some("change-request-opened" | "change-request-updated") => {
            gate.pull_request(&info.default_branch, policy).await
        }
        _ => gate.issue(&info.default_branch, policy).await,
    }?;
    Ok((admission, read_policy))
}

/// What both gates read with.
struct Gate<'a, H> {
    client: GiteaClient<'a, H>,
    received: &'a Received,
    owner: &'a str,
    repo: &'a str,
    number: u64,
    sender: String,
}

fn declined(reason: &agent_zero_github::IgnoreReason) -> Result<Admission, AdmitError> {
    Ok(Admission::Declined { reason: reason.code().to_owned(), message: reason.to_string() })
}

impl<H: HttpClient> Gate<'_, H> {
    /// `login`'s permission as the association the policy lists.
    async fn association(&self, login: &str) -> Result<&'static str, AdmitError> {
        let (owner, repo) = (self.owner, self.repo);
        let permission = self.client.permission(owner, repo, login).await.map_err(|e| match e.status() {
            // Gitea lets only a repository's admins read another
            // account's permission: say what to grant.
            Some(403) => AdmitError::Invalid(format!(
                "Gitea refused to tell {login}'s permission on {owner}/{repo} (403): the GITEA_TOKEN account must be \
                 an admin of the repository, since Gitea lets only admins read another account's permission"
            )),
            _ => admit_error(&format!("{login}'s permission"), &e),
        })?;
        Ok(association(&permission))
    }

    /// What the sender's label change added. Gitea's `label_updated`
    /// names none, so the issue's timeline says: the labels the sender's
    /// newest label change added. A change that added none (it removed
    /// some), or none found, is declined: an issue that carries the
    /// required label starts no run when someone changes its other labels.
    /// Two changes by one person within the seconds before the gate reads
    /// are judged by the newer.
    async fn added_labels(&self) -> Result<Result<Vec<String>, Admission>, AdmitError> {
        let (owner, repo, number, sender) = (self.owner, self.repo, self.number, self.sender.as_str());
        let timeline =
            self.client.timeline(owner, repo, number).await.map_err(|e| admit_error("the issue's timeline", &e))?;
        let declined = |reason: &str, message: String| Ok(Err(Admission::Declined { reason: reason.into(), message }));
        match timeline.newest_added_by(sender) {
            Some(added) if added.is_empty() => declined(
                "no-label-added",
                format!("{sender}'s label change on issue #{number} added no label: nothing to run"),
            ),
            Some(added) => Ok(Ok(added)),
            None if timeline.whole => declined(
                "label-change-not-found",
                format!("issue #{number}'s timeline shows no label change by {sender}: nothing to run"),
            ),
            None => declined(
                "label-change-not-found",
                format!(
                    "issue #{number}'s timeline is longer than this version reads, and what it read shows no \
                     label change by {sender}: nothing to run"
                ),
            ),
        }
    }

    /// Where the arrival is, as read.
    fn at<'b>(&'b self, default_branch: &'b str) -> Where<'b> {
        Where { owner: self.owner, repo: self.repo, default_branch, sender: &self.sender }
    }

    /// An issue opened or labelled.
    async fn issue(&self, default_branch: &str, policy: agent_zero_agent::Policy) -> Result<Admission, AdmitError> {
        let (owner, repo, number) = (self.owner, self.repo, self.number);
        let issue = self.client.issue(owner, repo, number).await.map_err(|e| admit_error("the issue", &e))?;
        if issue.is_pull_request() {
            return declined(&agent_zero_github::IgnoreReason::IssueIsPullRequest { number });
        }
        if issue.state != "open" {
            return declined(&agent_zero_github::IgnoreReason::IssueNotOpen { number });
        }
        let Some(author) = issue.user.as_ref().map(|u| u.login.clone()).filter(|l| !l.is_empty()) else {
            return Err(AdmitError::Invalid(format!("Gitea names no author of issue #{number}")));
        };
        let added = match self.received.delivery.get("arrival").and_then(Value::as_str) {
            Some("issue-labelled") => match self.added_labels().await? {
                Ok(added) => added,
                Err(declined) => return Ok(declined),
            },
            _ => Vec::new(),
        };
        let author_association = self.association(&author).await?;
        // Someone else who labelled the issue vouches for it only if Gitea
        // let them write issues (a label change by anyone else is no vouch).
        let sender = &self.sender;
        let vouched_by = if !sender.is_empty() && !sender.eq_ignore_ascii_case(&author) {
            (self.association(sender).await? != "NONE").then(|| sender.clone())
        } else {
            None
        };
        let facts = IssueFacts {
            owner,
            repo,
            default_branch,
            number,
            title: &issue.title,
            body: &issue.body,
            url: issue.html_url.clone(),
            labels: issue.labels.iter().map(|l| l.name.clone()).collect(),
            added,
            sender,
            author: &author,
            author_association,
            vouched_by: vouched_by.as_deref(),
        };
        admit_issue(self.received, &facts, policy, self.received.forge())
    }

    /// A pull request opened or given new commits: a proactive review of
    /// its current head, by GitHub's `pull_request` rules
    /// (`decide::admit_change_request`). The author's permission on this
    /// (the base) repository is what the rules check, whoever pushed. A
    /// pull request from a fork is reviewed the same way, as on GitHub:
    /// Gitea keeps its head in the base repository (`refs/pull/{n}/head`),
    /// so the head's archive is read there; its author is usually no
    /// collaborator (`NONE`), so it runs only when the policy lists `NONE`
    /// or it carries `triggers.optInLabel`.
    async fn pull_request(
        &self,
        default_branch: &str,
        policy: agent_zero_agent::Policy,
    ) -> Result<Admission, AdmitError> {
        use agent_zero_contracts::Sha;
        use agent_zero_github::IgnoreReason;
        let (owner, repo, number) = (self.owner, self.repo, self.number);
        let pr =
            self.client.pull_request(owner, repo, number).await.map_err(|e| admit_error("the pull request", &e))?;
        if pr.state != "open" || pr.merged {
            return declined(&IgnoreReason::PullRequestNotOpen { number });
        }
        if pr.draft {
            return declined(&IgnoreReason::DraftPullRequest { number });
        }
        if !Sha::is_valid(&pr.head.sha) {
            return Err(AdmitError::Invalid(format!("Gitea names no head commit of pull request #{number}")));
        }
        let Some(author) = pr.user.as_ref().map(|u| u.login.clone()).filter(|l| !l.is_empty()) else {
            return Err(AdmitError::Invalid(format!("Gitea names no author of pull request #{number}")));
        };
        let author_association = self.association(&author).await?;
        let base_sha = Some(pr.base.sha.to_ascii_lowercase()).filter(|s| Sha::is_valid(s));
        let facts = ChangeRequestFacts {
            owner,
            repo,
            default_branch,
            number,
            head_sha: &pr.head.sha.to_ascii_lowercase(),
            base_sha: base_sha.as_deref(),
            title: &pr.title,
            body: &pr.body,
            labels: pr.labels.iter().map(|l| l.name.clone()).collect(),
            sender: &self.sender,
            author: &author,
            author_association,
        };
        let forge = self.received.forge();
        admit_change_request(self.received, &facts, policy, forge)
    }

    /// A review of a pull request. The delivery names no review (Gitea's
    /// payload carries none), so it is found by reading: the sender's
    /// newest submitted review (`COMMENT` or `REQUEST_CHANGES`, not
    /// dismissed); its line comments by the sender are the feedback, or,
    /// with none, its text. All untrusted and capped.
    async fn review(&self, default_branch: &str, policy: agent_zero_agent::Policy) -> Result<Admission, AdmitError> {
        let (owner, repo, number, sender) = (self.owner, self.repo, self.number, self.sender.as_str());
        if sender.is_empty() {
            return Err(AdmitError::Invalid("the recorded review arrival names no sender".into()));
        }
        let pr =
            self.client.pull_request(owner, repo, number).await.map_err(|e| admit_error("the pull request", &e))?;
        if pr.state != "open" || pr.merged {
            return declined(&agent_zero_github::IgnoreReason::PullRequestNotOpen { number });
        }
        let reviews = self
            .client
            .reviews(owner, repo, number)
            .await
            .map_err(|e| admit_error("the pull request's reviews", &e))?;
        let Some(review) = reviews
            .iter()
            .filter(|r| r.by(sender) && !r.dismissed)
            .filter(|r| matches!(r.state.as_str(), "COMMENT" | "REQUEST_CHANGES"))
            .max_by_key(|r| r.id)
        else {
            return Ok(Admission::Declined {
                reason: "review-not-found".into(),
                message: format!("pull request #{number} has no submitted review by {sender}: nothing to validate"),
            });
        };
        let requested_changes = review.state == "REQUEST_CHANGES";
        let mut items: Vec<FeedbackItem> = Vec::new();
        if review.comments_count > 0 {
            let comments = self
                .client
                .review_comments(owner, repo, number, review.id)
                .await
                .map_err(|e| admit_error("the review's comments", &e))?;
            items = comments
                .iter()
                .filter(|c| c.user.as_ref().is_some_and(|u| u.login.eq_ignore_ascii_case(sender)))
                .filter(|c| !c.body.trim().is_empty())
                .take(MAX_FEEDBACK_ITEMS)
                .map(|c| FeedbackItem {
                    id: format!("review-comment:{}", c.id),
                    kind: FeedbackKind::ReviewComment,
                    body: UntrustedText::capped(&c.body, MAX_BODY_BYTES),
                    author: sender.to_owned(),
                    requested_changes,
                    path: Some(c.path.clone())
                        .filter(|p| p.len() <= MAX_PATH_BYTES && agent_zero_contracts::is_repository_relative_path(p)),
                    // The new side's line (0: the comment is on the old side).
                    line: Some(c.position).filter(|l| *l > 0),
                })
                .collect();
        }
        // A review without line comments (or only empty ones) is its text.
        if items.is_empty() && !review.body.trim().is_empty() {
            items.push(FeedbackItem {
                id: format!("review:{}", review.id),
                kind: FeedbackKind::ReviewBody,
                body: UntrustedText::capped(&review.body, MAX_BODY_BYTES),
                author: sender.to_owned(),
                requested_changes,
                path: None,
                line: None,
            });
        }
        if items.is_empty() {
            return declined(&agent_zero_github::IgnoreReason::EmptyFeedback { what: "review".into() });
        }
        let association = self.association(sender).await?;
        let title = UntrustedText::capped(&pr.title, MAX_TITLE_BYTES);
        let fields = json!({
            "subject": {
                "type": "pull-request", "owner": owner, "repo": repo, "number": number,
                "headSha": pr.head.sha, "baseSha": pr.base.sha,
            },
            "title": title,
            "feedback": items,
            "requestedChanges": requested_changes,
            "gate": { "gate": "feedback" },
            "author": { "login": sender, "association": association, "bot": false },
        });
        let forge = self.received.forge();
        admit_read(self.received, &self.at(default_branch), "feedback", fields, policy, forge)
    }
}

/// Publishes to Gitea or Forgejo.
pub(crate) struct GiteaForge<'a, H> {
    pub(crate) settings: &'a Settings,
    pub(crate) http: &'a H,
    pub(crate) now_ms: u64,
}

impl<H: HttpClient> Forge for GiteaForge<'_, H> {
    /// The pull request's diff (`.diff`; Gitea 1.22's `files` carries no
    /// patch), split into files with their hunks.
    async fn changed_files(&self, stimulus: &Stimulus) -> Result<ChangedFiles, ForgeError> {
        let Some(pr) = &stimulus.input.pull_request else {
            return Err(ForgeError::Unavailable("the task names no pull request".into()));
        };
        let (api, gitea) = configured(self.settings).map_err(ForgeError::Unavailable)?;
        let client = GiteaClient::new(self.http, &api, gitea.token.as_ref());
        let diff = client.pull_diff(&pr.owner, &pr.repo, pr.number).await.map_err(|e| {
            let reason = format!("the diff of pull request #{}: {e}", pr.number);
            if e.retryable() { ForgeError::Failed(reason) } else { ForgeError::Unavailable(reason) }
        })?;
        let mut files: Vec<ChangedFile> = agent_zero_forges::gitea::diff::split(&String::from_utf8_lossy(&diff))
            .into_iter()
            .map(|f| ChangedFile {
                path: f.path,
                status: f.status.to_owned(),
                patch: f.patch,
                additions: f.additions,
                deletions: f.deletions,
            })
            .collect();
        let cut = (files.len() > MAX_REVIEW_FILES).then(|| {
            format!("the pull request changes {} files; a review reads the first {MAX_REVIEW_FILES}", files.len())
        });
        files.truncate(MAX_REVIEW_FILES);
        Ok(ChangedFiles { files, cut, ..ChangedFiles::default() })
    }

    async fn publish(&self, publication: Publication<'_>) -> Result<String, String> {
        let settings = self.settings;
        let stimulus = publication.stimulus;
        let (api, gitea) = match configured(settings) {
            Ok(configured) => configured,
            Err(reason) => return Ok(format!("stored only: {reason}")),
        };
        if gitea.token.is_none() {
            return Ok("stored only: GITEA_TOKEN is not set".into());
        }
        let (owner, repo) = split(&stimulus.repository)?;
        let client = GiteaClient::new(self.http, &api, gitea.token.as_ref());
        let inputs = super::publishing::PublishInputs::of(settings, publication);
        let mut request = inputs.request(owner, repo, self.now_ms);
        let login = super::publishing::own_login(&request, client.own_login()).await;
        request.bot_login = login.as_ref().ok().and_then(Option::as_deref);
        let published = agent_zero_forges::gitea::publish::publish(&client, &request).await;
        super::publishing::settled("Gitea", published.retry, &login, &published.report)
    }
}

/// The checkout of a Gitea repository: the ref resolved to its commit and
/// that commit's archive, downloaded with the token by whoever downloads
/// it (never the sandbox's commands).
pub(crate) struct GiteaCheckout<'a, H> {
    pub(crate) settings: &'a Settings,
    pub(crate) http: &'a H,
}

impl<H: HttpClient> CheckoutPort for GiteaCheckout<'_, H> {
    async fn source(&self, repository: &str, git_ref: &str) -> Result<(String, CheckoutSource), String> {
        let failed = |e: &dyn std::fmt::Display| format!("checkout of `{repository}` from Gitea: {e}");
        let (api, gitea) = configured(self.settings).map_err(|e| failed(&e))?;
        let (owner, name) = split(repository).map_err(|e| failed(&e))?;
        let client = GiteaClient::new(self.http, &api, gitea.token.as_ref());
        let commit = if agent_zero_contracts::Sha::is_valid(git_ref) {
            git_ref.to_ascii_lowercase()
        } else {
            let branch = match git_ref {
                "HEAD" => client.repository(owner, name).await.map_err(|e| failed(&e))?.default_branch,
                other => other.to_owned(),
            };
            client.branch_head(owner, name, &branch).await.map_err(|e| failed(&e))?
        };
        let (url, authorization) = client.archive(owner, name, &commit).map_err(|e| failed(&e))?;
        let authorization = authorization.map(|value| agent_zero_runner::ArchiveAuth { name: "authorization", value });
        Ok((commit.clone(), CheckoutSource::Archive { url: agent_zero_ports::Secret::new(url), commit, authorization }))
    }
}
