//! Gitea's JSON shapes (the swagger's `definitions`: `User`, `Repository`,
//! `Issue`, `Label`, `Comment`, `CommitStatus`, `PullRequest`,
//! `ContentsResponse`, `Branch`), and its error bodies.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::git::{CommitInfo, Entry};
use super::state::{Access, Comment, Issue, Label, Pull, Repo, State, Status, User};
use crate::server::Reply;

/// Gitea's API error body: `{"message", "url"}`, `url` its swagger page.
pub(crate) fn error(state: &State, status: u16, message: &str) -> Reply {
    Reply::json(status, &json!({"message": message, "url": format!("{}/api/swagger", state.base_url)}))
}

/// Gitea's API 404 (`ctx.NotFound()`: the locale's `error.not_found`).
pub(crate) fn not_found(state: &State) -> Reply {
    Reply::json(
        404,
        &json!({"errors": null, "message": "The target couldn't be found.", "url": format!("{}/api/swagger", state.base_url)}),
    )
}

/// 401 for a request without a usable token on a route that needs one.
pub(crate) fn token_required(state: &State) -> Reply {
    error(state, 401, "token is required")
}

/// `{html}` and `{api}` URLs of a repository.
pub(crate) fn repo_urls(state: &State, repo: &Repo) -> (String, String) {
    (
        format!("{}/{}/{}", state.base_url, repo.owner, repo.name),
        format!("{}/api/v1/repos/{}/{}", state.base_url, repo.owner, repo.name),
    )
}

/// A `User`.
pub(crate) fn user(state: &State, user: &User) -> Value {
    let base = &state.base_url;
    json!({
        "id": user.id,
        "login": user.login,
        "login_name": "",
        "source_id": 0,
        "full_name": "",
        "email": format!("{}@noreply.localhost", user.login.to_ascii_lowercase()),
        "avatar_url": format!("{base}/avatars/{}", user.id),
        "html_url": format!("{base}/{}", user.login),
        "language": "",
        "is_admin": false,
        "last_login": "0001-01-01T00:00:00Z",
        "created": user.created,
        "restricted": false,
        "active": true,
        "prohibit_login": false,
        "location": "",
        "website": "",
        "description": "",
        "visibility": "public",
        "followers_count": 0,
        "following_count": 0,
        "starred_repos_count": 0,
    })
}

/// A `User` by login (created on first mention).
pub(crate) fn user_by_login(state: &mut State, login: &str) -> Value {
    let account = state.ensure_user(login);
    user(state, &account)
}

/// A `Repository`, with `permissions` for `access`; a fork's `parent` is
/// the repository it was forked from (whose own `parent` Gitea leaves out).
pub(crate) fn repository(state: &mut State, key: &str, access: Access) -> Value {
    let parent = state.repos[key].fork_of.clone().map_or(Value::Null, |parent| {
        let mut json = repository_fields(state, &parent, access);
        json["parent"] = Value::Null;
        json
    });
    let mut json = repository_fields(state, key, access);
    json["parent"] = parent;
    json
}

