//! Starting and stopping the two runtimes.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which runtime serves the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// Cloudflare's workerd through `wrangler dev`.
    Workerd,
    /// The Spin component in `agent-zero-spin-host`.
    Spin,
}

impl Runtime {
    /// Both runtimes, in the order tests visit them.
    pub const ALL: [Self; 2] = [Self::Workerd, Self::Spin];

    /// Short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Workerd => "workerd",
            Self::Spin => "spin",
        }
    }
}

/// How to start a server.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Operator variables (upper-case names, as in wrangler vars).
    pub vars: Vec<(String, String)>,
    /// Start without the KV binding / the Spin store (its SQLite database and
    /// key-value store): a broken deployment.
    pub without_kv: bool,
    /// Reuse this state directory (KV persists across restarts).
    pub state_dir: Option<PathBuf>,
    /// workerd only: this entry module as wrangler's `main` instead of the
    /// built `functions/cloudflare/build/index.js` (a test wrapper around it).
    pub entry: Option<PathBuf>,
    /// Spin only: end every invocation this many seconds after it started,
    /// as a hosted Spin does (`--wall-clock-secs`).
    pub wall_clock_secs: Option<u64>,
}

/// In a variable's value, the server's own base URL (`http://127.0.0.1:PORT`).
pub const BASE_URL: &str = "{base_url}";

/// How a start ended.
enum Ready {
    Answering,
    AddressInUse,
    /// Why: the process exited, or the wait ran out.
    Failed(String),
}

/// A running runtime; killed on drop.
#[derive(Debug)]
pub struct Server {
    pub runtime: Runtime,
    pub base_url: String,
    pub state_dir: PathBuf,
    child: Child,
    /// workerd: the platform's cron, as [`Cron`] runs it.
    cron: Option<Cron>,
    _temp: tempfile::TempDir,
}

/// A workerd server's cron trigger, as Cloudflare runs `wrangler.toml`'s
/// (every 10 minutes there): the front worker's `scheduled` handler every
/// [`Cron::PERIOD`], through wrangler dev's `--test-scheduled` route, until
/// the server stops. Without it a tick whose queue message is lost would
/// wait forever on workerd, where the platform's sweep re-drives it (the
/// Spin host runs its `--cron` alike).
#[derive(Debug)]
struct Cron {
    stop: std::sync::mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Cron {
    /// Short enough that a case waiting on a re-driven tick waits seconds.
    const PERIOD: Duration = Duration::from_secs(3);

    fn start(base_url: &str) -> Self {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let url = format!("{base_url}/__scheduled?cron=*%2F10+*+*+*+*");
        let thread = std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(30)))
                .build()
                .into();
            // Each period ends early only when the server stops.
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(Self::PERIOD) {
                // A sweep that fails is the next one's to redo, as on the platform.
                let _ = agent.get(&url).call();
            }
        });
        Self { stop, thread: Some(thread) }
    }
}

