//! Request dispatch: faults, authentication, then the repository, commit,
//! ref and contents routes (git data in `gitdata.rs`, collaboration in
//! `collab.rs`).

use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};

use super::auth::credential;
use super::collab;
use super::description;
use super::gitdata::{create_blob, create_commit, create_tree, get_blob, get_git_commit, get_tree, json_body};
use super::identity;
use super::state::{State, repo_key};
use super::store::FlatTree;
use super::wire::{RepoUrls, error, not_found};
use crate::conformance::Violation;
use crate::record::{RecordedCall, percent_decode};
use crate::server::Reply;
use crate::time::now_secs;

/// Answers one request.
pub(crate) fn handle(state: &Mutex<State>, call: &RecordedCall) -> Reply {
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    state.requests_served += 1;
    let served = state.requests_served;
    let reply = route(&mut state, call);
    standard_headers(reply, served)
}

fn standard_headers(reply: Reply, served: u64) -> Reply {
    let reset = (now_secs() + 3600).to_string();
    let defaults = [
        ("x-github-api-version-selected", "2022-11-28".to_owned()),
        ("x-github-media-type", "github.v3; format=json".to_owned()),
        ("x-github-request-id", format!("FAKE:{served:08X}")),
        ("x-ratelimit-limit", "5000".to_owned()),
        ("x-ratelimit-remaining", 5000u64.saturating_sub(served).to_string()),
        ("x-ratelimit-reset", reset),
        ("x-ratelimit-used", served.to_string()),
        ("x-ratelimit-resource", "core".to_owned()),
    ];
    let mut reply = reply;
    for (name, value) in defaults {
        if !reply.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
            reply.headers.push((name.to_owned(), value));
        }
    }
    reply
}

fn route(state: &mut State, call: &RecordedCall) -> Reply {
    let decoded = call.decoded_path();
    if let Some(fault) = state.take_fault(&call.method, &decoded) {
        let mut reply = Reply {
            status: fault.status,
            headers: vec![("content-type".into(), "application/json; charset=utf-8".into())],
            body: fault.body.into_bytes(),
            delay_ms: 0,
        };
        for (name, value) in fault.headers {
            reply = reply.with_header(&name, &value);
        }
        return reply;
    }
    let segments: Vec<String> =
        call.path.split('/').filter(|s| !s.is_empty()).map(|s| percent_decode(s, false)).collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    if !description::exempt(&call.method, &segments)
        && let Some(refused) = conform(state, call)
    {
        return refused;
    }
    if let Some(reply) = super::oauth::route(state, call, &segments) {
        return reply;
    }
    if let Some(reply) = super::archive::route(state, call, &segments, authenticate) {
        return reply;
    }
    let method = call.method.as_str();
    match segments.as_slice() {
        ["user"] if method == "GET" => identity::authenticated_user(state, call),
        ["app"] if method == "GET" => identity::authenticated_app(state, call),
        ["app", "installations", id, "access_tokens"] if method == "POST" => {
            collab::installation_token(state, call, id)
        }
        // The one repository route an App's JWT opens (`installation.rs`).
        ["repos", owner, name, "installation"] if method == "GET" => {
            super::installation::repository_installation(state, call, owner, name)
        }
        ["repos", owner, name, rest @ ..] => {
            if let Some(refused) = authenticate(state, call, owner, name, rest) {
                return refused;
            }
            repo_route(state, call, owner, name, rest)
        }
        _ => not_found(),
    }
}

/// `None` when the request is an operation of GitHub's REST description
/// the fake serves, with a conforming query and body. Otherwise GitHub's
/// 404 (no such operation) or 422 (`Invalid request.` naming the
/// violation), the violation recorded; 501 for an operation the fake does
/// not model (a gap in the fake, not in the request).
fn conform(state: &mut State, call: &RecordedCall) -> Option<Reply> {
    let api = description::api().unwrap_or_else(|message| panic!("{message}"));
    let query: Vec<(&str, &str)> = call.query.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let body = (!call.body.is_empty()).then_some(call.body.as_slice());
    match api.check(&call.method, &call.path, &query, body) {
        Ok(operation) if description::ROUTES.iter().any(|r| r.operation == operation.as_str()) => None,
        Ok(operation) => {
            let message = format!("the fake GitHub does not serve {operation}");
            state.unserved.push(format!("{message} ({} {})", call.method, call.path));
            Some(error(501, &message))
        }
        Err(violation) => {
            state.violations.push(violation.to_string());
            Some(match violation {
                Violation::NoOperation { .. } => not_found(),
                other => error(422, &format!("Invalid request.\n\n{other}")),
            })
        }
    }
}

