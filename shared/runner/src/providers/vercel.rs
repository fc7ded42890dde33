//! Vercel Sandbox, as the SDK `@vercel/sandbox` 3.1.0 speaks it
//! (`vercel/sandbox` `packages/vercel-sandbox/src/api-client/api-client.ts`,
//! commit `81d725b`): `POST /v3/sandboxes` in the operator's project, then
//! the session API `/v2/sandboxes/sessions/{id}/…` for commands (run with
//! the sandbox-enforced `timeout`, wait, logs, kill), files and stop, and
//! `DELETE /v2/sandboxes/{name}` at teardown.

use agent_zero_contracts::NetworkPolicy;
use agent_zero_ports::{HttpClient, HttpError};
use serde::Deserialize;
use serde_json::json;

use super::http::{Call, Tail, encode, exec_deadline};
use crate::checkout::{CheckoutSource, Provision};
use crate::provider::{
    Exec, ExecOutput, FileMode, ProviderError, Provisioned, SandboxProvider, SandboxRef, baseline, fixed_git,
};
use crate::request::{ProviderKind, SandboxRequest};
use agent_zero_ports::Secret;

const NAME: &str = "vercel";
const ROOT: &str = "/vercel/sandbox";
/// The exit status of a command the sandbox killed with SIGKILL at its
/// `timeout` (the SDK's own tests expect 137).
const KILLED: i32 = 137;

/// Vercel sandboxes (`VERCEL_TOKEN`, `VERCEL_PROJECT_ID`, optional
/// `VERCEL_TEAM_ID`).
pub struct VercelSandbox<C> {
    client: C,
    token: Secret,
    team_id: Option<String>,
    project_id: Option<String>,
    api_url: String,
    restricted_allow: Vec<String>,
}

/// `VERCEL_PROJECT_ID`, validated: the project every sandbox is created in
/// (the SDK always sends one). `None` when unset; an error naming the
/// variable when it is not a project id or name.
pub fn vercel_project(value: Option<&str>) -> Result<Option<String>, String> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else { return Ok(None) };
    let valid = value.len() <= 100 && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if valid {
        Ok(Some(value.to_owned()))
    } else {
        Err("`VERCEL_PROJECT_ID` must be a Vercel project id (`prj_…`) or name: letters, digits, `-`, `_` and `.`, \
             at most 100 characters"
            .into())
    }
}

/// `SandboxAndSessionResponse` (create, get).
#[derive(Deserialize)]
struct SandboxAndSession {
    sandbox: SandboxInfo,
    session: SessionInfo,
}

#[derive(Deserialize)]
struct SandboxInfo {
    name: String,
}

#[derive(Deserialize)]
struct SessionInfo {
    id: String,
    status: String,
}

/// `CommandResponse` / `CommandFinishedResponse`.
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
    #[serde(default)]
    duration_ms: Option<u64>,
}

/// A `LogLine`: `stdout`/`stderr` text, or an `error` object.
#[derive(Deserialize)]
struct LogLine {
    stream: String,
    data: serde_json::Value,
}

/// What the adapter calls a sandbox: `{name}/{session id}` (a name never
/// holds `/`), so teardown can stop the session and delete the sandbox.
fn split_id(external_id: &str) -> (Option<&str>, &str) {
    match external_id.split_once('/') {
        Some((name, session)) => (Some(name), session),
        None => (None, external_id),
    }
}

/// The sandbox name of a lease: what a replayed provision looks up.
fn sandbox_name(lease_id: &str) -> String {
    let clean: String = lease_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .take(52)
        .collect();
    format!("agent-zero-{clean}")
}

impl<C: HttpClient> VercelSandbox<C> {
    /// An adapter acting for `team_id` when given. Sandboxes need a
    /// project: see [`VercelSandbox::with_project`].
    pub fn new(client: C, token: Secret, team_id: Option<String>) -> Self {
        Self {
            client,
            token,
            team_id,
            project_id: None,
            api_url: "https://vercel.com/api".into(),
            restricted_allow: vec!["github.com".into()],
        }
    }

    /// The project sandboxes are created in (`VERCEL_PROJECT_ID`, checked by
    /// [`vercel_project`]); without one, provisioning is refused naming it.
    #[must_use]
    pub fn with_project(mut self, project_id: Option<String>) -> Self {
        self.project_id = project_id;
        self
    }

    /// Overrides the API base URL (tests).
    #[must_use]
    pub fn with_api_url(mut self, api_url: impl Into<String>) -> Self {
        self.api_url = api_url.into();
        self
    }

