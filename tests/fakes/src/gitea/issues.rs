//! Issue routes (`issue` scope): an issue, its comments (list, create,
//! edit), labels added to an issue or a pull request, and, under
//! `repository` scope, a user's permission on the repository.

use serde_json::{Value, json};

use super::request::Request;
use super::state::{Access, Comment, LabelEvent, State};
use super::wire::{self, error, not_found, token_required};
use crate::server::Reply;
use crate::time::now_rfc3339;

pub(crate) fn route(state: &mut State, operation: &str, request: &Request<'_>, key: &str, access: Access) -> Reply {
    match operation {
        "issueGetIssue" => get_issue(state, request, key),
        "issueGetComments" => list_comments(state, request, key),
        "issueCreateComment" => create_comment(state, request, key),
        "issueEditComment" => edit_comment(state, request, key, access),
        "issueAddLabel" => add_labels(state, request, key, access),
        "issueGetCommentsAndTimeline" => timeline(state, request, key),
        "repoGetRepoPermissions" => permission(state, request, key, access),
        _ => not_found(state),
    }
}

fn index(request: &Request<'_>) -> u64 {
    request.param("index").parse().unwrap_or(0)
}

/// Whether issue or pull request `number` exists.
fn exists(state: &State, key: &str, number: u64) -> bool {
    state.issues.iter().any(|i| i.repo == key && i.number == number)
        || state.pulls.iter().any(|p| p.repo == key && p.number == number)
}

/// An issue; a pull request's index answers the issue view of it, with
/// `pull_request` set, as Gitea does.
fn get_issue(state: &mut State, request: &Request<'_>, key: &str) -> Reply {
    let number = index(request);
    if let Some(issue) = state.issues.iter().find(|i| i.repo == key && i.number == number).cloned() {
        return Reply::json(200, &wire::issue(state, &issue));
    }
    let Some(pull) = state.pulls.iter().find(|p| p.repo == key && p.number == number).cloned() else {
        return not_found(state);
    };
    let pull_json = wire::pull(state, &pull);
    let mut issue = json!({});
    for field in [
        "id",
        "url",
        "html_url",
        "number",
        "user",
        "title",
        "body",
        "labels",
        "milestone",
        "assignee",
        "assignees",
        "state",
        "is_locked",
        "comments",
        "created_at",
        "updated_at",
        "closed_at",
        "due_date",
        "pin_order",
    ] {
        issue[field] = pull_json[field].clone();
    }
    let repo = &state.repos[key];
    issue["original_author"] = Value::from("");
    issue["original_author_id"] = Value::from(0);
    issue["ref"] = Value::from("");
    issue["assets"] = json!([]);
    issue["repository"] = json!({"id": repo.id, "name": repo.name, "owner": repo.owner, "full_name": format!("{}/{}", repo.owner, repo.name)});
    issue["pull_request"] =
        json!({"merged": false, "merged_at": null, "draft": false, "html_url": pull_json["html_url"]});
    Reply::json(200, &issue)
}

/// All comments, oldest first (Gitea 1.22 does not paginate this list).
fn list_comments(state: &mut State, request: &Request<'_>, key: &str) -> Reply {
    let number = index(request);
    if !exists(state, key, number) {
        return not_found(state);
    }
    let comments: Vec<Comment> =
        state.comments.iter().filter(|c| c.repo == key && c.number == number).cloned().collect();
    let items: Vec<Value> = comments.iter().map(|c| wire::comment(state, c)).collect();
    Reply::json(200, &Value::Array(items))
}

/// Gitea's `GetCommentsAndTimeline`: the issue's comments and events,
/// oldest first, paginated; here its comments and its label changes.
fn timeline(state: &mut State, request: &Request<'_>, key: &str) -> Reply {
    let number = index(request);
    if !exists(state, key, number) {
        return not_found(state);
    }
    let comments: Vec<Comment> =
        state.comments.iter().filter(|c| c.repo == key && c.number == number).cloned().collect();
    let labels: Vec<LabelEvent> =
        state.label_events.iter().filter(|e| e.repo == key && e.number == number).cloned().collect();
    let mut items: Vec<(u64, Value)> = Vec::new();
    for comment in &comments {
        let mut item = wire::comment(state, comment);
        timeline_fields(&mut item, "comment");
        items.push((comment.id, item));
    }
    for event in &labels {
        items.push((event.id, wire::label_event(state, event)));
    }
    items.sort_by_key(|(id, _)| *id);
    super::request::paginate(state, request, items.into_iter().map(|(_, v)| v).collect())
}

/// A comment's fields as a `TimelineComment` of `kind` carries them.
pub(crate) fn timeline_fields(item: &mut Value, kind: &str) {
    if let Some(object) = item.as_object_mut() {
        for field in ["original_author", "original_author_id", "assets"] {
            object.remove(field);
        }
        object.insert("type".into(), Value::from(kind));
    }
}

