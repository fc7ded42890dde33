//! Pull requests seeded with a head commit, their changed files and their
//! reviews, in GitHub's wire format (REST `2022-11-28`):
//!
//! - `GET /repos/{o}/{r}/pulls/{n}/files` (`per_page` up to 100, default
//!   30, `page`, `Link: rel="next"`; at most 3,000 files): `filename`,
//!   `status`, `additions`, `deletions`, `changes`, `patch` (git's unified
//!   hunks with 3 lines of context; none for a binary file), the diff of
//!   the base commit to the head (`base...head`: the base is the head's
//!   parent here);
//! - `GET|POST /repos/{o}/{r}/pulls/{n}/reviews`: a review with `event`
//!   `COMMENT`, `APPROVE` or `REQUEST_CHANGES` and `comments` of `path`,
//!   `line`, `side`, `start_line`, `start_side`, `body`. As GitHub does, the
//!   review is all or nothing: a comment whose line is not shown by the
//!   file's hunks on that side is 422 with `errors: ["Line could not be
//!   resolved"]`, a start line outside that hunk `Pull request review thread
//!   start line must be part of the same hunk as the line.`, a file the pull
//!   request does not change `Pull request review thread path is invalid`,
//!   and nothing is stored. (GitHub's answers as reported against
//!   api.github.com: max-sixty/tend#252, parkerbxyz/suggest-changes#64,
//!   villesau/ai-codereviewer#34.)
//!
//! - `GET /repos/{o}/{r}/pulls/{n}/comments` (paged like files): every
//!   review comment, replies included, with `id`, `path`, `line`, `side`,
//!   `commit_id`, `diff_hunk`, `body`, `user`, `in_reply_to_id` (replies
//!   only); `POST .../pulls/{n}/comments/{id}/replies` `{"body"}` answers
//!   201 with the reply (GitHub threads replies on the root comment);
//! - `GET /repos/{o}/{r}/compare/{base}...{head}`: `status` (`ahead`,
//!   `behind`, `identical`, `diverged`), `ahead_by`, `behind_by`,
//!   `total_commits`, `commits`, and `files` as above (at most 300);
//! - `POST /repos/{o}/{r}/issues/comments/{id}/reactions` `{"content"}`: 201
//!   with the reaction, 200 for one the user already made (GitHub's
//!   "Reaction exists" answer), 422 for an unknown content.
//!
//! The diff assumes newline-terminated text files (the seeds are).

use serde_json::{Value, json};

use super::FakeGitHub;
use super::state::{State, repo_key};
use super::store::Commit;
use super::wire::{DOCS, RepoUrls, error, node_id, not_found};
use crate::record::RecordedCall;
use crate::server::Reply;
use crate::time::now_rfc3339;

/// Lines of context around each change, as git and GitHub show them.
const CONTEXT: usize = 3;
/// GitHub lists at most this many files of a pull request.
const MAX_LISTED: usize = 3_000;

