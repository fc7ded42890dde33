//! Repository routes: raw files, branches, archives, commits (read, diff,
//! and the commits API's multi-file writes) and commit statuses.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::request::{Request, paginate};
use super::state::{DEVELOPER, MAINTAINER, Project, State, Status};
use super::wire::{self, bad_request, forbidden, message, not_found};
use crate::gitea::git::{BareRepo, Change};
use crate::server::Reply;
use crate::time::now_rfc3339;

pub(crate) fn route(state: &mut State, operation: &str, request: &Request<'_>) -> Reply {
    match operation {
        "getApiV4ProjectsIdRepositoryFilesFilePathRaw" => raw(state, request),
        "getApiV4ProjectsIdRepositoryFilesFilePath" => file(state, request, true),
        "headApiV4ProjectsIdRepositoryFilesFilePath" => file(state, request, false),
        "getApiV4ProjectsIdRepositoryBranchesBranch" => branch(state, request),
        "getApiV4ProjectsIdRepositoryArchive" => archive(state, request),
        "postApiV4ProjectsIdStatusesSha" => create_status(state, request),
        "postApiV4ProjectsIdRepositoryCommits" => create_commit(state, request),
        "getApiV4ProjectsIdRepositoryCommitsSha" => commit(state, request),
        "getApiV4ProjectsIdRepositoryCommitsShaDiff" => commit_diff(state, request),
        _ => message(501, "not served"),
    }
}

/// A file at a ref: `(commit, path, blob id, bytes)`, or GitLab's 404s
/// (`assign_file_vars!` in lib/api/files.rb: `Commit Not Found`, then
/// `File Not Found`).
fn find_file<'a>(
    state: &'a State,
    request: &Request<'_>,
    reference: &str,
) -> Result<(&'a Project, String, String, String, Vec<u8>), Reply> {
    let project = &state.projects[request.project()];
    let sha = project.git.resolve(reference).ok_or_else(|| not_found("Commit"))?;
    let path = request.param("file_path").trim_matches('/').to_owned();
    let (blob, bytes) = project.git.blob(&sha, &path).ok_or_else(|| not_found("File"))?;
    Ok((project, sha, path, blob, bytes))
}

/// The file's metadata (`blob_data` in lib/api/files.rb), which GitLab
/// sends as JSON fields and as `X-Gitlab-*` headers (`set_http_headers`).
fn blob_data(
    project: &Project,
    reference: &str,
    sha: &str,
    path: &str,
    blob: &str,
    bytes: &[u8],
) -> Vec<(&'static str, Value)> {
    use sha2::Digest as _;
    let last = project.git.last_commit(sha, path).unwrap_or_else(|| sha.to_owned());
    vec![
        ("file_name", Value::from(path.rsplit('/').next().unwrap_or_default())),
        ("file_path", Value::from(path)),
        ("size", Value::from(bytes.len())),
        ("encoding", Value::from("base64")),
        ("content_sha256", Value::from(hex::encode(sha2::Sha256::digest(bytes)))),
        ("ref", Value::from(reference)),
        ("blob_id", Value::from(blob)),
        ("commit_id", Value::from(sha)),
        ("last_commit_id", Value::from(last)),
        ("execute_filemode", Value::Bool(false)),
    ]
}

