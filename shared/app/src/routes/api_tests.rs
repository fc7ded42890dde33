//! The task API end to end over the in-memory host: authorization matrix,
//! validation, pagination, approvals, audit, CORS and redaction.

use agent_zero_contracts::TaskState;
use agent_zero_engine::{Entry, Fact, log_key};
use agent_zero_ports::{HttpClient, KeyValue};
use serde_json::{Value, json};

use crate::Settings;
use crate::test_host::{TestHost, block_on};

const ALICE: &str = "tok-alice-7d41c2e9f0a8";
const BOB: &str = "tok-bob-3b9e51d07c26";
const TOKENS: &str = "alice:tok-alice-7d41c2e9f0a8,bob:tok-bob-3b9e51d07c26";
const SHA: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c";

fn settings(extra: &[(&str, &str)]) -> Settings {
    let mut pairs = vec![
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", TOKENS),
        ("AGENT_ZERO_CONTROL_PLANE_MODES", "alice:observe|suggest|fix"),
        ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets"),
    ];
    pairs.extend_from_slice(&crate::test_host::RUNNABLE);
    pairs.extend_from_slice(extra);
    Settings::from_pairs(pairs)
}

fn request(method: &str, uri: &str, token: Option<&str>, body: Option<&Value>) -> http::Request<Vec<u8>> {
    let mut builder = http::Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    if body.is_some() {
        builder = builder.header("content-type", "application/json");
    }
    builder.body(body.map(|b| serde_json::to_vec(b).unwrap()).unwrap_or_default()).unwrap()
}

struct Reply {
    status: u16,
    headers: http::HeaderMap,
    body: Value,
}

fn send<H: HttpClient>(host: &TestHost<H>, settings: &Settings, request: http::Request<Vec<u8>>) -> Reply {
    let response = host.send(settings, request);
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = serde_json::from_slice(response.body()).unwrap_or(Value::Null);
    Reply { status, headers, body }
}

fn create_body(repository: &str, mode: &str) -> Value {
    json!({
        "repository": repository,
        "mode": mode,
        "trigger": "feedback",
        "feedback": [{ "body": "`limit` of 0 divides by zero", "path": "src/limit.rs", "line": 3 }],
        "pullRequest": { "number": 7, "headSha": SHA },
    })
}

fn create(host: &TestHost, settings: &Settings, token: &str, repository: &str, mode: &str) -> Reply {
    send(host, settings, request("POST", "/api/v1/tasks", Some(token), Some(&create_body(repository, mode))))
}

/// Moves a created task to `needs-human` the way ticks would.
fn park_needs_human<H: HttpClient>(host: &TestHost<H>, id: &str) {
    let path = [
        TaskState::Queued,
        TaskState::Discovering,
        TaskState::Understanding,
        TaskState::Validating,
        TaskState::NeedsHuman,
    ];
    let facts = path
        .windows(2)
        .map(|w| Fact::Transition { from: w[0], to: w[1], message: String::new(), attempt: None })
        .collect();
    let entry = Entry { seq: 1, at_ms: host.invocation().now_ms, facts };
    block_on(host.kv.put(&log_key(id, 1), &serde_json::to_vec(&entry).unwrap())).unwrap();
}

fn error_field(reply: &Reply) -> Option<&str> {
    reply.body["error"]["field"].as_str()
}

#[test]
fn create_authorization_matrix() {
    let host = TestHost::new();
    let settings = settings(&[]);
    // (credential, repository, mode) -> (status, field)
    let none: Option<&str> = None;
    for (token, repository, mode, status, field) in [
        (none, "acme/widgets", "observe", 401, Some("Authorization")),
        (Some("tok-mallory-000000000000"), "acme/widgets", "observe", 401, Some("Authorization")),
        (Some(BOB), "acme/widgets", "suggest", 201, None),
        (Some(BOB), "acme/widgets", "fix", 403, Some("mode")),
        (Some(BOB), "acme/other", "suggest", 403, Some("repository")),
        (Some(BOB), "acme/other", "fix", 403, Some("repository")),
        (Some(ALICE), "acme/widgets", "fix", 201, None),
        (Some(ALICE), "ACME/Widgets", "observe", 201, None),
        (Some(ALICE), "acme/other", "fix", 403, Some("repository")),
        (Some(ALICE), "acme/widgets", "autonomous", 403, Some("mode")),
    ] {
        let reply =
            send(&host, &settings, request("POST", "/api/v1/tasks", token, Some(&create_body(repository, mode))));
        assert_eq!(
            (reply.status, error_field(&reply)),
            (status, field),
            "{token:?} {repository} {mode}: {}",
            reply.body
        );
        if status == 401 {
            assert_eq!(reply.headers.get("www-authenticate").unwrap(), "Bearer");
        }
        if status == 201 {
            let id = reply.body["id"].as_str().unwrap();
            assert_eq!(reply.headers.get("location").unwrap().to_str().unwrap(), format!("/api/v1/tasks/{id}"));
            assert_eq!(reply.body["requestedMode"], mode);
            // The default policy (no GitHub credentials) restricts every run to observe.
            assert_eq!(reply.body["mode"], "observe");
            assert_eq!(reply.body["state"], "queued");
        }
    }
    // Every accepted create enqueued exactly its first tick.
    let ticks = host.queue.ticks.borrow();
    assert_eq!(ticks.len(), 3);
    assert!(ticks.iter().all(|(t, delay)| t.expected_seq == 1 && *delay == 0 && t.task_id.starts_with("api-")));
}

