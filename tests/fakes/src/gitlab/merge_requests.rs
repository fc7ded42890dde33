//! Merge request routes: list, create, read, diffs.

use serde_json::{Value, json};

use super::repository::parse_diff;
use super::request::{Request, paginate};
use super::state::{DEVELOPER, MergeRequest, State};
use super::wire::{self, forbidden, message, not_found};
use crate::server::Reply;
use crate::time::now_rfc3339;

pub(crate) fn route(state: &mut State, operation: &str, request: &Request<'_>) -> Reply {
    match operation {
        "getApiV4ProjectsIdMergeRequests" => list(state, request),
        "postApiV4ProjectsIdMergeRequests" => create(state, request),
        "getApiV4ProjectsIdMergeRequestsMergeRequestIid" => get(state, request),
        "getApiV4ProjectsIdMergeRequestsMergeRequestIidDiffs" => diffs(state, request),
        _ => message(501, "not served"),
    }
}

/// `GET /merge_requests` (lib/api/merge_requests.rb): filtered by `state`
/// (`all` by default), `source_branch`, `target_branch`; newest first
/// (`order_by=created_at`, `sort=desc` by default); `MergeRequestBasic`,
/// paginated.
fn list(state: &mut State, request: &Request<'_>) -> Reply {
    let project = state.projects[request.project()].id;
    let wanted_state = request.query("state").unwrap_or("all");
    let mut found: Vec<MergeRequest> = state
        .merge_requests
        .iter()
        .filter(|m| m.project == project)
        .filter(|m| wanted_state == "all" || m.state == wanted_state)
        .filter(|m| request.query("source_branch").is_none_or(|b| m.source_branch == b))
        .filter(|m| request.query("target_branch").is_none_or(|b| m.target_branch == b))
        .cloned()
        .collect();
    found.sort_by_key(|m| m.iid);
    if request.query("sort") != Some("asc") {
        found.reverse();
    }
    let items: Vec<Value> = found.iter().map(|m| wire::merge_request(state, m, false)).collect();
    paginate(state, request, items)
}

/// `POST /merge_requests` (lib/api/merge_requests.rb,
/// `handle_merge_request_errors!`, `MergeRequest#validate_branches`):
/// developers and up (403 otherwise); the same branch as source and
/// target is 422 `{"message":["You can't use same project/branch for source
/// and target"]}`; a missing branch 400 `{"message":{"source_branch":["does
/// not exist"]}}`; an open merge request from the same source to the same
/// target is 409 `{"message":["Another open merge request already exists
/// for this source branch: !N"]}`. Answers 201 with `MergeRequest`.
fn create(state: &mut State, request: &Request<'_>) -> Reply {
    if request.level < DEVELOPER {
        return forbidden(None);
    }
    let body = request.json();
    let text = |name: &str| body[name].as_str().unwrap_or_default().to_owned();
    let (source, target) = (text("source_branch"), text("target_branch"));
    let index = request.project();
    let project = &state.projects[index];
    if source == target {
        return Reply::json(422, &json!({"message": ["You can't use same project/branch for source and target"]}));
    }
    for (field, branch) in [("source_branch", &source), ("target_branch", &target)] {
        if project.git.branch(branch).is_none() {
            return Reply::json(400, &json!({"message": {field: ["does not exist"]}}));
        }
    }
    let id = project.id;
    if let Some(open) = state
        .merge_requests
        .iter()
        .find(|m| m.project == id && m.state == "opened" && m.source_branch == source && m.target_branch == target)
    {
        let text = format!("Another open merge request already exists for this source branch: !{}", open.iid);
        return Reply::json(409, &json!({ "message": [text] }));
    }
    let labels: Vec<String> = match &body["labels"] {
        Value::Array(items) => items.iter().filter_map(|l| l.as_str().map(str::to_owned)).collect(),
        Value::String(list) => list.split(',').map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    let now = now_rfc3339();
    let mr = MergeRequest {
        id: state.fresh_id(),
        project: id,
        iid: state.next_mr_iid(id),
        title: text("title"),
        description: text("description"),
        source_branch: source,
        target_branch: target,
        author: request.username.clone(),
        state: "opened".to_owned(),
        labels,
        created: now.clone(),
        updated: now,
    };
    state.merge_requests.push(mr.clone());
    let json = wire::merge_request(state, &mr, true);
    Reply::json(201, &json)
}

fn find(state: &State, request: &Request<'_>) -> Option<MergeRequest> {
    let project = state.projects[request.project()].id;
    let iid = request.number("merge_request_iid");
    state.merge_requests.iter().find(|m| m.project == project && m.iid == iid).cloned()
}

/// `GET /merge_requests/:merge_request_iid`: `MergeRequest`; 404
/// `Merge Request Not Found`.
fn get(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(mr) = find(state, request) else { return not_found("Merge Request") };
    let json = wire::merge_request(state, &mr, true);
    Reply::json(200, &json)
}

/// `GET /merge_requests/:merge_request_iid/diffs`: the changes from the
/// merge base to the source branch as `Entities::Diff`, paginated.
fn diffs(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(mr) = find(state, request) else { return not_found("Merge Request") };
    let project = &state.projects[request.project()];
    let head = project.git.branch(&mr.source_branch).unwrap_or_default();
    let base = project.git.branch(&mr.target_branch).unwrap_or_default();
    let merge_base = project.git.merge_base(&base, &head).unwrap_or(base);
    let diffs = match project.git.diff(&merge_base, &head) {
        Ok(text) => parse_diff(&String::from_utf8_lossy(&text)),
        Err(e) => return message(500, &e),
    };
    paginate(state, request, diffs)
}
