//! Cloudflare Sandbox through the sandbox bridge Worker's HTTP API
//! (`/v1/sandbox`, `/exec` as Server-Sent Events, `/file/*`).

use agent_zero_contracts::NetworkPolicy;
use agent_zero_ports::HttpClient;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::json;

use super::git_checkout::checkout;
use super::http::{Call, Tail, encode, encode_path, exec_deadline};
use crate::checkout::Provision;
use crate::provider::{Exec, ExecOutput, ProviderError, Provisioned, SandboxProvider, SandboxRef};
use crate::request::{ProviderKind, SandboxRequest};
use agent_zero_ports::Secret;

const NAME: &str = "cloudflare";
const ROOT: &str = "/workspace/repo";
/// Written once the checkout is complete. A bridge sandbox sleeps when idle
/// (`sleepAfter`, 10 minutes by default) and wakes as an empty container:
/// without this file the checkout is gone, whatever a command would say.
const MARKER: &str = "/workspace/repo/.git/agent-zero-checkout";
/// What the command wrapper prints (and its exit status) when the marker is
/// missing; a command's own exit 75 comes without this line.
const LOST_LINE: &str = "agent-zero: checkout lost";
const LOST_EXIT: i32 = 75;
/// Runs `"$@"` in `$1` once the marker proves the checkout is still there.
const WRAPPER: &str = "[ -e /workspace/repo/.git/agent-zero-checkout ] || { echo 'agent-zero: checkout lost' >&2; exit 75; }; cd \"$1\" || exit 126; shift; exec \"$@\"";

/// A deployed sandbox bridge (`SANDBOX_API_KEY`).
pub struct CloudflareSandbox<C> {
    client: C,
    base_url: String,
    api_key: Secret,
}

#[derive(Deserialize)]
struct Created {
    id: String,
}

impl<C: HttpClient> CloudflareSandbox<C> {
    /// An adapter for the bridge at `base_url`.
    pub fn new(client: C, base_url: impl Into<String>, api_key: Secret) -> Self {
        Self { client, base_url: base_url.into().trim_end_matches('/').to_owned(), api_key }
    }

    async fn send(
        &self,
        operation: &'static str,
        method: http::Method,
        path: &str,
        body: Vec<u8>,
        timeout_ms: u64,
        what: &str,
    ) -> Result<Vec<u8>, ProviderError> {
        let call = Call { provider: NAME, operation, secret: &self.api_key };
        let builder = call
            .request(method, &format!("{}{path}", self.base_url))
            .header("authorization", format!("Bearer {}", self.api_key.expose()))
            .header("content-type", "application/json");
        Ok(call.send(&self.client, builder, body, timeout_ms, what).await?.1)
    }

    fn call(&self, operation: &'static str) -> Call<'_> {
        Call { provider: NAME, operation, secret: &self.api_key }
    }
}

/// Folds the bridge's exec event stream (`stdout`/`stderr` base64 chunks,
/// then `exit` with `exit_code`, or `error`).
fn fold_sse(body: &str, call: &Call<'_>, max: u64) -> Result<ExecOutput, ProviderError> {
    let (mut stdout, mut stderr) = (Tail::new(max), Tail::new(max));
    let mut exit = None;
    for block in body.replace("\r\n", "\n").split("\n\n") {
        let mut event = "message";
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                event = v.trim();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        match event {
            "stdout" | "stderr" => {
                let sink = if event == "stdout" { &mut stdout } else { &mut stderr };
                sink.push(&STANDARD.decode(data.trim()).map_err(|e| call.protocol(e.to_string()))?);
            }
            "exit" => {
                let value: serde_json::Value =
                    agent_zero_codecs::json::from_str(&data).map_err(|e| call.protocol(e.to_string()))?;
                exit = Some(value["exit_code"].as_i64().or_else(|| value["exitCode"].as_i64()).unwrap_or(-1) as i32);
            }
            "error" => {
                return Err(call.protocol(format!("exec error event: {}", data.chars().take(300).collect::<String>())));
            }
            _ => {}
        }
    }
    let exit_code = exit.ok_or_else(|| call.protocol("stream ended without an exit event".into()))?;
    let ((stdout, a), (stderr, b)) = (stdout.finish(), stderr.finish());
    Ok(ExecOutput {
        exit_code,
        stdout,
        stderr,
        truncated_bytes: a + b,
        // The bridge kills a command at `timeout_ms` and reports exit 124,
        // as coreutils `timeout` does.
        timed_out: exit_code == TIMEOUT_EXIT,
        ..ExecOutput::default()
    })
}

fn lost(operation: &'static str) -> ProviderError {
    ProviderError::CheckoutLost {
        provider: NAME,
        operation,
        reason: "the bridge's sandbox slept and woke without it; raise its `sleepAfter` above the lease ceiling".into(),
    }
}

/// The exit status the bridge reports for a command killed at its deadline.
const TIMEOUT_EXIT: i32 = 124;

impl<C: HttpClient> SandboxProvider for CloudflareSandbox<C> {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Cloudflare
    }

    fn writes_keep_modes(&self) -> bool {
        false
    }

