//! The trust boundary's second pass, end to end through the in-process
//! host: signed real payloads (re-dated to the host's clock) in, answers
//! and storage out. An outsider's pull request opted in by a label, runs
//! per pull request per hour, and a captured body sent again.

use std::collections::BTreeMap;

use agent_zero_agent::Policy;
use agent_zero_ports::Clock;
use serde_json::{Value, json};

use crate::Settings;
use crate::test_host::{RUNNABLE, TestHost};

const SECRET: &str = "whsec-intake-7c1d";
const REPOSITORY: &str = "Codertocat/Hello-World";

fn settings() -> Settings {
    let mut pairs = vec![("GITHUB_WEBHOOK_SECRET", SECRET)];
    pairs.extend_from_slice(&RUNNABLE);
    Settings::from_pairs(pairs)
}

/// A vendored payload, every timestamp intake reads set to the host's now
/// (the files are from 2019), then `edit`ed.
fn payload(host: &TestHost, event: &str, file: &str, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/github-webhooks")
        .join(event)
        .join(file);
    let mut payload: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let now = json!(agent_zero_contracts::rfc3339(host.clock.now_ms()));
    for (object, field) in
        [("pull_request", "updated_at"), ("comment", "updated_at"), ("issue", "updated_at"), ("review", "submitted_at")]
    {
        if let Some(object) = payload.get_mut(object).and_then(Value::as_object_mut) {
            object.insert(field.into(), now.clone());
        }
    }
    edit(&mut payload);
    serde_json::to_vec(&payload).unwrap()
}

/// Sends one signed delivery; its status and JSON answer.
fn send(host: &TestHost, event: &str, delivery: &str, body: &[u8]) -> (u16, Value) {
    let request = http::Request::builder()
        .method("POST")
        .uri("/webhooks/github")
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", agent_zero_github::signature::sign(SECRET.as_bytes(), body))
        .body(body.to_vec())
        .unwrap();
    let response = host.send(&settings(), request);
    (response.status().as_u16(), serde_json::from_slice(response.body()).unwrap())
}

/// What the first tick does for intake: records the repository's policy.
fn record_policy(host: &TestHost, yaml: &str) {
    let policy = Policy::parse(yaml).unwrap();
    crate::test_host::block_on(crate::intake_gate::record(&host.kv, REPOSITORY, &policy, host.clock.now_ms()));
}

/// Sends a delivery intake must refuse: 202 with `reason`, and not one
/// stored value changed.
fn refused(host: &TestHost, event: &str, delivery: &str, body: &[u8], reason: &str) -> String {
    let before: BTreeMap<String, Vec<u8>> = host.kv.snapshot();
    let (status, answer) = send(host, event, delivery, body);
    assert_eq!((status, answer["reason"].as_str()), (202, Some(reason)), "{answer}");
    assert_eq!((answer["ignored"].as_bool(), answer["stored"].as_bool()), (Some(true), Some(false)), "{answer}");
    assert!(host.kv.snapshot() == before, "{reason}: nothing is written");
    answer["message"].as_str().unwrap().to_owned()
}

/// Sends a delivery that must start a task.
fn queued(host: &TestHost, event: &str, delivery: &str, body: &[u8]) {
    let (status, answer) = send(host, event, delivery, body);
    assert_eq!((status, answer["state"].as_str()), (202, Some("queued")), "{answer}");
    assert_eq!(answer["taskId"], format!("gh-{delivery}"));
}

fn outsiders_pull_request(payload: &mut Value) {
    payload["pull_request"]["user"]["login"] = json!("drive-by");
    payload["pull_request"]["author_association"] = json!("FIRST_TIME_CONTRIBUTOR");
}

fn labelled(payload: &mut Value, labels: &[&str]) {
    payload["pull_request"]["labels"] = labels.iter().map(|name| json!({ "name": name })).collect();
}

#[test]
fn an_outsiders_pull_request_runs_once_a_collaborator_labels_it() {
    let host = TestHost::new();
    record_policy(&host, "proactive: {enabled: true}\ntriggers: {allowedBots: ['coderabbitai[bot]']}\n");
    // A collaborator's pull request: as before.
    queued(&host, "pull_request", "own-1", &payload(&host, "pull_request", "opened.payload.json", |_| {}));
    // An outsider's: declined at intake.
    let opened = payload(&host, "pull_request", "opened.payload.json", outsiders_pull_request);
    refused(&host, "pull_request", "out-1", &opened, "author-not-allowed");
    // A label that is not the opt-in one starts nothing.
    let bug = payload(&host, "pull_request", "labeled.payload.json", outsiders_pull_request);
    let message = refused(&host, "pull_request", "out-2", &bug, "not-opt-in-label");
    assert!(message.contains("triggers.optInLabel"), "{message}");
    // A collaborator adds `agent-zero`: a review of the pull request starts.
    let opt_in = payload(&host, "pull_request", "labeled.payload.json", |p| {
        outsiders_pull_request(p);
        p["label"]["name"] = json!("agent-zero");
        labelled(p, &["bug", "agent-zero"]);
    });
    queued(&host, "pull_request", "out-3", &opt_in);
    // Its next push carries the label: reviewed too.
    let pushed = payload(&host, "pull_request", "synchronize.payload.json", |p| {
        outsiders_pull_request(p);
        labelled(p, &["agent-zero"]);
    });
    queued(&host, "pull_request", "out-4", &pushed);

    // An allowed AI reviewer's comment on the outsider's pull request: only
    // once it carries the label.
    let rabbit = |labels: &'static [&'static str], id: u64| {
        payload(&host, "pull_request_review_comment", "created.payload.json", move |p| {
            outsiders_pull_request(p);
            labelled(p, labels);
            p["comment"]["id"] = json!(id);
            p["comment"]["user"] = json!({ "login": "coderabbitai[bot]", "type": "Bot" });
            p["comment"]["author_association"] = json!("NONE");
        })
    };
    let message = refused(&host, "pull_request_review_comment", "bot-1", &rabbit(&[], 1), "opener-not-allowed");
    assert!(message.contains("drive-by") && message.contains("triggers.optInLabel"), "{message}");
    queued(&host, "pull_request_review_comment", "bot-2", &rabbit(&["agent-zero"], 2));
}

