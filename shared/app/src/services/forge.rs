//! `runtime::Forge` over GitHub: check run, pull-request review, issue
//! validation comment and verified pull request (`agent_zero_github::publish`),
//! and a proactive run's diff: the pull request's changed files with their
//! patches (`GET /repos/{o}/{r}/pulls/{n}/files`, at most [`MAX_REVIEW_FILES`]),
//! narrowed after an earlier review of ours to the files changed since the
//! head it read (`GET .../compare/{earlier}...{head}`). The evidence is
//! already committed in the task log and served by the task API; this
//! reports it where the work was asked for. A failed publication never
//! fails the run: the report says why no pull request exists.
//!
//! The validation comment needs the app's own login (only comments by it
//! are ours): learned from GitHub once and kept in [`IDENTITIES`] for the
//! isolate's (Workers) or component instance's (Spin) life, never in KV.
//! When it cannot be learned, the other steps still publish, the comment
//! step writes nothing, and the publication fails with the reason, so the
//! runtime's backoff tries it again.

use std::rc::Rc;

use agent_zero_contracts::Trigger;
use agent_zero_engine::{ChangedFile, ChangedFiles, Forge, ForgeError, Publication, Stimulus};
use agent_zero_github::publish::{PublishStep, StepOutcome, publish};
use agent_zero_github::{Credentials, GitHubClient, GitHubError, IdentityCache, Rs256Signer};
use agent_zero_ports::HttpClient;

use crate::Settings;

thread_local! {
    /// The app's own GitHub login per API and credential (keyed by a
    /// digest), for as long as this isolate or instance lives.
    static IDENTITIES: Rc<IdentityCache> = Rc::new(IdentityCache::default());
}

/// Most changed files a review lists (three pages of 100).
const MAX_REVIEW_FILES: usize = 300;

/// The isolate's cache of our own GitHub login (see [`IDENTITIES`]).
pub(crate) fn identities() -> Rc<IdentityCache> {
    IDENTITIES.with(Rc::clone)
}

/// GitHub's compare lists at most this many files: a list that long may be cut.
const MAX_COMPARED_FILES: usize = 300;

/// Publishes to GitHub when credentials are configured.
pub(crate) struct GitHubForge<'a, H, S> {
    settings: &'a Settings,
    http: &'a H,
    signer: &'a S,
    now_ms: u64,
}

impl<'a, H: HttpClient, S: Rs256Signer> GitHubForge<'a, H, S> {
    pub(crate) fn new(settings: &'a Settings, http: &'a H, signer: &'a S, now_ms: u64) -> Self {
        Self { settings, http, signer, now_ms }
    }

    /// The client authenticated for the task's installation; `Ok(None)`
    /// when no credentials are configured. Malformed settings will not mend
    /// themselves (`Unavailable`); minting a token may (`Failed`).
    async fn client(&self, stimulus: &Stimulus) -> Result<Option<(&'a Credentials, GitHubClient<'a, H>)>, ForgeError> {
        let github = self.settings.github().map_err(|e| ForgeError::Unavailable(e.message))?;
        let Some(credentials) = &github.credentials else { return Ok(None) };
        let client = github
            .client(self.http, self.signer, stimulus.input.installation_id, self.now_ms)
            .await
            .map_err(|e| ForgeError::Failed(format!("GitHub credentials: {e}")))?;
        Ok(Some((credentials, client)))
    }
}

impl<H: HttpClient, S: Rs256Signer> GitHubForge<'_, H, S> {
    /// The head our latest earlier review of this pull request read (not
    /// the current one), and the files changed from it to the head
    /// (`GET .../compare/{earlier}...{head}`). `None` when there is none,
    /// or GitHub cannot say exactly (a force push, over its 300-file cap,
    /// any error): the whole diff is reviewed then, never less.
    async fn since_earlier_review(
        &self,
        credentials: &Credentials,
        client: &GitHubClient<'_, H>,
        pr: &agent_zero_contracts::PullRequestRef,
    ) -> Option<(String, Vec<String>)> {
        let cache = IDENTITIES.with(Rc::clone);
        let (http, api) = client.parts();
        let anonymous = GitHubClient::new(http, api);
        let login = credentials.own_login(&anonymous, self.signer, &cache, self.now_ms).await.ok()?;
        let heads = client.reviewed_heads(&pr.owner, &pr.repo, pr.number, &login).await.ok()?;
        let earlier = heads.into_iter().rev().find(|h| !h.eq_ignore_ascii_case(&pr.head_sha))?;
        let comparison = client.compare(&pr.owner, &pr.repo, &earlier, &pr.head_sha).await.ok()?;
        let exact = comparison.status == "ahead" && comparison.files.len() < MAX_COMPARED_FILES;
        exact.then(|| (earlier, comparison.files.into_iter().map(|f| f.filename).collect()))
    }
}

