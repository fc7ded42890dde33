//! The operator's settings, typed and parsed once: per isolate on
//! Cloudflare (the worker keeps one [`Settings`] for its life), per
//! component instance on Spin. Every variable is read here and nowhere
//! else; routes and services take the typed sections.
//!
//! Each section is parsed on its own, so one malformed variable disables
//! only what needs it: the error names the variable (never its value) and
//! the routes that need the section answer 503 with it, while the rest keep
//! serving. A task that could never run is refused before it is created.

use agent_zero_agent::Policy;
use agent_zero_engine::Limits;
use agent_zero_github::{ApiConfig, Credentials, CredentialsError, GitHubClient, RepositoryAllowlist, Rs256Signer};
use agent_zero_models::{ConfigError, ModelSelection, select_models};
use agent_zero_ports::{HttpClient, Secret};
use agent_zero_runner::RunnerPoolConfig;

use crate::Config;
use crate::access::Access;
use crate::dashboard::DashboardSettings;
use crate::error::{ApiError, ErrorCode};
use crate::forge_settings::{GitLabSettings, GiteaSettings};
use crate::platform::Platform;
use crate::retention::Lifetimes;
use crate::services::{AnySandbox, SandboxChoice};

/// The variable that sets the webhook limit.
pub(crate) const WEBHOOK_MAX_BYTES: &str = "AGENT_ZERO_WEBHOOK_MAX_BYTES";
/// Every event intake acts on fits in far less: a pull request or issue
/// body is at most 65,536 characters (256 KiB of UTF-8, more escaped), and
/// the largest real payload among the fixtures is 32 KB. The signature is
/// computed over the whole body, so the body is read before it is
/// verified: this bounds what an unsigned sender can make a host read.
/// GitHub's own cap is 25 MB; raise the variable toward it if an event you
/// rely on is larger.
pub(crate) const DEFAULT_WEBHOOK_MAX_BYTES: usize = 1024 * 1024;
/// Every operator setting of one isolate or instance.
pub struct Settings {
    variables: Config,
    secrets: Vec<String>,
    base_path: Result<String, ApiError>,
    github: Result<GitHubSettings, ApiError>,
    webhook_secret: Option<Secret>,
    gitlab: Result<Option<GitLabSettings>, ApiError>,
    gitea: Result<Option<GiteaSettings>, ApiError>,
    webhook_max_bytes: Result<usize, ApiError>,
    allowlist: Option<RepositoryAllowlist>,
    access: Result<Option<Access>, ApiError>,
    origins: Vec<String>,
    run: Result<RunSettings, ApiError>,
    sandbox: Result<SandboxChoice, String>,
    pool: Result<RunnerPoolConfig, String>,
    dashboard: Result<Option<DashboardSettings>, ApiError>,
    receipt_keys: Result<crate::receipt_keys::ReceiptKeys, ApiError>,
    public_links: Result<crate::public_links::PublicLinks, ApiError>,
}

impl std::fmt::Debug for Settings {
    // Names only: a `{:?}` must never print a credential.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings").field("variables", &self.variables).finish_non_exhaustive()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl Settings {
    /// Parses every section from the variables `lookup` gives (the host's
    /// vars and secrets; Spin variables are the lowercase names).
    pub fn from_lookup(lookup: impl FnMut(&str) -> Option<String>) -> Self {
        Self::new(Config::from_lookup(lookup))
    }

