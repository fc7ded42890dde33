//! The request path of the fake Gitea: faults, the swagger check, the
//! token and its scopes, then the operation's handler, routed by the
//! swagger's `operationId` (so every route served is an operation of the
//! definition by construction; [`ROUTES`] lists them).

use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::json;

use super::request::Request;
use super::state::{Access, State};
use super::wire::{error, not_found, token_required};
use super::{issues, pulls, repos};
use crate::conformance::{ApiDescription, Violation};
use crate::record::RecordedCall;
use crate::server::Reply;

/// Gitea's token scope categories (`AccessTokenScopeCategory`), as the
/// routers group operations under `tokenRequiresScopes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Category {
    /// No scope needed (`/version`).
    Public,
    /// `read:user` / `write:user` (`/user`).
    User,
    /// `read:repository` / `write:repository` (`/repos/{o}/{r}/...`).
    Repository,
    /// `read:issue` / `write:issue` (`/repos/{o}/{r}/issues/...`).
    Issue,
}

impl Category {
    fn name(self) -> &'static str {
        match self {
            Self::Public => "",
            Self::User => "user",
            Self::Repository => "repository",
            Self::Issue => "issue",
        }
    }
}

/// One served operation: its `operationId`, a sample request (method, path)
/// the route table test checks against the swagger, and its scope.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub(crate) operation: &'static str,
    pub(crate) method: &'static str,
    pub(crate) sample: &'static str,
    pub(crate) category: Category,
}

const fn route(operation: &'static str, method: &'static str, sample: &'static str, category: Category) -> Route {
    Route { operation, method, sample, category }
}

const R: &str = "/api/v1/repos/octo/demo";

/// Every operation the fake serves.
pub(crate) const ROUTES: &[Route] = &[
    route("getVersion", "GET", "/api/v1/version", Category::Public),
    route("userGetCurrent", "GET", "/api/v1/user", Category::User),
    route("repoGet", "GET", R, Category::Repository),
    route("repoGetRawFile", "GET", "/api/v1/repos/octo/demo/raw/src/app.py", Category::Repository),
    route("repoGetContents", "GET", "/api/v1/repos/octo/demo/contents/src/app.py", Category::Repository),
    route("repoGetContentsList", "GET", "/api/v1/repos/octo/demo/contents", Category::Repository),
    route("repoChangeFiles", "POST", "/api/v1/repos/octo/demo/contents", Category::Repository),
    route(
        "repoGetRepoPermissions",
        "GET",
        "/api/v1/repos/octo/demo/collaborators/alice/permission",
        Category::Repository,
    ),
    route("repoGetSingleCommit", "GET", "/api/v1/repos/octo/demo/git/commits/main", Category::Repository),
    route("repoGetBranch", "GET", "/api/v1/repos/octo/demo/branches/main", Category::Repository),
    route("repoCreateBranch", "POST", "/api/v1/repos/octo/demo/branches", Category::Repository),
    route("repoGetArchive", "GET", "/api/v1/repos/octo/demo/archive/main.tar.gz", Category::Repository),
    route(
        "repoCreateStatus",
        "POST",
        "/api/v1/repos/octo/demo/statuses/0123456789abcdef0123456789abcdef01234567",
        Category::Repository,
    ),
    route(
        "repoListStatuses",
        "GET",
        "/api/v1/repos/octo/demo/statuses/0123456789abcdef0123456789abcdef01234567",
        Category::Repository,
    ),
    route("repoListStatusesByRef", "GET", "/api/v1/repos/octo/demo/commits/main/statuses", Category::Repository),
    route("repoListPullRequests", "GET", "/api/v1/repos/octo/demo/pulls", Category::Repository),
    route("repoCreatePullRequest", "POST", "/api/v1/repos/octo/demo/pulls", Category::Repository),
    route("repoGetPullRequest", "GET", "/api/v1/repos/octo/demo/pulls/2", Category::Repository),
    route("repoGetPullRequestFiles", "GET", "/api/v1/repos/octo/demo/pulls/2/files", Category::Repository),
    route("repoDownloadPullDiffOrPatch", "GET", "/api/v1/repos/octo/demo/pulls/2.diff", Category::Repository),
    route("repoListPullReviews", "GET", "/api/v1/repos/octo/demo/pulls/2/reviews", Category::Repository),
    route("repoCreatePullReview", "POST", "/api/v1/repos/octo/demo/pulls/2/reviews", Category::Repository),
    route(
        "repoGetPullReviewComments",
        "GET",
        "/api/v1/repos/octo/demo/pulls/2/reviews/9/comments",
        Category::Repository,
    ),
    route("issueGetIssue", "GET", "/api/v1/repos/octo/demo/issues/1", Category::Issue),
    route("issueGetComments", "GET", "/api/v1/repos/octo/demo/issues/1/comments", Category::Issue),
    route("issueCreateComment", "POST", "/api/v1/repos/octo/demo/issues/1/comments", Category::Issue),
    route("issueAddLabel", "POST", "/api/v1/repos/octo/demo/issues/1/labels", Category::Issue),
    route("issueEditComment", "PATCH", "/api/v1/repos/octo/demo/issues/comments/5", Category::Issue),
    route("issueGetCommentsAndTimeline", "GET", "/api/v1/repos/octo/demo/issues/1/timeline", Category::Issue),
];