#[test]
fn without_tokens_mutations_and_audit_fail_closed_and_reads_stay_open() {
    let host = TestHost::new();
    let settings = Settings::from_pairs([("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets")]);
    let decide = json!({ "decision": "approve" });
    for (method, uri, body) in [
        ("POST", "/api/v1/tasks", Some(create_body("acme/widgets", "observe"))),
        ("POST", "/api/v1/approvals/api-1", Some(decide)),
        ("GET", "/api/v1/audit", None),
    ] {
        let reply = send(&host, &settings, request(method, uri, Some(ALICE), body.as_ref()));
        assert_eq!(reply.status, 503, "{method} {uri}");
        assert_eq!(reply.body["error"]["code"], "not_configured");
        assert_eq!(error_field(&reply), Some("AGENT_ZERO_CONTROL_PLANE_TOKENS"));
    }
    assert_eq!(send(&host, &settings, request("GET", "/api/v1/tasks", None, None)).status, 200);
    assert!(host.kv.snapshot().is_empty(), "nothing was written");
}

#[test]
fn reads_are_open_unless_the_operator_requires_a_token() {
    let host = TestHost::new();
    let open = settings(&[]);
    let id = create(&host, &open, ALICE, "acme/widgets", "observe").body["id"].as_str().unwrap().to_owned();
    let task = format!("/api/v1/tasks/{id}");
    let closed = settings(&[("AGENT_ZERO_CONTROL_PLANE_READS", "token")]);
    for uri in ["/api/v1/tasks", task.as_str()] {
        for (token, open_status, closed_status) in [
            (None, 200, 401),
            (Some("tok-mallory-000000000000"), 200, 401),
            (Some(BOB), 200, 200),
            (Some(ALICE), 200, 200),
        ] {
            assert_eq!(send(&host, &open, request("GET", uri, token, None)).status, open_status, "{uri} {token:?}");
            assert_eq!(send(&host, &closed, request("GET", uri, token, None)).status, closed_status, "{uri} {token:?}");
        }
    }
    // The audit log always needs a token; the document never does.
    for (token, status) in [(None, 401), (Some("tok-mallory-000000000000"), 401), (Some(BOB), 200), (Some(ALICE), 200)]
    {
        assert_eq!(send(&host, &open, request("GET", "/api/v1/audit", token, None)).status, status, "{token:?}");
    }
    for uri in ["/api/v1/openapi.json", "/api/v1/docs"] {
        assert_eq!(send(&host, &closed, request("GET", uri, None, None)).status, 200, "{uri}");
    }
    let bad = settings(&[("AGENT_ZERO_CONTROL_PLANE_READS", "sometimes")]);
    let reply = send(&host, &bad, request("GET", "/api/v1/tasks", None, None));
    assert_eq!((reply.status, error_field(&reply)), (503, Some("AGENT_ZERO_CONTROL_PLANE_READS")));
}

#[test]
fn get_task_shows_events_and_result() {
    let host = TestHost::new();
    let settings = settings(&[]);
    let id = create(&host, &settings, ALICE, "acme/widgets", "observe").body["id"].as_str().unwrap().to_owned();
    park_needs_human(&host, &id);
    let reply = send(&host, &settings, request("GET", &format!("/api/v1/tasks/{id}"), None, None));
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["state"], "needs-human");
    assert_eq!(reply.body["source"], "api:alice");
    assert_eq!(reply.body["events"].as_array().unwrap().len(), 4);
    assert_eq!(reply.body["result"], Value::Null);
    assert_eq!(reply.body["updatedAt"], reply.body["events"][3]["timestamp"]);
    assert_eq!(reply.body["pullRequest"]["number"], 7);
    for missing in ["/api/v1/tasks/api-nope", "/api/v1/tasks/a%2Fb", "/api/v1/tasks/..."] {
        let reply = send(&host, &settings, request("GET", missing, None, None));
        assert_eq!((reply.status, reply.body["error"]["code"].as_str()), (404, Some("not_found")), "{missing}");
    }
}

