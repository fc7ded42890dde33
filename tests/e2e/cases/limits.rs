//! What anonymous traffic costs and how much of a body a host reads, on
//! both runtimes: anonymous health and listings write nothing (the store is
//! made read-only underneath them), a declared body over the route's limit
//! is refused before a byte of it is sent, a chunked one as soon as it
//! passes the limit, and a body within the limit is read whole.
//!
//! A refused body that the client did send stays unread (or unfinished) by
//! design, and `wrangler dev`'s proxy may then lose the next request on its
//! connection to the worker (workerd#1741; a deployed worker is not behind
//! that proxy). So such a refusal is the last request a case sends to its
//! server. Refusals of a body that was never sent are not.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_zero_e2e::{Reply, Runtime, Server, ServerOptions, repo_root};
use agent_zero_fakes::sign_github;
use serde_json::json;

use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "limits_anonymous_health_and_listings_write_nothing",
        run: anonymous_health_and_listings_write_nothing,
    },
    Case {
        name: "limits_a_declared_body_over_the_limit_is_refused_unread",
        run: declared_body_over_the_limit_is_unread,
    },
    Case {
        name: "limits_a_chunked_body_over_the_limit_is_refused_at_it",
        run: chunked_body_over_the_limit_is_refused_at_the_limit,
    },
    Case { name: "limits_bodies_within_the_limit_are_read_whole", run: bodies_within_the_limit_are_read_whole },
    Case { name: "limits_a_malformed_webhook_limit_is_503_naming_it", run: malformed_webhook_limit_is_503_naming_it },
    Case {
        name: "limits_reads_need_a_token_once_github_credentials_are_set",
        run: reads_need_a_token_with_github_credentials,
    },
];

const ALICE: &str = "e2e-alice-limits-7c21d9";
const SECRET: &str = "e2e-limits-webhook-secret";
/// 90 MB: more than a Worker could buffer a few times over.
const NINETY_MB: u64 = 94_371_840;
/// The task API's JSON body limit.
const TASK_API_LIMIT: usize = 256 * 1024;
/// How long a refusal may take; a host waiting for the body never answers.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// A task must be able to run to be accepted: a sandbox nobody listens on
/// (its tasks fail and conclude) and a model key no test reaches.
const RUNNABLE: [(&str, &str); 4] = [
    ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
    ("AGENT_ZERO_SANDBOX_URL", "http://127.0.0.1:9"),
    ("AGENT_ZERO_SANDBOX_TOKEN", "e2e-unreached"),
    ("OPENAI_API_KEY", "sk-e2e-unreached"),
];

