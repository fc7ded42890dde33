//! The request checker against Gitea's real swagger (v1.22, committed in
//! tests/fixtures/gitea-api/): a conforming request passes and names its
//! operation; each kind of violation is caught and named.

use agent_zero_fakes::GITEA_SWAGGER;
use agent_zero_fakes::conformance::{ApiDescription, Violation};
use serde_json::json;

/// method, path, query, body, the operation expected.
type Case<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>, Option<&'a [u8]>, &'a str);

fn api() -> ApiDescription {
    ApiDescription::swagger2(GITEA_SWAGGER).expect("Gitea's swagger loads")
}

fn body(value: &serde_json::Value) -> Vec<u8> {
    value.to_string().into_bytes()
}

#[test]
fn conforming_requests_name_their_operation() {
    let api = api();
    assert_eq!(api.base_path(), "/api/v1");
    let change = body(&json!({
        "branch": "main",
        "new_branch": "agent-zero/issue-1",
        "message": "Fix average",
        "author": {"name": "Agent Zero", "email": "agent@example.com"},
        "files": [
            {"operation": "update", "path": "calc.py", "content": "cHJpbnQoMSkK", "sha": "0123abcd"},
            {"operation": "create", "path": "docs/new.md", "content": "eA=="},
            {"operation": "delete", "path": "old.txt", "sha": "4567ef01"}
        ]
    }));
    let cases: Vec<Case<'_>> = vec![
        ("GET", "/api/v1/user", vec![], None, "userGetCurrent"),
        ("GET", "/api/v1/repos/octo/demo", vec![], None, "repoGet"),
        ("POST", "/api/v1/repos/octo/demo/contents", vec![], Some(&change), "repoChangeFiles"),
        ("GET", "/api/v1/repos/octo/demo/contents", vec![("ref", "main")], None, "repoGetContentsList"),
        ("GET", "/api/v1/repos/octo/demo/raw/src/lib/util.py", vec![("ref", "main")], None, "repoGetRawFile"),
        ("GET", "/api/v1/repos/octo/demo/raw/src%2Flib%2Futil.py", vec![], None, "repoGetRawFile"),
        ("GET", "/api/v1/repos/octo/demo/contents/a/b/c.txt", vec![], None, "repoGetContents"),
        ("GET", "/api/v1/repos/octo/demo/pulls/7", vec![], None, "repoGetPullRequest"),
        ("GET", "/api/v1/repos/octo/demo/pulls/7.diff", vec![], None, "repoDownloadPullDiffOrPatch"),
        (
            "GET",
            "/api/v1/repos/octo/demo/pulls",
            vec![("state", "open"), ("page", "2"), ("limit", "50")],
            None,
            "repoListPullRequests",
        ),
        ("GET", "/api/v1/repos/octo/demo/issues/comments/9", vec![], None, "issueGetComment"),
        ("GET", "/api/v1/repos/octo/demo/issues/9/comments", vec![("access_token", "x")], None, "issueGetComments"),
        ("GET", "/api/v1/topics/search", vec![("q", "rust")], None, "topicSearch"),
    ];
    for (method, path, query, sent, expected) in cases {
        let got = api.check(method, path, &query, sent);
        assert_eq!(got.as_ref().map(|id| id.as_str()), Ok(expected), "{method} {path}");
    }
}

#[test]
fn no_operation_for_unknown_paths_methods_and_parameter_types() {
    let api = api();
    for (method, path) in [
        ("GET", "/api/v1/gists/1"),
        ("DELETE", "/api/v1/user"),
        ("GET", "/repos/octo/demo"),
        ("GET", "/api/v1/repos/octo/demo/pulls/seven"),
        ("GET", "/api/v1/repos/octo/demo/pulls/7.txt"),
        ("GET", "/api/v1/repos/octo/demo/raw"),
    ] {
        let got = api.check(method, path, &[], None);
        assert!(matches!(got, Err(Violation::NoOperation { .. })), "{method} {path}: {got:?}");
        assert_eq!(got.unwrap_err().to_string(), format!("no operation for {method} {path}"));
    }
}

#[test]
fn rest_parameters_take_the_rest_of_the_path_only_where_named() {
    let strict = api();
    let branch = "/api/v1/repos/octo/demo/branches/agent-zero/issue-1";
    assert!(matches!(strict.check("GET", branch, &[], None), Err(Violation::NoOperation { .. })));
    let gitea = api().with_rest_parameters(&agent_zero_fakes::GITEA_REST_PARAMETERS);
    assert_eq!(gitea.check("GET", branch, &[], None).unwrap().as_str(), "repoGetBranch");
    let matched = gitea.matched("GET", "/api/v1/repos/octo/demo/archive/feature/x.tar.gz", &[], None).unwrap();
    assert_eq!(matched.params["archive"], "feature/x.tar.gz");
    // Not last: `{ref}` of `/commits/{ref}/statuses` stays one segment.
    let statuses = gitea.check("GET", "/api/v1/repos/octo/demo/commits/agent-zero/issue-1/statuses", &[], None);
    assert!(matches!(statuses, Err(Violation::NoOperation { .. })), "{statuses:?}");
}

