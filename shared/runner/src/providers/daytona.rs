//! Daytona, against its last release (`daytonaio/daytona` v0.190.0, commit
//! `01c502b`; the repository is archived): `POST /sandbox` on the API
//! (named after the lease, `autoDeleteInterval: 0`), a bounded wait for
//! `started`, then the sandbox's toolbox (via its `toolboxProxyUrl`) for
//! process execute and files, and `DELETE /sandbox/{id}` at teardown.

use std::cell::RefCell;
use std::collections::BTreeMap;

use agent_zero_contracts::NetworkPolicy;
use agent_zero_ports::{HttpClient, HttpError};
use serde::Deserialize;
use serde_json::json;

use super::git_checkout::checkout;
use super::http::{Call, Tail, encode, exec_deadline, multipart_file, shell_quote};
use crate::checkout::Provision;
use crate::provider::{Exec, ExecOutput, ProviderError, Provisioned, SandboxProvider, SandboxRef, fixed_git, git_ok};
use crate::request::{ProviderKind, SandboxRequest};
use agent_zero_ports::Secret;

const NAME: &str = "daytona";
const ROOT: &str = "/home/daytona/repo";
/// How many times provisioning re-reads a sandbox that is not yet
/// `started` (the create call itself already waits up to 30 s).
const START_POLLS: usize = 30;

