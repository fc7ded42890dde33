//! Pull request routes: list, create, get, changed files, the diff, and
//! reviews with line comments. A pull request's head is a branch of the
//! repository or of a fork of it; either way its files and diff are read
//! in the base repository (`refs/pull/{n}/head`), as Gitea reads them.

use serde_json::{Value, json};

use super::request::{Request, paginate};
use super::state::{Access, Pull, Review, State};
use super::wire::{self, error, not_found, token_required};
use crate::server::Reply;
use crate::time::now_rfc3339;

pub(crate) fn route(state: &mut State, operation: &str, request: &Request<'_>, key: &str, access: Access) -> Reply {
    if operation == "repoListPullRequests" {
        return list(state, request, key);
    }
    if operation == "repoCreatePullRequest" {
        return create(state, request, key);
    }
    let number: u64 = request.param("index").parse().unwrap_or(0);
    let Some(pull) = state.pulls.iter().find(|p| p.repo == key && p.number == number).cloned() else {
        return not_found(state);
    };
    match operation {
        "repoGetPullRequest" => Reply::json(200, &wire::pull(state, &pull)),
        "repoGetPullRequestFiles" => files(state, request, &pull),
        "repoDownloadPullDiffOrPatch" => diff(state, &pull),
        "repoListPullReviews" => {
            let reviews: Vec<Review> =
                state.reviews.iter().filter(|r| r.repo == key && r.number == number).cloned().collect();
            let items = reviews.iter().map(|r| review_json(state, &pull, r)).collect();
            paginate(state, request, items)
        }
        "repoCreatePullReview" => create_review(state, request, &pull, access),
        "repoGetPullReviewComments" => {
            let id: u64 = request.param("id").parse().unwrap_or(0);
            let Some(review) =
                state.reviews.iter().find(|r| r.id == id && r.repo == key && r.number == number).cloned()
            else {
                return not_found(state);
            };
            Reply::json(200, &review_comments(state, &pull, &review))
        }
        _ => not_found(state),
    }
}

/// The pull requests in `state` (`open`, the default; `closed`; `all`),
/// newest first.
fn list(state: &mut State, request: &Request<'_>, key: &str) -> Reply {
    let wanted = request.call.query_param("state").unwrap_or("open");
    let pulls: Vec<Pull> = state
        .pulls
        .iter()
        .rev()
        .filter(|p| p.repo == key && (wanted == "all" || (wanted == "closed") == p.closed))
        .cloned()
        .collect();
    let items = pulls.iter().map(|p| wire::pull(state, p)).collect();
    paginate(state, request, items)
}

/// The repository `owner:` names in a pull request's `head`: the base
/// repository itself, or `owner`'s fork of it (Gitea's `parseCompareInfo`,
/// `GetForkedRepo`); `None` when `owner` has no fork of it.
fn head_repository(state: &State, key: &str, owner: &str) -> Option<String> {
    if state.repos[key].owner.eq_ignore_ascii_case(owner) {
        return Some(key.to_owned());
    }
    let fork =
        state.repos.iter().find(|(_, r)| r.owner.eq_ignore_ascii_case(owner) && r.fork_of.as_deref() == Some(key));
    fork.map(|(k, _)| k.clone())
}

