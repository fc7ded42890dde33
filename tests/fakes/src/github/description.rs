//! GitHub's own REST description (`@octokit/openapi`, the OpenAPI 3.0
//! `api.github.com.json`), loaded once per process, and the operations of
//! it the fake serves.
//!
//! The 13 MB file is not committed: `tests/node/package.json` pins the npm
//! package and `npm ci` in `tests/node` puts it in `node_modules`
//! (`tests/fakes/README.md` has the version, licence and digest).
//! `AGENT_ZERO_GITHUB_OPENAPI` names another copy of the same file.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::conformance::ApiDescription;

/// Where `npm ci` in `tests/node` puts the description.
const NODE_MODULES_PATH: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../node/node_modules/@octokit/openapi/generated/api.github.com.json");

/// The environment variable naming another copy of the description.
pub const OPENAPI_ENV: &str = "AGENT_ZERO_GITHUB_OPENAPI";

/// The description's file: `$AGENT_ZERO_GITHUB_OPENAPI` when set, else
/// `tests/node/node_modules/@octokit/openapi/generated/api.github.com.json`.
pub fn openapi_path() -> PathBuf {
    std::env::var_os(OPENAPI_ENV)
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(NODE_MODULES_PATH), PathBuf::from)
}

/// The description, read and indexed once per process (schemas are
/// compiled per operation when a request first needs them).
///
/// # Errors
/// When the file is missing or is not an OpenAPI 3 description, naming
/// the file and how to get it.
pub(crate) fn api() -> Result<&'static ApiDescription, &'static str> {
    static API: OnceLock<Result<ApiDescription, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(String::as_str)
}

fn load() -> Result<ApiDescription, String> {
    let path = openapi_path();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "FakeGitHub checks every request against GitHub's REST description, which is not at {}: {e}. \
             Run `cd tests/node && npm ci` (it pins @octokit/openapi), or set {OPENAPI_ENV} to a copy of \
             @octokit/openapi's generated/api.github.com.json",
            path.display()
        )
    })?;
    ApiDescription::openapi3(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// One served operation: its `operationId` and a sample request (method,
/// path) the route table test checks against the description.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub(crate) operation: &'static str,
    pub(crate) method: &'static str,
    pub(crate) sample: &'static str,
}

const fn route(operation: &'static str, method: &'static str, sample: &'static str) -> Route {
    Route { operation, method, sample }
}

