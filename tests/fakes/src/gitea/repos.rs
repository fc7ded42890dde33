//! Repository code routes: raw files, contents (read, and `ChangeFiles`
//! writes), branches (read, and `CreateBranch`), archives and commit
//! statuses.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::git::Change;
use super::request::{Request, paginate};
use super::state::{Access, State, Status};
use super::wire::{self, error, not_found, token_required};
use crate::server::Reply;
use crate::time::now_rfc3339;

pub(crate) fn route(state: &mut State, operation: &str, request: &Request<'_>, key: &str, access: Access) -> Reply {
    match operation {
        "repoGetRawFile" => raw(state, request, key),
        "repoGetContents" => contents(state, request, key, request.param("filepath")),
        "repoGetContentsList" => contents(state, request, key, ""),
        "repoChangeFiles" => change_files(state, request, key, access),
        "repoGetBranch" => branch(state, key, request.param("branch")),
        "repoCreateBranch" => create_branch(state, request, key, access),
        "repoGetSingleCommit" => single_commit(state, request, key),
        "repoGetArchive" => archive(state, key, request.param("archive")),
        "repoCreateStatus" => create_status(state, request, key, access),
        "repoListStatuses" => list_statuses(state, request, key, request.param("sha")),
        "repoListStatusesByRef" => list_statuses(state, request, key, request.param("ref")),
        _ => not_found(state),
    }
}

/// The commit `?ref=` names, or the default branch's.
fn reference(state: &State, request: &Request<'_>, key: &str) -> Option<(String, String)> {
    let repo = &state.repos[key];
    let name = request.call.query_param("ref").filter(|r| !r.is_empty()).unwrap_or(&repo.default_branch).to_owned();
    repo.git.resolve(&name).map(|sha| (name, sha))
}

fn raw(state: &State, request: &Request<'_>, key: &str) -> Reply {
    let Some((_, sha)) = reference(state, request, key) else { return not_found(state) };
    let Some((_, bytes)) = state.repos[key].git.blob(&sha, request.param("filepath")) else { return not_found(state) };
    let content_type =
        if std::str::from_utf8(&bytes).is_ok() { "text/plain; charset=utf-8" } else { "application/octet-stream" };
    Reply { status: 200, headers: vec![("content-type".into(), content_type.into())], body: bytes, delay_ms: 0 }
}

fn contents(state: &State, request: &Request<'_>, key: &str, path: &str) -> Reply {
    let Some((name, sha)) = reference(state, request, key) else { return not_found(state) };
    let repo = &state.repos[key];
    let path = path.trim_matches('/');
    if !path.is_empty() {
        let Some(entry) = repo.git.entry(&sha, path) else { return not_found(state) };
        if entry.kind == "blob" {
            let bytes = repo.git.blob(&sha, path).map(|(_, b)| b).unwrap_or_default();
            let last = repo.git.last_commit(&sha, path).unwrap_or_else(|| sha.clone());
            return Reply::json(200, &wire::contents(state, repo, &entry, &name, &last, Some(&bytes)));
        }
    }
    let entries: Vec<Value> = repo
        .git
        .list(&sha, path)
        .iter()
        .map(|entry| {
            let last = repo.git.last_commit(&sha, &entry.path).unwrap_or_else(|| sha.clone());
            wire::contents(state, repo, entry, &name, &last, None)
        })
        .collect();
    Reply::json(200, &Value::Array(entries))
}

fn branch(state: &State, key: &str, name: &str) -> Reply {
    let repo = &state.repos[key];
    let Some(info) = repo.git.branch(name).and_then(|sha| repo.git.commit_info(&sha)) else {
        return error(state, 404, &format!("branch does not exist [name: {name}]"));
    };
    Reply::json(
        200,
        &json!({
            "name": name,
            "commit": wire::payload_commit(state, repo, &info),
            "protected": false,
            "required_approvals": 0,
            "enable_status_check": false,
            "status_check_contexts": [],
            "user_can_push": true,
            "user_can_merge": true,
            "effective_branch_protection_name": "",
        }),
    )
}