/// Gitea's `CreatePullRequest`: `head` is `branch` (of this repository) or
/// `owner:branch` (of `owner`'s fork of it, which the caller must be able
/// to read); 404 when either branch or the fork is missing, 422 when head
/// and base are the same or nothing differs, 409 when an open pull request
/// has the same head and base. The head's commit is kept in this
/// repository as `refs/pull/{n}/head`.
fn create(state: &mut State, request: &Request<'_>, key: &str) -> Reply {
    let Some(login) = request.login.clone() else { return token_required(state) };
    let body = request.json();
    let head_spec = body["head"].as_str().unwrap_or_default();
    let (head_repo, head) = match head_spec.split_once(':') {
        Some((owner, branch)) => match head_repository(state, key, owner) {
            Some(repo) => (repo, branch.to_owned()),
            None => return not_found(state),
        },
        None => (key.to_owned(), head_spec.to_owned()),
    };
    if State::access(&state.repos[&head_repo], Some(&login)) < Access::Read {
        return not_found(state);
    }
    let repo = &state.repos[key];
    let base = body["base"].as_str().unwrap_or_default().to_owned();
    let head_git = &state.repos[&head_repo].git;
    let (Some(head_sha), Some(base_sha)) = (head_git.branch(&head), repo.git.branch(&base)) else {
        return not_found(state);
    };
    if let Err(e) = repo.git.fetch_branch(head_git.path(), &head, "refs/agent-zero-fake/compare") {
        return error(state, 500, &e);
    }
    let same = head_repo == key && head == base;
    if same || repo.git.merge_base(&base_sha, &head_sha).as_deref() == Some(head_sha.as_str()) {
        return error(state, 422, "Invalid PullRequest: There are no changes between the head and the base");
    }
    if let Some(existing) = state
        .pulls
        .iter()
        .find(|p| p.repo == key && !p.closed && p.head_repo == head_repo && p.head == head && p.base == base)
    {
        let message = format!(
            "pull request already exists for these targets [id: {}, issue_id: {}, head_repo_id: {}, base_repo_id: {}, head_branch: {head}, base_branch: {base}]",
            existing.id, existing.id, state.repos[&head_repo].id, repo.id
        );
        return error(state, 409, &message);
    }
    state.ensure_user(&login);
    let pull = Pull {
        id: state.fresh_id(),
        repo: key.to_owned(),
        number: state.next_index(key),
        title: body["title"].as_str().unwrap_or_default().to_owned(),
        body: body["body"].as_str().unwrap_or_default().to_owned(),
        head,
        head_repo,
        base,
        labels: Vec::new(),
        author: login,
        created: now_rfc3339(),
        closed: false,
    };
    if let Err(e) = state.sync_pull_head(&pull) {
        return error(state, 500, &e);
    }
    state.pulls.push(pull.clone());
    let json = wire::pull(state, &pull);
    Reply::json(201, &json)
}

/// `ChangedFile`s from the merge base to the head.
fn files(state: &State, request: &Request<'_>, pull: &Pull) -> Reply {
    let (merge_base, head) = state.pull_commits(pull);
    let repo = &state.repos[&pull.repo];
    let (html, api) = wire::repo_urls(state, repo);
    let items = repo
        .git
        .changed(&merge_base, &head)
        .into_iter()
        .map(|c| {
            json!({
                "filename": c.path,
                "previous_filename": "",
                // Gitea's `ToChangedFile`: a modified file is "changed".
                "status": if c.status == "modified" { "changed" } else { c.status.as_str() },
                "additions": c.additions,
                "deletions": c.deletions,
                "changes": c.additions + c.deletions,
                "html_url": format!("{html}/src/commit/{head}/{}", c.path),
                "contents_url": format!("{api}/contents/{}?ref={head}", c.path),
                "raw_url": format!("{html}/raw/commit/{head}/{}", c.path),
            })
        })
        .collect();
    paginate(state, request, items)
}

fn diff(state: &State, pull: &Pull) -> Reply {
    let (merge_base, head) = state.pull_commits(pull);
    match state.repos[&pull.repo].git.diff(&merge_base, &head) {
        Ok(bytes) => Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
            body: bytes,
            delay_ms: 0,
        },
        Err(e) => error(state, 500, &e),
    }
}

