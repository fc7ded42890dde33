//! What every forge adapter's publication of a task is built from: the
//! files the run wrote, the secrets every rendered text is redacted with,
//! and the absolute links back to its evidence page and receipt (where the
//! deployment's public URL is known, docs/receipts.md).

use agent_zero_engine::Publication;
use agent_zero_evidence::RenderOptions;
use agent_zero_forges::publication::{PublishFile, PublishPolicy, PublishRequest};

use crate::Settings;

/// The owned parts of a [`PublishRequest`].
pub(crate) struct PublishInputs<'a> {
    publication: Publication<'a>,
    files: Vec<PublishFile<'a>>,
    secrets: crate::auth::Secrets<'a>,
    page_url: Option<String>,
    receipt_url: Option<String>,
}

impl<'a> PublishInputs<'a> {
    pub(crate) fn of(settings: &'a Settings, publication: Publication<'a>) -> Self {
        let files = publication
            .changes
            .iter()
            .map(|c| PublishFile { path: &c.path, content: Some(c.content.as_bytes()) })
            .collect();
        // The same list every stored record is redacted with (each token too).
        let secrets = crate::auth::Secrets::of(settings);
        let base_path = settings.base_path().unwrap_or_default();
        let (page_url, receipt_url) = settings.public_links().of_task(base_path, &publication.stimulus.task_id);
        Self { publication, files, secrets, page_url, receipt_url }
    }

    /// The request for `owner/repo`, our login not yet known.
    pub(crate) fn request<'r>(&'r self, owner: &'r str, repo: &'r str, now_ms: u64) -> PublishRequest<'r> {
        let stimulus = self.publication.stimulus;
        let policy = &stimulus.policy;
        PublishRequest {
            bundle: self.publication.evidence,
            result: self.publication.result,
            task_id: &stimulus.task_id,
            owner,
            repo,
            default_branch: None,
            head_sha: stimulus.input.pull_request.as_ref().map(|pr| pr.head_sha.as_str()),
            issue: stimulus.input.issue.as_ref(),
            policy: PublishPolicy {
                validation_comment: policy.issues.validation_comment,
                branch_prefix: &policy.issues.branch_prefix,
                blocking_check_run: policy.check_run.blocking,
            },
            files: &self.files,
            feedback: &stimulus.input.feedback,
            bot_login: None,
            render: RenderOptions {
                evidence_url: self.page_url.as_deref(),
                receipt_url: self.receipt_url.as_deref(),
                ..self.secrets.options()
            },
            now_ms,
        }
    }
}

/// Our own login on the forge, read only when the publication looks for
/// what it posted before (a comment, a review): without it nothing can be
/// told apart as ours. `Err` keeps why it could not be read, for the
/// engine's retry ([`settled`]).
pub(crate) async fn own_login<E: std::fmt::Display>(
    request: &PublishRequest<'_>,
    read: impl std::future::Future<Output = Result<String, E>>,
) -> Result<Option<String>, String> {
    if !(request.posts_comment() || request.posts_review()) {
        return Ok(None);
    }
    read.await.map(Some).map_err(|e| e.to_string())
}

/// What the engine is told of a publication on `forge`: `Err` when a step
/// failed in a way worth trying again, or our login could not be read (the
/// engine backs off and publishes again; what was published is found again
/// by its marker, the branch and the change request by name); else the
/// report's one line.
pub(crate) fn settled(
    forge: &str,
    retry: Option<String>,
    login: &Result<Option<String>, String>,
    report: &agent_zero_forges::publication::PublishReport,
) -> Result<String, String> {
    match retry.or_else(|| login.as_ref().err().cloned()) {
        Some(retry) => Err(format!("{forge}: {retry}")),
        None => Ok(report.summary()),
    }
}
