//! `GitHubClient::issue` against an in-process GitHub answering with the
//! issue object of a real `issues` delivery (octokit/webhooks,
//! `tests/fixtures/github-webhooks`): `GET /repos/{o}/{r}/issues/{n}`
//! answers the same Issue schema.

mod support;

use agent_zero_github::{ApiConfig, GitHubClient, GitHubError};
use serde_json::Value;
use support::{FakeGitHub, block_on};

const BASE: &str = "https://ghe.example.com/api/v3";

fn delivered_issue() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/github-webhooks/issues/opened.payload.json");
    let payload: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    payload["issue"].clone()
}

#[test]
fn an_issue_reads_its_title_body_page_and_state() {
    let fake = FakeGitHub::new(BASE);
    let config = ApiConfig::new(Some(BASE), "agent-zero-edge-test").unwrap();
    let client = GitHubClient::new(&fake, &config);
    let issue = delivered_issue();
    fake.route("GET", "/repos/Codertocat/Hello-World/issues/1", 200, serde_json::to_vec(&issue).unwrap());
    let read = block_on(client.issue("Codertocat", "Hello-World", 1)).unwrap();
    assert_eq!(read.title, "Spelling error in the README file");
    assert_eq!(read.body.as_deref(), issue["body"].as_str());
    assert_eq!(read.html_url.as_deref(), Some("https://github.com/Codertocat/Hello-World/issues/1"));
    assert!(read.open && !read.pull_request, "{read:?}");

    // The same route answers for a pull request, with its `pull_request`
    // object; a closed issue is not open; an empty body is none.
    let mut pull = issue.clone();
    pull["pull_request"] = serde_json::json!({ "url": format!("{BASE}/repos/Codertocat/Hello-World/pulls/2") });
    pull["state"] = "closed".into();
    pull["body"] = " ".into();
    fake.route("GET", "/repos/Codertocat/Hello-World/issues/2", 200, serde_json::to_vec(&pull).unwrap());
    let read = block_on(client.issue("Codertocat", "Hello-World", 2)).unwrap();
    assert!(read.pull_request && !read.open && read.body.is_none(), "{read:?}");

    fake.route("GET", "/repos/Codertocat/Hello-World/issues/3", 404, r#"{"message":"Not Found"}"#);
    let missing = block_on(client.issue("Codertocat", "Hello-World", 3)).unwrap_err();
    assert!(matches!(missing, GitHubError::Status { status: 404, .. }), "{missing:?}");
    assert!(block_on(client.issue("..", "Hello-World", 1)).is_err(), "names are checked before any request");
}
