//! The configured sandbox provider, chosen by `AGENT_ZERO_SANDBOX_PROVIDER`.
//! Credentials are constructor state of the adapter and nothing else.

use agent_zero_ports::HttpClient;
use agent_zero_ports::Secret;
#[cfg(feature = "sandbox-cloudflare")]
use agent_zero_runner::providers::CloudflareSandbox;
#[cfg(feature = "sandbox-custom")]
use agent_zero_runner::providers::CustomSandbox;
#[cfg(feature = "sandbox-daytona")]
use agent_zero_runner::providers::Daytona;
#[cfg(feature = "sandbox-e2b")]
use agent_zero_runner::providers::E2b;
#[cfg(feature = "sandbox-vercel")]
use agent_zero_runner::providers::{VercelSandbox, vercel_project};
use agent_zero_runner::{
    Exec, ExecOutput, FileMode, ProviderError, ProviderKind, Provision, Provisioned, RunnerPoolConfig, SandboxProvider,
    SandboxRef, SandboxRequest,
};

use crate::Config;

/// One of the supported providers.
#[derive(Debug)]
pub(crate) enum AnySandbox<C> {
    #[cfg(feature = "sandbox-custom")]
    Custom(CustomSandbox<C>),
    #[cfg(feature = "sandbox-e2b")]
    E2b(E2b<C>),
    #[cfg(feature = "sandbox-daytona")]
    Daytona(Daytona<C>),
    #[cfg(feature = "sandbox-vercel")]
    Vercel(VercelSandbox<C>),
    #[cfg(feature = "sandbox-cloudflare")]
    Cloudflare(CloudflareSandbox<C>),
}

/// The provider `AGENT_ZERO_SANDBOX_PROVIDER` names, with its credentials:
/// parsed once with the settings, connected per tick to the host's HTTP.
#[derive(Clone)]
pub(crate) enum SandboxChoice {
    #[cfg(feature = "sandbox-custom")]
    Custom { url: String, token: Secret },
    #[cfg(feature = "sandbox-e2b")]
    E2b { key: Secret, template: String },
    #[cfg(feature = "sandbox-daytona")]
    Daytona { key: Secret },
    #[cfg(feature = "sandbox-vercel")]
    Vercel { token: Secret, team: Option<String>, project: Option<String> },
    #[cfg(feature = "sandbox-cloudflare")]
    Cloudflare { url: String, token: Secret },
}

impl SandboxChoice {
    /// The adapter over `client`.
    pub(crate) fn connect<C: HttpClient>(&self, client: C) -> AnySandbox<C> {
        match self {
            #[cfg(feature = "sandbox-custom")]
            Self::Custom { url, token } => AnySandbox::Custom(CustomSandbox::new(client, url.clone(), token.clone())),
            #[cfg(feature = "sandbox-e2b")]
            Self::E2b { key, template } => AnySandbox::E2b(E2b::new(client, key.clone(), template)),
            #[cfg(feature = "sandbox-daytona")]
            Self::Daytona { key } => AnySandbox::Daytona(Daytona::new(client, key.clone())),
            #[cfg(feature = "sandbox-vercel")]
            Self::Vercel { token, team, project } => AnySandbox::Vercel(
                VercelSandbox::new(client, token.clone(), team.clone()).with_project(project.clone()),
            ),
            #[cfg(feature = "sandbox-cloudflare")]
            Self::Cloudflare { url, token } => {
                AnySandbox::Cloudflare(CloudflareSandbox::new(client, url.clone(), token.clone()))
            }
        }
    }
}