#[test]
fn approvals_matrix_conflicts_and_principal() {
    let host = TestHost::new();
    let settings = settings(&[]);
    // A task in a repository that is no longer allowlisted can still be decided.
    let waiting: Vec<String> = (0..3)
        .map(|_| {
            let id = create(&host, &settings, ALICE, "acme/widgets", "fix").body["id"].as_str().unwrap().to_owned();
            park_needs_human(&host, &id);
            id
        })
        .collect();
    let unlisted = Settings::from_pairs([
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", TOKENS),
        ("AGENT_ZERO_CONTROL_PLANE_MODES", "alice:observe|suggest|fix"),
    ]);
    let approve = json!({ "decision": "approve", "comment": "reviewed" });
    let reject = json!({ "decision": "reject" });
    let none: Option<&str> = None;
    let decide = |settings: &Settings, id: &str, token: Option<&str>, body: &Value| {
        send(&host, settings, request("POST", &format!("/api/v1/approvals/{id}"), token, Some(body)))
    };
    for (token, body, status, field) in [
        (none, &approve, 401, Some("Authorization")),
        (Some("tok-mallory-000000000000"), &approve, 401, Some("Authorization")),
        // The task's mode is observe (default policy), which bob holds: allowed.
        (Some(BOB), &json!({ "decision": "approve", "actor": "alice" }), 400, Some("actor")),
    ] {
        let reply = decide(&settings, &waiting[0], token, body);
        assert_eq!((reply.status, error_field(&reply)), (status, field), "{token:?}: {}", reply.body);
    }
    let reply = decide(&unlisted, &waiting[0], Some(BOB), &approve);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["principal"], "bob");
    assert_eq!(reply.body["state"], "planning");
    let reply = decide(&settings, &waiting[1], Some(ALICE), &reject);
    assert_eq!((reply.status, &reply.body["state"]), (200, &json!("failed")));
    let detail = send(&host, &settings, request("GET", &format!("/api/v1/tasks/{}", waiting[1]), None, None)).body;
    assert_eq!(detail["state"], "failed");
    assert!(detail["events"].as_array().unwrap().iter().any(|e| e["message"] == "rejected by alice"));
    assert_eq!(detail["result"]["state"], "failed");

    // Deciding again, or deciding a task that never waited: 409.
    assert_eq!(decide(&settings, &waiting[0], Some(ALICE), &approve).status, 409);
    let queued = create(&host, &settings, ALICE, "acme/widgets", "observe").body["id"].as_str().unwrap().to_owned();
    let reply = decide(&settings, &queued, Some(ALICE), &reject);
    assert_eq!((reply.status, reply.body["error"]["code"].as_str()), (409, Some("conflict")));
    assert_eq!(decide(&settings, "api-missing", Some(ALICE), &reject).status, 404);

    // The index follows the decisions.
    let list =
        |state: &str| send(&host, &settings, request("GET", &format!("/api/v1/tasks?state={state}"), None, None)).body;
    assert_eq!(list("planning")["items"][0]["id"], json!(waiting[0]));
    assert_eq!(list("failed")["items"][0]["id"], json!(waiting[1]));
    // (waiting[2] was parked by hand, so the index still calls it queued.)
    assert_eq!(list("queued")["items"].as_array().unwrap().len(), 2);
}

