//! The loopback GitHub against GitHub's own REST description
//! (`@octokit/openapi`, `cd tests/node && npm ci`): every route the fake
//! serves is an operation of it, the exempt ones are not `api.github.com`,
//! and a request the description does not allow is refused as GitHub
//! refuses it and recorded.

mod support;

use std::time::Instant;

use agent_zero_fakes::FakeGitHub;
use agent_zero_fakes::conformance::{ApiDescription, Violation};
use serde_json::json;
use support::send;

fn api() -> ApiDescription {
    let path = agent_zero_fakes::github_openapi_path();
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (cd tests/node && npm ci)", path.display()));
    ApiDescription::openapi3(&text).expect("GitHub's description loads")
}

#[test]
fn every_served_route_is_an_operation_of_the_description() {
    let api = api();
    assert_eq!(api.base_path(), "", "api.github.com serves at the root, as the fake does");
    for (operation, method, sample) in FakeGitHub::served_operations() {
        let got = api.check(method, sample, &[], None);
        let got = match got {
            Err(Violation::MissingBody { operation } | Violation::MissingQuery { operation, .. }) => Ok(operation),
            other => other,
        };
        assert_eq!(got.as_ref().map(|id| id.as_str()), Ok(operation), "{method} {sample}");
    }
    for (method, prefix) in FakeGitHub::exempt_routes() {
        let path = format!("{prefix}x");
        let path = if prefix.ends_with('/') { path.as_str() } else { prefix };
        assert!(
            matches!(api.check(method, path, &[], None), Err(Violation::NoOperation { .. })),
            "{method} {path} is exempt: it must not be an API operation"
        );
    }
}

#[test]
fn multi_segment_parameters_take_slashes_where_github_routes_them() {
    let api = api();
    let cases = [
        ("GET", "/repos/o/r/git/ref/heads/agent-zero/issue-1", "git/get-ref", "ref", "heads/agent-zero/issue-1"),
        ("GET", "/repos/o/r/commits/a/b/statuses", "repos/list-commit-statuses-for-ref", "ref", "a/b"),
        ("GET", "/repos/o/r/commits/a/b", "repos/get-commit", "ref", "a/b"),
        ("GET", "/repos/o/r/contents/src/lib/util.py", "repos/get-content", "path", "src/lib/util.py"),
        ("GET", "/repos/o/r/contents/src%2Flib%2Futil.py", "repos/get-content", "path", "src/lib/util.py"),
        ("DELETE", "/repos/o/r/git/refs/heads/x/y", "git/delete-ref", "ref", "heads/x/y"),
    ];
    for (method, path, operation, param, value) in cases {
        let matched = api.matched(method, path, &[], None).unwrap_or_else(|v| panic!("{method} {path}: {v}"));
        assert_eq!(matched.operation.as_str(), operation, "{path}");
        assert_eq!(matched.params[param], value, "{path}");
    }
    // The listing by prefix is `git/matching-refs`; `GET git/refs/{ref}` is
    // no operation of the description.
    let refs = api.check("GET", "/repos/o/r/git/refs/heads/x", &[], None);
    assert!(matches!(refs, Err(Violation::NoOperation { .. })), "{refs:?}");
}

#[test]
fn bodies_and_queries_are_held_to_the_description() {
    let api = api();
    let compile = Instant::now();
    let comment = api.check("POST", "/repos/o/r/issues/3/comments", &[], Some(br#"{"body":"hi"}"#));
    let compile = compile.elapsed();
    assert_eq!(comment.unwrap().as_str(), "issues/create-comment");
    let cached = Instant::now();
    let again = api.check("POST", "/repos/o/r/issues/4/comments", &[], Some(br#"{"body":"ho"}"#));
    let cached = cached.elapsed();
    assert_eq!(again.unwrap().as_str(), "issues/create-comment");
    eprintln!("a body check: first {compile:?} (compiles the operation's schema), then {cached:?}");
    let misspelt = api.check("POST", "/repos/o/r/issues/3/comments", &[], Some(br#"{"body":"hi","bdy":"x"}"#));
    assert!(matches!(misspelt, Err(Violation::UnknownProperty { .. })), "{misspelt:?}");
    let status = br#"{"state":"sucess","context":"agent-zero"}"#;
    let bad_state = api.check("POST", "/repos/o/r/statuses/0123abcd", &[], Some(status));
    assert!(
        matches!(bad_state, Err(Violation::InvalidBody { ref pointer, .. }) if pointer == "/state"),
        "{bad_state:?}"
    );
    let paged = api.check("GET", "/repos/o/r/issues/3/comments", &[("per_page", "100"), ("page", "2")], None);
    assert_eq!(paged.unwrap().as_str(), "issues/list-comments");
    let query_token = api.check("GET", "/repos/o/r/issues/3/comments", &[("access_token", "x")], None);
    assert!(matches!(query_token, Err(Violation::UnknownQuery { .. })), "GitHub took tokens out of the query");
}

#[test]
fn the_fake_refuses_what_github_would_and_records_it() {
    let github = FakeGitHub::start();
    github.add_repo("octo", "demo", "main", &[("README.md", "hi\n")]);
    let url = github.url();

    let missing = send("GET", &format!("{url}/repos/octo/demo/git/refs/heads/main"), &[], None);
    assert_eq!(missing.status, 404);
    let body = missing.json();
    assert_eq!(body["message"], "Not Found");
    assert!(body["documentation_url"].as_str().is_some_and(|u| u.starts_with("https://docs.github.com")), "{body}");

    let labelled = json!({"body": "hi", "labels": ["x"]});
    let invalid = send("POST", &format!("{url}/repos/octo/demo/issues/1/comments"), &[], Some(&labelled));
    assert_eq!(invalid.status, 422);
    let body = invalid.json();
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Invalid request.\n\n") && message.contains("/labels"), "{message}");

    let fine = send("GET", &format!("{url}/repos/octo/demo/contents/README.md?ref=main"), &[], None);
    assert_eq!(fine.status, 200, "{}", fine.body);

    let violations = github.violations();
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert_eq!(violations[0], "no operation for GET /repos/octo/demo/git/refs/heads/main");
    assert!(violations[1].starts_with("issues/create-comment: body: unknown property \"/labels\""), "{violations:?}");
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| github.assert_no_violations())).unwrap_err();
    let text = caught.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("2 request(s)") && text.contains("/labels"), "{text}");
}

/// The description is read once per process: a second start costs what a
/// loopback server costs, well under a second.
#[test]
fn starting_a_fake_is_cheap_once_the_description_is_loaded() {
    let first = Instant::now();
    drop(FakeGitHub::start());
    let first = first.elapsed();
    let again = Instant::now();
    for _ in 0..5 {
        drop(FakeGitHub::start());
    }
    let again = again.elapsed() / 5;
    eprintln!("FakeGitHub::start: first {first:?} (loads the description), then {again:?}");
    assert!(again.as_millis() < 200, "a FakeGitHub start took {again:?}");
}