    /// Settings from explicit pairs (tests).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self::new(Config::from_pairs(pairs))
    }

    fn new(variables: Config) -> Self {
        let config = &variables;
        Self {
            secrets: crate::access::secrets_of(config),
            base_path: base_path(config),
            github: GitHubSettings::from_config(config),
            webhook_secret: config.get("GITHUB_WEBHOOK_SECRET").map(Secret::new),
            gitlab: GitLabSettings::from_config(config),
            gitea: GiteaSettings::from_config(config),
            webhook_max_bytes: webhook_max_bytes(config),
            allowlist: config.get("AGENT_ZERO_GITHUB_REPOSITORIES").map(RepositoryAllowlist::parse),
            access: Access::from_config(config),
            origins: crate::access::origins_of(config),
            run: RunSettings::from_config(config),
            sandbox: crate::services::sandbox_choice(config),
            pool: crate::services::pool_config(config),
            dashboard: DashboardSettings::from_config(config),
            receipt_keys: crate::receipt_keys::ReceiptKeys::from_config(config),
            public_links: crate::public_links::PublicLinks::from_config(config),
            variables,
        }
    }

    /// Every malformed section's error (each names its variable).
    pub(crate) fn problems(&self) -> Vec<ApiError> {
        let mut problems = Vec::new();
        for section in [
            self.base_path.as_ref().err(),
            self.github.as_ref().err(),
            self.gitlab.as_ref().err(),
            self.gitea.as_ref().err(),
            self.webhook_max_bytes.as_ref().err(),
            self.access.as_ref().err(),
            self.run.as_ref().err(),
            self.dashboard.as_ref().err(),
            self.receipt_keys.as_ref().err(),
            self.public_links.as_ref().err(),
        ]
        .into_iter()
        .flatten()
        {
            problems.push(section.clone());
        }
        // Only the front role holds the key (and answers health): it tells
        // an operator whose publications link receipts it cannot sign.
        let signs = self.receipt_keys.as_ref().is_ok_and(|keys| keys.active.is_some());
        if self.public_links.as_ref().is_ok_and(|links| links.receipts) && !signs {
            let name = crate::public_links::RECEIPT_LINKS;
            problems.push(
                ApiError::new(
                    ErrorCode::NotConfigured,
                    format!("{name} is `on` but AGENT_ZERO_RECEIPT_KEY is not set: the receipt links publications carry answer 503"),
                )
                .with_field(name),
            );
        }
        // Unset is not malformed: a deployment may run without a sandbox.
        if self.variables.is_set("AGENT_ZERO_SANDBOX_PROVIDER")
            && let Err(reason) = &self.sandbox
        {
            problems.push(sandbox_error(reason));
        }
        if let Err(reason) = &self.pool {
            problems.push(sandbox_error(reason));
        }
        problems
    }

    /// The raw variables, for what reports which are set (health, doctor)
    /// and for model selection, which also depends on the task's policy.
    pub(crate) fn variables(&self) -> &Config {
        &self.variables
    }

    /// The models `policy` selects with the operator's credentials, or why none
    /// can be used (the error names the variable to set).
    pub(crate) fn model_selection(&self, policy: &Policy) -> Result<ModelSelection, ConfigError> {
        select_models(&policy.model, |name| self.variables.get(name).map(str::to_owned))
    }

    /// Every value that must never be stored, longest first.
    pub(crate) fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// Where publications link back to (`AGENT_ZERO_PUBLIC_URL`,
    /// `AGENT_ZERO_RECEIPT_LINKS`): nothing when malformed (health names it).
    pub(crate) fn public_links(&self) -> crate::public_links::PublicLinks {
        self.public_links.clone().unwrap_or_default()
    }

    /// `AGENT_ZERO_BASE_PATH`: the path the app is served under (`""` at
    /// the root of its origin, else `/seg/seg` with no trailing slash), or
    /// 503 naming it.
    pub fn base_path(&self) -> Result<&str, ApiError> {
        self.base_path.as_deref().map_err(Clone::clone)
    }

    /// The GitHub API and this deployment's credentials.
    pub(crate) fn github(&self) -> Result<&GitHubSettings, ApiError> {
        self.github.as_ref().map_err(Clone::clone)
    }

    /// `GITHUB_WEBHOOK_SECRET`, or 503 naming it.
    pub(crate) fn webhook_secret(&self) -> Result<&Secret, ApiError> {
        self.webhook_secret.as_ref().ok_or_else(|| {
            ApiError::new(
                ErrorCode::NotConfigured,
                "webhook intake is not configured: GITHUB_WEBHOOK_SECRET is not set",
            )
            .with_field("GITHUB_WEBHOOK_SECRET")
        })
    }

    /// GitLab's settings, `Ok(None)` when none is set; 503 naming a
    /// malformed one.
    pub(crate) fn gitlab(&self) -> Result<Option<&GitLabSettings>, ApiError> {
        self.gitlab.as_ref().map(Option::as_ref).map_err(Clone::clone)
    }

    /// Gitea's (and Forgejo's) settings, as [`Self::gitlab`].
    pub(crate) fn gitea(&self) -> Result<Option<&GiteaSettings>, ApiError> {
        self.gitea.as_ref().map(Option::as_ref).map_err(Clone::clone)
    }

    /// `AGENT_ZERO_WEBHOOK_MAX_BYTES` (default 1 MiB), or 503 naming it.
    pub(crate) fn webhook_max_bytes(&self) -> Result<usize, ApiError> {
        self.webhook_max_bytes.clone()
    }

    /// `AGENT_ZERO_GITHUB_REPOSITORIES`: `None` lets every repository through.
    pub(crate) fn allowlist(&self) -> Option<&RepositoryAllowlist> {
        self.allowlist.as_ref()
    }

    /// The control-plane access policy; `Ok(None)` when no tokens are set.
    pub(crate) fn access(&self) -> Result<Option<&Access>, ApiError> {
        self.access.as_ref().map(Option::as_ref).map_err(Clone::clone)
    }

    /// `AGENT_ZERO_CONTROL_PLANE_ORIGINS`.
    pub(crate) fn origins(&self) -> &[String] {
        &self.origins
    }

    /// The engine's bounds and the records' lifetimes.
    pub(crate) fn run(&self) -> Result<&RunSettings, ApiError> {
        self.run.as_ref().map_err(Clone::clone)
    }

    /// The dashboard's sign-in settings; `Ok(None)` when it is off.
    pub(crate) fn dashboard(&self) -> Result<Option<&DashboardSettings>, ApiError> {
        self.dashboard.as_ref().map(Option::as_ref).map_err(Clone::clone)
    }

    /// The receipt keys (`AGENT_ZERO_RECEIPT_KEY`, `AGENT_ZERO_RECEIPT_RETIRED_KEYS`),
    /// or 503 naming the malformed one.
    pub(crate) fn receipt_keys(&self) -> Result<&crate::receipt_keys::ReceiptKeys, ApiError> {
        self.receipt_keys.as_ref().map_err(Clone::clone)
    }

    /// The configured sandbox provider over `http`, or which variable is
    /// missing or malformed.
    pub(crate) fn sandbox<C: HttpClient>(&self, http: C) -> Result<AnySandbox<C>, String> {
        self.sandbox.as_ref().map(|choice| choice.connect(http)).map_err(Clone::clone)
    }

    /// The operator's pool limits with the repository's output cap.
    pub(crate) fn pool(&self, max_output_bytes: u64) -> Result<RunnerPoolConfig, String> {
        self.pool.clone().map(|pool| RunnerPoolConfig { max_output_bytes, ..pool })
    }
}