#[test]
fn approving_needs_the_tasks_mode_granted() {
    let host = TestHost::new();
    // A policy allowing fix would come from the repository; here the task's
    // stimulus mode is set through a grant-less principal's view: the task
    // log says `fix`.
    let settings = settings(&[]);
    let id = create(&host, &settings, ALICE, "acme/widgets", "fix").body["id"].as_str().unwrap().to_owned();
    let key = log_key(&id, 0);
    let mut entry: Value = serde_json::from_slice(&block_on(host.kv.get(&key)).unwrap().unwrap()).unwrap();
    entry["facts"][0]["stimulus"]["mode"] = json!("fix");
    block_on(host.kv.put(&key, &serde_json::to_vec(&entry).unwrap())).unwrap();
    block_on(host.kv.delete(&agent_zero_engine::meta_key(&id))).unwrap();
    park_needs_human(&host, &id);
    let uri = format!("/api/v1/approvals/{id}");
    let reply = send(&host, &settings, request("POST", &uri, Some(BOB), Some(&json!({ "decision": "approve" }))));
    assert_eq!((reply.status, error_field(&reply)), (403, Some("decision")));
    let reply = send(&host, &settings, request("POST", &uri, Some(ALICE), Some(&json!({ "decision": "approve" }))));
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[test]
fn validation_errors_name_the_field() {
    let host = TestHost::new();
    let settings = settings(&[]);
    let base = create_body("acme/widgets", "observe");
    let with = |pointer: &str, value: Value| {
        let mut body = base.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let parent = body.pointer_mut(parent).unwrap();
        match parent {
            Value::Array(items) => items[key.parse::<usize>().unwrap()] = value,
            _ => parent[key] = value,
        }
        body
    };
    let cases = [
        (json!({ "repository": "acme/widgets", "trigger": "feedback", "actor": "x" }), "actor"),
        (with("/repository", json!(12)), "repository"),
        (with("/repository", json!("no-slash")), "repository"),
        (with("/mode", json!("root")), "mode"),
        (with("/trigger", json!("issue")), "issue"),
        (with("/trigger", json!("sometimes")), "trigger"),
        (with("/feedback", json!([])), "feedback"),
        (with("/feedback/0/body", json!("")), "feedback[0].body"),
        (with("/feedback/0/body", json!("x".repeat(16 * 1024 + 1))), "feedback[0].body"),
        (with("/feedback/0/line", json!(0)), "feedback[0].line"),
        (with("/feedback/0/line", json!(-1)), "feedback[0].line"),
        (with("/feedback/0/path", json!("../etc/passwd")), "feedback[0].path"),
        (with("/feedback/0/requestedChanges", json!("yes")), "feedback[0].requestedChanges"),
        (with("/feedback/0", json!({ "body": "b", "kind": "manual" })), "feedback[0].kind"),
        (with("/pullRequest/headSha", json!("abc")), "pullRequest.headSha"),
        (with("/pullRequest/number", json!(0)), "pullRequest.number"),
        (with("/pullRequest", json!({ "number": 1 })), "pullRequest"),
        (json!({ "repository": "acme/widgets", "trigger": "proactive" }), "pullRequest"),
        (json!({ "trigger": "feedback" }), "repository"),
        (with("/feedback", json!((0..21).map(|_| json!({ "body": "b" })).collect::<Vec<_>>())), "feedback"),
    ];
    for (body, field) in cases {
        let reply = send(&host, &settings, request("POST", "/api/v1/tasks", Some(ALICE), Some(&body)));
        assert_eq!(reply.status, 400, "{body}: {}", reply.body);
        assert_eq!(reply.body["error"]["code"], "invalid_request");
        let got = error_field(&reply).unwrap_or_default();
        assert!(
            got == field || got.starts_with(&format!("{field}.")),
            "{body}: field {got:?}, wanted {field}: {}",
            reply.body
        );
    }
    let not_json = http::Request::builder()
        .method("POST")
        .uri("/api/v1/tasks")
        .header("authorization", format!("Bearer {ALICE}"))
        .header("content-type", "text/plain")
        .body(b"{}".to_vec())
        .unwrap();
    assert_eq!(send(&host, &settings, not_json).status, 415);
    let huge = json!({ "repository": "acme/widgets", "trigger": "feedback", "files": ["a".repeat(300 * 1024)] });
    assert_eq!(send(&host, &settings, request("POST", "/api/v1/tasks", Some(ALICE), Some(&huge))).status, 413);
    for query in ["limit=0", "limit=101", "limit=x", "state=done", "repository=x", "cursor=zz", "sort=asc"] {
        let reply = send(&host, &settings, request("GET", &format!("/api/v1/tasks?{query}"), None, None));
        let name = query.split('=').next().unwrap();
        assert_eq!((reply.status, error_field(&reply)), (400, Some(name)), "{query}");
    }
    // Nothing was created by any of it.
    assert!(host.queue.ticks.borrow().is_empty());
}

#[test]
fn pagination_is_newest_first_stable_under_concurrent_creates_and_bounded_in_cost() {
    let host = TestHost::new();
    let settings = settings(&[]);
    let mut created = Vec::new();
    for i in 0..25 {
        host.clock.advance(1_000);
        let repository = if i % 5 == 0 { "acme/widgets" } else { "ACME/widgets" };
        created.push(create(&host, &settings, ALICE, repository, "observe").body["id"].as_str().unwrap().to_owned());
    }
    let newest_first: Vec<String> = created.iter().rev().cloned().collect();
    let page = |query: &str| send(&host, &settings, request("GET", &format!("/api/v1/tasks?{query}"), None, None)).body;
    let ids = |body: &Value| -> Vec<String> {
        body["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect()
    };

    let first = page("limit=10");
    let mut seen = ids(&first);
    // Tasks created while a client pages do not shift later pages.
    let mut late = Vec::new();
    let mut cursor = first["nextCursor"].as_str().unwrap().to_owned();
    loop {
        host.clock.advance(1_000);
        late.push(create(&host, &settings, BOB, "acme/widgets", "suggest").body["id"].as_str().unwrap().to_owned());
        let next = page(&format!("limit=10&cursor={cursor}"));
        seen.extend(ids(&next));
        match next["nextCursor"].as_str() {
            Some(c) => cursor = c.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, newest_first, "every task once, newest first, none of the late ones");
    let fresh = ids(&page("limit=100"));
    assert_eq!(fresh.len(), 25 + late.len());
    assert_eq!(fresh[..late.len()], late.iter().rev().cloned().collect::<Vec<_>>()[..]);

    // Filters: by repository (case-insensitive) and by state.
    assert_eq!(ids(&page("repository=acme%2Fwidgets&limit=100")).len(), 25 + late.len());
    assert_eq!(ids(&page("state=queued&limit=100")).len(), 25 + late.len());
    assert!(ids(&page("state=failed")).is_empty());

    // The cost of a page does not grow with the number of stored tasks.
    let cost = |host: &TestHost| {
        let before = host.kv.operations();
        let reply = send(host, &settings, request("GET", "/api/v1/tasks?limit=10", None, None));
        assert_eq!(reply.body["items"].as_array().unwrap().len(), 10);
        host.kv.operations() - before
    };
    let small = cost(&host);
    for _ in 0..200 {
        host.clock.advance(10);
        create(&host, &settings, ALICE, "acme/widgets", "observe");
    }
    assert_eq!(cost(&host), small);
    assert_eq!(small, 11, "1 list + 1 read per row");
}

#[test]
fn audit_log_records_who_what_when_and_outcome() {
    let host = TestHost::new();
    let settings = settings(&[]);
    create(&host, &settings, ALICE, "acme/widgets", "observe");
    host.clock.advance(1_000);
    create(&host, &settings, BOB, "acme/widgets", "fix");
    host.clock.advance(1_000);
    let _ =
        send(&host, &settings, request("POST", "/api/v1/tasks", Some("tok-mallory-000000000000"), Some(&json!({}))));
    let _ = send(
        &host,
        &settings,
        request("POST", "/api/v1/approvals/api-x", Some(ALICE), Some(&json!({ "decision": "reject" }))),
    );
    let reply = send(&host, &settings, request("GET", "/api/v1/audit", Some(BOB), None));
    assert_eq!(reply.status, 200);
    let items = reply.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 3, "the anonymous attempt wrote nothing: {items:?}");
    let summary: Vec<(&str, &str, u64, &str)> = items
        .iter()
        .map(|i| {
            (
                i["principal"].as_str().unwrap(),
                i["action"].as_str().unwrap(),
                i["status"].as_u64().unwrap(),
                i["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("alice", "approvals.decide", 404, "not_found"),
            ("bob", "tasks.create", 403, "forbidden"),
            ("alice", "tasks.create", 201, "ok"),
        ]
    );
    assert_eq!(items[1]["field"], "mode");
    assert!(items[2]["target"].as_str().unwrap().starts_with("api-"));
    assert_eq!(items[2]["at"], agent_zero_contracts::rfc3339(crate::test_host::START_MS));
    // Entries are write-once keys: nothing ever rewrote one.
    let keys: Vec<String> = host.kv.snapshot().into_keys().filter(|k| k.starts_with("audit/")).collect();
    assert_eq!(keys.len(), 3);
    let page = send(&host, &settings, request("GET", "/api/v1/audit?limit=2", Some(BOB), None)).body;
    let next = page["nextCursor"].as_str().unwrap();
    let rest =
        send(&host, &settings, request("GET", &format!("/api/v1/audit?limit=2&cursor={next}"), Some(BOB), None)).body;
    assert_eq!(rest["items"][0]["outcome"], "ok");
}

#[test]
fn no_configured_secret_reaches_storage() {
    // App credentials: the create looks the installation up on the loopback GitHub.
    let (github, host) = super::api_app_tests::app_world();
    let github_url = github.url();
    let secrets = [
        ("GITHUB_WEBHOOK_SECRET", "whsec-9f8e7d6c5b4a"),
        ("GITHUB_APP_PRIVATE_KEY", include_str!("../../../../tests/fakes/src/data/test-app-key.pkcs1.pem")),
        ("OPENAI_API_KEY", "sk-test-0a1b2c3d4e5f"),
        ("ANTHROPIC_API_KEY", "sk-ant-test-5f4e3d2c"),
        ("AGENT_ZERO_SANDBOX_TOKEN", "sbx-token-77aa88bb"),
    ];
    let mut pairs: Vec<(&str, &str)> = secrets.to_vec();
    pairs.extend([
        ("GITHUB_APP_ID", "123456"),
        ("GITHUB_API_URL", github_url.as_str()),
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", TOKENS),
        ("AGENT_ZERO_CONTROL_PLANE_MODES", "alice:observe|suggest|fix"),
        ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets"),
        ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
        ("AGENT_ZERO_SANDBOX_URL", "http://sandbox.invalid"),
    ]);
    let settings = Settings::from_pairs(pairs);
    let leak = format!("{ALICE} {BOB} {}", secrets.iter().map(|(_, v)| *v).collect::<Vec<_>>().join(" "));
    let body = json!({
        "repository": "acme/widgets",
        "trigger": "feedback",
        "feedback": [{ "body": format!("please use {leak}"), "author": ALICE, "path": format!("src/{BOB}.rs") }],
        "issue": { "number": 3, "title": format!("leak {BOB}"), "url": format!("https://x.example/{ALICE}") },
        "files": [format!("{ALICE}.txt")],
    });
    let reply = send(&host, &settings, request("POST", "/api/v1/tasks", Some(ALICE), Some(&body)));
    assert_eq!(reply.status, 201, "{}", reply.body);
    let id = reply.body["id"].as_str().unwrap().to_owned();
    park_needs_human(&host, &id);
    let decide = json!({ "decision": "reject", "comment": leak });
    assert_eq!(
        send(&host, &settings, request("POST", &format!("/api/v1/approvals/{id}"), Some(ALICE), Some(&decide))).status,
        200
    );
    // A refused attempt whose input carries a secret is audited too.
    let _ = send(
        &host,
        &settings,
        request("POST", "/api/v1/tasks", Some(BOB), Some(&create_body(&format!("acme/{BOB}"), "fix"))),
    );

    let stored = host.kv.snapshot();
    assert!(stored.keys().any(|k| k.starts_with("audit/")) && stored.keys().any(|k| k.starts_with("task/")));
    let mut every_secret: Vec<&str> = secrets.iter().map(|(_, v)| *v).collect();
    every_secret.extend([ALICE, BOB, TOKENS]);
    for (key, value) in &stored {
        for secret in &every_secret {
            assert!(!key.contains(secret), "secret in key {key}");
            assert!(!String::from_utf8_lossy(value).contains(secret), "secret in {key}");
        }
    }
    // With App credentials, reads need a token.
    let text =
        send(&host, &settings, request("GET", &format!("/api/v1/tasks/{id}"), Some(ALICE), None)).body.to_string();
    assert!(text.contains("[redacted]"), "{text}");
}

#[test]
fn cors_only_for_allowlisted_origins() {
    let host = TestHost::new();
    let settings = settings(&[("AGENT_ZERO_CONTROL_PLANE_ORIGINS", "https://ops.example")]);
    let with_origin = |method: &str, uri: &str, origin: &str| {
        let request = http::Request::builder()
            .method(method)
            .uri(uri)
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .body(Vec::new())
            .unwrap();
        host.send(&settings, request)
    };
    let preflight = with_origin("OPTIONS", "/api/v1/tasks", "https://ops.example");
    assert_eq!(preflight.status(), 204);
    assert_eq!(preflight.headers()["access-control-allow-origin"], "https://ops.example");
    assert_eq!(preflight.headers()["access-control-allow-methods"], "GET, POST");
    assert!(preflight.headers()["access-control-allow-headers"].to_str().unwrap().contains("authorization"));
    let get = with_origin("GET", "/api/v1/tasks", "https://ops.example");
    assert_eq!(get.headers()["access-control-allow-origin"], "https://ops.example");
    let error = with_origin("GET", "/api/v1/tasks?limit=0", "https://ops.example");
    assert_eq!((error.status().as_u16(), error.headers().contains_key("access-control-allow-origin")), (400, true));
    for (method, uri, origin) in [
        ("OPTIONS", "/api/v1/tasks", "https://evil.example"),
        ("GET", "/api/v1/tasks", "https://evil.example"),
        ("GET", "/api/v1/tasks", "https://ops.example.evil"),
        ("OPTIONS", "/webhooks/github", "https://ops.example"),
    ] {
        let response = with_origin(method, uri, origin);
        assert!(!response.headers().contains_key("access-control-allow-origin"), "{method} {uri} {origin}");
    }
    assert_eq!(with_origin("OPTIONS", "/api/v1/nope", "https://ops.example").status(), 404);
    let unconfigured = host.send(&self::settings(&[]), request("OPTIONS", "/api/v1/tasks", None, None));
    assert_eq!(unconfigured.status(), 204);
    assert!(!unconfigured.headers().contains_key("access-control-allow-origin"));
}

#[test]
fn the_documented_create_example_is_accepted() {
    let host = TestHost::new();
    let settings = settings(&[]);
    let document: Value = serde_json::from_str(super::openapi::DOCUMENT).unwrap();
    let example =
        document.pointer("/paths/~1api~1v1~1tasks/post/requestBody/content/application~1json/example").unwrap();
    let reply = send(&host, &settings, request("POST", "/api/v1/tasks", Some(ALICE), Some(example)));
    assert_eq!(reply.status, 201, "{}", reply.body);
    let example = document
        .pointer("/paths/~1api~1v1~1approvals~1{id}/post/requestBody/content/application~1json/example")
        .unwrap();
    let id = reply.body["id"].as_str().unwrap().to_owned();
    park_needs_human(&host, &id);
    let reply = send(&host, &settings, request("POST", &format!("/api/v1/approvals/{id}"), Some(ALICE), Some(example)));
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[test]
fn with_a_github_token_the_repository_policy_is_read_and_a_failure_creates_nothing() {
    let host = TestHost::new();
    let settings = settings(&[("GITHUB_TOKEN", "ghp_test_1234567890")]);
    let reply = create(&host, &settings, ALICE, "acme/widgets", "fix");
    // The test host refuses every outbound request.
    assert_eq!((reply.status, reply.body["error"]["code"].as_str()), (502, Some("upstream_failed")), "{}", reply.body);
    assert!(host.queue.ticks.borrow().is_empty());
    assert!(!host.kv.snapshot().keys().any(|k| k.starts_with("task/") || k.starts_with("index/")));
    assert!(!reply.body.to_string().contains("ghp_test_1234567890"));
}

#[test]
fn a_feedback_author_is_the_principal_or_marked_as_caller_supplied() {
    let host = TestHost::new();
    let settings = settings(&[]);
    let body = json!({
        "repository": "acme/widgets",
        "trigger": "feedback",
        "feedback": [
            { "body": "parse_limit accepts 0", "author": "torvalds" },
            { "body": "and it is never checked" },
        ],
        "pullRequest": { "number": 42, "headSha": SHA },
    });
    let reply = send(&host, &settings, request("POST", "/api/v1/tasks", Some(ALICE), Some(&body)));
    assert_eq!(reply.status, 201, "{}", reply.body);
    let stored: String = host.kv.snapshot().values().map(|v| String::from_utf8_lossy(v).into_owned()).collect();
    assert!(
        stored.contains("torvalds (caller-supplied, via api:alice)"),
        "a named author is marked as the caller's word"
    );
    assert!(stored.contains("\"author\":\"api:alice\""), "without a name, the author is the principal");
    assert!(!stored.contains("\"author\":\"torvalds\""), "never stored as if GitHub had said so");
}

#[test]
fn a_delivery_awaiting_its_policy_gate_cannot_be_decided() {
    // Before its first tick a webhook task has no stimulus (no mode, no
    // policy): a decision on it is a conflict, not a crash of the route.
    let host = TestHost::new();
    let settings = settings(&[]);
    let received: agent_zero_engine::Received = serde_json::from_value(json!({
        "taskId": "gh-awaiting-1",
        "repository": "acme/widgets",
        "trigger": "issue",
        "seed": {}, // the field's name in logs before 2026-12-07, still read
    }))
    .unwrap();
    block_on(agent_zero_engine::receive(&host.kv, &host.queue, received, 1_000)).unwrap();
    for decision in ["approve", "reject"] {
        let reply = send(
            &host,
            &settings,
            request("POST", "/api/v1/approvals/gh-awaiting-1", Some(ALICE), Some(&json!({ "decision": decision }))),
        );
        assert_eq!(reply.status, 409, "{decision}: {}", reply.body);
        assert!(reply.body.to_string().contains("not needs-human"), "{}", reply.body);
    }
    assert_eq!(block_on(host.kv.get(&log_key("gh-awaiting-1", 1))).unwrap(), None, "nothing was committed");
}

#[test]
fn under_a_base_path_routes_limits_and_links_carry_it_and_nothing_answers_outside() {
    let host = TestHost::new();
    let settings = settings(&[("AGENT_ZERO_BASE_PATH", "/agent-zero")]);
    assert_eq!(send(&host, &settings, request("GET", "/agent-zero/api/v1/health", None, None)).status, 200);
    // Outside it, even on a path the app serves at the root: 404 naming the base.
    for uri in ["/api/v1/health", "/agent-zerox/api/v1/health", "/agent/api/v1/health"] {
        let reply = send(&host, &settings, request("GET", uri, None, None));
        assert_eq!(reply.status, 404, "{uri}");
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("served under /agent-zero"), "{uri}: {message}");
    }
    // The body limit is the route's under the base (a create body is over
    // the 4 KiB a body-less route takes).
    assert_eq!(
        crate::body_limit(&http::Method::POST, "/agent-zero/api/v1/tasks", &settings).unwrap(),
        crate::routes::MAX_CREATE_BYTES
    );
    let outside = crate::body_limit(&http::Method::POST, "/api/v1/tasks", &settings).unwrap_err();
    assert_eq!(outside.code, crate::ErrorCode::NotFound, "{}", outside.message);

    let body = create_body("acme/widgets", "observe");
    let created = send(&host, &settings, request("POST", "/agent-zero/api/v1/tasks", Some(ALICE), Some(&body)));
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap();
    assert_eq!(created.headers["location"], format!("/agent-zero/api/v1/tasks/{id}").as_str());
    let task = send(&host, &settings, request("GET", &format!("/agent-zero/api/v1/tasks/{id}"), None, None));
    assert_eq!(task.status, 200);
    assert_eq!(task.body["links"]["self"], format!("/agent-zero/api/v1/tasks/{id}"));
    assert_eq!(task.body["links"]["evidence"], format!("/agent-zero/api/v1/tasks/{id}/evidence"));

    // The OpenAPI document names the base as its server; the docs link under it.
    let document = send(&host, &settings, request("GET", "/agent-zero/api/v1/openapi.json", None, None));
    assert_eq!(document.body["servers"], json!([{ "url": "/agent-zero" }]));
    assert!(document.body["paths"]["/api/v1/tasks"].is_object());
    let docs = host.send(&settings, request("GET", "/agent-zero/api/v1/docs", None, None));
    let html = String::from_utf8(docs.into_body()).unwrap();
    assert!(html.contains("href=\"/agent-zero/api/v1/openapi.json\""), "{html}");
    for link in html.split("href=\"").skip(1).filter_map(|rest| rest.split('"').next()).filter(|l| l.starts_with('/')) {
        assert!(link.starts_with("/agent-zero/"), "{link} ignores the base path");
    }
    // At the root, the document is served as written (no `servers`).
    let root = send(&host, &self::settings(&[]), request("GET", "/api/v1/openapi.json", None, None));
    assert!(root.body.get("servers").is_none());
}

#[test]
fn a_malformed_base_path_answers_503_naming_it_on_every_route() {
    let host = TestHost::new();
    for value in ["zz", "/zz/", "/a//b", "/a/../b", "/a b", "/a%2Fb", "/ä"] {
        let settings = settings(&[("AGENT_ZERO_BASE_PATH", value)]);
        let under = format!("{value}/api/v1/health");
        let uris = ["/api/v1/health", "/webhooks/github", &under];
        for uri in uris.into_iter().filter(|uri| http::Uri::try_from(*uri).is_ok()) {
            let reply = send(&host, &settings, request("GET", uri, None, None));
            assert_eq!(reply.status, 503, "{value:?} {uri}");
            assert_eq!(reply.body["error"]["field"], "AGENT_ZERO_BASE_PATH", "{value:?}");
            assert!(!reply.body["error"]["message"].as_str().unwrap().contains(value), "the value is not echoed");
        }
        let limit = crate::body_limit(&http::Method::POST, "/webhooks/github", &settings).unwrap_err();
        assert_eq!(limit.field.as_deref(), Some("AGENT_ZERO_BASE_PATH"));
    }
    // `/` and unset are the root.
    for value in ["/", " "] {
        let settings = settings(&[("AGENT_ZERO_BASE_PATH", value)]);
        assert_eq!(send(&host, &settings, request("GET", "/api/v1/health", None, None)).status, 200, "{value:?}");
    }
}
