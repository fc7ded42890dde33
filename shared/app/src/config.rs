//! Operator configuration: secrets and variables from the host's
//! environment (wrangler vars/secrets, Spin variables), never from a
//! repository, a request or KV.

use std::collections::BTreeMap;

/// Every variable the app reads. Hosts look up exactly these (Spin
/// variables are the lowercase form of each name).
pub const KNOWN_VARIABLES: &[&str] = &[
    "GITHUB_WEBHOOK_SECRET",
    "GITHUB_APP_ID",
    "GITHUB_APP_PRIVATE_KEY",
    "GITHUB_TOKEN",
    "GITHUB_API_URL",
    "AGENT_ZERO_GITHUB_REPOSITORIES",
    "GITLAB_WEBHOOK_SECRET",
    "GITLAB_WEBHOOK_SIGNING_TOKEN",
    "GITLAB_URL",
    "GITLAB_TOKEN",
    "GITEA_WEBHOOK_SECRET",
    "GITEA_URL",
    "GITEA_TOKEN",
    "AGENT_ZERO_WEBHOOK_MAX_BYTES",
    "AGENT_ZERO_BASE_PATH",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_GENERATIVE_AI_API_KEY",
    "AI_GATEWAY_API_KEY",
    "OPENAI_COMPATIBLE_API_KEY",
    "AGENT_ZERO_MODEL_BASE_URL",
    "AGENT_ZERO_MODEL_FALLBACK_PROVIDER",
    "AGENT_ZERO_MODEL_FALLBACK_MODEL",
    "AGENT_ZERO_MODEL_TIMEOUT_MS",
    "AGENT_ZERO_CLAIM_MARGIN_MS",
    "AGENT_ZERO_MAX_RUNNING",
    "AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY",
    "AGENT_ZERO_MAX_QUEUED",
    "AGENT_ZERO_PLATFORM",
    // Spin only: the store (functions/spin/src/store.rs).
    "AGENT_ZERO_STORE",
    "AGENT_ZERO_RETENTION_DAYS",
    "AGENT_ZERO_DELIVERY_RETENTION_DAYS",
    "AGENT_ZERO_CONTROL_PLANE_TOKENS",
    "AGENT_ZERO_CONTROL_PLANE_REPOSITORIES",
    "AGENT_ZERO_CONTROL_PLANE_MODES",
    "AGENT_ZERO_CONTROL_PLANE_ORIGINS",
    "AGENT_ZERO_CONTROL_PLANE_READS",
    "AGENT_ZERO_SANDBOX_PROVIDER",
    "AGENT_ZERO_SANDBOX_URL",
    "AGENT_ZERO_SANDBOX_TOKEN",
    "AGENT_ZERO_SANDBOX_TEMPLATE",
    "AGENT_ZERO_SANDBOX_MAX_ACTIVE",
    "AGENT_ZERO_SANDBOX_MAX_ACTIVE_PER_REPOSITORY",
    "AGENT_ZERO_SANDBOX_MAX_LEASE_MS",
    "E2B_API_KEY",
    "DAYTONA_API_KEY",
    "VERCEL_TOKEN",
    "VERCEL_TEAM_ID",
    "VERCEL_PROJECT_ID",
    "AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID",
    "AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET",
    "AGENT_ZERO_DASHBOARD_SESSION_KEY",
    "AGENT_ZERO_DASHBOARD_USERS",
    "AGENT_ZERO_DASHBOARD_ORGS",
    "AGENT_ZERO_DASHBOARD_GITHUB_URL",
    "AGENT_ZERO_RECEIPT_KEY",
    "AGENT_ZERO_RECEIPT_RETIRED_KEYS",
    "AGENT_ZERO_PUBLIC_URL",
    "AGENT_ZERO_RECEIPT_LINKS",
    // Spin only: the origins its allow-list takes from variables
    // (`allowed_hosts::ORIGIN_VARIABLES`).
    "AGENT_ZERO_FORGE_ORIGIN",
    "AGENT_ZERO_GITEA_ORIGIN",
    "AGENT_ZERO_GITLAB_ORIGIN",
    "AGENT_ZERO_MODEL_ORIGIN",
    "AGENT_ZERO_SANDBOX_ORIGIN",
    "AGENT_ZERO_DASHBOARD_GITHUB_ORIGIN",
];

