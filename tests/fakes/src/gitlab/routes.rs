//! The request path of the fake GitLab: faults, the definition's match,
//! the token and its scopes, the project and the caller's access, the
//! definition's check of the query and body, then the operation's handler,
//! routed by the definition's `operationId` (so every route served is an
//! operation of the definition by construction; [`ROUTES`] lists them).

use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::{Value, json};

use super::request::{Request, paginate};
use super::state::State;
use super::wire::{self, error, message};
use super::{issues, merge_requests, repository};
use crate::conformance::{ApiDescription, Violation};
use crate::record::{RecordedCall, percent_decode};
use crate::server::Reply;

/// One served operation: its `operationId`, and a sample request (method,
/// path) the route table test checks against the definition.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub(crate) operation: &'static str,
    pub(crate) method: &'static str,
    pub(crate) sample: &'static str,
}

const fn route(operation: &'static str, method: &'static str, sample: &'static str) -> Route {
    Route { operation, method, sample }
}

/// Every operation the fake serves.
pub(crate) const ROUTES: &[Route] = &[
    route("getApiV4User", "GET", "/api/v4/user"),
    route("getApiV4Users", "GET", "/api/v4/users"),
    route("getApiV4ProjectsId", "GET", "/api/v4/projects/acme%2Fcalc"),
    route("getApiV4ProjectsIdRepositoryFilesFilePathRaw", "GET", "/api/v4/projects/7/repository/files/src%2Fa.py/raw"),
    route("getApiV4ProjectsIdRepositoryFilesFilePath", "GET", "/api/v4/projects/7/repository/files/src%2Fa.py"),
    route("headApiV4ProjectsIdRepositoryFilesFilePath", "HEAD", "/api/v4/projects/7/repository/files/src%2Fa.py"),
    route("getApiV4ProjectsIdRepositoryBranchesBranch", "GET", "/api/v4/projects/7/repository/branches/main"),
    route("getApiV4ProjectsIdRepositoryArchive", "GET", "/api/v4/projects/7/repository/archive"),
    route("getApiV4ProjectsIdIssuesIssueIid", "GET", "/api/v4/projects/7/issues/1"),
    route("getApiV4ProjectsIdMembersAllUserId", "GET", "/api/v4/projects/7/members/all/3"),
    route(
        "postApiV4ProjectsIdStatusesSha",
        "POST",
        "/api/v4/projects/7/statuses/0123456789abcdef0123456789abcdef01234567",
    ),
    route("getApiV4ProjectsIdIssuesNoteableIdNotes", "GET", "/api/v4/projects/7/issues/1/notes"),
    route("postApiV4ProjectsIdIssuesNoteableIdNotes", "POST", "/api/v4/projects/7/issues/1/notes"),
    route("putApiV4ProjectsIdIssuesNoteableIdNotesNoteId", "PUT", "/api/v4/projects/7/issues/1/notes/5"),
    route("postApiV4ProjectsIdRepositoryCommits", "POST", "/api/v4/projects/7/repository/commits"),
    route("getApiV4ProjectsIdRepositoryCommitsSha", "GET", "/api/v4/projects/7/repository/commits/main"),
    route("getApiV4ProjectsIdRepositoryCommitsShaDiff", "GET", "/api/v4/projects/7/repository/commits/main/diff"),
    route("getApiV4ProjectsIdMergeRequests", "GET", "/api/v4/projects/7/merge_requests"),
    route("postApiV4ProjectsIdMergeRequests", "POST", "/api/v4/projects/7/merge_requests"),
    route("getApiV4ProjectsIdMergeRequestsMergeRequestIid", "GET", "/api/v4/projects/7/merge_requests/1"),
    route("getApiV4ProjectsIdMergeRequestsMergeRequestIidDiffs", "GET", "/api/v4/projects/7/merge_requests/1/diffs"),
    route(
        "getApiV4ProjectsIdMergeRequestsNoteableIdDiscussions",
        "GET",
        "/api/v4/projects/7/merge_requests/1/discussions",
    ),
    route(
        "postApiV4ProjectsIdMergeRequestsNoteableIdDiscussions",
        "POST",
        "/api/v4/projects/7/merge_requests/1/discussions",
    ),
    route(
        "postApiV4ProjectsIdMergeRequestsNoteableIdDiscussionsDiscussionIdNotes",
        "POST",
        "/api/v4/projects/7/merge_requests/1/discussions/6a9c1d2e/notes",
    ),
];

/// The definition the fake holds requests to: excerpts of GitLab's
/// `openapi_v2.yaml` with the operations it lacks from GitLab's Grape
/// source (`tests/fixtures/gitlab-api/`, built by its `build.py`).
pub(crate) const DEFINITION: &str = include_str!("../../../fixtures/gitlab-api/gitlab-api.v4.subset.json");

/// The definition, loaded once per process. No path parameter takes the
/// rest of the path: GitLab's routes want `/` inside `:id`, `:file_path`
/// and `:branch` URL-encoded (`acme%2Fcalc`, `src%2Fapp.py`).
pub(crate) fn api() -> &'static ApiDescription {
    static API: OnceLock<ApiDescription> = OnceLock::new();
    API.get_or_init(|| {
        ApiDescription::swagger2(DEFINITION).expect("the committed GitLab definition loads").with_rest_parameters(&[])
    })
}

