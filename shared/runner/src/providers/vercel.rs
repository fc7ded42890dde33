//! Vercel Sandbox REST API (`api.vercel.com/v1/sandboxes`): create from a
//! git source, run a command (`/cmd`, then wait and logs), read a file,
//! write files as a gzipped tarball, stop.

use agent_zero_contracts::NetworkPolicy;
use agent_zero_ports::{HttpClient, HttpError};
use serde::Deserialize;
use serde_json::json;

use super::http::{Call, encode, exec_deadline};
use crate::checkout::{CheckoutSource, Provision};
use crate::provider::{
    Exec, ExecOutput, ProviderError, Provisioned, SandboxProvider, SandboxRef, Secret, baseline, fixed_git,
};
use crate::request::{ProviderKind, SandboxRequest};

const NAME: &str = "vercel";
const ROOT: &str = "/vercel/sandbox";

/// Vercel sandboxes (`VERCEL_TOKEN`, optional team id).
pub struct VercelSandbox<C> {
    client: C,
    token: Secret,
    team_id: Option<String>,
    api_url: String,
    restricted_allow: Vec<String>,
}

#[derive(Deserialize)]
struct Created {
    sandbox: Id,
}

#[derive(Deserialize)]
struct Id {
    id: String,
}

#[derive(Deserialize)]
struct CommandEnvelope {
    command: CommandInfo,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommandInfo {
    id: String,
    #[serde(default)]
    exit_code: Option<i32>,
}

impl<C: HttpClient> VercelSandbox<C> {
    /// An adapter acting for `team_id` when given.
    pub fn new(client: C, token: Secret, team_id: Option<String>) -> Self {
        Self {
            client,
            token,
            team_id,
            api_url: "https://api.vercel.com".into(),
            restricted_allow: vec!["github.com".into()],
        }
    }

    /// Overrides the API base URL (tests).
    #[must_use]
    pub fn with_api_url(mut self, api_url: impl Into<String>) -> Self {
        self.api_url = api_url.into();
        self
    }

    fn url(&self, path: &str) -> String {
        match &self.team_id {
            Some(team) => {
                format!("{}{path}{}teamId={}", self.api_url, if path.contains('?') { '&' } else { '?' }, encode(team))
            }
            None => format!("{}{path}", self.api_url),
        }
    }

    #[allow(clippy::too_many_arguments)] // one request's fields, named at each call site
    async fn send(
        &self,
        operation: &'static str,
        method: http::Method,
        path: &str,
        body: Vec<u8>,
        content_type: &str,
        timeout_ms: u64,
        what: &str,
    ) -> Result<Vec<u8>, ProviderError> {
        let call = Call { provider: NAME, operation, secret: &self.token };
        let builder = call
            .request(method, &self.url(path))
            .header("authorization", format!("Bearer {}", self.token.expose()))
            .header("content-type", content_type);
        Ok(call.send(&self.client, builder, body, timeout_ms, what).await?.1)
    }

    fn call(&self, operation: &'static str) -> Call<'_> {
        Call { provider: NAME, operation, secret: &self.token }
    }
}

impl<C: HttpClient> SandboxProvider for VercelSandbox<C> {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Vercel
    }

    async fn provision(
        &self,
        request: &SandboxRequest,
        provision: &Provision<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let network = match request.network {
            NetworkPolicy::None => json!({ "mode": "deny-all" }),
            NetworkPolicy::Restricted => json!({ "mode": "custom", "allowedDomains": self.restricted_allow }),
            NetworkPolicy::Full => json!({ "mode": "allow-all" }),
        };
        // Vercel fetches the source itself: the archive link (its own
        // short-lived token) in the create body, never in a command.
        let source = match provision.source {
            CheckoutSource::Archive { url, .. } => json!({ "type": "tarball", "url": url.expose() }),
            CheckoutSource::PublicClone => json!({
                "type": "git",
                "url": format!("https://github.com/{}.git", request.repository),
                "revision": request.git_ref,
                "depth": 1,
            }),
        };
        let body = json!({
            "source": source,
            "timeout": request.lease_ms,
            "runtime": "node22",
            "networkPolicy": network,
        });
        let bytes = self
            .send(
                "create sandbox",
                http::Method::POST,
                "/v1/sandboxes",
                body.to_string().into_bytes(),
                "application/json",
                300_000,
                &request.repository,
            )
            .await?;
        let created: Created = self.call("create sandbox").json(&bytes)?;
        if let CheckoutSource::Archive { commit, .. } = provision.source {
            // An unpacked tarball has no history: commit it as the baseline.
            let sandbox = SandboxRef { external_id: created.sandbox.id.clone(), root: String::new() };
            for (operation, argv) in baseline(ROOT, commit) {
                let exec = Exec { argv, timeout_ms: provision.checkout_timeout_ms, ..fixed_git(&[]) };
                let outcome = self.exec(&sandbox, &exec).await.and_then(|out| match out.exit_code {
                    0 => Ok(()),
                    code => Err(self.call(operation).protocol(format!("git exited {code}"))),
                });
                if let Err(error) = outcome {
                    let _ = self.stop(&created.sandbox.id).await;
                    return Err(error);
                }
            }
        }
        Ok(Provisioned { external_id: created.sandbox.id, root: ROOT.into(), isolated: true, network: request.network })
    }

