//! E2B: platform API (`api.e2b.app`) to create/kill sandboxes, envd in the
//! sandbox for processes (Connect `process.Process/Start`) and files.

use std::cell::RefCell;
use std::collections::BTreeMap;

use agent_zero_contracts::NetworkPolicy;
use agent_zero_ports::{HttpClient, HttpError};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::json;

use super::git_checkout::checkout;
use super::http::{Call, Tail, encode, exec_deadline, multipart_file};
use crate::checkout::Provision;
use crate::provider::{Exec, ExecOutput, ProviderError, Provisioned, SandboxProvider, SandboxRef};
use crate::request::{ProviderKind, SandboxRequest};
use agent_zero_ports::Secret;

const NAME: &str = "e2b";
const ENVD_PORT: u16 = 49983;
const ROOT: &str = "/home/user/repo";

/// E2B sandboxes (`E2B_API_KEY`).
pub struct E2b<C> {
    client: C,
    api_key: Secret,
    template: String,
    api_url: String,
    domain: String,
    /// Egress allowed under `restricted` (domains or CIDRs).
    restricted_allow: Vec<String>,
    /// envd access tokens of sandboxes this adapter created or looked up.
    envd_tokens: RefCell<BTreeMap<String, Secret>>,
    /// The create response's `domain` per sandbox (when it names one).
    domains: RefCell<BTreeMap<String, String>>,
    /// Numbers the `tag` of each started process (the kill selector).
    started: std::cell::Cell<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SandboxInfo {
    #[serde(rename = "sandboxID")]
    sandbox_id: String,
    #[serde(default)]
    envd_access_token: Option<String>,
    /// Base domain of the sandbox's traffic (`null`: the client's default).
    #[serde(default)]
    domain: Option<String>,
}

impl<C: HttpClient> E2b<C> {
    /// An adapter using `template` (e.g. `base`).
    pub fn new(client: C, api_key: Secret, template: impl Into<String>) -> Self {
        Self {
            client,
            api_key,
            template: template.into(),
            api_url: "https://api.e2b.app".into(),
            domain: "e2b.app".into(),
            restricted_allow: vec!["github.com".into()],
            envd_tokens: RefCell::new(BTreeMap::new()),
            domains: RefCell::new(BTreeMap::new()),
            started: std::cell::Cell::new(0),
        }
    }

    /// Overrides the API base URL and sandbox domain (self-hosted, tests).
    #[must_use]
    pub fn with_endpoints(mut self, api_url: impl Into<String>, domain: impl Into<String>) -> Self {
        self.api_url = api_url.into();
        self.domain = domain.into();
        self
    }

    fn call(&self, operation: &'static str) -> Call<'_> {
        Call { provider: NAME, operation, secret: &self.api_key }
    }

    /// The running sandbox tagged with `lease_id`, if one exists:
    /// `GET /v2/sandboxes?metadata=agentZeroLease%3D{lease}&state=running`.
    async fn find_by_lease(&self, lease_id: &str) -> Result<Option<String>, ProviderError> {
        #[derive(Deserialize)]
        struct Listed {
            #[serde(rename = "sandboxID")]
            sandbox_id: String,
        }
        let call = self.call("find sandbox");
        let query = encode(&format!("agentZeroLease={}", encode(lease_id)));
        let url = format!("{}/v2/sandboxes?metadata={query}&state=running", self.api_url);
        let builder = call.request(http::Method::GET, &url).header("x-api-key", self.api_key.expose());
        let (_, body) = call.send(&self.client, builder, Vec::new(), 30_000, lease_id).await?;
        let listed: Vec<Listed> = call.json(&body)?;
        Ok(listed.into_iter().next().map(|l| l.sandbox_id))
    }

    /// A call to envd: its errors are scrubbed of the sandbox's envd token
    /// (envd never sees the API key).
    fn envd_call<'s>(&'s self, operation: &'static str, token: Option<&'s Secret>) -> Call<'s> {
        Call { provider: NAME, operation, secret: token.unwrap_or(&self.api_key) }
    }

    fn envd_url(&self, id: &str, path: &str) -> String {
        let domains = self.domains.borrow();
        let domain = domains.get(id).map_or(self.domain.as_str(), String::as_str);
        format!("https://{ENVD_PORT}-{id}.{domain}{path}")
    }

