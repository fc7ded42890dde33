//! GitLab's JSON shapes (the Grape entities `UserBasic`, `UserPublic`,
//! `ProjectWithAccess`, `Issue`, `Note`, `Commit`, `CommitDetail`,
//! `CommitStatus`, `Branch`, `Diff`, `MergeRequest`, `Member`) and its error
//! bodies (`{"message": ...}` from `render_api_error!`, `{"error": ...}`
//! from Grape's validations and unknown routes).

use serde_json::{Value, json};

use super::state::{Issue, MergeRequest, Note, Project, State, Status, User};
use crate::gitea::git::CommitInfo;
use crate::server::Reply;

/// `render_api_error!(message, status)`: `{"message": message}`.
pub(crate) fn message(status: u16, message: &str) -> Reply {
    Reply::json(status, &json!({ "message": message }))
}

/// Grape's `error!` shape for validation failures and unknown routes:
/// `{"error": text}`.
pub(crate) fn error(status: u16, text: &str) -> Reply {
    Reply::json(status, &json!({ "error": text }))
}

/// `not_found!(what)`: `{"message": "404 {what} Not Found"}`.
pub(crate) fn not_found(what: &str) -> Reply {
    message(404, &format!("404 {what} Not Found"))
}

/// A record GitLab looks up with `find_by!`/`find` that is not there
/// (`find_project_issue`, `find_project_merge_request`, a note by id, a
/// member): `ActiveRecord::RecordNotFound`, which lib/api/api.rb answers
/// `{"message": "404 Not found"}`.
pub(crate) fn record_not_found() -> Reply {
    message(404, "404 Not found")
}

/// `forbidden!`: `{"message": "403 Forbidden"}`, with `- reason` when given.
pub(crate) fn forbidden(reason: Option<&str>) -> Reply {
    match reason {
        Some(reason) => message(403, &format!("403 Forbidden - {reason}")),
        None => message(403, "403 Forbidden"),
    }
}

/// `bad_request!(reason)`: `{"message": "400 Bad request - reason"}`.
pub(crate) fn bad_request(reason: &str) -> Reply {
    message(400, &format!("400 Bad request - {reason}"))
}

/// The web URL of a project.
pub(crate) fn project_url(state: &State, project: &Project) -> String {
    format!("{}/{}", state.base_url, project.full_path())
}

/// `Entities::UserBasic`.
pub(crate) fn user_basic(state: &State, user: &User) -> Value {
    json!({
        "id": user.id,
        "username": user.username,
        "public_email": null,
        "name": user.username,
        "state": "active",
        "locked": false,
        "avatar_url": format!("{}/uploads/-/system/user/avatar/{}/avatar.png", state.base_url, user.id),
        "web_url": format!("{}/{}", state.base_url, user.username),
    })
}

/// `UserBasic` by username (created on first mention).
pub(crate) fn user_basic_by_name(state: &mut State, username: &str) -> Value {
    let user = state.ensure_user(username);
    user_basic(state, &user)
}

/// `Entities::UserPublic` (what `GET /user` answers a non-admin).
pub(crate) fn user_public(state: &State, user: &User) -> Value {
    let mut json = user_basic(state, user);
    let email = format!("{}@example.com", user.username.to_ascii_lowercase());
    let extra = json!({
        "created_at": user.created,
        "bio": "",
        "location": "",
        "skype": "",
        "linkedin": "",
        "twitter": "",
        "discord": "",
        "website_url": "",
        "organization": "",
        "job_title": "",
        "pronouns": null,
        "bot": false,
        "work_information": null,
        "local_time": null,
        "last_sign_in_at": user.created,
        "confirmed_at": user.created,
        "last_activity_on": null,
        "email": email,
        "theme_id": 3,
        "color_scheme_id": 1,
        "projects_limit": 100_000,
        "current_sign_in_at": user.created,
        "identities": [],
        "can_create_group": true,
        "can_create_project": true,
        "two_factor_enabled": false,
        "external": false,
        "private_profile": false,
        "commit_email": email,
    });
    if let (Some(base), Some(extra)) = (json.as_object_mut(), extra.as_object()) {
        base.extend(extra.clone());
    }
    json
}