/// The last path parameters Gitea's router serves as `/*` (the rest of the
/// path, slashes included; routers/api/v1/api.go: `/raw/*`, `/media/*`,
/// `/contents/*`, `/archive/*`, `/branches/*`, `/tags/*`, `/git/refs/*`),
/// so `/branches/agent-zero/issue-1` is the branch `agent-zero/issue-1`
/// there as in Gitea. `{ref}` in `/commits/{ref}/statuses` is one segment
/// (not last); `{tag}` is left out (`/releases/tags/{tag}` is one segment).
pub(crate) const REST_PARAMETERS: [&str; 5] = ["filepath", "path", "archive", "branch", "ref"];

/// Gitea's swagger for v1.22 (`tests/fixtures/gitea-api/`).
pub(crate) const SWAGGER: &str = include_str!("../../../fixtures/gitea-api/swagger.v1.22.json");

/// The swagger, loaded once per process.
pub(crate) fn api() -> &'static ApiDescription {
    static API: OnceLock<ApiDescription> = OnceLock::new();
    API.get_or_init(|| {
        ApiDescription::swagger2(SWAGGER)
            .expect("the committed Gitea swagger loads")
            .with_rest_parameters(&REST_PARAMETERS)
    })
}

/// Answers one request.
pub(crate) fn handle(state: &Mutex<State>, call: &RecordedCall) -> Reply {
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(fault) = state.take_fault(&call.method, &call.path) {
        let mut reply = Reply {
            status: fault.status,
            headers: vec![("content-type".into(), "application/json; charset=utf-8".into())],
            body: fault.body.into_bytes(),
            delay_ms: 0,
        };
        for (name, value) in &fault.headers {
            reply = reply.with_header(name, value);
        }
        return reply;
    }
    let query: Vec<(&str, &str)> = call.query.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let body = (!call.body.is_empty()).then_some(call.body.as_slice());
    let matched = match api().matched(&call.method, &call.path, &query, body) {
        Ok(matched) => matched,
        Err(violation) => {
            state.violations.push(violation.to_string());
            return match violation {
                Violation::NoOperation { .. } => not_found(&state),
                other => error(&state, 422, &other.to_string()),
            };
        }
    };
    let Some(route) = ROUTES.iter().find(|r| r.operation == matched.operation.as_str()) else {
        // An operation of the definition this fake does not model: Gitea
        // has it, so this is a gap in the fake, not in the request.
        let message = format!("the fake Gitea does not serve {} ({})", matched.operation, matched.template);
        return error(&state, 501, &message);
    };
    let login = match authenticate(&state, call, route) {
        Ok(login) => login,
        Err(reply) => return reply,
    };
    let request = Request { call, params: matched.params, login };
    dispatch(&mut state, route.operation, &request)
}