    async fn provision(
        &self,
        request: &SandboxRequest,
        provision: &Provision<'_>,
    ) -> Result<Provisioned, ProviderError> {
        if request.network != NetworkPolicy::Full {
            // The bridge has no per-sandbox egress control: a `none` or
            // `restricted` lease cannot be honoured, so it is refused rather
            // than widened (the evidence would claim a restriction that
            // does not exist).
            return Err(ProviderError::Refused {
                provider: NAME,
                operation: "create sandbox",
                reason: format!(
                    "network policy `{}` is not enforceable through the bridge; only `full` is",
                    request.network.as_str()
                ),
            });
        }
        let bytes = self
            .send("create sandbox", http::Method::POST, "/v1/sandbox", b"{}".to_vec(), 60_000, &request.repository)
            .await?;
        let created: Created = self.call("create sandbox").json(&bytes)?;
        let outside = SandboxRef { external_id: created.id.clone(), root: String::new() };
        let marked = match checkout(self, &self.client, &created.id, ROOT, request, provision).await {
            Ok(()) => {
                let touch = Exec {
                    argv: vec!["touch".into(), MARKER.into()],
                    cwd: String::new(),
                    timeout_ms: 30_000,
                    max_output_bytes: 4_096,
                    env: std::collections::BTreeMap::new(),
                };
                match self.exec(&outside, &touch).await {
                    Ok(out) if out.exit_code == 0 => Ok(()),
                    Ok(out) => Err(self.call("mark checkout").protocol(format!("touch exited {}", out.exit_code))),
                    Err(error) => Err(error),
                }
            }
            Err(error) => Err(error),
        };
        if let Err(error) = marked {
            let _ = self.stop(&created.id).await;
            return Err(error);
        }
        Ok(Provisioned { external_id: created.id, root: ROOT.into(), isolated: true, network: NetworkPolicy::Full })
    }

    async fn exec(&self, sandbox: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError> {
        // The bridge's `ExecRequest` has no environment field (argv,
        // timeout_ms, cwd only): variables go through `env NAME=value` as
        // argv words (allowlisted names, never credentials).
        let mut argv: Vec<String> = Vec::new();
        // Inside the checkout, every command first proves it is still there
        // (the checkout itself runs with an empty root, before the marker).
        let inside = !sandbox.root.is_empty();
        let cwd = sandbox.path(&exec.cwd);
        if inside {
            argv.extend(["sh".into(), "-c".into(), WRAPPER.into(), "sh".into(), cwd.clone()]);
        }
        if !exec.env.is_empty() {
            argv.push("env".into());
            argv.extend(exec.env.iter().map(|(k, v)| format!("{k}={v}")));
        }
        argv.extend(exec.argv.iter().cloned());
        let mut body = json!({ "argv": argv, "timeout_ms": exec.timeout_ms });
        if !inside && !cwd.is_empty() {
            body["cwd"] = json!(cwd);
        }
        let path = format!("/v1/sandbox/{}/exec", encode(&sandbox.external_id));
        let bytes = self
            .send(
                "run",
                http::Method::POST,
                &path,
                body.to_string().into_bytes(),
                exec_deadline(exec.timeout_ms),
                &sandbox.external_id,
            )
            .await?;
        let out = fold_sse(&String::from_utf8_lossy(&bytes), &self.call("run"), exec.max_output_bytes)?;
        if inside && out.exit_code == LOST_EXIT && out.stderr.trim_end() == LOST_LINE {
            return Err(lost("run"));
        }
        Ok(out)
    }

    async fn read_file(&self, sandbox: &SandboxRef, path: &str) -> Result<Vec<u8>, ProviderError> {
        let full = sandbox.path(path);
        let url =
            format!("/v1/sandbox/{}/file/{}", encode(&sandbox.external_id), encode_path(full.trim_start_matches('/')));
        match self.send("read file", http::Method::GET, &url, Vec::new(), 60_000, path).await {
            // A missing file, or a missing checkout: the marker tells which.
            Err(ProviderError::NotFound { .. }) if !sandbox.root.is_empty() => {
                let marker = format!(
                    "/v1/sandbox/{}/file/{}",
                    encode(&sandbox.external_id),
                    encode_path(MARKER.trim_start_matches('/'))
                );
                match self
                    .send("read file", http::Method::GET, &marker, Vec::new(), 60_000, "the checkout marker")
                    .await
                {
                    Err(ProviderError::NotFound { .. }) => Err(lost("read file")),
                    _ => Err(ProviderError::NotFound { provider: NAME, operation: "read file", what: path.to_owned() }),
                }
            }
            other => other,
        }
    }

    async fn write_file(&self, sandbox: &SandboxRef, path: &str, content: &[u8]) -> Result<(), ProviderError> {
        let full = sandbox.path(path);
        let url =
            format!("/v1/sandbox/{}/file/{}", encode(&sandbox.external_id), encode_path(full.trim_start_matches('/')));
        self.send("write file", http::Method::PUT, &url, content.to_vec(), 60_000, path).await?;
        Ok(())
    }

    async fn stop(&self, external_id: &str) -> Result<(), ProviderError> {
        let url = format!("/v1/sandbox/{}", encode(external_id));
        match self.send("destroy sandbox", http::Method::DELETE, &url, Vec::new(), 60_000, external_id).await {
            Ok(_) | Err(ProviderError::NotFound { .. }) => Ok(()),
            Err(other) => Err(other),
        }
    }
}

impl<C> std::fmt::Debug for CloudflareSandbox<C> {
    /// Shows no client state and no credential (envd tokens, keys, headers).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudflareSandbox").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_stream_is_folded_bounded() {
        let secret = Secret::new("k");
        let call = Call { provider: NAME, operation: "run", secret: &secret };
        let sse = "event: stdout\ndata: aGVsbG8K\n\nevent: stderr\ndata: b29wcwo=\n\nevent: exit\ndata: {\"exit_code\":124}\n\n";
        let out = fold_sse(sse, &call, 3).unwrap();
        assert_eq!((out.stdout.as_str(), out.stderr.as_str(), out.truncated_bytes), ("lo\n", "ps\n", 5));
        assert!(out.timed_out && out.exit_code == 124);
        assert!(fold_sse("event: stdout\ndata: aGk=\n\n", &call, 3).is_err(), "no exit event");
    }
}
