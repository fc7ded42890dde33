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
//! accounts that may write issues label one).

use agent_zero_contracts::{ForgeKind, IssueRef, UntrustedText};
use agent_zero_engine::{Admission, AdmitError, ChangedFiles, Forge, ForgeError, Publication, Received, Stimulus};
use agent_zero_forges::gitea::api::{GiteaApi, GiteaClient, GiteaError};
use agent_zero_github::{MAX_BODY_BYTES, MAX_POLICY_BYTES, MAX_TITLE_BYTES, POLICY_PATH, ParsedDelivery};
use agent_zero_ports::HttpClient;
use agent_zero_runner::CheckoutSource;
use serde_json::{Value, json};

use super::workspace::CheckoutPort;
use crate::Settings;
use crate::forge_settings::GiteaSettings;

/// Each Gitea call is bounded by this.
const TIMEOUT_MS: u64 = 20_000;

/// The forge a recorded delivery came from: Gitea's and Forgejo's arrivals
/// name theirs; GitHub's parsed deliveries name none.
pub(crate) fn forge_of_delivery(delivery: &Value) -> ForgeKind {
    match delivery.get("forge").and_then(Value::as_str) {
        Some("gitea") => ForgeKind::Gitea,
        Some("forgejo") => ForgeKind::Forgejo,
        Some("gitlab") => ForgeKind::GitLab,
        _ => ForgeKind::GitHub,
    }
}

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
/// labelled): reads, decides, never writes.
pub(crate) async fn admit<H: HttpClient>(
    settings: &Settings,
    http: &H,
    received: &Received,
) -> Result<Admission, AdmitError> {
    let arrival = &received.delivery;
    let forge = forge_of_delivery(arrival);
    let (api, gitea) = configured(settings).map_err(AdmitError::Invalid)?;
    let client = GiteaClient::new(http, &api, gitea.token.as_ref());
    let (owner, repo) = split(&received.repository).map_err(AdmitError::Invalid)?;
    let number = arrival
        .get("number")
        .and_then(Value::as_u64)
        .ok_or_else(|| AdmitError::Invalid("the recorded arrival names no issue number".into()))?;
    let sender = arrival.get("sender").and_then(Value::as_str).unwrap_or_default().to_owned();

    let info = client.repository(owner, repo).await.map_err(|e| admit_error("the repository", &e))?;
    let policy = match client
        .raw_file(owner, repo, POLICY_PATH, &info.default_branch, MAX_POLICY_BYTES)
        .await
        .map_err(|e| admit_error("the repository policy", &e))?
    {
        None => agent_zero_agent::Policy::default(),
        Some(bytes) => {
            let text = String::from_utf8(bytes)
                .map_err(|_| AdmitError::Invalid(format!("{POLICY_PATH} is not UTF-8 ({POLICY_PATH})")))?;
            agent_zero_agent::Policy::parse(&text).map_err(|e| {
                let field = e.field().map(|f| format!(":{f}")).unwrap_or_default();
                AdmitError::Invalid(format!("{POLICY_PATH} on {}: {e} ({POLICY_PATH}{field})", info.default_branch))
            })?
        }
    };

    let issue = client.issue(owner, repo, number).await.map_err(|e| admit_error("the issue", &e))?;
    let declined = |reason: agent_zero_github::IgnoreReason| {
        Ok(Admission::Declined { reason: reason.code().to_owned(), message: reason.to_string() })
    };
    if issue.is_pull_request() {
        return declined(agent_zero_github::IgnoreReason::IssueIsPullRequest { number });
    }
    if issue.state != "open" {
        return declined(agent_zero_github::IgnoreReason::IssueNotOpen { number });
    }
    let Some(author) = issue.user.as_ref().map(|u| u.login.clone()).filter(|l| !l.is_empty()) else {
        return Err(AdmitError::Invalid(format!("Gitea names no author of issue #{number}")));
    };
    let permission = |login: String| {
        let client = &client;
        async move {
            client.permission(owner, repo, &login).await.map_err(|e| match e.status() {
                // Gitea lets only a repository's admins read another
                // account's permission: say what to grant.
                Some(403) => AdmitError::Invalid(format!(
                    "Gitea refused to tell {login}'s permission on {owner}/{repo} (403): the GITEA_TOKEN account must \
                     be an admin of the repository, since Gitea lets only admins read another account's permission"
                )),
                _ => admit_error(&format!("{login}'s permission"), &e),
            })
        }
    };
    let author_association = association(&permission(author.clone()).await?);
    // Someone else who labelled the issue vouches for it only if Gitea
    // let them write issues (a label change by anyone else is no vouch).
    let vouched_by = if !sender.is_empty() && !sender.eq_ignore_ascii_case(&author) {
        let labeller = association(&permission(sender.clone()).await?);
        (labeller != "NONE").then(|| sender.clone())
    } else {
        None
    };
    let labels: Vec<String> = issue.labels.iter().map(|l| l.name.clone()).collect();
    let title = UntrustedText::capped(&issue.title, MAX_TITLE_BYTES);
    let body = UntrustedText::capped(&issue.body, MAX_BODY_BYTES);
    let issue_ref = IssueRef {
        owner: owner.to_owned(),
        repo: repo.to_owned(),
        number,
        title: title.clone(),
        url: issue.html_url.clone(),
    };
    // The neutral parsed delivery GitHub's rules read (its serde shape is
    // the recorded one, so it is built as a record would be).
    let parsed = json!({
        "trigger": "issue",
        "deliveryId": arrival.get("deliveryId").cloned().unwrap_or(Value::Null),
        "event": arrival.get("event").cloned().unwrap_or(Value::Null),
        "action": arrival.get("action").cloned().unwrap_or(Value::Null),
        "repository": { "owner": owner, "repo": repo, "defaultBranch": info.default_branch },
        "sender": sender,
        "subject": { "type": "issue", "owner": owner, "repo": repo, "number": number, "title": title, "url": issue.html_url },
        "title": title,
        "body": body,
        "requestedChanges": false,
        "gate": { "gate": "issue-label", "labels": labels },
        "author": { "login": author, "association": author_association, "bot": false },
        "vouchedBy": vouched_by,
    });
    let parsed: ParsedDelivery = serde_json::to_vec(&parsed)
        .and_then(|bytes| agent_zero_codecs::json::from_slice(&bytes))
        .map_err(|e| AdmitError::Invalid(format!("the arrival could not be read as a delivery: {e}")))?;
    let mut admission = super::decide::admit_or_decline(received, &parsed, policy);
    if let Admission::Admitted(stimulus) = &mut admission {
        stimulus.input.forge = forge;
        stimulus.input.issue = Some(issue_ref);
        stimulus.input.issue_body = Some(body);
    }
    Ok(admission)
}

/// Publishes to Gitea or Forgejo.
pub(crate) struct GiteaForge<'a, H> {
    pub(crate) settings: &'a Settings,
    pub(crate) http: &'a H,
    pub(crate) now_ms: u64,
}

impl<H: HttpClient> Forge for GiteaForge<'_, H> {
    async fn changed_files(&self, _: &Stimulus) -> Result<ChangedFiles, ForgeError> {
        Err(ForgeError::Unavailable("this version reviews no Gitea or Forgejo pull request (docs/forges.md)".into()))
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
        let mut login_error = None;
        let login = if request.posts_comment() {
            match client.own_login().await {
                Ok(login) => Some(login),
                Err(e) => {
                    login_error = Some(e.to_string());
                    None
                }
            }
        } else {
            None
        };
        request.bot_login = login.as_deref();
        let published = agent_zero_forges::gitea::publish::publish(&client, &request).await;
        if let Some(retry) = published.retry.or(login_error) {
            // The engine backs off and tries again; what was published is
            // found again (the comment by its marker, the branch and the
            // pull request by name).
            return Err(format!("Gitea: {retry}"));
        }
        Ok(published.report.summary())
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