/// `None` when the request may proceed. Once a token is required or an App
/// registered, a credential must be one of those tokens or an installation
/// token the fake minted: anything else, the App's JWT included (it opens
/// only `/app/...` and the repository's installation), is 401.
fn authenticate(state: &State, call: &RecordedCall, owner: &str, name: &str, rest: &[&str]) -> Option<Reply> {
    if state.tokens.is_empty() && state.app.is_none() {
        return None;
    }
    match credential(call) {
        Some(token) if state.minted_expiry.get(token).is_some_and(|&expires| expires <= now_secs()) => {
            Some(error(401, "Bad credentials"))
        }
        Some(token) if state.tokens.iter().chain(&state.minted).any(|t| t == token) => state
            .minted_grants
            .get(token)
            .and_then(|grants| super::permissions::refusal(grants, &call.method, rest))
            .map(|message| error(403, message)),
        Some(_) => Some(error(401, "Bad credentials")),
        None => {
            let public = state.repos.get(&repo_key(owner, name)).is_some_and(|r| !r.private);
            match call.method.as_str() {
                "GET" if public => None,
                // A private repository does not exist for an anonymous caller.
                "GET" => Some(not_found()),
                _ => Some(error(401, "Requires authentication")),
            }
        }
    }
}

fn repo_route(state: &mut State, call: &RecordedCall, owner: &str, name: &str, rest: &[&str]) -> Reply {
    let key = repo_key(owner, name);
    if !state.repos.contains_key(&key) {
        return not_found();
    }
    let method = call.method.as_str();
    match (method, rest) {
        ("GET", []) => repository(state, &key),
        ("GET", ["commits", reference, "check-runs"]) => super::collab::list_check_runs(state, &key, reference, call),
        ("GET", ["commits", reference, "statuses"]) => super::collab::list_statuses(state, &key, reference),
        ("GET", ["commits", reference @ ..]) if !reference.is_empty() => commit(state, &key, &reference.join("/")),
        ("GET", ["git", "ref", reference @ ..]) if !reference.is_empty() => {
            get_ref(state, &key, &reference.join("/"), false)
        }
        ("GET", ["git", "refs", reference @ ..]) => get_ref(state, &key, &reference.join("/"), true),
        ("POST", ["git", "refs"]) => create_ref(state, &key, call),
        ("PATCH", ["git", "refs", reference @ ..]) if !reference.is_empty() => {
            update_ref(state, &key, &reference.join("/"), call)
        }
        ("DELETE", ["git", "refs", reference @ ..]) if !reference.is_empty() => {
            delete_ref(state, &key, &reference.join("/"))
        }
        ("GET", ["contents", path @ ..]) => contents(state, &key, &path.join("/"), call.query_param("ref")),
        ("POST", ["git", "blobs"]) => create_blob(state, &key, call),
        ("GET", ["git", "blobs", sha]) => get_blob(state, &key, sha),
        ("POST", ["git", "trees"]) => create_tree(state, &key, call),
        ("GET", ["git", "trees", sha]) => get_tree(state, &key, sha, call.query_param("recursive").is_some()),
        ("POST", ["git", "commits"]) => create_commit(state, &key, call),
        ("GET", ["git", "commits", sha]) => get_git_commit(state, &key, sha),
        (
            "GET" | "POST",
            ["pulls", _, "files" | "reviews" | "comments", ..]
            | ["compare", _]
            | ["issues", "comments", _, "reactions"],
        )
        | ("PATCH", ["pulls", "comments", _]) => super::pulls::route(state, call, &key, rest),
        _ => collab::route(state, call, &key, rest),
    }
}

fn repository(state: &State, key: &str) -> Reply {
    let repo = &state.repos[key];
    let urls = state.urls(repo);
    let owner = RepoUrls::user(&state.base_url, &repo.owner);
    Reply::json(
        200,
        &json!({
            "id": repo.id,
            "node_id": super::wire::node_id("Repository", &repo.id.to_string()),
            "name": repo.name,
            "full_name": format!("{}/{}", repo.owner, repo.name),
            "private": repo.private,
            "visibility": if repo.private { "private" } else { "public" },
            "owner": owner,
            "html_url": urls.html,
            "description": null,
            "fork": false,
            "url": urls.api,
            "default_branch": repo.default_branch,
            "archived": false,
            "disabled": false,
            "permissions": {"admin": false, "maintain": false, "push": true, "triage": true, "pull": true},
        }),
    )
}

fn commit(state: &State, key: &str, reference: &str) -> Reply {
    let repo = &state.repos[key];
    let Some((sha, commit)) = repo.git.resolve(reference).and_then(|s| repo.git.commit(&s).map(|c| (s, c))) else {
        return error(422, &format!("No commit found for SHA: {reference}"));
    };
    Reply::json(200, &state.urls(repo).rest_commit(&state.base_url, &sha, commit, &repo.git))
}

