//! Routes where the product writes for people to read: installation tokens,
//! check runs, issue comments (paginated like GitHub) and pull requests.

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::auth::{check_jwt, credential};
use super::state::{Comment, State};
use super::wire::{RepoUrls, error, node_id, not_found, validation_failed};
use crate::record::RecordedCall;
use crate::server::Reply;
use crate::time::{now_rfc3339, now_secs, rfc3339};

/// Default and largest `per_page` of list endpoints.
const PER_PAGE: (usize, usize) = (30, 100);

/// `POST /app/installations/{id}/access_tokens`.
pub(crate) fn installation_token(state: &mut State, call: &RecordedCall, id: &str) -> Reply {
    if let Err(message) = check_jwt(call, state.app.as_ref(), now_secs()) {
        return error(401, message);
    }
    let Some(id) = id.parse::<u64>().ok().filter(|id| state.installations.contains_key(id)) else {
        return not_found();
    };
    let requested = call.json().unwrap_or(Value::Null);
    let grants = match &state.app_grants {
        Some(granted) => match super::permissions::narrowed(granted, requested.get("permissions")) {
            Ok(grants) => Some(grants),
            Err(message) => return error(422, &message),
        },
        None => None,
    };
    let serial = state.fresh_id();
    let digest = hex::encode(Sha256::digest(format!("installation {id} token {serial}").as_bytes()));
    let token = format!("ghs_{}", &digest[..36]);
    state.minted.push(token.clone());
    let expires = now_secs() + 3600;
    state.minted_expiry.insert(token.clone(), expires);
    let permissions = match grants {
        Some(grants) => {
            let shown = json!(grants);
            state.minted_grants.insert(token.clone(), grants);
            shown
        }
        None => requested.get("permissions").filter(|p| p.is_object()).cloned().unwrap_or_else(|| {
            json!({"checks": "write", "contents": "write", "issues": "write", "metadata": "read", "pull_requests": "write"})
        }),
    };
    Reply::json(
        201,
        &json!({
            "token": token,
            "expires_at": rfc3339(expires),
            "permissions": permissions,
            "repository_selection": if requested.get("repositories").is_some() { "selected" } else { "all" },
        }),
    )
}

/// The collaboration routes under `/repos/{o}/{r}/`.
pub(crate) fn route(state: &mut State, call: &RecordedCall, key: &str, rest: &[&str]) -> Reply {
    let number = |text: &str| text.parse::<u64>().ok();
    match (call.method.as_str(), rest) {
        ("POST" | "PATCH", ["check-runs", ..]) if !by_installation(state, call) => {
            error(403, "You must authenticate via a GitHub App.")
        }
        ("POST", ["check-runs"]) => create_check_run(state, key, call),
        ("PATCH", ["check-runs", id]) => number(id).map_or_else(not_found, |id| update_check_run(state, key, id, call)),
        ("POST", ["statuses", sha]) => create_status(state, key, sha, call),
        ("GET", ["check-runs", id]) => number(id).map_or_else(not_found, |id| {
            find_check_run(state, key, id).map_or_else(not_found, |run| Reply::json(200, run))
        }),
        ("GET", ["issues", n, "comments"]) => number(n).map_or_else(not_found, |n| list_comments(state, key, n, call)),
        ("POST", ["issues", n, "comments"]) => {
            number(n).map_or_else(not_found, |n| create_comment(state, key, n, call))
        }
        ("GET", ["issues", "comments", id]) => number(id).map_or_else(not_found, |id| {
            let comment = state.comments.iter().find(|c| c.id == id && c.repo == key).cloned();
            comment.map_or_else(not_found, |c| Reply::json(200, &state.comment_json(&c)))
        }),
        ("PATCH", ["issues", "comments", id]) => {
            number(id).map_or_else(not_found, |id| update_comment(state, key, id, call))
        }
        ("DELETE", ["issues", "comments", id]) => number(id).map_or_else(not_found, |id| {
            let before = state.comments.len();
            state.comments.retain(|c| !(c.id == id && c.repo == key));
            if state.comments.len() == before {
                not_found()
            } else {
                Reply { status: 204, headers: Vec::new(), body: Vec::new(), delay_ms: 0 }
            }
        }),
        ("GET", ["issues", n]) => number(n).map_or_else(not_found, |n| super::issues::get(state, key, n)),
        ("POST", ["pulls"]) => create_pull(state, key, call),
        ("GET", ["pulls"]) => list_pulls(state, key, call),
        ("GET", ["pulls", n]) => number(n).map_or_else(not_found, |n| {
            let pull = state.pulls.iter().find(|(k, p)| k == key && p["number"] == n);
            pull.map_or_else(not_found, |(_, p)| Reply::json(200, p))
        }),
        _ => not_found(),
    }
}