    /// `{api}{path}?teamId=…&{query}`: the team first, as the SDK sends it.
    fn url(&self, path: &str, query: &[(&str, &str)]) -> String {
        let team = self.team_id.as_deref().map(|team| ("teamId", team));
        let pairs: Vec<String> =
            team.iter().chain(query).map(|(key, value)| format!("{key}={}", encode(value))).collect();
        match pairs.is_empty() {
            true => format!("{}{path}", self.api_url),
            false => format!("{}{path}?{}", self.api_url, pairs.join("&")),
        }
    }

    fn project(&self, operation: &'static str) -> Result<&str, ProviderError> {
        self.project_id.as_deref().ok_or_else(|| ProviderError::Refused {
            provider: NAME,
            operation,
            reason: "`VERCEL_PROJECT_ID` is not set: Vercel creates every sandbox in a project".into(),
        })
    }

    /// Sends one JSON call; `410` (the session or sandbox has stopped) is
    /// `NotFound`, like `404`.
    async fn send(
        &self,
        operation: &'static str,
        method: http::Method,
        url: &str,
        body: Option<serde_json::Value>,
        timeout_ms: u64,
        what: &str,
    ) -> Result<http::Response<Vec<u8>>, ProviderError> {
        let call = self.call(operation);
        let builder = call
            .request(method, url)
            .header("authorization", format!("Bearer {}", self.token.expose()))
            .header("content-type", "application/json");
        let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        match call.send_response(&self.client, builder, body, timeout_ms, what).await {
            Err(ProviderError::Status { status: 410, .. }) => {
                Err(ProviderError::NotFound { provider: NAME, operation, what: format!("{what} (gone)") })
            }
            other => other,
        }
    }