impl FakeGitHub {
    /// Opens pull request `head_branch` -> the default branch whose head
    /// commit, `head_sha` (a real git sha when the sandbox clones it too),
    /// holds the base's files with `changes` applied (path, content; `None`
    /// deletes). Returns its number.
    ///
    /// # Panics
    /// When the repository was not seeded.
    pub fn open_pull_request(
        &self,
        owner: &str,
        repo: &str,
        head_branch: &str,
        head_sha: &str,
        changes: &[(&str, Option<&str>)],
    ) -> u64 {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let base_url = state.base_url.clone();
            let id = state.fresh_id();
            let r = state.repos.get_mut(&key).expect("seed the repository first");
            let base_branch = r.default_branch.clone();
            let base_sha = r.git.refs[&format!("heads/{base_branch}")].clone();
            let mut flat = r.git.files_at(&base_sha).cloned().unwrap_or_default();
            for (path, content) in changes {
                match content {
                    Some(content) => {
                        let entry = r.git.flat_from_files(&[(path, content)]);
                        flat.extend(entry);
                    }
                    None => {
                        flat.remove(*path);
                    }
                }
            }
            let tree = r.git.put_tree(flat);
            let commit = Commit {
                tree,
                parents: vec![base_sha.clone()],
                message: format!("Changes on {head_branch}"),
                author_name: owner.into(),
                author_email: format!("{owner}@users.noreply.github.com"),
                date: now_rfc3339(),
            };
            let head_sha = head_sha.to_ascii_lowercase();
            r.git.put_commit_with_id(&head_sha, commit);
            r.git.refs.insert(format!("heads/{head_branch}"), head_sha.clone());
            let number = r.next_number;
            r.next_number += 1;
            let urls = RepoUrls::new(&base_url, &r.owner, &r.name);
            let owner_json = RepoUrls::user(&base_url, &r.owner);
            let repo_json = json!({"id": r.id, "name": r.name, "full_name": format!("{}/{}", r.owner, r.name),
                                   "private": r.private, "url": urls.api, "html_url": urls.html});
            let side = |branch: &str, sha: &str| json!({"label": format!("{}:{branch}", r.owner), "ref": branch, "sha": sha, "user": owner_json, "repo": repo_json});
            let now = now_rfc3339();
            let pull = json!({
                "url": format!("{}/pulls/{number}", urls.api),
                "id": id,
                "node_id": node_id("PullRequest", &id.to_string()),
                "html_url": format!("{}/pull/{number}", urls.html),
                "number": number,
                "state": "open",
                "title": format!("Changes on {head_branch}"),
                "user": RepoUrls::user(&base_url, owner),
                "body": null,
                "created_at": now,
                "updated_at": now,
                "draft": false,
                "head": side(head_branch, &head_sha),
                "base": side(&base_branch, &base_sha),
                "merged": false,
            });
            state.pulls.push((key, pull));
            number
        })
    }

    /// Pushes a commit to pull request `number`'s head branch: `head_sha`
    /// (a real git sha, the sandbox clones it too), its parent the current
    /// head, holding the head's files with `changes` applied (path, content;
    /// `None` deletes), as a `synchronize` follows.
    ///
    /// # Panics
    /// When the pull request was not opened.
    pub fn push_to_pull_request(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        head_sha: &str,
        changes: &[(&str, Option<&str>)],
    ) {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let pull = state.pulls.iter_mut().find(|(k, p)| *k == key && p["number"] == number).expect("open it first");
            let parent = pull.1["head"]["sha"].as_str().unwrap_or_default().to_owned();
            let branch = pull.1["head"]["ref"].as_str().unwrap_or_default().to_owned();
            let head_sha = head_sha.to_ascii_lowercase();
            pull.1["head"]["sha"] = json!(head_sha);
            pull.1["updated_at"] = json!(now_rfc3339());
            let r = state.repos.get_mut(&key).expect("seeded");
            let mut flat = r.git.files_at(&parent).cloned().unwrap_or_default();
            for (path, content) in changes {
                match content {
                    Some(content) => flat.extend(r.git.flat_from_files(&[(path, content)])),
                    None => {
                        flat.remove(*path);
                    }
                }
            }
            let tree = r.git.put_tree(flat);
            let commit = Commit {
                tree,
                parents: vec![parent],
                message: format!("More changes on {branch}"),
                author_name: owner.into(),
                author_email: format!("{owner}@users.noreply.github.com"),
                date: now_rfc3339(),
            };
            r.git.put_commit_with_id(&head_sha, commit);
            r.git.refs.insert(format!("heads/{branch}"), head_sha);
        });
    }

    /// The review comments on pull request `number`, replies included,
    /// oldest first, as `GET .../pulls/{n}/comments` lists them.
    pub fn review_comments(&self, owner: &str, repo: &str, number: u64) -> Vec<Value> {
        let key = repo_key(owner, repo);
        self.with(|state| {
            state
                .review_comments
                .iter()
                .filter(|(k, c)| *k == key && c["number"] == number)
                .map(|(_, c)| c.clone())
                .collect()
        })
    }

    /// Adds a line comment by `login` (another reviewer) on `path:line` of
    /// pull request `number`, as GitHub stores one; returns its id (what a
    /// `pull_request_review_comment` delivery names as `comment.id`).
    ///
    /// # Panics
    /// When the pull request was not opened.
    #[allow(clippy::too_many_arguments)] // GitHub's own fields, in their order
    pub fn add_review_comment(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        login: &str,
        path: &str,
        line: u64,
        body: &str,
    ) -> u64 {
        let key = repo_key(owner, repo);
        self.with(|state| {
            let head = state
                .pulls
                .iter()
                .find(|(k, p)| *k == key && p["number"] == number)
                .map(|(_, p)| p["head"]["sha"].clone())
                .expect("open the pull request first");
            let id = state.fresh_id();
            let urls = state.urls(&state.repos[&key]);
            let now = now_rfc3339();
            let comment = json!({
                "url": format!("{}/pulls/comments/{id}", urls.api),
                "pull_request_review_id": id,
                "id": id,
                "node_id": node_id("PullRequestReviewComment", &id.to_string()),
                "diff_hunk": "",
                "path": path,
                "commit_id": head,
                "original_commit_id": head,
                "user": RepoUrls::user(&state.base_url, login),
                "body": body,
                "created_at": now,
                "updated_at": now,
                "html_url": format!("{}/pull/{number}#discussion_r{id}", urls.html),
                "pull_request_url": format!("{}/pulls/{number}", urls.api),
                "author_association": "COLLABORATOR",
                "line": line,
                "original_line": line,
                "side": "RIGHT",
                "subject_type": "line",
                "number": number,
            });
            state.review_comments.push((key.clone(), comment));
            id
        })
    }

    /// The reactions on issue comment `comment_id`, oldest first.
    pub fn reactions(&self, owner: &str, repo: &str, comment_id: u64) -> Vec<Value> {
        let key = repo_key(owner, repo);
        self.with(|state| {
            state
                .reactions
                .iter()
                .filter(|(k, r)| *k == key && r["comment_id"] == comment_id)
                .map(|(_, r)| r["reaction"].clone())
                .collect()
        })
    }

    /// The reviews posted on pull request `number`, oldest first, each as
    /// GitHub answered it plus the `comments` it was posted with.
    pub fn reviews(&self, owner: &str, repo: &str, number: u64) -> Vec<Value> {
        let key = repo_key(owner, repo);
        self.with(|state| {
            state
                .reviews
                .iter()
                .filter(|(k, r)| *k == key && r["number"] == number)
                .map(|(_, r)| {
                    let mut review = r["review"].clone();
                    review["comments"] = r["comments"].clone();
                    review
                })
                .collect()
        })
    }
}

