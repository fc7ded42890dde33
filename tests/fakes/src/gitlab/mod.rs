//! [`FakeGitLab`]: a loopback stand-in for the GitLab REST API v4, held to
//! GitLab's published definition (`tests/fixtures/gitlab-api/`: excerpts of
//! `doc/api/openapi/openapi_v2.yaml`, and the operations it lacks from
//! GitLab's Grape source).
//!
//! Every request is matched against the definition first
//! ([`crate::conformance::ApiDescription`]): a path and method that are no
//! operation answer GitLab's unknown-route 404 (`{"error":"404 Not
//! Found"}`), recorded as a violation. Then, as GitLab's `APIGuard` and
//! `find_project!` do: a personal access token (`PRIVATE-TOKEN: t`,
//! `Authorization: Bearer t`, or `?private_token=`) must exist (401
//! `{"message":"401 Unauthorized"}`), must carry a scope for the method
//! (`api` for writes; `api` or `read_api` for reads; `read_user` for
//! `GET /user` and `/users`; `read_repository` for the files API's reads)
//! or get 403 `insufficient_scope`; a project
//! that does not exist, or a private one the caller is no member of, is
//! 404 `{"message":"404 Project Not Found"}`. Then a query or body that
//! does not conform is 400 `{"error": "<what>"}`, recorded in
//! [`FakeGitLab::violations`]. Conforming requests are routed by their
//! `operationId` (`routes.rs` lists the served ones) and answer in GitLab's
//! entity shapes, checked in the tests against the definition and GitLab's
//! public API JSON schemas ([`FakeGitLab::check_answer`]).
//!
//! Access levels are GitLab's (10 guest, 20 reporter, 30 developer, 40
//! maintainer, 50 owner; the namespace's user owns a personal project):
//! commits need developer (maintainer on the default, protected, branch),
//! statuses and merge requests developer, comments reporter (anyone on a
//! public project). Repositories are real bare git repositories (the
//! loopback Gitea's `git.rs`): commit shas, diffs and `git archive`
//! tarballs are git's own.

mod issues;
mod merge_requests;
mod repository;
mod request;
mod routes;
mod schemas;
mod state;
mod wire;

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::fixture::FixtureRepo;
use crate::gitea::git::{BareRepo, Change};
use crate::record::RecordedCall;
use crate::server::Loopback;
use crate::time::{now_rfc3339, now_secs};
use state::{Fault, Issue, Note, Project, State};

/// The definition the fake checks requests against (JSON, Swagger 2.0),
/// as committed in `tests/fixtures/gitlab-api/gitlab-api.v4.subset.json`:
/// check requests as the fake does with
/// `ApiDescription::swagger2(GITLAB_API_DEFINITION)?.with_rest_parameters(&[])`.
pub const GITLAB_API_DEFINITION: &str = routes::DEFINITION;

/// A fake GitLab on `127.0.0.1:<port>`; stops when dropped.
#[derive(Debug)]
pub struct FakeGitLab {
    state: Arc<Mutex<State>>,
    server: Loopback,
    dir: TempDir,
}

impl FakeGitLab {
    /// Starts a GitLab with no users, tokens or projects.
    ///
    /// # Panics
    /// When no loopback port or temp dir can be had.
    pub fn start() -> Self {
        let dir =
            tempfile::Builder::new().prefix("fake-gitlab-").tempdir().expect("a temp dir for the fake's repositories");
        let state = Arc::new(Mutex::new(State::default()));
        let handler_state = Arc::clone(&state);
        let server = Loopback::start("fake-gitlab", Arc::new(move |call| routes::handle(&handler_state, call)));
        state.lock().unwrap_or_else(PoisonError::into_inner).base_url = server.url().to_owned();
        Self { state, server, dir }
    }

    /// The instance root (`http://127.0.0.1:<port>`); the API is under
    /// `/api/v4`, web pages (`web_url`) directly under it.
    pub fn url(&self) -> String {
        self.server.url().to_owned()
    }