/// Parses `AGENT_ZERO_SANDBOX_PROVIDER` and its variables, or says which
/// variable is missing or malformed.
pub(crate) fn sandbox_choice(config: &Config) -> Result<SandboxChoice, String> {
    let need = |name: &str| config.get(name).map(str::to_owned).ok_or_else(|| format!("`{name}` is not set"));
    let Some(name) = config.get("AGENT_ZERO_SANDBOX_PROVIDER") else {
        return Err("no sandbox provider configured (`AGENT_ZERO_SANDBOX_PROVIDER`)".into());
    };
    let kind = ProviderKind::parse(name.trim()).ok_or_else(|| {
        "`AGENT_ZERO_SANDBOX_PROVIDER` names no provider; expected custom, e2b, daytona, vercel or cloudflare"
            .to_owned()
    })?;
    Ok(match kind {
        #[cfg(feature = "sandbox-custom")]
        ProviderKind::Custom => SandboxChoice::Custom {
            url: need("AGENT_ZERO_SANDBOX_URL")?,
            token: Secret::new(need("AGENT_ZERO_SANDBOX_TOKEN")?),
        },
        #[cfg(feature = "sandbox-e2b")]
        ProviderKind::E2b => SandboxChoice::E2b {
            key: Secret::new(need("E2B_API_KEY")?),
            template: config.get("AGENT_ZERO_SANDBOX_TEMPLATE").unwrap_or("base").to_owned(),
        },
        #[cfg(feature = "sandbox-daytona")]
        ProviderKind::Daytona => SandboxChoice::Daytona { key: Secret::new(need("DAYTONA_API_KEY")?) },
        #[cfg(feature = "sandbox-vercel")]
        ProviderKind::Vercel => SandboxChoice::Vercel {
            token: Secret::new(need("VERCEL_TOKEN")?),
            team: config.get("VERCEL_TEAM_ID").map(str::to_owned),
            project: vercel_project(config.get("VERCEL_PROJECT_ID"))?,
        },
        #[cfg(feature = "sandbox-cloudflare")]
        ProviderKind::Cloudflare => SandboxChoice::Cloudflare {
            url: need("AGENT_ZERO_SANDBOX_URL")?,
            token: Secret::new(need("AGENT_ZERO_SANDBOX_TOKEN")?),
        },
        #[allow(unreachable_patterns, reason = "reached only when a provider is left out")]
        _ => return Err(not_built(kind)),
    })
}

/// The refusal of a provider this build leaves out.
fn not_built(kind: ProviderKind) -> String {
    format!(
        "`AGENT_ZERO_SANDBOX_PROVIDER` is `{name}`, which this build leaves out (it has {built}; add `{name}` to `AGENT_ZERO_PROVIDERS` when building)",
        name = kind.as_str(),
        built = built_sandboxes().join(", "),
    )
}

/// The sandbox providers this build has, by name.
pub(crate) fn built_sandboxes() -> Vec<&'static str> {
    ProviderKind::ALL.into_iter().filter(|kind| kind.is_built()).map(ProviderKind::as_str).collect()
}

/// Tasks running at once: leases active at once (default 4).
pub(crate) const MAX_RUNNING: &str = "AGENT_ZERO_MAX_RUNNING";
/// Tasks running at once per repository (default 1).
pub(crate) const MAX_RUNNING_PER_REPOSITORY: &str = "AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY";

