//! The git data routes: blobs, trees (with `base_tree` and deletions) and
//! commits.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::state::State;
use super::store::{Commit, FILE_MODE, FlatTree};
use super::wire::{base64_lines, error, not_found, validation_failed};
use crate::record::RecordedCall;
use crate::server::Reply;
use crate::time::now_rfc3339;

pub(super) fn json_body(call: &RecordedCall) -> Result<Value, Reply> {
    call.json().filter(Value::is_object).ok_or_else(|| error(400, "Problems parsing JSON"))
}

pub(super) fn create_blob(state: &mut State, key: &str, call: &RecordedCall) -> Reply {
    let body = match json_body(call) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let Some(content) = body["content"].as_str() else {
        return error(422, "Invalid request.\n\n\"content\" wasn't supplied.");
    };
    let bytes = match body["encoding"].as_str().unwrap_or("utf-8") {
        "utf-8" | "utf8" => content.as_bytes().to_vec(),
        "base64" => {
            let packed: String = content.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            match STANDARD.decode(packed) {
                Ok(bytes) => bytes,
                Err(_) => {
                    return error(422, "Invalid request.\n\n\"content\" is not valid Base64.");
                }
            }
        }
        other => {
            return error(422, &format!("Invalid request.\n\nencoding `{other}` is not supported."));
        }
    };
    let urls = state.urls(&state.repos[key]);
    let repo = state.repos.get_mut(key).expect("checked by the caller");
    let sha = repo.git.put_blob(&bytes);
    Reply::json(201, &json!({"sha": sha, "url": format!("{}/git/blobs/{sha}", urls.api)}))
}

pub(super) fn get_blob(state: &State, key: &str, sha: &str) -> Reply {
    let repo = &state.repos[key];
    let Some(bytes) = repo.git.blob(sha) else {
        return not_found();
    };
    let urls = state.urls(repo);
    Reply::json(
        200,
        &json!({
            "sha": sha, "node_id": super::wire::node_id("Blob", sha), "size": bytes.len(),
            "url": format!("{}/git/blobs/{sha}", urls.api), "content": base64_lines(bytes), "encoding": "base64",
        }),
    )
}

pub(super) fn create_tree(state: &mut State, key: &str, call: &RecordedCall) -> Reply {
    let body = match json_body(call) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let Some(entries) = body["tree"].as_array() else {
        return error(422, "Invalid request.\n\n\"tree\" wasn't supplied.");
    };
    let urls = state.urls(&state.repos[key]);
    let repo = state.repos.get_mut(key).expect("checked by the caller");
    let mut flat = match body["base_tree"].as_str() {
        Some(base) => match repo.git.tree(base) {
            Some(tree) => tree.clone(),
            None => return error(422, "Invalid tree info"),
        },
        None => FlatTree::new(),
    };
    for (index, entry) in entries.iter().enumerate() {
        let Some(path) = entry["path"].as_str().filter(|p| !p.is_empty() && !p.starts_with('/')) else {
            return validation_failed("Tree", &format!("tree[{index}].path"), "missing_field", None);
        };
        let mode = entry["mode"].as_str().unwrap_or(FILE_MODE).to_owned();
        // GitHub REST "Create a tree" (2022-11-28): the modes it accepts.
        if !["100644", "100755", "040000", "160000", "120000"].contains(&mode.as_str()) {
            return validation_failed("Tree", &format!("tree[{index}].mode"), "invalid", None);
        }
        let kind = entry["type"].as_str().unwrap_or("blob");
        if let Some(content) = entry["content"].as_str() {
            let sha = repo.git.put_blob(content.as_bytes());
            flat.insert(path.to_owned(), (mode, sha));
            continue;
        }
        match (&entry["sha"], kind) {
            (Value::Null, _) => {
                let dir = format!("{path}/");
                flat.retain(|p, _| p != path && !p.starts_with(&dir));
            }
            (Value::String(sha), "blob") if repo.git.blob(sha).is_some() => {
                flat.insert(path.to_owned(), (mode, sha.clone()));
            }
            (Value::String(sha), "tree") if repo.git.tree(sha).is_some() => {
                let sub = repo.git.tree(sha).cloned().unwrap_or_default();
                for (p, e) in sub {
                    flat.insert(format!("{path}/{p}"), e);
                }
            }
            (Value::String(sha), "commit") => {
                flat.insert(path.to_owned(), ("160000".to_owned(), sha.clone()));
            }
            _ => {
                return error(422, &format!("tree.sha {} is not a valid {kind}", entry["sha"]));
            }
        }
    }
    let sha = repo.git.put_tree(flat.clone());
    Reply::json(201, &urls.tree(&sha, &flat, false, &mut repo.git))
}

pub(super) fn get_tree(state: &mut State, key: &str, reference: &str, recursive: bool) -> Reply {
    let urls = state.urls(&state.repos[key]);
    let repo = state.repos.get_mut(key).expect("checked by the caller");
    let sha = if repo.git.tree(reference).is_some() {
        reference.to_owned()
    } else {
        match repo.git.resolve(reference).and_then(|c| repo.git.commit(&c).map(|c| c.tree.clone())) {
            Some(tree) => tree,
            None => return not_found(),
        }
    };
    let flat = repo.git.tree(&sha).cloned().unwrap_or_default();
    Reply::json(200, &urls.tree(&sha, &flat, recursive, &mut repo.git))
}

pub(super) fn create_commit(state: &mut State, key: &str, call: &RecordedCall) -> Reply {
    let body = match json_body(call) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let (Some(message), Some(tree)) = (body["message"].as_str(), body["tree"].as_str()) else {
        return error(422, "Invalid request.\n\n\"message\", \"tree\" weren't supplied.");
    };
    let parents: Vec<String> = body["parents"]
        .as_array()
        .map(|p| p.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let actor = state.login_of(call);
    let urls = state.urls(&state.repos[key]);
    let repo = state.repos.get_mut(key).expect("checked by the caller");
    if repo.git.tree(tree).is_none() {
        return error(422, "Tree SHA does not exist");
    }
    if parents.iter().any(|p| repo.git.commit(p).is_none()) {
        return error(422, "Parent SHA does not exist or is not a commit object");
    }
    let author = &body["author"];
    let commit = Commit {
        tree: tree.to_owned(),
        parents,
        message: message.to_owned(),
        author_name: author["name"].as_str().unwrap_or(&actor).to_owned(),
        author_email: author["email"]
            .as_str()
            .map_or_else(|| format!("{actor}@users.noreply.github.com"), str::to_owned),
        date: author["date"].as_str().map_or_else(now_rfc3339, str::to_owned),
    };
    let sha = repo.git.put_commit(commit.clone());
    Reply::json(201, &urls.git_commit(&sha, &commit))
}

pub(super) fn get_git_commit(state: &State, key: &str, sha: &str) -> Reply {
    let repo = &state.repos[key];
    match repo.git.commit(sha) {
        Some(commit) => Reply::json(200, &state.urls(repo).git_commit(sha, commit)),
        None => not_found(),
    }
}
