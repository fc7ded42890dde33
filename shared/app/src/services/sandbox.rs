//! The configured sandbox provider, chosen by `AGENT_ZERO_SANDBOX_PROVIDER`.
//! Credentials are constructor state of the adapter and nothing else.

use agent_zero_ports::HttpClient;
use agent_zero_runner::providers::{CloudflareSandbox, CustomSandbox, Daytona, E2b, VercelSandbox};
use agent_zero_runner::{
    Exec, ExecOutput, ProviderError, ProviderKind, Provisioned, SandboxProvider, SandboxRef, SandboxRequest,
    Secret,
};

use crate::Config;

/// One of the supported providers.
#[derive(Debug)]
pub(crate) enum AnySandbox<C> {
    Custom(CustomSandbox<C>),
    E2b(E2b<C>),
    Daytona(Daytona<C>),
    Vercel(VercelSandbox<C>),
    Cloudflare(CloudflareSandbox<C>),
}

/// Builds the provider, or says which variable is missing.
pub(crate) fn sandbox_from_config<C: HttpClient>(config: &Config, client: C) -> Result<AnySandbox<C>, String> {
    let need = |name: &str| config.get(name).map(str::to_owned).ok_or_else(|| format!("`{name}` is not set"));
    match config.get("AGENT_ZERO_SANDBOX_PROVIDER") {
        None => Err("no sandbox provider configured (`AGENT_ZERO_SANDBOX_PROVIDER`)".into()),
        Some("custom") => Ok(AnySandbox::Custom(CustomSandbox::new(
            client,
            need("AGENT_ZERO_SANDBOX_URL")?,
            Secret::new(need("AGENT_ZERO_SANDBOX_TOKEN")?),
        ))),
        Some("e2b") => Ok(AnySandbox::E2b(E2b::new(
            client,
            Secret::new(need("E2B_API_KEY")?),
            config.get("AGENT_ZERO_SANDBOX_TEMPLATE").unwrap_or("base"),
        ))),
        Some("daytona") => Ok(AnySandbox::Daytona(Daytona::new(client, Secret::new(need("DAYTONA_API_KEY")?)))),
        Some("vercel") => Ok(AnySandbox::Vercel(VercelSandbox::new(
            client,
            Secret::new(need("VERCEL_TOKEN")?),
            config.get("VERCEL_TEAM_ID").map(str::to_owned),
        ))),
        Some("cloudflare") => Ok(AnySandbox::Cloudflare(CloudflareSandbox::new(
            client,
            need("AGENT_ZERO_SANDBOX_URL")?,
            Secret::new(need("AGENT_ZERO_SANDBOX_TOKEN")?),
        ))),
        Some(other) => Err(format!(
            "`AGENT_ZERO_SANDBOX_PROVIDER` is `{other}`; expected custom, e2b, daytona, vercel or cloudflare"
        )),
    }
}

macro_rules! each {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            AnySandbox::Custom($p) => $e,
            AnySandbox::E2b($p) => $e,
            AnySandbox::Daytona($p) => $e,
            AnySandbox::Vercel($p) => $e,
            AnySandbox::Cloudflare($p) => $e,
        }
    };
}

impl<C: HttpClient> SandboxProvider for AnySandbox<C> {
    fn kind(&self) -> ProviderKind {
        each!(self, p => p.kind())
    }

    async fn provision(&self, request: &SandboxRequest, writable: bool) -> Result<Provisioned, ProviderError> {
        each!(self, p => p.provision(request, writable).await)
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

    async fn stop(&self, external_id: &str) -> Result<(), ProviderError> {
        each!(self, p => p.stop(external_id).await)
    }
}