/// The GitHub API (`GITHUB_API_URL`, default github.com) and the
/// deployment's credentials (`GITHUB_APP_ID` + `GITHUB_APP_PRIVATE_KEY`,
/// else `GITHUB_TOKEN`), whose installation-token cache lives as long as
/// the settings do: one token per installation per hour, not per call.
#[derive(Debug)]
pub(crate) struct GitHubSettings {
    pub(crate) api: ApiConfig,
    pub(crate) credentials: Option<Credentials>,
}

impl GitHubSettings {
    fn from_config(config: &Config) -> Result<Self, ApiError> {
        let api = ApiConfig::new(config.get("GITHUB_API_URL"), "agent-zero-edge").map_err(|e| {
            ApiError::new(ErrorCode::NotConfigured, format!("GITHUB_API_URL: {e}")).with_field("GITHUB_API_URL")
        })?;
        let credentials = Credentials::from_env(
            config.get("GITHUB_TOKEN"),
            config.get("GITHUB_APP_ID"),
            config.get("GITHUB_APP_PRIVATE_KEY"),
        )
        .map_err(|e| {
            let field = match e {
                CredentialsError::InvalidAppId | CredentialsError::Incomplete { missing: "GITHUB_APP_ID" } => {
                    "GITHUB_APP_ID"
                }
                _ => "GITHUB_APP_PRIVATE_KEY",
            };
            ApiError::new(ErrorCode::NotConfigured, format!("GitHub credentials: {e}")).with_field(field)
        })?;
        Ok(Self { api, credentials })
    }

    /// An unauthenticated client (public repositories, and minting tokens).
    pub(crate) fn anonymous<'h, H: HttpClient>(&'h self, http: &'h H) -> GitHubClient<'h, H> {
        GitHubClient::new(http, &self.api)
    }

    /// A client authenticated for `installation` at `now_ms` (anonymous
    /// without credentials); an App's JWT is signed with `signer`.
    pub(crate) async fn client<'h, H: HttpClient, S: Rs256Signer>(
        &'h self,
        http: &'h H,
        signer: &S,
        installation: Option<u64>,
        now_ms: u64,
    ) -> Result<GitHubClient<'h, H>, CredentialsError> {
        let anonymous = self.anonymous(http);
        let Some(credentials) = &self.credentials else { return Ok(anonymous) };
        let token = credentials.token_for(installation, &anonymous, signer, now_ms).await?;
        Ok(credentials.authorize(anonymous, token, installation))
    }
}

