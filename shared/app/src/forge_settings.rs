//! The settings of the forges beside GitHub (docs/forges.md): each one's
//! webhook secret(s), base URL and API token. A forge is configured when
//! any of its variables is set; its intake route needs its webhook secret.
//! The API token and URL are read and checked here, and reported by health
//! and doctor. The run paths of GitLab and of Gitea (and Forgejo) read and
//! publish with them.

use agent_zero_forges::gitlab::GitLabSecrets;
use agent_zero_github::ApiConfig;

use crate::Config;
use crate::error::{ApiError, ErrorCode};

/// GitLab's variables.
pub(crate) const GITLAB_VARIABLES: [&str; 4] =
    ["GITLAB_WEBHOOK_SECRET", "GITLAB_WEBHOOK_SIGNING_TOKEN", "GITLAB_URL", "GITLAB_TOKEN"];
/// Gitea's (and Forgejo's) variables.
pub(crate) const GITEA_VARIABLES: [&str; 3] = ["GITEA_WEBHOOK_SECRET", "GITEA_URL", "GITEA_TOKEN"];
/// gitlab.com, when `GITLAB_URL` is not set.
pub(crate) const DEFAULT_GITLAB_URL: &str = "https://gitlab.com";

/// GitLab (gitlab.com or self-managed).
#[derive(Debug, Clone)]
pub(crate) struct GitLabSettings {
    /// `None` when neither webhook variable is set: intake answers 503.
    pub(crate) secrets: Option<GitLabSecrets>,
    /// `GITLAB_URL` without a trailing slash.
    pub(crate) url: String,
    /// `GITLAB_TOKEN`: a personal, project or group access token (`api`
    /// scope) the run path reads and publishes with.
    pub(crate) token: Option<agent_zero_ports::Secret>,
}

/// Gitea or Forgejo.
#[derive(Clone)]
pub(crate) struct GiteaSettings {
    /// `GITEA_WEBHOOK_SECRET`'s bytes; `None`: intake answers 503.
    pub(crate) secret: Option<Vec<u8>>,
    /// `GITEA_URL` without a trailing slash (Gitea has no default host).
    pub(crate) url: Option<String>,
    /// `GITEA_TOKEN`: the access token the run path reads and publishes with.
    pub(crate) token: Option<agent_zero_ports::Secret>,
}

impl std::fmt::Debug for GiteaSettings {
    // Never the secret's bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GiteaSettings")
            .field("secret", &self.secret.as_ref().map(|_| "[redacted]"))
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

fn url(config: &Config, name: &'static str) -> Result<Option<String>, ApiError> {
    let Some(value) = config.get(name) else { return Ok(None) };
    ApiConfig::new(Some(value), "agent-zero-edge")
        .map(|api| Some(api.base_url().to_owned()))
        .map_err(|e| ApiError::new(ErrorCode::NotConfigured, format!("{name}: {e}")).with_field(name))
}

impl GitLabSettings {
    /// `Ok(None)` when no GitLab variable is set.
    pub(crate) fn from_config(config: &Config) -> Result<Option<Self>, ApiError> {
        if !GITLAB_VARIABLES.iter().any(|n| config.is_set(n)) {
            return Ok(None);
        }
        let secrets =
            GitLabSecrets::new(config.get("GITLAB_WEBHOOK_SECRET"), config.get("GITLAB_WEBHOOK_SIGNING_TOKEN"))
                .map_err(|e| {
                    ApiError::new(ErrorCode::NotConfigured, format!("GITLAB_WEBHOOK_SIGNING_TOKEN: {e}"))
                        .with_field("GITLAB_WEBHOOK_SIGNING_TOKEN")
                })?;
        let url = url(config, "GITLAB_URL")?.unwrap_or_else(|| DEFAULT_GITLAB_URL.to_owned());
        Ok(Some(Self { secrets, url, token: config.get("GITLAB_TOKEN").map(agent_zero_ports::Secret::new) }))
    }
}

impl GiteaSettings {
    /// `Ok(None)` when no Gitea variable is set.
    pub(crate) fn from_config(config: &Config) -> Result<Option<Self>, ApiError> {
        if !GITEA_VARIABLES.iter().any(|n| config.is_set(n)) {
            return Ok(None);
        }
        Ok(Some(Self {
            secret: config.get("GITEA_WEBHOOK_SECRET").map(|s| s.as_bytes().to_vec()),
            url: url(config, "GITEA_URL")?,
            token: config.get("GITEA_TOKEN").map(agent_zero_ports::Secret::new),
        }))
    }
}

/// 503 naming the variable(s) a forge's intake needs.
pub(crate) fn not_configured(forge: &str, variables: &str) -> ApiError {
    ApiError::new(ErrorCode::NotConfigured, format!("{forge} webhook intake is not configured: set {variables}"))
        .with_field(variables.split(" or ").next().unwrap_or(variables))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forge_is_configured_by_any_of_its_variables_and_each_is_checked() {
        assert!(GitLabSettings::from_config(&Config::from_pairs([])).unwrap().is_none());
        let only_url = GitLabSettings::from_config(&Config::from_pairs([("GITLAB_URL", "https://git.example/")]))
            .unwrap()
            .unwrap();
        assert!(only_url.secrets.is_none());
        assert_eq!(only_url.url, "https://git.example");
        let signed = Config::from_pairs([("GITLAB_WEBHOOK_SIGNING_TOKEN", "not-whsec")]);
        let e = GitLabSettings::from_config(&signed).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("GITLAB_WEBHOOK_SIGNING_TOKEN"));
        assert!(!e.message.contains("not-whsec"), "the value is never echoed: {}", e.message);
        let e = GiteaSettings::from_config(&Config::from_pairs([("GITEA_URL", "ftp://x")])).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("GITEA_URL"));
        let gitea = GiteaSettings::from_config(&Config::from_pairs([("GITEA_WEBHOOK_SECRET", "s")])).unwrap().unwrap();
        assert_eq!((gitea.secret.as_deref(), gitea.url.as_deref()), (Some(&b"s"[..]), None));
    }
}
