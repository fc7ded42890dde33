//! Evidence routes over the in-memory host. Tasks are created through
//! `POST /api/v1/tasks` and moved on by the app's own ticks
//! ([`crate::run_tick`]): with no sandbox configured, a task fails and
//! concludes with its evidence, which is what these routes serve.

use agent_zero_contracts::TaskState;
use agent_zero_engine::{Entry, Fact, Tick, log_key};
use agent_zero_ports::KeyValue;
use agent_zero_ports::MemoryKvFault;
use serde_json::json;

use super::*;
use crate::Settings;
use crate::test_host::{TestHost, block_on};

const SECRET: &str = "ghp_SECRETtoken0123456789";
const TOKEN: &str = "tok-alice-5e0c1b2a9d8f";
const HOSTILE: &str = "<script>alert(1)</script> @octocat #12 \u{202E}";

/// The operator's configuration when the task came in: `SECRET` was not
/// configured yet, so intake could not redact it.
fn intake_config() -> Settings {
    Settings::from_pairs(
        [
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "alice:tok-alice-5e0c1b2a9d8f"),
            ("AGENT_ZERO_CONTROL_PLANE_MODES", "alice:observe|suggest|fix"),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "octo/widgets"),
        ]
        .into_iter()
        .chain(crate::test_host::RUNNABLE),
    )
}

/// The configuration when the evidence is read: `SECRET` is now a
/// credential, and rendering must redact it wherever it was recorded.
fn settings() -> Settings {
    Settings::from_pairs(
        [
            ("GITHUB_TOKEN", SECRET),
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "alice:tok-alice-5e0c1b2a9d8f"),
            ("AGENT_ZERO_CONTROL_PLANE_MODES", "alice:observe|suggest|fix"),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "octo/widgets"),
        ]
        .into_iter()
        .chain(crate::test_host::RUNNABLE),
    )
}

/// Creates a feedback task through the API.
fn create(host: &TestHost) -> String {
    let body = json!({
        "repository": "octo/widgets",
        "mode": "observe",
        "trigger": "feedback",
        "feedback": [{ "body": format!("{HOSTILE} `limit` of 0 divides by zero"), "path": "src/limit.rs", "line": 3 }],
        "pullRequest": { "number": 7, "headSha": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c" },
    });
    let request = http::Request::builder()
        .method("POST")
        .uri("/api/v1/tasks")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let response = host.send(&intake_config(), request);
    assert_eq!(response.status(), 201, "{}", String::from_utf8_lossy(response.body()));
    let created: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
    created["id"].as_str().expect("id").to_owned()
}

/// Runs the app's ticks on `id` until `done` holds (at most 40 ticks).
fn tick_until(host: &TestHost, id: &str, done: impl Fn(&Resident) -> bool) {
    for _ in 0..40 {
        let resident = block_on(agent_zero_engine::load(&host.kv, id)).unwrap().expect("task exists");
        if done(&resident) {
            return;
        }
        let next = Tick::new(id.to_owned(), resident.seq.map_or(0, |s| s + 1));
        host.clock.advance(60_000);
        let now = host.invocation().now_ms;
        let _ = block_on(crate::run_tick(host, &intake_config(), &next, now));
    }
    panic!("task {id} did not reach the expected state in 40 ticks");
}

/// A task the app's ticks failed (no sandbox is configured) and concluded.
fn seed_concluded(host: &TestHost) -> String {
    let id = create(host);
    tick_until(host, &id, |r| r.conclusion.concluded.is_some());
    id
}

/// Commits `facts` as the next entry of `id` and updates the index, as a
/// tick does; the facts carry hostile text and a value that is a secret by
/// the time the evidence is read.
fn commit(host: &TestHost, id: &str, facts: Vec<Fact>) {
    let mut after = block_on(agent_zero_engine::load(&host.kv, id)).unwrap().expect("task exists");
    let seq = after.seq.map_or(0, |s| s + 1);
    host.clock.advance(1_000);
    let now = host.invocation().now_ms;
    let entry = Entry { seq, at_ms: now, facts };
    block_on(host.kv.put(&log_key(id, seq), &serde_json::to_vec(&entry).unwrap())).unwrap();
    after.apply(&entry).unwrap();
    block_on(crate::task_index::record_tick(&host.kv, &after, now)).unwrap();
}

fn hostile_reason() -> String {
    format!("sandbox said {HOSTILE} </pre><b>bold</b> with {SECRET}")
}

/// A task that has started, with a hostile event message.
fn seed_running(host: &TestHost) -> String {
    let id = create(host);
    let moved = Fact::Transition {
        from: TaskState::Queued,
        to: TaskState::Discovering,
        message: hostile_reason(),
        attempt: None,
    };
    commit(host, &id, vec![moved]);
    id
}

/// A task that failed with a hostile reason, concluded by the runtime's own
/// [`agent_zero_engine::conclude`].
fn seed_hostile_concluded(host: &TestHost) -> String {
    let id = create(host);
    let reason = hostile_reason();
    let moved =
        Fact::Transition { from: TaskState::Queued, to: TaskState::Failed, message: reason.clone(), attempt: None };
    let failure = Fact::Failure { reason: reason.clone() };
    let mut ended = block_on(agent_zero_engine::load(&host.kv, &id)).unwrap().unwrap();
    let seq = ended.seq.map_or(0, |s| s + 1);
    ended.apply(&Entry { seq, at_ms: 0, facts: vec![moved.clone(), failure.clone()] }).unwrap();
    let stimulus = ended.stimulus.clone().unwrap();
    let (result, evidence) = agent_zero_engine::conclude(&ended, &stimulus, TerminalState::Failed, &reason);
    commit(host, &id, vec![moved, failure, Fact::Concluded { result: Box::new(result), evidence: Box::new(evidence) }]);
    id
}

fn get(host: &TestHost, path: &str, accept: Option<&str>) -> http::Response<Vec<u8>> {
    send(host, "GET", path, accept)
}

/// A read by alice: with GitHub credentials configured (`settings`), task
/// reads need a token.
fn send(host: &TestHost, method: &str, path: &str, accept: Option<&str>) -> http::Response<Vec<u8>> {
    let mut request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::AUTHORIZATION, format!("Bearer {TOKEN}"));
    if let Some(accept) = accept {
        request = request.header(http::header::ACCEPT, accept);
    }
    host.send(&settings(), request.body(Vec::new()).unwrap())
}