/// `POST /branches`: Gitea's `CreateBranch` (routers/api/v1/repo/branch.go,
/// 1.22). The name is bound `Required;GitRefName;MaxSize(100)` (422); the
/// branch starts at `old_ref_name` (any commit-ish: an unknown one is
/// Gitea's 500 from `GetCommit`), else at `old_branch_name` (404 `The old
/// branch does not exist`), else at the default branch; a branch of that
/// name is 409 `The branch already exists.`. Answers the branch, 201.
fn create_branch(state: &mut State, request: &Request<'_>, key: &str, access: Access) -> Reply {
    if request.login.is_none() {
        return token_required(state);
    }
    if access < Access::Write {
        return error(state, 403, "user should have a permission to write to a repo");
    }
    let body = request.json();
    let name = body["new_branch_name"].as_str().unwrap_or_default().to_owned();
    let refused = if name.is_empty() {
        Some("Required")
    } else if name.len() > 100 {
        Some("MaxSize")
    } else if !git_ref_name(&name) {
        Some("GitRefName")
    } else {
        None
    };
    if let Some(rule) = refused {
        return error(state, 422, &format!("[BranchName]: {rule}"));
    }
    let repo = &state.repos[key];
    let text = |field: &str| body[field].as_str().filter(|v| !v.is_empty()).map(str::to_owned);
    let start = match (text("old_ref_name"), text("old_branch_name")) {
        (Some(reference), _) => match repo.git.resolve(&reference) {
            Some(sha) => sha,
            None => {
                let message = format!("object does not exist [id: {reference}, rel_path: ]");
                return error(state, 500, &message);
            }
        },
        (None, Some(old)) => match repo.git.branch(&old) {
            Some(sha) => sha,
            None => return error(state, 404, "The old branch does not exist"),
        },
        (None, None) => match repo.git.branch(&repo.default_branch) {
            Some(sha) => sha,
            None => return error(state, 404, "Git Repository is empty."),
        },
    };
    if repo.git.branch(&name).is_some() {
        return error(state, 409, "The branch already exists.");
    }
    if let Err(e) = repo.git.set_branch(&name, &start) {
        return error(state, 500, &e);
    }
    let mut reply = branch(state, key, &name);
    reply.status = 201;
    reply
}