fn get_ref(state: &State, key: &str, name: &str, list: bool) -> Reply {
    let repo = &state.repos[key];
    let urls = state.urls(repo);
    if let Some(sha) = repo.git.refs.get(name) {
        return Reply::json(200, &urls.git_ref(name, sha));
    }
    let matching: Vec<Value> =
        repo.git.refs.iter().filter(|(n, _)| n.starts_with(name)).map(|(n, sha)| urls.git_ref(n, sha)).collect();
    if list && !matching.is_empty() { Reply::json(200, &Value::Array(matching)) } else { not_found() }
}

fn create_ref(state: &mut State, key: &str, call: &RecordedCall) -> Reply {
    let body = match json_body(call) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let (Some(full), Some(sha)) = (body["ref"].as_str(), body["sha"].as_str()) else {
        return error(422, "Invalid request.\n\n\"ref\", \"sha\" weren't supplied.");
    };
    let Some(name) = full.strip_prefix("refs/").filter(|n| n.contains('/') && !n.ends_with('/')) else {
        return error(422, "Reference name is invalid");
    };
    let urls = state.urls(&state.repos[key]);
    let repo = state.repos.get_mut(key).expect("checked by the caller");
    if repo.git.commit(sha).is_none() {
        return error(422, "Object does not exist");
    }
    if repo.git.refs.contains_key(name) {
        return error(422, "Reference already exists");
    }
    repo.git.refs.insert(name.to_owned(), sha.to_owned());
    Reply::json(201, &urls.git_ref(name, sha))
}

fn update_ref(state: &mut State, key: &str, name: &str, call: &RecordedCall) -> Reply {
    let body = match json_body(call) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let Some(sha) = body["sha"].as_str() else {
        return error(422, "Invalid request.\n\n\"sha\" wasn't supplied.");
    };
    let force = body["force"].as_bool().unwrap_or(false);
    let urls = state.urls(&state.repos[key]);
    let repo = state.repos.get_mut(key).expect("checked by the caller");
    let Some(old) = repo.git.refs.get(name).cloned() else {
        return error(422, "Reference does not exist");
    };
    if repo.git.commit(sha).is_none() {
        return error(422, "Object does not exist");
    }
    if !force && !repo.git.is_ancestor(&old, sha) {
        return error(422, "Update is not a fast forward");
    }
    repo.git.refs.insert(name.to_owned(), sha.to_owned());
    Reply::json(200, &urls.git_ref(name, sha))
}

fn delete_ref(state: &mut State, key: &str, name: &str) -> Reply {
    let repo = state.repos.get_mut(key).expect("checked by the caller");
    match repo.git.refs.remove(name) {
        Some(_) => Reply { status: 204, headers: Vec::new(), body: Vec::new(), delay_ms: 0 },
        None => error(422, "Reference does not exist"),
    }
}

fn contents(state: &State, key: &str, path: &str, reference: Option<&str>) -> Reply {
    let repo = &state.repos[key];
    let reference = reference.filter(|r| !r.is_empty()).unwrap_or(&repo.default_branch);
    let Some(files) = repo.git.resolve(reference).and_then(|sha| repo.git.files_at(&sha)) else {
        return error(404, &format!("No commit found for the ref {reference}"));
    };
    let urls = state.urls(repo);
    let path = path.trim_end_matches('/');
    if let Some((_, sha)) = files.get(path) {
        let bytes = repo.git.blob(sha).unwrap_or_default();
        return Reply::json(200, &urls.content_file(path, reference, sha, bytes));
    }
    // A directory: its direct children, files and directories.
    let prefix = if path.is_empty() { String::new() } else { format!("{path}/") };
    let mut children: Vec<Value> = Vec::new();
    let mut dirs: Vec<String> = Vec::new();
    for (file, (_, sha)) in files.iter().filter(|(f, _)| f.starts_with(&prefix)) {
        match file[prefix.len()..].split_once('/') {
            None => {
                let size = repo.git.blob(sha).map_or(0, <[u8]>::len);
                children.push(urls.content_entry(file, reference, sha, "file", size));
            }
            Some((dir, _)) if !dirs.iter().any(|d| d == dir) => dirs.push(dir.to_owned()),
            Some(_) => {}
        }
    }
    if children.is_empty() && dirs.is_empty() {
        return not_found();
    }
    for dir in dirs {
        let full = format!("{prefix}{dir}");
        let sub: FlatTree = files
            .iter()
            .filter_map(|(p, e)| p.strip_prefix(&format!("{full}/")).map(|r| (r.to_owned(), e.clone())))
            .collect();
        // Directory shas are computed the way the store names trees.
        let mut scratch = super::store::GitStore::default();
        let sha = scratch.put_tree(sub);
        children.push(urls.content_entry(&full, reference, &sha, "dir", 0));
    }
    children.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    Reply::json(200, &Value::Array(children))
}
