//! The `custom` provider: our own protocol, specified in `PROTOCOL.md`.

use agent_zero_ports::HttpClient;
use serde::{Deserialize, Serialize};

use super::http::{Call, encode, exec_deadline, scrub_source};
use crate::checkout::{CheckoutSource, Provision};
use crate::provider::{Exec, ExecOutput, FileMode, ProviderError, Provisioned, SandboxProvider, SandboxRef};
use crate::request::{ProviderKind, SandboxRequest};
use agent_zero_ports::Secret;

const NAME: &str = "custom";

/// A server speaking `PROTOCOL.md` (`AGENT_ZERO_SANDBOX_URL`,
/// `AGENT_ZERO_SANDBOX_TOKEN`).
pub struct CustomSandbox<C> {
    client: C,
    base_url: String,
    token: Secret,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreateLease<'a> {
    task_id: &'a str,
    repository: &'a str,
    #[serde(rename = "ref")]
    git_ref: &'a str,
    writable: bool,
    network: agent_zero_contracts::NetworkPolicy,
    lease_ms: u64,
    /// The lease id: a second create with the same key answers the lease
    /// the first made.
    idempotency_key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    archive: Option<Archive<'a>>,
}

/// Where the server downloads the checkout from (the link may carry its
/// own short-lived token; the server never records it), and the header to
/// send with the download when the forge wants its token that way.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Archive<'a> {
    url: &'a str,
    commit: &'a str,
    timeout_ms: u64,
    /// Absent for a self-authorising link: the body stays what a v1 server
    /// before this field reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    authorization: Option<Header<'a>>,
}

/// One HTTP header, the credential in `value`.
#[derive(Serialize)]
struct Header<'a> {
    name: &'a str,
    value: &'a str,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Created {
    lease_id: String,
    #[serde(default)]
    isolated: bool,
    #[serde(default)]
    enforced: Option<Enforced>,
}

/// What the server enforces of what was asked.
#[derive(Deserialize)]
struct Enforced {
    #[serde(default)]
    network: Option<agent_zero_contracts::NetworkPolicy>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    argv: &'a [String],
    cwd: &'a str,
    timeout_ms: u64,
    max_output_bytes: u64,
    env: &'a std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunResult {
    exit_code: i32,
    stdout: String,
    stderr: String,
    duration_ms: u64,
    #[serde(default)]
    truncated_bytes: u64,
    #[serde(default)]
    timed_out: bool,
}

#[derive(Serialize, Deserialize)]
struct FileBody {
    path: String,
    #[serde(default)]
    content: String,
}

#[derive(Deserialize)]
struct Files {
    files: Vec<String>,
}

/// `POST …/modes`: one Git mode (or `null`) per asked path, in order.
#[derive(Deserialize)]
struct Modes {
    modes: Vec<Option<String>>,
}

#[derive(Deserialize)]
struct Diff {
    diff: String,
}

impl<C: HttpClient> CustomSandbox<C> {
    /// An adapter for the server at `base_url` (no trailing slash needed).
    pub fn new(client: C, base_url: impl Into<String>, token: Secret) -> Self {
        Self { client, base_url: base_url.into().trim_end_matches('/').to_owned(), token }
    }

    fn call(&self, operation: &'static str) -> Call<'_> {
        Call { provider: NAME, operation, secret: &self.token }
    }

    async fn json_call(
        &self,
        operation: &'static str,
        method: http::Method,
        path: &str,
        body: Option<Vec<u8>>,
        timeout_ms: u64,
        what: &str,
    ) -> Result<Vec<u8>, ProviderError> {
        let call = self.call(operation);
        let builder = call
            .request(method, &format!("{}{path}", self.base_url))
            .header("authorization", format!("Bearer {}", self.token.expose()))
            .header("content-type", "application/json");
        let (_, bytes) = call.send(&self.client, builder, body.unwrap_or_default(), timeout_ms, what).await?;
        Ok(bytes)
    }
}

impl<C: HttpClient> SandboxProvider for CustomSandbox<C> {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Custom
    }

    async fn provision(
        &self,
        request: &SandboxRequest,
        provision: &Provision<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let archive = match provision.source {
            CheckoutSource::Archive { url, commit, authorization } => Some(Archive {
                url: url.expose(),
                commit,
                timeout_ms: provision.checkout_timeout_ms,
                authorization: authorization.as_ref().map(|a| Header { name: a.name, value: a.value.expose() }),
            }),
            CheckoutSource::PublicClone => None,
        };
        let body = serde_json::to_vec(&CreateLease {
            task_id: &request.task_id,
            repository: &request.repository,
            git_ref: &request.git_ref,
            writable: provision.writable,
            network: request.network,
            lease_ms: request.lease_ms,
            idempotency_key: provision.lease_id,
            archive,
        })
        .map_err(|e| self.call("create lease").protocol(e.to_string()))?;
        let deadline = exec_deadline(provision.checkout_timeout_ms);
        let bytes = self
            .json_call("create lease", http::Method::POST, "/v1/leases", Some(body), deadline, &request.repository)
            .await
            .map_err(|e| scrub_source(provision.source, e))?;
        let created: Created = self.call("create lease").json(&bytes)?;
        // A server that does not say what it enforces enforces nothing.
        let network = created.enforced.and_then(|e| e.network).unwrap_or(agent_zero_contracts::NetworkPolicy::Full);
        Ok(Provisioned { external_id: created.lease_id, root: String::new(), isolated: created.isolated, network })
    }