/// What a tick needs from the operator besides its services.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSettings {
    /// The engine's bounds: a model step's claim lasts as long as the calls
    /// it may make (`AGENT_ZERO_MODEL_TIMEOUT_MS`), plus
    /// `AGENT_ZERO_CLAIM_MARGIN_MS` (default 30 s) on every step.
    pub limits: Limits,
    /// `AGENT_ZERO_RETENTION_DAYS`, `AGENT_ZERO_DELIVERY_RETENTION_DAYS`.
    pub lifetimes: Lifetimes,
    /// `AGENT_ZERO_MODEL_TIMEOUT_MS` when the operator set it: each model
    /// call's timeout (else the provider's default, or what fits the
    /// platform's wall clock: [`RunSettings::model_timeout_on`]).
    pub model_timeout_ms: Option<u64>,
    /// `AGENT_ZERO_PLATFORM` when the operator set it (else the host's
    /// default: [`Platform::default_for_host`]).
    pub platform: Option<Platform>,
    /// `AGENT_ZERO_MAX_QUEUED` ([`crate::run_bounds`]; the running bounds
    /// are the sandbox pool's).
    pub max_queued: u32,
}

impl RunSettings {
    /// Parses the run settings; the first malformed variable is the error.
    pub(crate) fn from_config(config: &Config) -> Result<Self, ApiError> {
        // Every host runs the checks as a background job polled by later
        // ticks: no platform's invocation lasts as long as a test suite may.
        let mut limits = Limits { checks_in_background: true, ..Limits::default() };
        let model_timeout_ms = millis(config, "AGENT_ZERO_MODEL_TIMEOUT_MS")?;
        if let Some(ms) = model_timeout_ms {
            limits.model_call_ms = ms;
        }
        if let Some(ms) = millis(config, "AGENT_ZERO_CLAIM_MARGIN_MS")? {
            limits.claim_margin_ms = ms;
        }
        let platform = platform(config)?;
        let max_queued = crate::run_bounds::max_queued(config)?;
        Ok(Self { limits, lifetimes: Lifetimes::from_config(config)?, model_timeout_ms, platform, max_queued })
    }

    /// The platform `host` (`cloudflare`, `spin`) runs on: the operator's
    /// `AGENT_ZERO_PLATFORM`, else the host's default.
    pub fn platform_on(&self, host: &str) -> Option<Platform> {
        self.platform.or_else(|| Platform::default_for_host(host))
    }

    /// The platform's wall clock per invocation and the longest one tick
    /// may take inside it (ms), when the platform sets one.
    pub fn wall_clock_on(&self, host: &str) -> Option<(u64, u64)> {
        let limits = self.platform_on(host)?.limits();
        Some((limits.wall_clock_ms?.value, crate::platform::tick_budget_ms(&limits)?))
    }

    /// Each model call's timeout on `host` when a step may make `calls`
    /// (the primary, then a fallback): the operator's, else, on a platform
    /// with a wall clock, the default (2 minutes) or less, so that they all
    /// end inside one tick (else the provider's default, `None`).
    pub fn model_timeout_on(&self, host: &str, calls: u64) -> Option<u64> {
        let default = Limits::default().model_call_ms;
        self.model_timeout_ms.or_else(|| self.wall_clock_on(host).map(|(_, tick)| (tick / calls.max(1)).min(default)))
    }

    /// What this configuration cannot do on `host`'s platform, each as the
    /// setting at fault and why, for a step that may make `calls` model
    /// calls. Empty when everything fits.
    pub fn conflicts_on(&self, host: &str, calls: u64) -> Vec<(&'static str, String)> {
        let mut conflicts = Vec::new();
        let Some(platform) = self.platform_on(host) else { return conflicts };
        let Some((wall, tick)) = self.wall_clock_on(host) else { return conflicts };
        if let Some(ms) = self.model_timeout_ms
            && ms.saturating_mul(calls.max(1)) > tick
        {
            conflicts.push((
                "AGENT_ZERO_MODEL_TIMEOUT_MS",
                format!(
                    "AGENT_ZERO_MODEL_TIMEOUT_MS is {ms} ms and a step may make {calls} model call(s), but on {} a tick must end within {tick} ms (its wall clock is {wall} ms per invocation): lower it to at most {} ms, or unset it",
                    platform.name(),
                    tick / calls.max(1),
                ),
            ));
        }
        conflicts
    }
}

