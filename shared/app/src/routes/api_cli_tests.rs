//! `POST /api/v1/tasks` as `agent-zero review <url>` and `fix <url>` send
//! it, naming a pull request or an issue by its number alone:
//!
//! - a pull request without `headSha` is created at the head (and base)
//!   GitHub reports; a number GitHub does not show is a 400 naming it, and
//!   a deployment without GitHub credentials asks for the head (400 naming
//!   `pullRequest.headSha`), nothing stored;
//! - an issue task (`trigger: issue`) carries the issue's title and body
//!   as GitHub shows them; a pull request's number, a closed issue, a
//!   repository whose policy does not act on issues, or a deployment
//!   without credentials is refused naming the field, nothing stored.

use agent_zero_engine::Start;
use serde_json::{Value, json};

use super::api_app_tests::{app_settings, app_world};
use crate::Settings;
use crate::test_host::{RUNNABLE, TestHost, block_on};

const ALICE: &str = "tok-alice-7d41c2e9f0a8";
const HEAD: &str = "5d2c8f7e6a1b4c3d2e1f0a9b8c7d6e5f4a3b2c1d";

fn review<H: agent_zero_ports::HttpClient>(host: &TestHost<H>, settings: &Settings, number: u64) -> (u16, Value) {
    let body = json!({ "repository": "acme/widgets", "trigger": "proactive", "pullRequest": { "number": number } });
    post(host, settings, &body)
}

fn fix<H: agent_zero_ports::HttpClient>(
    host: &TestHost<H>,
    settings: &Settings,
    repository: &str,
    number: u64,
) -> (u16, Value) {
    let body = json!({ "repository": repository, "mode": "fix", "trigger": "issue", "issue": { "number": number } });
    post(host, settings, &body)
}

