//! `POST /webhooks/github` on both runtimes: configuration, signatures and
//! framing, every real payload, policy from the default branch, and
//! exactly-once task creation.

use std::collections::BTreeMap;
use std::path::PathBuf;

use agent_zero_e2e::{Reply, Runtime, Server, ServerOptions, repo_root};
use agent_zero_fakes::{FakeGitHub, sign_github};
use serde_json::Value;

use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case { name: "webhook_without_secret_is_503_naming_it", run: webhook_without_secret_is_503_naming_it },
    Case { name: "webhook_signature_and_framing_rejections", run: webhook_signature_and_framing_rejections },
    Case { name: "webhook_every_fixture_answers_without_5xx", run: webhook_every_fixture_answers_without_5xx },
    Case { name: "webhook_github_outage_loses_no_delivery", run: webhook_github_outage_loses_no_delivery },
    Case { name: "webhook_redelivery_creates_one_task", run: webhook_redelivery_creates_one_task },
    Case { name: "webhook_policy_from_default_branch", run: webhook_policy_from_default_branch },
    Case { name: "served_under_a_base_path", run: served_under_a_base_path },
];

const SECRET: &str = "e2e-webhook-secret";

fn fixtures_dir() -> PathBuf {
    repo_root().join("tests/fixtures/github-webhooks")
}

fn fixture(event: &str, file: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(event).join(file)).unwrap_or_else(|e| panic!("{event}/{file}: {e}"))
}

fn start(runtime: Runtime, github: &FakeGitHub, extra: &[(&str, &str)]) -> Server {
    let mut vars =
        vec![("GITHUB_WEBHOOK_SECRET".to_owned(), SECRET.to_owned()), ("GITHUB_API_URL".to_owned(), github.url())];
    vars.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    Server::start(runtime, &ServerOptions { vars, ..ServerOptions::default() }).unwrap_or_else(|e| panic!("{e}"))
}

fn deliver(server: &Server, event: &str, delivery: &str, body: &[u8]) -> Reply {
    server.deliver_github(SECRET, event, delivery, body)
}

fn error_of(reply: &Reply) -> (String, String, String) {
    let body = reply.json();
    let e = &body["error"];
    (
        e["code"].as_str().unwrap_or_default().to_owned(),
        e["message"].as_str().unwrap_or_default().to_owned(),
        e["field"].as_str().unwrap_or_default().to_owned(),
    )
}