/// Every operation of the description the fake serves; a conforming
/// request for any other is 501 (a gap in the fake, not in the request).
pub(crate) const ROUTES: &[Route] = &[
    route("users/get-authenticated", "GET", "/user"),
    route("orgs/list-for-authenticated-user", "GET", "/user/orgs"),
    route("apps/get-authenticated", "GET", "/app"),
    route("apps/create-installation-access-token", "POST", "/app/installations/7/access_tokens"),
    route("apps/get-repo-installation", "GET", "/repos/octo/demo/installation"),
    route("repos/get", "GET", "/repos/octo/demo"),
    route("repos/get-commit", "GET", "/repos/octo/demo/commits/heads/agent-zero/issue-1"),
    route("checks/list-for-ref", "GET", "/repos/octo/demo/commits/agent-zero/issue-1/check-runs"),
    route("repos/list-commit-statuses-for-ref", "GET", "/repos/octo/demo/commits/main/statuses"),
    route("repos/get-content", "GET", "/repos/octo/demo/contents/src/app.py"),
    route("repos/download-tarball-archive", "GET", "/repos/octo/demo/tarball/main"),
    route("repos/compare-commits", "GET", "/repos/octo/demo/compare/main...feature"),
    // The same route when `head` has a slash: the description's
    // multi-segment `{basehead}` then matches.
    route("repos/compare-commits-with-basehead", "GET", "/repos/octo/demo/compare/main...agent-zero/issue-1"),
    route("git/get-ref", "GET", "/repos/octo/demo/git/ref/heads/agent-zero/issue-1"),
    route("git/create-ref", "POST", "/repos/octo/demo/git/refs"),
    route("git/update-ref", "PATCH", "/repos/octo/demo/git/refs/heads/agent-zero/issue-1"),
    route("git/delete-ref", "DELETE", "/repos/octo/demo/git/refs/heads/agent-zero/issue-1"),
    route("git/create-blob", "POST", "/repos/octo/demo/git/blobs"),
    route("git/get-blob", "GET", "/repos/octo/demo/git/blobs/0123456789abcdef0123456789abcdef01234567"),
    route("git/create-tree", "POST", "/repos/octo/demo/git/trees"),
    route("git/get-tree", "GET", "/repos/octo/demo/git/trees/0123456789abcdef0123456789abcdef01234567"),
    route("git/create-commit", "POST", "/repos/octo/demo/git/commits"),
    route("git/get-commit", "GET", "/repos/octo/demo/git/commits/0123456789abcdef0123456789abcdef01234567"),
    route("checks/create", "POST", "/repos/octo/demo/check-runs"),
    route("checks/update", "PATCH", "/repos/octo/demo/check-runs/5"),
    route("checks/get", "GET", "/repos/octo/demo/check-runs/5"),
    route("repos/create-commit-status", "POST", "/repos/octo/demo/statuses/0123456789abcdef0123456789abcdef01234567"),
    route("issues/get", "GET", "/repos/octo/demo/issues/1"),
    route("issues/list-comments", "GET", "/repos/octo/demo/issues/1/comments"),
    route("issues/create-comment", "POST", "/repos/octo/demo/issues/1/comments"),
    route("issues/get-comment", "GET", "/repos/octo/demo/issues/comments/5"),
    route("issues/update-comment", "PATCH", "/repos/octo/demo/issues/comments/5"),
    route("issues/delete-comment", "DELETE", "/repos/octo/demo/issues/comments/5"),
    route("reactions/create-for-issue-comment", "POST", "/repos/octo/demo/issues/comments/5/reactions"),
    route("pulls/create", "POST", "/repos/octo/demo/pulls"),
    route("pulls/list", "GET", "/repos/octo/demo/pulls"),
    route("pulls/get", "GET", "/repos/octo/demo/pulls/2"),
    route("pulls/list-files", "GET", "/repos/octo/demo/pulls/2/files"),
    route("pulls/list-reviews", "GET", "/repos/octo/demo/pulls/2/reviews"),
    route("pulls/create-review", "POST", "/repos/octo/demo/pulls/2/reviews"),
    route("pulls/list-review-comments", "GET", "/repos/octo/demo/pulls/2/comments"),
    route("pulls/create-reply-for-review-comment", "POST", "/repos/octo/demo/pulls/2/comments/9/replies"),
    route("pulls/update-review-comment", "PATCH", "/repos/octo/demo/pulls/comments/9"),
];

/// Routes the fake serves that are no operation of the REST description,
/// and why: they are not `api.github.com`.
///
/// - `/login/oauth/authorize`, `/login/oauth/access_token`: the OAuth web
///   flow, on `github.com` (the description is of `api.github.com`).
/// - `/_codeload/...`: where `GET /repos/{o}/{r}/tarball/{ref}` redirects,
///   standing in for `codeload.github.com`.
pub(crate) const EXEMPT: &[(&str, &str)] =
    &[("GET", "/login/oauth/authorize"), ("POST", "/login/oauth/access_token"), ("GET", "/_codeload/")];

/// Whether a request (decoded path segments) is one of [`EXEMPT`].
pub(crate) fn exempt(method: &str, segments: &[&str]) -> bool {
    matches!(
        (method, segments),
        ("GET", ["login", "oauth", "authorize"] | ["_codeload", ..]) | ("POST", ["login", "oauth", "access_token"])
    )
}
