//! Routes of the `custom` protocol over `tiny_http`, one thread per request.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_zero_contracts::is_repository_relative_path;
use serde::Deserialize;
use serde_json::{Value, json};
use subtle::ConstantTimeEq;

pub(crate) struct Config {
    pub token: String,
    pub repos: Option<PathBuf>,
}

struct LeaseState {
    dir: tempfile::TempDir,
    writable: bool,
    /// `leaseMs` after creation: past it the lease is released (server-side
    /// expiry, whatever the client does).
    expires_at: Instant,
}

impl LeaseState {
    fn checkout(&self) -> PathBuf {
        self.dir.path().join("checkout")
    }

    /// The lease's `TMPDIR`: beside the checkout, not in it.
    fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// Ends every process the lease's commands left running (background
    /// jobs included), as destroying its VM would.
    fn end(&self) {
        crate::exec::kill_lease_processes(&self.tmp());
    }
}

impl Drop for LeaseState {
    /// Before the directory goes: nothing of the lease outlives it.
    fn drop(&mut self) {
        self.end();
    }
}

/// The lease an idempotency key made and the answer given, once made.
type KeySlot = Arc<Mutex<Option<(String, Value)>>>;

struct State {
    config: Config,
    leases: Mutex<HashMap<String, Arc<LeaseState>>>,
    next: AtomicU64,
    /// Most leases ever held at once (test observability: `GET /v1/stats`).
    peak: AtomicU64,
    /// Commands run (`POST /v1/leases/{id}/run`, one per command), for the same.
    runs: AtomicU64,
    /// Idempotency key -> the lease it created and the answer given; one
    /// slot per key, locked while that lease is being made.
    keys: Mutex<HashMap<String, KeySlot>>,
    /// Every request the server acted on, for `GET /v1/record`: create
    /// bodies (the archive link replaced), each command's argv, cwd and
    /// its whole environment.
    record: Mutex<Vec<Value>>,
}

type Reply = (u16, Value);

fn error(status: u16, code: &str, message: impl Into<String>, field: Option<&str>) -> Reply {
    let mut body = json!({ "error": { "code": code, "message": message.into() } });
    if let Some(field) = field {
        body["error"]["field"] = json!(field);
    }
    (status, body)
}

pub(crate) fn serve(server: tiny_http::Server, config: Config) {
    let state = Arc::new(State {
        config,
        leases: Mutex::new(HashMap::new()),
        next: AtomicU64::new(1),
        peak: AtomicU64::new(0),
        runs: AtomicU64::new(0),
        keys: Mutex::new(HashMap::new()),
        record: Mutex::new(Vec::new()),
    });
    let reaper = Arc::clone(&state);
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let now = Instant::now();
            let expired: Vec<Arc<LeaseState>> = {
                let mut leases = reaper.leases.lock().expect("lease map");
                let ids: Vec<String> =
                    leases.iter().filter(|(_, lease)| lease.expires_at <= now).map(|(id, _)| id.clone()).collect();
                ids.iter().filter_map(|id| leases.remove(id)).collect()
            };
            // Outside the lock: its processes are ended, and dropping the
            // last handle deletes its directory.
            for lease in expired {
                lease.end();
            }
        }
    });
    for request in server.incoming_requests() {
        let state = Arc::clone(&state);
        std::thread::spawn(move || handle(&state, request));
    }
}

fn handle(state: &State, mut request: tiny_http::Request) {
    let authorized = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("authorization"))
        .and_then(|h| h.value.as_str().strip_prefix("Bearer "))
        .is_some_and(|given| bool::from(given.as_bytes().ct_eq(state.config.token.as_bytes())));
    let (status, body) = if authorized {
        let mut raw = Vec::new();
        let _ = request.as_reader().take(64 * 1024 * 1024).read_to_end(&mut raw);
        route(state, request.method().as_str(), request.url(), &raw)
    } else {
        error(401, "unauthorized", "missing or wrong bearer token", None)
    };
    let response = if status == 204 {
        tiny_http::Response::from_data(Vec::new()).with_status_code(204)
    } else {
        tiny_http::Response::from_data(body.to_string().into_bytes())
            .with_status_code(status)
            .with_header(tiny_http::Header::from_bytes("content-type", "application/json").expect("static header"))
    };
    let _ = request.respond(response);
}