fn post<H: agent_zero_ports::HttpClient>(host: &TestHost<H>, settings: &Settings, body: &Value) -> (u16, Value) {
    let request = http::Request::builder()
        .method("POST")
        .uri("/api/v1/tasks")
        .header("authorization", format!("Bearer {ALICE}"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .unwrap();
    let response = host.send(settings, request);
    (response.status().as_u16(), serde_json::from_slice(response.body()).unwrap_or(Value::Null))
}

#[test]
fn a_pull_request_without_its_head_is_created_at_the_head_github_reports() {
    let (github, host) = app_world();
    let settings = app_settings(&github, &[]);
    let number =
        github.open_pull_request("acme", "widgets", "fix-limit", HEAD, &[("src/limit.rs", Some("fn g() {}\n"))]);
    let (status, body) = review(&host, &settings, number);
    assert_eq!(status, 201, "{body}");
    let id = body["id"].as_str().unwrap();
    let Ok(Some(Start::Run(stimulus))) = block_on(agent_zero_engine::start(&host.kv, id)) else {
        panic!("task {id} has no stimulus")
    };
    let pr = stimulus.input.pull_request.expect("the pull request");
    let base = github.branch_sha("acme", "widgets", "main").unwrap();
    assert_eq!((pr.number, pr.head_sha.as_str(), pr.base_sha.as_deref()), (number, HEAD, Some(base.as_str())));
    assert_eq!(github.calls_matching("GET", &format!("/repos/acme/widgets/pulls/{number}")).len(), 1);

    // A number GitHub does not show these credentials: 400 naming it.
    let (status, body) = review(&host, &settings, number + 100);
    assert_eq!((status, &body["error"]["field"]), (400, &json!("pullRequest.number")), "{body}");
}

/// Only the audit entry of an attempt (and its expiry key) is stored.
fn nothing_stored<H: agent_zero_ports::HttpClient>(host: &TestHost<H>) -> bool {
    host.kv.snapshot().keys().all(|k| k.starts_with("audit/") || k.starts_with("retention/"))
        && host.queue.ticks.borrow().is_empty()
}

#[test]
fn an_issue_task_carries_the_issue_github_shows() {
    let (github, host) = app_world();
    github.add_repo(
        "acme",
        "tools",
        "main",
        &[(".agent-zero.yml", "version: 1\nmode: fix\nissues:\n  enabled: true\n"), ("README.md", "# tools\n")],
    );
    let settings = app_settings(&github, &[("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets,acme/tools")]);
    let number = github.open_issue("acme", "tools", "parse_limit accepts 0", Some("Zero divides by zero later."));
    let (status, body) = fix(&host, &settings, "acme/tools", number);
    assert_eq!(status, 201, "{body}");
    assert_eq!((&body["trigger"], &body["mode"]), (&json!("issue"), &json!("fix")), "{body}");
    let id = body["id"].as_str().unwrap();
    let Ok(Some(Start::Run(stimulus))) = block_on(agent_zero_engine::start(&host.kv, id)) else {
        panic!("task {id} has no stimulus")
    };
    let issue = stimulus.input.issue.expect("the issue");
    assert_eq!((issue.number, issue.title.text.as_str()), (number, "parse_limit accepts 0"));
    assert_eq!(issue.url.as_deref(), Some(format!("https://github.com/acme/tools/issues/{number}").as_str()));
    assert_eq!(stimulus.input.issue_body.map(|b| b.text).as_deref(), Some("Zero divides by zero later."));

    // A pull request's number, a closed issue's, one GitHub does not show.
    let pull = github.open_pull_request("acme", "tools", "docs", HEAD, &[("README.md", Some("# Tools\n"))]);
    let (status, body) = fix(&host, &settings, "acme/tools", pull);
    assert_eq!((status, &body["error"]["field"]), (400, &json!("issue.number")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("is a pull request"), "{body}");
    let (status, body) = fix(&host, &settings, "acme/tools", 999);
    assert_eq!((status, &body["error"]["field"]), (400, &json!("issue.number")), "{body}");

    // `acme/widgets`' policy does not act on issues: refused, naming why.
    let other = github.open_issue("acme", "widgets", "typo", None);
    let (status, body) = fix(&host, &settings, "acme/widgets", other);
    assert_eq!((status, &body["error"]["field"]), (403, &json!("trigger")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("issues.enabled"), "{body}");
}

#[test]
fn an_issue_task_without_its_issue_or_with_feedback_is_a_400_naming_the_field() {
    let host = TestHost::new();
    let settings = Settings::from_pairs(
        [
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "alice:tok-alice-7d41c2e9f0a8"),
            ("AGENT_ZERO_CONTROL_PLANE_MODES", "alice:observe|fix"),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets"),
        ]
        .into_iter()
        .chain(RUNNABLE),
    );
    let cases = [
        (json!({ "repository": "acme/widgets", "trigger": "issue" }), "issue"),
        (
            json!({ "repository": "acme/widgets", "trigger": "issue", "issue": { "number": 1 },
                    "feedback": [{ "body": "x" }] }),
            "feedback",
        ),
        (
            json!({ "repository": "acme/widgets", "trigger": "feedback", "feedback": [{ "body": "x" }],
                    "issue": { "number": 1 } }),
            "issue.title",
        ),
        // Without GitHub credentials the issue cannot be read.
        (json!({ "repository": "acme/widgets", "trigger": "issue", "issue": { "number": 1 } }), "trigger"),
    ];
    for (body, field) in cases {
        let (status, reply) = post(&host, &settings, &body);
        assert_eq!((status, &reply["error"]["field"]), (400, &json!(field)), "{body}: {reply}");
    }
    assert!(nothing_stored(&host));
}

#[test]
fn without_github_credentials_the_head_is_required_and_nothing_is_stored() {
    let host = TestHost::new();
    let settings = Settings::from_pairs(
        [
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "alice:tok-alice-7d41c2e9f0a8"),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets"),
        ]
        .into_iter()
        .chain(RUNNABLE),
    );
    let (status, body) = review(&host, &settings, 7);
    assert_eq!((status, &body["error"]["field"]), (400, &json!("pullRequest.headSha")), "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no GitHub credentials"), "{message}");
    assert!(nothing_stored(&host));
}
