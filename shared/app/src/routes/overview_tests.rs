//! `GET /api/v1/overview`: the dashboard's counters as JSON, counted over
//! tasks indexed as ticks index them, with the task listing's access.

use agent_zero_agent::Policy;
use agent_zero_contracts::{RunMode, TaskState, Trigger, rfc3339};
use agent_zero_engine::{Stimulus, TaskInput};
use serde_json::{Value, json};

use crate::Settings;
use crate::task_counters::DAY_MS;
use crate::task_index::{TaskSummary, record};
use crate::test_host::{START_MS, TestHost, block_on};

const ALICE: &str = "tok-alice-7d41c2e9f0a8";
const HOUR_MS: u64 = 60 * 60 * 1000;

fn settings(extra: &[(&str, &str)]) -> Settings {
    let mut pairs = vec![
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "alice:tok-alice-7d41c2e9f0a8"),
        ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets"),
    ];
    pairs.extend_from_slice(extra);
    Settings::from_pairs(pairs)
}

fn get(host: &TestHost, settings: &Settings, uri: &str, token: Option<&str>) -> (u16, Value) {
    let mut builder = http::Request::builder().method("GET").uri(uri);
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    let response = host.send(settings, builder.body(Vec::new()).unwrap());
    (response.status().as_u16(), serde_json::from_slice(response.body()).unwrap_or(Value::Null))
}

/// Task `id` of `repository` created at `created_ms`, then moved to
/// `state` at `moved_ms`, indexed as a tick records it.
fn task(host: &TestHost, id: &str, repository: &str, created_ms: u64, state: TaskState, moved_ms: u64) {
    let stimulus = Stimulus {
        task_id: id.into(),
        repository: repository.into(),
        trigger: Trigger::Feedback,
        mode: RunMode::Observe,
        source: Some("api:alice".into()),
        input: TaskInput::default(),
        policy: Policy::default(),
    };
    let created = TaskSummary::of_stimulus(&stimulus, created_ms);
    block_on(record(&host.kv, &created)).unwrap();
    if state != TaskState::Queued {
        let mut moved = created.clone();
        moved.state = state;
        moved.updated_at = rfc3339(moved_ms);
        block_on(record(&host.kv, &moved)).unwrap();
    }
}

fn count(n: u64) -> Value {
    json!({ "count": n, "more": false })
}

/// Each counter counts its own states, a failure by when it failed (one
/// older than a day is not counted), and `repository` narrows them all.
#[test]
fn the_counters_are_the_dashboards_over_every_repository_or_one() {
    let host = TestHost::new();
    let now = START_MS;
    let (a, b) = ("acme/widgets", "beta/api");
    task(&host, "q1", a, now - HOUR_MS, TaskState::Queued, 0);
    task(&host, "q2", b, now - HOUR_MS, TaskState::Queued, 0);
    task(&host, "r1", a, now - HOUR_MS, TaskState::Executing, now - 50);
    task(&host, "h1", a, now - HOUR_MS, TaskState::NeedsHuman, now - 40);
    task(&host, "h2", b, now - HOUR_MS, TaskState::NeedsHuman, now - 40);
    task(&host, "f1", a, now - 3 * DAY_MS, TaskState::Failed, now - HOUR_MS);
    task(&host, "f2", b, now - 3 * DAY_MS, TaskState::Failed, now - 2 * DAY_MS);
    task(&host, "c1", a, now - HOUR_MS, TaskState::Completed, now - 10);
    let settings = settings(&[]);

    let (status, all) = get(&host, &settings, "/api/v1/overview", None);
    assert_eq!(status, 200, "{all}");
    let expected = json!({
        "repository": null,
        "running": count(1),
        "queued": count(2),
        "needsHuman": count(2),
        "failedLastDay": count(1),
        "failedSince": rfc3339(now - DAY_MS),
    });
    assert_eq!(all, expected);

    let (status, one) = get(&host, &settings, "/api/v1/overview?repository=beta/api", None);
    assert_eq!(status, 200, "{one}");
    assert_eq!(
        (&one["repository"], &one["running"], &one["queued"], &one["needsHuman"], &one["failedLastDay"]),
        (&json!(b), &count(0), &count(1), &count(1), &count(0))
    );
}

/// Reads that need a token need one here too; a malformed filter or an
/// unknown parameter is a 400 naming it; only GET is served.
#[test]
fn access_is_the_task_listings_and_bad_input_names_the_field() {
    let host = TestHost::new();
    let closed = settings(&[("AGENT_ZERO_CONTROL_PLANE_READS", "token")]);
    let (status, body) = get(&host, &closed, "/api/v1/overview", None);
    assert_eq!((status, &body["error"]["code"]), (401, &json!("unauthorized")), "{body}");
    let (status, body) = get(&host, &closed, "/api/v1/overview", Some("tok-mallory-000000000000"));
    assert_eq!(status, 401, "{body}");
    let (status, body) = get(&host, &closed, "/api/v1/overview", Some(ALICE));
    assert_eq!((status, &body["queued"]), (200, &count(0)), "{body}");

    let open = settings(&[]);
    for (uri, field) in [("/api/v1/overview?repository=nope", "repository"), ("/api/v1/overview?state=failed", "state")]
    {
        let (status, body) = get(&host, &open, uri, None);
        assert_eq!((status, &body["error"]["field"]), (400, &json!(field)), "{uri}: {body}");
    }
    let request = http::Request::builder().method("POST").uri("/api/v1/overview").body(Vec::new()).unwrap();
    assert_eq!(host.send(&open, request).status().as_u16(), 405);
}