fn repository_fields(state: &mut State, key: &str, access: Access) -> Value {
    let owner_login = state.repos[key].owner.clone();
    let owner = user_by_login(state, &owner_login);
    let repo = &state.repos[key];
    let (html, api) = repo_urls(state, repo);
    let open_issues = state.issues.iter().filter(|i| i.repo == key).count();
    let open_pulls = state.pulls.iter().filter(|p| p.repo == key).count();
    let forks = state.repos.values().filter(|r| r.fork_of.as_deref() == Some(key)).count();
    json!({
        "id": repo.id,
        "owner": owner,
        "name": repo.name,
        "full_name": format!("{}/{}", repo.owner, repo.name),
        "description": "",
        "empty": false,
        "private": repo.private,
        "fork": repo.fork_of.is_some(),
        "template": false,
        "parent": null,
        "mirror": false,
        "size": 1,
        "language": "",
        "languages_url": format!("{api}/languages"),
        "html_url": html,
        "url": api,
        "link": "",
        "ssh_url": format!("git@127.0.0.1:{}/{}.git", repo.owner, repo.name),
        "clone_url": format!("{html}.git"),
        "original_url": "",
        "website": "",
        "stars_count": 0,
        "forks_count": forks,
        "watchers_count": 1,
        "open_issues_count": open_issues,
        "open_pr_counter": open_pulls,
        "release_counter": 0,
        "default_branch": repo.default_branch,
        "archived": false,
        "created_at": repo.created,
        "updated_at": repo.created,
        "archived_at": "1970-01-01T00:00:00Z",
        "permissions": {"admin": access >= Access::Admin, "push": access >= Access::Write, "pull": access >= Access::Read},
        "has_issues": true,
        "internal_tracker": {"enable_time_tracker": true, "allow_only_contributors_to_track_time": true, "enable_issue_dependencies": true},
        "has_wiki": true,
        "has_pull_requests": true,
        "has_projects": true,
        "has_releases": true,
        "has_packages": true,
        "has_actions": true,
        "ignore_whitespace_conflicts": false,
        "allow_merge_commits": true,
        "allow_rebase": true,
        "allow_rebase_explicit": true,
        "allow_squash_merge": true,
        "allow_fast_forward_only_merge": true,
        "allow_rebase_update": true,
        "default_delete_branch_after_merge": false,
        "default_merge_style": "merge",
        "default_allow_maintainer_edit": false,
        "avatar_url": "",
        "internal": false,
        "mirror_interval": "",
        "object_format_name": "sha1",
        "mirror_updated": "0001-01-01T00:00:00Z",
        "repo_transfer": null,
    })
}

/// A `Label` (Gitea sends the colour without `#`).
pub(crate) fn label(state: &State, label: &Label) -> Value {
    let (owner, name) = label.repo.split_once('/').unwrap_or_default();
    json!({
        "id": label.id,
        "name": label.name,
        "exclusive": false,
        "is_archived": false,
        "color": label.color.trim_start_matches('#'),
        "description": label.description,
        "url": format!("{}/api/v1/repos/{owner}/{name}/labels/{}", state.base_url, label.id),
    })
}

/// The `Label`s of repository `key` named in `names`.
pub(crate) fn labels(state: &State, key: &str, names: &[String]) -> Vec<Value> {
    names
        .iter()
        .filter_map(|name| state.labels.iter().find(|l| l.repo == key && l.name == *name))
        .map(|l| label(state, l))
        .collect()
}

/// An `Issue` (`pull_request` null: pull requests are [`pull`]).
pub(crate) fn issue(state: &mut State, issue: &Issue) -> Value {
    let author = user_by_login(state, &issue.author);
    let repo = &state.repos[&issue.repo];
    let (html, api) = repo_urls(state, repo);
    let labels = labels(state, &issue.repo, &issue.labels);
    let comments = state.comments.iter().filter(|c| c.repo == issue.repo && c.number == issue.number).count();
    json!({
        "id": issue.id,
        "url": format!("{api}/issues/{}", issue.number),
        "html_url": format!("{html}/issues/{}", issue.number),
        "number": issue.number,
        "user": author,
        "original_author": "",
        "original_author_id": 0,
        "title": issue.title,
        "body": issue.body,
        "ref": "",
        "assets": [],
        "labels": labels,
        "milestone": null,
        "assignee": null,
        "assignees": null,
        "state": "open",
        "is_locked": false,
        "comments": comments,
        "created_at": issue.created,
        "updated_at": issue.created,
        "closed_at": null,
        "due_date": null,
        "pull_request": null,
        "repository": {"id": repo.id, "name": repo.name, "owner": repo.owner, "full_name": format!("{}/{}", repo.owner, repo.name)},
        "pin_order": 0,
    })
}