/// `GET .../pulls/{n}/files`, `GET|POST .../pulls/{n}/reviews`, `GET
/// .../pulls/{n}/comments`, `POST .../pulls/{n}/comments/{id}/replies`,
/// `GET .../compare/{base}...{head}`, `POST .../issues/comments/{id}/reactions`.
pub(crate) fn route(state: &mut State, call: &RecordedCall, key: &str, rest: &[&str]) -> Reply {
    match (call.method.as_str(), rest) {
        ("GET", ["compare", basehead]) => return compare(state, key, basehead),
        ("PATCH", ["pulls", "comments", id]) => return update_review_comment(state, call, key, id),
        ("POST", ["issues", "comments", id, "reactions"]) => return react(state, call, key, id),
        _ => {}
    }
    let Some(number) = rest.get(1).and_then(|n| n.parse::<u64>().ok()) else {
        return not_found();
    };
    let Some(pull) = state.pulls.iter().find(|(k, p)| k == key && p["number"] == number).map(|(_, p)| p.clone()) else {
        return not_found();
    };
    match (call.method.as_str(), &rest[2..]) {
        ("GET", ["files"]) => files(state, call, key, &pull),
        ("GET", ["reviews"]) => {
            let listed: Vec<Value> = state
                .reviews
                .iter()
                .filter(|(k, r)| k == key && r["number"] == number)
                .map(|(_, r)| r["review"].clone())
                .collect();
            Reply::json(200, &Value::Array(listed))
        }
        ("POST", ["reviews"]) => create_review(state, call, key, &pull),
        ("GET", ["comments"]) => list_review_comments(state, call, key, number),
        ("POST", ["comments", id, "replies"]) => reply(state, call, key, number, id),
        _ => not_found(),
    }
}

/// One changed file: its listing entry and, for a text file, its hunks.
struct Changed {
    path: String,
    status: &'static str,
    additions: usize,
    deletions: usize,
    patch: Option<Vec<Hunk>>,
}

impl Changed {
    /// The entry GitHub lists for it (pull request files, compare files).
    fn entry(&self, urls: &RepoUrls, head: &str) -> Value {
        let mut entry = json!({
            "sha": head,
            "filename": self.path,
            "status": self.status,
            "additions": self.additions,
            "deletions": self.deletions,
            "changes": self.additions + self.deletions,
            "blob_url": format!("{}/blob/{head}/{}", urls.html, self.path),
            "raw_url": format!("{}/raw/{head}/{}", urls.html, self.path),
            "contents_url": format!("{}/contents/{}?ref={head}", urls.api, self.path),
        });
        if let Some(hunks) = &self.patch {
            entry["patch"] = Value::from(hunks.iter().map(Hunk::text).collect::<Vec<_>>().join("\n"));
        }
        entry
    }
}