/// The variables whose values are credentials: never rendered, logged or
/// stored.
pub const SECRET_VARIABLES: &[&str] = &[
    "GITHUB_WEBHOOK_SECRET",
    "GITHUB_APP_PRIVATE_KEY",
    "GITHUB_TOKEN",
    "GITLAB_WEBHOOK_SECRET",
    "GITLAB_WEBHOOK_SIGNING_TOKEN",
    "GITLAB_TOKEN",
    "GITEA_WEBHOOK_SECRET",
    "GITEA_TOKEN",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_GENERATIVE_AI_API_KEY",
    "AI_GATEWAY_API_KEY",
    "OPENAI_COMPATIBLE_API_KEY",
    "AGENT_ZERO_CONTROL_PLANE_TOKENS",
    "AGENT_ZERO_SANDBOX_TOKEN",
    "E2B_API_KEY",
    "DAYTONA_API_KEY",
    "VERCEL_TOKEN",
    "AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET",
    "AGENT_ZERO_DASHBOARD_SESSION_KEY",
    "AGENT_ZERO_RECEIPT_KEY",
];

/// The secrets only the front role reads (the webhook's HMAC key, the
/// control-plane tokens, the dashboard's sign-in secrets, the receipt key): the tick worker and
/// the tick component are given every other variable, and never these
/// (`wrangler.ticks.toml`, `spin.toml`; docs/configuration.md).
pub const FRONT_ONLY_VARIABLES: &[&str] = &[
    "GITHUB_WEBHOOK_SECRET",
    "GITLAB_WEBHOOK_SECRET",
    "GITLAB_WEBHOOK_SIGNING_TOKEN",
    "GITEA_WEBHOOK_SECRET",
    "AGENT_ZERO_CONTROL_PLANE_TOKENS",
    "AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET",
    "AGENT_ZERO_DASHBOARD_SESSION_KEY",
    "AGENT_ZERO_RECEIPT_KEY",
];

/// The operator's raw variables, read once into [`crate::Settings`].
/// Empty values count as unset.
#[derive(Clone, Default)]
pub(crate) struct Config {
    values: BTreeMap<String, String>,
}

impl std::fmt::Debug for Config {
    // Names only: a `{:?}` must never print a credential.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config").field("set", &self.values.keys().collect::<Vec<_>>()).finish()
    }
}

impl Config {
    /// Builds a configuration by asking `lookup` for every known variable.
    pub(crate) fn from_lookup(mut lookup: impl FnMut(&str) -> Option<String>) -> Self {
        let values = agent_zero_contracts::inserted(
            KNOWN_VARIABLES
                .iter()
                .filter_map(|name| lookup(name).filter(|v| !v.trim().is_empty()).map(|v| ((*name).to_owned(), v))),
        );
        Self { values }
    }

    /// Builds a configuration from explicit pairs (tests).
    pub(crate) fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let pairs: BTreeMap<&str, &str> = pairs.into_iter().collect();
        Self::from_lookup(|name| pairs.get(name).map(|v| (*v).to_owned()))
    }

    /// The value of a variable, when set and non-empty.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Whether a variable is set.
    pub(crate) fn is_set(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// Values of every configured secret, for scrubbing text before it is
    /// stored or rendered.
    pub(crate) fn secret_values(&self) -> Vec<&str> {
        SECRET_VARIABLES.iter().filter_map(|name| self.get(name)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_empty_variables_are_ignored() {
        let c = Config::from_pairs([("GITHUB_TOKEN", "t0k"), ("GITHUB_APP_ID", " "), ("PATH", "/bin")]);
        assert_eq!(c.get("GITHUB_TOKEN"), Some("t0k"));
        assert!(!c.is_set("GITHUB_APP_ID"));
        assert!(!c.is_set("PATH"));
        assert!(!format!("{c:?}").contains("t0k"));
        assert_eq!(c.secret_values(), ["t0k"]);
    }
}