    fn call(&self, operation: &'static str) -> Call<'_> {
        Call { provider: NAME, operation, secret: &self.token }
    }

    /// The running sandbox a previous provision of this lease made, if any;
    /// a stopped one is deleted so the name can be taken again.
    async fn existing(&self, name: &str, project: &str) -> Result<Option<String>, ProviderError> {
        let url = self.url(&format!("/v2/sandboxes/{}", encode(name)), &[("projectId", project), ("resume", "false")]);
        match self.send("find sandbox", http::Method::GET, &url, None, 30_000, name).await {
            Ok(response) => {
                let found: SandboxAndSession = self.call("find sandbox").json(response.body())?;
                if matches!(found.session.status.as_str(), "pending" | "running") {
                    return Ok(Some(format!("{}/{}", found.sandbox.name, found.session.id)));
                }
                self.delete(name, project).await?;
                Ok(None)
            }
            Err(ProviderError::NotFound { .. }) => Ok(None),
            Err(other) => Err(other),
        }
    }

    async fn delete(&self, name: &str, project: &str) -> Result<(), ProviderError> {
        let url = self.url(&format!("/v2/sandboxes/{}", encode(name)), &[("projectId", project)]);
        match self.send("delete sandbox", http::Method::DELETE, &url, None, 60_000, name).await {
            Ok(_) | Err(ProviderError::NotFound { .. }) => Ok(()),
            Err(other) => Err(other),
        }
    }

    async fn create(
        &self,
        request: &SandboxRequest,
        provision: &Provision<'_>,
        name: &str,
        project: &str,
    ) -> Result<String, ProviderError> {
        let network = match request.network {
            NetworkPolicy::None => json!({ "mode": "deny-all" }),
            NetworkPolicy::Restricted => json!({ "allow": self.restricted_allow }),
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
        // No `runtime`: the SDK sends this body to `/v3/sandboxes`.
        let body = json!({
            "projectId": project,
            "name": name,
            "ports": [],
            "source": source,
            "timeout": request.lease_ms,
            "networkPolicy": network,
            "persistent": false,
            "tags": { "agentZeroLease": provision.lease_id, "agentZeroTask": request.task_id },
        });
        let url = self.url("/v3/sandboxes", &[]);
        let response =
            self.send("create sandbox", http::Method::POST, &url, Some(body), 300_000, &request.repository).await?;
        let created: SandboxAndSession = self.call("create sandbox").json(response.body())?;
        Ok(format!("{}/{}", created.sandbox.name, created.session.id))
    }

    fn session_url(&self, sandbox: &str, rest: &str, query: &[(&str, &str)]) -> String {
        let (_, session) = split_id(sandbox);
        self.url(&format!("/v2/sandboxes/sessions/{}{rest}", encode(session)), query)
    }

    /// The command's logs, each stream bounded to `max` bytes.
    async fn logs(&self, sandbox: &str, command: &str, max: u64) -> Result<(String, String, u64), ProviderError> {
        let url = self.session_url(sandbox, &format!("/cmd/{}/logs", encode(command)), &[]);
        let response = self.send("logs", http::Method::GET, &url, None, 60_000, command).await?;
        let (mut stdout, mut stderr) = (Tail::new(max), Tail::new(max));
        for line in response.body().split(|b| *b == b'\n').filter(|l| !l.trim_ascii().is_empty()) {
            let entry: LogLine = self.call("logs").json(line)?;
            match (entry.stream.as_str(), entry.data.as_str()) {
                ("stdout", Some(data)) => stdout.push(data.as_bytes()),
                ("stderr", Some(data)) => stderr.push(data.as_bytes()),
                _ => {
                    let reason = format!("log stream error: {}", entry.data["message"].as_str().unwrap_or("unknown"));
                    return Err(self.call("logs").protocol(reason));
                }
            }
        }
        let ((stdout, a), (stderr, b)) = (stdout.finish(), stderr.finish());
        Ok((stdout, stderr, a + b))
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
        if let CheckoutSource::Archive { authorization: Some(_), .. } = provision.source {
            // Vercel fetches the tarball itself, from a link alone.
            return Err(ProviderError::Refused {
                provider: NAME,
                operation: "create sandbox",
                reason: "Vercel's tarball source takes a link only; this forge's archive needs a token: \
                         use another sandbox provider"
                    .into(),
            });
        }
        let project = self.project("create sandbox")?;
        let name = sandbox_name(provision.lease_id);
        let external_id = match self.existing(&name, project).await? {
            Some(found) => found,
            None => self.create(request, provision, &name, project).await?,
        };
        if let CheckoutSource::Archive { commit, .. } = provision.source {
            // An unpacked tarball has no history: commit it as the baseline.
            let sandbox = SandboxRef { external_id: external_id.clone(), root: String::new() };
            for (operation, argv) in baseline(ROOT, commit) {
                let exec = Exec { argv, timeout_ms: provision.checkout_timeout_ms, ..fixed_git(&[]) };
                let outcome = self.exec(&sandbox, &exec).await.and_then(|out| match out.exit_code {
                    0 => Ok(()),
                    code => Err(self.call(operation).protocol(format!("git exited {code}"))),
                });
                if let Err(error) = outcome {
                    let _ = self.stop(&external_id).await;
                    return Err(error);
                }
            }
        }
        Ok(Provisioned { external_id, root: ROOT.into(), isolated: true, network: request.network })
    }

    async fn exec(&self, sandbox: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError> {
        let id = &sandbox.external_id;
        // The sandbox itself kills the command with SIGKILL at `timeout`.
        let body = json!({
            "command": exec.argv[0],
            "args": exec.argv[1..],
            "cwd": sandbox.path(&exec.cwd),
            "env": exec.env,
            "sudo": false,
            "timeout": exec.timeout_ms,
        });
        let url = self.session_url(id, "/cmd", &[]);
        let response = self.send("run", http::Method::POST, &url, Some(body), 60_000, id).await?;
        let started: CommandEnvelope = self.call("run").json(response.body())?;
        let cmd = started.command.id;
        let url = self.session_url(id, &format!("/cmd/{}", encode(&cmd)), &[("wait", "true")]);
        let waited = self.send("wait", http::Method::GET, &url, None, exec_deadline(exec.timeout_ms), &cmd).await;
        let (exit_code, duration_ms, timed_out) = match waited {
            Ok(response) => {
                let finished = self.call("wait").json::<CommandEnvelope>(response.body())?.command;
                let exit = finished.exit_code.unwrap_or(-1);
                let duration = finished.duration_ms.unwrap_or(0);
                // 137 at (or past) the deadline is the sandbox's own kill;
                // a 137 earlier is the command's (an OOM kill, say).
                let timed_out = exit == KILLED && finished.duration_ms.is_none_or(|d| d >= exec.timeout_ms);
                (exit, duration, timed_out)
            }
            Err(ProviderError::Http { source: HttpError::Timeout(_), .. }) => {
                // No answer well past the deadline: kill it ourselves.
                let url = self.session_url(id, &format!("/cmd/{}/kill", encode(&cmd)), &[]);
                let kill = json!({ "signal": 9 });
                let _ = self.send("kill", http::Method::POST, &url, Some(kill), 30_000, &cmd).await;
                (-1, exec.timeout_ms, true)
            }
            Err(other) => return Err(other),
        };
        let (stdout, stderr, truncated_bytes) = match self.logs(id, &cmd, exec.max_output_bytes).await {
            Ok(logs) => logs,
            Err(_) if timed_out => (String::new(), String::new(), 0),
            Err(other) => return Err(other),
        };
        Ok(ExecOutput { exit_code, stdout, stderr, timed_out, duration_ms, truncated_bytes })
    }

    async fn read_file(&self, sandbox: &SandboxRef, path: &str) -> Result<Vec<u8>, ProviderError> {
        let url = self.session_url(&sandbox.external_id, "/fs/read", &[]);
        let body = json!({ "path": sandbox.path(path) });
        let response = self.send("read file", http::Method::POST, &url, Some(body), 60_000, path).await?;
        // A file comes as an octet stream; anything else (a JSON error with
        // a 2xx status) is an error, never file content.
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
        if !content_type.contains("application/octet-stream") {
            let shown = if content_type.is_empty() { "(none)" } else { content_type };
            let text = String::from_utf8_lossy(response.body()).chars().take(300).collect::<String>();
            return Err(self.call("read file").protocol(format!("content-type {shown}, not a file: {text}")));
        }
        Ok(response.into_body())
    }

    async fn write_file(&self, sandbox: &SandboxRef, path: &str, content: &[u8]) -> Result<(), ProviderError> {
        // The tarball's header mode is what the file gets: an executable
        // file the run rewrites stays executable.
        let executable = self.file_modes(sandbox, &[path.to_owned()]).await? == [Some(FileMode::Executable)];
        let call = self.call("write file");
        let archive = gzip_stored(&tar_one(path, content, if executable { 0o755 } else { 0o644 }));
        let builder = call
            .request(http::Method::POST, &self.session_url(&sandbox.external_id, "/fs/write", &[]))
            .header("authorization", format!("Bearer {}", self.token.expose()))
            .header("content-type", "application/gzip")
            .header("x-cwd", &sandbox.root);
        call.send(&self.client, builder, archive, 60_000, path).await?;
        Ok(())
    }

    async fn stop(&self, external_id: &str) -> Result<(), ProviderError> {
        let url = self.session_url(external_id, "/stop", &[]);
        match self.send("stop", http::Method::POST, &url, None, 60_000, external_id).await {
            Ok(_) | Err(ProviderError::NotFound { .. }) => {}
            Err(other) => return Err(other),
        }
        match (split_id(external_id).0, self.project_id.as_deref()) {
            (Some(name), Some(project)) => self.delete(name, project).await,
            _ => Ok(()),
        }
    }
}

/// A POSIX ustar archive holding one regular file with permission `mode`.
pub(crate) fn tar_one(path: &str, content: &[u8], mode: u32) -> Vec<u8> {
    let mut header = [0u8; 512];
    let (prefix, name) = if path.len() > 100 { path.rsplit_once('/').unwrap_or(("", path)) } else { ("", path) };
    header[..name.len().min(100)].copy_from_slice(&name.as_bytes()[..name.len().min(100)]);
    header[100..107].copy_from_slice(format!("{:07o}", mode & 0o7777).as_bytes());
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
    fn project_ids_are_checked_naming_the_variable() {
        assert_eq!(vercel_project(None), Ok(None));
        assert_eq!(vercel_project(Some("  ")), Ok(None));
        assert_eq!(vercel_project(Some("prj_AbC123")), Ok(Some("prj_AbC123".into())));
        let error = vercel_project(Some("prj 1; rm")).unwrap_err();
        assert!(error.contains("`VERCEL_PROJECT_ID`") && !error.contains("rm"), "{error}");
        assert_eq!(sandbox_name("lease-Task_7/x"), "agent-zero-lease-task-7-x");
        assert_eq!(split_id("agent-zero-l/sess_1"), (Some("agent-zero-l"), "sess_1"));
    }

    #[test]
    fn crc_and_archive_shape() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        let tar = tar_one("src/a.txt", b"hello", 0o644);
        assert_eq!(&tar_one("run.sh", b"", 0o755)[100..107], b"0000755");
        assert_eq!(tar.len(), 512 + 512 + 1024);
        assert_eq!(&tar[..9], b"src/a.txt");
        let gz = gzip_stored(&tar);
        assert_eq!(&gz[..2], &[0x1f, 0x8b]);
        assert_eq!(gz.len(), 10 + 5 + tar.len() + 8);
    }
}
