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