/// `Entities::ProjectWithAccess` (the fields clients read, with
/// `permissions` for the caller's level).
pub(crate) fn project(state: &State, project: &Project, level: u32) -> Value {
    let web = project_url(state, project);
    let host = state.base_url.split_once("://").map_or(state.base_url.as_str(), |(_, h)| h);
    let owner = state.user(&project.namespace).cloned();
    json!({
        "id": project.id,
        "description": null,
        "name": project.path,
        "name_with_namespace": format!("{} / {}", project.namespace, project.path),
        "path": project.path,
        "path_with_namespace": project.full_path(),
        "created_at": project.created,
        "default_branch": project.default_branch,
        "tag_list": [],
        "topics": [],
        "ssh_url_to_repo": format!("git@{host}:{}.git", project.full_path()),
        "http_url_to_repo": format!("{web}.git"),
        "web_url": web,
        "readme_url": null,
        "forks_count": 0,
        "avatar_url": null,
        "star_count": 0,
        "last_activity_at": project.created,
        "namespace": {
            "id": owner.as_ref().map_or(0, |u| u.id),
            "name": project.namespace,
            "path": project.namespace,
            "kind": "user",
            "full_path": project.namespace,
            "parent_id": null,
            "avatar_url": null,
            "web_url": format!("{}/{}", state.base_url, project.namespace),
        },
        "visibility": if project.private { "private" } else { "public" },
        "empty_repo": false,
        "archived": false,
        "owner": owner.map_or(Value::Null, |u| user_basic(state, &u)),
        "issues_enabled": true,
        "merge_requests_enabled": true,
        "creator_id": state.user(&project.namespace).map_or(0, |u| u.id),
        "open_issues_count": state.issues.iter().filter(|i| i.project == project.id && i.state == "opened").count(),
        "permissions": {
            "project_access": if level > 0 { json!({"access_level": level, "notification_level": 3}) } else { Value::Null },
            "group_access": null,
        },
    })
}

/// `references` of an issuable (`#1` / `!1`).
fn references(project: &Project, sigil: char, iid: u64) -> Value {
    json!({
        "short": format!("{sigil}{iid}"),
        "relative": format!("{sigil}{iid}"),
        "full": format!("{}{sigil}{iid}", project.full_path()),
    })
}

fn time_stats() -> Value {
    json!({"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": null, "human_total_time_spent": null})
}

/// `Entities::Issue`.
pub(crate) fn issue(state: &mut State, issue: &Issue) -> Value {
    let author = user_basic_by_name(state, &issue.author);
    let project = state.projects.iter().find(|p| p.id == issue.project).expect("an issue's project exists");
    let notes = state.notes.iter().filter(|n| n.noteable_type == "Issue" && n.noteable_id == issue.id).count();
    let web = format!("{}/-/issues/{}", project_url(state, project), issue.iid);
    json!({
        "id": issue.id,
        "iid": issue.iid,
        "project_id": issue.project,
        "title": issue.title,
        "description": issue.description,
        "state": issue.state,
        "created_at": issue.created,
        "updated_at": issue.updated,
        "closed_at": null,
        "closed_by": null,
        "labels": issue.labels,
        "milestone": null,
        "assignees": [],
        "author": author,
        "type": "ISSUE",
        "assignee": null,
        "user_notes_count": notes,
        "merge_requests_count": 0,
        "upvotes": 0,
        "downvotes": 0,
        "due_date": null,
        "confidential": issue.confidential,
        "discussion_locked": null,
        "issue_type": "issue",
        "web_url": web,
        "time_stats": time_stats(),
        "task_completion_status": {"count": 0, "completed_count": 0},
        "has_tasks": false,
        "references": references(project, '#', issue.iid),
        "severity": "UNKNOWN",
        "moved_to_id": null,
        "service_desk_reply_to": null,
    })
}

