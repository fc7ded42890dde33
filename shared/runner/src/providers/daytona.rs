//! Daytona: `POST /sandbox` on the API, then the sandbox's toolbox (via
//! its `toolboxProxyUrl`) for git clone, process execute and files.

use std::cell::RefCell;
use std::collections::BTreeMap;

use agent_zero_contracts::NetworkPolicy;
use agent_zero_ports::{HttpClient, HttpError};
use serde::Deserialize;
use serde_json::json;

use super::http::{Call, encode, exec_deadline, multipart_file, shell_quote};
use crate::checkout::Provision;
use crate::provider::{Exec, ExecOutput, ProviderError, Provisioned, SandboxProvider, SandboxRef, Secret, checkout};
use crate::request::{ProviderKind, SandboxRequest};

const NAME: &str = "daytona";
const ROOT: &str = "/home/daytona/repo";

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
        let call = self.call("get sandbox");
        let builder = self.authed(&call, http::Method::GET, &format!("{}/sandbox/{}", self.api_url, encode(id)));
        let (_, body) = call.send(&self.client, builder, Vec::new(), 30_000, id).await?;
        let info: SandboxInfo = call.json(&body)?;
        let url = info.toolbox_proxy_url.ok_or_else(|| call.protocol("sandbox has no toolboxProxyUrl".into()))?;
        let url = url.trim_end_matches('/').to_owned();
        self.toolbox_urls.borrow_mut().insert(id.to_owned(), url.clone());
        Ok(url)
    }
}

impl<C: HttpClient> SandboxProvider for Daytona<C> {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Daytona
    }

    async fn provision(
        &self,
        request: &SandboxRequest,
        provision: &Provision<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let mut body = json!({
            "labels": { "agent-zero-task": request.task_id, "agent-zero-lease": provision.lease_id },
            "autoStopInterval": request.lease_ms.div_ceil(60_000),
            "networkBlockAll": request.network == NetworkPolicy::None,
        });
        if request.network == NetworkPolicy::Restricted {
            body["networkAllowList"] = json!(self.restricted_allow);
        }
        let call = self.call("create sandbox");
        let builder = self
            .authed(&call, http::Method::POST, &format!("{}/sandbox", self.api_url))
            .header("content-type", "application/json");
        let (_, bytes) =
            call.send(&self.client, builder, body.to_string().into_bytes(), 120_000, &request.repository).await?;
        let info: SandboxInfo = call.json(&bytes)?;
        if let Some(url) = &info.toolbox_proxy_url {
            self.toolbox_urls.borrow_mut().insert(info.id.clone(), url.trim_end_matches('/').to_owned());
        }
        let result = checkout(self, &self.client, &info.id, ROOT, request, provision).await;
        if let Err(error) = result {
            let _ = self.stop(&info.id).await;
            return Err(error);
        }
        Ok(Provisioned { external_id: info.id, root: ROOT.into(), isolated: true, network: request.network })
    }

    async fn exec(&self, sandbox: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError> {
        let toolbox = self.toolbox(&sandbox.external_id).await?;
        let call = self.call("run");
        // The execute endpoint takes one command string: the argv is quoted
        // word by word, and environment goes through `env NAME=value`.
        let mut argv: Vec<String> = Vec::new();
        if !exec.env.is_empty() {
            argv.push("env".into());
            argv.extend(exec.env.iter().map(|(k, v)| format!("{k}={v}")));
        }
        argv.extend(exec.argv.iter().cloned());
        let body = json!({
            "command": shell_quote(&argv),
            "cwd": sandbox.path(&exec.cwd),
            "timeout": exec.timeout_ms.div_ceil(1000),
        });
        let builder = self
            .authed(&call, http::Method::POST, &format!("{toolbox}/{}/process/execute", encode(&sandbox.external_id)))
            .header("content-type", "application/json");
        match call
            .send(
                &self.client,
                builder,
                body.to_string().into_bytes(),
                exec_deadline(exec.timeout_ms),
                &sandbox.external_id,
            )
            .await
        {
            Ok((_, bytes)) => {
                let response: ExecuteResponse = call.json(&bytes)?;
                // Daytona merges stdout and stderr into `result`.
                Ok(ExecOutput { exit_code: response.exit_code, stdout: response.result, ..ExecOutput::default() })
            }
            // The toolbox answers 408 when the command outlived its `timeout`
            // (and has ended it); no answer in time is the same outcome.
            Err(
                ProviderError::Http { source: HttpError::Timeout(_), .. } | ProviderError::Status { status: 408, .. },
            ) => {
                Ok(ExecOutput { exit_code: -1, timed_out: true, duration_ms: exec.timeout_ms, ..ExecOutput::default() })
            }
            Err(other) => Err(other),
        }
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