fn with_blob_headers(mut reply: Reply, data: &[(&'static str, Value)]) -> Reply {
    for (name, value) in data {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        reply = reply.with_header(&format!("x-gitlab-{}", name.replace('_', "-")), &text);
    }
    reply
}

/// `GET /repository/files/:file_path/raw`: the bytes (`ref` defaults to
/// the default branch), with the `X-Gitlab-*` metadata headers.
fn raw(state: &State, request: &Request<'_>) -> Reply {
    let default = &state.projects[request.project()].default_branch;
    let reference = request.query("ref").filter(|r| !r.is_empty()).unwrap_or(default).to_owned();
    let (project, sha, path, blob, bytes) = match find_file(state, request, &reference) {
        Ok(found) => found,
        Err(reply) => return reply,
    };
    let data = blob_data(project, &reference, &sha, &path, &blob, &bytes);
    let content_type =
        if std::str::from_utf8(&bytes).is_ok() { "text/plain; charset=utf-8" } else { "application/octet-stream" };
    let reply =
        Reply { status: 200, headers: vec![("content-type".into(), content_type.into())], body: bytes, delay_ms: 0 };
    with_blob_headers(reply, &data)
}

/// `GET /repository/files/:file_path?ref=` (lib/api/files.rb): the
/// metadata and base64 `content` as JSON, the metadata as `X-Gitlab-*`
/// headers too; `HEAD` answers the headers alone.
fn file(state: &State, request: &Request<'_>, with_body: bool) -> Reply {
    let reference = request.query("ref").unwrap_or_default().to_owned();
    let (project, sha, path, blob, bytes) = match find_file(state, request, &reference) {
        Ok(found) => found,
        Err(reply) => return reply,
    };
    let data = blob_data(project, &reference, &sha, &path, &blob, &bytes);
    let reply = if with_body {
        let mut body: serde_json::Map<String, Value> = data.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
        body.insert("content".into(), Value::from(STANDARD.encode(&bytes)));
        Reply::json(200, &Value::Object(body))
    } else {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Vec::new(),
            delay_ms: 0,
        }
    };
    with_blob_headers(reply, &data)
}

/// `GET /repository/branches/:branch` (lib/api/branches.rb): 404
/// `Branch Not Found`.
fn branch(state: &State, request: &Request<'_>) -> Reply {
    let project = &state.projects[request.project()];
    let name = request.param("branch");
    let Some(info) = project.git.branch(name).and_then(|sha| project.git.commit_info(&sha)) else {
        return not_found("Branch");
    };
    Reply::json(200, &wire::branch(state, project, name, &info, request.level))
}

/// `GET /repository/archive[.format]?sha=` (lib/api/repositories.rb):
/// `git archive` of the commit with GitLab's top directory,
/// `{project path}-{sha param}-{commit sha}` (`Repository#archive_metadata`:
/// the ref as asked, `/` made `-`, then the commit).
fn archive(state: &State, request: &Request<'_>) -> Reply {
    let project = &state.projects[request.project()];
    let asked = request.query("sha").filter(|s| !s.is_empty()).unwrap_or(&project.default_branch).to_owned();
    let format = request.query("format").unwrap_or("tar.gz");
    let (git_format, extension) = match format {
        "tar.gz" | "tgz" => ("tar.gz", "tar.gz"),
        "tar" => ("tar", "tar"),
        "zip" => ("zip", "zip"),
        other => return message(404, &format!("404 the fake GitLab serves tar.gz, tar and zip archives, not {other}")),
    };
    let Some(sha) = project.git.resolve(&asked) else { return not_found("File") };
    let prefix = format!("{}-{}-{}", project.path, asked.replace('/', "-"), sha);
    match project.git.archive(&sha, git_format, &prefix) {
        Ok(bytes) => Reply {
            status: 200,
            headers: vec![
                ("content-type".into(), "application/octet-stream".into()),
                ("content-disposition".into(), format!("attachment; filename=\"{prefix}.{extension}\"")),
            ],
            body: bytes,
            delay_ms: 0,
        },
        Err(e) => message(500, &e),
    }
}

/// `GET /repository/commits/:sha` (lib/api/commits.rb): `CommitDetail`,
/// `stats` unless `stats=false`; 404 `Commit Not Found`.
fn commit(state: &State, request: &Request<'_>) -> Reply {
    let project = &state.projects[request.project()];
    let Some(info) = project.git.resolve(request.param("sha")).and_then(|sha| project.git.commit_info(&sha)) else {
        return not_found("Commit");
    };
    let stats = (request.query("stats") != Some("false")).then(|| stats(&project.git, &info.sha));
    Reply::json(200, &wire::commit_detail(state, project, &info, stats))
}

fn stats(git: &BareRepo, sha: &str) -> (u64, u64) {
    let changed = git.changed_by(sha);
    (changed.iter().map(|c| c.additions).sum(), changed.iter().map(|c| c.deletions).sum())
}

/// `GET /repository/commits/:sha/diff`: the commit's changes against its
/// first parent as `Entities::Diff`, paginated.
fn commit_diff(state: &State, request: &Request<'_>) -> Reply {
    let project = &state.projects[request.project()];
    let Some(info) = project.git.resolve(request.param("sha")).and_then(|sha| project.git.commit_info(&sha)) else {
        return not_found("Commit");
    };
    /// git's empty tree.
    const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
    let parent = info.parents.first().map_or(EMPTY_TREE, String::as_str);
    let diffs = match project.git.diff(parent, &info.sha) {
        Ok(text) => parse_diff(&String::from_utf8_lossy(&text)),
        Err(e) => return message(500, &e),
    };
    paginate(state, request, diffs)
}

/// Splits `git diff --no-renames` output into GitLab's `Entities::Diff`:
/// `diff` is the file's hunks (from the first `@@`), modes are git's
/// (`0` for the absent side).
pub(crate) fn parse_diff(text: &str) -> Vec<Value> {
    let mut files = Vec::new();
    for section in text.split("\ndiff --git ").filter(|s| !s.trim().is_empty()) {
        let section = section.strip_prefix("diff --git ").unwrap_or(section);
        let mut old_path = None;
        let mut new_path = None;
        let (mut a_mode, mut b_mode) = (String::new(), String::new());
        let (mut new_file, mut deleted_file) = (false, false);
        let mut hunks = String::new();
        let mut in_hunks = false;
        for line in section.split_inclusive('\n') {
            if in_hunks {
                hunks.push_str(line);
                continue;
            }
            let bare = line.trim_end_matches('\n');
            if bare.starts_with("@@") {
                in_hunks = true;
                hunks.push_str(line);
            } else if let Some(mode) = bare.strip_prefix("new file mode ") {
                new_file = true;
                a_mode = "0".to_owned();
                b_mode = mode.to_owned();
            } else if let Some(mode) = bare.strip_prefix("deleted file mode ") {
                deleted_file = true;
                a_mode = mode.to_owned();
                b_mode = "0".to_owned();
            } else if let Some(mode) = bare.strip_prefix("old mode ") {
                a_mode = mode.to_owned();
            } else if let Some(mode) = bare.strip_prefix("new mode ") {
                b_mode = mode.to_owned();
            } else if let Some(index) = bare.strip_prefix("index ") {
                if let Some((_, mode)) = index.split_once(' ') {
                    a_mode = mode.to_owned();
                    b_mode = mode.to_owned();
                }
            } else if let Some(path) = bare.strip_prefix("--- ") {
                old_path = path.strip_prefix("a/").map(str::to_owned);
            } else if let Some(path) = bare.strip_prefix("+++ ") {
                new_path = path.strip_prefix("b/").map(str::to_owned);
            }
        }
        let header = section.lines().next().unwrap_or_default();
        let from_header = header.split_once(" b/").map(|(a, b)| (a.trim_start_matches("a/").to_owned(), b.to_owned()));
        let (header_old, header_new) = from_header.unwrap_or_default();
        let new_path = new_path.or_else(|| old_path.clone()).unwrap_or(header_new);
        let old_path = old_path.unwrap_or_else(|| if header_old.is_empty() { new_path.clone() } else { header_old });
        files.push(json!({
            "diff": hunks,
            "collapsed": false,
            "too_large": false,
            "new_path": new_path,
            "old_path": old_path,
            "a_mode": a_mode,
            "b_mode": b_mode,
            "new_file": new_file,
            "renamed_file": false,
            "deleted_file": deleted_file,
            "generated_file": false,
        }));
    }
    files
}

/// `POST /statuses/:sha` (lib/api/commit_statuses.rb): developers and up
/// (`authorize! :create_commit_status`, else 403); the commit must exist
/// (404 `Commit Not Found`); `name` is `name`, else `context`, else
/// `default`; `ref` defaults to the default branch here (GitLab takes the
/// first branch containing the commit). Posting the same `name` and `ref`
/// for a sha again updates that status in place, as GitLab moves the one
/// external job of the pipeline; GitLab's state-machine refusals
/// (a finished job cannot go back to `pending`) are not modelled.
fn create_status(state: &mut State, request: &Request<'_>) -> Reply {
    if request.level < DEVELOPER {
        return forbidden(None);
    }
    let index = request.project();
    let Some(sha) = state.projects[index].git.resolve(request.param("sha")) else { return not_found("Commit") };
    let body = request.json();
    let text = |name: &str| body[name].as_str().map(str::to_owned);
    let name = text("name").or_else(|| text("context")).unwrap_or_else(|| "default".to_owned());
    let git_ref = text("ref").unwrap_or_else(|| state.projects[index].default_branch.clone());
    let project = state.projects[index].id;
    let existing = state
        .statuses
        .iter()
        .position(|s| s.project == project && s.sha == sha && s.name == name && s.git_ref.as_deref() == Some(&git_ref));
    let status = match existing {
        Some(at) => {
            let status = &mut state.statuses[at];
            status.state = text("state").unwrap_or_default();
            status.description = text("description").or(status.description.take());
            status.target_url = text("target_url").or(status.target_url.take());
            status.clone()
        }
        None => {
            let status = Status {
                id: state.fresh_id(),
                project,
                sha,
                git_ref: Some(git_ref),
                state: text("state").unwrap_or_default(),
                name,
                description: text("description"),
                target_url: text("target_url"),
                author: request.username.clone(),
                created: now_rfc3339(),
            };
            state.statuses.push(status.clone());
            status
        }
    };
    let json = wire::status(state, &status);
    Reply::json(201, &json)
}

/// A commits-API failure: its message, and whether it is a malformed
/// request (a violation) rather than a refusal of a well-formed one.
struct Refusal {
    reply: Reply,
    violation: Option<String>,
}

/// `validate_commits_attrs!` (lib/api/commits.rb): `bad_request!` with
/// GitLab's messages for what the JSON schema cannot say.
fn validate_attrs(body: &Value) -> Result<(), String> {
    let blank = |v: &Value| v.as_str().is_none_or(|s| s.trim().is_empty());
    if blank(&body["branch"]) {
        return Err("branch is required".into());
    }
    if blank(&body["commit_message"]) {
        return Err("commit_message is required".into());
    }
    let empty = body.get("actions").is_none() || body["actions"].as_array().is_some_and(Vec::is_empty);
    if empty && body["allow_empty"] != Value::Bool(true) && body["allow_empty"] != "true" {
        return Err("Provide at least one action, or set allow_empty to true".into());
    }
    if !empty && !body["actions"].is_array() {
        return Err("actions must be an array".into());
    }
    if body.get("start_sha").is_some() && body.get("start_branch").is_some() {
        return Err("start_branch, start_sha are mutually exclusive".into());
    }
    for (i, action) in body["actions"].as_array().into_iter().flatten().enumerate() {
        if blank(&action["action"]) {
            return Err(format!("actions[{i}][action] is required"));
        }
        if blank(&action["file_path"]) {
            return Err(format!("actions[{i}][file_path] is required"));
        }
        let kind = action["action"].as_str().unwrap_or_default();
        if !["create", "update", "move", "delete", "chmod"].contains(&kind) {
            return Err(format!("actions[{i}][action] must be one of: create, update, move, delete, chmod"));
        }
        if let Some(encoding) = action.get("encoding")
            && !(encoding == "text" || encoding == "base64")
        {
            return Err(format!("actions[{i}][encoding] must be text or base64"));
        }
        match kind {
            "update" if action.get("content").is_none() => {
                return Err(format!("actions[{i}][content] is required for update action"));
            }
            "move" if blank(&action["previous_path"]) => {
                return Err(format!("actions[{i}][previous_path] is required for move action"));
            }
            "chmod" if action.get("execute_filemode").is_none() => {
                return Err(format!("actions[{i}][execute_filemode] is required for chmod action"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A branch name Git and GitLab would take (`Gitlab::GitRefValidator`, in
/// short: `git check-ref-format` rules).
fn valid_branch_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.starts_with('/')
        && !name.ends_with('/')
        && !name.ends_with('.')
        && !name.ends_with(".lock")
        && !name.contains("..")
        && !name.contains("//")
        && !name.contains("@{")
        && name != "HEAD"
        && !name.chars().any(|c| c.is_ascii_control() || " ~^:?*[\\".contains(c))
}

/// `POST /repository/commits` (lib/api/commits.rb, then
/// `Files::MultiService` < `Commits::CreateService`, then Gitaly's
/// `UserCommitFiles`): one real commit of the actions on `branch`, started
/// from `start_branch`/`start_sha` when given (the API defaults
/// `start_branch` to `branch`). Refusals, in GitLab's order:
///
/// - not allowed to push (developers to other branches, maintainers and up
///   to the default, protected, branch): 403 `You are not allowed to push
///   into this branch`;
/// - the attributes (`validate_commits_attrs!`): 400 `400 Bad request - …`;
/// - `Commits::CreateService#validate!`: `Invalid start_sha`, `Cannot find
///   start_sha`, `You can only create or edit files when you are on a
///   branch` (the start branch does not exist), `A branch called 'b' already
///   exists. Switch to that branch in order to make changes` (writing to an
///   existing branch while starting elsewhere, without `force`), a bad new
///   branch name: 400 `{"message": …}`;
/// - the actions (Gitaly's index errors): `A file with this name already
///   exists` (create, move onto a file), `A file with this name doesn't
///   exist` (update, delete, move from), `A directory with this name already
///   exists`, and `Files::MultiService`'s `The file has changed since you
///   started editing it: path` for a stale `last_commit_id`: 400.
///
/// Answers 201 with `CommitDetail` (`stats` unless `stats: false`).
fn create_commit(state: &mut State, request: &Request<'_>) -> Reply {
    let result = commit_actions(state, request);
    match result {
        Ok(reply) => reply,
        Err(Refusal { reply, violation }) => {
            if let Some(violation) = violation {
                state.violations.push(format!("postApiV4ProjectsIdRepositoryCommits: {violation}"));
            }
            reply
        }
    }
}

fn commit_actions(state: &mut State, request: &Request<'_>) -> Result<Reply, Refusal> {
    let refuse = |message_text: String| Refusal { reply: message(400, &message_text), violation: None };
    let body = request.json();
    let index = request.project();
    let branch = body["branch"].as_str().unwrap_or_default().to_owned();
    let project = &state.projects[index];
    let needed = if branch == project.default_branch { MAINTAINER } else { DEVELOPER };
    if request.level < needed {
        return Err(Refusal {
            reply: forbidden(Some("You are not allowed to push into this branch")),
            violation: None,
        });
    }
    if let Err(text) = validate_attrs(&body) {
        return Err(Refusal { reply: bad_request(&text), violation: Some(text) });
    }
    if let Some(start_project) = body.get("start_project") {
        let named = start_project.as_u64().map(|n| n.to_string()).or_else(|| start_project.as_str().map(str::to_owned));
        if named.and_then(|n| state.project_index(&n)) != Some(index) {
            let text = "the fake GitLab serves start_project only as the project itself (no forks)".to_owned();
            return Err(Refusal { reply: bad_request(&text), violation: Some(text) });
        }
    }
    let start_sha = body["start_sha"].as_str().map(str::to_owned);
    let start_branch =
        body["start_branch"].as_str().map(str::to_owned).or_else(|| start_sha.is_none().then(|| branch.clone()));
    let force = body["force"] == Value::Bool(true) || body["force"] == "true";
    let git = &project.git;
    let parent = if let Some(sha) = &start_sha {
        let full = sha.len() == 40 || sha.len() == 64;
        if !(full && sha.bytes().all(|b| b.is_ascii_hexdigit())) {
            return Err(refuse(format!("Invalid start_sha '{sha}'")));
        }
        match git.resolve(sha) {
            Some(found) => found,
            None => return Err(refuse(format!("Cannot find start_sha '{sha}'"))),
        }
    } else {
        let start = start_branch.clone().unwrap_or_default();
        match git.branch(&start) {
            Some(found) => found,
            None => return Err(refuse("You can only create or edit files when you are on a branch".to_owned())),
        }
    };
    let different_branch = start_branch.as_deref() != Some(branch.as_str()) || start_sha.is_some();
    if different_branch && git.branch(&branch).is_some() && !force {
        return Err(refuse(format!(
            "A branch called '{branch}' already exists. Switch to that branch in order to make changes"
        )));
    }
    if different_branch && !valid_branch_name(&branch) {
        return Err(refuse(format!(
            "Something went wrong when we tried to create '{branch}' for you: Branch name is invalid"
        )));
    }
    let changes = changes(git, &parent, &body)?;
    let user = state.ensure_user(&request.username);
    let default_email = format!("{}@example.com", user.username.to_ascii_lowercase());
    let author_name = body["author_name"].as_str().unwrap_or(&user.username).to_owned();
    let author_email = body["author_email"].as_str().unwrap_or(&default_email).to_owned();
    let message_text = body["commit_message"].as_str().unwrap_or_default().to_owned();
    let project = &state.projects[index];
    let sha = project
        .git
        .commit(Some(&parent), &changes, &message_text, (&author_name, &author_email), &now_rfc3339())
        .map_err(|e| Refusal { reply: message(500, &e), violation: None })?;
    project.git.set_branch(&branch, &sha).map_err(|e| Refusal { reply: message(500, &e), violation: None })?;
    let info =
        project.git.commit_info(&sha).ok_or_else(|| Refusal { reply: message(500, "no commit"), violation: None })?;
    let stats = (body["stats"] != Value::Bool(false)).then(|| stats(&project.git, &sha));
    Ok(Reply::json(201, &wire::commit_detail(state, project, &info, stats)))
}

/// The actions as changes on `parent`, refused as Gitaly refuses them.
fn changes(git: &BareRepo, parent: &str, body: &Value) -> Result<Vec<Change>, Refusal> {
    let refuse = |text: &str| Refusal { reply: message(400, text), violation: None };
    let mut changes = Vec::new();
    for action in body["actions"].as_array().into_iter().flatten() {
        let kind = action["action"].as_str().unwrap_or_default();
        let path = action["file_path"].as_str().unwrap_or_default().trim_start_matches('/').to_owned();
        if path.split('/').any(|part| part == "..") {
            return Err(refuse("Path cannot include directory traversal"));
        }
        let entry = git.entry(parent, &path);
        let is_file = entry.as_ref().is_some_and(|e| e.kind == "blob");
        let shown = path.clone();
        let content = || -> Result<Vec<u8>, Refusal> {
            let text = action["content"].as_str().unwrap_or_default();
            if action["encoding"] == "base64" {
                STANDARD.decode(text.trim()).map_err(|e| refuse(&format!("invalid base64 content for {shown}: {e}")))
            } else {
                Ok(text.as_bytes().to_vec())
            }
        };
        if let Some(last) = action["last_commit_id"].as_str()
            && ["update", "move", "delete"].contains(&kind)
        {
            let current = git.last_commit(parent, action["previous_path"].as_str().unwrap_or(&path));
            if current.as_deref() != Some(last) {
                return Err(refuse(&format!("The file has changed since you started editing it: {path}")));
            }
        }
        match kind {
            "create" => {
                if entry.as_ref().is_some_and(|e| e.kind == "tree") {
                    return Err(refuse("A directory with this name already exists"));
                }
                if is_file {
                    return Err(refuse("A file with this name already exists"));
                }
                changes.push(Change::Put(path, content()?));
            }
            "update" => {
                if !is_file {
                    return Err(refuse("A file with this name doesn't exist"));
                }
                changes.push(Change::Put(path, content()?));
            }
            "delete" => {
                if !is_file {
                    return Err(refuse("A file with this name doesn't exist"));
                }
                changes.push(Change::Delete(path));
            }
            "move" => {
                let from = action["previous_path"].as_str().unwrap_or_default().trim_start_matches('/').to_owned();
                let Some((_, old)) = git.blob(parent, &from) else {
                    return Err(refuse("A file with this name doesn't exist"));
                };
                if is_file {
                    return Err(refuse("A file with this name already exists"));
                }
                let bytes = if action.get("content").is_some() { content()? } else { old };
                changes.push(Change::Delete(from));
                changes.push(Change::Put(path, bytes));
            }
            _ => {
                let text = "the fake GitLab does not model chmod (it writes every file 100644)".to_owned();
                return Err(Refusal { reply: bad_request(&text), violation: Some(text) });
            }
        }
    }
    Ok(changes)
}

/// The project's statuses for `sha` (oldest first), for state inspection.
pub(crate) fn statuses_of(state: &mut State, id: u64, sha: &str) -> Vec<Value> {
    let statuses: Vec<Status> = state.statuses.iter().filter(|s| s.project == id && s.sha == sha).cloned().collect();
    statuses.iter().map(|s| wire::status(state, s)).collect()
}