fn header<'a>(response: &'a http::Response<Vec<u8>>, name: &str) -> &'a str {
    response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
}

fn text(response: &http::Response<Vec<u8>>) -> String {
    String::from_utf8(response.body().clone()).expect("utf-8 body")
}

fn error_code(response: &http::Response<Vec<u8>>) -> String {
    let body: serde_json::Value = serde_json::from_slice(response.body()).expect("error shape is JSON");
    body["error"]["code"].as_str().expect("error.code").to_owned()
}

/// What every answer of these routes promises.
fn assert_safe(response: &http::Response<Vec<u8>>) {
    let body = text(response);
    assert!(!body.contains(SECRET), "a secret leaked: {body}");
    assert_eq!(header(response, "x-content-type-options"), "nosniff");
    assert!(header(response, "content-security-policy").starts_with("default-src 'none'"));
    assert!(!header(response, "cache-control").is_empty());
    if header(response, "content-type").starts_with("text/html") {
        assert_eq!(header(response, "content-security-policy"), HTML_CSP);
        let lower = body.to_lowercase();
        assert!(!lower.contains("<script") && !lower.contains("<img"), "live markup: {body}");
        assert!(!body.contains('\u{202E}'), "a bidi control survived");
    }
}

#[test]
fn negotiation_follows_quality_then_preference() {
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let cases: &[(Option<&str>, Option<Format>)] = &[
        (None, Some(Format::Json)),
        (Some("  "), Some(Format::Json)),
        (Some("*/*"), Some(Format::Json)),
        (Some(browser), Some(Format::Html)),
        (Some("text/markdown"), Some(Format::Markdown)),
        (Some("TEXT/Markdown; charset=utf-8"), Some(Format::Markdown)),
        (Some("application/json;q=0.5, text/markdown"), Some(Format::Markdown)),
        (Some("text/*"), Some(Format::Markdown)),
        (Some("text/*, text/markdown;q=0"), Some(Format::Html)),
        (Some("text/html;q=0, */*"), Some(Format::Json)),
        (Some("image/png"), None),
        (Some("text/plain, application/xml"), None),
        (Some("application/json;q=0"), None),
        (Some("application/json;q=nonsense"), None),
        (Some("garbage"), None),
    ];
    for (accept, expected) in cases {
        assert_eq!(negotiate(*accept), *expected, "{accept:?}");
    }
}