/// Whether `call` carries a GitHub App installation's token: one this
/// fake minted, or one shaped as GitHub shapes them (`ghs_`, GitHub's prefix
/// for installation access tokens) that a test registered.
fn by_installation(state: &State, call: &RecordedCall) -> bool {
    credential(call).is_some_and(|token| token.starts_with("ghs_") || state.minted.iter().any(|m| m == token))
}

/// `POST /repos/{o}/{r}/statuses/{sha}` ("Create a commit status"): `state`
/// one of `error`, `failure`, `pending`, `success`; `context` `default`
/// when absent; 422 for a sha that names no commit.
fn create_status(state: &mut State, key: &str, sha: &str, call: &RecordedCall) -> Reply {
    let body = match body_object(call) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let Some(status) = body["state"].as_str() else {
        return error(422, "Invalid request.\n\n\"state\" wasn't supplied.");
    };
    if !matches!(status, "error" | "failure" | "pending" | "success") {
        return validation_failed("Status", "state", "invalid", Some("state is not included in the list"));
    }
    let repo = &state.repos[key];
    if repo.git.commit(sha).is_none() {
        return error(422, &format!("No commit found for SHA: {sha}"));
    }
    let urls = state.urls(repo);
    let id = state.fresh_id();
    let now = now_rfc3339();
    let created = json!({
        "url": format!("{}/statuses/{sha}", urls.api),
        "avatar_url": null,
        "id": id,
        "node_id": node_id("StatusContext", &id.to_string()),
        "state": status,
        "description": body["description"].as_str(),
        "target_url": body["target_url"].as_str(),
        "context": body["context"].as_str().unwrap_or("default"),
        "created_at": now,
        "updated_at": now,
        "sha": sha,
    });
    state.statuses.push((key.to_owned(), created.clone()));
    let mut answer = created;
    if let Some(fields) = answer.as_object_mut() {
        fields.remove("sha");
    }
    Reply::json(201, &answer)
}

/// `GET /repos/{o}/{r}/commits/{ref}/statuses`: the statuses of the commit
/// `reference` names, newest first.
pub(crate) fn list_statuses(state: &State, key: &str, reference: &str) -> Reply {
    let sha = match commit_named(state, key, reference) {
        Ok(sha) => sha,
        Err(reply) => return reply,
    };
    let mut shown: Vec<Value> = state
        .statuses
        .iter()
        .filter(|(k, status)| k == key && status["sha"] == sha.as_str())
        .map(|(_, status)| {
            let mut status = status.clone();
            if let Some(fields) = status.as_object_mut() {
                fields.remove("sha");
            }
            status
        })
        .collect();
    shown.reverse();
    Reply::json(200, &Value::Array(shown))
}

/// The commit `reference` (a sha, a prefix of one, a branch or a tag) names
/// in repository `key`, or GitHub's 422 for one that names none.
fn commit_named(state: &State, key: &str, reference: &str) -> Result<String, Reply> {
    let repo = &state.repos[key];
    repo.git
        .resolve(reference)
        .filter(|sha| repo.git.commit(sha).is_some())
        .ok_or_else(|| error(422, &format!("No commit found for SHA: {reference}")))
}

fn body_object(call: &RecordedCall) -> Result<Value, Reply> {
    call.json().filter(Value::is_object).ok_or_else(|| error(400, "Problems parsing JSON"))
}

fn find_check_run<'a>(state: &'a State, key: &str, id: u64) -> Option<&'a Value> {
    state.check_runs.iter().find(|(k, run)| k == key && run["id"] == id).map(|(_, run)| run)
}