fn webhook_without_secret_is_503_naming_it(runtime: Runtime) {
    let server = Server::start(runtime, &ServerOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let body = fixture("ping", "payload.json");
    let reply = deliver(&server, "ping", "d-1", &body);
    assert_eq!(reply.status, 503, "{}", reply.text());
    let (code, message, field) = error_of(&reply);
    assert_eq!(code, "not_configured");
    assert_eq!(field, "GITHUB_WEBHOOK_SECRET");
    assert!(message.contains("GITHUB_WEBHOOK_SECRET"), "{message}");
}

fn webhook_signature_and_framing_rejections(runtime: Runtime) {
    let github = FakeGitHub::start();
    let server = start(runtime, &github, &[("AGENT_ZERO_WEBHOOK_MAX_BYTES", "100000")]);
    let body = fixture("ping", "payload.json");
    let good = sign_github(SECRET, &body);
    let post = |headers: &[(&str, &str)], body: &[u8]| server.send("POST", "/webhooks/github", headers, body);
    let leak = |sig: &str| -> &'static str { Box::leak(sig.to_owned().into_boxed_str()) };
    // A fresh delivery id per request: a repeated id answers as a redelivery.
    let counter = std::sync::atomic::AtomicUsize::new(0);
    let base = |sig: &'static str| -> Vec<(&'static str, &'static str)> {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let delivery = leak(&format!("sig-{n}"));
        vec![
            ("content-type", "application/json"),
            ("x-github-event", "ping"),
            ("x-github-delivery", delivery),
            ("x-hub-signature-256", sig),
        ]
    };

    // Missing signature.
    let reply = post(&base("")[..3], &body);
    assert_eq!(reply.status, 401, "{}", reply.text());
    assert_eq!(error_of(&reply).2, "X-Hub-Signature-256");
    // sha1 only.
    let mut sha1 = base("")[..3].to_vec();
    sha1.push(("x-hub-signature", "sha1=0123456789abcdef0123456789abcdef01234567"));
    let reply = post(&sha1, &body);
    assert_eq!(reply.status, 401);
    assert!(error_of(&reply).1.to_lowercase().contains("sha-1"), "{}", reply.text());
    // Malformed, wrong secret, altered body.
    for sig in ["sha256=zz", "md5=abc", &sign_github("other-secret", &body)] {
        let reply = post(&base(leak(sig)), &body);
        assert_eq!(reply.status, 401, "{sig}: {}", reply.text());
    }
    let mut altered = body.clone();
    altered[10] ^= 1;
    let reply = post(&base(leak(&good)), &altered);
    assert_eq!(reply.status, 401);
    assert!(error_of(&reply).1.contains("signature"), "{}", reply.text());
    // Every answer carries its own request id, a refusal too (on workerd the
    // entry answers a wrong MAC itself, entry.mjs `refuseMismatch`), and the
    // log has the request's JSON line with that id.
    let request_id = |reply: &Reply| {
        let id = reply.header("x-request-id").unwrap_or_default().to_owned();
        assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "X-Request-Id {id:?}");
        id
    };
    let refused = post(&base(leak(&sign_github("other-secret", &body))), &body);
    let accepted = post(&base(leak(&good)), &body);
    assert_eq!((refused.status, accepted.status), (401, 200));
    let ids = [request_id(&refused), request_id(&accepted)];
    assert_ne!(ids[0], ids[1]);
    let logged = |id: &str| {
        server.app_log_lines().unwrap_or_else(|wrong| panic!("{wrong}")).iter().any(|line| {
            line["request_id"] == id && line["agent_zero"] == "request" && line["step"] == "POST /webhooks/github"
        })
    };
    // The runtime writes its log as it goes: a moment for the last lines.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !ids.iter().all(|id| logged(id)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(ids.iter().all(|id| logged(id)), "a request line for each of {ids:?}");
    // Upper-case hex and surrounding whitespace are accepted.
    let upper = format!("sha256={}", good.trim_start_matches("sha256=").to_uppercase());
    assert_eq!(post(&base(leak(&upper)), &body).status, 200);
    assert_eq!(post(&base(leak(&format!("  {good} "))), &body).status, 200);
    // After a valid signature: wrong content type, invalid JSON, missing headers.
    let mut form = base(leak(&good));
    form[0] = ("content-type", "application/x-www-form-urlencoded");
    let reply = post(&form, &body);
    assert_eq!(reply.status, 400);
    assert_eq!(error_of(&reply).2, "Content-Type");
    let junk = b"{not json";
    let reply = post(&base(leak(&sign_github(SECRET, junk))), junk);
    assert_eq!(reply.status, 400, "{}", reply.text());
    let no_event: Vec<_> = base(leak(&good)).into_iter().filter(|(n, _)| *n != "x-github-event").collect();
    assert_eq!(error_of(&post(&no_event, &body)).2, "X-GitHub-Event");
    // Over the configured limit: 413 naming the limit, answered from the
    // declared length before the body is read (so over a raw connection: a
    // client still writing the body may see the host close first).
    use super::limits::{Body, exchange, host_of};
    let head = format!(
        "POST /webhooks/github HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         X-GitHub-Event: ping\r\nX-GitHub-Delivery: d-big\r\nContent-Length: 100001\r\n\r\n",
        host = host_of(&server),
    );
    let reply = exchange(&server, head, Body::None);
    assert_eq!(reply.status, 413, "{}", reply.text());
    assert!(error_of(&reply).1.contains("100000"), "{}", reply.text());
}

/// Every repository named by a fixture, with its default branch.
fn fixture_repositories() -> BTreeMap<String, String> {
    let mut repos = BTreeMap::new();
    for (_, _, body) in all_fixtures() {
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if let Some(name) = value["repository"]["full_name"].as_str() {
            let branch = value["repository"]["default_branch"].as_str().unwrap_or("main");
            repos.insert(name.to_owned(), branch.to_owned());
        }
    }
    repos
}

fn all_fixtures() -> Vec<(String, String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut events: Vec<_> =
        std::fs::read_dir(fixtures_dir()).unwrap().flatten().filter(|e| e.path().is_dir()).collect();
    events.sort_by_key(|e| e.file_name());
    for event in events {
        let mut files: Vec<_> = std::fs::read_dir(event.path()).unwrap().flatten().collect();
        files.sort_by_key(|e| e.file_name());
        for file in files {
            let name = file.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") {
                out.push((event.file_name().to_string_lossy().into_owned(), name, std::fs::read(file.path()).unwrap()));
            }
        }
    }
    out
}