    /// The API root, `{url}/api/v4`.
    pub fn api_url(&self) -> String {
        format!("{}/api/v4", self.server.url())
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Seeds the public project `owner/name` of the fixture with its real
    /// history (every branch; the fixture's branch is the default);
    /// returns its head sha. Replaces a project of the same path.
    ///
    /// # Panics
    /// When `git` fails.
    pub fn add_fixture(&self, fixture: &FixtureRepo) -> String {
        let (owner, name) = (fixture.owner(), fixture.name());
        let bare = self.new_bare(owner, name, fixture.branch());
        bare.fetch_branches(&fixture.path()).unwrap_or_else(|e| panic!("add_fixture {owner}/{name}: {e}"));
        self.insert(owner, name, fixture.branch(), bare);
        fixture.head_sha()
    }

    /// Seeds the public project `path` (`namespace/name`) whose
    /// `default_branch` holds `files` (path, content) in one commit;
    /// returns its sha. Replaces a project of the same path.
    ///
    /// # Panics
    /// When `path` is not `namespace/name` or `git` fails.
    pub fn add_project(&self, path: &str, default_branch: &str, files: &[(&str, &str)]) -> String {
        let (owner, name) = split_path(path);
        let bare = self.new_bare(owner, name, default_branch);
        let changes: Vec<Change> =
            files.iter().map(|(p, c)| Change::Put((*p).to_owned(), c.as_bytes().to_vec())).collect();
        let email = format!("{}@example.com", owner.to_ascii_lowercase());
        let sha = bare
            .commit(None, &changes, "Initial commit", (owner, &email), &now_rfc3339())
            .unwrap_or_else(|e| panic!("add_project {path}: {e}"));
        bare.set_branch(default_branch, &sha).unwrap_or_else(|e| panic!("add_project {path}: {e}"));
        self.insert(owner, name, default_branch, bare);
        sha
    }

    fn new_bare(&self, owner: &str, name: &str, default_branch: &str) -> BareRepo {
        let path = self.dir.path().join(owner.to_ascii_lowercase()).join(format!("{}.git", name.to_ascii_lowercase()));
        let _ = std::fs::remove_dir_all(&path);
        BareRepo::init(&path, default_branch).unwrap_or_else(|e| panic!("{owner}/{name}: {e}"))
    }

    fn insert(&self, owner: &str, name: &str, default_branch: &str, git: BareRepo) {
        self.with(|state| {
            state.ensure_user(owner);
            let full = format!("{owner}/{name}");
            if let Some(old) = state.project_by_path(&full) {
                let id = state.projects.remove(old).id;
                state.issues.retain(|i| i.project != id);
                state.notes.retain(|n| n.project != id);
                state.statuses.retain(|s| s.project != id);
                state.merge_requests.retain(|m| m.project != id);
            }
            let id = state.fresh_id() + 1000;
            state.projects.push(Project {
                id,
                namespace: owner.to_owned(),
                path: name.to_owned(),
                default_branch: default_branch.to_owned(),
                private: false,
                git,
                members: Default::default(),
                created: now_rfc3339(),
            });
        });
    }

    /// Makes a seeded project private or public.
    ///
    /// # Panics
    /// When the project was not seeded.
    pub fn set_private(&self, path: &str, private: bool) {
        self.with(|state| expect_project(state, path).private = private);
    }

    /// The numeric id of a seeded project.
    pub fn project_id(&self, path: &str) -> Option<u64> {
        self.with(|state| state.project_by_path(path).map(|i| state.projects[i].id))
    }

    /// Registers a user account; returns its id (the same id for the same
    /// username, case-insensitively). Users also appear when a project,
    /// token, member, issue or note names them.
    pub fn add_user(&self, username: &str) -> u64 {
        self.with(|state| state.ensure_user(username).id)
    }

    /// Accepts `token` as `username`'s personal access token with GitLab
    /// `scopes` (`api`, `read_api`, `read_user`, `read_repository`, ...).
    pub fn add_token(&self, username: &str, token: &str, scopes: &[&str]) {
        self.with(|state| {
            state.ensure_user(username);
            state.tokens.retain(|t| t.token != token);
            state.tokens.push(state::Token {
                token: token.to_owned(),
                username: username.to_owned(),
                scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            });
        });
    }

    /// Sets `username`'s access level on a project (10 guest, 20 reporter,
    /// 30 developer, 40 maintainer, 50 owner; 0 removes the membership).
    ///
    /// # Panics
    /// When the project was not seeded or the level is none of these.
    pub fn set_access(&self, path: &str, username: &str, level: u32) {
        assert!(
            [0, state::GUEST, state::REPORTER, state::DEVELOPER, state::MAINTAINER, state::OWNER].contains(&level),
            "set_access: {level} is no GitLab access level (10, 20, 30, 40, 50, or 0 for none)"
        );
        self.with(|state| {
            state.ensure_user(username);
            let project = expect_project(state, path);
            if level == 0 {
                project.members.remove(&username.to_ascii_lowercase());
            } else {
                project.members.insert(username.to_ascii_lowercase(), level);
            }
        });
    }

    /// Opens an issue by `author` with `labels`; returns its iid.
    ///
    /// # Panics
    /// When the project was not seeded.
    pub fn open_issue(&self, path: &str, author: &str, title: &str, description: &str, labels: &[&str]) -> u64 {
        self.with(|state| {
            let project = expect_project(state, path).id;
            state.ensure_user(author);
            let iid = state.next_issue_iid(project);
            let now = now_rfc3339();
            let id = state.fresh_id();
            state.issues.push(Issue {
                id,
                project,
                iid,
                title: title.to_owned(),
                description: description.to_owned(),
                author: author.to_owned(),
                labels: labels.iter().map(|l| (*l).to_owned()).collect(),
                state: "opened".to_owned(),
                confidential: false,
                created: now.clone(),
                updated: now,
            });
            iid
        })
    }

    /// The body GitLab posts for an `Issue Hook` (`X-Gitlab-Event: Issue
    /// Hook`; shape of GitLab's webhook docs and
    /// `tests/fixtures/gitlab-webhooks/go-scm.issue_*.json`) for `action`
    /// (`open`, `close`, `reopen`, `update`) by `sender`. The change
    /// happens first, as on GitLab: `added_labels` are added to the issue
    /// (and reported under `changes.labels`), `close`/`reopen` set its
    /// state. The tests sign (`X-Gitlab-Token`) and post it.
    ///
    /// # Panics
    /// When the project or issue was not seeded.
    pub fn issue_hook(&self, path: &str, iid: u64, action: &str, sender: &str, added_labels: &[&str]) -> Value {
        self.with(|state| {
            let index = state.project_by_path(path).unwrap_or_else(|| panic!("project {path} was not seeded"));
            let project_id = state.projects[index].id;
            let at = state
                .issues
                .iter()
                .position(|i| i.project == project_id && i.iid == iid)
                .unwrap_or_else(|| panic!("issue {path}#{iid} was not seeded"));
            let previous = state.issues[at].labels.clone();
            for label in added_labels {
                if !state.issues[at].labels.iter().any(|l| l == label) {
                    state.issues[at].labels.push((*label).to_owned());
                }
            }
            match action {
                "close" => state.issues[at].state = "closed".to_owned(),
                "reopen" => state.issues[at].state = "opened".to_owned(),
                _ => {}
            }
            state.issues[at].updated = now_rfc3339();
            let issue = state.issues[at].clone();
            let user = state.ensure_user(sender);
            let author = state.ensure_user(&issue.author);
            let project = &state.projects[index];
            let web = wire::project_url(state, project);
            let host = state.base_url.split_once("://").map_or(state.base_url.as_str(), |(_, h)| h);
            let label = |name: &str| {
                json!({
                    "id": label_id(project_id, name),
                    "title": name,
                    "color": "#FF0000",
                    "project_id": project_id,
                    "created_at": issue.created,
                    "updated_at": issue.created,
                    "template": false,
                    "description": "",
                    "type": "ProjectLabel",
                    "group_id": null,
                })
            };
            let labels: Vec<Value> = issue.labels.iter().map(|l| label(l)).collect();
            let mut body = json!({
                "object_kind": "issue",
                "event_type": "issue",
                "user": {
                    "id": user.id,
                    "name": user.username,
                    "username": user.username,
                    "avatar_url": format!("{}/uploads/-/system/user/avatar/{}/avatar.png", state.base_url, user.id),
                    "email": "[REDACTED]",
                },
                "project": {
                    "id": project_id,
                    "name": project.path,
                    "description": "",
                    "web_url": web,
                    "avatar_url": null,
                    "git_ssh_url": format!("git@{host}:{}.git", project.full_path()),
                    "git_http_url": format!("{web}.git"),
                    "namespace": project.namespace,
                    "visibility_level": if project.private { 0 } else { 20 },
                    "path_with_namespace": project.full_path(),
                    "default_branch": project.default_branch,
                    "ci_config_path": null,
                    "homepage": web,
                    "url": format!("git@{host}:{}.git", project.full_path()),
                    "ssh_url": format!("git@{host}:{}.git", project.full_path()),
                    "http_url": format!("{web}.git"),
                },
                "object_attributes": {
                    "author_id": author.id,
                    "closed_at": null,
                    "confidential": false,
                    "created_at": issue.created,
                    "description": issue.description,
                    "due_date": null,
                    "id": issue.id,
                    "iid": issue.iid,
                    "last_edited_at": null,
                    "last_edited_by_id": null,
                    "milestone_id": null,
                    "moved_to_id": null,
                    "project_id": project_id,
                    "relative_position": null,
                    "state": issue.state,
                    "time_estimate": 0,
                    "title": issue.title,
                    "updated_at": issue.updated,
                    "updated_by_id": user.id,
                    "type": "Issue",
                    "url": format!("{web}/-/issues/{}", issue.iid),
                    "total_time_spent": 0,
                    "human_total_time_spent": null,
                    "human_time_estimate": null,
                    "assignee_ids": [],
                    "assignee_id": null,
                    "labels": labels,
                    "action": action,
                },
                "labels": labels,
                "assignees": [],
                "changes": {},
                "repository": {
                    "name": project.path,
                    "url": format!("git@{host}:{}.git", project.full_path()),
                    "description": "",
                    "homepage": web,
                },
            });
            if !added_labels.is_empty() {
                let previous: Vec<Value> = previous.iter().map(|l| label(l)).collect();
                body["changes"]["labels"] = json!({"previous": previous, "current": labels});
            }
            body
        })
    }

    /// The commit a branch points at now.
    pub fn branch_head(&self, path: &str, branch: &str) -> Option<String> {
        self.with(|state| {
            let index = state.project_by_path(path)?;
            state.projects[index].git.branch(branch)
        })
    }

    /// The bytes of `file` on `branch` (or any ref: a tag or commit sha).
    pub fn file_at(&self, path: &str, branch: &str, file: &str) -> Option<Vec<u8>> {
        self.with(|state| {
            let git = &state.projects[state.project_by_path(path)?].git;
            let sha = git.resolve(branch)?;
            git.blob(&sha, file).map(|(_, bytes)| bytes)
        })
    }

    /// Commits `content` at `file` on `branch` (created from the default
    /// branch if needed), as someone pushing; returns the commit's sha.
    ///
    /// # Panics
    /// When the project was not seeded or `git` fails.
    pub fn set_file(&self, path: &str, branch: &str, file: &str, content: &str) -> String {
        self.with(|state| {
            let project = expect_project(state, path);
            let parent = project.git.branch(branch).or_else(|| project.git.branch(&project.default_branch));
            let email = format!("{}@example.com", project.namespace.to_ascii_lowercase());
            let change = [Change::Put(file.to_owned(), content.as_bytes().to_vec())];
            let sha = project
                .git
                .commit(
                    parent.as_deref(),
                    &change,
                    &format!("Update {file}"),
                    (&project.namespace, &email),
                    &now_rfc3339(),
                )
                .unwrap_or_else(|e| panic!("set_file: {e}"));
            project.git.set_branch(branch, &sha).unwrap_or_else(|e| panic!("set_file: {e}"));
            sha
        })
    }

    /// Opens a merge request by `author` from `source_branch` (which must
    /// exist: [`set_file`](Self::set_file) makes one) into the default
    /// branch, as someone using GitLab would; returns its iid.
    ///
    /// # Panics
    /// When the project or the source branch was not seeded.
    pub fn open_merge_request(
        &self,
        path: &str,
        author: &str,
        source_branch: &str,
        title: &str,
        description: &str,
        labels: &[&str],
    ) -> u64 {
        self.with(|state| {
            let project = expect_project(state, path);
            assert!(project.git.branch(source_branch).is_some(), "branch {source_branch} of {path} was not seeded");
            let (id, target) = (project.id, project.default_branch.clone());
            state.ensure_user(author);
            let now = now_rfc3339();
            let mr = state::MergeRequest {
                id: state.fresh_id(),
                project: id,
                iid: state.next_mr_iid(id),
                title: title.to_owned(),
                description: description.to_owned(),
                source_branch: source_branch.to_owned(),
                target_branch: target,
                author: author.to_owned(),
                state: "opened".to_owned(),
                labels: labels.iter().map(|l| (*l).to_owned()).collect(),
                created: now.clone(),
                updated: now,
            };
            let iid = mr.iid;
            state.merge_requests.push(mr);
            iid
        })
    }

    /// Seeds a discussion on merge request `mr_iid` by `author`, placed at
    /// `new_line` of `file` (added or context) with the merge request's
    /// current `diff_refs`, as someone commenting on the diff would;
    /// returns the note's id and its discussion's id.
    ///
    /// # Panics
    /// When the project or merge request was not seeded.
    pub fn add_diff_note(
        &self,
        path: &str,
        mr_iid: u64,
        author: &str,
        file: &str,
        new_line: u64,
        body: &str,
    ) -> (u64, String) {
        self.with(|state| {
            let project = expect_project(state, path).id;
            let mr = state
                .merge_requests
                .iter()
                .find(|m| m.project == project && m.iid == mr_iid)
                .cloned()
                .unwrap_or_else(|| panic!("merge request {path}!{mr_iid} was not seeded"));
            state.ensure_user(author);
            let refs = wire::merge_request(state, &mr, true)["diff_refs"].clone();
            let id = state.fresh_id();
            let now = now_rfc3339();
            let position = json!({
                "base_sha": refs["base_sha"], "start_sha": refs["start_sha"], "head_sha": refs["head_sha"],
                "position_type": "text", "old_path": file, "new_path": file, "new_line": new_line, "old_line": null,
            });
            state.notes.push(Note {
                id,
                project,
                noteable_type: "MergeRequest",
                noteable_id: mr.id,
                noteable_iid: mr.iid,
                author: author.to_owned(),
                body: body.to_owned(),
                created: now.clone(),
                updated: now,
                discussion: format!("{:040x}", id + (1 << 40)),
                position: Some(position),
            });
            (id, format!("{:040x}", id + (1 << 40)))
        })
    }

    /// Marks issue `issue_iid` confidential (or not), as a member may.
    ///
    /// # Panics
    /// When the project was not seeded.
    pub fn set_confidential(&self, path: &str, issue_iid: u64, confidential: bool) {
        self.with(|state| {
            let project = expect_project(state, path).id;
            for issue in state.issues.iter_mut().filter(|i| i.project == project && i.iid == issue_iid) {
                issue.confidential = confidential;
            }
        });
    }

    /// Closes merge request `mr_iid`, as someone closing it in the web UI.
    ///
    /// # Panics
    /// When the project was not seeded.
    pub fn close_merge_request(&self, path: &str, mr_iid: u64) {
        self.with(|state| {
            let project = expect_project(state, path).id;
            for mr in state.merge_requests.iter_mut().filter(|m| m.project == project && m.iid == mr_iid) {
                "closed".clone_into(&mut mr.state);
            }
        });
    }

    /// The merge requests of a project, oldest first, as the API shows
    /// them (`Entities::MergeRequest`).
    pub fn merge_requests(&self, path: &str) -> Vec<Value> {
        self.with(|state| {
            let Some(index) = state.project_by_path(path) else { return Vec::new() };
            let id = state.projects[index].id;
            let found: Vec<_> = state.merge_requests.iter().filter(|m| m.project == id).cloned().collect();
            found.iter().map(|m| wire::merge_request(state, m, true)).collect()
        })
    }

    /// The notes on issue `issue_iid`, oldest first, as the API shows them.
    pub fn notes(&self, path: &str, issue_iid: u64) -> Vec<Value> {
        self.with(|state| {
            let Some(index) = state.project_by_path(path) else { return Vec::new() };
            let project = state.projects[index].id;
            let Some(issue) = state.issues.iter().find(|i| i.project == project && i.iid == issue_iid).cloned() else {
                return Vec::new();
            };
            let notes: Vec<Note> = state
                .notes
                .iter()
                .filter(|n| n.noteable_type == "Issue" && n.noteable_id == issue.id)
                .cloned()
                .collect();
            notes.iter().map(|n| wire::note(state, n)).collect()
        })
    }

    /// Seeds a note by `author` on issue `issue_iid`; returns its id.
    ///
    /// # Panics
    /// When the project or issue was not seeded.
    pub fn add_note(&self, path: &str, issue_iid: u64, author: &str, body: &str) -> u64 {
        self.with(|state| {
            let project = expect_project(state, path).id;
            let issue = state
                .issues
                .iter()
                .find(|i| i.project == project && i.iid == issue_iid)
                .cloned()
                .unwrap_or_else(|| panic!("issue {path}#{issue_iid} was not seeded"));
            state.ensure_user(author);
            let id = state.fresh_id();
            let now = now_rfc3339();
            state.notes.push(Note {
                id,
                project,
                noteable_type: "Issue",
                noteable_id: issue.id,
                noteable_iid: issue.iid,
                author: author.to_owned(),
                body: body.to_owned(),
                created: now.clone(),
                updated: now,
                discussion: format!("{id:040x}"),
                position: None,
            });
            id
        })
    }

    /// The discussions on merge request `mr_iid`, oldest first, as the API
    /// shows them (`Entities::Discussion`).
    pub fn discussions(&self, path: &str, mr_iid: u64) -> Vec<Value> {
        self.with(|state| {
            let Some(index) = state.project_by_path(path) else { return Vec::new() };
            let id = state.projects[index].id;
            merge_requests::discussions(state, id, mr_iid)
        })
    }

    /// The commit statuses of `sha` in a project, oldest first, as the API
    /// shows them (`Entities::CommitStatus`).
    pub fn statuses(&self, path: &str, sha: &str) -> Vec<Value> {
        self.with(|state| {
            let Some(index) = state.project_by_path(path) else { return Vec::new() };
            let id = state.projects[index].id;
            repository::statuses_of(state, id, sha)
        })
    }

    /// Every request so far, in arrival order (faulted and refused ones
    /// included).
    pub fn requests(&self) -> Vec<RecordedCall> {
        self.server.calls()
    }

    /// The requests with `method` whose path (as sent) starts with
    /// `prefix`.
    pub fn requests_matching(&self, method: &str, prefix: &str) -> Vec<RecordedCall> {
        self.requests()
            .into_iter()
            .filter(|c| c.method.eq_ignore_ascii_case(method) && c.path.starts_with(prefix))
            .collect()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.server.clear_calls();
    }

    /// Answers the next `n` requests (any) with `status` and GitLab's
    /// `{"message": "<status> <reason>"}`, before any check.
    pub fn fail_next(&self, n: usize, status: u16) {
        let reason = match status {
            500 => "Internal Server Error",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            _ => "Error",
        };
        for _ in 0..n {
            self.push_fault(
                None,
                "",
                status,
                Vec::new(),
                json!({"message": format!("{status} {reason}")}).to_string(),
                "application/json",
            );
        }
    }

    /// Answers the next `n` requests (any) as GitLab's rate limiter
    /// (Rack::Attack, `Gitlab::RackAttack`) does: 429 `Retry later`
    /// (text/plain) with `Retry-After: retry_after_secs` and the
    /// `RateLimit-*` headers.
    pub fn rate_limit_next(&self, n: usize, retry_after_secs: u64) {
        let reset = now_secs() + retry_after_secs;
        let headers = vec![
            ("retry-after".to_owned(), retry_after_secs.to_string()),
            ("ratelimit-name".to_owned(), "throttle_authenticated_api".to_owned()),
            ("ratelimit-limit".to_owned(), "2000".to_owned()),
            ("ratelimit-observed".to_owned(), "2001".to_owned()),
            ("ratelimit-remaining".to_owned(), "0".to_owned()),
            ("ratelimit-reset".to_owned(), reset.to_string()),
        ];
        for _ in 0..n {
            self.push_fault(None, "", 429, headers.clone(), "Retry later\n".to_owned(), "text/plain");
        }
    }

    /// Answers the next request with `method` whose path (as sent) starts
    /// with `path_prefix` with this status, headers and JSON body (once),
    /// before any check.
    pub fn fail_next_matching(
        &self,
        method: &str,
        path_prefix: &str,
        status: u16,
        headers: &[(&str, &str)],
        body: &str,
    ) {
        let headers = headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
        self.push_fault(Some(method.to_owned()), path_prefix, status, headers, body.to_owned(), "application/json");
    }

    fn push_fault(
        &self,
        method: Option<String>,
        path_prefix: &str,
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
        content_type: &'static str,
    ) {
        self.with(|state| {
            state.faults.push_back(Fault {
                method,
                path_prefix: path_prefix.to_owned(),
                status,
                headers,
                body,
                content_type,
            });
        });
    }

    /// While on, every request answers 503.
    pub fn set_outage(&self, outage: bool) {
        self.with(|state| state.outage = outage);
    }

    /// Every request so far that was not a conforming operation of the
    /// definition, as the violation's text (`no operation for GET
    /// /api/v4/…`, `postApiV4ProjectsIdStatusesSha: body: …`).
    pub fn violations(&self) -> Vec<String> {
        self.with(|state| state.violations.clone())
    }

    /// Panics, listing them, when any request did not conform.
    ///
    /// # Panics
    /// When [`violations`](Self::violations) is not empty.
    pub fn assert_no_violations(&self) {
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "requests to the fake GitLab that GitLab would refuse:\n{}",
            violations.join("\n")
        );
    }

