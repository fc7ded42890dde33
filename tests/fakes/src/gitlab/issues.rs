//! Issue routes: an issue, its notes (list, create, edit), and a project's
//! member (`members/all/:user_id`).

use serde_json::Value;

use super::request::{Request, paginate};
use super::state::{MAINTAINER, Note, REPORTER, State};
use super::wire::{self, bad_request, forbidden, message, record_not_found};
use crate::server::Reply;
use crate::time::now_rfc3339;

pub(crate) fn route(state: &mut State, operation: &str, request: &Request<'_>) -> Reply {
    match operation {
        "getApiV4ProjectsIdIssuesIssueIid" => issue(state, request),
        "getApiV4ProjectsIdMembersAllUserId" => member(state, request),
        "getApiV4ProjectsIdIssuesNoteableIdNotes" => list_notes(state, request),
        "postApiV4ProjectsIdIssuesNoteableIdNotes" => create_note(state, request),
        "putApiV4ProjectsIdIssuesNoteableIdNotesNoteId" => edit_note(state, request),
        _ => message(501, "not served"),
    }
}

/// The issue `iid` of the request's project, if any.
fn find_issue(state: &State, request: &Request<'_>, iid: u64) -> Option<super::state::Issue> {
    let project = state.projects[request.project()].id;
    state.issues.iter().find(|i| i.project == project && i.iid == iid).cloned()
}

/// `GET /issues/:issue_iid` (lib/api/issues.rb): `404 Not found` when
/// missing (`find_project_issue` is a `find_by!`).
fn issue(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(found) = find_issue(state, request, request.number("issue_iid")) else { return record_not_found() };
    let json = wire::issue(state, &found);
    Reply::json(200, &json)
}

/// `GET /members/all/:user_id` (lib/api/members.rb): the user's effective
/// level, `404 {"message":"404 Not found"}` (ActiveRecord's `find_by!`)
/// when not a member. The namespace's user owns a personal project (50).
fn member(state: &State, request: &Request<'_>) -> Reply {
    let project = &state.projects[request.project()];
    let user = state.user_by_id(request.number("user_id"));
    let level = user.map_or(0, |u| State::access(project, &u.username));
    match user {
        Some(user) if level > 0 => Reply::json(200, &wire::member(state, user, level)),
        _ => record_not_found(),
    }
}

/// `GET /issues/:noteable_id/notes` (lib/api/notes.rb): `sort` `desc` by
/// default (newest first), `order_by` `created_at` or `updated_at`,
/// paginated; `404 Not found` for a missing issue.
fn list_notes(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(found) = find_issue(state, request, request.number("noteable_id")) else { return record_not_found() };
    let mut notes: Vec<Note> =
        state.notes.iter().filter(|n| n.noteable_type == "Issue" && n.noteable_id == found.id).cloned().collect();
    let by_updated = request.query("order_by") == Some("updated_at");
    notes.sort_by(|a, b| {
        let key = |n: &Note| (if by_updated { n.updated.clone() } else { n.created.clone() }, n.id);
        key(a).cmp(&key(b))
    });
    if request.query("sort") != Some("asc") {
        notes.reverse();
    }
    let items: Vec<Value> = notes.iter().map(|n| wire::note(state, n)).collect();
    paginate(state, request, items)
}

/// Who may comment (kept simple, see docs/testing.md): a reporter and up
/// on any project, any signed-in user on a public one (GitLab lets guests
/// comment too; the product never relies on it).
fn may_comment(state: &State, request: &Request<'_>) -> bool {
    request.level >= REPORTER || !state.projects[request.project()].private
}

/// `POST /issues/:noteable_id/notes`: 201 `Note`; `404 Not found`,
/// 403 for a caller who may not comment, 400 `Note {:note=>["can't be
/// blank"]}` for an empty body.
fn create_note(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(found) = find_issue(state, request, request.number("noteable_id")) else { return record_not_found() };
    if !may_comment(state, request) {
        return forbidden(None);
    }
    let body = request.json()["body"].as_str().unwrap_or_default().to_owned();
    if body.trim().is_empty() {
        return bad_request("Note {:note=>[\"can't be blank\"]}");
    }
    let now = now_rfc3339();
    let id = state.fresh_id();
    let note = Note {
        id,
        project: found.project,
        noteable_type: "Issue",
        noteable_id: found.id,
        noteable_iid: found.iid,
        author: request.username.clone(),
        body,
        created: now.clone(),
        updated: now,
        discussion: format!("{id:040x}"),
        position: None,
    };
    state.notes.push(note.clone());
    let json = wire::note(state, &note);
    Reply::json(201, &json)
}

/// `PUT /issues/:noteable_id/notes/:note_id` (`update_note`): the author
/// (or a maintainer and up) may edit; `404 Not found` (`notes.find`), 403
/// otherwise.
fn edit_note(state: &mut State, request: &Request<'_>) -> Reply {
    let Some(found) = find_issue(state, request, request.number("noteable_id")) else { return record_not_found() };
    let note_id = request.number("note_id");
    let Some(at) =
        state.notes.iter().position(|n| n.id == note_id && n.noteable_type == "Issue" && n.noteable_id == found.id)
    else {
        return record_not_found();
    };
    if !state.notes[at].author.eq_ignore_ascii_case(&request.username) && request.level < MAINTAINER {
        return forbidden(None);
    }
    if let Some(body) = request.json()["body"].as_str() {
        state.notes[at].body = body.to_owned();
        state.notes[at].updated = now_rfc3339();
    }
    let note = state.notes[at].clone();
    let json = wire::note(state, &note);
    Reply::json(200, &json)
}