/// A `Comment`.
pub(crate) fn comment(state: &mut State, comment: &Comment) -> Value {
    let author = user_by_login(state, &comment.author);
    let repo = &state.repos[&comment.repo];
    let (html, _) = repo_urls(state, repo);
    let is_pull = state.pulls.iter().any(|p| p.repo == comment.repo && p.number == comment.number);
    let page = if is_pull { "pulls" } else { "issues" };
    json!({
        "id": comment.id,
        "html_url": format!("{html}/{page}/{}#issuecomment-{}", comment.number, comment.id),
        "pull_request_url": if is_pull { format!("{html}/pulls/{}", comment.number) } else { String::new() },
        "issue_url": if is_pull { String::new() } else { format!("{html}/issues/{}", comment.number) },
        "user": author,
        "original_author": "",
        "original_author_id": 0,
        "body": comment.body,
        "assets": [],
        "created_at": comment.created,
        "updated_at": comment.updated,
    })
}

/// A `TimelineComment` of type `label`: `body` `"1"` when the label was
/// added, empty when removed.
pub(crate) fn label_event(state: &mut State, event: &super::state::LabelEvent) -> Value {
    let author = user_by_login(state, &event.login);
    let label = state.labels.iter().find(|l| l.repo == event.repo && l.name == event.label).cloned();
    let repo = &state.repos[&event.repo];
    let (html, _) = repo_urls(state, repo);
    let is_pull = state.pulls.iter().any(|p| p.repo == event.repo && p.number == event.number);
    let page = if is_pull { "pulls" } else { "issues" };
    let mut item = json!({
        "id": event.id,
        "type": "label",
        "html_url": format!("{html}/{page}/{}#issuecomment-{}", event.number, event.id),
        "issue_url": if is_pull { String::new() } else { format!("{html}/issues/{}", event.number) },
        "pull_request_url": if is_pull { format!("{html}/pulls/{}", event.number) } else { String::new() },
        "user": author,
        "body": if event.added { "1" } else { "" },
        "created_at": event.created,
        "updated_at": event.created,
    });
    if let Some(label) = label {
        item["label"] = self::label(state, &label);
    }
    item
}

/// A `CommitStatus`.
pub(crate) fn status(state: &mut State, status: &Status) -> Value {
    let creator = user_by_login(state, &status.creator);
    let repo = &state.repos[&status.repo];
    let (_, api) = repo_urls(state, repo);
    json!({
        "id": status.id,
        "status": status.state,
        "target_url": status.target_url,
        "description": status.description,
        "url": format!("{api}/statuses/{}", status.sha),
        "context": status.context,
        "creator": creator,
        "created_at": status.created,
        "updated_at": status.created,
    })
}