/// `AGENT_ZERO_PLATFORM`: unset, or one of [`Platform::ALL`]'s names.
fn platform(config: &Config) -> Result<Option<Platform>, ApiError> {
    const NAME: &str = "AGENT_ZERO_PLATFORM";
    let Some(text) = config.get(NAME).map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
    Platform::parse(text).map(Some).ok_or_else(|| {
        let names: Vec<&str> = Platform::ALL.iter().map(|p| p.name()).collect();
        ApiError::new(ErrorCode::NotConfigured, format!("{NAME} must be one of {}", names.join(", "))).with_field(NAME)
    })
}

/// A duration in whole milliseconds (1 ms to 24 h), or `None` when unset.
/// `AGENT_ZERO_BASE_PATH`: unset or `/`, the root; else segments of
/// unreserved characters (`A-Z a-z 0-9 - . _ ~`, not `.` or `..`) each after a
/// `/`, with no trailing slash. What is outside that set would need escaping
/// in the links, headers and cookies the path goes into, so it is refused.
fn base_path(config: &Config) -> Result<String, ApiError> {
    const NAME: &str = "AGENT_ZERO_BASE_PATH";
    let Some(text) = config.get(NAME).map(str::trim) else { return Ok(String::new()) };
    if text == "/" {
        return Ok(String::new());
    }
    let unreserved = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~');
    let well_formed = text.strip_prefix('/').is_some_and(|rest| {
        rest.split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != ".." && segment.chars().all(unreserved))
    });
    if !well_formed {
        return Err(ApiError::new(
            ErrorCode::NotConfigured,
            format!("{NAME} must be `/` or a path such as `/agent-zero`: segments of A-Z a-z 0-9 - . _ ~ after each `/`, none empty, `.` or `..`, and no trailing `/`"),
        )
        .with_field(NAME));
    }
    Ok(text.to_owned())
}

fn millis(config: &Config, name: &str) -> Result<Option<u64>, ApiError> {
    let Some(text) = config.get(name) else { return Ok(None) };
    match text.trim().parse::<u64>() {
        Ok(ms) if (1..=86_400_000).contains(&ms) => Ok(Some(ms)),
        _ => Err(ApiError::new(
            ErrorCode::NotConfigured,
            format!("{name} must be whole milliseconds, at least 1 and at most a day"),
        )
        .with_field(name)),
    }
}

/// `AGENT_ZERO_WEBHOOK_MAX_BYTES`: a whole number of bytes from 1, or the
/// default when unset.
fn webhook_max_bytes(config: &Config) -> Result<usize, ApiError> {
    let Some(value) = config.get(WEBHOOK_MAX_BYTES) else { return Ok(DEFAULT_WEBHOOK_MAX_BYTES) };
    value.trim().parse::<usize>().ok().filter(|bytes| *bytes > 0).ok_or_else(|| {
        let why = "expected a whole number of bytes from 1";
        ApiError::new(ErrorCode::NotConfigured, format!("{WEBHOOK_MAX_BYTES} is malformed: {why}"))
            .with_field(WEBHOOK_MAX_BYTES)
    })
}

/// Whether a task under `policy` can run at all here: a sandbox provider
/// with its credentials, a model the policy selects with its credential,
/// and well-formed run settings. The error (503) names what to set.
/// On `host`'s platform (`AGENT_ZERO_PLATFORM`), it must also fit: a model
/// timeout that cannot end inside a tick is refused here, never found out
/// by a run that fails later.
///
/// Where the platform keeps an allow-list of hosts (`allowed`: Spin's
/// `allowed_outbound_hosts`), every host the configuration will call must
/// be on it; the error names the variable that points at the missing one.
pub(crate) fn check_runnable<C: HttpClient>(
    settings: &Settings,
    policy: &Policy,
    http: C,
    host: &str,
    allowed: Option<&[&str]>,
) -> Result<(), ApiError> {
    let run = settings.run()?;
    if let Err(reason) = settings.sandbox(http).and(settings.pool(0)) {
        let field = variable_in(&reason).unwrap_or("AGENT_ZERO_SANDBOX_PROVIDER");
        return Err(ApiError::new(ErrorCode::NotConfigured, format!("no task can run: {reason}")).with_field(field));
    }
    let calls = match settings.model_selection(policy) {
        Ok(selection) => model_calls_per_step(&selection),
        Err(e) => {
            let reason = e.to_string();
            let field = variable_in(&reason).unwrap_or("model.provider");
            return Err(ApiError::new(ErrorCode::NotConfigured, format!("no task can run: {reason}")).with_field(field));
        }
    };
    if let Some((field, reason)) = platform_conflicts(settings, run, host, calls, allowed).into_iter().next() {
        return Err(
            ApiError::new(ErrorCode::NotConfigured, format!("no task can run here: {reason}")).with_field(field)
        );
    }
    Ok(())
}

