//! The run path on GitLab (gitlab.com or self-managed: `GITLAB_URL`,
//! `GITLAB_TOKEN`): the policy gate of a recorded issue arrival, the
//! checkout's archive, and the publication, each through
//! `agent_zero_forges::gitlab`.
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
//! The project is named by its path (`group/subgroup/project`); the
//! publication's `owner` is the namespace and `repo` the last segment.

use agent_zero_engine::{Admission, AdmitError, ChangedFiles, Forge, ForgeError, Publication, Received, Stimulus};
use agent_zero_forges::gitlab::api::{GitLabApi, GitLabClient, GitLabError};
use agent_zero_github::{MAX_POLICY_BYTES, POLICY_PATH};
use agent_zero_ports::HttpClient;
use agent_zero_runner::CheckoutSource;
use serde_json::Value;

use super::decide::{IssueFacts, admit_issue, policy_of};
use super::workspace::CheckoutPort;
use crate::Settings;
use crate::forge_settings::GitLabSettings;

/// Each GitLab call is bounded by this.
const TIMEOUT_MS: u64 = 20_000;
/// GitLab's Developer: the lowest level that may push.
const DEVELOPER: u32 = 30;
/// GitLab's Owner.
const OWNER: u32 = 50;

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

/// The policy gate of a GitLab issue arrival (opened, or labelled):
/// reads, decides, never writes.
pub(crate) async fn admit<H: HttpClient>(
    settings: &Settings,
    http: &H,
    received: &Received,
) -> Result<Admission, AdmitError> {
    let arrival = &received.delivery;
    let (api, gitlab) = configured(settings).map_err(AdmitError::Invalid)?;
    let token = gitlab.token.as_ref().ok_or_else(|| AdmitError::Invalid("GITLAB_TOKEN is not set".into()))?;
    let client = GitLabClient::new(http, &api, Some(token));
    let project = received.repository.as_str();
    let (owner, repo) = split(project).map_err(AdmitError::Invalid)?;
    let number = arrival
        .get("number")
        .and_then(Value::as_u64)
        .ok_or_else(|| AdmitError::Invalid("the recorded arrival names no issue number".into()))?;
    let sender = arrival.get("sender").and_then(Value::as_str).unwrap_or_default();

    let info = client.project(project).await.map_err(|e| admit_error("the project", &e))?;
    let policy_bytes = client
        .raw_file(project, POLICY_PATH, &info.default_branch, usize::try_from(MAX_POLICY_BYTES).unwrap_or(usize::MAX))
        .await
        .map_err(|e| admit_error("the repository policy", &e))?;
    let policy = policy_of(policy_bytes, &info.default_branch)?;

    let issue = client.issue(project, number).await.map_err(|e| admit_error("the issue", &e))?;
    if issue.state != "opened" {
        let reason = agent_zero_github::IgnoreReason::IssueNotOpen { number };
        return Ok(Admission::Declined { reason: reason.code().to_owned(), message: reason.to_string() });
    }
    let Some(author) = issue.author.as_ref().filter(|a| !a.username.is_empty()) else {
        return Err(AdmitError::Invalid(format!("GitLab names no author of issue #{number}")));
    };
    let level = |user_id: u64, login: &str| {
        let (client, login) = (&client, login.to_owned());
        async move {
            client.access_level(project, user_id).await.map_err(|e| admit_error(&format!("{login}'s access level"), &e))
        }
    };
    let author_association = association(level(author.id, &author.username).await?);
    // Someone else who labelled the issue vouches for it only if they may push.
    let vouched_by = if !sender.is_empty() && !sender.eq_ignore_ascii_case(&author.username) {
        let labeller = client.user_by_username(sender).await.map_err(|e| admit_error("the labeller", &e))?;
        match labeller {
            Some(user) if level(user.id, sender).await? >= DEVELOPER => Some(sender),
            _ => None,
        }
    } else {
        None
    };
    let facts = IssueFacts {
        owner,
        repo,
        default_branch: &info.default_branch,
        number,
        title: &issue.title,
        body: &issue.description,
        url: Some(issue.web_url.clone()).filter(|u| !u.is_empty()),
        labels: issue.labels.clone(),
        sender,
        author: &author.username,
        author_association,
        vouched_by,
    };
    admit_issue(received, &facts, policy, agent_zero_contracts::ForgeKind::GitLab)
}

/// Publishes to GitLab.
pub(crate) struct GitLabForge<'a, H> {
    pub(crate) settings: &'a Settings,
    pub(crate) http: &'a H,
    pub(crate) now_ms: u64,
}

impl<H: HttpClient> Forge for GitLabForge<'_, H> {
    async fn changed_files(&self, _: &Stimulus) -> Result<ChangedFiles, ForgeError> {
        Err(ForgeError::Unavailable("this version reviews no GitLab merge request (docs/forges.md)".into()))
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
        let mut login_error = None;
        let login = if request.posts_comment() {
            match client.own_user().await {
                Ok(user) => Some(user.username),
                Err(e) => {
                    login_error = Some(e.to_string());
                    None
                }
            }
        } else {
            None
        };
        request.bot_login = login.as_deref();
        let published = agent_zero_forges::gitlab::publish::publish(&client, &request).await;
        if let Some(retry) = published.retry.or(login_error) {
            // The engine backs off and tries again; what was published is
            // found again (the note by its marker, the branch and the
            // merge request by name).
            return Err(format!("GitLab: {retry}"));
        }
        Ok(published.report.summary())
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