/// Daytona sandboxes (`DAYTONA_API_KEY`).
pub struct Daytona<C> {
    client: C,
    api_key: Secret,
    api_url: String,
    /// `networkAllowList` (CIDRs) under `restricted`.
    restricted_allow: String,
    toolbox_urls: RefCell<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SandboxInfo {
    id: String,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error_reason: Option<String>,
    #[serde(default)]
    toolbox_proxy_url: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecuteResponse {
    exit_code: i32,
    #[serde(default)]
    result: String,
}

impl<C: HttpClient> Daytona<C> {
    /// An adapter for `https://app.daytona.io/api`.
    pub fn new(client: C, api_key: Secret) -> Self {
        Self {
            client,
            api_key,
            api_url: "https://app.daytona.io/api".into(),
            restricted_allow: "140.82.112.0/20".into(),
            toolbox_urls: RefCell::new(BTreeMap::new()),
        }
    }

    /// Overrides the API base URL (self-hosted, tests).
    #[must_use]
    pub fn with_api_url(mut self, api_url: impl Into<String>) -> Self {
        self.api_url = api_url.into();
        self
    }

    fn call(&self, operation: &'static str) -> Call<'_> {
        Call { provider: NAME, operation, secret: &self.api_key }
    }

    fn authed(&self, call: &Call<'_>, method: http::Method, url: &str) -> http::request::Builder {
        call.request(method, url).header("authorization", format!("Bearer {}", self.api_key.expose()))
    }

    async fn toolbox(&self, id: &str) -> Result<String, ProviderError> {
        if let Some(url) = self.toolbox_urls.borrow().get(id) {
            return Ok(url.clone());
        }
        let info = self.get(id).await?;
        self.remember(&info).ok_or_else(|| self.call("get sandbox").protocol("sandbox has no toolboxProxyUrl".into()))
    }

    async fn get(&self, id_or_name: &str) -> Result<SandboxInfo, ProviderError> {
        let call = self.call("get sandbox");
        let url = format!("{}/sandbox/{}", self.api_url, encode(id_or_name));
        let (_, body) = call
            .send(&self.client, self.authed(&call, http::Method::GET, &url), Vec::new(), 30_000, id_or_name)
            .await?;
        call.json(&body)
    }

    fn remember(&self, info: &SandboxInfo) -> Option<String> {
        let url = info.toolbox_proxy_url.as_deref()?.trim_end_matches('/').to_owned();
        self.toolbox_urls.borrow_mut().insert(info.id.clone(), url.clone());
        Some(url)
    }

    /// Waits (bounded) for `started`; `error` and `build_failed` end it.
    async fn started(&self, mut info: SandboxInfo) -> Result<SandboxInfo, ProviderError> {
        for _ in 0..START_POLLS {
            match info.state.as_deref() {
                Some("started") => return Ok(info),
                Some(state @ ("error" | "build_failed" | "destroyed" | "destroying")) => {
                    let reason = info.error_reason.as_deref().unwrap_or("no reason given");
                    return Err(self.call("start sandbox").protocol(format!("the sandbox is `{state}`: {reason}")));
                }
                _ => info = self.get(&info.id).await?,
            }
        }
        Err(ProviderError::Refused {
            provider: NAME,
            operation: "start sandbox",
            reason: format!("the sandbox is still `{}`, not `started`", info.state.as_deref().unwrap_or("unknown")),
        })
    }

    /// Runs a shell command string; `discard_stderr` keeps git's warnings
    /// out of output that is parsed (the toolbox merges both streams).
    async fn execute(
        &self,
        sandbox: &SandboxRef,
        exec: &Exec,
        discard_stderr: bool,
    ) -> Result<ExecOutput, ProviderError> {
        let toolbox = self.toolbox(&sandbox.external_id).await?;
        let call = self.call("run");
        // The execute endpoint takes one command string, run by the shell:
        // the argv is quoted word by word; the environment goes in `envs`.
        let mut command = shell_quote(&exec.argv);
        if discard_stderr {
            command.push_str(" 2>/dev/null");
        }
        let body = json!({
            "command": command,
            "cwd": sandbox.path(&exec.cwd),
            "timeout": exec.timeout_ms.div_ceil(1000),
            "envs": exec.env,
        });
        let builder = self
            .authed(&call, http::Method::POST, &format!("{toolbox}/{}/process/execute", encode(&sandbox.external_id)))
            .header("content-type", "application/json");
        let deadline = exec_deadline(exec.timeout_ms);
        match call.send(&self.client, builder, body.to_string().into_bytes(), deadline, &sandbox.external_id).await {
            Ok((_, bytes)) => {
                let response: ExecuteResponse = call.json(&bytes)?;
                // Daytona merges stdout and stderr into `result`.
                let mut tail = Tail::new(exec.max_output_bytes);
                tail.push(response.result.as_bytes());
                let (stdout, truncated_bytes) = tail.finish();
                Ok(ExecOutput { exit_code: response.exit_code, stdout, truncated_bytes, ..ExecOutput::default() })
            }
            // The toolbox answers 408 when the command outlived its `timeout`
            // (it has killed the process group); no answer in time is the
            // same outcome.
            Err(
                ProviderError::Http { source: HttpError::Timeout(_), .. } | ProviderError::Status { status: 408, .. },
            ) => {
                Ok(ExecOutput { exit_code: -1, timed_out: true, duration_ms: exec.timeout_ms, ..ExecOutput::default() })
            }
            Err(other) => Err(other),
        }
    }
}

/// The sandbox name of a lease: what a replayed provision looks up.
fn sandbox_name(lease_id: &str) -> String {
    let clean: String =
        lease_id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).take(52).collect();
    format!("agent-zero-{clean}")
}

impl<C: HttpClient> SandboxProvider for Daytona<C> {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Daytona
    }

    fn writes_keep_modes(&self) -> bool {
        false
    }

    async fn provision(
        &self,
        request: &SandboxRequest,
        provision: &Provision<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let name = sandbox_name(provision.lease_id);
        // A replayed provision finds the sandbox of its lease by name.
        let found = match self.get(&name).await {
            Ok(info) => Some(info),
            Err(ProviderError::NotFound { .. }) => None,
            Err(other) => return Err(other),
        };
        let info = match found {
            Some(info) => info,
            None => {
                // `autoDeleteInterval: 0`: deleted as soon as it stops, so a
                // leaked sandbox goes away after `autoStopInterval`.
                let mut body = json!({
                    "name": name,
                    "labels": { "agent-zero-task": request.task_id, "agent-zero-lease": provision.lease_id },
                    "autoStopInterval": request.lease_ms.div_ceil(60_000),
                    "autoDeleteInterval": 0,
                    "networkBlockAll": request.network == NetworkPolicy::None,
                });
                if request.network == NetworkPolicy::Restricted {
                    body["networkAllowList"] = json!(self.restricted_allow);
                }
                let call = self.call("create sandbox");
                let builder = self
                    .authed(&call, http::Method::POST, &format!("{}/sandbox", self.api_url))
                    .header("content-type", "application/json");
                let body = body.to_string().into_bytes();
                let (_, bytes) = call.send(&self.client, builder, body, 120_000, &request.repository).await?;
                call.json(&bytes)?
            }
        };
        let id = info.id.clone();
        let result = async {
            let info = self.started(info).await?;
            self.remember(&info);
            checkout(self, &self.client, &info.id, ROOT, request, provision).await
        }
        .await;
        if let Err(error) = result {
            let _ = self.stop(&id).await;
            return Err(error);
        }
        Ok(Provisioned { external_id: id, root: ROOT.into(), isolated: true, network: request.network })
    }

    async fn exec(&self, sandbox: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError> {
        self.execute(sandbox, exec, false).await
    }

    async fn list_files(&self, sandbox: &SandboxRef) -> Result<Vec<String>, ProviderError> {
        let exec = fixed_git(&["ls-files", "-z", "--cached", "--others", "--exclude-standard"]);
        let out = self.execute(sandbox, &exec, true).await?;
        git_ok(self.kind(), "list files", &out)?;
        Ok(out.stdout.split('\0').filter(|s| !s.is_empty()).map(str::to_owned).collect())
    }

    async fn diff(&self, sandbox: &SandboxRef) -> Result<String, ProviderError> {
        let _ = self.execute(sandbox, &fixed_git(&["add", "--intent-to-add", "--all"]), true).await?;
        let out = self.execute(sandbox, &fixed_git(&["diff", "--no-ext-diff", "--no-color"]), true).await?;
        git_ok(self.kind(), "diff", &out)?;
        Ok(out.stdout)
    }

    async fn read_file(&self, sandbox: &SandboxRef, path: &str) -> Result<Vec<u8>, ProviderError> {
        let toolbox = self.toolbox(&sandbox.external_id).await?;
        let call = self.call("read file");
        let url =
            format!("{toolbox}/{}/files/download?path={}", encode(&sandbox.external_id), encode(&sandbox.path(path)));
        Ok(call.send(&self.client, self.authed(&call, http::Method::GET, &url), Vec::new(), 60_000, path).await?.1)
    }

    async fn write_file(&self, sandbox: &SandboxRef, path: &str, content: &[u8]) -> Result<(), ProviderError> {
        let toolbox = self.toolbox(&sandbox.external_id).await?;
        let call = self.call("write file");
        let boundary = "agent-zero-daytona-boundary-51c2";
        let url =
            format!("{toolbox}/{}/files/upload?path={}", encode(&sandbox.external_id), encode(&sandbox.path(path)));
        let builder = self
            .authed(&call, http::Method::POST, &url)
            .header("content-type", format!("multipart/form-data; boundary={boundary}"));
        let name = path.rsplit('/').next().unwrap_or(path);
        call.send(&self.client, builder, multipart_file(boundary, name, content), 60_000, path).await?;
        Ok(())
    }

    async fn stop(&self, external_id: &str) -> Result<(), ProviderError> {
        let call = self.call("delete sandbox");
        let builder =
            self.authed(&call, http::Method::DELETE, &format!("{}/sandbox/{}", self.api_url, encode(external_id)));
        match call.send(&self.client, builder, Vec::new(), 60_000, external_id).await {
            Ok(_) | Err(ProviderError::NotFound { .. }) => {
                self.toolbox_urls.borrow_mut().remove(external_id);
                Ok(())
            }
            Err(other) => Err(other),
        }
    }
}

impl<C> std::fmt::Debug for Daytona<C> {
    /// Shows no client state and no credential (envd tokens, keys, headers).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daytona").finish_non_exhaustive()
    }
}