#[test]
fn query_violations_are_named() {
    let api = api();
    let missing = api.check("GET", "/api/v1/topics/search", &[], None).unwrap_err();
    assert_eq!(missing.to_string(), "topicSearch: missing query parameter q");
    // GitHub's pagination words are no Gitea parameters, and 1.22's
    // comment list takes none at all.
    let unknown = api.check("GET", "/api/v1/repos/octo/demo/pulls", &[("per_page", "100")], None).unwrap_err();
    assert_eq!(unknown.to_string(), "repoListPullRequests: unknown query parameter per_page");
    let unpaged = api.check("GET", "/api/v1/repos/octo/demo/issues/1/comments", &[("page", "1")], None);
    assert!(matches!(unpaged, Err(Violation::UnknownQuery { .. })), "{unpaged:?}");
    let state = api.check("GET", "/api/v1/repos/octo/demo/pulls", &[("state", "merged")], None).unwrap_err();
    assert!(matches!(&state, Violation::BadParameter { name, .. } if name == "state"), "{state}");
    let page = api.check("GET", "/api/v1/repos/octo/demo/pulls", &[("page", "two")], None).unwrap_err();
    assert!(page.to_string().contains("\"two\" is not a integer"), "{page}");
}

#[test]
fn body_violations_are_named_with_their_pointer() {
    let api = api();
    let path = "/api/v1/repos/octo/demo/contents";
    let check = |value: serde_json::Value| api.check("POST", path, &[], Some(&body(&value))).unwrap_err();

    let no_files = check(json!({"branch": "main"}));
    assert!(matches!(&no_files, Violation::InvalidBody { pointer, .. } if pointer.is_empty()), "{no_files}");
    assert!(no_files.to_string().contains("files"), "{no_files}");

    let bad_operation = check(json!({"files": [{"operation": "rename", "path": "a"}]}));
    assert!(
        matches!(&bad_operation, Violation::InvalidBody { pointer, .. } if pointer == "/files/0/operation"),
        "{bad_operation}"
    );

    let wrong_type = check(json!({"files": [{"operation": "create", "path": 7}]}));
    assert!(
        matches!(&wrong_type, Violation::InvalidBody { pointer, .. } if pointer == "/files/0/path"),
        "{wrong_type}"
    );

    // Gitea would ignore a misspelt field and commit an empty file.
    let misspelt = check(json!({"files": [{"operation": "create", "path": "a", "contents": "eA=="}]}));
    assert!(
        matches!(&misspelt, Violation::UnknownProperty { pointer, .. } if pointer == "/files/0/contents"),
        "{misspelt}"
    );
    assert!(misspelt.to_string().contains("content, from_path, operation, path, sha"), "{misspelt}");
    let nested = check(json!({"files": [], "author": {"name": "a", "login": "b"}}));
    assert!(matches!(&nested, Violation::UnknownProperty { pointer, .. } if pointer == "/author/login"), "{nested}");

    let not_json = api.check("POST", path, &[], Some(b"files=1")).unwrap_err();
    assert!(matches!(not_json, Violation::BodyNotJson { .. }), "{not_json}");
    let none = api.check("POST", path, &[], None).unwrap_err();
    assert_eq!(none.to_string(), "repoChangeFiles: body: required, none sent");

    let review = body(
        &json!({"event": "COMMENT", "body": "x", "comments": [{"path": "a.py", "body": "b", "new_position": 3, "line": 3}]}),
    );
    let review = api.check("POST", "/api/v1/repos/o/r/pulls/1/reviews", &[], Some(&review)).unwrap_err();
    assert!(matches!(&review, Violation::UnknownProperty { pointer, .. } if pointer == "/comments/0/line"), "{review}");
}

#[test]
fn responses_are_checked_against_the_declared_schema() {
    let api = api();
    let path = "/api/v1/repos/octo/demo/issues/comments/5";
    let comment = json!({"id": 5, "body": "hi", "user": {"id": 1, "login": "alice"}, "created_at": "2024-01-01T00:00:00Z", "pull_request_url": null});
    assert_eq!(api.check_response("GET", path, 200, &body(&comment)).unwrap().as_str(), "issueGetComment");

    let mut extra = comment.clone();
    extra["reactions"] = json!([]);
    let unknown = api.check_response("GET", path, 200, &body(&extra)).unwrap_err();
    assert!(matches!(&unknown, Violation::UnknownProperty { pointer, .. } if pointer == "/reactions"), "{unknown}");
    let mut nested = comment.clone();
    nested["user"]["node_id"] = json!("x");
    let unknown = api.check_response("GET", path, 200, &body(&nested)).unwrap_err();
    assert!(matches!(&unknown, Violation::UnknownProperty { pointer, .. } if pointer == "/user/node_id"), "{unknown}");

    let mut typed = comment;
    typed["id"] = json!("5");
    let invalid = api.check_response("GET", path, 200, &body(&typed)).unwrap_err();
    assert!(matches!(&invalid, Violation::InvalidBody { pointer, .. } if pointer == "/id"), "{invalid}");

    let undeclared = api.check_response("GET", path, 201, b"{}").unwrap_err();
    assert_eq!(undeclared.to_string(), "issueGetComment: status 201 is not a declared response");
    assert!(api.check_response("GET", path, 404, b"not even json").is_ok(), "error answers are not checked");
}