impl<H: HttpClient, S: Rs256Signer> Forge for GitHubForge<'_, H, S> {
    async fn changed_files(&self, stimulus: &Stimulus) -> Result<ChangedFiles, ForgeError> {
        let unavailable = |reason: String| Err(ForgeError::Unavailable(reason));
        let Some(pr) = &stimulus.input.pull_request else {
            return unavailable("the task names no pull request".into());
        };
        let Some((credentials, client)) = self.client(stimulus).await? else {
            return unavailable(
                "no GitHub credentials are configured, so the pull request's changes could not be read".into(),
            );
        };
        let listed = client.pull_request_files(&pr.owner, &pr.repo, pr.number, MAX_REVIEW_FILES).await.map_err(
            |e| match &e {
                // Not there, or not ours to read: asking again will not change it.
                GitHubError::Status { status: 404 | 422, .. } | GitHubError::InvalidName { .. } => {
                    ForgeError::Unavailable(e.to_string())
                }
                _ => ForgeError::Failed(e.to_string()),
            },
        )?;
        let cut =
            listed.more.then(|| format!("GitHub lists more changed files than the {MAX_REVIEW_FILES} a review reads"));
        let files: Vec<ChangedFile> = listed
            .files
            .into_iter()
            .map(|f| ChangedFile {
                path: f.filename,
                status: f.status,
                patch: f.patch,
                additions: f.additions,
                deletions: f.deletions,
            })
            .collect();
        // Only a review reads what changed since an earlier one: review
        // feedback reads the whole pull request its reviewer commented on.
        let since = match stimulus.trigger {
            Trigger::Proactive => self.since_earlier_review(credentials, &client, pr).await,
            _ => None,
        };
        let Some((since, changed)) = since else {
            return Ok(ChangedFiles { files, cut, ..ChangedFiles::default() });
        };
        let (files, unchanged): (Vec<ChangedFile>, Vec<ChangedFile>) =
            files.into_iter().partition(|f| changed.contains(&f.path));
        let unchanged = unchanged.into_iter().map(|f| f.path).collect();
        Ok(ChangedFiles { files, cut, since: Some(since), unchanged })
    }

    async fn publish(&self, publication: Publication<'_>) -> Result<String, String> {
        let settings = self.settings;
        let stimulus = publication.stimulus;
        let Some((owner, repo)) = stimulus.repository.split_once('/') else {
            return Ok(format!("stored only: `{}` is not a GitHub repository", stimulus.repository));
        };
        let Some((credentials, client)) = self.client(stimulus).await.map_err(|e| e.to_string())? else {
            return Ok("stored only: no GitHub credentials are configured".into());
        };

        let inputs = super::publishing::PublishInputs::of(settings, publication);
        let mut own_login: Option<String> = None;
        let mut request = inputs.request(owner, repo, self.now_ms);
        let mut identity_error = None;
        if request.posts_comment() || request.posts_review() {
            let cache = IDENTITIES.with(Rc::clone);
            let (http, api) = client.parts();
            let anonymous = GitHubClient::new(http, api);
            match credentials.own_login(&anonymous, self.signer, &cache, self.now_ms).await {
                Ok(login) => own_login = Some(login),
                Err(e) => identity_error = Some(e),
            }
        }
        request.bot_login = own_login.as_deref();
        let report = publish(&client, &request).await;
        if let Some(retry) = &report.retry_after {
            // The engine backs off and tries again (bounded attempts).
            return Err(format!("GitHub rate limit: retry after {} ms", retry.ms));
        }
        if let Some(error) = identity_error
            && [PublishStep::IssueComment, PublishStep::Review]
                .into_iter()
                .any(|step| matches!(report.outcome(step), Some(StepOutcome::Failed { .. })))
        {
            // Everything else is published (and is found again on the
            // retry); the comment waits for the login.
            return Err(format!("validation comment or review not published: {error}"));
        }
        Ok(report.summary())
    }
}