/// Grape's `(.:format)` suffix on the archive route:
/// `/repository/archive.tar.gz` is `/repository/archive` with
/// `format=tar.gz` (lib/api/repositories.rb, `get ':id/repository/archive',
/// requirements: { format: Gitlab::PathRegex.archive_formats_regex }`).
pub(crate) fn split_format(path: &str) -> (String, Option<String>) {
    const ARCHIVE: &str = "/repository/archive.";
    if let Some(at) = path.rfind(ARCHIVE) {
        let format = &path[at + ARCHIVE.len()..];
        if ["tar.gz", "tar.bz2", "tbz", "tbz2", "tb2", "bz2", "tar", "zip"].contains(&format) {
            return (format!("{}/repository/archive", &path[..at]), Some(format.to_owned()));
        }
    }
    (path.to_owned(), None)
}

/// Answers one request.
pub(crate) fn handle(state: &Mutex<State>, call: &RecordedCall) -> Reply {
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(fault) = state.take_fault(&call.method, &call.path) {
        let mut reply = Reply {
            status: fault.status,
            headers: vec![("content-type".into(), fault.content_type.into())],
            body: fault.body.into_bytes(),
            delay_ms: 0,
        };
        for (name, value) in &fault.headers {
            reply = reply.with_header(name, value);
        }
        return reply;
    }
    let (path, format) = split_format(&call.path);
    let mut query = call.query.clone();
    if let Some(format) = format {
        query.push(("format".to_owned(), format));
    }
    let pairs: Vec<(&str, &str)> = query.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let body = (!call.body.is_empty()).then_some(call.body.as_slice());
    let matched = api().matched(&call.method, &path, &pairs, body);
    if let Err(violation @ Violation::NoOperation { .. }) = &matched {
        // lib/api/api.rb: `route :any, '*path'` answers every unknown route
        // with `error!('404 Not Found', 404)`.
        state.violations.push(violation.to_string());
        return error(404, "404 Not Found");
    }
    let (username, scopes) = match authenticate(&state, call) {
        Ok(found) => found,
        Err(reply) => return reply,
    };
    let operation = matched.as_ref().map(|m| m.operation.as_str().to_owned()).ok();
    let user_route = path == "/api/v4/user" || path == "/api/v4/users";
    let files_route = path.contains("/repository/files/");
    if let Err(reply) = check_scope(&call.method, &scopes, user_route, files_route) {
        return reply;
    }
    let project_id = project_segment(&path);
    let (project, level) = match &project_id {
        Some(id) => match visible_project(&state, id, &username) {
            Ok(found) => (Some(found.0), found.1),
            Err(reply) => return reply,
        },
        None => (None, 0),
    };
    let matched = match matched {
        Ok(matched) => matched,
        Err(violation) => {
            // Grape's parameter validation: 400 `{"error": "..."}`.
            state.violations.push(violation.to_string());
            return error(400, &violation.to_string());
        }
    };
    if let Some(refused) = content_type(call) {
        let operation = operation.unwrap_or_default();
        state.violations.push(format!("{operation}: {refused}"));
        return error(400, &refused);
    }
    let request = Request { call, params: matched.params, username, project, level, query };
    dispatch(&mut state, matched.operation.as_str(), &request)
}

/// The fake reads JSON bodies only: a POST or PUT with a body must say
/// `Content-Type: application/json` (GitLab also takes form bodies; a
/// client of this fake sending one is a violation here).
fn content_type(call: &RecordedCall) -> Option<String> {
    if !matches!(call.method.as_str(), "POST" | "PUT") || call.body.is_empty() {
        return None;
    }
    match call.header("content-type") {
        Some(t) if t.contains("json") => None,
        Some(t) => Some(format!("the fake GitLab reads JSON bodies only, not {t:?}")),
        None => Some("a body without Content-Type (send application/json)".to_owned()),
    }
}

/// The `:id` of a `/api/v4/projects/:id/...` path, decoded.
fn project_segment(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/api/v4/projects/")?;
    let segment = rest.split('/').next().filter(|s| !s.is_empty())?;
    Some(percent_decode(segment, false))
}

/// The token's user and scopes, as GitLab's `APIGuard` finds them: a
/// personal access token in `PRIVATE-TOKEN`, `Authorization: Bearer`, or
/// the `private_token` query parameter (the definition's
/// `securityDefinitions`; an `access_token` query parameter is undeclared
/// there, so a violation). None, or one that is
/// not a known token, is `401 {"message":"401 Unauthorized"}` (every call
/// here needs one: the fake has no anonymous access).
fn authenticate(state: &State, call: &RecordedCall) -> Result<(String, Vec<String>), Reply> {
    let bearer = call.header("authorization").and_then(|h| {
        let (kind, token) = h.trim().split_once(' ')?;
        kind.eq_ignore_ascii_case("bearer").then(|| token.trim().to_owned())
    });
    let presented = call
        .header("private-token")
        .map(str::to_owned)
        .or(bearer)
        .or_else(|| call.query_param("private_token").map(str::to_owned));
    let unauthorized = || message(401, "401 Unauthorized");
    let Some(presented) = presented else { return Err(unauthorized()) };
    let Some(token) = state.tokens.iter().find(|t| t.token == presented) else { return Err(unauthorized()) };
    Ok((token.username.clone(), token.scopes.clone()))
}