/// `Entities::Note` (the fields GitLab's `public_api/v4/notes.json`
/// allows; a diff note adds `position` as `Entities::DiffNote` does).
pub(crate) fn note(state: &mut State, note: &Note) -> Value {
    let author = user_basic_by_name(state, &note.author);
    let mut json = json!({
        "id": note.id,
        "type": if note.position.is_some() { Value::from("DiffNote") } else { Value::Null },
        "body": note.body,
        "attachment": null,
        "author": author,
        "created_at": note.created,
        "updated_at": note.updated,
        "system": false,
        "noteable_id": note.noteable_id,
        "noteable_type": note.noteable_type,
        "resolvable": note.position.is_some(),
        "confidential": false,
        "internal": false,
        "noteable_iid": note.noteable_iid,
        "commands_changes": {},
    });
    if let Some(position) = &note.position {
        json["position"] = position.clone();
        json["resolved"] = Value::Bool(false);
        json["resolved_by"] = Value::Null;
        json["resolved_at"] = Value::Null;
    }
    json
}

/// `Entities::CommitStatus`.
pub(crate) fn status(state: &mut State, status: &Status) -> Value {
    let author = user_basic_by_name(state, &status.author);
    json!({
        "id": status.id,
        "sha": status.sha,
        "ref": status.git_ref,
        "status": status.state,
        "name": status.name,
        "target_url": status.target_url,
        "description": status.description,
        "created_at": status.created,
        "started_at": null,
        "finished_at": null,
        "allow_failure": false,
        "coverage": null,
        "pipeline_id": null,
        "author": author,
    })
}

/// `Entities::Commit`.
pub(crate) fn commit(state: &State, project: &Project, info: &CommitInfo) -> Value {
    let title = info.message.lines().next().unwrap_or_default().to_owned();
    json!({
        "id": info.sha,
        "short_id": info.sha.get(..8).unwrap_or(&info.sha),
        "created_at": info.committer_date,
        "parent_ids": info.parents,
        "title": title,
        "message": info.message,
        "author_name": info.author_name,
        "author_email": info.author_email,
        "authored_date": info.author_date,
        "committer_name": info.committer_name,
        "committer_email": info.committer_email,
        "committed_date": info.committer_date,
        "trailers": {},
        "extended_trailers": {},
        "web_url": format!("{}/-/commit/{}", project_url(state, project), info.sha),
    })
}

/// `Entities::CommitDetail`: the commit with `stats` (unless left out),
/// `status`, `project_id` and `last_pipeline`.
pub(crate) fn commit_detail(state: &State, project: &Project, info: &CommitInfo, stats: Option<(u64, u64)>) -> Value {
    let mut json = commit(state, project, info);
    if let Some((additions, deletions)) = stats {
        json["stats"] = json!({"additions": additions, "deletions": deletions, "total": additions + deletions});
    }
    json["status"] = Value::Null;
    json["project_id"] = Value::from(project.id);
    json["last_pipeline"] = Value::Null;
    json
}

/// `Entities::Branch`.
pub(crate) fn branch(state: &State, project: &Project, name: &str, info: &CommitInfo, level: u32) -> Value {
    let default = name == project.default_branch;
    json!({
        "name": name,
        "commit": commit(state, project, info),
        "merged": false,
        "protected": default,
        "default": default,
        "developers_can_push": !default,
        "developers_can_merge": !default,
        "can_push": level >= if default { super::state::MAINTAINER } else { super::state::DEVELOPER },
        "web_url": format!("{}/-/tree/{name}", project_url(state, project)),
    })
}