/// What this configuration cannot do on `host`'s platform: the platform's
/// limits ([`RunSettings::conflicts_on`]), then every configured host the
/// platform's allow-list (`allowed`) does not let through.
pub(crate) fn platform_conflicts(
    settings: &Settings,
    run: &RunSettings,
    host: &str,
    calls: u64,
    allowed: Option<&[&str]>,
) -> Vec<(&'static str, String)> {
    let mut conflicts = run.conflicts_on(host, calls);
    if let Some(allowed) = allowed {
        conflicts.extend(crate::allowed_hosts::missing(settings.variables(), allowed, "agent-zero-ticks"));
    }
    conflicts
}

/// The model calls one step may make: the primary, and the fallback after it.
pub(crate) fn model_calls_per_step(selection: &agent_zero_models::ModelSelection) -> u64 {
    1 + u64::from(selection.fallback.is_some())
}

/// A sandbox setting's error as an answer naming its variable.
fn sandbox_error(reason: &str) -> ApiError {
    let field = variable_in(reason).unwrap_or("AGENT_ZERO_SANDBOX_PROVIDER");
    ApiError::new(ErrorCode::NotConfigured, reason.to_owned()).with_field(field)
}

/// The first `` `NAME` `` in `reason` that is an operator variable.
fn variable_in(reason: &str) -> Option<&'static str> {
    reason
        .split('`')
        .skip(1)
        .step_by(2)
        .find_map(|name| crate::config::KNOWN_VARIABLES.iter().copied().find(|known| *known == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_durations_name_their_variable_and_never_fall_back() {
        let ok = Config::from_pairs([("AGENT_ZERO_MODEL_TIMEOUT_MS", "1500"), ("AGENT_ZERO_CLAIM_MARGIN_MS", "2000")]);
        let settings = RunSettings::from_config(&ok).unwrap();
        assert_eq!((settings.limits.model_call_ms, settings.limits.claim_margin_ms), (1_500, 2_000));
        let defaults = RunSettings::from_config(&Config::default()).unwrap().limits;
        assert_eq!(defaults, Limits { checks_in_background: true, ..Limits::default() });
        for (name, bad) in [
            ("AGENT_ZERO_MODEL_TIMEOUT_MS", "2m"),
            ("AGENT_ZERO_MODEL_TIMEOUT_MS", "0"),
            ("AGENT_ZERO_CLAIM_MARGIN_MS", "-5"),
            ("AGENT_ZERO_CLAIM_MARGIN_MS", "99999999999"),
            ("AGENT_ZERO_RETENTION_DAYS", "a month"),
        ] {
            let error = RunSettings::from_config(&Config::from_pairs([(name, bad)])).unwrap_err();
            assert_eq!((error.code, error.field.as_deref()), (ErrorCode::NotConfigured, Some(name)), "{name}={bad}");
            assert!(!error.message.contains(bad), "the value is not shown: {}", error.message);
        }
    }

    #[test]
    fn a_task_that_could_never_run_is_refused_naming_what_to_set() {
        let http = crate::test_host::RefusingHttp;
        let policy = Policy::default();
        let none = check_runnable(&Settings::default(), &policy, &http, "test", None).unwrap_err();
        assert_eq!(none.field.as_deref(), Some("AGENT_ZERO_SANDBOX_PROVIDER"), "{}", none.message);
        let no_token =
            Config::from_pairs([("AGENT_ZERO_SANDBOX_PROVIDER", "custom"), ("AGENT_ZERO_SANDBOX_URL", "http://s")]);
        let error = check_runnable(&Settings::new(no_token), &policy, &http, "test", None).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("AGENT_ZERO_SANDBOX_TOKEN"), "{}", error.message);
        let sandbox = [
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
            ("AGENT_ZERO_SANDBOX_URL", "http://s"),
            ("AGENT_ZERO_SANDBOX_TOKEN", "t"),
        ];
        let no_model = check_runnable(&Settings::from_pairs(sandbox), &policy, &http, "test", None).unwrap_err();
        assert!(no_model.message.contains("no task can run"), "{}", no_model.message);
        assert!(no_model.field.as_deref().is_some_and(|f| f.ends_with("_API_KEY")), "{:?}", no_model.field);
        let mut all = sandbox.to_vec();
        all.push(("OPENAI_API_KEY", "sk-test"));
        check_runnable(&Settings::from_pairs(all), &policy, &http, "test", None).unwrap();
    }

    /// On a platform with a wall clock, a model timeout that cannot end
    /// inside one tick refuses every task, naming the setting and the
    /// limit; unset, the timeout is what fits.
    #[test]
    fn a_model_timeout_past_the_platforms_wall_clock_refuses_tasks() {
        let http = crate::test_host::RefusingHttp;
        let policy = Policy::default();
        let base = [
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
            ("AGENT_ZERO_SANDBOX_URL", "http://s"),
            ("AGENT_ZERO_SANDBOX_TOKEN", "t"),
            ("OPENAI_API_KEY", "sk-test"),
            ("AGENT_ZERO_PLATFORM", "fermyon-cloud"),
        ];
        let fermyon = Platform::FermyonCloud.limits();
        let (wall, tick) = (fermyon.wall_clock_ms.unwrap().value, crate::platform::tick_budget_ms(&fermyon).unwrap());
        let fits = Settings::from_pairs(base);
        check_runnable(&fits, &policy, &http, "spin", None).unwrap();
        let run = fits.run().unwrap();
        assert_eq!(run.wall_clock_on("spin"), Some((wall, tick)));
        assert_eq!(run.model_timeout_on("spin", 1), Some(tick), "unset: the whole tick");
        assert_eq!(run.model_timeout_on("spin", 2), Some(tick / 2), "a fallback shares it");
        // A long wall clock (a Queues consumer's 15 min) keeps the 2-minute default.
        let workers = Settings::from_pairs([("AGENT_ZERO_PLATFORM", "cloudflare-paid")]);
        assert_eq!(workers.run().unwrap().model_timeout_on("cloudflare", 1), Some(120_000));

        let too_long = (tick + 1).to_string();
        let mut pairs = base.to_vec();
        pairs.push(("AGENT_ZERO_MODEL_TIMEOUT_MS", &too_long));
        let error = check_runnable(&Settings::from_pairs(pairs.clone()), &policy, &http, "spin", None).unwrap_err();
        assert_eq!(error.code.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(error.field.as_deref(), Some("AGENT_ZERO_MODEL_TIMEOUT_MS"), "{}", error.message);
        assert!(
            error.message.contains("fermyon-cloud") && error.message.contains(&tick.to_string()),
            "{}",
            error.message
        );

        // Without a platform of its own the host's default applies: Spin
        // self-hosted sets no wall clock, so the same timeout is fine there.
        pairs.retain(|(name, _)| *name != "AGENT_ZERO_PLATFORM");
        check_runnable(&Settings::from_pairs(pairs), &policy, &http, "spin", None).unwrap();

        let unknown = Settings::from_pairs([("AGENT_ZERO_PLATFORM", "heroku")]);
        let error = unknown.run().unwrap_err();
        assert_eq!(error.field.as_deref(), Some("AGENT_ZERO_PLATFORM"));
        assert!(error.message.contains("fermyon-cloud") && !error.message.contains("heroku"), "{}", error.message);
    }

    /// A provider this build leaves out stops a task before it starts,
    /// naming the setting (the sandbox variable, the policy's
    /// `model.provider`, the fallback variable) and what the build has; the
    /// providers it has pass. Runs in the default build (every provider)
    /// and in test.sh's reduced one (`sandbox-e2b`, `model-anthropic`).
    #[test]
    fn providers_left_out_of_the_build_are_refused_by_name() {
        use agent_zero_contracts::ModelProvider;
        use http::StatusCode;
        let http = crate::test_host::RefusingHttp;
        let sandboxes = [
            ("custom", cfg!(feature = "sandbox-custom")),
            ("e2b", cfg!(feature = "sandbox-e2b")),
            ("daytona", cfg!(feature = "sandbox-daytona")),
            ("vercel", cfg!(feature = "sandbox-vercel")),
            ("cloudflare", cfg!(feature = "sandbox-cloudflare")),
        ];
        let openai = cfg!(feature = "model-openai");
        let models = [
            (ModelProvider::AiGateway, openai),
            (ModelProvider::Anthropic, cfg!(feature = "model-anthropic")),
            (ModelProvider::Google, cfg!(feature = "model-google")),
            (ModelProvider::OpenAi, openai),
            (ModelProvider::OpenAiCompatible, openai),
        ];
        let built_sandboxes: Vec<&str> = sandboxes.iter().filter(|(_, built)| *built).map(|(name, _)| *name).collect();
        let built_models: Vec<&str> =
            models.iter().filter(|(_, built)| *built).map(|(kind, _)| kind.as_str()).collect();
        // The app's features reach the adapters' crates.
        assert_eq!(crate::services::built_sandboxes(), built_sandboxes);
        assert_eq!(agent_zero_models::built_providers(), built_models);

        // Every credential any provider reads, so only the build decides.
        let credentials = [
            ("AGENT_ZERO_SANDBOX_URL", "http://sandbox.invalid"),
            ("AGENT_ZERO_SANDBOX_TOKEN", "unit-token"),
            ("E2B_API_KEY", "unit-key"),
            ("DAYTONA_API_KEY", "unit-key"),
            ("VERCEL_TOKEN", "unit-token"),
            ("OPENAI_API_KEY", "unit-key"),
            ("ANTHROPIC_API_KEY", "unit-key"),
            ("GOOGLE_GENERATIVE_AI_API_KEY", "unit-key"),
            ("AI_GATEWAY_API_KEY", "unit-key"),
            ("AGENT_ZERO_MODEL_BASE_URL", "https://models.invalid/v1"),
        ];
        let (a_model, _) = *models.iter().find(|(_, built)| *built).unwrap();
        let a_sandbox = built_sandboxes[0];
        let policy_with = |provider| {
            let mut policy = Policy::default();
            policy.model.provider = provider;
            policy
        };
        let runnable = |pairs: &[(&'static str, &'static str)], policy: &Policy| {
            let mut all = credentials.to_vec();
            all.extend_from_slice(pairs);
            check_runnable(&Settings::from_pairs(all), policy, &http, "test", None)
        };

        for (name, built) in sandboxes {
            match runnable(&[("AGENT_ZERO_SANDBOX_PROVIDER", name)], &policy_with(a_model)) {
                Ok(()) => assert!(built, "`{name}` is left out, yet a task could start"),
                Err(e) => {
                    assert!(!built, "`{name}` is built, yet: {}", e.message);
                    assert_eq!(
                        (e.code.status(), e.field.as_deref()),
                        (StatusCode::SERVICE_UNAVAILABLE, Some("AGENT_ZERO_SANDBOX_PROVIDER"))
                    );
                    let has = built_sandboxes.join(", ");
                    let expected = format!(
                        "no task can run: `AGENT_ZERO_SANDBOX_PROVIDER` is `{name}`, which this build leaves out (it has {has}; add `{name}` to `AGENT_ZERO_PROVIDERS` when building)"
                    );
                    assert_eq!(e.message, expected);
                }
            }
        }
        let sandbox = [("AGENT_ZERO_SANDBOX_PROVIDER", a_sandbox)];
        for (kind, built) in models {
            let name = kind.as_str();
            let fallback = [
                ("AGENT_ZERO_SANDBOX_PROVIDER", a_sandbox),
                ("AGENT_ZERO_MODEL_FALLBACK_PROVIDER", name),
                ("AGENT_ZERO_MODEL_FALLBACK_MODEL", "unit-model"),
            ];
            let asked = [
                (runnable(&sandbox, &policy_with(kind)), "model.provider"),
                (runnable(&fallback, &policy_with(a_model)), "AGENT_ZERO_MODEL_FALLBACK_PROVIDER"),
            ];
            for (result, field) in asked {
                match result {
                    Ok(()) => assert!(built, "`{name}` ({field}) is left out, yet a task could start"),
                    Err(e) => {
                        assert!(!built, "`{name}` ({field}) is built, yet: {}", e.message);
                        assert_eq!(
                            (e.code.status(), e.field.as_deref()),
                            (StatusCode::SERVICE_UNAVAILABLE, Some(field))
                        );
                        let has = built_models.join(", ");
                        let expected = format!(
                            "no task can run: `{field}`: model provider `{name}` is left out of this build (it has {has}; add `{name}` to `AGENT_ZERO_PROVIDERS` when building)"
                        );
                        assert_eq!(e.message, expected);
                    }
                }
            }
        }
    }
}