/// Delivers every real fixture payload; how intake answered each (`task`
/// for a recorded delivery), and the recorded task ids.
fn deliver_every_fixture(server: &Server) -> (BTreeMap<String, usize>, Vec<String>) {
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut tasks = Vec::new();
    let fixtures = all_fixtures();
    assert_eq!(fixtures.len(), 273);
    for (i, (event, file, body)) in fixtures.iter().enumerate() {
        let reply = deliver(server, event, &format!("fixture-{i}"), body);
        assert!((200..300).contains(&reply.status), "{event}/{file}: {} {}", reply.status, reply.text());
        let answer = reply.json();
        let outcome = if let Some(id) = answer["taskId"].as_str() {
            tasks.push(id.to_owned());
            "task".to_owned()
        } else if answer["stored"] == false {
            // Declined at intake by the policy an earlier tick of the same
            // repository read: nothing stored.
            format!("gated:{}", answer["reason"].as_str().unwrap_or("?"))
        } else if answer["ignored"] == true {
            format!("ignored:{}", answer["reason"].as_str().unwrap_or("?"))
        } else if answer["pong"] == true {
            "ping".to_owned()
        } else if answer["recorded"].is_string() {
            "installation".to_owned()
        } else {
            format!("other:{}", reply.status)
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    assert!(outcomes.keys().all(|k| !k.starts_with("other")), "{outcomes:?}");
    assert_eq!(outcomes.values().sum::<usize>(), 273);
    (outcomes, tasks)
}

/// How the policy gate settled each delivery it saw under the default
/// policy (no .agent-zero.yml): feedback is validated, proactive review
/// and issue tasks are off. A delivery is settled by its tick, or at
/// intake (`gated`) once a tick of its repository recorded the policy.
fn assert_settled_under_the_default_policy(server: &Server, tasks: &[String], outcomes: &BTreeMap<String, usize>) {
    let mut settled: BTreeMap<String, usize> = BTreeMap::new();
    for (outcome, count) in outcomes {
        if let Some(reason) = outcome.strip_prefix("gated:") {
            *settled.entry(format!("ignored:{reason}")).or_default() += count;
        }
    }
    for id in tasks {
        let task = super::lifecycle::wait_task(server, id);
        let outcome = match task["state"].as_str() {
            Some("ignored") => format!("ignored:{}", task["ignored"]["reason"].as_str().unwrap_or("?")),
            _ => "admitted".to_owned(),
        };
        *settled.entry(outcome).or_default() += 1;
    }
    assert_eq!(settled.get("admitted"), Some(&2), "{settled:?}");
    assert_eq!(settled.get("ignored:proactive-disabled"), Some(&11), "{settled:?}");
    // Six opened or labelled issues and one reopened (as the reference reads it).
    assert_eq!(settled.get("ignored:issues-disabled"), Some(&7), "{settled:?}");
    assert_eq!(settled.values().sum::<usize>(), 20, "{settled:?}");
}

fn webhook_every_fixture_answers_without_5xx(runtime: Runtime) {
    let github = FakeGitHub::start();
    for (name, branch) in fixture_repositories() {
        let (owner, repo) = name.split_once('/').unwrap();
        github.add_repo(owner, repo, &branch, &[("README.md", "fixture\n")]);
    }
    let server = start(runtime, &github, &[]);
    let (outcomes, tasks) = deliver_every_fixture(&server);
    // Intake decides what the payload says, and what a policy a tick of the
    // same repository recorded says; the rest of the gate is a tick.
    let gated: usize = outcomes.iter().filter(|(k, _)| k.starts_with("gated:")).map(|(_, n)| n).sum();
    assert_eq!(tasks.len() + gated, 20, "{outcomes:?}");
    assert_eq!(outcomes.get("ping"), Some(&3), "{outcomes:?}");
    assert_eq!(outcomes.get("installation"), Some(&8), "{outcomes:?}");
    assert_settled_under_the_default_policy(&server, &tasks, &outcomes);
}

/// GitHub is down while every real payload arrives: each is answered 2xx
/// and recorded (GitHub never retries a failed delivery), none reads GitHub
/// in intake; when GitHub is back the recorded ones proceed.
fn webhook_github_outage_loses_no_delivery(runtime: Runtime) {
    let github = FakeGitHub::start();
    for (name, branch) in fixture_repositories() {
        let (owner, repo) = name.split_once('/').unwrap();
        github.add_repo(owner, repo, &branch, &[("README.md", "fixture\n")]);
    }
    let server = start(runtime, &github, &[]);
    github.set_outage(true);
    github.clear_calls();
    let (outcomes, tasks) = deliver_every_fixture(&server);
    assert_eq!(outcomes.get("task"), Some(&20), "{outcomes:?}");
    // The policy gate of a recorded delivery tries, fails, and waits.
    let waiting = &tasks[0];
    let started = std::time::Instant::now();
    loop {
        let task = super::lifecycle::read(&server, &format!("/api/v1/tasks/{waiting}")).json();
        assert_eq!(task["state"], "queued", "nothing proceeds while GitHub is down: {task}");
        if task["admission"]["errors"].as_u64().unwrap_or(0) >= 1 {
            assert!(task["admission"]["lastError"].as_str().unwrap_or_default().contains("503"), "{task}");
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the gate never tried: {task}");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    github.set_outage(false);
    assert_settled_under_the_default_policy(&server, &tasks, &outcomes);
}

fn webhook_redelivery_creates_one_task(runtime: Runtime) {
    let github = FakeGitHub::start();
    let body = fixture("pull_request_review_comment", "created.payload.json");
    let value: Value = serde_json::from_slice(&body).unwrap();
    let (owner, repo) = value["repository"]["full_name"].as_str().unwrap().split_once('/').unwrap();
    github.add_repo(owner, repo, value["repository"]["default_branch"].as_str().unwrap_or("main"), &[]);
    let server = start(runtime, &github, &[]);

    let first = deliver(&server, "pull_request_review_comment", "redelivered-1", &body);
    assert_eq!(first.status, 202, "{}", first.text());
    let task_id = first.json()["taskId"].as_str().unwrap().to_owned();
    let second = deliver(&server, "pull_request_review_comment", "redelivered-1", &body);
    assert_eq!(second.status, 200, "{}", second.text());
    assert_eq!(second.json()["taskId"], task_id.as_str());
    assert_eq!(second.json()["duplicate"], true);

    // Concurrent duplicates of a new delivery: one task id, never two tasks.
    let ids: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|_| scope.spawn(|| deliver(&server, "pull_request_review_comment", "concurrent-1", &body)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                let reply = h.join().unwrap();
                assert!(reply.status == 200 || reply.status == 202, "{} {}", reply.status, reply.text());
                reply.json()["taskId"].as_str().unwrap().to_owned()
            })
            .collect()
    });
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_ne!(ids[0], task_id);
}

fn webhook_policy_from_default_branch(runtime: Runtime) {
    let github = FakeGitHub::start();
    let body = fixture("issues", "labeled.payload.json");
    let value: Value = serde_json::from_slice(&body).unwrap();
    let (owner, repo) = value["repository"]["full_name"].as_str().unwrap().split_once('/').unwrap();
    let branch = value["repository"]["default_branch"].as_str().unwrap_or("main");
    let label = value["label"]["name"].as_str().unwrap().to_owned();
    let policy = format!("version: 1\nmode: fix\nissues:\n  enabled: true\n  requireLabel: {label}\n");
    github.add_repo(owner, repo, branch, &[(".agent-zero.yml", &policy)]);
    // Runnable here (a sandbox nobody listens on, a model key), so the gate admits.
    let runnable = [
        ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
        ("AGENT_ZERO_SANDBOX_URL", "http://127.0.0.1:9"),
        ("AGENT_ZERO_SANDBOX_TOKEN", "e2e-unreached"),
        ("OPENAI_API_KEY", "sk-e2e-unreached"),
    ];
    let server = start(runtime, &github, &runnable);

    let reply = deliver(&server, "issues", "policy-1", &body);
    assert_eq!(reply.status, 202, "{}", reply.text());
    assert_eq!(reply.json()["trigger"], "issue");
    let task = super::lifecycle::wait_task(&server, reply.json()["taskId"].as_str().unwrap());
    assert_eq!(task["mode"], "fix", "the default branch's policy decided the mode: {task}");
    let contents = github.calls_matching("GET", &format!("/repos/{owner}/{repo}/contents/"));
    assert!(!contents.is_empty());
    let head = github.branch_sha(owner, repo, branch).unwrap();
    assert!(contents.iter().all(|c| c.query.iter().any(|(k, v)| k == "ref" && *v == head)), "{contents:?}");

    // A policy that does not validate: recorded, then failed naming the field.
    github.set_file(owner, repo, branch, ".agent-zero.yml", "version: 1\nautofix:\n  minConfidence: 7\n");
    let reply = deliver(&server, "issues", "policy-2", &body);
    assert_eq!(reply.status, 202, "{}", reply.text());
    let task = super::lifecycle::wait_task(&server, reply.json()["taskId"].as_str().unwrap());
    assert_eq!(task["state"], "failed", "{task}");
    let failure = task["failure"].as_str().unwrap_or_default();
    assert!(failure.contains("autofix.minConfidence"), "{failure}");
    assert!(task["result"].is_null(), "nothing ran: {task}");
}

/// `AGENT_ZERO_BASE_PATH=/agent-zero`, as behind a Spin route `/agent-zero/...`
/// or a Workers route `example.com/agent-zero/*`: intake (on workerd both of
/// its paths: the first delivery imports the key on the async path, the
/// later ones take the entry's), the API and the pages answer under it and
/// link under it; nothing answers outside it.
fn served_under_a_base_path(runtime: Runtime) {
    let github = FakeGitHub::start();
    let server =
        start(runtime, &github, &[("AGENT_ZERO_BASE_PATH", "/agent-zero"), ("AGENT_ZERO_WEBHOOK_MAX_BYTES", "100000")]);
    let body = fixture("ping", "payload.json");
    let good = sign_github(SECRET, &body);
    let wrong = sign_github("other-secret", &body);
    let post = |path: &str, delivery: &str, signature: &str| {
        let headers = [
            ("content-type", "application/json"),
            ("x-github-event", "ping"),
            ("x-github-delivery", delivery),
            ("x-hub-signature-256", signature),
        ];
        server.send("POST", path, &headers, &body)
    };
    let first = post("/agent-zero/webhooks/github", "base-1", &good);
    assert_eq!(first.status, 200, "{}", first.text());
    // The body limit is intake's under the base: over it is 413 naming it.
    use super::limits::{Body, exchange, host_of};
    let head = format!(
        "POST /agent-zero/webhooks/github HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         X-GitHub-Event: ping\r\nX-GitHub-Delivery: base-big\r\nContent-Length: 100001\r\n\r\n",
        host = host_of(&server),
    );
    let big = exchange(&server, head, Body::None);
    assert_eq!(big.status, 413, "{}", big.text());
    assert!(error_of(&big).1.contains("100000"), "{}", big.text());

    for round in 0..2 {
        let refused = post("/agent-zero/webhooks/github", &format!("base-wrong-{round}"), &wrong);
        assert_eq!(refused.status, 401, "{}", refused.text());
        let accepted = post("/agent-zero/webhooks/github", &format!("base-{round}-ok"), &good);
        assert_eq!(accepted.status, 200, "{}", accepted.text());
        // Intake's path at the root, or with the base's name run on: not
        // served. Sent without a body: a body refused unread (cancelled)
        // loses `wrangler dev`'s next request on the connection
        // (workerd#1741; see `limits.rs`).
        for outside in ["/webhooks/github", "/agent-zerox/webhooks/github", "/x/agent-zero/webhooks/github"] {
            let headers = [
                ("content-type", "application/json"),
                ("x-github-event", "ping"),
                ("x-hub-signature-256", good.as_str()),
            ];
            let reply = server.send("POST", outside, &headers, b"");
            assert_eq!(reply.status, 404, "{outside}: {}", reply.text());
            assert!(error_of(&reply).1.contains("served under /agent-zero"), "{outside}: {}", reply.text());
        }
    }
    let get = |path: &str| server.send("GET", path, &[], b"");
    let health = get("/agent-zero/api/v1/health");
    assert_eq!(health.status, 200, "{}", health.text());
    assert_eq!(get("/api/v1/health").status, 404);
    let document = get("/agent-zero/api/v1/openapi.json");
    assert_eq!(document.json()["servers"][0]["url"], "/agent-zero", "{}", document.text());
    let docs = get("/agent-zero/api/v1/docs");
    assert_eq!(docs.status, 200);
    let html = docs.text();
    let links: Vec<&str> = html
        .split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter(|l| l.starts_with('/'))
        .collect();
    assert!(!links.is_empty(), "{html}");
    for link in links {
        assert!(link.starts_with("/agent-zero/"), "{link} ignores the base path");
        assert_eq!(get(link).status, 200, "{link}");
    }
}