/// The pool limits: the operator's (`AGENT_ZERO_MAX_RUNNING`,
/// `AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY`,
/// `AGENT_ZERO_SANDBOX_MAX_LEASE_MS`, defaults 4, 1 and 30 minutes); the
/// repository's output cap is added per task ([`crate::settings::Settings::pool`]).
/// A running task holds one lease from leaving `queued` to its end, so the
/// pool's active leases are the run bounds (the reference's scheduler):
/// `AGENT_ZERO_SANDBOX_MAX_ACTIVE` and `_PER_REPOSITORY`, their older
/// names, are read when the new ones are not set.
/// The lease ceiling is the operator's alone: a repository's
/// `agent.timeoutMs` asks for a lease, it never raises it.
/// A malformed value is an error naming the variable.
pub(crate) fn pool_config(config: &Config) -> Result<RunnerPoolConfig, String> {
    let defaults = RunnerPoolConfig::default();
    let number = |name: &str, default: u64, min: u64| -> Result<u64, String> {
        match config.get(name).map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(text) => match text.parse::<u64>() {
                Ok(value) if value >= min => Ok(value),
                _ => Err(format!("`{name}` is not a whole number of at least {min}")),
            },
        }
    };
    let count = |name: &str, default: u32| {
        number(name, u64::from(default), 1)
            .and_then(|v| u32::try_from(v).map_err(|_| format!("`{name}` is over {}", u32::MAX)))
    };
    // The setting's name, or its older one where only that is set.
    let named = |name: &'static str, older: &'static str| {
        if config.get(name).is_none() && config.get(older).is_some() { older } else { name }
    };
    let (all, ours) = (
        named(MAX_RUNNING, "AGENT_ZERO_SANDBOX_MAX_ACTIVE"),
        named(MAX_RUNNING_PER_REPOSITORY, "AGENT_ZERO_SANDBOX_MAX_ACTIVE_PER_REPOSITORY"),
    );
    let max_active = count(all, defaults.max_active)?;
    let per_repository = count(ours, defaults.max_active_per_repository)?;
    if per_repository > max_active {
        return Err(format!("`{ours}` ({per_repository}) is over `{all}` ({max_active})"));
    }
    let max_lease_ms = number("AGENT_ZERO_SANDBOX_MAX_LEASE_MS", defaults.max_lease_ms, 1_000)?;
    Ok(RunnerPoolConfig { max_active, max_active_per_repository: per_repository, max_lease_ms, ..defaults })
}

macro_rules! each {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            #[cfg(feature = "sandbox-custom")]
            AnySandbox::Custom($p) => $e,
            #[cfg(feature = "sandbox-e2b")]
            AnySandbox::E2b($p) => $e,
            #[cfg(feature = "sandbox-daytona")]
            AnySandbox::Daytona($p) => $e,
            #[cfg(feature = "sandbox-vercel")]
            AnySandbox::Vercel($p) => $e,
            #[cfg(feature = "sandbox-cloudflare")]
            AnySandbox::Cloudflare($p) => $e,
        }
    };
}

impl<C: HttpClient> SandboxProvider for AnySandbox<C> {
    fn kind(&self) -> ProviderKind {
        each!(self, p => p.kind())
    }

    async fn provision(
        &self,
        request: &SandboxRequest,
        provision: &Provision<'_>,
    ) -> Result<Provisioned, ProviderError> {
        each!(self, p => p.provision(request, provision).await)
    }