    /// `process.Process/SendSignal` SIGKILL to the process tagged `tag`
    /// (what the SDK's `kill` sends): a command past its deadline is killed,
    /// not left running.
    async fn kill(&self, sandbox: &SandboxRef, tag: &str) -> Result<(), ProviderError> {
        let token = self.envd_token(&sandbox.external_id).await?;
        let call = self.envd_call("kill command", token.as_ref());
        let message = json!({ "process": { "tag": tag }, "signal": "SIGNAL_SIGKILL" }).to_string();
        let mut builder = call
            .request(http::Method::POST, &self.envd_url(&sandbox.external_id, "/process.Process/SendSignal"))
            .header("connect-protocol-version", "1")
            .header("content-type", "application/json");
        if let Some(token) = &token {
            builder = builder.header("x-access-token", token.expose());
        }
        call.send(&self.client, builder, message.into_bytes(), 30_000, tag).await.map(|_| ())
    }

    async fn envd_token(&self, id: &str) -> Result<Option<Secret>, ProviderError> {
        if let Some(token) = self.envd_tokens.borrow().get(id) {
            return Ok(Some(token.clone()));
        }
        let call = self.call("connect");
        let builder = call
            .request(http::Method::GET, &format!("{}/sandboxes/{}", self.api_url, encode(id)))
            .header("x-api-key", self.api_key.expose());
        let (_, body) = call.send(&self.client, builder, Vec::new(), 30_000, id).await?;
        let info: SandboxInfo = call.json(&body)?;
        let token = info.envd_access_token.map(Secret::new);
        if let Some(token) = &token {
            self.envd_tokens.borrow_mut().insert(id.to_owned(), token.clone());
        }
        Ok(token)
    }
}

