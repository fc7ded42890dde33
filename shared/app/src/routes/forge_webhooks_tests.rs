use agent_zero_forges::{gitea, gitlab};
use serde_json::Value;

use crate::Settings;
use crate::test_host::{RUNNABLE, START_MS, TestHost};

const TOKEN: &str = "gitlab-route-token";
const SIGNING: &str = "whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVzdHRlc3Q=";
const GITEA_SECRET: &str = "gitea-route-secret";
const NOW_SECS: u64 = START_MS / 1_000;

fn fixture(dir: &str, name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(dir).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn settings() -> Settings {
    let mut pairs = vec![
        ("GITLAB_WEBHOOK_SECRET", TOKEN),
        ("GITLAB_WEBHOOK_SIGNING_TOKEN", SIGNING),
        ("GITEA_WEBHOOK_SECRET", GITEA_SECRET),
        ("AGENT_ZERO_WEBHOOK_MAX_BYTES", "100000"),
    ];
    pairs.extend_from_slice(&RUNNABLE);
    Settings::from_pairs(pairs)
}

fn gitlab_delivery(event: &str, id: &str, at: u64, body: &[u8]) -> http::Request<Vec<u8>> {
    http::Request::builder()
        .method("POST")
        .uri("/webhooks/gitlab")
        .header("content-type", "application/json")
        .header("x-gitlab-event", event)
        .header("x-gitlab-token", TOKEN)
        .header("x-gitlab-event-uuid", format!("uuid-{id}"))
        .header("idempotency-key", id)
        .header("webhook-id", id)
        .header("webhook-timestamp", at.to_string())
        .header("webhook-signature", gitlab::sign(SIGNING, id, at, body).unwrap())
        .body(body.to_vec())
        .unwrap()
}

fn gitea_delivery(forgejo: bool, event_type: &str, id: &str, body: &[u8]) -> http::Request<Vec<u8>> {
    let signature = gitea::sign(GITEA_SECRET.as_bytes(), body);
    let mut builder = http::Request::builder()
        .method("POST")
        .uri("/webhooks/gitea")
        .header("content-type", "application/json")
        .header("x-gitea-event-type", event_type)
        .header("x-gitea-delivery", id)
        .header("x-gitea-signature", &signature);
    if forgejo {
        builder = builder
            .header("x-forgejo-event-type", event_type)
            .header("x-forgejo-delivery", id)
            .header("x-forgejo-signature", &signature);
    }
    builder.body(body.to_vec()).unwrap()
}

fn json(response: &http::Response<Vec<u8>>) -> Value {
    serde_json::from_slice(response.body()).unwrap_or(Value::Null)
}

#[test]
fn a_gitea_pull_request_is_a_proactive_task_made_once() {
    let host = TestHost::new();
    let settings = settings();
    // A Gitea pull request opened: no longer recorded only (every arrival
    // either route parses now runs: gitea_run_tests.rs, gitlab_run_tests.rs).
    let body = fixture("gitea-webhooks", "go-scm.pull_request_opened.json");
    let first = host.send(&settings, gitea_delivery(false, "pull_request", "msg_1", &body));
    assert_eq!(first.status(), 202, "{}", String::from_utf8_lossy(first.body()));
    let answer = json(&first);
    assert_eq!((answer["taskId"].as_str(), answer["trigger"].as_str()), (Some("gt-msg_1"), Some("proactive")));
    assert_eq!(answer["forge"], "gitea");
    assert_eq!(answer["arrival"]["arrival"], "change-request-opened");
    assert!(answer.get("run").is_none(), "{answer}");

    // The forge's retry keeps its id: the same task.
    let again = host.send(&settings, gitea_delivery(false, "pull_request", "msg_1", &body));
    assert_eq!(again.status(), 200);
    let duplicate = json(&again);
    assert_eq!((duplicate["taskId"].as_str(), duplicate["duplicate"].as_bool()), (Some("gt-msg_1"), Some(true)));
}

#[test]
fn every_refusal_names_what_was_wrong_and_stores_nothing() {
    let host = TestHost::new();
    let settings = settings();
    let body = fixture("gitlab-webhooks", "go-scm.issue_create.json");
    let good = || gitlab_delivery("Issue Hook", "msg_r", NOW_SECS, &body);
    let mut cases: Vec<(&str, http::Request<Vec<u8>>, u16, &str)> = Vec::new();
    let mut wrong_token = good();
    wrong_token.headers_mut().insert("x-gitlab-token", "not-it".parse().unwrap());
    cases.push(("wrong token", wrong_token, 401, "X-Gitlab-Token"));
    let mut altered = good();
    altered.body_mut().push(b' ');
    cases.push(("bad signature", altered, 401, "webhook-signature"));
    cases.push(("stale", gitlab_delivery("Issue Hook", "msg_r", NOW_SECS - 301, &body), 401, "webhook-timestamp"));
    cases.push(("future", gitlab_delivery("Issue Hook", "msg_r", NOW_SECS + 301, &body), 401, "webhook-timestamp"));
    let mut large = good();
    large.headers_mut().insert("content-length", "100001".parse().unwrap());
    cases.push(("oversize", large, 413, "body"));
    let mut text = good();
    text.headers_mut().insert("content-type", "text/plain".parse().unwrap());
    cases.push(("content type", text, 400, "Content-Type"));
    let mut unnamed = good();
    unnamed.headers_mut().remove("x-gitlab-event");
    cases.push(("no event", unnamed, 400, "X-Gitlab-Event"));
    let gitea_body = fixture("gitea-webhooks", "go-scm.pull_request_opened.json");
    let mut forged = gitea_delivery(false, "pull_request", "g-1", &gitea_body);
    forged.headers_mut().insert("x-gitea-signature", gitea::sign(b"other", &gitea_body).parse().unwrap());
    cases.push(("gitea bad signature", forged, 401, "X-Gitea-Signature"));
    let mut bad_id = gitea_delivery(false, "pull_request", "g-1", &gitea_body);
    bad_id.headers_mut().insert("x-gitea-delivery", "g/1".parse().unwrap());
    cases.push(("gitea bad delivery id", bad_id, 400, "X-Gitea-Delivery"));
    for (what, request, status, field) in cases {
        let response = host.send(&settings, request);
        let body = json(&response);
        assert_eq!(response.status(), status, "{what}: {body}");
        assert_eq!(body["error"]["field"], field, "{what}: {body}");
    }
    // Unconfigured: 503 naming the variable.
    let bare = Settings::from_pairs(RUNNABLE.to_vec());
    for (request, variable) in [
        (good(), "GITLAB_WEBHOOK_SECRET"),
        (gitea_delivery(true, "pull_request", "g-2", &gitea_body), "GITEA_WEBHOOK_SECRET"),
    ] {
        let response = host.send(&bare, request);
        assert_eq!(response.status(), 503);
        assert_eq!(json(&response)["error"]["field"], variable);
        assert!(json(&response)["error"]["message"].as_str().unwrap().contains(variable));
    }
    // Unknown events and actions: 202 ignored, as GitHub's route answers.
    for (request, reason) in [
        (
            gitlab_delivery("Push Hook", "msg_p", NOW_SECS, &fixture("gitlab-webhooks", "go-scm.push.json")),
            "unsupported-event",
        ),
        (gitea_delivery(false, "push", "g-3", &fixture("gitea-webhooks", "go-scm.push.json")), "unsupported-event"),
        (
            gitlab_delivery("Issue Hook", "msg_c", NOW_SECS, &fixture("gitlab-webhooks", "go-scm.issue_closed.json")),
            "unsupported-action",
        ),
    ] {
        let response = host.send(&settings, request);
        assert_eq!(response.status(), 202);
        assert_eq!(json(&response)["reason"], reason, "{}", json(&response));
    }
    assert_eq!(host.kv.operations(), 0, "nothing stored: {:?}", host.kv.snapshot().keys());

    // The same delivery, well formed, is then the first recorded.
    let accepted = host.send(&settings, good());
    assert_eq!(accepted.status(), 202, "{}", json(&accepted));
    assert_eq!(json(&accepted)["arrival"]["arrival"], "issue-opened");
}

#[test]
fn gitea_and_forgejo_share_a_route_and_are_told_apart() {
    let host = TestHost::new();
    let settings = settings();
    let review = fixture("gitea-webhooks", "woodpecker.HookPullRequestReviewComment.json");
    let response = host.send(&settings, gitea_delivery(false, "pull_request_review_comment", "g-10", &review));
    assert_eq!(response.status(), 202, "{}", json(&response));
    let answer = json(&response);
    assert_eq!(
        (answer["forge"].as_str(), answer["arrival"]["arrival"].as_str()),
        (Some("gitea"), Some("review-comment"))
    );
    assert_eq!(answer["arrival"]["state"], "comment");

    let opened = fixture("forgejo-webhooks", "woodpecker.HookPullRequest.json");
    let response = host.send(&settings, gitea_delivery(true, "pull_request", "f-1", &opened));
    assert_eq!(response.status(), 202, "{}", json(&response));
    assert_eq!(
        (json(&response)["forge"].as_str(), json(&response)["taskId"].as_str()),
        (Some("forgejo"), Some("gt-f-1"))
    );
    // An approval carries no claim: ignored, nothing stored for it.
    let approval = fixture("gitea-webhooks", "woodpecker.HookPullRequestReviewAck.json");
    let response = host.send(&settings, gitea_delivery(false, "pull_request_review_approved", "g-11", &approval));
    assert_eq!(json(&response)["reason"], "review-carries-no-claim");
    assert!(!host.kv.snapshot().contains_key("delivery/gitea/gt-g-11"));
}

fn get(host: &TestHost, settings: &Settings, path: &str) -> Value {
    let request = http::Request::builder()
        .method("GET")
        .uri(path)
        .header("authorization", "Bearer tok-forges-1")
        .body(Vec::new())
        .unwrap();
    let response = host.send(settings, request);
    assert_eq!(response.status(), 200, "{path}: {}", String::from_utf8_lossy(response.body()));
    json(&response)
}

/// Health and doctor report each configured forge by name, never a value;
/// one whose webhook secret is missing fails doctor naming what to set.
#[test]
fn health_and_doctor_report_each_configured_forge() {
    let host = TestHost::new();
    let mut pairs = vec![
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "ops:tok-forges-1"),
        ("GITLAB_WEBHOOK_SIGNING_TOKEN", SIGNING),
        ("GITLAB_TOKEN", "glpat-unit-never-shown"),
        ("GITEA_URL", "https://gitea.example"),
    ];
    pairs.extend_from_slice(&RUNNABLE);
    let settings = Settings::from_pairs(pairs);
    let health = get(&host, &settings, "/api/v1/health");
    let forges = &health["capabilities"]["forges"];
    assert_eq!(forges["gitlab"]["configured"], true, "{forges}");
    assert_eq!(
        (forges["gitlab"]["intake"].as_bool(), forges["gitlab"]["apiToken"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(forges["gitlab"]["runs"], true, "gitlab.com with a token runs issues");
    assert_eq!(
        (forges["gitea"]["configured"].as_bool(), forges["gitea"]["intake"].as_bool()),
        (Some(true), Some(false))
    );

    let doctor = get(&host, &settings, "/api/v1/doctor");
    let check = |name: &str| doctor["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned();
    let gitlab = check("gitlab-intake").expect("a GitLab check");
    assert_eq!(gitlab["status"], "pass", "{gitlab}");
    assert!(gitlab["detail"].as_str().unwrap().contains("other deliveries are recorded"), "{gitlab}");
    let gitea = check("gitea-intake").expect("a Gitea check");
    assert_eq!(gitea["status"], "fail", "{gitea}");
    assert!(gitea["fix"].as_str().unwrap().contains("GITEA_WEBHOOK_SECRET"), "{gitea}");
    let text = format!("{health}{doctor}");
    for value in [SIGNING, "glpat-unit-never-shown", "gitea.example"] {
        assert!(!text.contains(value), "{value} shown: {text}");
    }

    // Neither configured: no forge check, and health says so.
    let bare = Settings::from_pairs([("AGENT_ZERO_CONTROL_PLANE_TOKENS", "ops:tok-forges-1")]);
    assert!(
        get(&host, &bare, "/api/v1/doctor")["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| { !c["name"].as_str().unwrap_or_default().ends_with("-intake") })
    );
    assert_eq!(get(&host, &bare, "/api/v1/health")["capabilities"]["forges"]["gitlab"]["configured"], false);
}