    async fn exec(&self, sandbox: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError> {
        let body = serde_json::to_vec(&Run {
            argv: &exec.argv,
            cwd: &exec.cwd,
            timeout_ms: exec.timeout_ms,
            max_output_bytes: exec.max_output_bytes,
            env: &exec.env,
        })
        .map_err(|e| self.call("run").protocol(e.to_string()))?;
        let path = format!("/v1/leases/{}/run", encode(&sandbox.external_id));
        let bytes = self
            .json_call(
                "run",
                http::Method::POST,
                &path,
                Some(body),
                exec_deadline(exec.timeout_ms),
                &sandbox.external_id,
            )
            .await?;
        let r: RunResult = self.call("run").json(&bytes)?;
        Ok(ExecOutput {
            exit_code: r.exit_code,
            stdout: r.stdout,
            stderr: r.stderr,
            duration_ms: r.duration_ms,
            truncated_bytes: r.truncated_bytes,
            timed_out: r.timed_out,
        })
    }

    async fn read_file(&self, sandbox: &SandboxRef, path: &str) -> Result<Vec<u8>, ProviderError> {
        let body = serde_json::to_vec(&FileBody { path: path.to_owned(), content: String::new() }).unwrap_or_default();
        let url = format!("/v1/leases/{}/read", encode(&sandbox.external_id));
        let bytes = self.json_call("read file", http::Method::POST, &url, Some(body), 60_000, path).await?;
        let file: FileBody = self.call("read file").json(&bytes)?;
        Ok(file.content.into_bytes())
    }

    async fn write_file(&self, sandbox: &SandboxRef, path: &str, content: &[u8]) -> Result<(), ProviderError> {
        let content = String::from_utf8(content.to_vec()).map_err(|_| ProviderError::Refused {
            provider: NAME,
            operation: "write file",
            reason: format!("`{path}` content is not UTF-8"),
        })?;
        let body = serde_json::to_vec(&FileBody { path: path.to_owned(), content }).unwrap_or_default();
        let url = format!("/v1/leases/{}/write", encode(&sandbox.external_id));
        self.json_call("write file", http::Method::POST, &url, Some(body), 60_000, path).await?;
        Ok(())
    }

    async fn list_files(&self, sandbox: &SandboxRef) -> Result<Vec<String>, ProviderError> {
        let url = format!("/v1/leases/{}/files", encode(&sandbox.external_id));
        let bytes = self.json_call("list files", http::Method::GET, &url, None, 60_000, &sandbox.external_id).await?;
        Ok(self.call("list files").json::<Files>(&bytes)?.files)
    }

    async fn file_modes(&self, sandbox: &SandboxRef, paths: &[String]) -> Result<Vec<Option<FileMode>>, ProviderError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let body = serde_json::to_vec(&serde_json::json!({ "paths": paths })).unwrap_or_default();
        let url = format!("/v1/leases/{}/modes", encode(&sandbox.external_id));
        let call = self.call("file modes");
        let bytes =
            self.json_call("file modes", http::Method::POST, &url, Some(body), 60_000, &sandbox.external_id).await?;
        let modes = call.json::<Modes>(&bytes)?.modes;
        if modes.len() != paths.len() {
            return Err(call.protocol(format!("{} modes for {} paths", modes.len(), paths.len())));
        }
        modes
            .into_iter()
            .map(|mode| match mode.as_deref() {
                None => Ok(None),
                Some(git) => FileMode::from_git(git).map(Some).ok_or_else(|| call.protocol(format!("mode `{git}`"))),
            })
            .collect()
    }

    async fn diff(&self, sandbox: &SandboxRef) -> Result<String, ProviderError> {
        let url = format!("/v1/leases/{}/diff", encode(&sandbox.external_id));
        let bytes = self.json_call("diff", http::Method::GET, &url, None, 60_000, &sandbox.external_id).await?;
        Ok(self.call("diff").json::<Diff>(&bytes)?.diff)
    }

    async fn stop(&self, external_id: &str) -> Result<(), ProviderError> {
        let url = format!("/v1/leases/{}", encode(external_id));
        match self.json_call("release", http::Method::DELETE, &url, None, 60_000, external_id).await {
            Ok(_) | Err(ProviderError::NotFound { .. }) => Ok(()),
            Err(other) => Err(other),
        }
    }
}

impl<C> std::fmt::Debug for CustomSandbox<C> {
    /// Shows no client state and no credential (envd tokens, keys, headers).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomSandbox").finish_non_exhaustive()
    }
}
