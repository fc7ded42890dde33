//! The policy gate of a webhook delivery, as the task's first tick: the
//! repository's `.agent-zero.yml` from its default branch (never a pull
//! request's head, which an outsider controls), the switches and author
//! rules it sets, and the run's stimulus when it admits the delivery.
//!
//! Intake records the delivery and answers before any of this (GitHub never
//! retries a failed delivery): a GitHub outage here is a retried tick, not
//! a lost event. [`Gate`] adds this to the forge port the tick already has.
//!
//! A command from the conversation (`/agent-zero review`) is admitted by
//! the same author rules; then its `@login` must be ours, the pull request
//! open, and its current head is read (`GET .../pulls/{n}`); the comment is
//! acknowledged with an `eyes` reaction.

use agent_zero_engine::{Admission, AdmitError, Forge, Publication, Received, Stimulus};
use agent_zero_github::{
    CredentialsError, GitHubClient, GitHubError, IgnoreReason, ParsedDelivery, PolicyGate, command_addresses,
};

use crate::error::ErrorCode;
use crate::{Host, Settings, repository_policy};

/// The forge port of a tick: publications through `inner`, admissions
/// through the repository policy.
pub(crate) struct Gate<'a, H, P> {
    host: &'a H,
    settings: &'a Settings,
    now_ms: u64,
    inner: P,
}

impl<'a, H: Host, P: Forge> Gate<'a, H, P> {
    pub(crate) fn new(host: &'a H, settings: &'a Settings, now_ms: u64, inner: P) -> Self {
        Self { host, settings, now_ms, inner }
    }
}

impl<H: Host, P: Forge> Forge for Gate<'_, H, P> {
    async fn publish(&self, publication: Publication<'_>) -> Result<String, String> {
        self.inner.publish(publication).await
    }

    async fn changed_files(
        &self,
        stimulus: &Stimulus,
    ) -> Result<agent_zero_engine::ChangedFiles, agent_zero_engine::ForgeError> {
        self.inner.changed_files(stimulus).await
    }

    async fn admit(&self, received: &Received) -> Result<Admission, AdmitError> {
        let forge = received.forge();
        let forge_gate = if forge.speaks_gitea() {
            Some(super::gitea::gate(self.settings, self.host.http(), received).await?)
        } else if forge == agent_zero_contracts::ForgeKind::GitLab {
            Some(super::gitlab::gate(self.settings, self.host.http(), received).await?)
        } else {
            None
        };
        let admission = match forge_gate {
            Some((admission, policy)) => {
                // What intake screens the repository's next arrivals with
                // (GitHub's gate records its own).
                let repository = crate::intake_gate::forge_repository(forge.as_str(), &received.repository);
                crate::intake_gate::record(self.host.kv(), &repository, &policy, self.now_ms).await;
                admission
            }
            None => self.admit_github(received).await?,
        };
        if let Admission::Admitted(stimulus) = &admission {
            // Admitted, but it could never run here: fail naming what to set.
            crate::settings::check_runnable(
                self.settings,
                &stimulus.policy,
                self.host.http(),
                self.host.name(),
                self.host.allowed_outbound_hosts(),
            )
            .map_err(|e| {
                AdmitError::Invalid(format!("{} ({})", e.message, e.field.as_deref().unwrap_or("settings")))
            })?;
        }
        Ok(admission)
    }
}