impl Drop for Cron {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The repository root (parent of `tests/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

impl Server {
    /// Starts `runtime` with `options` and waits until it answers.
    ///
    /// The ports are chosen free and released before the runtime binds
    /// them, so another process may take one in between (wrangler's own
    /// helpers bind ephemeral loopback ports as it starts). A start whose
    /// log reports the address in use is stopped and retried on fresh ports;
    /// any other failure is reported at once.
    pub fn start(runtime: Runtime, options: &ServerOptions) -> Result<Self, String> {
        const ATTEMPTS: usize = 3;
        let temp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let state_dir = options.state_dir.clone().unwrap_or_else(|| temp.path().join("state"));
        std::fs::create_dir_all(&state_dir).map_err(|e| e.to_string())?;
        let root = repo_root();
        let dir = temp.path().to_path_buf();
        let spawn = |port: u16| -> Result<Child, String> {
            let log = std::fs::File::create(dir.join("server.log")).map_err(|e| e.to_string())?;
            // A value may name the server's own URL (`{base_url}`: the
            // deployment's public URL), known only once its port is chosen.
            let base_url = format!("http://127.0.0.1:{port}");
            let vars = options.vars.iter().map(|(k, v)| (k.clone(), v.replace(BASE_URL, &base_url))).collect();
            let options = &ServerOptions { vars, ..options.clone() };
            let mut command = match runtime {
                Runtime::Workerd => workerd_command(&root, &dir, &state_dir, port, options)?,
                Runtime::Spin => spin_command(&root, &dir, &state_dir, port, options)?,
            };
            command
                .stdin(Stdio::null())
                .stdout(log.try_clone().map_err(|e| e.to_string())?)
                .stderr(log)
                .process_group(0);
            command.spawn().map_err(|e| format!("starting {}: {e}", runtime.name()))
        };
        let port = free_port();
        let child = spawn(port)?;
        let mut server = Self {
            runtime,
            base_url: format!("http://127.0.0.1:{port}"),
            state_dir: state_dir.clone(),
            child,
            cron: None,
            _temp: temp,
        };
        for attempt in 1..=ATTEMPTS {
            let why = match server.wait_ready(Duration::from_secs(90)) {
                Ready::Answering => {
                    if runtime == Runtime::Workerd {
                        server.cron = Some(Cron::start(&server.base_url));
                    }
                    return Ok(server);
                }
                Ready::AddressInUse if attempt < ATTEMPTS => {
                    server.stop();
                    let port = free_port();
                    server.child = spawn(port)?;
                    server.base_url = format!("http://127.0.0.1:{port}");
                    continue;
                }
                Ready::AddressInUse => "its port was taken on every attempt".to_owned(),
                Ready::Failed(why) => why,
            };
            return Err(format!(
                "{} did not answer: {why} (attempt {attempt} of {ATTEMPTS}); log:\n{}",
                runtime.name(),
                server.log()
            ));
        }
        unreachable!("the last attempt returns")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._temp.path().join("server.log")).unwrap_or_default()
    }

    /// The wall time (ms) of every invocation that ran ticks so far, as the
    /// runtime logged it: each Queues invocation of the tick worker
    /// (`entry-ticks.mjs`), each invocation of a Spin component when the
    /// host enforces a wall clock (`--wall-clock-secs`).
    pub fn invocation_wall_ms(&self) -> Vec<u64> {
        let tag = match self.runtime {
            Runtime::Workerd => r#""agentZero":"queue-invocation""#,
            Runtime::Spin => r#""agentZero":"spin-invocation""#,
        };
        self.log()
            .lines()
            .filter(|line| line.contains(tag))
            .filter_map(|line| {
                let json = &line[line.find('{')?..=line.rfind('}')?];
                serde_json::from_str::<serde_json::Value>(json).ok()?["wallMs"].as_u64()
            })
            .collect()
    }

    /// Every line the app printed so far (`agent_zero_app::log_line`, and
    /// the entries' own lines in `functions/cloudflare/*.mjs`), parsed.
    ///
    /// The log holds the runtime's own output too (wrangler's banners and
    /// request lines, the Spin host's lines), which is not ours. Ours are
    /// told apart by their marker: every line the app prints is one JSON
    /// object whose first key is `agent_zero` (serde_json writes keys in
    /// order, the entries write it first), so a line is ours when it holds
    /// `{"agent_zero":`, and then everything from there to the end of the
    /// line must be that object. Err names each line of ours that does not
    /// parse or lacks a field: `request_id`, `step`, `outcome`,
    /// `duration_ms`, and for a tick `task_id` and `seq`.
    pub fn app_log_lines(&self) -> Result<Vec<serde_json::Value>, String> {
        const MARKER: &str = r#"{"agent_zero":"#;
        let log = self.log();
        let mut lines = Vec::new();
        let mut wrong = Vec::new();
        for line in log.lines() {
            let Some(start) = line.find(MARKER) else { continue };
            let json = line[start..].trim_end();
            let Ok(value) = serde_json::from_str::<serde_json::Value>(json) else {
                wrong.push(format!("not one JSON object: {line}"));
                continue;
            };
            let has = |field: &str| !value[field].is_null();
            let mut missing: Vec<&str> =
                ["request_id", "step", "outcome", "duration_ms"].into_iter().filter(|f| !has(f)).collect();
            if value["agent_zero"] == "tick" {
                missing.extend(["task_id", "seq"].into_iter().filter(|f| !has(f)));
            }
            if !value["request_id"].is_string() || !value["duration_ms"].is_u64() {
                missing.push("request_id (text) and duration_ms (ms)");
            }
            if !missing.is_empty() {
                wrong.push(format!("missing {missing:?}: {line}"));
            }
            lines.push(value);
        }
        if wrong.is_empty() { Ok(lines) } else { Err(wrong.join("\n")) }
    }

    /// [`Self::app_log_lines`] after a run: every line of ours is JSON with
    /// its ids, there is one per request at least, and (when `ticked`) one
    /// per tick; with [`Self::files_containing`] over the same log, no line
    /// carries a configured secret.
    pub fn assert_app_log(&self, ticked: bool) {
        let lines = self.app_log_lines().unwrap_or_else(|wrong| panic!("log lines of the app:\n{wrong}"));
        assert!(lines.iter().any(|l| l["agent_zero"] == "request"), "no request line in the log:\n{}", self.log());
        if ticked {
            assert!(lines.iter().any(|l| l["agent_zero"] == "tick"), "no tick line in the log:\n{}", self.log());
        }
    }

    /// Polls the health route until it answers, the process exits, the log
    /// reports a port taken, or `timeout` passes.
    fn wait_ready(&mut self, timeout: Duration) -> Ready {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.log().contains("Address already in use") {
                return Ready::AddressInUse;
            }
            if !matches!(self.child.try_wait(), Ok(None)) {
                return Ready::Failed("the process exited".to_owned());
            }
            // Bounded: whatever holds a taken port may accept the request
            // and never answer it. Only the product's own health answer
            // counts: a loopback fake of another test process that took
            // the port between `free_port` and the server's bind answers
            // 404 (then the server's log says the address is in use).
            let health = crate::request_within(Duration::from_secs(10), "GET", &self.url("/api/v1/health"), &[], b"");
            if health.is_ok_and(|reply| is_product_health(&reply)) {
                return Ready::Answering;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ready::Failed(format!("no answer within {timeout:?}"))
    }

    /// Files of the persisted state (KV, Durable Object storage) and the
    /// server's log that contain any of `secrets`: must be empty.
    pub fn files_containing(&self, secrets: &[&str]) -> Vec<String> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() { walk(&path, out) } else { out.push(path) }
            }
        }
        let mut files = Vec::new();
        walk(&self.state_dir, &mut files);
        files.push(self._temp.path().join("server.log"));
        let mut hits = Vec::new();
        for file in files {
            let Ok(bytes) = std::fs::read(&file) else { continue };
            for secret in secrets {
                if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
                    hits.push(format!("{} contains `{secret}`", file.display()));
                }
            }
        }
        hits
    }

    /// Breaks the runtime's key-value storage underneath it, as a failing
    /// backend would: what holds the store's values (workerd: the KV
    /// namespace's blob directory under `--persist-to`, and the `TaskStore`
    /// Durable Objects' directory and SQLite files, which hold every
    /// `task/{id}/` key; Spin host: the `default` store's directory) is
    /// made immutable (`chattr +i`, which binds root too), so every write
    /// fails inside the real storage implementation while stored values
    /// stay readable. Undone by [`StorageFault::repair`] (or on drop).
    /// Needs a filesystem with attributes (ext4, xfs, btrfs): keep such
    /// state under `target/`.
    pub fn break_storage(&self) -> StorageFault {
        let children = |dir: PathBuf| std::fs::read_dir(dir).into_iter().flatten().flatten().map(|entry| entry.path());
        let values: Vec<PathBuf> = match self.runtime {
            Runtime::Workerd => {
                let blobs = children(self.state_dir.join("v3/kv"))
                    .map(|path| path.join("blobs"))
                    .find(|path| path.is_dir())
                    .expect("workerd has persisted a KV namespace");
                let objects = children(self.state_dir.join("v3/do"))
                    .filter(|path| path.is_dir() && path.to_string_lossy().ends_with("-TaskStore"));
                let mut values = vec![blobs];
                for dir in objects {
                    // Not the `-shm` index: SQLite maps it into memory, and
                    // a mapping it cannot grow is a crash, not an error.
                    values.extend(children(dir.clone()).filter(|path| !path.to_string_lossy().ends_with("-shm")));
                    values.push(dir);
                }
                values
            }
            // The SQLite database the components keep their state in (read
            // only once immutable: SQLite then opens it read-only), its
            // directory (no journal can be created), and the key-value
            // store's directory.
            Runtime::Spin => [self.spin_database(), self.state_dir.join("default"), self.state_dir.clone()]
                .into_iter()
                .filter(|path| path.exists())
                .collect(),
        };
        let status = Command::new("chattr").arg("+i").args(&values).status().expect("chattr (e2fsprogs)");
        assert!(status.success(), "chattr +i {values:?} failed: the state must be on ext4/xfs/btrfs");
        StorageFault { values, repaired: false }
    }

    /// The Spin host's `default` SQLite database, where the Spin
    /// components keep their state (`agent_zero_store`, docs/spin-stores.md).
    pub fn spin_database(&self) -> PathBuf {
        self.state_dir.join("sqlite_db.db")
    }

    /// Every key and value the Spin components stored in their SQLite
    /// database (empty before the first write).
    pub fn spin_values(&self) -> std::collections::BTreeMap<String, Vec<u8>> {
        let path = self.spin_database();
        if !path.exists() {
            return std::collections::BTreeMap::new();
        }
        let db = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
        let mut statement = match db.prepare("SELECT key, value FROM agent_zero_kv WHERE value IS NOT NULL") {
            Ok(statement) => statement,
            Err(e) if e.to_string().contains("no such table") => return std::collections::BTreeMap::new(),
            Err(e) => panic!("reading {}: {e}", path.display()),
        };
        let rows = statement.query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, Vec<u8>>(1)?)));
        rows.and_then(Iterator::collect).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Sends a request to `path`.
    ///
    /// On workerd, a request other than GET or HEAD is sent once more when
    /// wrangler's proxy answers it itself with exactly its 503 "Your worker
    /// restarted mid-request" ([`WRANGLER_RESTARTED`], `Retry-After: 0`),
    /// printing that it did. Under the harness nothing reloads the worker
    /// (each server runs a private copy of it with `[build]` off), and the
    /// proxy gives this answer to any failed hop to the worker on a path
    /// other than `/`
    /// (wrangler 4.86 compares the request's whole URL with the worker's
    /// origin; workers-sdk#14593). The hop fails when the proxy reuses a
    /// pooled connection that the worker's HTTP server closes at the same
    /// moment, both after 5 s idle (kj's defaults; workers-sdk#14641): the
    /// request never reached the worker. Newer wrangler reports the same
    /// failure as an error and still does not resend a POST
    /// (workers-sdk#15252), so the harness does, as a client would
    /// (docs/testing.md, "When the local runtime answers 503").
    ///
    /// A 404 with no body and no content type is sent again: every 404 of
    /// the product carries its JSON error shape, so that answer is not the
    /// worker's (seen once, under load, on `POST /webhooks/github`, which
    /// the router always serves); the proxy's log is printed beside it.
    pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> crate::Reply {
        let send = || {
            crate::request(method, &self.url(path), headers, body)
                .unwrap_or_else(|e| panic!("{}: {e}\nlog:\n{}", self.runtime.name(), self.log()))
        };
        let reply = send();
        if self.runtime != Runtime::Workerd {
            return reply;
        }
        let resent_by_wrangler = matches!(method, "GET" | "HEAD");
        if !resent_by_wrangler
            && reply.status == 503
            && reply.header("retry-after") == Some("0")
            && reply.body == WRANGLER_RESTARTED.as_bytes()
        {
            eprintln!(
                "{}: wrangler's proxy lost its connection to the worker under {method} {path} \
                 (its 503 \"Your worker restarted mid-request\"); sending it again",
                self.runtime.name()
            );
            return send();
        }
        if reply.status == 404 && reply.body.is_empty() && reply.header("content-type").is_none() {
            let log = self.log();
            let tail: String =
                log.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
            eprintln!(
                "{}: an empty 404 that is not the worker's under {method} {path}; sending it again. wrangler's log ends:\n{tail}",
                self.runtime.name()
            );
            return send();
        }
        reply
    }

    /// Posts `body` to `/webhooks/github` as GitHub delivers it: JSON,
    /// the event and delivery headers, signed with `secret`.
    ///
    /// The body is sent as a new event would be: a JSON object's event
    /// times (`issue`/`comment`/`pull_request.updated_at`,
    /// `review.submitted_at`) are set to now, and it names its delivery in
    /// `x_e2e_delivery`, so two deliveries of one fixture are two events, not
    /// a replay of one signed body (which intake refuses), and a fixture
    /// written years ago is not older than the replay window.
    /// [`Server::deliver_github_exact`] sends the bytes as given.
    pub fn deliver_github(&self, secret: &str, event: &str, delivery: &str, body: &[u8]) -> crate::Reply {
        self.deliver_github_exact(secret, event, delivery, &fresh_event(body, delivery))
    }

    /// Signs and delivers `body` byte for byte.
    pub fn deliver_github_exact(&self, secret: &str, event: &str, delivery: &str, body: &[u8]) -> crate::Reply {
        let signature = agent_zero_fakes::sign_github(secret, body);
        self.send(
            "POST",
            "/webhooks/github",
            &[
                ("content-type", "application/json"),
                ("x-github-event", event),
                ("x-github-delivery", delivery),
                ("x-hub-signature-256", &signature),
            ],
            body,
        )
    }

    /// Stops the server (and its process group).
    pub fn stop(&mut self) {
        self.cron = None;
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.child.id())]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The whole body of the 503 wrangler's proxy (4.86,
/// `templates/startDevWorker/ProxyWorker.ts`) answers a request other than
/// GET or HEAD with when its hop to the worker fails on a path other than
/// `/`: see [`Server::send`].
const WRANGLER_RESTARTED: &str = "Your worker restarted mid-request. Please try sending the request again. \
                                  Only GET or HEAD requests are retried automatically.";

/// `body` as a new event's, named `delivery`: see [`Server::deliver_github`].
/// Anything but a JSON object is sent as it is.
pub fn fresh_event(body: &[u8], delivery: &str) -> Vec<u8> {
    let Ok(serde_json::Value::Object(mut payload)) = serde_json::from_slice(body) else { return body.to_vec() };
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
    let now_ms = u64::try_from(now_ms).unwrap_or(u64::MAX);
    let now = agent_zero_contracts::rfc3339(now_ms - now_ms % 1000).replace(".000Z", "Z");
    for (object, field) in
        [("issue", "updated_at"), ("comment", "updated_at"), ("pull_request", "updated_at"), ("review", "submitted_at")]
    {
        if let Some(at) = payload.get_mut(object).and_then(|o| o.get_mut(field)).filter(|at| at.is_string()) {
            *at = serde_json::Value::from(now.clone());
        }
    }
    payload.insert("x_e2e_delivery".into(), serde_json::Value::from(delivery));
    serde_json::to_vec(&payload).unwrap_or_else(|_| body.to_vec())
}

/// Storage broken by [`Server::break_storage`].
#[derive(Debug)]
pub struct StorageFault {
    values: Vec<PathBuf>,
    repaired: bool,
}

impl StorageFault {
    /// Puts the store back as it was.
    pub fn repair(mut self) {
        self.undo().expect("restoring the store");
    }

    fn undo(&mut self) -> std::io::Result<()> {
        if self.repaired {
            return Ok(());
        }
        self.repaired = true;
        let status = Command::new("chattr").arg("-i").args(&self.values).status()?;
        if status.success() { Ok(()) } else { Err(std::io::Error::other(format!("chattr -i {:?}", self.values))) }
    }
}

impl Drop for StorageFault {
    fn drop(&mut self) {
        let _ = self.undo();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `wrangler dev` with both workers (docs/architecture.md): the front
/// worker (`wrangler.toml`, primary: the port, the routes, the cron) and the
/// tick worker (`wrangler.ticks.toml`), sharing the local KV, queue and
/// Durable Objects under `state`. `--var` reaches the primary worker only, so
/// the tick worker's variables are written into a `.dev.vars` beside its
/// config: every one but the front's own secrets
/// ([`agent_zero_app::FRONT_ONLY_VARIABLES`]), as an operator deploys it.
fn workerd_command(
    root: &Path,
    temp: &Path,
    state: &Path,
    port: u16,
    options: &ServerOptions,
) -> Result<Command, String> {
    let wrangler = root.join("tests/node/node_modules/.bin/wrangler");
    for built in ["functions/cloudflare/build/index.js", "functions/cloudflare/build-ticks/index.js"] {
        if !root.join(built).exists() {
            return Err(format!("{built} is missing: run tests/scripts/build-worker.sh"));
        }
    }
    // A private copy of each built worker, so that nothing outside this
    // server (a build of the checkout, another process) can change the
    // modules under it: wrangler dev reloads the local runtime when its
    // entry or an import changes (even an unchanged file written again),
    // and a request in flight then gets its 503 "Your worker restarted
    // mid-request".
    let front_dir = private_copy(&root.join("functions/cloudflare/build"), &temp.join("build"))?;
    let ticks_build = private_copy(&root.join("functions/cloudflare/build-ticks"), &temp.join("build-ticks"))?;
    let read = |name: &str| std::fs::read_to_string(root.join(name)).map_err(|e| format!("{name}: {e}"));
    let adapt = |config: String, main: &str, entry: PathBuf| -> Result<String, String> {
        let line = format!("main = \"{main}\"");
        let mut config =
            replace_line(&config, "the wrangler config", &line, &format!("main = \"{}\"", entry.display()))?;
        config = config.replace("[build]\n", "[build_disabled]\n");
        if options.without_kv {
            config = config.replace("binding = \"KV\"", "binding = \"NOT_KV\"");
        }
        Ok(config)
    };
    let front = adapt(
        read("wrangler.toml")?,
        "functions/cloudflare/build/index.js",
        options.entry.clone().unwrap_or_else(|| front_dir.join("index.js")),
    )?;
    let ticks =
        adapt(read("wrangler.ticks.toml")?, "functions/cloudflare/build-ticks/index.js", ticks_build.join("index.js"))?;
    // The tick worker's variables as wrangler dev reads secrets, from a
    // `.dev.vars` beside its config (values in the config's `[vars]` would
    // be printed in its log).
    let front_path = temp.join("wrangler.toml");
    let ticks_dir = temp.join("ticks");
    let ticks_path = ticks_dir.join("wrangler.toml");
    std::fs::create_dir_all(&ticks_dir).map_err(|e| e.to_string())?;
    std::fs::write(&front_path, front).map_err(|e| e.to_string())?;
    std::fs::write(&ticks_path, ticks).map_err(|e| e.to_string())?;
    std::fs::write(ticks_dir.join(".dev.vars"), dev_vars(&options.vars, agent_zero_app::FRONT_ONLY_VARIABLES)?)
        .map_err(|e| e.to_string())?;
    let mut command = Command::new(wrangler);
    command
        .current_dir(temp)
        .env("WRANGLER_SEND_METRICS", "false")
        .env("AGENT_ZERO_PREBUILT", "1")
        .args(["dev", "--local", "--ip", "127.0.0.1", "--port", &port.to_string()])
        // `/__scheduled?cron=...` runs the front worker's cron handler.
        .arg("--test-scheduled")
        .arg("--config")
        .arg(&front_path)
        .arg("--config")
        .arg(&ticks_path)
        .arg("--persist-to")
        .arg(state)
        .args(["--inspector-port", &free_port().to_string()]);
    for (name, value) in &options.vars {
        command.arg("--var").arg(format!("{name}:{value}"));
    }
    Ok(command)
}

/// Copies the files of the built worker `from` (its entry, glue and wasm)
/// into `to`, which it returns.
fn private_copy(from: &Path, to: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::copy(entry.path(), to.join(entry.file_name()))
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        }
    }
    Ok(to.to_path_buf())
}

/// `text` (the file `what`) with `line` replaced by `with`; an error when
/// the file no longer has that line.
fn replace_line(text: &str, what: &str, line: &str, with: &str) -> Result<String, String> {
    if !text.contains(line) {
        return Err(format!("{what} has no `{line}`"));
    }
    Ok(text.replace(line, with))
}

/// `vars` but `withheld` as a `.dev.vars` file (dotenv): each value in
/// single quotes, taken literally, line breaks included.
fn dev_vars(vars: &[(String, String)], withheld: &[&str]) -> Result<String, String> {
    let mut out = String::new();
    for (name, value) in vars.iter().filter(|(name, _)| !withheld.contains(&name.as_str())) {
        if value.contains('\'') {
            return Err(format!("{name}: a value with a single quote cannot be written to .dev.vars"));
        }
        out.push_str(&format!("{name}='{value}'\n"));
    }
    Ok(out)
}

fn spin_command(root: &Path, temp: &Path, state: &Path, port: u16, options: &ServerOptions) -> Result<Command, String> {
    let host = root.join("target/tools/agent-zero-spin-host");
    // Both components: the HTTP one and the tick one it chains to.
    let sources = ["agent_zero_spin.wasm", "agent_zero_spin_ticks.wasm"]
        .map(|name| format!("target/wasm32-wasip2/release/{name}"));
    for path in std::iter::once(host.clone()).chain(sources.iter().map(|source| root.join(source))) {
        if !path.exists() {
            return Err(format!("{} is missing: run tests/scripts/test.sh", path.display()));
        }
    }
    let mut manifest = std::fs::read_to_string(root.join("spin.toml")).map_err(|e| e.to_string())?;
    for source in &sources {
        let line = format!("source = \"{source}\"");
        manifest =
            replace_line(&manifest, "spin.toml", &line, &format!("source = \"{}\"", root.join(source).display()))?;
    }
    if options.without_kv {
        manifest = manifest
            .replace("key_value_stores = [\"default\"]", "key_value_stores = []")
            .replace("sqlite_databases = [\"default\"]", "sqlite_databases = []");
    }
    let manifest_path = temp.join("spin.toml");
    std::fs::write(&manifest_path, manifest).map_err(|e| e.to_string())?;
    let mut command = Command::new(host);
    command
        .arg("--manifest")
        .arg(&manifest_path)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--kv-dir")
        .arg(state)
        // Spin's default store, where a swap from absent is an upsert, with
        // each compare-and-swap held open long enough for racing requests
        // (on the host's other thread) to fall inside it.
        .args(["--kv-semantics", "sqlite", "--kv-race-window-ms", "3"]);
    if let Some(secs) = options.wall_clock_secs {
        command.args(["--wall-clock-secs", &secs.to_string()]);
    }
    for (name, value) in spin_variables(&options.vars) {
        command.env(format!("SPIN_VARIABLE_{}", name.to_ascii_uppercase()), value);
    }
    // Like a platform cron job, at the route's own grace: sweep every few
    // seconds with an operator token.
    let token = options
        .vars
        .iter()
        .find(|(name, _)| name == "AGENT_ZERO_CONTROL_PLANE_TOKENS")
        .and_then(|(_, value)| value.split(',').next()?.split_once(':').map(|(_, t)| t.to_owned()));
    if let Some(token) = token {
        command.args(["--cron", "/api/v1/sweep@3"]).env("AGENT_ZERO_SPIN_HOST_CRON_TOKEN", token);
    }
    Ok(command)
}

/// Whether `reply` is the product's answer to health: its report (with its
/// `status` and `name`), or one of its errors (`{"error": {"code", ...}}`),
/// not another server's.
fn is_product_health(reply: &crate::Reply) -> bool {
    serde_json::from_slice::<serde_json::Value>(&reply.body)
        .is_ok_and(|v| (v.get("status").is_some() && v.get("name").is_some()) || v.pointer("/error/code").is_some())
}

/// `vars` as an operator sets them on Spin: each URL the app will call
/// (the loopback stand-ins) with its origin variable beside it, which
/// `spin.toml`'s allow-list reads (`agent_zero_app::ORIGIN_VARIABLES`),
/// unless the case set that variable itself.
fn spin_variables(vars: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = vars.to_vec();
    for (url_variable, origin_variable) in agent_zero_app::ORIGIN_VARIABLES {
        let Some((_, url)) = vars.iter().rev().find(|(name, _)| name == url_variable) else { continue };
        if vars.iter().any(|(name, _)| name == origin_variable) {
            continue;
        }
        if let Some(origin) = origin_of(url) {
            out.push(((*origin_variable).to_owned(), origin));
        }
    }
    out
}

/// `scheme://authority` of `url`.
fn origin_of(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one answer [`Server::send`] sends a request again on is the
    /// pinned wrangler's own (tests/node): its proxy's 503, word for word,
    /// with `Retry-After: 0`, given to a method other than GET or HEAD.
    #[test]
    fn the_resent_503_is_the_pinned_wranglers_own_answer() {
        let proxy = repo_root().join("tests/node/node_modules/wrangler/wrangler-dist/ProxyWorker.js");
        let source = std::fs::read_to_string(&proxy)
            .unwrap_or_else(|e| panic!("{}: {e} (bash tests/scripts/install-tools.sh worker)", proxy.display()));
        let at = source.find(&format!("\"{WRANGLER_RESTARTED}\"")).expect("wrangler's proxy gives exactly this body");
        let answer = &source[at..at + 300];
        assert!(answer.contains("status: 503") && answer.contains(r#"headers: { "Retry-After": "0" }"#), "{answer}");
        let before = &source[at.saturating_sub(1200)..at];
        assert!(before.contains(r#"request.method === "GET" || request.method === "HEAD""#), "{before}");
    }

    #[test]
    fn each_url_gets_its_origin_variable_unless_the_case_set_one() {
        let vars = [
            ("GITHUB_API_URL".to_owned(), "http://127.0.0.1:4000/api/v3".to_owned()),
            ("AGENT_ZERO_MODEL_BASE_URL".to_owned(), "http://127.0.0.1:4100/v1".to_owned()),
            ("AGENT_ZERO_SANDBOX_URL".to_owned(), "http://127.0.0.1:4200".to_owned()),
            ("AGENT_ZERO_SANDBOX_ORIGIN".to_owned(), "http://127.0.0.1:9".to_owned()),
        ];
        let out = spin_variables(&vars);
        let get = |name: &str| out.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str()).collect::<Vec<_>>();
        assert_eq!(get("AGENT_ZERO_FORGE_ORIGIN"), ["http://127.0.0.1:4000"]);
        assert_eq!(get("AGENT_ZERO_MODEL_ORIGIN"), ["http://127.0.0.1:4100"]);
        assert_eq!(get("AGENT_ZERO_SANDBOX_ORIGIN"), ["http://127.0.0.1:9"], "the case's own value stands");
        assert!(get("AGENT_ZERO_DASHBOARD_GITHUB_ORIGIN").is_empty());
    }

    #[test]
    fn the_tick_workers_vars_are_the_operators_but_the_front_only_secrets() {
        let vars = [
            ("GITHUB_API_URL".to_owned(), "http://127.0.0.1:9/".to_owned()),
            ("GITHUB_WEBHOOK_SECRET".to_owned(), "hook-secret".to_owned()),
            ("GITHUB_APP_PRIVATE_KEY".to_owned(), "-----BEGIN\nkey \"q\" \\ end\n".to_owned()),
        ];
        assert_eq!(
            dev_vars(&vars, agent_zero_app::FRONT_ONLY_VARIABLES).unwrap(),
            "GITHUB_API_URL='http://127.0.0.1:9/'\nGITHUB_APP_PRIVATE_KEY='-----BEGIN\nkey \"q\" \\ end\n'\n",
            "the webhook secret withheld; a key's lines, quotes and backslashes kept"
        );
        let quoted = [("GITHUB_TOKEN".to_owned(), "it's".to_owned())];
        assert!(dev_vars(&quoted, &[]).unwrap_err().contains("GITHUB_TOKEN"));
    }

    /// Each component of `spin.toml` and each worker's config: the tick
    /// side is given every variable the app reads but the front's own
    /// secrets, the front every one.
    #[test]
    fn the_tick_role_is_configured_without_the_front_only_secrets() {
        let root = repo_root();
        let spin = std::fs::read_to_string(root.join("spin.toml")).unwrap();
        let table = |name: &str| -> Vec<String> {
            let start = spin.find(&format!("[component.{name}.variables]\n")).unwrap_or_else(|| panic!("{name}"));
            spin[start..]
                .lines()
                .skip(1)
                .take_while(|line| !line.is_empty())
                .map(|line| line.split(' ').next().unwrap().to_ascii_uppercase())
                .collect()
        };
        let known: Vec<String> = agent_zero_app::KNOWN_VARIABLES.iter().map(|name| (*name).to_owned()).collect();
        let mut front = table("agent-zero");
        front.sort();
        let mut expected = known.clone();
        expected.sort();
        assert_eq!(front, expected, "the HTTP component reads every variable");
        let mut ticks = table("agent-zero-ticks");
        ticks.sort();
        expected.retain(|name| !agent_zero_app::FRONT_ONLY_VARIABLES.contains(&name.as_str()));
        assert_eq!(ticks, expected, "the tick component: all but the front's secrets");
        for name in agent_zero_app::FRONT_ONLY_VARIABLES {
            assert!(agent_zero_app::SECRET_VARIABLES.contains(name), "{name} is a secret");
        }
        assert!(spin.contains("route = { private = true }\ncomponent = \"agent-zero-ticks\""));
        let ticks = std::fs::read_to_string(root.join("wrangler.ticks.toml")).unwrap();
        for name in agent_zero_app::FRONT_ONLY_VARIABLES {
            assert!(!ticks.contains(name), "wrangler.ticks.toml names {name}");
        }
    }
}