    async fn exec(&self, sandbox: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError> {
        each!(self, p => p.exec(sandbox, exec).await)
    }

    async fn read_file(&self, sandbox: &SandboxRef, path: &str) -> Result<Vec<u8>, ProviderError> {
        each!(self, p => p.read_file(sandbox, path).await)
    }

    async fn write_file(&self, sandbox: &SandboxRef, path: &str, content: &[u8]) -> Result<(), ProviderError> {
        each!(self, p => p.write_file(sandbox, path, content).await)
    }

    async fn list_files(&self, sandbox: &SandboxRef) -> Result<Vec<String>, ProviderError> {
        each!(self, p => p.list_files(sandbox).await)
    }

    async fn diff(&self, sandbox: &SandboxRef) -> Result<String, ProviderError> {
        each!(self, p => p.diff(sandbox).await)
    }

    async fn file_modes(&self, sandbox: &SandboxRef, paths: &[String]) -> Result<Vec<Option<FileMode>>, ProviderError> {
        each!(self, p => p.file_modes(sandbox, paths).await)
    }

    fn writes_keep_modes(&self) -> bool {
        each!(self, p => p.writes_keep_modes())
    }

    async fn write_file_keeping_mode(
        &self,
        sandbox: &SandboxRef,
        path: &str,
        content: &[u8],
    ) -> Result<(), ProviderError> {
        each!(self, p => p.write_file_keeping_mode(sandbox, path, content).await)
    }

    async fn stop(&self, external_id: &str) -> Result<(), ProviderError> {
        each!(self, p => p.stop(external_id).await)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use agent_zero_ports::{HttpClient, HttpError, block_on};
    use agent_zero_runner::{FileMode, SandboxProvider, SandboxRef};

    use crate::Settings;

    /// Answers the custom protocol's `modes` call, recording each path.
    #[derive(Default)]
    struct ModesEndpoint {
        paths: RefCell<Vec<String>>,
    }

    impl HttpClient for ModesEndpoint {
        async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
            self.paths.borrow_mut().push(request.uri().path().to_owned());
            Ok(http::Response::new(br#"{"modes":["100755"]}"#.to_vec()))
        }
    }

    /// Every provider method reaches the configured adapter, not the
    /// trait's fallback (a missed one ran the modes script as a command).
    #[test]
    fn the_configured_provider_gets_every_call_its_adapter_overrides() {
        let custom = Settings::from_pairs([
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
            ("AGENT_ZERO_SANDBOX_URL", "http://sandbox.invalid"),
            ("AGENT_ZERO_SANDBOX_TOKEN", "unit-token"),
        ]);
        let http = ModesEndpoint::default();
        let sandbox = custom.sandbox(&http).unwrap();
        let at = SandboxRef { external_id: "lease-1".into(), root: String::new() };
        let modes = block_on(sandbox.file_modes(&at, &["run.sh".to_owned()])).unwrap();
        assert_eq!(modes, [Some(FileMode::Executable)]);
        assert_eq!(http.paths.borrow().as_slice(), ["/v1/leases/lease-1/modes"]);
        assert!(sandbox.writes_keep_modes(), "the reference server writes in place");
        let e2b = Settings::from_pairs([("AGENT_ZERO_SANDBOX_PROVIDER", "e2b"), ("E2B_API_KEY", "unit-key")]);
        assert!(!e2b.sandbox(&http).unwrap().writes_keep_modes(), "E2B's upload recreates the file");
    }

    #[test]
    fn pool_settings_come_from_the_operator_and_bad_values_name_the_variable() {
        let defaults = Settings::default().pool(1000).unwrap();
        assert_eq!((defaults.max_active, defaults.max_active_per_repository, defaults.max_lease_ms), (4, 1, 1_800_000));
        assert_eq!(defaults.max_output_bytes, 1000);
        let set = Settings::from_pairs([
            ("AGENT_ZERO_SANDBOX_MAX_ACTIVE", "8"),
            ("AGENT_ZERO_SANDBOX_MAX_ACTIVE_PER_REPOSITORY", " 2 "),
            ("AGENT_ZERO_SANDBOX_MAX_LEASE_MS", "600000"),
        ]);
        let set = set.pool(5).unwrap();
        assert_eq!((set.max_active, set.max_active_per_repository, set.max_lease_ms), (8, 2, 600_000));
        assert_eq!(set.max_output_bytes, 5);
        for (name, value) in [
            ("AGENT_ZERO_SANDBOX_MAX_ACTIVE", "0"),
            ("AGENT_ZERO_SANDBOX_MAX_ACTIVE", "four"),
            ("AGENT_ZERO_SANDBOX_MAX_ACTIVE_PER_REPOSITORY", "-1"),
            ("AGENT_ZERO_SANDBOX_MAX_LEASE_MS", "10"),
            ("AGENT_ZERO_SANDBOX_MAX_LEASE_MS", "1e6"),
        ] {
            let error = Settings::from_pairs([(name, value)]).pool(1).unwrap_err();
            assert!(error.contains(name), "{error}");
            assert!(!error.contains(&format!("`{value}`")), "the value is not shown: {error}");
        }
        let over = Settings::from_pairs([
            ("AGENT_ZERO_SANDBOX_MAX_ACTIVE", "2"),
            ("AGENT_ZERO_SANDBOX_MAX_ACTIVE_PER_REPOSITORY", "3"),
        ]);
        assert!(over.pool(1).unwrap_err().contains("AGENT_ZERO_SANDBOX_MAX_ACTIVE_PER_REPOSITORY"));
    }
}