fn create_comment(state: &mut State, request: &Request<'_>, key: &str) -> Reply {
    let Some(login) = request.login.clone() else { return token_required(state) };
    let number = index(request);
    if !exists(state, key, number) {
        return not_found(state);
    }
    let body = request.json()["body"].as_str().unwrap_or_default().to_owned();
    let comment = insert_comment(state, key, number, &login, &body);
    let json = wire::comment(state, &comment);
    Reply::json(201, &json)
}

/// Gitea's `AddIssueLabels`, for an issue or a pull request alike (Gitea's
/// pull requests are issues): the repository's labels named in `labels`,
/// by name (names it has no label of are left out) or by id, not both
/// (400); the caller must be able to write (403); each label added is a
/// label change by the caller on the timeline. Answers all the labels the
/// issue now has.
fn add_labels(state: &mut State, request: &Request<'_>, key: &str, access: Access) -> Reply {
    let Some(login) = request.login.clone() else { return token_required(state) };
    let number = index(request);
    if !exists(state, key, number) {
        return not_found(state);
    }
    if access < Access::Write {
        return error(state, 403, "write permission is required");
    }
    let body = request.json();
    let (mut by_id, mut by_name, mut names) = (false, false, Vec::new());
    for wanted in body["labels"].as_array().into_iter().flatten() {
        let found = match wanted {
            Value::Number(id) => {
                by_id = true;
                state.labels.iter().find(|l| l.repo == key && Some(l.id) == id.as_u64())
            }
            Value::String(name) => {
                by_name = true;
                state.labels.iter().find(|l| l.repo == key && l.name == *name)
            }
            _ => return error(state, 400, "a label must be an integer or a string"),
        };
        names.extend(found.map(|l| l.name.clone()));
    }
    if by_id && by_name {
        return error(state, 400, "labels should be an array of strings or integers");
    }
    state.ensure_user(&login);
    for name in names {
        let labels = state.labels_of(key, number).expect("checked above");
        if labels.contains(&name) {
            continue;
        }
        labels.push(name.clone());
        state.record_label_event(key, number, &login, &name, true);
    }
    let names = state.labels_of(key, number).cloned().unwrap_or_default();
    Reply::json(200, &Value::Array(wire::labels(state, key, &names)))
}

/// Gitea's `EditIssueComment`: a comment of another repository is a bare
/// 404, and only its author or someone who may write issues may edit it
/// (a bare 403 otherwise).
fn edit_comment(state: &mut State, request: &Request<'_>, key: &str, access: Access) -> Reply {
    let Some(login) = request.login.clone() else { return token_required(state) };
    let id: u64 = request.param("id").parse().unwrap_or(0);
    let Some(position) = state.comments.iter().position(|c| c.id == id) else { return not_found(state) };
    if state.comments[position].repo != key {
        return Reply { status: 404, headers: Vec::new(), body: Vec::new(), delay_ms: 0 };
    }
    if !state.comments[position].author.eq_ignore_ascii_case(&login) && access < Access::Write {
        return Reply { status: 403, headers: Vec::new(), body: Vec::new(), delay_ms: 0 };
    }
    request.json()["body"].as_str().unwrap_or_default().clone_into(&mut state.comments[position].body);
    state.comments[position].updated = now_rfc3339();
    let comment = state.comments[position].clone();
    let json = wire::comment(state, &comment);
    Reply::json(200, &json)
}

/// Gitea's `GetRepoPermissions`: a token is required; only a site admin,
/// a repository admin, or the user asking about themselves may ask (403
/// otherwise); 404 for a user that does not exist; anyone else's level on
/// a public repository is `read`.
fn permission(state: &mut State, request: &Request<'_>, key: &str, access: Access) -> Reply {
    let Some(login) = request.login.clone() else { return token_required(state) };
    let asked = request.param("collaborator").to_owned();
    if !asked.eq_ignore_ascii_case(&login) && access < Access::Admin {
        return error(
            state,
            403,
            "Only admins can query all permissions, repo admins can query all repo permissions, collaborators can query only their own",
        );
    }
    let Some(user) = state.user(&asked).cloned() else {
        return error(state, 404, &format!("user does not exist [uid: 0, name: {asked}]"));
    };
    let level = State::access(&state.repos[key], Some(&user.login));
    Reply::json(200, &json!({"permission": level.name(), "role_name": level.name(), "user": wire::user(state, &user)}))
}

/// Stores a comment by `login` on `number`.
pub(crate) fn insert_comment(state: &mut State, key: &str, number: u64, login: &str, body: &str) -> Comment {
    state.ensure_user(login);
    let now = now_rfc3339();
    let comment = Comment {
        id: state.fresh_id(),
        repo: key.to_owned(),
        number,
        author: login.to_owned(),
        body: body.to_owned(),
        created: now.clone(),
        updated: now,
    };
    state.comments.push(comment.clone());
    comment
}