/// A Connect streaming envelope: flags byte, big-endian length, message.
fn envelope(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// Folds the `process.Process/Start` response stream into one output,
/// each stream bounded to `max` bytes (envd takes no output cap).
fn fold_process_stream(body: &[u8], call: &Call<'_>, max: u64) -> Result<ExecOutput, ProviderError> {
    let (mut stdout, mut stderr) = (Tail::new(max), Tail::new(max));
    let mut out = ExecOutput { exit_code: -1, ..ExecOutput::default() };
    let mut ended = false;
    let mut rest = body;
    while rest.len() >= 5 {
        let flags = rest[0];
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        let Some(message) = rest.get(5..5 + len) else { return Err(call.protocol("truncated envelope".into())) };
        rest = &rest[5 + len..];
        let value: serde_json::Value =
            agent_zero_codecs::json::from_slice(message).map_err(|e| call.protocol(e.to_string()))?;
        if flags & 0x02 != 0 {
            // End of stream: `{}` or `{"error": {"code", "message"}}`.
            if let Some(error) = value.get("error") {
                if error.get("code").and_then(|c| c.as_str()) == Some("deadline_exceeded") {
                    out.timed_out = true;
                } else if !ended {
                    return Err(call.protocol(format!("stream error: {error}")));
                }
            }
            continue;
        }
        let event = &value["event"];
        if let Some(data) = event.get("data") {
            for (key, sink) in [("stdout", &mut stdout), ("stderr", &mut stderr)] {
                if let Some(chunk) = data.get(key).and_then(|v| v.as_str()) {
                    sink.push(&STANDARD.decode(chunk).map_err(|e| call.protocol(e.to_string()))?);
                }
            }
        } else if let Some(end) = event.get("end") {
            ended = true;
            // proto3 JSON omits a zero exit code.
            out.exit_code = end.get("exitCode").and_then(serde_json::Value::as_i64).unwrap_or(0) as i32;
            if end.get("exited").and_then(serde_json::Value::as_bool) == Some(false) {
                out.exit_code = -1;
            }
        }
    }
    if !rest.is_empty() {
        return Err(call.protocol("truncated envelope".into()));
    }
    if !ended && !out.timed_out {
        return Err(call.protocol("stream ended without an end event".into()));
    }
    let ((stdout, a), (stderr, b)) = (stdout.finish(), stderr.finish());
    (out.stdout, out.stderr, out.truncated_bytes) = (stdout, stderr, a + b);
    Ok(out)
}

impl<C: HttpClient> SandboxProvider for E2b<C> {
    fn kind(&self) -> ProviderKind {
        ProviderKind::E2b
    }

    fn writes_keep_modes(&self) -> bool {
        false
    }

    async fn provision(
        &self,
        request: &SandboxRequest,
        provision: &Provision<'_>,
    ) -> Result<Provisioned, ProviderError> {
        if let Some(found) = self.find_by_lease(provision.lease_id).await? {
            // A replay (the edge crashed after creating it): the same
            // sandbox, its checkout redone in place (every step is idempotent).
            if let Err(error) = checkout(self, &self.client, &found, ROOT, request, provision).await {
                let _ = self.stop(&found).await;
                return Err(error);
            }
            return Ok(Provisioned { external_id: found, root: ROOT.into(), isolated: true, network: request.network });
        }
        let mut body = json!({
            "templateID": self.template,
            "timeout": request.lease_ms.div_ceil(1000),
            "secure": true,
            "allow_internet_access": request.network != NetworkPolicy::None,
            "metadata": { "agentZeroTask": request.task_id, "agentZeroLease": provision.lease_id },
        });
        if request.network == NetworkPolicy::Restricted {
            body["network"] = json!({ "denyOut": ["0.0.0.0/0"], "allowOut": self.restricted_allow });
        }
        let call = self.call("create sandbox");
        let builder = call
            .request(http::Method::POST, &format!("{}/sandboxes", self.api_url))
            .header("x-api-key", self.api_key.expose())
            .header("content-type", "application/json");
        let (_, bytes) =
            call.send(&self.client, builder, body.to_string().into_bytes(), 120_000, &self.template).await?;
        let info: SandboxInfo = call.json(&bytes)?;
        if let Some(token) = info.envd_access_token {
            self.envd_tokens.borrow_mut().insert(info.sandbox_id.clone(), Secret::new(token));
        }
        if let Some(domain) = info.domain.filter(|d| !d.is_empty()) {
            self.domains.borrow_mut().insert(info.sandbox_id.clone(), domain);
        }
        if let Err(error) = checkout(self, &self.client, &info.sandbox_id, ROOT, request, provision).await {
            let _ = self.stop(&info.sandbox_id).await;
            return Err(error);
        }
        Ok(Provisioned { external_id: info.sandbox_id, root: ROOT.into(), isolated: true, network: request.network })
    }

    async fn exec(&self, sandbox: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError> {
        let token = self.envd_token(&sandbox.external_id).await?;
        let call = self.envd_call("run", token.as_ref());
        let mut process = json!({ "cmd": exec.argv[0], "args": exec.argv[1..], "envs": exec.env });
        let cwd = sandbox.path(&exec.cwd);
        if !cwd.is_empty() {
            process["cwd"] = json!(cwd);
        }
        self.started.set(self.started.get() + 1);
        let tag = format!("agent-zero-{}", self.started.get());
        // stdin closed (a command reading it gets EOF, not a hang), as the
        // SDK starts commands; tagged so a command past its deadline can be killed.
        let message = json!({ "process": process, "stdin": false, "tag": tag }).to_string();
        let mut builder = call
            .request(http::Method::POST, &self.envd_url(&sandbox.external_id, "/process.Process/Start"))
            .header("connect-protocol-version", "1")
            .header("content-type", "application/connect+json")
            .header("connect-timeout-ms", exec.timeout_ms.to_string())
            // The SDK's keepalive: a long silent command keeps its stream.
            .header("keepalive-ping-interval", "50");
        if let Some(token) = &token {
            builder = builder.header("x-access-token", token.expose());
        }
        let deadline = exec_deadline(exec.timeout_ms);
        let out = match call
            .send(&self.client, builder, envelope(message.as_bytes()), deadline, &sandbox.external_id)
            .await
        {
            Ok((_, body)) => fold_process_stream(&body, &call, exec.max_output_bytes)?,
            Err(ProviderError::Http { source: HttpError::Timeout(_), .. }) => {
                ExecOutput { exit_code: -1, timed_out: true, duration_ms: exec.timeout_ms, ..ExecOutput::default() }
            }
            Err(other) => return Err(other),
        };
        if out.timed_out {
            // Already gone is fine; any other failure says the command may live on.
            match self.kill(sandbox, &tag).await {
                Ok(()) | Err(ProviderError::NotFound { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(out)
    }

    async fn read_file(&self, sandbox: &SandboxRef, path: &str) -> Result<Vec<u8>, ProviderError> {
        let token = self.envd_token(&sandbox.external_id).await?;
        let call = self.envd_call("read file", token.as_ref());
        let url = self.envd_url(&sandbox.external_id, &format!("/files?path={}", encode(&sandbox.path(path))));
        let mut builder = call.request(http::Method::GET, &url);
        if let Some(token) = &token {
            builder = builder.header("x-access-token", token.expose());
        }
        Ok(call.send(&self.client, builder, Vec::new(), 60_000, path).await?.1)
    }

    async fn write_file(&self, sandbox: &SandboxRef, path: &str, content: &[u8]) -> Result<(), ProviderError> {
        let token = self.envd_token(&sandbox.external_id).await?;
        let call = self.envd_call("write file", token.as_ref());
        let boundary = "agent-zero-e2b-boundary-7f3a";
        let url = self.envd_url(&sandbox.external_id, &format!("/files?path={}", encode(&sandbox.path(path))));
        let mut builder = call
            .request(http::Method::POST, &url)
            .header("content-type", format!("multipart/form-data; boundary={boundary}"));
        if let Some(token) = &token {
            builder = builder.header("x-access-token", token.expose());
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        call.send(&self.client, builder, multipart_file(boundary, name, content), 60_000, path).await?;
        Ok(())
    }

    async fn stop(&self, external_id: &str) -> Result<(), ProviderError> {
        let call = self.call("kill sandbox");
        let builder = call
            .request(http::Method::DELETE, &format!("{}/sandboxes/{}", self.api_url, encode(external_id)))
            .header("x-api-key", self.api_key.expose());
        match call.send(&self.client, builder, Vec::new(), 30_000, external_id).await {
            Ok(_) | Err(ProviderError::NotFound { .. }) => {
                self.envd_tokens.borrow_mut().remove(external_id);
                Ok(())
            }
            Err(other) => Err(other),
        }
    }
}

impl<C> std::fmt::Debug for E2b<C> {
    /// Shows no client state and no credential (envd tokens, keys, headers).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("E2b").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_zero_ports::Secret;

    fn frame(flags: u8, message: &str) -> Vec<u8> {
        let mut out = envelope(message.as_bytes());
        out[0] = flags;
        out
    }

    #[test]
    fn folds_a_real_start_stream() {
        let secret = Secret::new("k");
        let call = Call { provider: NAME, operation: "run", secret: &secret };
        let mut body = frame(0, r#"{"event":{"start":{"pid":42}}}"#);
        body.extend(frame(0, r#"{"event":{"data":{"stdout":"aGVsbG8K"}}}"#));
        body.extend(frame(0, r#"{"event":{"data":{"stderr":"b29wcwo="}}}"#));
        body.extend(frame(0, r#"{"event":{"keepalive":{}}}"#));
        body.extend(frame(0, r#"{"event":{"end":{"exitCode":2,"exited":true,"status":"exit status 2"}}}"#));
        body.extend(frame(2, "{}"));
        let out = fold_process_stream(&body, &call, 1 << 20).unwrap();
        assert_eq!((out.exit_code, out.stdout.as_str(), out.stderr.as_str()), (2, "hello\n", "oops\n"));
        // Each stream is bounded to the cap as it is folded, the cut counted.
        let out = fold_process_stream(&body, &call, 3).unwrap();
        assert_eq!((out.stdout.as_str(), out.stderr.as_str(), out.truncated_bytes), ("lo\n", "ps\n", 5));
        // proto3 JSON omits a zero exit code.
        let ok = [frame(0, r#"{"event":{"end":{"exited":true,"status":"exit status 0"}}}"#), frame(2, "{}")].concat();
        assert_eq!(fold_process_stream(&ok, &call, 1 << 20).unwrap().exit_code, 0);
        let deadline = frame(2, r#"{"error":{"code":"deadline_exceeded","message":"timeout"}}"#);
        assert!(fold_process_stream(&deadline, &call, 1 << 20).unwrap().timed_out);
        assert!(
            fold_process_stream(&frame(2, r#"{"error":{"code":"unavailable","message":"x"}}"#), &call, 1 << 20)
                .is_err()
        );
        assert!(fold_process_stream(&body[..body.len() - 3], &call, 1 << 20).is_err());
    }
}