#[test]
fn concluded_evidence_in_every_format() {
    let host = TestHost::new();
    let id = seed_hostile_concluded(&host);
    let json = get(&host, &format!("/api/v1/tasks/{id}/evidence.json"), None);
    assert_eq!(json.status(), 200, "{}", text(&json));
    assert_eq!(header(&json, "content-type"), "application/json; charset=utf-8");
    assert_eq!(header(&json, "cache-control"), "private, max-age=300");
    let bundle: serde_json::Value = serde_json::from_slice(json.body()).unwrap();
    assert_eq!((bundle["taskId"].as_str(), bundle["state"].as_str()), (Some(id.as_str()), Some("failed")));
    assert_eq!(bundle["verified"], false);
    let summary = bundle["summary"].as_str().unwrap();
    assert!(
        summary.contains("<script>") && summary.contains(&format!("with {}", agent_zero_ports::REDACTED)),
        "{summary}"
    );

    let markdown = get(&host, &format!("/api/v1/tasks/{id}/evidence.md"), None);
    assert_eq!(markdown.status(), 200);
    assert_eq!(header(&markdown, "content-type"), "text/markdown; charset=utf-8");
    assert!(text(&markdown).contains(&id));

    let html = get(&host, &format!("/api/v1/tasks/{id}/evidence.html"), None);
    assert_eq!(html.status(), 200);
    assert_eq!(header(&html, "content-type"), "text/html; charset=utf-8");
    assert!(text(&html).contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the hostile title is shown escaped");
    let page = get(&host, &format!("/tasks/{id}"), None);
    assert_eq!((page.status(), text(&page)), (html.status(), text(&html)), "the page is the evidence html");
    for response in [&json, &markdown, &html, &page] {
        assert_safe(response);
    }
}

#[test]
fn negotiated_route_picks_the_format_or_answers_406() {
    let host = TestHost::new();
    let id = seed_concluded(&host);
    let path = format!("/api/v1/tasks/{id}/evidence");
    for (accept, content_type) in [
        (None, "application/json; charset=utf-8"),
        (Some("text/markdown"), "text/markdown; charset=utf-8"),
        (Some("text/html,*/*;q=0.8"), "text/html; charset=utf-8"),
    ] {
        let response = get(&host, &path, accept);
        assert_eq!(response.status(), 200, "{accept:?}");
        assert_eq!(header(&response, "content-type"), content_type, "{accept:?}");
        assert_eq!(header(&response, "vary"), "Accept");
        assert_safe(&response);
    }
    let refused = get(&host, &path, Some("image/png"));
    assert_eq!(refused.status(), 406);
    assert_eq!(error_code(&refused), "not_acceptable");
    assert!(text(&refused).contains("text/markdown"), "the message names what is available");
    assert_eq!(header(&refused, "vary"), "Accept");
    assert_safe(&refused);
}

#[test]
fn unknown_and_invalid_tasks() {
    let host = TestHost::new();
    for path in [
        "/api/v1/tasks/nope/evidence",
        "/api/v1/tasks/nope/evidence.md",
        "/api/v1/tasks/nope/evidence.json",
        "/api/v1/tasks/nope/evidence.html",
    ] {
        let response = get(&host, path, None);
        assert_eq!(response.status(), 404, "{path}");
        assert_eq!(error_code(&response), "not_found");
        assert_safe(&response);
        let invalid = get(&host, &path.replace("nope", "a%3Cb"), None);
        assert_eq!(invalid.status(), 400, "{path}");
        let body: serde_json::Value = serde_json::from_slice(invalid.body()).unwrap();
        assert_eq!(
            (body["error"]["code"].as_str(), body["error"]["field"].as_str()),
            (Some("invalid_request"), Some("id"))
        );
    }
    let page = get(&host, "/tasks/nope", None);
    assert_eq!(page.status(), 404);
    assert_eq!(header(&page, "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(&page, "cache-control"), "no-store");
    assert!(text(&page).contains("task `nope` does not exist"), "{}", text(&page));
    assert_safe(&page);
    let invalid = get(&host, "/tasks/%3Cscript%3E", None);
    assert_eq!(invalid.status(), 400);
    assert_safe(&invalid);
}

#[test]
fn a_running_task_has_no_evidence_yet() {
    let host = TestHost::new();
    let id = seed_running(&host);
    let state = block_on(agent_zero_engine::load(&host.kv, &id)).unwrap().unwrap().state;
    assert!(!state.is_terminal(), "{state}");
    for suffix in ["", ".md", ".json", ".html"] {
        let response = get(&host, &format!("/api/v1/tasks/{id}/evidence{suffix}"), None);
        assert_eq!(response.status(), 409, "{suffix}");
        assert_eq!(error_code(&response), "conflict");
        assert!(text(&response).contains(&format!("is {state} and has no evidence yet")), "{}", text(&response));
        assert_safe(&response);
    }
    let page = get(&host, &format!("/tasks/{id}"), None);
    assert_eq!(page.status(), 200);
    assert_eq!(header(&page, "cache-control"), "no-store");
    let body = text(&page);
    assert!(body.contains(&format!("in progress · {state}")), "{body}");
    assert!(body.contains("octo/widgets"), "{body}");
    let event = format!(
        "sandbox said &lt;script&gt;alert(1)&lt;/script&gt; @octocat #12 \u{FFFD} &lt;/pre&gt;&lt;b&gt;bold&lt;/b&gt; with {}",
        agent_zero_ports::REDACTED
    );
    assert!(body.contains(&event), "{body}");
    assert_safe(&page);
}

#[test]
fn task_list_shows_newest_first_escaped() {
    let host = TestHost::new();
    let empty = get(&host, "/", None);
    assert_eq!(empty.status(), 200);
    assert!(text(&empty).contains("No tasks"), "{}", text(&empty));
    assert_safe(&empty);

    let running = seed_running(&host);
    host.clock.advance(1_000);
    let done = seed_concluded(&host);
    let list = get(&host, "/", None);
    assert_eq!(list.status(), 200);
    let body = text(&list);
    let position = |id: &str| body.find(&format!("/tasks/{id}")).unwrap_or_else(|| panic!("{id} not listed: {body}"));
    assert!(position(&done) < position(&running), "newest first");
    assert!(body.contains(">failed<"), "{body}");
    assert_safe(&list);
    let head = send(&host, "HEAD", "/", None);
    assert_eq!((head.status().as_u16(), head.body().len()), (200, 0));
    let bad_cursor = get(&host, "/?cursor=bm90LWEtY3Vyc29y", None);
    assert_eq!(bad_cursor.status(), 400);
    assert_safe(&bad_cursor);
}

#[test]
fn closed_reads_close_the_pages_too() {
    let host = TestHost::new();
    let id = seed_concluded(&host);
    let closed = Settings::from_pairs([
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "alice:tok-alice-5e0c1b2a9d8f"),
        ("AGENT_ZERO_CONTROL_PLANE_READS", "token"),
    ]);
    for path in [format!("/api/v1/tasks/{id}/evidence"), format!("/tasks/{id}"), "/".to_owned()] {
        let anonymous = host.send(&closed, http::Request::get(path.as_str()).body(Vec::new()).unwrap());
        assert_eq!(anonymous.status(), 401, "{path}");
        assert_eq!(header(&anonymous, "www-authenticate"), "Bearer", "{path}");
        let request = http::Request::get(path.as_str()).header("authorization", format!("Bearer {TOKEN}"));
        let allowed = host.send(&closed, request.body(Vec::new()).unwrap());
        assert_eq!(allowed.status(), 200, "{path}");
    }
}

#[test]
fn storage_failure_is_503_not_404() {
    let host = TestHost::new();
    let id = seed_concluded(&host);
    host.kv.set_fault(Some(MemoryKvFault::All));
    let api = get(&host, &format!("/api/v1/tasks/{id}/evidence.json"), None);
    assert_eq!(api.status(), 503);
    assert_eq!(error_code(&api), "storage_unavailable");
    for path in [format!("/tasks/{id}"), "/".to_owned()] {
        let page = get(&host, &path, None);
        assert_eq!(page.status(), 503, "{path}");
        assert_safe(&page);
    }
}

#[test]
fn the_list_cursor_is_decoded_as_strictly_as_the_api_query() {
    let of = |query: &str| {
        let request = http::Request::get(format!("/?{query}")).body(Vec::new()).unwrap();
        cursor(&request)
    };
    assert_eq!(of("cursor=c%2F1%26x%3D%22y").unwrap().as_deref(), Some("c/1&x=\"y"));
    assert_eq!(of("cursor=a+b").unwrap().as_deref(), Some("a b"));
    assert_eq!(of("cursor=").unwrap(), None);
    for bad in ["cursor=a%zz", "cursor=%4", "cursor=%FF", "cursor=1&cursor=2", "other=1"] {
        let error = of(bad).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidRequest, "{bad}");
    }
}