fn start(runtime: Runtime, vars: &[(&str, &str)], state_dir: Option<PathBuf>) -> Server {
    let vars = vars.iter().chain(RUNNABLE.iter()).map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
    Server::start(runtime, &ServerOptions { vars, state_dir, ..ServerOptions::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

fn bearer() -> String {
    format!("Bearer {ALICE}")
}

fn error_of(reply: &Reply) -> (String, String, String) {
    let body = reply.json();
    let text = |key: &str| body["error"][key].as_str().unwrap_or_default().to_owned();
    (text("code"), text("message"), text("field"))
}

fn ping() -> Vec<u8> {
    std::fs::read(repo_root().join("tests/fixtures/github-webhooks/ping/payload.json")).expect("the ping fixture")
}

fn anonymous_health_and_listings_write_nothing(runtime: Runtime) {
    // Under target/: breaking the store needs file attributes, which tmpfs lacks.
    let scratch = repo_root().join("target/e2e-state");
    std::fs::create_dir_all(&scratch).unwrap();
    let state = tempfile::tempdir_in(&scratch).unwrap();
    let tokens = format!("alice:{ALICE}");
    let vars = [
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", tokens.as_str()),
        ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets"),
    ];
    let server = start(runtime, &vars, Some(state.path().to_path_buf()));
    let auth = bearer();

    // A token holder's probe writes, reads back and deletes.
    let probed = server.send("GET", "/api/v1/health", &[("authorization", &auth)], b"");
    assert_eq!(probed.status, 200, "{}", probed.text());
    assert_eq!(probed.json()["storage"], json!({ "ok": true, "probe": "read-write" }));

    // One task, so that every listing reads a row; it fails without a
    // sandbox and concludes.
    let task = json!({
        "repository": "acme/widgets",
        "mode": "observe",
        "trigger": "feedback",
        "feedback": [{ "body": "`limit` of 0 divides by zero", "path": "src/limit.rs", "line": 3 }],
        "pullRequest": { "number": 7, "headSha": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c" },
    });
    let created = server.send(
        "POST",
        "/api/v1/tasks",
        &[("authorization", &auth), ("content-type", "application/json")],
        &serde_json::to_vec(&task).unwrap(),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["id"].as_str().expect("an id").to_owned();
    wait_concluded(&server, &id);
    // Its last tick tidies up after concluding: wait until the sweep finds
    // nothing pending, then restart on the same state, so that none of the
    // task's own work is still in flight while anonymous requests are counted.
    wait_nothing_pending(&server);
    drop(server);
    let server = start(runtime, &vars, Some(state.path().to_path_buf()));

    // No write lands: every value of the store is as it was.
    let before = store_values(&server);
    assert!(!before.is_empty(), "the store has values under {}", server.state_dir.display());
    anonymous_requests(&server, &id, 1_000);
    assert_eq!(written(&before, &store_values(&server)), Vec::<String>::new(), "anonymous requests wrote");

    // No write is even tried: with every write failing inside the real KV,
    // anonymous answers stay 200 and storage ok.
    let fault = server.break_storage();
    let refused = server.send("GET", "/api/v1/health", &[("authorization", &auth)], b"");
    assert_eq!(refused.status, 503, "the fault bites the token holder's write probe: {}", refused.text());
    assert_eq!(refused.json()["storage"]["probe"], "read-write");
    assert_eq!(refused.json()["error"]["code"], "storage_unavailable");
    anonymous_requests(&server, &id, 1_000);
    fault.repair();
}

/// `count` anonymous requests, in turn health, the task list and the list
/// page, each answering 200 with storage ok and the one task `id`.
fn anonymous_requests(server: &Server, id: &str, count: usize) {
    for n in 0..count {
        match n % 3 {
            0 => {
                let reply = server.send("GET", "/api/v1/health", &[], b"");
                assert_eq!(reply.status, 200, "request {n}: {}", reply.text());
                let body = reply.json();
                assert_eq!(body["status"], "ok", "{body}");
                assert_eq!(body["storage"], json!({ "ok": true, "probe": "read" }), "{body}");
            }
            1 => {
                let reply = server.send("GET", "/api/v1/tasks", &[], b"");
                assert_eq!(reply.status, 200, "request {n}: {}", reply.text());
                let items = reply.json()["items"].clone();
                assert_eq!(items.as_array().map(Vec::len), Some(1), "{items}");
                assert_eq!(items[0]["id"], json!(id));
            }
            _ => {
                let reply = server.send("GET", "/", &[], b"");
                assert_eq!(reply.status, 200, "request {n}: {}", reply.text());
                assert!(reply.text().contains(&format!("/tasks/{id}")), "{}", reply.text());
            }
        }
    }
}

/// Sweeps (as a token holder, re-driving every overdue tick at once) until
/// the sweep finds no pending tick (at most 60 s).
fn wait_nothing_pending(server: &Server) {
    let started = Instant::now();
    loop {
        let swept = server.send("POST", "/api/v1/sweep?graceMs=0", &[("authorization", &bearer())], b"");
        assert_eq!(swept.status, 200, "{}", swept.text());
        let body = swept.json();
        let pending = body["ticksEnqueued"].as_u64().unwrap_or(0) + body["ticksClaimed"].as_u64().unwrap_or(0);
        if pending == 0 {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "ticks stay pending: {body}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Polls the task until it has concluded (at most 120 s).
fn wait_concluded(server: &Server, id: &str) {
    let started = Instant::now();
    loop {
        let reply = server.send("GET", &format!("/api/v1/tasks/{id}"), &[], b"");
        let task = reply.json();
        if ["completed", "failed", "needs-human"].contains(&task["state"].as_str().unwrap_or_default()) {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "task {id} did not conclude: {task}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The key-value store's values: workerd keeps each KV value in a blob
/// file of its own under `v3/kv/<namespace>/blobs/` (a put adds one, a
/// delete removes one; its SQLite index is left out, since checkpoints
/// rewrite it without any write); the Spin components keep theirs in the
/// host's SQLite database, a row each ([`Server::spin_values`]).
pub(super) fn store_values(server: &Server) -> BTreeMap<String, Vec<u8>> {
    let dirs: Vec<PathBuf> = match server.runtime {
        Runtime::Workerd => std::fs::read_dir(server.state_dir.join("v3/kv"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|namespace| namespace.path().join("blobs"))
            .collect(),
        Runtime::Spin => return server.spin_values(),
    };
    let mut values = BTreeMap::new();
    for dir in dirs {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            values.insert(format!("{}/{name}", dir.display()), std::fs::read(entry.path()).unwrap_or_default());
        }
    }
    values
}

/// The keys (or value files) that differ between `before` and `after`,
/// except the records of the sweep the hosts run meanwhile: on Spin a
/// token holder's `POST /api/v1/sweep` every few seconds, which audits
/// itself; on both, the sweep's one-time `sweep/pending-adopted`.
pub(super) fn written(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let is_sweep_audit = |key: &str| {
        key.starts_with("audit/")
            && after
                .get(key)
                .and_then(|v| serde_json::from_slice::<serde_json::Value>(v).ok())
                .is_some_and(|entry| entry["action"] == "sweep" && entry["principal"] == "alice")
    };
    let keys: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let shown = |value: Option<&Vec<u8>>| value.map(|v| String::from_utf8_lossy(&v[..v.len().min(160)]).into_owned());
    keys.into_iter()
        .filter(|key| {
            // The sweep's own records (it runs on its schedule meanwhile):
            // its audit entries, and the one-time mark that no `pending/`
            // marker of an earlier version is left (engine `sweep.rs`).
            let by_the_sweep = is_sweep_audit(key) || key.as_str() == "sweep/pending-adopted";
            before.get(*key) != after.get(*key) && !(before.get(*key).is_none() && by_the_sweep)
        })
        .map(|key| format!("{key}: {:?} -> {:?}", shown(before.get(key)), shown(after.get(key))))
        .collect()
}

fn declared_body_over_the_limit_is_unread(runtime: Runtime) {
    let server = start(
        runtime,
        &[("GITHUB_WEBHOOK_SECRET", SECRET), ("AGENT_ZERO_CONTROL_PLANE_TOKENS", &format!("alice:{ALICE}"))],
        None,
    );
    let auth = bearer();
    // Only the head is sent: a host that reads before it looks never answers.
    for (method, path, limit) in [
        ("GET", "/", 4096),
        ("POST", "/", 4096),
        ("POST", "/api/v1/tasks", TASK_API_LIMIT),
        ("POST", "/webhooks/github", 1024 * 1024),
    ] {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\n\
             Content-Length: {NINETY_MB}\r\n\r\n",
            host = host_of(&server),
        );
        let reply = exchange(&server, head, Body::None);
        assert_eq!(reply.status, 413, "{method} {path}: {}", reply.text());
        let (code, message, field) = error_of(&reply);
        assert_eq!(
            (code.as_str(), field.as_str()),
            ("payload_too_large", "Content-Length"),
            "{method} {path}: {message}"
        );
        let names_both = message.contains(&NINETY_MB.to_string()) && message.contains(&limit.to_string());
        assert!(names_both, "{method} {path}: {message}");
    }
    // The host is fine afterwards.
    let health = server.send("GET", "/api/v1/health", &[], b"");
    assert_eq!(health.status, 200, "{}", health.text());
}

/// A server whose webhook limit is exactly the ping payload's length.
fn start_with_ping_limit(runtime: Runtime) -> Server {
    let limit = ping().len().to_string();
    let tokens = format!("alice:{ALICE}");
    let vars = [
        ("GITHUB_WEBHOOK_SECRET", SECRET),
        ("AGENT_ZERO_WEBHOOK_MAX_BYTES", limit.as_str()),
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", tokens.as_str()),
        ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets"),
    ];
    start(runtime, &vars, None)
}

fn chunked_body_over_the_limit_is_refused_at_the_limit(runtime: Runtime) {
    let auth = bearer();
    for (path, limit) in [("/", 4096), ("/api/v1/tasks", TASK_API_LIMIT), ("/webhooks/github", ping().len())] {
        // One server each: see the module doc.
        let server = start_with_ping_limit(runtime);
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\n\r\n",
            host = host_of(&server),
        );
        // One byte over the limit and never finished: a host that waits for
        // the end of the body never answers.
        let unfinished = Body::Chunked { bytes: vec![b' '; limit + 1], chunk: 16 * 1024, finish: false };
        let reply = exchange(&server, head, unfinished);
        assert_eq!(reply.status, 413, "{path}: {}", reply.text());
        let (code, message, field) = error_of(&reply);
        assert_eq!((code.as_str(), field.as_str()), ("payload_too_large", "body"), "{path}: {message}");
        assert!(message.contains(&limit.to_string()), "{path}: {message}");
    }
}

fn bodies_within_the_limit_are_read_whole(runtime: Runtime) {
    let server = start_with_ping_limit(runtime);
    let (auth, host) = (bearer(), host_of(&server));

    // Exactly at the limit, in small chunks: read whole, or the signature,
    // which covers every byte, would not verify.
    let ping = ping();
    let head = format!(
        "POST /webhooks/github HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nX-GitHub-Event: ping\r\n\
         X-GitHub-Delivery: limits-exact\r\nX-Hub-Signature-256: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
        sign_github(SECRET, &ping),
    );
    let delivered = exchange(&server, head, Body::Chunked { bytes: ping.clone(), chunk: 97, finish: true });
    assert_eq!(delivered.status, 200, "{}", delivered.text());

    let task = json!({
        "repository": "acme/widgets",
        "mode": "observe",
        "trigger": "feedback",
        "feedback": [{ "body": "`limit` of 0 divides by zero", "path": "src/limit.rs", "line": 3 }],
        "pullRequest": { "number": 7, "headSha": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c" },
    });
    let head = format!(
        "POST /api/v1/tasks HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    );
    let body = Body::Chunked { bytes: serde_json::to_vec(&task).unwrap(), chunk: 13, finish: true };
    let created = exchange(&server, head, body);
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.json()["repository"], "acme/widgets");

    // One byte more (still valid JSON, correctly signed), declared: 413
    // before reading. Last on this server: see the module doc.
    let mut longer = ping;
    longer.push(b'\n');
    let declared = server.deliver_github_exact(SECRET, "ping", "limits-declared", &longer);
    assert_eq!(declared.status, 413, "{}", declared.text());
    let (code, message, field) = error_of(&declared);
    assert_eq!((code.as_str(), field.as_str()), ("payload_too_large", "Content-Length"), "{message}");
    assert!(message.contains(&(longer.len() - 1).to_string()), "{message}");
}

fn malformed_webhook_limit_is_503_naming_it(runtime: Runtime) {
    let server = start(runtime, &[("GITHUB_WEBHOOK_SECRET", SECRET), ("AGENT_ZERO_WEBHOOK_MAX_BYTES", "25MiB")], None);
    // Routes that take no webhook are unaffected.
    assert_eq!(server.send("GET", "/api/v1/health", &[], b"").status, 200);
    // Last on this server: see the module doc. The host answers before it
    // reads the body (it has no limit to read it under), so the body is
    // sent from another thread while the answer is read.
    let body = ping();
    let head = format!(
        "POST /webhooks/github HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         X-GitHub-Event: ping\r\nX-GitHub-Delivery: limits-malformed\r\nX-Hub-Signature-256: {signature}\r\n\
         Content-Length: {length}\r\n\r\n",
        host = host_of(&server),
        signature = sign_github(SECRET, &body),
        length = body.len(),
    );
    let reply = exchange(&server, head, Body::Whole(body));
    assert_eq!(reply.status, 503, "{}", reply.text());
    let (code, message, field) = error_of(&reply);
    assert_eq!((code.as_str(), field.as_str()), ("not_configured", "AGENT_ZERO_WEBHOOK_MAX_BYTES"), "{message}");
    assert!(message.contains("AGENT_ZERO_WEBHOOK_MAX_BYTES"), "{message}");
}

fn reads_need_a_token_with_github_credentials(runtime: Runtime) {
    let tokens = format!("alice:{ALICE}");
    let credentials = [("GITHUB_TOKEN", "ghp_e2e_limits_token"), ("AGENT_ZERO_CONTROL_PLANE_TOKENS", tokens.as_str())];
    let server = start(runtime, &credentials, None);
    let auth = bearer();
    for path in ["/api/v1/tasks", "/", "/api/v1/tasks/gh-none"] {
        let anonymous = server.send("GET", path, &[], b"");
        assert_eq!(anonymous.status, 401, "{path}: {}", anonymous.text());
        assert_eq!(anonymous.header("www-authenticate"), Some("Bearer"), "{path}");
        let expected = if path.ends_with("gh-none") { 404 } else { 200 };
        assert_eq!(server.send("GET", path, &[("authorization", &auth)], b"").status, expected, "{path}");
    }
    // Health stays open.
    assert_eq!(server.send("GET", "/api/v1/health", &[], b"").status, 200);
    drop(server);

    // An explicit `open` opens them.
    let open = start(runtime, &[credentials[0], credentials[1], ("AGENT_ZERO_CONTROL_PLANE_READS", "open")], None);
    for path in ["/api/v1/tasks", "/"] {
        let anonymous = open.send("GET", path, &[], b"");
        assert_eq!(anonymous.status, 200, "{path}: {}", anonymous.text());
    }
}

/// `127.0.0.1:PORT` of the server.
pub(super) fn host_of(server: &Server) -> String {
    server.base_url.trim_start_matches("http://").to_owned()
}

/// What follows the head of a raw request.
pub(super) enum Body {
    /// Nothing (whatever the head declares).
    None,
    /// `bytes` as they are (the head declares their length).
    Whole(Vec<u8>),
    /// `bytes` in chunks of `chunk` bytes; `finish` sends the last chunk.
    Chunked { bytes: Vec<u8>, chunk: usize, finish: bool },
}

/// Sends `head` and then `body` from another thread over one connection,
/// and reads the response meanwhile: a host may answer before the body is
/// sent, or before it ends.
pub(super) fn exchange(server: &Server, head: String, body: Body) -> Reply {
    let mut stream = TcpStream::connect(host_of(server)).expect("connecting to the host");
    stream.set_read_timeout(Some(ANSWER_WITHIN)).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        // The host may stop reading and close: write errors end the body.
        let _ = writer.write_all(head.as_bytes());
        if let Body::Whole(bytes) = &body {
            let _ = writer.write_all(bytes);
        }
        if let Body::Chunked { bytes, chunk, finish } = body {
            for piece in bytes.chunks(chunk) {
                let framed = [format!("{:x}\r\n", piece.len()).as_bytes(), piece, b"\r\n"].concat();
                if writer.write_all(&framed).is_err() {
                    return;
                }
            }
            if finish {
                let _ = writer.write_all(b"0\r\n\r\n");
            }
        }
    });
    let reply = read_response(&mut stream).unwrap_or_else(|e| panic!("{}: {e}", server.runtime.name()));
    let _ = stream.shutdown(Shutdown::Both);
    sender.join().expect("the sending thread");
    reply
}

/// Reads one HTTP/1.1 response (`Content-Length`, chunked, or up to EOF).
fn read_response(stream: &mut TcpStream) -> Result<Reply, String> {
    let mut data = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        if let Some(reply) = parse_response(&data)? {
            return Ok(reply);
        }
        match stream.read(&mut buffer) {
            Ok(0) => {
                let partial = String::from_utf8_lossy(&data).into_owned();
                return parse_response(&data)?.ok_or_else(|| format!("connection closed mid-response: {partial:?}"));
            }
            Ok(n) => data.extend_from_slice(&buffer[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                let partial = String::from_utf8_lossy(&data);
                return Err(format!("no complete response within {ANSWER_WITHIN:?} (got {partial:?})"));
            }
            Err(e) => return Err(format!("reading the response: {e} (got {:?})", String::from_utf8_lossy(&data))),
        }
    }
}

/// The response in `data`, once it is complete.
fn parse_response(data: &[u8]) -> Result<Option<Reply>, String> {
    let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else { return Ok(None) };
    let head = String::from_utf8_lossy(&data[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("status line {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let rest = &data[end + 4..];
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let Some(body) = dechunk(rest)? else { return Ok(None) };
        body
    } else if let Some(length) = header("content-length") {
        let length: usize = length.parse().map_err(|_| format!("content-length {length:?}"))?;
        if rest.len() < length {
            return Ok(None);
        }
        rest[..length].to_vec()
    } else {
        return Ok(None);
    };
    Ok(Some(Reply { status, headers, body }))
}

/// A chunked body, once its last chunk has arrived.
fn dechunk(mut data: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or_default().trim(), 16)
            .map_err(|_| format!("chunk size {size_text:?}"))?;
        let start = line_end + 2;
        if size == 0 {
            return Ok(Some(body));
        }
        if data.len() < start + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
}