    async fn exec(&self, sandbox: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError> {
        let id = encode(&sandbox.external_id);
        let body =
            json!({ "command": exec.argv[0], "args": exec.argv[1..], "cwd": sandbox.path(&exec.cwd), "env": exec.env });
        let bytes = self
            .send(
                "run",
                http::Method::POST,
                &format!("/v1/sandboxes/{id}/cmd"),
                body.to_string().into_bytes(),
                "application/json",
                60_000,
                &sandbox.external_id,
            )
            .await?;
        let started: CommandEnvelope = self.call("run").json(&bytes)?;
        let cmd = encode(&started.command.id);
        let waited = self
            .send(
                "wait",
                http::Method::GET,
                &format!("/v1/sandboxes/{id}/cmd/{cmd}?wait=true"),
                Vec::new(),
                "application/json",
                exec_deadline(exec.timeout_ms),
                &started.command.id,
            )
            .await;
        let (exit_code, timed_out) = match waited {
            Ok(bytes) => (self.call("wait").json::<CommandEnvelope>(&bytes)?.command.exit_code.unwrap_or(-1), false),
            Err(ProviderError::Http { source: HttpError::Timeout(_), .. }) => {
                let kill = json!({ "signal": 9 }).to_string().into_bytes();
                let _ = self
                    .send(
                        "kill",
                        http::Method::POST,
                        &format!("/v1/sandboxes/{id}/cmd/{cmd}/kill"),
                        kill,
                        "application/json",
                        30_000,
                        &started.command.id,
                    )
                    .await;
                (-1, true)
            }
            Err(other) => return Err(other),
        };
        let logs = self
            .send(
                "logs",
                http::Method::GET,
                &format!("/v1/sandboxes/{id}/cmd/{cmd}/logs"),
                Vec::new(),
                "application/json",
                60_000,
                &started.command.id,
            )
            .await?;
        let (mut stdout, mut stderr) = (String::new(), String::new());
        for line in String::from_utf8_lossy(&logs).lines().filter(|l| !l.trim().is_empty()) {
            let entry: serde_json::Value =
                serde_json::from_str(line).map_err(|e| self.call("logs").protocol(e.to_string()))?;
            let data = entry["data"].as_str().unwrap_or_default();
            match entry["stream"].as_str() {
                Some("stderr") => stderr.push_str(data),
                _ => stdout.push_str(data),
            }
        }
        Ok(ExecOutput { exit_code, stdout, stderr, timed_out, duration_ms: 0, truncated_bytes: 0 })
    }

    async fn read_file(&self, sandbox: &SandboxRef, path: &str) -> Result<Vec<u8>, ProviderError> {
        let body = json!({ "path": sandbox.path(path) }).to_string().into_bytes();
        let url = format!("/v1/sandboxes/{}/fs/read", encode(&sandbox.external_id));
        self.send("read file", http::Method::POST, &url, body, "application/json", 60_000, path).await
    }

    async fn write_file(&self, sandbox: &SandboxRef, path: &str, content: &[u8]) -> Result<(), ProviderError> {
        let call = self.call("write file");
        let archive = gzip_stored(&tar_one(path, content));
        let builder = call
            .request(http::Method::POST, &self.url(&format!("/v1/sandboxes/{}/fs/write", encode(&sandbox.external_id))))
            .header("authorization", format!("Bearer {}", self.token.expose()))
            .header("content-type", "application/gzip")
            .header("x-cwd", &sandbox.root);
        call.send(&self.client, builder, archive, 60_000, path).await?;
        Ok(())
    }

    async fn stop(&self, external_id: &str) -> Result<(), ProviderError> {
        let url = format!("/v1/sandboxes/{}/stop", encode(external_id));
        match self.send("stop", http::Method::POST, &url, Vec::new(), "application/json", 60_000, external_id).await {
            Ok(_) | Err(ProviderError::NotFound { .. }) => Ok(()),
            Err(other) => Err(other),
        }
    }
}

/// A POSIX ustar archive holding one regular file.
pub(crate) fn tar_one(path: &str, content: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    let (prefix, name) = if path.len() > 100 { path.rsplit_once('/').unwrap_or(("", path)) } else { ("", path) };
    header[..name.len().min(100)].copy_from_slice(&name.as_bytes()[..name.len().min(100)]);
    header[100..107].copy_from_slice(b"0000644");
    header[108..115].copy_from_slice(b"0000000");
    header[116..123].copy_from_slice(b"0000000");
    header[124..135].copy_from_slice(format!("{:011o}", content.len()).as_bytes());
    header[136..147].copy_from_slice(b"00000000000");
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[345..345 + prefix.len().min(155)].copy_from_slice(&prefix.as_bytes()[..prefix.len().min(155)]);
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut out = header.to_vec();
    out.extend_from_slice(content);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// gzip with stored (uncompressed) deflate blocks: valid gzip, no codec needed.
pub(crate) fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let mut chunks = data.chunks(65_535).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

impl<C> std::fmt::Debug for VercelSandbox<C> {
    /// Shows no client state and no credential (envd tokens, keys, headers).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VercelSandbox").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_and_archive_shape() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        let tar = tar_one("src/a.txt", b"hello");
        assert_eq!(tar.len(), 512 + 512 + 1024);
        assert_eq!(&tar[..9], b"src/a.txt");
        let gz = gzip_stored(&tar);
        assert_eq!(&gz[..2], &[0x1f, 0x8b]);
        assert_eq!(gz.len(), 10 + 5 + tar.len() + 8);
    }
}