fn create_check_run(state: &mut State, key: &str, call: &RecordedCall) -> Reply {
    let body = match body_object(call) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let (Some(name), Some(head_sha)) = (body["name"].as_str(), body["head_sha"].as_str()) else {
        return error(422, "Invalid request.\n\n\"name\", \"head_sha\" weren't supplied.");
    };
    let repo = &state.repos[key];
    if repo.git.commit(head_sha).is_none() {
        return error(422, &format!("No commit found for SHA: {head_sha}"));
    }
    let urls = state.urls(repo);
    let id = state.fresh_id();
    let mut run = json!({
        "id": id,
        "head_sha": head_sha,
        "node_id": node_id("CheckRun", &id.to_string()),
        "external_id": body["external_id"].as_str().unwrap_or(""),
        "url": format!("{}/check-runs/{id}", urls.api),
        "html_url": format!("{}/runs/{id}", urls.html),
        "details_url": body["details_url"].as_str().unwrap_or(&urls.html),
        "status": "queued",
        "conclusion": null,
        "started_at": now_rfc3339(),
        "completed_at": null,
        "output": {"title": null, "summary": null, "text": null, "annotations_count": 0,
                   "annotations_url": format!("{}/check-runs/{id}/annotations", urls.api)},
        "name": name,
        "check_suite": {"id": id + 10_000},
        "app": {"id": 1, "slug": state.app_slug, "name": "Agent Zero Edge", "owner": RepoUrls::user(&state.base_url, &urls.owner)},
        "pull_requests": [],
    });
    apply_check_run_update(&mut run, &body);
    state.check_runs.push((key.to_owned(), run.clone()));
    Reply::json(201, &run)
}

/// `GET /repos/{o}/{r}/commits/{ref}/check-runs` ("List check runs for a
/// Git reference"): the runs on the commit `reference` names, newest
/// first, narrowed by `check_name` and `status`; `filter=latest` (the
/// default) keeps only the newest run of each name, `all` every one.
/// Paginated by `per_page` (at most 100) and `page`; `total_count` counts
/// them all. A reference that names no commit is 422, as GitHub answers.
pub(crate) fn list_check_runs(state: &State, key: &str, reference: &str, call: &RecordedCall) -> Reply {
    let sha = match commit_named(state, key, reference) {
        Ok(sha) => sha,
        Err(reply) => return reply,
    };
    let filter = call.query_param("filter").unwrap_or("latest");
    if !matches!(filter, "latest" | "all") {
        return validation_failed("CheckRun", "filter", "invalid", Some("filter must be one of: latest, all"));
    }
    let mut runs: Vec<&Value> = state
        .check_runs
        .iter()
        .filter(|(k, run)| k == key && run["head_sha"] == sha.as_str())
        .map(|(_, run)| run)
        .filter(|run| call.query_param("check_name").is_none_or(|name| run["name"] == name))
        .filter(|run| call.query_param("status").is_none_or(|status| run["status"] == status))
        .collect();
    runs.sort_by_key(|run| std::cmp::Reverse(run["id"].as_u64().unwrap_or(0)));
    if filter == "latest" {
        let mut seen = std::collections::HashSet::new();
        runs.retain(|run| seen.insert(run["name"].as_str().unwrap_or_default().to_owned()));
    }
    let per_page =
        call.query_param("per_page").and_then(|n| n.parse::<usize>().ok()).unwrap_or(PER_PAGE.0).clamp(1, PER_PAGE.1);
    let page = call.query_param("page").and_then(|n| n.parse::<usize>().ok()).unwrap_or(1).max(1);
    let shown: Vec<&Value> = runs.iter().copied().skip((page - 1) * per_page).take(per_page).collect();
    Reply::json(200, &json!({ "total_count": runs.len(), "check_runs": shown }))
}

fn update_check_run(state: &mut State, key: &str, id: u64, call: &RecordedCall) -> Reply {
    let body = match body_object(call) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let Some((_, run)) = state.check_runs.iter_mut().find(|(k, run)| k == key && run["id"] == id) else {
        return not_found();
    };
    apply_check_run_update(run, &body);
    Reply::json(200, run)
}

/// The fields a create or update may set; a conclusion completes the run.
fn apply_check_run_update(run: &mut Value, body: &Value) {
    for field in ["name", "details_url", "external_id", "status", "started_at", "completed_at", "conclusion"] {
        if let Some(value) = body.get(field).filter(|v| !v.is_null()) {
            run[field] = value.clone();
        }
    }
    if let Some(output) = body.get("output").filter(|o| o.is_object()) {
        for field in ["title", "summary", "text"] {
            if let Some(value) = output.get(field) {
                run["output"][field] = value.clone();
            }
        }
        let added = output["annotations"].as_array().map_or(0, Vec::len);
        let count = run["output"]["annotations_count"].as_u64().unwrap_or(0);
        run["output"]["annotations_count"] = Value::from(count + added as u64);
    }
    if !run["conclusion"].is_null() {
        run["status"] = Value::from("completed");
        if run["completed_at"].is_null() {
            run["completed_at"] = Value::from(now_rfc3339());
        }
    }
}

