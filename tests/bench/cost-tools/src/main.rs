//! `tick-log --entries N --github-api-url URL --out DIR`: a task whose log
//! holds N entries, written by the app's own code, as the Spin host's
//! key-value directory (`DIR/default/<hex key>`, tests/spin-host/src/kv.rs)
//! and as `DIR/snapshot.json` (every key and value, for the wasm decode and
//! fold benchmark). Prints the task id.
//!
//! The log is the shape a long log has in practice (docs/cost.md): a
//! labelled issue delivered through intake (`agent_zero_app::handle`,
//! signed, event times now), whose policy gate found GitHub answering 503
//! on each of N-1 ticks (`agent_zero_app::run_tick`, metered as on a host),
//! each retry one entry. The next tick, the one measured, is one more
//! admission attempt: it syncs the log (from the checkpoint, or from entry
//! 0 when `task/{id}/meta` is removed), claims, calls GitHub once, commits
//! and yields. The clock starts six hours ago and advances a second per
//! tick, so the last pending marker is overdue and the admission bound
//! (24 h) is not reached when the host runs the next tick.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;

use agent_zero_app::{Host, Invocation, Settings, TickOutcome};
use agent_zero_engine::{Queue, QueueError, Tick};
use agent_zero_ports::{CountingKv, HttpClient, HttpError, ManualClock, block_on};
use agent_zero_runner::MemoryCoordinator;
use hmac::Mac;

/// The settings the Spin host is given too (tests/bench/cost.sh), so the
/// generated entries are the ones the component writes.
pub const SECRET: &str = "bench-webhook-secret";
pub const TOKEN: &str = "bench:tok-bench-0123456789ab";

/// GitHub down: every request answers 503, as the bench's stub server does.
#[derive(Debug)]
struct Down;

impl HttpClient for Down {
    async fn send(&self, _: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let mut response = http::Response::new(br#"{"message":"Service Unavailable"}"#.to_vec());
        *response.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
        response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        Ok(response)
    }
}

#[derive(Debug, Default)]
struct Recorded(RefCell<Vec<Tick>>);

impl Queue for Recorded {
    async fn enqueue(&self, tick: &Tick, _delay_ms: u64) -> Result<(), QueueError> {
        self.0.borrow_mut().push(tick.clone());
        Ok(())
    }
}

/// `operations` by store and kind (`durableObject.get`, `workersKv.put`):
/// a key under `task/{id}/` goes to the task's Durable Object, as `task_of`
/// in functions/cloudflare/src/kv.rs routes it, anything else to Workers KV.
fn by_store(operations: Vec<(String, &'static str)>) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for (key, kind) in operations {
        let task = key.strip_prefix("task/").and_then(|r| r.split_once('/')).is_some_and(|(id, _)| !id.is_empty());
        let store = if task { "durableObject" } else { "workersKv" };
        *counts.entry(format!("{store}.{kind}")).or_default() += 1;
    }
    counts
}

#[derive(Debug)]
struct Bench {
    kv: CountingKv,
    http: Down,
    clock: ManualClock,
    queue: Recorded,
    leases: MemoryCoordinator,
    signer: agent_zero_github::RsaSigner,
}

impl Host for Bench {
    type Kv = CountingKv;
    type Http = Down;
    type Clock = ManualClock;
    type Queue = Recorded;
    type Leases = MemoryCoordinator;
    type Signer = agent_zero_github::RsaSigner;
    fn name(&self) -> &'static str {
        "spin"
    }
    fn kv(&self) -> &CountingKv {
        &self.kv
    }
    fn http(&self) -> &Down {
        &self.http
    }
    fn clock(&self) -> &ManualClock {
        &self.clock
    }
    fn queue(&self) -> &Recorded {
        &self.queue
    }
    fn leases(&self) -> &MemoryCoordinator {
        &self.leases
    }
    fn signer(&self) -> &agent_zero_github::RsaSigner {
        &self.signer
    }
}

fn arg(name: &str) -> String {
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == name {
            return args.next().unwrap_or_else(|| panic!("{name} needs a value"));
        }
    }
    panic!("usage: tick-log --entries N --github-api-url URL --fixture PAYLOAD --out DIR (missing {name})")
}

/// The labelled-issue delivery the end-to-end suite sends
/// (tests/e2e/cases/lifecycle.rs, `labeled_issue`), dated `now`.
fn delivery(fixture: &str, now: &str) -> Vec<u8> {
    let mut payload: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture).expect("fixture")).expect("json");
    payload["repository"]["name"] = "demo".into();
    payload["repository"]["full_name"] = "acme/demo".into();
    payload["repository"]["owner"]["login"] = "acme".into();
    payload["label"]["name"] = "agent-zero".into();
    payload["issue"]["labels"] = serde_json::json!([{ "name": "agent-zero" }]);
    payload["issue"]["title"] = "average() is wrong for every input".into();
    payload["issue"]["body"] = "`average([2, 4])` returns 2, not 3.".into();
    payload["issue"]["updated_at"] = now.into();
    serde_json::to_vec(&payload).expect("serialises")
}