fn route(state: &State, method: &str, url: &str, body: &[u8]) -> Reply {
    let path = url.split('?').next().unwrap_or(url);
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        ("POST", ["v1", "leases"]) => create(state, body),
        // Not part of the protocol: how many leases this server held at once.
        ("GET", ["v1", "stats"]) => {
            let active = state.leases.lock().expect("lease map").len();
            (
                200,
                json!({
                    "active": active,
                    "peak": state.peak.load(Ordering::SeqCst),
                    "created": state.next.load(Ordering::SeqCst) - 1,
                    "runs": state.runs.load(Ordering::SeqCst),
                }),
            )
        }
        // Not part of the protocol: what reached the server, for scans.
        ("GET", ["v1", "record"]) => (200, json!({ "requests": *state.record.lock().expect("record") })),
        ("DELETE", ["v1", "leases", id]) => {
            // Release is idempotent: an unknown lease is already released.
            let removed = state.leases.lock().expect("lease map").remove(*id);
            // Its processes end now, even while a `run` on it still holds
            // it; the TempDir is deleted with the last handle.
            if let Some(lease) = removed {
                lease.end();
            }
            (204, Value::Null)
        }
        (_, ["v1", "leases", id, action]) => {
            let Some(lease) = state.leases.lock().expect("lease map").get(*id).cloned() else {
                return error(404, "unknown-lease", format!("lease `{id}` is not held"), None);
            };
            if lease.expires_at <= Instant::now() {
                if let Some(expired) = state.leases.lock().expect("lease map").remove(*id) {
                    expired.end();
                }
                return error(410, "lease-expired", format!("lease `{id}` passed its leaseMs"), None);
            }
            match (method, *action) {
                ("POST", "run") => {
                    state.runs.fetch_add(1, Ordering::SeqCst);
                    record_run(state, id, &lease.tmp(), body);
                    run(&lease, body)
                }
                ("POST", "read") => read(&lease, body),
                ("POST", "modes") => modes(&lease, body),
                ("POST", "write") => write(&lease, body),
                ("GET", "files") => files(&lease),
                ("GET", "diff") => diff(&lease),
                _ => error(404, "not-found", format!("no route {method} {path}"), None),
            }
        }
        _ => error(404, "not-found", format!("no route {method} {path}"), None),
    }
}

fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Reply> {
    serde_json::from_slice(body).map_err(|e| error(400, "invalid-json", e.to_string(), None))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateLease {
    repository: String,
    #[serde(rename = "ref")]
    git_ref: String,
    writable: bool,
    network: String,
    lease_ms: u64,
    #[serde(default)]
    idempotency_key: Option<String>,
    #[serde(default)]
    archive: Option<ArchiveSource>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ArchiveSource {
    url: String,
    #[serde(default)]
    commit: String,
    timeout_ms: u64,
    /// The one header the download carries (the forge's token): sent to
    /// the link's origin only, never recorded or echoed.
    #[serde(default)]
    authorization: Option<Header>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

impl Header {
    /// An RFC 9110 field name (a `token`) and a value of visible ASCII,
    /// spaces and tabs: nothing that could end the header or start another.
    fn is_valid(&self) -> bool {
        let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        !self.name.is_empty()
            && self.name.bytes().all(tchar)
            && !self.value.trim().is_empty()
            && self.value.bytes().all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic())
    }
}

/// The longest a checkout may take when the client names no bound.
const CHECKOUT_MS: u64 = 300_000;

fn record_run(state: &State, lease: &str, tmpdir: &Path, body: &[u8]) {
    let Ok(run) = serde_json::from_slice::<Run>(body) else { return };
    let entry = json!({
        "lease": lease, "argv": run.argv, "cwd": run.cwd, "env": crate::exec::environment(&run.env, tmpdir),
    });
    state.record.lock().expect("record").push(entry);
}

fn valid_repository(repository: &str) -> bool {
    let parts: Vec<&str> = repository.split('/').collect();
    parts.len() == 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && *p != "."
                && *p != ".."
                && !p.starts_with('-')
                && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
}

fn git(dir: &Path, args: &[&str]) -> Result<std::process::Output, Reply> {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| error(500, "git-unavailable", e.to_string(), None))
}

fn create(state: &State, body: &[u8]) -> Reply {
    let request: CreateLease = match parse(body) {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    let mut recorded: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if recorded.pointer("/archive/url").is_some() {
        recorded["archive"]["url"] = json!("[archive link]");
    }
    if let Some(value) = recorded.pointer_mut("/archive/authorization/value") {
        *value = json!("[archive authorization]");
    }
    state.record.lock().expect("record").push(json!({ "create": recorded }));
    let Some(key) = request.idempotency_key.clone().filter(|k| !k.is_empty()) else {
        return create_lease(state, &request);
    };
    let slot = Arc::clone(state.keys.lock().expect("keys").entry(key).or_default());
    let mut made = slot.lock().expect("key slot");
    if let Some((id, reply)) = made.as_ref()
        && state.leases.lock().expect("lease map").contains_key(id)
    {
        // A replay: the lease this key made, not a second one.
        return (200, reply.clone());
    }
    let (status, reply) = create_lease(state, &request);
    if status == 201 {
        *made = Some((reply["leaseId"].as_str().unwrap_or_default().to_owned(), reply.clone()));
    }
    (status, reply)
}

fn create_lease(state: &State, request: &CreateLease) -> Reply {
    if !valid_repository(&request.repository) {
        return error(400, "invalid-repository", "repository must be `owner/name`", Some("repository"));
    }
    if request.git_ref.is_empty() || request.git_ref.starts_with('-') {
        return error(400, "invalid-ref", "ref must be a branch, tag or commit", Some("ref"));
    }
    if !matches!(request.network.as_str(), "none" | "restricted" | "full") {
        return error(400, "invalid-network", "network must be none, restricted or full", Some("network"));
    }
    if request.lease_ms == 0 {
        return error(400, "invalid-lease", "leaseMs must be positive", Some("leaseMs"));
    }
    if let Some(archive) = &request.archive {
        if !(archive.url.starts_with("https://") || archive.url.starts_with("http://")) {
            return error(400, "invalid-archive", "archive.url must be an http(s) URL", Some("archive.url"));
        }
        if archive.timeout_ms == 0 {
            return error(400, "invalid-archive", "archive.timeoutMs must be positive", Some("archive.timeoutMs"));
        }
        if archive.authorization.as_ref().is_some_and(|h| !h.is_valid()) {
            let message = "archive.authorization must be one header: a field name and a value of visible ASCII";
            return error(400, "invalid-archive", message, Some("archive.authorization"));
        }
    }
    let dir = match tempfile::Builder::new().prefix("agent-zero-lease-").tempdir() {
        Ok(dir) => dir,
        Err(e) => return error(500, "tempdir", e.to_string(), None),
    };
    let checkout = dir.path().join("checkout");
    if let Err(e) = std::fs::create_dir(dir.path().join("tmp")) {
        return error(500, "tempdir", e.to_string(), None);
    }
    // The checkout is bounded by the client's bound, and always by the lease.
    let bound = request.archive.as_ref().map_or(CHECKOUT_MS, |a| a.timeout_ms).min(request.lease_ms);
    let deadline = Instant::now() + Duration::from_millis(bound);
    let made = match &request.archive {
        Some(archive) => {
            let header = archive.authorization.as_ref().map(|h| (h.name.as_str(), h.value.as_str()));
            crate::checkout::from_archive(dir.path(), &checkout, &archive.url, header, &archive.commit, deadline)
        }
        None => {
            let source = match &state.config.repos {
                Some(root) => {
                    let local = root.join(&request.repository);
                    if !local.is_dir() {
                        return error(
                            404,
                            "unknown-repository",
                            format!("`{}` is not under --repos", request.repository),
                            Some("repository"),
                        );
                    }
                    local.to_string_lossy().into_owned()
                }
                None => format!("https://github.com/{}.git", request.repository),
            };
            crate::checkout::from_clone(dir.path(), &checkout, &source, &request.git_ref, deadline)
        }
    };
    if let Err(failed) = made {
        let field = if request.archive.is_some() { "archive" } else { "repository" };
        return error(failed.status, failed.code, failed.message, Some(field));
    }
    let commit = git(&checkout, &["rev-parse", "HEAD"])
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let id = format!("lease-{}-{}", state.next.fetch_add(1, Ordering::Relaxed), std::process::id());
    {
        let mut leases = state.leases.lock().expect("lease map");
        let expires_at = Instant::now() + Duration::from_millis(request.lease_ms);
        leases.insert(id.clone(), Arc::new(LeaseState { dir, writable: request.writable, expires_at }));
        state.peak.fetch_max(leases.len() as u64, Ordering::SeqCst);
    }
    (
        201,
        json!({
            "leaseId": id,
            "isolated": false,
            "checkout": {
                "ref": request.git_ref,
                "commit": request.archive.as_ref().map_or(commit.clone(), |a| a.commit.clone()),
                "source": if request.archive.is_some() { "archive" } else { "clone" },
            },
            "leaseMs": request.lease_ms,
            // Local processes: no egress control, whatever was asked.
            "enforced": { "network": "full" },
            "writable": request.writable,
            "network": request.network,
        }),
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Run {
    argv: Vec<String>,
    #[serde(default)]
    cwd: String,
    timeout_ms: u64,
    max_output_bytes: u64,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

/// Resolves a checkout-relative path and proves it stays inside (symlinks included).
fn inside(lease: &LeaseState, relative: &str, field: &str) -> Result<PathBuf, Reply> {
    let root = lease.checkout().canonicalize().map_err(|e| error(500, "checkout", e.to_string(), None))?;
    if relative.is_empty() || relative == "." {
        return Ok(root);
    }
    if !is_repository_relative_path(relative) {
        return Err(error(
            400,
            "path-outside-checkout",
            format!("`{relative}` is not inside the checkout"),
            Some(field),
        ));
    }
    let target = root.join(relative);
    let mut probe = target.clone();
    while !probe.exists() {
        match probe.parent() {
            Some(parent) => probe = parent.to_path_buf(),
            None => break,
        }
    }
    let resolved = probe.canonicalize().map_err(|e| error(400, "path", e.to_string(), Some(field)))?;
    if !resolved.starts_with(&root) {
        return Err(error(
            400,
            "path-outside-checkout",
            format!("`{relative}` resolves outside the checkout"),
            Some(field),
        ));
    }
    Ok(target)
}

fn run(lease: &LeaseState, body: &[u8]) -> Reply {
    let request: Run = match parse(body) {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    if request.argv.is_empty() || request.argv[0].is_empty() {
        return error(400, "invalid-argv", "argv must be a non-empty array with a program", Some("argv"));
    }
    if request.argv.iter().any(|a| a.contains('\0')) {
        return error(400, "invalid-argv", "argv must not contain NUL", Some("argv"));
    }
    if request.timeout_ms == 0 {
        return error(400, "invalid-timeout", "timeoutMs must be positive", Some("timeoutMs"));
    }
    if let Some(name) =
        request.env.keys().find(|k| k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    {
        return error(400, "invalid-env", format!("`{name}` is not an environment name"), Some("env"));
    }
    let cwd = match inside(lease, &request.cwd, "cwd") {
        Ok(cwd) => cwd,
        Err(reply) => return reply,
    };
    let max = usize::try_from(request.max_output_bytes).unwrap_or(usize::MAX);
    let timeout = Duration::from_millis(request.timeout_ms);
    match crate::exec::run(&request.argv, &cwd, &lease.tmp(), timeout, max, &request.env) {
        Ok(o) => (
            200,
            json!({
                "exitCode": o.exit_code, "stdout": o.stdout, "stderr": o.stderr, "durationMs": o.duration_ms,
                "truncatedBytes": o.truncated_bytes, "timedOut": o.timed_out,
            }),
        ),
        // A program that does not exist is a failed command, reported like one.
        Err(e) => (
            200,
            json!({
                "exitCode": 127, "stdout": "", "stderr": format!("cannot run `{}`: {e}", request.argv[0]),
                "durationMs": 0, "truncatedBytes": 0, "timedOut": false,
            }),
        ),
    }
}

#[derive(Deserialize)]
struct FileRequest {
    path: String,
    #[serde(default)]
    content: Option<String>,
}

fn read(lease: &LeaseState, body: &[u8]) -> Reply {
    let request: FileRequest = match parse(body) {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    let target = match inside(lease, &request.path, "path") {
        Ok(t) => t,
        Err(reply) => return reply,
    };
    match std::fs::read(&target) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(content) => (200, json!({ "path": request.path, "content": content })),
            Err(_) => error(422, "not-utf8", format!("`{}` is not UTF-8 text", request.path), Some("path")),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            error(404, "file-not-found", format!("`{}` does not exist", request.path), Some("path"))
        }
        Err(e) => error(500, "read-failed", e.to_string(), Some("path")),
    }
}

#[derive(Deserialize)]
struct ModesRequest {
    paths: Vec<String>,
}

/// The Git mode of each path as the checkout holds it: `120000` for a
/// symlink (never followed), `100755` when the owner's executable bit is
/// set, `100644` for another file, `null` when absent or not a file.
fn modes(lease: &LeaseState, body: &[u8]) -> Reply {
    use std::os::unix::fs::PermissionsExt as _;
    let request: ModesRequest = match parse(body) {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    let mut modes = Vec::with_capacity(request.paths.len());
    for path in &request.paths {
        let target = match inside(lease, path, "paths") {
            Ok(t) => t,
            Err(reply) => return reply,
        };
        modes.push(match target.symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => json!("120000"),
            Ok(m) if m.is_file() && m.permissions().mode() & 0o100 != 0 => json!("100755"),
            Ok(m) if m.is_file() => json!("100644"),
            _ => Value::Null,
        });
    }
    (200, json!({ "modes": modes }))
}

fn write(lease: &LeaseState, body: &[u8]) -> Reply {
    if !lease.writable {
        return error(403, "read-only", "this lease is read-only", None);
    }
    let request: FileRequest = match parse(body) {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    let Some(content) = request.content else {
        return error(400, "missing-content", "content is required", Some("content"));
    };
    let target = match inside(lease, &request.path, "path") {
        Ok(t) => t,
        Err(reply) => return reply,
    };
    if let Some(parent) = target.parent()
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return error(500, "write-failed", e.to_string(), Some("path"));
    }
    // Re-check after creating directories, then refuse to follow a final symlink.
    if let Err(reply) = inside(lease, &request.path, "path") {
        return reply;
    }
    if target.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
        return error(400, "path-outside-checkout", "refusing to write through a symbolic link", Some("path"));
    }
    match std::fs::write(&target, content.as_bytes()) {
        Ok(()) => (200, json!({ "path": request.path, "bytes": content.len() })),
        Err(e) => error(500, "write-failed", e.to_string(), Some("path")),
    }
}

fn files(lease: &LeaseState) -> Reply {
    match git(&lease.checkout(), &["ls-files", "-z", "--cached", "--others", "--exclude-standard"]) {
        Ok(out) if out.status.success() => {
            let files: Vec<String> =
                String::from_utf8_lossy(&out.stdout).split('\0').filter(|s| !s.is_empty()).map(str::to_owned).collect();
            (200, json!({ "files": files }))
        }
        Ok(out) => error(500, "git-failed", String::from_utf8_lossy(&out.stderr).into_owned(), None),
        Err(reply) => reply,
    }
}

fn diff(lease: &LeaseState) -> Reply {
    let checkout = lease.checkout();
    // New files show up in the diff without being staged for real.
    let _ = git(&checkout, &["add", "--intent-to-add", "--all"]);
    match git(&checkout, &["diff", "--no-ext-diff", "--no-color"]) {
        Ok(out) if out.status.success() => (200, json!({ "diff": String::from_utf8_lossy(&out.stdout) })),
        Ok(out) => error(500, "git-failed", String::from_utf8_lossy(&out.stderr).into_owned(), None),
        Err(reply) => reply,
    }
}