/// `Entities::Member` (`members/all/:user_id`).
pub(crate) fn member(state: &State, user: &User, level: u32) -> Value {
    let mut json = user_basic(state, user);
    json["access_level"] = Value::from(level);
    json["created_at"] = Value::from(user.created.clone());
    json["created_by"] = Value::Null;
    json["expires_at"] = Value::Null;
    json["group_saml_identity"] = Value::Null;
    json["membership_state"] = Value::from("active");
    json
}

/// `Entities::MergeRequestBasic` (`full` adds `Entities::MergeRequest`'s
/// fields).
/// A draft by its title, as GitLab marks one: `[Draft]`, `Draft:` or
/// `(Draft)` at the start (doc/user/project/merge_requests/drafts.md).
fn is_draft(title: &str) -> bool {
    let title = title.trim_start().to_ascii_lowercase();
    ["[draft]", "draft:", "(draft)"].iter().any(|p| title.starts_with(p))
}

pub(crate) fn merge_request(state: &mut State, mr: &MergeRequest, full: bool) -> Value {
    let author = user_basic_by_name(state, &mr.author);
    let project = state.projects.iter().find(|p| p.id == mr.project).expect("a merge request's project exists");
    let head = project.git.branch(&mr.source_branch).unwrap_or_default();
    let base = project.git.branch(&mr.target_branch).unwrap_or_default();
    let merge_base = project.git.merge_base(&base, &head).unwrap_or_else(|| base.clone());
    let notes = state.notes.iter().filter(|n| n.noteable_type == "MergeRequest" && n.noteable_id == mr.id).count();
    let web = format!("{}/-/merge_requests/{}", project_url(state, project), mr.iid);
    let changes = project.git.changed(&merge_base, &head).len();
    let mut json = json!({
        "id": mr.id,
        "iid": mr.iid,
        "project_id": mr.project,
        "title": mr.title,
        "description": mr.description,
        "state": mr.state,
        "created_at": mr.created,
        "updated_at": mr.updated,
        "merged_by": null,
        "merge_user": null,
        "merged_at": null,
        "closed_by": null,
        "closed_at": null,
        "target_branch": mr.target_branch,
        "source_branch": mr.source_branch,
        "user_notes_count": notes,
        "upvotes": 0,
        "downvotes": 0,
        "author": author,
        "assignees": [],
        "assignee": null,
        "reviewers": [],
        "source_project_id": mr.project,
        "target_project_id": mr.project,
        "labels": mr.labels,
        "draft": is_draft(&mr.title),
        "imported": false,
        "imported_from": "none",
        "work_in_progress": is_draft(&mr.title),
        "milestone": null,
        "merge_when_pipeline_succeeds": false,
        "merge_status": "can_be_merged",
        "detailed_merge_status": "mergeable",
        "merge_after": null,
        "sha": head,
        "merge_commit_sha": null,
        "squash_commit_sha": null,
        "discussion_locked": null,
        "should_remove_source_branch": null,
        "force_remove_source_branch": false,
        "prepared_at": mr.created,
        "reference": format!("!{}", mr.iid),
        "references": references(project, '!', mr.iid),
        "web_url": web,
        "time_stats": time_stats(),
        "squash": false,
        "squash_on_merge": false,
        "task_completion_status": {"count": 0, "completed_count": 0},
        "has_conflicts": false,
        "blocking_discussions_resolved": true,
    });
    if full {
        let extra = json!({
            "subscribed": true,
            "changes_count": changes.to_string(),
            "latest_build_started_at": null,
            "latest_build_finished_at": null,
            "first_deployed_to_production_at": null,
            "pipeline": null,
            "head_pipeline": null,
            "diff_refs": {"base_sha": merge_base, "head_sha": head, "start_sha": base},
            "merge_error": null,
            "first_contribution": false,
            "user": {"can_merge": true},
        });
        if let (Some(json), Some(extra)) = (json.as_object_mut(), extra.as_object()) {
            json.extend(extra.clone());
        }
    }
    json
}