/// Gitea's `CreatePullReview`: `event` empty is `PENDING`; the author may
/// not approve or reject their own pull request (422); 200 with the review.
fn create_review(state: &mut State, request: &Request<'_>, pull: &Pull, access: Access) -> Reply {
    let Some(login) = request.login.clone() else { return token_required(state) };
    let body = request.json();
    let event = body["event"].as_str().filter(|e| !e.is_empty()).unwrap_or("PENDING").to_owned();
    let own = pull.author.eq_ignore_ascii_case(&login);
    match event.as_str() {
        "APPROVED" if own => return error(state, 422, "approve your own pull is not allowed"),
        "REQUEST_CHANGES" if own => return error(state, 422, "reject your own pull is not allowed"),
        "APPROVED" | "REQUEST_CHANGES" | "COMMENT" | "PENDING" => {}
        other => return error(state, 422, &format!("unknown review event: {other}")),
    }
    // Gitea's `preparePullReviewType`.
    let no_body = body["body"].as_str().is_none_or(|b| b.trim().is_empty());
    let no_comments = body["comments"].as_array().is_none_or(Vec::is_empty);
    if matches!(event.as_str(), "COMMENT" | "REQUEST_CHANGES") && no_body && no_comments {
        return error(state, 422, &format!("review event {event} requires a body or a comment"));
    }
    if access < Access::Read {
        return not_found(state);
    }
    let (_, head) = state.pull_commits(pull);
    let commit_id = body["commit_id"].as_str().filter(|c| !c.is_empty()).map_or(head, str::to_owned);
    let comments: Vec<(String, String, u64, u64)> = body["comments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|comment| {
            (
                comment["path"].as_str().unwrap_or_default().to_owned(),
                comment["body"].as_str().unwrap_or_default().to_owned(),
                comment["new_position"].as_u64().unwrap_or(0),
                comment["old_position"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let text = body["body"].as_str().unwrap_or_default().to_owned();
    let review = insert_review(state, pull, &login, &event, &text, &commit_id, comments);
    let json = review_json(state, pull, &review);
    Reply::json(200, &json)
}

/// Stores a submitted review by `login` with its line comments `(path,
/// body, new_position, old_position)`.
pub(crate) fn insert_review(
    state: &mut State,
    pull: &Pull,
    login: &str,
    event: &str,
    body: &str,
    commit_id: &str,
    lines: Vec<(String, String, u64, u64)>,
) -> Review {
    let comments = lines.into_iter().map(|(path, text, new, old)| (state.fresh_id(), path, text, new, old)).collect();
    state.ensure_user(login);
    let review = Review {
        id: state.fresh_id(),
        repo: pull.repo.clone(),
        number: pull.number,
        author: login.to_owned(),
        body: body.to_owned(),
        state: event.to_owned(),
        commit_id: commit_id.to_owned(),
        submitted: now_rfc3339(),
        comments,
    };
    state.reviews.push(review.clone());
    review
}

/// The head commit of a pull request (its head branch's tip).
pub(crate) fn head_sha(state: &State, pull: &Pull) -> String {
    state.pull_commits(pull).1
}

pub(crate) fn review_json(state: &mut State, pull: &Pull, review: &Review) -> Value {
    let user = wire::user_by_login(state, &review.author);
    let (html, _) = wire::repo_urls(state, &state.repos[&pull.repo]);
    json!({
        "id": review.id,
        "user": user,
        "team": null,
        "state": review.state,
        "body": review.body,
        "commit_id": review.commit_id,
        "stale": false,
        "official": false,
        "dismissed": false,
        "comments_count": review.comments.len(),
        "submitted_at": review.submitted,
        "updated_at": review.submitted,
        "html_url": format!("{html}/pulls/{}#issuecomment-{}", pull.number, review.id),
        "pull_request_url": format!("{html}/pulls/{}", pull.number),
    })
}

pub(crate) fn review_comments(state: &mut State, pull: &Pull, review: &Review) -> Value {
    let user = wire::user_by_login(state, &review.author);
    let (html, _) = wire::repo_urls(state, &state.repos[&pull.repo]);
    let items: Vec<Value> = review
        .comments
        .iter()
        .map(|(id, path, body, new_position, old_position)| {
            json!({
                "id": id,
                "body": body,
                "user": user,
                "resolver": null,
                "pull_request_review_id": review.id,
                "created_at": review.submitted,
                "updated_at": review.submitted,
                "path": path,
                "commit_id": review.commit_id,
                "original_commit_id": review.commit_id,
                "diff_hunk": "",
                "position": new_position,
                "original_position": old_position,
                "html_url": format!("{html}/pulls/{}/files#issuecomment-{id}", pull.number),
                "pull_request_url": format!("{html}/pulls/{}", pull.number),
            })
        })
        .collect();
    Value::Array(items)
}