/// Gitea's `bind` (gitea.com/go-chi/binding): a POST, PUT or PATCH the fake
/// serves takes a JSON body and must say so; Gitea answers 422
/// `[]: Empty Content-Type` without one and `[]: Unsupported Content-Type`
/// for anything but JSON or a form (the fake reads JSON only; a PATCH
/// without a Content-Type is bound from the query by Gitea, so its JSON
/// body would be ignored: refused here the same way).
fn content_type(call: &RecordedCall) -> Option<String> {
    if !matches!(call.method.as_str(), "POST" | "PUT" | "PATCH") {
        return None;
    }
    match call.header("content-type").map(str::trim).filter(|t| !t.is_empty()) {
        None => Some("[]: Empty Content-Type".to_owned()),
        Some(t) if t.contains("json") => None,
        Some(_) => Some("[]: Unsupported Content-Type".to_owned()),
    }
}

/// The token's user, checked as Gitea's API middleware does: a token in
/// `Authorization: token X` / `Bearer X` (or `?token=`/`?access_token=`)
/// must exist (401 otherwise; Gitea 1.22 would treat an unknown token as
/// anonymous, later Gitea and Forgejo refuse it), and must carry the
/// operation's scope category at the method's level (`write:` for POST,
/// PUT, PATCH, DELETE), `write:X` implying `read:X` and `all` everything:
/// 403 `token does not have at least one of required scope(s): [..]`.
fn authenticate(state: &State, call: &RecordedCall, route: &Route) -> Result<Option<String>, Reply> {
    let header = call.header("authorization").map(|h| {
        let mut parts = h.split_whitespace();
        match (parts.next(), parts.next(), parts.next()) {
            (Some(kind), Some(token), None) if kind == "token" || kind.eq_ignore_ascii_case("bearer") => {
                Some(token.to_owned())
            }
            _ => None,
        }
    });
    let presented = match header {
        Some(Some(token)) => Some(token),
        Some(None) => return Err(error(state, 401, "invalid username, password or token")),
        None => call.query_param("token").or_else(|| call.query_param("access_token")).map(str::to_owned),
    };
    let Some(presented) = presented else { return Ok(None) };
    let Some(token) = state.tokens.iter().find(|t| t.token == presented) else {
        return Err(error(state, 401, "invalid username, password or token"));
    };
    if route.category != Category::Public {
        let level = if matches!(call.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE") { "write" } else { "read" };
        let category = route.category.name();
        let allowed = token.scopes.iter().any(|scope| {
            scope == "all" || *scope == format!("{level}:{category}") || *scope == format!("write:{category}")
        });
        if !allowed {
            let message = format!("token does not have at least one of required scope(s): [{level}:{category}]");
            return Err(error(state, 403, &message));
        }
    }
    Ok(Some(token.login.clone()))
}

fn dispatch(state: &mut State, operation: &str, request: &Request<'_>) -> Reply {
    match operation {
        "getVersion" => {
            let version = if state.forgejo { "9.0.3+gitea-1.22.0" } else { "1.22.6" };
            Reply::json(200, &json!({"version": version}))
        }
        "userGetCurrent" => match &request.login {
            Some(login) => {
                let user = super::wire::user_by_login(state, login);
                Reply::json(200, &user)
            }
            None => token_required(state),
        },
        _ => {
            // Every other route is under `/repos/{owner}/{repo}`: Gitea's
            // `repoAssignment` answers 404 for a repository that does not
            // exist or that the caller may not see, before anything else.
            let key = request.key();
            let Some(repo) = state.repos.get(&key) else { return not_found(state) };
            let access = State::access(repo, request.login.as_deref());
            if access == Access::None {
                return not_found(state);
            }
            if let Some(refused) = content_type(request.call) {
                state.violations.push(format!("{operation}: {refused}"));
                return error(state, 422, &refused);
            }
            match operation {
                "repoGet" => Reply::json(200, &super::wire::repository(state, &key, access)),
                "issueGetIssue"
                | "issueGetComments"
                | "issueCreateComment"
                | "issueEditComment"
                | "issueAddLabel"
                | "issueGetCommentsAndTimeline"
                | "repoGetRepoPermissions" => issues::route(state, operation, request, &key, access),
                "repoListPullRequests"
                | "repoCreatePullRequest"
                | "repoGetPullRequest"
                | "repoGetPullRequestFiles"
                | "repoDownloadPullDiffOrPatch"
                | "repoListPullReviews"
                | "repoCreatePullReview"
                | "repoGetPullReviewComments" => pulls::route(state, operation, request, &key, access),
                _ => repos::route(state, operation, request, &key, access),
            }
        }
    }
}