impl<H: Host, P: Forge> Gate<'_, H, P> {
    /// The policy gate of a GitHub delivery.
    async fn admit_github(&self, received: &Received) -> Result<Admission, AdmitError> {
        // Re-read from bytes, not `from_value`: one JSON deserializer for
        // every type keeps the wasm free of a second copy of each.
        let mut parsed: ParsedDelivery = serde_json::to_vec(&received.delivery)
            .and_then(|bytes| agent_zero_codecs::json::from_slice(&bytes))
            .map_err(|e| AdmitError::Invalid(format!("the recorded delivery does not parse: {e}")))?;
        if parsed.installation_id.is_none() {
            parsed.installation_id = self.installation(&parsed).await?;
        }
        let policy = read_policy(self.host, self.settings, &parsed, self.now_ms).await?;
        // What intake gates the repository's next deliveries with.
        crate::intake_gate::record(self.host.kv(), &parsed.repository.full_name(), &policy, self.now_ms).await;
        let mut admission = super::decide::admit_or_decline(received, &parsed, policy);
        if let (Admission::Admitted(stimulus), PolicyGate::Command { mention, comment_id, .. }) =
            (&mut admission, &parsed.gate)
            && let Some(declined) = self.command(&parsed, stimulus, mention.as_deref(), *comment_id).await?
        {
            return Ok(declined);
        }
        Ok(admission)
    }

    /// The installation a delivery that names none acts with: GitHub names
    /// it in every delivery to an App, but not in a repository webhook's,
    /// which an operator may add by hand beside App credentials. Looked up
    /// as the task API does (`GET /repos/{o}/{r}/installation` with the
    /// App's JWT) and kept in the run's input; `None` with a token or no
    /// credentials. An App not installed on the repository fails the task
    /// naming it; GitHub unreachable is retried.
    async fn installation(&self, parsed: &ParsedDelivery) -> Result<Option<u64>, AdmitError> {
        let github = self.settings.github().map_err(|e| AdmitError::Unavailable(e.message))?;
        let Some(credentials) = &github.credentials else { return Ok(None) };
        let (owner, repo) = (&parsed.repository.owner, &parsed.repository.repo);
        let anonymous = GitHubClient::new(self.host.http(), &github.api);
        credentials.repository_installation(&anonymous, self.host.signer(), owner, repo, self.now_ms).await.map_err(
            |e| match e {
                CredentialsError::NotInstalled { .. } => AdmitError::Invalid(format!(
                    "the delivery names no installation and the GitHub App is not installed on {owner}/{repo}: {e}"
                )),
                e => AdmitError::Unavailable(format!(
                    "GitHub credentials: the App's installation on {owner}/{repo}: {e}"
                )),
            },
        )
    }

    /// A command an allowed author gave: declined when its `@login` is not
    /// ours or the pull request is not open; otherwise the stimulus gets the
    /// pull request's current head (an `issue_comment` carries none) and the
    /// comment an `eyes` reaction. GitHub unreachable: retried.
    async fn command(
        &self,
        parsed: &ParsedDelivery,
        stimulus: &mut Stimulus,
        mention: Option<&str>,
        comment_id: Option<u64>,
    ) -> Result<Option<Admission>, AdmitError> {
        let unavailable = |e: String| AdmitError::Unavailable(e);
        let github = self.settings.github().map_err(|e| unavailable(e.message))?;
        let (owner, repo) = (&parsed.repository.owner, &parsed.repository.repo);
        let client = github
            .client(self.host.http(), self.host.signer(), parsed.installation_id, self.now_ms)
            .await
            .map_err(|e| unavailable(format!("GitHub credentials: {e}")))?;
        if let Some(mention) = mention {
            let Some(credentials) = &github.credentials else {
                return Err(AdmitError::Invalid(format!(
                    "GitHub credentials are needed to tell whether @{mention} is this app (GITHUB_TOKEN or GITHUB_APP_ID)"
                )));
            };
            let anonymous = GitHubClient::new(self.host.http(), &github.api);
            let cache = super::forge::identities();
            let login = credentials
                .own_login(&anonymous, self.host.signer(), &cache, self.now_ms)
                .await
                .map_err(|e| unavailable(format!("the app's own login: {e}")))?;
            if !command_addresses(mention, &login) {
                let reason = IgnoreReason::CommandForAnotherAccount { login: mention.to_owned() };
                return Ok(Some(Admission::Declined { reason: reason.code().to_owned(), message: reason.to_string() }));
            }
        }
        let Some(pr) = stimulus.input.pull_request.as_mut() else {
            return Err(AdmitError::Invalid("a command names no pull request".into()));
        };
        if pr.head_sha.is_empty() {
            let info = client.pull_request(owner, repo, pr.number).await.map_err(|e| match &e {
                GitHubError::Status { status: 404, .. } => AdmitError::Invalid(e.to_string()),
                _ => unavailable(e.to_string()),
            })?;
            if !info.open {
                let reason = IgnoreReason::PullRequestNotOpen { number: pr.number };
                return Ok(Some(Admission::Declined { reason: reason.code().to_owned(), message: reason.to_string() }));
            }
            pr.head_sha = info.head_sha;
            pr.base_sha = Some(info.base_sha);
        }
        if let Some(id) = comment_id {
            // The acknowledgement is a courtesy: the review runs without it.
            let _ = client.react_to_issue_comment(owner, repo, id, "eyes").await;
        }
        Ok(None)
    }
}

/// The policy of the parsed's repository; an unreadable one is retried, one
/// that does not validate fails the task with the field at fault.
async fn read_policy<H: Host>(
    host: &H,
    settings: &Settings,
    parsed: &ParsedDelivery,
    now_ms: u64,
) -> Result<agent_zero_agent::Policy, AdmitError> {
    let github = settings.github().map_err(|e| AdmitError::Unavailable(e.message))?;
    // Public repositories are readable without credentials.
    let client = github
        .client(host.http(), host.signer(), parsed.installation_id, now_ms)
        .await
        .map_err(|e| AdmitError::Unavailable(format!("GitHub credentials: {e}")))?;
    let field = |e: &agent_zero_agent::PolicyError| {
        format!(".agent-zero.yml{}", e.field().map(|f| format!(":{f}")).unwrap_or_default())
    };
    repository_policy::read(&client, host.kv(), &parsed.repository.owner, &parsed.repository.repo, field).await.map_err(
        |e| match e.code {
            ErrorCode::InvalidPolicy => {
                AdmitError::Invalid(format!("{} ({})", e.message, e.field.as_deref().unwrap_or(".agent-zero.yml")))
            }
            _ => AdmitError::Unavailable(e.message),
        },
    )
}