fn list_comments(state: &State, key: &str, number: u64, call: &RecordedCall) -> Reply {
    let per_page =
        call.query_param("per_page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(PER_PAGE.0).clamp(1, PER_PAGE.1);
    let page = call.query_param("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(1).max(1);
    // `since`: only comments updated at or after it (both sides are
    // `YYYY-MM-DDTHH:MM:SS` UTC to the second, which sorts as text).
    let since = call.query_param("since").map(|s| s.chars().take(19).collect::<String>());
    let recent = |c: &&Comment| since.as_ref().is_none_or(|s| c.updated_at.chars().take(19).collect::<String>() >= *s);
    let all: Vec<&Comment> =
        state.comments.iter().filter(|c| c.repo == key && c.number == number).filter(recent).collect();
    let items: Vec<Value> =
        all.iter().skip((page - 1) * per_page).take(per_page).map(|c| state.comment_json(c)).collect();
    let mut reply = Reply::json(200, &Value::Array(items));
    let last = all.len().div_ceil(per_page).max(1);
    let repo = &state.repos[key];
    let since_param = call.query_param("since").map(|s| format!("&since={s}")).unwrap_or_default();
    let link_to = |p: usize| {
        format!("<{}/issues/{number}/comments?per_page={per_page}{since_param}&page={p}>", state.urls(repo).api)
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(format!("{}; rel=\"prev\"", link_to(page - 1)));
    }
    if page < last {
        links.push(format!("{}; rel=\"next\"", link_to(page + 1)));
        links.push(format!("{}; rel=\"last\"", link_to(last)));
    }
    if page > 1 {
        links.push(format!("{}; rel=\"first\"", link_to(1)));
    }
    if !links.is_empty() {
        reply = reply.with_header("link", &links.join(", "));
    }
    reply
}

fn comment_text(call: &RecordedCall) -> Result<String, Reply> {
    let body = body_object(call)?;
    body["body"].as_str().map(str::to_owned).ok_or_else(|| error(422, "Invalid request.\n\n\"body\" wasn't supplied."))
}

fn create_comment(state: &mut State, key: &str, number: u64, call: &RecordedCall) -> Reply {
    let text = match comment_text(call) {
        Ok(text) => text,
        Err(reply) => return reply,
    };
    let login = state.login_of(call);
    let comment = insert_comment(state, key, number, &login, &text);
    let json = state.comment_json(&comment);
    let location = json["url"].as_str().unwrap_or_default().to_owned();
    Reply::json(201, &json).with_header("location", &location)
}

/// Adds a comment (seeded by a test or posted by the product).
pub(crate) fn insert_comment(state: &mut State, key: &str, number: u64, login: &str, body: &str) -> Comment {
    let id = state.fresh_id();
    let now = now_rfc3339();
    let comment = Comment {
        id,
        repo: key.to_owned(),
        number,
        login: login.to_owned(),
        body: body.to_owned(),
        created_at: now.clone(),
        updated_at: now,
    };
    if let Some(repo) = state.repos.get_mut(key) {
        repo.next_number = repo.next_number.max(number + 1);
    }
    state.comments.push(comment.clone());
    comment
}

fn update_comment(state: &mut State, key: &str, id: u64, call: &RecordedCall) -> Reply {
    let text = match comment_text(call) {
        Ok(text) => text,
        Err(reply) => return reply,
    };
    let Some(comment) = state.comments.iter_mut().find(|c| c.id == id && c.repo == key) else {
        return not_found();
    };
    comment.body = text;
    comment.updated_at = now_rfc3339();
    let comment = comment.clone();
    Reply::json(200, &state.comment_json(&comment))
}

/// `GET /repos/{o}/{r}/pulls` ("List pull requests"): `state` (`open` by
/// default, `closed`, `all`), `head` (`user:branch`, as GitHub takes it:
/// the branch of that user's repository), `base`, newest first, paged by
/// `per_page` (30, at most 100) and `page`.
fn list_pulls(state: &State, key: &str, call: &RecordedCall) -> Reply {
    let wanted = call.query_param("state").unwrap_or("open");
    if !matches!(wanted, "open" | "closed" | "all") {
        return validation_failed("PullRequest", "state", "invalid", None);
    }
    let per_page = call.query_param("per_page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(30).clamp(1, 100);
    let page = call.query_param("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(1).max(1);
    let head = call.query_param("head").map(|h| h.split_once(':').map_or((None, h), |(u, b)| (Some(u), b)));
    let base = call.query_param("base");
    let mut pulls: Vec<&Value> = state
        .pulls
        .iter()
        .filter(|(k, p)| {
            k == key
                && (wanted == "all" || p["state"] == wanted)
                && head.is_none_or(|(user, branch)| {
                    p["head"]["ref"] == branch
                        && user.is_none_or(|u| {
                            p["head"]["user"]["login"].as_str().is_some_and(|l| l.eq_ignore_ascii_case(u))
                        })
                })
                && base.is_none_or(|b| p["base"]["ref"] == b)
        })
        .map(|(_, p)| p)
        .collect();
    pulls.reverse();
    let items: Vec<Value> = pulls.into_iter().skip((page - 1) * per_page).take(per_page).cloned().collect();
    Reply::json(200, &Value::Array(items))
}

fn create_pull(state: &mut State, key: &str, call: &RecordedCall) -> Reply {
    let body = match body_object(call) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let (Some(title), Some(head), Some(base)) = (body["title"].as_str(), body["head"].as_str(), body["base"].as_str())
    else {
        return error(422, "Invalid request.\n\n\"title\", \"head\", \"base\" weren't supplied.");
    };
    let repo = &state.repos[key];
    let head_branch = head.rsplit_once(':').map_or(head, |(_, b)| b);
    let Some(head_sha) = repo.git.refs.get(&format!("heads/{head_branch}")).cloned() else {
        return validation_failed("PullRequest", "head", "invalid", None);
    };
    let Some(base_sha) = repo.git.refs.get(&format!("heads/{base}")).cloned() else {
        return validation_failed("PullRequest", "base", "invalid", None);
    };
    let duplicate = state
        .pulls
        .iter()
        .any(|(k, p)| k == key && p["state"] == "open" && p["head"]["ref"] == head_branch && p["base"]["ref"] == base);
    if duplicate {
        let message = format!("A pull request already exists for {}:{head_branch}.", repo.owner);
        return validation_failed("PullRequest", "", "custom", Some(&message));
    }
    if repo.git.is_ancestor(&head_sha, &base_sha) {
        let message = format!("No commits between {base} and {head_branch}");
        return validation_failed("PullRequest", "", "custom", Some(&message));
    }
    let urls = state.urls(repo);
    let repo_json = json!({"id": repo.id, "name": repo.name, "full_name": format!("{}/{}", repo.owner, repo.name),
                           "private": repo.private, "url": urls.api, "html_url": urls.html});
    let owner = RepoUrls::user(&state.base_url, &repo.owner);
    let side = |branch: &str, sha: &str| json!({"label": format!("{}:{branch}", repo.owner), "ref": branch, "sha": sha, "user": owner, "repo": repo_json});
    let (head_json, base_json) = (side(head_branch, &head_sha), side(base, &base_sha));
    let number = repo.next_number;
    let user = RepoUrls::user(&state.base_url, &state.login_of(call));
    let id = state.fresh_id();
    let now = now_rfc3339();
    let pull = json!({
        "url": format!("{}/pulls/{number}", urls.api),
        "id": id,
        "node_id": node_id("PullRequest", &id.to_string()),
        "html_url": format!("{}/pull/{number}", urls.html),
        "diff_url": format!("{}/pull/{number}.diff", urls.html),
        "patch_url": format!("{}/pull/{number}.patch", urls.html),
        "issue_url": format!("{}/issues/{number}", urls.api),
        "number": number,
        "state": "open",
        "locked": false,
        "title": title,
        "user": user,
        "body": body["body"].as_str(),
        "created_at": now,
        "updated_at": now,
        "closed_at": null,
        "merged_at": null,
        "merge_commit_sha": null,
        "draft": body["draft"].as_bool().unwrap_or(false),
        "head": head_json,
        "base": base_json,
        "merged": false,
        "mergeable": null,
        "maintainer_can_modify": body["maintainer_can_modify"].as_bool().unwrap_or(true),
        "comments": 0,
        "review_comments": 0,
    });
    if let Some(repo) = state.repos.get_mut(key) {
        repo.next_number += 1;
    }
    state.pulls.push((key.to_owned(), pull.clone()));
    Reply::json(201, &pull).with_header("location", &format!("{}/pulls/{number}", urls.api))
}