/// A `PullRequest`, as Gitea's `ToAPIPullRequest`: `base` is the base
/// repository's branch; `head` the head repository's (this one or a
/// fork: `repo_id` and `repo` are the fork's, `label` and `ref` the bare
/// branch name), its `sha` the branch's tip, or `refs/pull/{n}/head` once
/// the branch is gone.
pub(crate) fn pull(state: &mut State, pull: &Pull) -> Value {
    let author = user_by_login(state, &pull.author);
    let repo_json = repository(state, &pull.repo, Access::Read);
    let head_repo_json = repository(state, &pull.head_repo, Access::Read);
    let repo = &state.repos[&pull.repo];
    let head_repo = &state.repos[&pull.head_repo];
    let (html, _) = repo_urls(state, repo);
    let (merge_base, pull_head) = state.pull_commits(pull);
    let head_branch_sha = head_repo.git.branch(&pull.head);
    let head_ref = if head_branch_sha.is_some() { pull.head.clone() } else { super::state::pull_ref(pull.number) };
    let head_sha = head_branch_sha.unwrap_or(pull_head.clone());
    let base_sha = repo.git.branch(&pull.base).unwrap_or_default();
    let changed = repo.git.changed(&merge_base, &pull_head);
    let comments = state.comments.iter().filter(|c| c.repo == pull.repo && c.number == pull.number).count();
    let review_comments: usize =
        state.reviews.iter().filter(|r| r.repo == pull.repo && r.number == pull.number).map(|r| r.comments.len()).sum();
    // Gitea's `IsWorkInProgress`: a title starting with one of the default
    // `WORK_IN_PROGRESS_PREFIXES`, in any case.
    let draft = ["WIP:", "[WIP]"].iter().any(|p| pull.title.to_uppercase().starts_with(p));
    let base = json!({"label": pull.base, "ref": pull.base, "sha": base_sha, "repo_id": repo.id, "repo": repo_json});
    let head =
        json!({"label": pull.head, "ref": head_ref, "sha": head_sha, "repo_id": head_repo.id, "repo": head_repo_json});
    json!({
        "id": pull.id,
        "url": format!("{html}/pulls/{}", pull.number),
        "number": pull.number,
        "user": author,
        "title": pull.title,
        "body": pull.body,
        "labels": labels(state, &pull.repo, &pull.labels),
        "milestone": null,
        "assignee": null,
        "assignees": null,
        "requested_reviewers": null,
        "state": if pull.closed { "closed" } else { "open" },
        "draft": draft,
        "is_locked": false,
        "comments": comments,
        "review_comments": review_comments,
        "additions": changed.iter().map(|c| c.additions).sum::<u64>(),
        "deletions": changed.iter().map(|c| c.deletions).sum::<u64>(),
        "changed_files": changed.len(),
        "html_url": format!("{html}/pulls/{}", pull.number),
        "diff_url": format!("{html}/pulls/{}.diff", pull.number),
        "patch_url": format!("{html}/pulls/{}.patch", pull.number),
        "mergeable": true,
        "merged": false,
        "merged_at": null,
        "merge_commit_sha": null,
        "merged_by": null,
        "allow_maintainer_edit": false,
        "base": base,
        "head": head,
        "merge_base": merge_base,
        "due_date": null,
        "created_at": pull.created,
        "updated_at": pull.created,
        "closed_at": if pull.closed { Value::from(pull.created.clone()) } else { Value::Null },
        "pin_order": 0,
    })
}

/// A `ContentsResponse` for a file (with `content`) or a listing entry.
pub(crate) fn contents(
    state: &State,
    repo: &Repo,
    entry: &Entry,
    git_ref: &str,
    last_commit: &str,
    content: Option<&[u8]>,
) -> Value {
    let (html, api) = repo_urls(state, repo);
    let kind = match entry.kind.as_str() {
        "tree" => "dir",
        "commit" => "submodule",
        _ if entry.mode == "120000" => "symlink",
        _ => "file",
    };
    let name = entry.path.rsplit('/').next().unwrap_or(&entry.path);
    let url = format!("{api}/contents/{}?ref={}", entry.path, crate::record::percent_encode(git_ref));
    let git_url =
        if kind == "dir" { format!("{api}/git/trees/{}", entry.sha) } else { format!("{api}/git/blobs/{}", entry.sha) };
    let html_url = format!("{html}/src/branch/{git_ref}/{}", entry.path);
    let download_url =
        if kind == "file" { Value::from(format!("{html}/raw/branch/{git_ref}/{}", entry.path)) } else { Value::Null };
    json!({
        "name": name,
        "path": entry.path,
        "sha": entry.sha,
        "last_commit_sha": last_commit,
        "type": kind,
        "size": entry.size,
        "encoding": content.map(|_| "base64"),
        "content": content.map(|c| STANDARD.encode(c)),
        "target": null,
        "url": url,
        "html_url": html_url,
        "git_url": git_url,
        "download_url": download_url,
        "submodule_git_url": null,
        "_links": {"self": url, "git": git_url, "html": html_url},
    })
}

/// A `PayloadCommit` (a branch's head).
pub(crate) fn payload_commit(state: &State, repo: &Repo, info: &CommitInfo) -> Value {
    let (html, _) = repo_urls(state, repo);
    json!({
        "id": info.sha,
        "message": info.message,
        "url": format!("{html}/commit/{}", info.sha),
        "author": {"name": info.author_name, "email": info.author_email, "username": ""},
        "committer": {"name": info.committer_name, "email": info.committer_email, "username": ""},
        "verification": {"verified": false, "reason": "gpg.error.not_signed_commit", "signature": "", "signer": null, "payload": ""},
        "timestamp": info.committer_date,
        "added": null,
        "removed": null,
        "modified": null,
    })
}