fn main() {
    let entries: u64 = arg("--entries").parse().expect("--entries N");
    assert!(entries >= 2, "--entries: at least 2 (entry 0 and one retry)");
    let api = arg("--github-api-url");
    let fixture = arg("--fixture");
    let out = PathBuf::from(arg("--out"));
    let settings = Settings::from_pairs([
        ("GITHUB_WEBHOOK_SECRET", SECRET),
        ("GITHUB_TOKEN", "ghp_bench_0123456789"),
        ("GITHUB_API_URL", api.as_str()),
        ("AGENT_ZERO_FORGE_ORIGIN", api.as_str()),
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", TOKEN),
        ("AGENT_ZERO_PLATFORM", "fermyon-cloud"),
    ]);
    let real_now = u64::try_from(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_millis(),
    )
    .expect("fits");
    let start = real_now - 6 * 3_600_000;
    let host = Bench {
        // Spin's store: one key per request, `active/` keys the sweep lists.
        kv: CountingKv::one_key_per_request(),
        http: Down,
        clock: ManualClock::new(start - start % 1000),
        queue: Recorded::default(),
        leases: MemoryCoordinator::new(),
        signer: agent_zero_github::RsaSigner,
    };
    let now_ms = || agent_zero_ports::Clock::now_ms(&host.clock);
    // GitHub dates its events in whole seconds.
    let dated = agent_zero_contracts::rfc3339(now_ms()).replace(".000Z", "Z");
    let body = delivery(&fixture, &dated);
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).expect("any key");
    mac.update(&body);
    let request = http::Request::post("/webhooks/github")
        .header("content-type", "application/json")
        .header("x-github-event", "issues")
        .header("x-github-delivery", "bench-tick-log-1")
        .header("x-hub-signature-256", format!("sha256={}", hex::encode(mac.finalize().into_bytes())))
        .body(body)
        .expect("request");
    let invocation = Invocation { now_ms: now_ms(), request_id: "0123456789abcdef".into() };
    let reply = block_on(agent_zero_app::handle(&host, &settings, &invocation, request));
    let text = String::from_utf8_lossy(reply.body()).into_owned();
    assert_eq!(reply.status(), 202, "intake: {text}");
    let reply: serde_json::Value = serde_json::from_str(&text).expect("json");
    let id = reply["taskId"].as_str().unwrap_or_else(|| panic!("intake created no task: {text}")).to_owned();
    let intake = by_store(host.kv.take());
    let mut tick = host.queue.0.borrow().first().cloned().expect("intake enqueued the first tick");
    let mut last = BTreeMap::new();
    while tick.expected_seq < entries {
        host.clock.advance(1_000);
        host.kv.take();
        let report = block_on(agent_zero_app::run_tick(&host, &settings, &tick, now_ms())).expect("tick");
        match report.outcome {
            TickOutcome::Continue { next, .. } if next.expected_seq == tick.expected_seq + 1 => tick = next,
            other => panic!("tick {}: expected another admission retry, got {other:?}", tick.expected_seq),
        }
        last = by_store(host.kv.take());
    }
    let ops = serde_json::json!({ "intake": intake, "tick": last });
    std::fs::create_dir_all(&out).expect("out dir");
    std::fs::write(out.join("ops.json"), serde_json::to_vec(&ops).expect("json")).expect("ops.json");
    // Every value as the Spin host stores it, and the snapshot.
    let dir = out.join("default");
    std::fs::create_dir_all(&dir).expect("out dir");
    let snapshot = host.kv.inner().snapshot();
    let mut json = serde_json::Map::new();
    for (key, value) in &snapshot {
        std::fs::write(dir.join(hex::encode(key.as_bytes())), value).expect("write value");
        json.insert(key.clone(), String::from_utf8_lossy(value).into_owned().into());
    }
    let log_bytes: usize =
        snapshot.iter().filter(|(k, _)| k.starts_with(&format!("task/{id}/log/"))).map(|(_, v)| v.len()).sum();
    let document = serde_json::json!({ "taskId": id, "entries": entries, "logBytes": log_bytes, "store": json });
    std::fs::write(out.join("snapshot.json"), serde_json::to_vec(&document).expect("json")).expect("snapshot");
    println!("{id} {entries} {log_bytes}");
}