    /// The operations this fake serves: `(operationId, method, sample
    /// path)`; each sample is a request of that operation.
    pub fn served_operations() -> Vec<(&'static str, &'static str, &'static str)> {
        routes::ROUTES.iter().map(|r| (r.operation, r.method, r.sample)).collect()
    }

    /// Checks a JSON answer of this fake (`method`, the path as sent,
    /// status, body) against the definition's declared response and, for
    /// the entities the definition excerpt lacks, GitLab's public API JSON
    /// schemas; non-2xx and HEAD answers pass.
    ///
    /// # Errors
    /// What did not conform.
    pub fn check_answer(method: &str, path: &str, status: u16, body: &[u8]) -> Result<(), String> {
        schemas::check_answer(method, path, status, body)
    }

    /// The operations whose answers no schema describes (neither the
    /// definition excerpt nor a public API schema).
    pub fn unchecked_operations() -> &'static [&'static str] {
        schemas::UNCHECKED
    }
}

/// A label's id, stable per project and name.
fn label_id(project: u64, name: &str) -> u64 {
    let hash = name.bytes().fold(0_u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    project * 1000 + hash % 1000
}

fn split_path(path: &str) -> (&str, &str) {
    path.split_once('/').filter(|(o, n)| !o.is_empty() && !n.is_empty() && !n.contains('/')).unwrap_or_else(|| {
        panic!("{path:?} is not a project path `namespace/name` (the fake serves personal namespaces, no subgroups)")
    })
}

fn expect_project<'a>(state: &'a mut State, path: &str) -> &'a mut Project {
    let index = state.project_by_path(path).unwrap_or_else(|| panic!("project {path} was not seeded"));
    &mut state.projects[index]
}