fn changed_files(state: &State, key: &str, pull: &Value) -> Vec<Changed> {
    let (base, head) =
        (pull["base"]["sha"].as_str().unwrap_or_default(), pull["head"]["sha"].as_str().unwrap_or_default());
    changed_between(state, key, base, head)
}

/// The files that differ from commit `base` to commit `head`, by path.
fn changed_between(state: &State, key: &str, base: &str, head: &str) -> Vec<Changed> {
    let git = &state.repos[key].git;
    let empty = Default::default();
    let (old, new) = (git.files_at(base).unwrap_or(&empty), git.files_at(head).unwrap_or(&empty));
    let mut paths: Vec<&String> = old.keys().chain(new.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut out = Vec::new();
    for path in paths {
        let (a, b) = (old.get(path), new.get(path));
        if a.map(|e| &e.1) == b.map(|e| &e.1) {
            continue;
        }
        let bytes = |entry: Option<&(String, String)>| entry.and_then(|e| git.blob(&e.1)).unwrap_or_default().to_vec();
        let (a_bytes, b_bytes) = (bytes(a), bytes(b));
        let status = match (a, b) {
            (None, _) => "added",
            (_, None) => "removed",
            _ => "modified",
        };
        if a_bytes.contains(&0) || b_bytes.contains(&0) {
            out.push(Changed { path: path.clone(), status, additions: 0, deletions: 0, patch: None });
            continue;
        }
        let (a_text, b_text) =
            (String::from_utf8_lossy(&a_bytes).into_owned(), String::from_utf8_lossy(&b_bytes).into_owned());
        let hunks = diff(&a_text.lines().collect::<Vec<_>>(), &b_text.lines().collect::<Vec<_>>());
        let count = |c: char| hunks.iter().flat_map(|h| &h.lines).filter(|l| l.starts_with(c)).count();
        out.push(Changed {
            path: path.clone(),
            status,
            additions: count('+'),
            deletions: count('-'),
            patch: Some(hunks),
        });
    }
    out
}

fn files(state: &State, call: &RecordedCall, key: &str, pull: &Value) -> Reply {
    let per_page = call.query_param("per_page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(30).clamp(1, 100);
    let page = call.query_param("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(1).max(1);
    let repo = &state.repos[key];
    let urls = state.urls(repo);
    let head = pull["head"]["sha"].as_str().unwrap_or_default();
    let all: Vec<Changed> = changed_files(state, key, pull).into_iter().take(MAX_LISTED).collect();
    let listed: Vec<Value> =
        all.iter().skip((page - 1) * per_page).take(per_page).map(|c| c.entry(&urls, head)).collect();
    let mut reply = Reply::json(200, &Value::Array(listed));
    if page * per_page < all.len() {
        let number = pull["number"].as_u64().unwrap_or_default();
        let next = format!("{}/pulls/{number}/files?per_page={per_page}&page={}", urls.api, page + 1);
        let last =
            format!("{}/pulls/{number}/files?per_page={per_page}&page={}", urls.api, all.len().div_ceil(per_page));
        reply = reply.with_header("link", &format!("<{next}>; rel=\"next\", <{last}>; rel=\"last\""));
    }
    reply
}

fn create_review(state: &mut State, call: &RecordedCall, key: &str, pull: &Value) -> Reply {
    let Some(body) = call.json() else {
        return error(400, "Problems parsing JSON");
    };
    let event = body["event"].as_str().unwrap_or("PENDING");
    let review_state = match event {
        "COMMENT" => "COMMENTED",
        "APPROVE" => "APPROVED",
        "REQUEST_CHANGES" => "CHANGES_REQUESTED",
        "PENDING" => "PENDING",
        _ => return unprocessable(&format!("Unknown event: {event}")),
    };
    let changed = changed_files(state, key, pull);
    let comments = body["comments"].as_array().cloned().unwrap_or_default();
    for comment in &comments {
        if let Err(reason) = check_comment(&changed, comment) {
            return unprocessable(reason);
        }
    }
    let repo = &state.repos[key];
    let urls = state.urls(repo);
    let number = pull["number"].as_u64().unwrap_or_default();
    let user = RepoUrls::user(&state.base_url, &state.login_of(call));
    let id = state.fresh_id();
    let commit_id = body["commit_id"].as_str().map_or_else(|| pull["head"]["sha"].clone(), Value::from);
    let review = json!({
        "id": id,
        "node_id": node_id("PullRequestReview", &id.to_string()),
        "user": user,
        "body": body["body"].as_str().unwrap_or_default(),
        "state": review_state,
        "html_url": format!("{}/pull/{number}#pullrequestreview-{id}", urls.html),
        "pull_request_url": format!("{}/pulls/{number}", urls.api),
        "author_association": "COLLABORATOR",
        "_links": {
            "html": {"href": format!("{}/pull/{number}#pullrequestreview-{id}", urls.html)},
            "pull_request": {"href": format!("{}/pulls/{number}", urls.api)},
        },
        "submitted_at": now_rfc3339(),
        "commit_id": commit_id,
    });
    for comment in &comments {
        let hunk = changed
            .iter()
            .find(|c| Some(c.path.as_str()) == comment["path"].as_str())
            .and_then(|c| c.patch.as_ref())
            .and_then(|hunks| {
                let line = comment["line"].as_u64().unwrap_or_default();
                hunks.iter().find(|h| h.shows(line, comment["side"].as_str().unwrap_or("RIGHT")))
            })
            .map(Hunk::text)
            .unwrap_or_default();
        let placed = Placed { review_id: id, commit_id: commit_id.clone(), diff_hunk: hunk, in_reply_to: None };
        let stored = review_comment(state, call, key, number, comment, placed);
        state.review_comments.push((key.to_owned(), stored));
    }
    state.reviews.push((key.to_owned(), json!({"number": number, "review": review, "comments": comments})));
    Reply::json(200, &review)
}

/// Where a review comment sits: its review, commit and hunk, and the
/// comment it answers.
struct Placed {
    review_id: u64,
    commit_id: Value,
    diff_hunk: String,
    in_reply_to: Option<u64>,
}

/// A review comment in GitHub's wire format (`GET .../pulls/comments/{id}`).
fn review_comment(
    state: &mut State,
    call: &RecordedCall,
    key: &str,
    number: u64,
    posted: &Value,
    placed: Placed,
) -> Value {
    let id = state.fresh_id();
    let urls = state.urls(&state.repos[key]);
    let user = RepoUrls::user(&state.base_url, &state.login_of(call));
    let now = now_rfc3339();
    let mut comment = json!({
        "url": format!("{}/pulls/comments/{id}", urls.api),
        "pull_request_review_id": placed.review_id,
        "id": id,
        "node_id": node_id("PullRequestReviewComment", &id.to_string()),
        "diff_hunk": placed.diff_hunk,
        "path": posted["path"],
        "commit_id": placed.commit_id,
        "original_commit_id": placed.commit_id,
        "user": user,
        "body": posted["body"],
        "created_at": now,
        "updated_at": now,
        "html_url": format!("{}/pull/{number}#discussion_r{id}", urls.html),
        "pull_request_url": format!("{}/pulls/{number}", urls.api),
        "author_association": "COLLABORATOR",
        "_links": {
            "self": {"href": format!("{}/pulls/comments/{id}", urls.api)},
            "html": {"href": format!("{}/pull/{number}#discussion_r{id}", urls.html)},
            "pull_request": {"href": format!("{}/pulls/{number}", urls.api)},
        },
        "start_line": posted["start_line"],
        "original_start_line": posted["start_line"],
        "start_side": posted["start_side"],
        "line": posted["line"],
        "original_line": posted["line"],
        "side": posted.get("side").cloned().unwrap_or_else(|| json!("RIGHT")),
        "subject_type": "line",
        "number": number,
    });
    if let Some(parent) = placed.in_reply_to {
        comment["in_reply_to_id"] = json!(parent);
    }
    comment
}

/// `GET .../pulls/{n}/comments`: every review comment, replies included,
/// oldest first (`per_page` up to 100, default 30, `page`, `Link`).
fn list_review_comments(state: &State, call: &RecordedCall, key: &str, number: u64) -> Reply {
    let per_page = call.query_param("per_page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(30).clamp(1, 100);
    let page = call.query_param("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(1).max(1);
    let all: Vec<&Value> =
        state.review_comments.iter().filter(|(k, c)| k == key && c["number"] == number).map(|(_, c)| c).collect();
    let listed: Vec<Value> = all
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .map(|c| {
            let mut c = (*c).clone();
            c.as_object_mut().map(|o| o.remove("number"));
            c
        })
        .collect();
    let mut reply = Reply::json(200, &Value::Array(listed));
    if page * per_page < all.len() {
        let urls = state.urls(&state.repos[key]);
        let next = format!("{}/pulls/{number}/comments?per_page={per_page}&page={}", urls.api, page + 1);
        reply = reply.with_header("link", &format!("<{next}>; rel=\"next\""));
    }
    reply
}

/// `POST .../pulls/{n}/comments/{id}/replies` `{"body"}`: 201 with the
/// reply; 404 when `id` is not a review comment of this pull request.
fn reply(state: &mut State, call: &RecordedCall, key: &str, number: u64, id: &str) -> Reply {
    let Some(body) = call.json() else {
        return error(400, "Problems parsing JSON");
    };
    let Some(text) = body["body"].as_str().filter(|b| !b.is_empty()) else {
        return unprocessable("Body can't be blank");
    };
    let Some(parent) = id.parse::<u64>().ok().and_then(|id| {
        state
            .review_comments
            .iter()
            .find(|(k, c)| k == key && c["number"] == number && c["id"] == id)
            .map(|(_, c)| c.clone())
    }) else {
        return not_found();
    };
    // Replies join the thread's root, as GitHub threads them.
    let root = parent["in_reply_to_id"].as_u64().or_else(|| parent["id"].as_u64());
    let posted = json!({"path": parent["path"], "line": parent["line"], "side": parent["side"], "start_line": parent["start_line"], "start_side": parent["start_side"], "body": text});
    let placed = Placed {
        review_id: parent["pull_request_review_id"].as_u64().unwrap_or_default(),
        commit_id: parent["commit_id"].clone(),
        diff_hunk: parent["diff_hunk"].as_str().unwrap_or_default().to_owned(),
        in_reply_to: root,
    };
    let stored = review_comment(state, call, key, number, &posted, placed);
    state.review_comments.push((key.to_owned(), stored.clone()));
    stored.as_object().map_or_else(not_found, |o| {
        let mut o = o.clone();
        o.remove("number");
        Reply::json(201, &Value::Object(o))
    })
}

/// `PATCH .../pulls/comments/{id}` `{"body"}`: 200 with the edited
/// comment; only its author may edit it (403 otherwise, as GitHub answers).
fn update_review_comment(state: &mut State, call: &RecordedCall, key: &str, id: &str) -> Reply {
    let Some(body) = call.json() else {
        return error(400, "Problems parsing JSON");
    };
    let Some(text) = body["body"].as_str().filter(|b| !b.is_empty()) else {
        return unprocessable("Body can't be blank");
    };
    let caller = state.login_of(call);
    let Some((_, comment)) =
        id.parse::<u64>().ok().and_then(|id| state.review_comments.iter_mut().find(|(k, c)| k == key && c["id"] == id))
    else {
        return not_found();
    };
    if !comment["user"]["login"].as_str().is_some_and(|login| login.eq_ignore_ascii_case(&caller)) {
        return error(403, "Must have admin rights to Repository.");
    }
    comment["body"] = json!(text);
    comment["updated_at"] = json!(now_rfc3339());
    let mut answer = comment.clone();
    answer.as_object_mut().map(|o| o.remove("number"));
    Reply::json(200, &answer)
}

/// `GET .../compare/{base}...{head}`: the comparison's status, counts,
/// commits (sha only) and the files from their merge base to the head.
fn compare(state: &State, key: &str, basehead: &str) -> Reply {
    let Some((base, head)) = basehead.split_once("...") else {
        return not_found();
    };
    let git = &state.repos[key].git;
    let (Some(base), Some(head)) = (git.resolve(base), git.resolve(head)) else {
        return not_found();
    };
    let (ahead, behind) = (!git.is_ancestor(&head, &base), !git.is_ancestor(&base, &head));
    let status = match (ahead, behind) {
        (false, false) => "identical",
        (true, false) => "ahead",
        (false, true) => "behind",
        (true, true) => "diverged",
    };
    // First parents from the head back to the base (all the seeds are linear).
    let mut commits = Vec::new();
    let mut at = Some(head.clone());
    while let Some(sha) = at.filter(|s| *s != base) {
        at = git.commit(&sha).and_then(|c| c.parents.first().cloned());
        commits.push(json!({"sha": sha}));
    }
    commits.reverse();
    let urls = state.urls(&state.repos[key]);
    let files: Vec<Value> =
        changed_between(state, key, &base, &head).iter().take(300).map(|c| c.entry(&urls, &head)).collect();
    Reply::json(
        200,
        &json!({
            "url": format!("{}/compare/{base}...{head}", urls.api),
            "html_url": format!("{}/compare/{base}...{head}", urls.html),
            "status": status,
            "ahead_by": if ahead { commits.len() } else { 0 },
            "behind_by": usize::from(behind),
            "total_commits": commits.len(),
            "commits": commits,
            "files": files,
        }),
    )
}

/// `POST .../issues/comments/{id}/reactions` `{"content"}`: 201 with the
/// reaction, 200 when this user already reacted so (as GitHub answers).
fn react(state: &mut State, call: &RecordedCall, key: &str, id: &str) -> Reply {
    const CONTENTS: &[&str] = &["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"];
    let Some(body) = call.json() else {
        return error(400, "Problems parsing JSON");
    };
    let Some(content) = body["content"].as_str().filter(|c| CONTENTS.contains(c)) else {
        return unprocessable("content is not one of the reactions");
    };
    let Some(comment_id) =
        id.parse::<u64>().ok().filter(|id| state.comments.iter().any(|c| c.id == *id && c.repo == key))
    else {
        return not_found();
    };
    let login = state.login_of(call);
    if let Some((_, existing)) = state.reactions.iter().find(|(k, r)| {
        k == key
            && r["comment_id"] == comment_id
            && r["reaction"]["content"] == content
            && r["reaction"]["user"]["login"] == login.as_str()
    }) {
        return Reply::json(200, &existing["reaction"]);
    }
    let reaction_id = state.fresh_id();
    let reaction = json!({
        "id": reaction_id,
        "node_id": node_id("Reaction", &reaction_id.to_string()),
        "user": RepoUrls::user(&state.base_url, &login),
        "content": content,
        "created_at": now_rfc3339(),
    });
    state.reactions.push((key.to_owned(), json!({"comment_id": comment_id, "reaction": reaction})));
    Reply::json(201, &reaction)
}

/// GitHub's 422 for a review it cannot place: `errors` are plain strings.
fn unprocessable(reason: &str) -> Reply {
    Reply::json(
        422,
        &json!({"message": "Unprocessable Entity", "errors": [reason], "documentation_url": format!("{DOCS}/pulls/reviews#create-a-review-for-a-pull-request"), "status": "422"}),
    )
}

/// Whether GitHub would place `comment` on the diff.
fn check_comment(changed: &[Changed], comment: &Value) -> Result<(), &'static str> {
    let path = comment["path"].as_str().ok_or("Pull request review thread path is invalid")?;
    if comment["body"].as_str().is_none_or(str::is_empty) {
        return Err("Body can't be blank");
    }
    let file = changed.iter().find(|c| c.path == path).ok_or("Pull request review thread path is invalid")?;
    let hunks = file.patch.as_ref().ok_or("Line could not be resolved")?;
    let line = comment["line"].as_u64().ok_or("Line could not be resolved")?;
    let side = comment["side"].as_str().unwrap_or("RIGHT");
    let hunk = hunks.iter().position(|h| h.shows(line, side)).ok_or("Line could not be resolved")?;
    if let Some(start) = comment["start_line"].as_u64() {
        let start_side = comment["start_side"].as_str().unwrap_or(side);
        if start >= line {
            return Err("Pull request review thread start line must precede the end line.");
        }
        if !hunks[hunk].shows(start, start_side) {
            return Err("Pull request review thread start line must be part of the same hunk as the line.");
        }
    }
    Ok(())
}

/// One hunk: where it starts on each side and its `' '`/`-`/`+` lines.
struct Hunk {
    old_start: usize,
    new_start: usize,
    lines: Vec<String>,
}

impl Hunk {
    fn text(&self) -> String {
        let (old_len, new_len) = (self.side_len('+'), self.side_len('-'));
        let range = |start: usize, len: usize| if len == 1 { start.to_string() } else { format!("{start},{len}") };
        let old_start = if old_len == 0 { self.old_start - 1 } else { self.old_start };
        let new_start = if new_len == 0 { self.new_start - 1 } else { self.new_start };
        format!("@@ -{} +{} @@\n{}", range(old_start, old_len), range(new_start, new_len), self.lines.join("\n"))
    }

    /// Lines on the side that is not `skip` (`+` lines are not on the left).
    fn side_len(&self, skip: char) -> usize {
        self.lines.iter().filter(|l| !l.starts_with(skip)).count()
    }

    /// Whether `line` (1-based, of that side's file) is shown by this hunk.
    fn shows(&self, line: u64, side: &str) -> bool {
        let (start, skip) = if side == "LEFT" { (self.old_start, '+') } else { (self.new_start, '-') };
        let len = self.side_len(skip);
        let line = usize::try_from(line).unwrap_or(usize::MAX);
        line >= start && line < start + len
    }
}

/// Git's unified diff of `a` to `b`: hunks with [`CONTEXT`] lines around
/// each change, adjacent ones merged. A longest common subsequence over
/// lines (the seeds are small).
fn diff(a: &[&str], b: &[&str]) -> Vec<Hunk> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    // The edit script: (op, old index, new index).
    let mut ops: Vec<(char, usize, usize)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', i, j));
            (i, j) = (i + 1, j + 1);
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // Deletions before additions, as git prints them.
            ops.push(('-', i, j));
            i += 1;
        } else {
            ops.push(('+', i, j));
            j += 1;
        }
    }
    let changes: Vec<usize> = ops.iter().enumerate().filter(|(_, o)| o.0 != ' ').map(|(k, _)| k).collect();
    let mut hunks = Vec::new();
    let mut k = 0;
    while k < changes.len() {
        let from = changes[k].saturating_sub(CONTEXT);
        let mut to = changes[k];
        while k + 1 < changes.len() && changes[k + 1] <= to + 2 * CONTEXT + 1 {
            k += 1;
            to = changes[k];
        }
        let to = (to + CONTEXT).min(ops.len() - 1);
        let lines = ops[from..=to]
            .iter()
            .map(|&(op, i, j)| match op {
                '-' => format!("-{}", a[i]),
                '+' => format!("+{}", b[j]),
                _ => format!(" {}", a[i]),
            })
            .collect();
        let (_, old, new) = ops[from];
        hunks.push(Hunk { old_start: old + 1, new_start: new + 1, lines });
        k += 1;
    }
    hunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_read_like_git() {
        let a: Vec<&str> = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11".lines().collect();
        let mut b = a.clone();
        b[10] = "eleven";
        let hunks = diff(&a, &b);
        assert_eq!(hunks.len(), 1);
        assert_eq!(hunks[0].text(), "@@ -8,4 +8,4 @@\n 8\n 9\n 10\n-11\n+eleven");
        assert!(hunks[0].shows(11, "RIGHT") && hunks[0].shows(8, "RIGHT") && !hunks[0].shows(7, "RIGHT"));
        // An added file: one hunk from nothing.
        let added = diff(&[], &["x", "y"]);
        assert_eq!(added[0].text(), "@@ -0,0 +1,2 @@\n+x\n+y");
        // Far-apart changes make two hunks; near ones merge.
        let mut far = a.clone();
        far[0] = "one";
        far[10] = "eleven";
        assert_eq!(diff(&a, &far).len(), 2);
        let mut near = a.clone();
        near[2] = "three";
        near[8] = "nine";
        assert_eq!(diff(&a, &near).len(), 1);
    }

    #[test]
    fn comments_must_sit_on_the_diff() {
        let a: Vec<&str> = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11".lines().collect();
        let mut b = a.clone();
        b[10] = "eleven";
        let changed = [Changed {
            path: "f.txt".into(),
            status: "modified",
            additions: 1,
            deletions: 1,
            patch: Some(diff(&a, &b)),
        }];
        let at = |line: u64, start: Option<u64>| {
            let mut c = json!({"path": "f.txt", "line": line, "side": "RIGHT", "body": "x"});
            if let Some(s) = start {
                c["start_line"] = json!(s);
            }
            check_comment(&changed, &c)
        };
        assert_eq!(at(11, None), Ok(()));
        assert_eq!(at(11, Some(8)), Ok(()));
        assert_eq!(at(7, None), Err("Line could not be resolved"));
        assert_eq!(
            at(11, Some(7)),
            Err("Pull request review thread start line must be part of the same hunk as the line.")
        );
        assert_eq!(at(11, Some(11)), Err("Pull request review thread start line must precede the end line."));
        let elsewhere = json!({"path": "g.txt", "line": 1, "body": "x"});
        assert_eq!(check_comment(&changed, &elsewhere), Err("Pull request review thread path is invalid"));
    }
}