/// Gitea's `GitRefName` binding, as far as a branch name goes: git's
/// ref-format rules (no `..`, `@{`, `//`, control characters, spaces or
/// `~^:?*[\`; no leading `-` or `/`, no trailing `/`, `.` or `.lock`).
fn git_ref_name(name: &str) -> bool {
    !(name.starts_with(['-', '/'])
        || name.ends_with(['/', '.'])
        || name.ends_with(".lock")
        || name.contains("..")
        || name.contains("@{")
        || name.contains("//")
        || name.split('/').any(|part| part.starts_with('.'))
        || name.chars().any(|c| c.is_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\')))
}

/// `GET /git/commits/{sha}` (a sha or any ref): Gitea's `ToCommit`, with
/// `files` (added, removed, modified against the first parent) and `stats`
/// unless `files=false` / `stat=false`; authors are users when their email
/// is a user's.
fn single_commit(state: &mut State, request: &Request<'_>, key: &str) -> Reply {
    let repo = &state.repos[key];
    let Some(info) = repo.git.resolve(request.param("sha")).and_then(|sha| repo.git.commit_info(&sha)) else {
        return not_found(state);
    };
    let flag = |name: &str| request.call.query_param(name) != Some("false");
    let changed = repo.git.changed_by(&info.sha);
    let (html, api) = wire::repo_urls(state, repo);
    let meta =
        |sha: &str| json!({"url": format!("{api}/git/commits/{sha}"), "sha": sha, "created": info.committer_date});
    let mut files = Vec::new();
    for status in ["added", "removed", "modified"] {
        let git_status = if status == "removed" { "deleted" } else { status };
        files.extend(
            changed.iter().filter(|c| c.status == git_status).map(|c| json!({"filename": c.path, "status": status})),
        );
    }
    let additions: u64 = changed.iter().map(|c| c.additions).sum();
    let deletions: u64 = changed.iter().map(|c| c.deletions).sum();
    let mut commit = json!({
        "url": format!("{api}/git/commits/{}", info.sha),
        "sha": info.sha,
        "created": info.committer_date,
        "html_url": format!("{html}/commit/{}", info.sha),
        "commit": {
            "url": format!("{api}/git/commits/{}", info.sha),
            "author": {"name": info.author_name, "email": info.author_email, "date": info.author_date},
            "committer": {"name": info.committer_name, "email": info.committer_email, "date": info.committer_date},
            "message": info.message,
            "tree": {"url": format!("{api}/git/trees/{}", info.tree), "sha": info.tree, "created": info.committer_date},
        },
        "parents": info.parents.iter().map(|p| meta(p)).collect::<Vec<_>>(),
    });
    if flag("verification") {
        commit["commit"]["verification"] = json!({"verified": false, "reason": "gpg.error.not_signed_commit", "signature": "", "signer": null, "payload": ""});
    }
    if flag("files") {
        commit["files"] = Value::Array(files);
    }
    if flag("stat") {
        commit["stats"] = json!({"total": additions + deletions, "additions": additions, "deletions": deletions});
    }
    let by_email = |email: &str| {
        state.users.values().find(|u| format!("{}@noreply.localhost", u.login.to_ascii_lowercase()) == email).cloned()
    };
    let (author, committer) = (by_email(&info.author_email), by_email(&info.committer_email));
    commit["author"] = author.map_or(Value::Null, |u| wire::user(state, &u));
    commit["committer"] = committer.map_or(Value::Null, |u| wire::user(state, &u));
    Reply::json(200, &commit)
}

/// `{ref}.tar.gz` / `{ref}.zip`: `git archive` with Gitea's prefix, the
/// repository's lower-case name (`PrefixArchiveFiles`, on by default).
fn archive(state: &State, key: &str, archive: &str) -> Reply {
    let repo = &state.repos[key];
    let (reference, format, extension) = if let Some(r) = archive.strip_suffix(".tar.gz") {
        (r, "tar.gz", "tar.gz")
    } else if let Some(r) = archive.strip_suffix(".zip") {
        (r, "zip", "zip")
    } else {
        return error(state, 404, &format!("Unknown format: {archive}"));
    };
    let Some(sha) = repo.git.resolve(reference) else { return not_found(state) };
    match repo.git.archive(&sha, format, &repo.name.to_ascii_lowercase()) {
        Ok(bytes) => Reply {
            status: 200,
            headers: vec![
                ("content-type".into(), "application/octet-stream".into()),
                (
                    "content-disposition".into(),
                    format!("attachment; filename*=UTF-8''{}-{}.{extension}", repo.name, reference.replace('/', "-")),
                ),
            ],
            body: bytes,
            delay_ms: 0,
        },
        Err(e) => error(state, 500, &e),
    }
}

/// `POST /contents`: Gitea's `ChangeFiles`, one real commit on `new_branch`
/// (made from `branch`) or on `branch`; errors as
/// `handleCreateOrUpdateFileError` maps them.
fn change_files(state: &mut State, request: &Request<'_>, key: &str, access: Access) -> Reply {
    let Some(login) = request.login.clone() else { return token_required(state) };
    if access < Access::Write {
        return error(state, 403, "user should have a permission to write to this branch");
    }
    let body = request.json();
    let repo = &state.repos[key];
    let branch = body["branch"].as_str().filter(|b| !b.is_empty()).unwrap_or(&repo.default_branch).to_owned();
    let Some(parent) = repo.git.branch(&branch) else {
        return error(state, 404, &format!("branch does not exist [name: {branch}]"));
    };
    let new_branch = body["new_branch"].as_str().filter(|b| !b.is_empty()).map(str::to_owned);
    // As Gitea's `ChangeRepoFiles`: a `new_branch` equal to `branch` is a
    // commit on that branch, not a new one.
    if let Some(new) = new_branch.as_ref().filter(|new| **new != branch)
        && repo.git.branch(new).is_some()
    {
        return error(state, 422, &format!("branch already exists [name: {new}]"));
    }
    let mut changes = Vec::new();
    let mut touched = Vec::new();
    for file in body["files"].as_array().into_iter().flatten() {
        let operation = file["operation"].as_str().unwrap_or_default();
        let path = file["path"].as_str().unwrap_or_default().trim_matches('/').to_owned();
        let from = file["from_path"].as_str().filter(|p| !p.is_empty()).map(|p| p.trim_matches('/').to_owned());
        let existing_path = from.clone().unwrap_or_else(|| path.clone());
        let existing = repo.git.blob(&parent, &existing_path);
        match operation {
            "create" if repo.git.entry(&parent, &path).is_some() => {
                return error(state, 422, &format!("repository file already exists [path: {path}]"));
            }
            "update" | "delete" => {
                let Some((current, _)) = &existing else {
                    return error(state, 404, &format!("repository file does not exist [path: {existing_path}]"));
                };
                let given = file["sha"].as_str().unwrap_or_default();
                if given.is_empty() {
                    return error(state, 422, "a SHA or commit ID must be proved when updating a file");
                }
                if given != current {
                    return error(state, 422, &format!("sha does not match [given: {given}, expected: {current}]"));
                }
            }
            _ => {}
        }
        if operation == "delete" {
            changes.push(Change::Delete(existing_path));
            continue;
        }
        let content = match STANDARD.decode(file["content"].as_str().unwrap_or_default()) {
            Ok(content) => content,
            Err(e) => return error(state, 422, &format!("illegal base64 data for {path}: {e}")),
        };
        if let Some(from) = from.filter(|f| *f != path) {
            changes.push(Change::Delete(from));
        }
        changes.push(Change::Put(path.clone(), content));
        touched.push(path);
    }
    let message = body["message"].as_str().filter(|m| !m.is_empty()).unwrap_or("Update files").to_owned();
    let author_name = body["author"]["name"].as_str().filter(|n| !n.is_empty()).unwrap_or(&login).to_owned();
    let author_email = body["author"]["email"]
        .as_str()
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("{}@noreply.localhost", login.to_ascii_lowercase()), str::to_owned);
    let now = now_rfc3339();
    let sha = match repo.git.commit(Some(&parent), &changes, &message, (&author_name, &author_email), &now) {
        Ok(sha) => sha,
        Err(e) => return error(state, 500, &e),
    };
    let target = new_branch.unwrap_or(branch);
    if let Err(e) = repo.git.set_branch(&target, &sha).and_then(|()| state.pushed(key, &target)) {
        return error(state, 500, &e);
    }
    let files: Vec<Value> = touched
        .iter()
        .map(|path| match repo.git.entry(&sha, path) {
            Some(entry) => {
                let bytes = repo.git.blob(&sha, path).map(|(_, b)| b);
                wire::contents(state, repo, &entry, &target, &sha, bytes.as_deref())
            }
            None => Value::Null,
        })
        .collect();
    let info = repo.git.commit_info(&sha);
    let (html, api) = wire::repo_urls(state, repo);
    let person = |name: &str, email: &str| json!({"name": name, "email": email, "date": now});
    Reply::json(
        201,
        &json!({
            "files": files,
            "commit": {
                "url": format!("{api}/git/commits/{sha}"),
                "sha": sha,
                "created": now,
                "html_url": format!("{html}/commit/{sha}"),
                "author": person(&author_name, &author_email),
                "committer": person(&author_name, &author_email),
                "parents": [{"url": format!("{api}/git/commits/{parent}"), "sha": parent, "created": now}],
                "message": info.map(|i| i.message).unwrap_or(message),
                "tree": {"url": format!("{api}/git/trees/{sha}"), "sha": sha, "created": now},
            },
            "verification": {"verified": false, "reason": "gpg.error.not_signed_commit", "signature": "", "signer": null, "payload": ""},
        }),
    )
}

fn create_status(state: &mut State, request: &Request<'_>, key: &str, access: Access) -> Reply {
    let Some(login) = request.login.clone() else { return token_required(state) };
    if access < Access::Write {
        return error(state, 403, "user should have a permission to write to a repo");
    }
    let sha = request.param("sha").to_owned();
    let Some(commit) = state.repos[key].git.resolve(&sha) else {
        return error(state, 500, &format!("GetCommit[{sha}]: object does not exist [id: {sha}, rel_path: ]"));
    };
    let body = request.json();
    let text = |name: &str| body[name].as_str().unwrap_or_default().to_owned();
    let status = Status {
        id: state.fresh_id(),
        repo: key.to_owned(),
        sha: commit,
        state: text("state"),
        context: text("context"),
        description: text("description"),
        target_url: text("target_url"),
        creator: login,
        created: now_rfc3339(),
    };
    state.statuses.push(status.clone());
    let json = wire::status(state, &status);
    Reply::json(201, &json)
}

/// Newest first (Gitea's default order), filtered by `state`.
fn list_statuses(state: &mut State, request: &Request<'_>, key: &str, reference: &str) -> Reply {
    let Some(sha) = state.repos[key].git.resolve(reference) else { return not_found(state) };
    let wanted = request.call.query_param("state").map(str::to_owned);
    let matching: Vec<Status> = state
        .statuses
        .iter()
        .rev()
        .filter(|s| s.repo == key && s.sha == sha && wanted.as_ref().is_none_or(|w| *w == s.state))
        .cloned()
        .collect();
    let items = matching.iter().map(|s| wire::status(state, s)).collect();
    paginate(state, request, items)
}
