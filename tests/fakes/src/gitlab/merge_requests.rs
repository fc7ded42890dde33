//! Merge request routes: list, create, read, diffs.

use serde_json::{Value, json};

use super::repository::parse_diff;
use super::request::{Request, paginate};
use super::state::{DEVELOPER, MergeRequest, Note, REPORTER, State};
use super::wire::{self, forbidden, message, not_found, record_not_found};
use crate::server::Reply;
use crate::time::now_rfc3339;

pub(crate) fn route(state: &mut State, operation: &str, request: &Request<'_>) -> Reply {
    match operation {
        "getApiV4ProjectsIdMergeRequests" => list(state, request),
        "postApiV4ProjectsIdMergeRequests" => create(state, request),
        "getApiV4ProjectsIdMergeRequestsMergeRequestIid" => get(state, request),
        "getApiV4ProjectsIdMergeRequestsMergeRequestIidDiffs" => diffs(state, request),
        "getApiV4ProjectsIdMergeRequestsNoteableIdDiscussions" => list_discussions(state, request),
        "postApiV4ProjectsIdMergeRequestsNoteableIdDiscussions" => create_discussion(state, request),
        "postApiV4ProjectsIdMergeRequestsNoteableIdDiscussionsDiscussionIdNotes" => reply(state, request),
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
    // `merge_request_iid` in the merge requests API, `noteable_id` (the
    // iid all the same) in the discussions API.
    let iid = match request.number("merge_request_iid") {
        0 => request.number("noteable_id"),
        iid => iid,
    };
    state.merge_requests.iter().find(|m| m.project == project && m.iid == iid).cloned()
}

/// `GET /merge_requests/:merge_request_iid`: `MergeRequest`; `404 Not
/// found` (`find_project_merge_request` is a `find_by!`).
fn get(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(mr) = find(state, request) else { return record_not_found() };
    let json = wire::merge_request(state, &mr, true);
    Reply::json(200, &json)
}

/// `GET /merge_requests/:merge_request_iid/diffs`: the changes from the
/// merge base to the source branch as `Entities::Diff`, paginated.
fn diffs(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(mr) = find(state, request) else { return record_not_found() };
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

/// `Entities::Discussion`: `{id, individual_note, notes}`.
fn discussion_json(state: &mut State, notes: &[Note]) -> Value {
    let individual = notes.len() == 1 && notes[0].position.is_none() && notes[0].noteable_type == "Issue";
    let id = notes.first().map(|n| n.discussion.clone()).unwrap_or_default();
    let notes: Vec<Value> = notes.iter().map(|n| wire::note(state, n)).collect();
    json!({ "id": id, "individual_note": individual, "notes": notes })
}

/// The merge request's notes grouped by discussion, in the order each
/// discussion started.
fn discussions_of(state: &State, mr: &MergeRequest) -> Vec<Vec<Note>> {
    let mut groups: Vec<Vec<Note>> = Vec::new();
    for note in state.notes.iter().filter(|n| n.noteable_type == "MergeRequest" && n.noteable_id == mr.id) {
        match groups.iter_mut().find(|g| g[0].discussion == note.discussion) {
            Some(group) => group.push(note.clone()),
            None => groups.push(vec![note.clone()]),
        }
    }
    groups
}

/// `GET /merge_requests/:noteable_id/discussions` (lib/api/discussions.rb):
/// every discussion, oldest first, its notes oldest first; paginated by
/// discussion.
fn list_discussions(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(mr) = find(state, request) else { return record_not_found() };
    let groups = discussions_of(state, &mr);
    let items: Vec<Value> = groups.iter().map(|g| discussion_json(state, g)).collect();
    paginate(state, request, items)
}

/// Who may comment (see issues.rs): reporters and up, anyone on a public
/// project.
fn may_comment(state: &State, request: &Request<'_>) -> bool {
    request.level >= REPORTER || !state.projects[request.project()].private
}

/// The new-side (`new == true`) or old-side line numbers of `path` that the
/// merge request's diff shows (added, removed or context lines).
fn diff_lines(state: &State, request: &Request<'_>, mr: &MergeRequest, path: &str, new: bool) -> Vec<u64> {
    let project = &state.projects[request.project()];
    let head = project.git.branch(&mr.source_branch).unwrap_or_default();
    let base = project.git.branch(&mr.target_branch).unwrap_or_default();
    let merge_base = project.git.merge_base(&base, &head).unwrap_or(base);
    let Ok(text) = project.git.diff(&merge_base, &head) else { return Vec::new() };
    let files = parse_diff(&String::from_utf8_lossy(&text));
    let key = if new { "new_path" } else { "old_path" };
    let Some(file) = files.iter().find(|f| f[key] == path) else { return Vec::new() };
    let mut lines = Vec::new();
    let (mut old, mut new_no) = (0_u64, 0_u64);
    for line in file["diff"].as_str().unwrap_or_default().lines() {
        if let Some(header) = line.strip_prefix("@@ -") {
            // @@ -a,b +c,d @@
            let mut parts = header.split(' ');
            old = parts.next().and_then(|p| p.split(',').next()?.parse().ok()).unwrap_or(0);
            new_no = parts.next().and_then(|p| p.trim_start_matches('+').split(',').next()?.parse().ok()).unwrap_or(0);
            continue;
        }
        match line.chars().next() {
            Some('+') => {
                if new {
                    lines.push(new_no);
                }
                new_no += 1;
            }
            Some('-') => {
                if !new {
                    lines.push(old);
                }
                old += 1;
            }
            Some('\\') => {}
            _ => {
                lines.push(if new { new_no } else { old });
                old += 1;
                new_no += 1;
            }
        }
    }
    lines
}

/// `POST /merge_requests/:noteable_id/discussions`: a new discussion (201
/// `Discussion`); with `position` a diff note, whose line must be one the
/// merge request's diff shows for that path (GitLab refuses a note it
/// cannot place: 400 `Note {:line_code=>[...]}`, the message
/// approximated here), `old_path`/`new_path` defaulting to each other.
fn create_discussion(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(mr) = find(state, request) else { return record_not_found() };
    if !may_comment(state, request) {
        return forbidden(None);
    }
    let body = request.json();
    let text = body["body"].as_str().unwrap_or_default().to_owned();
    if text.trim().is_empty() {
        return super::wire::bad_request("Note {:note=>[\"can't be blank\"]}");
    }
    let position = match body.get("position") {
        Some(position) => {
            let new_path =
                position["new_path"].as_str().or(position["old_path"].as_str()).unwrap_or_default().to_owned();
            let old_path = position["old_path"].as_str().unwrap_or(&new_path).to_owned();
            let placed = match (position["new_line"].as_u64(), position["old_line"].as_u64()) {
                (Some(line), _) => diff_lines(state, request, &mr, &new_path, true).contains(&line),
                (None, Some(line)) => diff_lines(state, request, &mr, &old_path, false).contains(&line),
                (None, None) => position["position_type"] != "text",
            };
            if !placed {
                return super::wire::bad_request(
                    "Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}",
                );
            }
            let mut position = position.clone();
            position["new_path"] = Value::from(new_path);
            position["old_path"] = Value::from(old_path);
            for key in ["new_line", "old_line"] {
                if position.get(key).is_none() {
                    position[key] = Value::Null;
                }
            }
            Some(position)
        }
        None => None,
    };
    let now = now_rfc3339();
    let id = state.fresh_id();
    let note = Note {
        id,
        project: mr.project,
        noteable_type: "MergeRequest",
        noteable_id: mr.id,
        noteable_iid: mr.iid,
        author: request.username.clone(),
        body: text,
        created: now.clone(),
        updated: now,
        discussion: format!("{:040x}", id + (1 << 40)),
        position,
    };
    state.notes.push(note.clone());
    let json = discussion_json(state, &[note]);
    Reply::json(201, &json)
}

/// `POST /merge_requests/:noteable_id/discussions/:discussion_id/notes`: a
/// reply (201 `Note`); 404 `Discussion Not Found`.
fn reply(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(mr) = find(state, request) else { return record_not_found() };
    let discussion = request.param("discussion_id").to_owned();
    let exists = state
        .notes
        .iter()
        .any(|n| n.noteable_type == "MergeRequest" && n.noteable_id == mr.id && n.discussion == discussion);
    if !exists {
        return not_found("Discussion");
    }
    if !may_comment(state, request) {
        return forbidden(None);
    }
    let text = request.json()["body"].as_str().unwrap_or_default().to_owned();
    if text.trim().is_empty() {
        return super::wire::bad_request("Note {:note=>[\"can't be blank\"]}");
    }
    let now = now_rfc3339();
    let note = Note {
        id: state.fresh_id(),
        project: mr.project,
        noteable_type: "MergeRequest",
        noteable_id: mr.id,
        noteable_iid: mr.iid,
        author: request.username.clone(),
        body: text,
        created: now.clone(),
        updated: now,
        discussion,
        position: None,
    };
    state.notes.push(note.clone());
    let json = wire::note(state, &note);
    Reply::json(201, &json)
}

/// The discussions of merge request `iid` (state inspection).
pub(crate) fn discussions(state: &mut State, project: u64, iid: u64) -> Vec<Value> {
    let Some(mr) = state.merge_requests.iter().find(|m| m.project == project && m.iid == iid).cloned() else {
        return Vec::new();
    };
    let groups = discussions_of(state, &mr);
    groups.iter().map(|g| discussion_json(state, g)).collect()
}