/// GitLab's token scopes for the REST API (`allow_access_with_scope` in
/// lib/api/api.rb: `api`, and `read_api` for GET and HEAD; lib/api/users.rb
/// adds `read_user` for GETs of `/user` and `/users`, lib/api/files.rb
/// `read_repository` for GETs and HEADs of `/repository/files/...`): any
/// other token (`read_repository`, ...) is refused. The refusal is
/// `APIGuard`'s `Bearer::Forbidden` for `insufficient_scope`: 403
/// `{"error":"insufficient_scope","error_description":...,"scope":...}`,
/// `scope` the scopes that would do, space-separated.
fn check_scope(method: &str, scopes: &[String], user_route: bool, files_route: bool) -> Result<(), Reply> {
    let read = matches!(method, "GET" | "HEAD");
    let mut allowed = vec!["api"];
    if read {
        allowed.push("read_api");
        if user_route {
            allowed.push("read_user");
        }
        if files_route {
            allowed.push("read_repository");
        }
    }
    if scopes.iter().any(|s| allowed.contains(&s.as_str())) {
        return Ok(());
    }
    Err(Reply::json(
        403,
        &json!({
            "error": "insufficient_scope",
            "error_description": "The request requires higher privileges than provided by the access token.",
            "scope": allowed.join(" "),
        }),
    ))
}

/// The project `:id` names and the caller's level on it. A project that
/// does not exist, or a private one the caller is no member of, is
/// `404 {"message":"404 Project Not Found"}` (GitLab's `find_project!`
/// does not tell them apart).
fn visible_project(state: &State, id: &str, username: &str) -> Result<(usize, u32), Reply> {
    let not_found = || wire::not_found("Project");
    let index = state.project_index(id).ok_or_else(not_found)?;
    let project = &state.projects[index];
    let level = State::access(project, username);
    if project.private && level == 0 {
        return Err(not_found());
    }
    Ok((index, level))
}

fn dispatch(state: &mut State, operation: &str, request: &Request<'_>) -> Reply {
    match operation {
        "getApiV4User" => {
            let user = state.ensure_user(&request.username);
            Reply::json(200, &wire::user_public(state, &user))
        }
        "getApiV4Users" => {
            let wanted = request.query("username").map(str::to_ascii_lowercase);
            let mut users: Vec<_> = state
                .users
                .values()
                .filter(|u| wanted.as_ref().is_none_or(|w| u.username.to_ascii_lowercase() == *w))
                .cloned()
                .collect();
            users.sort_by_key(|u| std::cmp::Reverse(u.id));
            let items: Vec<Value> = users.iter().map(|u| wire::user_basic(state, u)).collect();
            paginate(state, request, items)
        }
        "getApiV4ProjectsId" => {
            let project = &state.projects[request.project()];
            Reply::json(200, &wire::project(state, project, request.level))
        }
        "getApiV4ProjectsIdIssuesIssueIid"
        | "getApiV4ProjectsIdMembersAllUserId"
        | "getApiV4ProjectsIdIssuesNoteableIdNotes"
        | "postApiV4ProjectsIdIssuesNoteableIdNotes"
        | "putApiV4ProjectsIdIssuesNoteableIdNotesNoteId" => issues::route(state, operation, request),
        "getApiV4ProjectsIdMergeRequests"
        | "postApiV4ProjectsIdMergeRequests"
        | "getApiV4ProjectsIdMergeRequestsMergeRequestIid"
        | "getApiV4ProjectsIdMergeRequestsMergeRequestIidDiffs"
        | "getApiV4ProjectsIdMergeRequestsNoteableIdDiscussions"
        | "postApiV4ProjectsIdMergeRequestsNoteableIdDiscussions"
        | "postApiV4ProjectsIdMergeRequestsNoteableIdDiscussionsDiscussionIdNotes" => {
            merge_requests::route(state, operation, request)
        }
        "getApiV4ProjectsIdRepositoryFilesFilePathRaw"
        | "getApiV4ProjectsIdRepositoryFilesFilePath"
        | "headApiV4ProjectsIdRepositoryFilesFilePath"
        | "getApiV4ProjectsIdRepositoryBranchesBranch"
        | "getApiV4ProjectsIdRepositoryArchive"
        | "postApiV4ProjectsIdStatusesSha"
        | "postApiV4ProjectsIdRepositoryCommits"
        | "getApiV4ProjectsIdRepositoryCommitsSha"
        | "getApiV4ProjectsIdRepositoryCommitsShaDiff" => repository::route(state, operation, request),
        other => {
            // An operation of the definition this fake does not model.
            message(501, &format!("the fake GitLab does not serve {other}"))
        }
    }
}