#[test]
fn an_empty_opt_in_label_opts_nothing_in() {
    let host = TestHost::new();
    record_policy(&host, "proactive: {enabled: true}\ntriggers: {optInLabel: ''}\n");
    let opt_in = payload(&host, "pull_request", "labeled.payload.json", |p| {
        outsiders_pull_request(p);
        p["label"]["name"] = json!("agent-zero");
        labelled(p, &["agent-zero"]);
    });
    refused(&host, "pull_request", "out-1", &opt_in, "opt-in-disabled");
}

#[test]
fn runs_per_pull_request_are_capped_for_a_rolling_hour() {
    let host = TestHost::new();
    record_policy(&host, "triggers: {maxRunsPerHour: 2}\n");
    let comment = |host: &TestHost, number: u64, id: u64| {
        payload(host, "pull_request_review_comment", "created.payload.json", |p| {
            p["pull_request"]["number"] = json!(number);
            p["comment"]["id"] = json!(id);
        })
    };
    queued(&host, "pull_request_review_comment", "c-1", &comment(&host, 2, 1));
    host.clock.advance(10 * 60_000);
    queued(&host, "pull_request_review_comment", "c-2", &comment(&host, 2, 2));
    let message = refused(&host, "pull_request_review_comment", "c-3", &comment(&host, 2, 3), "max-runs-per-hour");
    assert_eq!(message, "#2 started 2 runs in the last hour, the most triggers.maxRunsPerHour allows");
    // Another pull request has an hour of its own.
    queued(&host, "pull_request_review_comment", "c-4", &comment(&host, 3, 4));
    // An hour after the first run, one is left in the window (the policy is
    // read again within the hour, as ticks do).
    host.clock.advance(50 * 60_000 + 1);
    record_policy(&host, "triggers: {maxRunsPerHour: 2}\n");
    queued(&host, "pull_request_review_comment", "c-5", &comment(&host, 2, 5));
    refused(&host, "pull_request_review_comment", "c-6", &comment(&host, 2, 6), "max-runs-per-hour");
}

#[test]
fn a_captured_body_is_refused_under_a_new_delivery_id() {
    let host = TestHost::new();
    let body = payload(&host, "pull_request_review_comment", "created.payload.json", |_| {});
    queued(&host, "pull_request_review_comment", "first", &body);
    // GitHub's redelivery keeps the id: the first answer, again.
    let (status, answer) = send(&host, "pull_request_review_comment", "first", &body);
    assert_eq!((status, answer["duplicate"].as_bool()), (200, Some(true)), "{answer}");
    // The same signed body under a fresh id is a replay.
    let message = refused(&host, "pull_request_review_comment", "replay-1", &body, "replayed-body");
    assert!(message.contains("X-GitHub-Delivery"), "{message}");
    // An installation change too.
    let installation = payload(&host, "installation", "created.payload.json", |_| {});
    assert_eq!(send(&host, "installation", "inst-1", &installation).0, 202);
    refused(&host, "installation", "inst-2", &installation, "replayed-body");

    // A body dated before the replay window (the vendored files as they are).
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/github-webhooks/pull_request_review_comment/created.payload.json");
    let old = std::fs::read(path).unwrap();
    let message = refused(&host, "pull_request_review_comment", "old-1", &old, "stale-event");
    assert!(message.contains("2019-05-15T15:20:38.000Z") && message.contains("AGENT_ZERO_DELIVERY_RETENTION_DAYS"));
    assert!(message.contains("72-hour"), "the default window, GitHub's 3 days: {message}");

    // Once the digest is forgotten, the body is older than the window.
    host.clock.advance(3 * 86_400_000 + 1);
    refused(&host, "pull_request_review_comment", "replay-3", &body, "stale-event");
}

#[test]
fn an_installation_record_lives_as_long_as_the_installation() {
    let host = TestHost::new();
    let created = payload(&host, "installation", "created.payload.json", |_| {});
    let id = serde_json::from_slice::<Value>(&created).unwrap()["installation"]["id"].as_u64().unwrap();
    let deleted = payload(&host, "installation", "deleted.payload.json", |p| p["installation"]["id"] = json!(id));
    let key = format!("installation/{id}");
    assert_eq!(send(&host, "installation", "inst-created", &created).0, 202);
    assert!(host.kv.snapshot().contains_key(&key), "recorded while installed");
    let (status, answer) = send(&host, "installation", "inst-deleted", &deleted);
    assert_eq!((status, answer["action"].as_str()), (202, Some("deleted")), "{answer}");
    assert!(!host.kv.snapshot().contains_key(&key), "removed with the installation");
}
