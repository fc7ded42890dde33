//! [`FakeGitea`]: a loopback stand-in for the Gitea (and Forgejo) REST API
//! v1, held to Gitea's published swagger (v1.22, `tests/fixtures/gitea-api/`).
//!
//! Every request is checked against the swagger first
//! ([`crate::conformance::ApiDescription`]): a path and method that are no
//! operation answer Gitea's 404, a query or body that does not conform 422
//! naming the violation, and each violation is kept for
//! [`FakeGitea::violations`]. Conforming requests are routed by their
//! `operationId` (`routes.rs` lists the served ones); each answers in the
//! swagger's shapes under `/api/v1`, with `html_url`s under the instance
//! root. Repositories are real bare git repositories (`git.rs`): blob shas,
//! commits made by `ChangeFiles`, diffs and `git archive` tarballs are
//! git's own. A pull request's head may be a fork's branch; as Gitea, the
//! base repository keeps the head as `refs/pull/{n}/head`, where its diff
//! and archive are read.
//!
//! Access is Gitea's: tokens (`Authorization: token X` or `Bearer X`) have
//! scopes (`read:repository`, `write:issue`, `read:user`, `all`, ...;
//! `write:` implies `read:`) checked per route category before anything
//! else (403 `token does not have at least one of required scope(s):
//! [write:repository]`); an unknown token is 401. A private repository is a
//! 404 to anyone without access; public ones are readable anonymously, but
//! writes, `/user` and collaborator permissions need a token (401 `token is
//! required`), and writes need `write` on the repository (403). A write
//! whose `Content-Type` is not JSON is Gitea's binding error (422 `[]: Empty
//! Content-Type`), recorded as a violation too.

pub(crate) mod git;
mod issues;
mod pulls;
mod repos;
mod request;
mod routes;
mod state;
mod wire;

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tempfile::TempDir;

use crate::fixture::FixtureRepo;
use crate::record::RecordedCall;
use crate::server::Loopback;
use crate::time::now_rfc3339;
use git::{BareRepo, Change};
use state::{Access, Fault, Issue, Label, Repo, State, repo_key};

/// Gitea's swagger for v1.22, as committed in
/// `tests/fixtures/gitea-api/swagger.v1.22.json` (see the README there).
pub const GITEA_SWAGGER: &str = routes::SWAGGER;

/// The path parameters that take the rest of the path in Gitea's router
/// (see [`ApiDescription::with_rest_parameters`](crate::conformance::ApiDescription::with_rest_parameters)):
/// check requests as the fake does with
/// `ApiDescription::swagger2(GITEA_SWAGGER)?.with_rest_parameters(&GITEA_REST_PARAMETERS)`.
pub const GITEA_REST_PARAMETERS: [&str; 5] = routes::REST_PARAMETERS;

/// A fake Gitea on `127.0.0.1:<port>`; stops when dropped.
#[derive(Debug)]
pub struct FakeGitea {
    state: Arc<Mutex<State>>,
    server: Loopback,
    dir: TempDir,
}

impl FakeGitea {
    /// Starts a Gitea (`/api/v1/version` answers `1.22.6`).
    ///
    /// # Panics
    /// When no loopback port or temp dir can be had.
    pub fn start() -> Self {
        Self::start_flavour(false)
    }

    /// Starts a Forgejo: the same API, `/api/v1/version` answers
    /// `9.0.3+gitea-1.22.0` as Forgejo's do.
    ///
    /// # Panics
    /// When no loopback port or temp dir can be had.
    pub fn start_forgejo() -> Self {
        Self::start_flavour(true)
    }

    fn start_flavour(forgejo: bool) -> Self {
        let dir =
            tempfile::Builder::new().prefix("fake-gitea-").tempdir().expect("a temp dir for the fake's repositories");
        let state = Arc::new(Mutex::new(State { forgejo, ..State::default() }));
        let handler_state = Arc::clone(&state);
        let server = Loopback::start("fake-gitea", Arc::new(move |call| routes::handle(&handler_state, call)));
        state.lock().unwrap_or_else(PoisonError::into_inner).base_url = server.url().to_owned();
        Self { state, server, dir }
    }

    /// The instance root (`http://127.0.0.1:<port>`); the API is under
    /// `/api/v1`, web pages (`html_url`) directly under it.
    pub fn url(&self) -> String {
        self.server.url().to_owned()
    }

    /// The API root, `{url}/api/v1`.
    pub fn api_url(&self) -> String {
        format!("{}/api/v1", self.server.url())
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Seeds a public repository owned by `owner` whose `default_branch`
    /// holds `files` (path, content) in one commit; returns its sha.
    /// Replaces a repository of the same name.
    ///
    /// # Panics
    /// When `git` fails.
    pub fn add_repo(&self, owner: &str, repo: &str, default_branch: &str, files: &[(&str, &str)]) -> String {
        let bare = self.new_bare(owner, repo, default_branch);
        let changes: Vec<Change> =
            files.iter().map(|(p, c)| Change::Put((*p).to_owned(), c.as_bytes().to_vec())).collect();
        let email = format!("{}@noreply.localhost", owner.to_ascii_lowercase());
        let sha = bare
            .commit(None, &changes, "Initial commit", (owner, &email), &now_rfc3339())
            .unwrap_or_else(|e| panic!("add_repo {owner}/{repo}: {e}"));
        bare.set_branch(default_branch, &sha).unwrap_or_else(|e| panic!("add_repo {owner}/{repo}: {e}"));
        self.insert(owner, repo, default_branch, bare);
        sha
    }

    /// Seeds the fixture's repository with its real history (every branch
    /// fetched from it); returns its head sha.
    ///
    /// # Panics
    /// When `git` fails.
    pub fn add_fixture(&self, fixture: &FixtureRepo) -> String {
        let (owner, repo) = (fixture.owner(), fixture.name());
        let bare = self.new_bare(owner, repo, fixture.branch());
        bare.fetch_branches(&fixture.path()).unwrap_or_else(|e| panic!("add_fixture {owner}/{repo}: {e}"));
        self.insert(owner, repo, fixture.branch(), bare);
        fixture.head_sha()
    }

    fn new_bare(&self, owner: &str, repo: &str, default_branch: &str) -> BareRepo {
        let path = self.dir.path().join(owner.to_ascii_lowercase()).join(format!("{}.git", repo.to_ascii_lowercase()));
        let _ = std::fs::remove_dir_all(&path);
        BareRepo::init(&path, default_branch).unwrap_or_else(|e| panic!("{owner}/{repo}: {e}"))
    }

    fn insert(&self, owner: &str, name: &str, default_branch: &str, git: BareRepo) {
        self.with(|state| {
            state.ensure_user(owner);
            let key = repo_key(owner, name);
            state.issues.retain(|i| i.repo != key);
            state.pulls.retain(|p| p.repo != key && p.head_repo != key);
            state.comments.retain(|c| c.repo != key);
            let repo = Repo {
                owner: owner.to_owned(),
                name: name.to_owned(),
                id: state.fresh_id() + 1000,
                default_branch: default_branch.to_owned(),
                private: false,
                git,
                collaborators: Default::default(),
                next_index: 1,
                created: now_rfc3339(),
                fork_of: None,
            };
            state.repos.insert(key, repo);
        });
    }

    /// Makes a seeded repository private or public.
    ///
    /// # Panics
    /// When the repository was not seeded.
    pub fn set_private(&self, owner: &str, repo: &str, private: bool) {
        self.with(|state| expect_repo(state, owner, repo).private = private);
    }

    /// Commits `content` at `path` on `branch` (created from the default
    /// branch if needed), as someone pushing; returns the commit's sha.
    ///
    /// # Panics
    /// When the repository was not seeded or `git` fails.
    pub fn set_file(&self, owner: &str, repo: &str, branch: &str, path: &str, content: &str) -> String {
        let repo_name = repo;
        self.with(|state| {
            let repo = expect_repo(state, owner, repo);
            let parent = repo.git.branch(branch).or_else(|| repo.git.branch(&repo.default_branch));
            let email = format!("{}@noreply.localhost", repo.owner.to_ascii_lowercase());
            let change = [Change::Put(path.to_owned(), content.as_bytes().to_vec())];
            let sha = repo
                .git
                .commit(parent.as_deref(), &change, &format!("Update {path}"), (&repo.owner, &email), &now_rfc3339())
                .unwrap_or_else(|e| panic!("set_file: {e}"));
            repo.git.set_branch(branch, &sha).unwrap_or_else(|e| panic!("set_file: {e}"));
            state.pushed(&repo_key(owner, repo_name), branch).unwrap_or_else(|e| panic!("set_file: {e}"));
            sha
        })
    }

    /// `login` forks `owner/repo` as Gitea's fork button does: a repository
    /// `login/repo` with every branch of it, `fork` and its `parent` set,
    /// private when the base is.
    ///
    /// # Panics
    /// When the repository was not seeded or `git` fails.
    pub fn add_fork(&self, owner: &str, repo: &str, login: &str) {
        let (source, default_branch, private) = self.with(|state| {
            let base = expect_repo(state, owner, repo);
            (base.git.path().to_owned(), base.default_branch.clone(), base.private)
        });
        let bare = self.new_bare(login, repo, &default_branch);
        bare.fetch_branches(&source).unwrap_or_else(|e| panic!("add_fork {login}/{repo}: {e}"));
        self.insert(login, repo, &default_branch, bare);
        self.with(|state| {
            let fork = expect_repo(state, login, repo);
            fork.fork_of = Some(repo_key(owner, repo));
            fork.private = private;
        });
    }

    /// The text of `path` at a ref (branch, tag or commit sha).
    pub fn file(&self, owner: &str, repo: &str, git_ref: &str, path: &str) -> Option<String> {
        self.with(|state| {
            let git = &state.repo_mut(owner, repo)?.git;
            let sha = git.resolve(git_ref)?;
            git.blob(&sha, path).map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned())
        })
    }

    /// The commit a branch points at now.
    pub fn branch_sha(&self, owner: &str, repo: &str, branch: &str) -> Option<String> {
        self.with(|state| state.repo_mut(owner, repo)?.git.branch(branch))
    }

    /// Registers a user account (users also appear when a repository,
    /// token, collaborator, issue or comment names them).
    pub fn add_user(&self, login: &str) {
        self.with(|state| {
            state.ensure_user(login);
        });
    }

    /// Accepts `token` as `login`'s access token with Gitea `scopes`
    /// (`write:repository`, `read:issue`, `read:user`, `all`, ...).
    pub fn add_user_token(&self, login: &str, token: &str, scopes: &[&str]) {
        self.with(|state| {
            state.ensure_user(login);
            state.tokens.retain(|t| t.token != token);
            state.tokens.push(state::Token {
                token: token.to_owned(),
                login: login.to_owned(),
                scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            });
        });
    }

    /// Sets `login`'s access to a repository: `none`, `read`, `write`,
    /// `admin` (a collaborator's levels) or `owner`.
    ///
    /// # Panics
    /// When the repository was not seeded or the level is none of these.
    pub fn set_permission(&self, owner: &str, repo: &str, login: &str, level: &str) {
        let access = Access::parse(level).unwrap_or_else(|| panic!("set_permission: unknown level {level:?}"));
        self.with(|state| {
            state.ensure_user(login);
            expect_repo(state, owner, repo).collaborators.insert(login.to_ascii_lowercase(), access);
        });
    }

    /// Adds a label to a repository; returns its id.
    ///
    /// # Panics
    /// When the repository was not seeded.
    pub fn add_label(&self, owner: &str, repo: &str, name: &str, color: &str) -> u64 {
        self.with(|state| {
            expect_repo(state, owner, repo);
            let id = state.fresh_id();
            let key = repo_key(owner, repo);
            state.labels.retain(|l| !(l.repo == key && l.name == name));
            state.labels.push(Label {
                id,
                repo: key,
                name: name.to_owned(),
                color: color.to_owned(),
                description: String::new(),
            });
            id
        })
    }

    /// Opens issue `number` by `author` with `labels` (added to the
    /// repository when new).
    ///
    /// # Panics
    /// When the repository was not seeded.
    #[allow(clippy::too_many_arguments)]
    pub fn add_issue(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        title: &str,
        body: &str,
        author: &str,
        labels: &[&str],
    ) {
        for label in labels {
            let known = self.with(|state| {
                let key = repo_key(owner, repo);
                state.labels.iter().any(|l| l.repo == key && l.name == *label)
            });
            if !known {
                self.add_label(owner, repo, label, "#e11d21");
            }
        }
        self.with(|state| {
            expect_repo(state, owner, repo);
            state.ensure_user(author);
            let key = repo_key(owner, repo);
            state.issues.retain(|i| !(i.repo == key && i.number == number));
            let id = state.fresh_id();
            state.issues.push(Issue {
                id,
                repo: key.clone(),
                number,
                title: title.to_owned(),
                body: body.to_owned(),
                author: author.to_owned(),
                labels: labels.iter().map(|l| (*l).to_owned()).collect(),
                created: now_rfc3339(),
            });
            // Gitea records the labels an issue is opened with as its
            // author's label changes.
            for label in labels {
                state.record_label_event(&key, number, author, label, true);
            }
        });
    }

    /// `login` adds `label` to issue or pull request `number` (a label
    /// change on its timeline; the label is added to the repository when
    /// new).
    ///
    /// # Panics
    /// When the issue was not seeded.
    pub fn label_issue(&self, owner: &str, repo: &str, number: u64, login: &str, label: &str) {
        let known = self.with(|state| {
            let key = repo_key(owner, repo);
            state.labels.iter().any(|l| l.repo == key && l.name == label)
        });
        if !known {
            self.add_label(owner, repo, label, "#e11d21");
        }
        self.change_label(owner, repo, number, login, label, true);
    }

    /// `login` removes `label` from issue or pull request `number`.
    ///
    /// # Panics
    /// When the issue was not seeded.
    pub fn unlabel_issue(&self, owner: &str, repo: &str, number: u64, login: &str, label: &str) {
        self.change_label(owner, repo, number, login, label, false);
    }

    fn change_label(&self, owner: &str, repo: &str, number: u64, login: &str, label: &str, added: bool) {
        self.with(|state| {
            state.ensure_user(login);
            let key = repo_key(owner, repo);
            let labels = state.labels_of(&key, number).unwrap_or_else(|| panic!("issue {key}#{number} was not seeded"));
            // As Gitea: a change that changes nothing is not recorded.
            if labels.iter().any(|l| l == label) == added {
                return;
            }
            labels.retain(|l| l != label);
            if added {
                labels.push(label.to_owned());
            }
            state.record_label_event(&key, number, login, label, added);
        });
    }

    /// Seeds a comment by `login` on issue or pull request `number`;
    /// returns its id.
    ///
    /// # Panics
    /// When the repository was not seeded.
    pub fn add_comment(&self, owner: &str, repo: &str, number: u64, login: &str, body: &str) -> u64 {
        self.with(|state| {
            expect_repo(state, owner, repo);
            issues::insert_comment(state, &repo_key(owner, repo), number, login, body).id
        })
    }

    /// The comments on issue or pull request `number`, oldest first, as
    /// the API shows them.
    pub fn comments(&self, owner: &str, repo: &str, number: u64) -> Vec<Value> {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let comments: Vec<_> =
                state.comments.iter().filter(|c| c.repo == key && c.number == number).cloned().collect();
            comments.iter().map(|c| wire::comment(state, c)).collect()
        })
    }

    /// The commit statuses of a repository, oldest first, each with its
    /// `sha` added beside the API's fields.
    pub fn statuses(&self, owner: &str, repo: &str) -> Vec<Value> {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let statuses: Vec<_> = state.statuses.iter().filter(|s| s.repo == key).cloned().collect();
            statuses
                .iter()
                .map(|s| {
                    let mut json = wire::status(state, s);
                    json["sha"] = Value::from(s.sha.clone());
                    json
                })
                .collect()
        })
    }

    /// Opens pull request of `head` into `base` (both branches of the
    /// repository) by `author`, as Gitea would; returns its number.
    ///
    /// # Panics
    /// When the repository or a branch was not seeded.
    pub fn add_pull(&self, owner: &str, repo: &str, head: &str, base: &str, author: &str, title: &str) -> u64 {
        self.open_pull(owner, repo, &repo_key(owner, repo), head, base, author, title)
    }

    /// Opens a pull request of branch `head` of `fork_owner`'s fork of the
    /// repository (see [`FakeGitea::add_fork`]) into its `base` by
    /// `author`, as Gitea would: `head.repo` is the fork, and the base
    /// repository keeps the head's commit as `refs/pull/{n}/head` (updated
    /// by each [`FakeGitea::set_file`] on the fork's branch), where its
    /// files, diff and archive are read. Returns its number.
    ///
    /// # Panics
    /// When either repository or a branch was not seeded, or the fork is
    /// no fork of the repository.
    #[allow(clippy::too_many_arguments)]
    pub fn add_fork_pull(
        &self,
        owner: &str,
        repo: &str,
        fork_owner: &str,
        head: &str,
        base: &str,
        author: &str,
        title: &str,
    ) -> u64 {
        let fork = self.with(|state| {
            let key = repo_key(owner, repo);
            let fork = state
                .repos
                .iter()
                .find(|(_, r)| r.owner.eq_ignore_ascii_case(fork_owner) && r.fork_of.as_deref() == Some(key.as_str()));
            fork.map(|(k, _)| k.clone()).unwrap_or_else(|| panic!("add_fork_pull: {fork_owner} has no fork of {key}"))
        });
        self.open_pull(owner, repo, &fork, head, base, author, title)
    }

    #[allow(clippy::too_many_arguments)]
    fn open_pull(
        &self,
        owner: &str,
        repo: &str,
        head_repo: &str,
        head: &str,
        base: &str,
        author: &str,
        title: &str,
    ) -> u64 {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let base_exists = expect_repo(state, owner, repo).git.branch(base).is_some();
            let head_exists = state.repos.get(head_repo).is_some_and(|r| r.git.branch(head).is_some());
            assert!(head_exists && base_exists, "add_pull: {head_repo}:{head} and {base} must exist");
            state.ensure_user(author);
            let pull = state::Pull {
                id: state.fresh_id(),
                repo: key.clone(),
                number: state.next_index(&key),
                title: title.to_owned(),
                body: String::new(),
                head: head.to_owned(),
                head_repo: head_repo.to_owned(),
                base: base.to_owned(),
                labels: Vec::new(),
                author: author.to_owned(),
                created: now_rfc3339(),
                closed: false,
            };
            state.sync_pull_head(&pull).unwrap_or_else(|e| panic!("add_pull: {e}"));
            state.pulls.push(pull.clone());
            pull.number
        })
    }

    /// Replaces the text of pull request `number` (as its author editing it).
    ///
    /// # Panics
    /// When there is no such pull request.
    pub fn set_pull_body(&self, owner: &str, repo: &str, number: u64, body: &str) {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let pull = state.pulls.iter_mut().find(|p| p.repo == key && p.number == number);
            pull.unwrap_or_else(|| panic!("set_pull_body: no pull request {number}")).body = body.to_owned();
        });
    }

    /// Closes pull request `number` (not merged).
    ///
    /// # Panics
    /// When there is no such pull request.
    pub fn close_pull(&self, owner: &str, repo: &str, number: u64) {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let pull = state.pulls.iter_mut().find(|p| p.repo == key && p.number == number);
            pull.unwrap_or_else(|| panic!("close_pull: no pull request {number}")).closed = true;
        });
    }

    /// Submits a review of pull request `number` by `author` (`event`:
    /// `COMMENT`, `REQUEST_CHANGES`, `APPROVED`) on its head, with line
    /// comments `(path, new-side line, body)`, as Gitea's web UI does;
    /// returns the review's id and its comments' ids.
    ///
    /// # Panics
    /// When there is no such pull request.
    pub fn add_review(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        author: &str,
        event: &str,
        lines: &[(&str, u64, &str)],
    ) -> (u64, Vec<u64>) {
        self.submit_review(owner, repo, number, author, event, "", lines)
    }

    /// Submits a review of pull request `number` by `author` with only a
    /// body (no line comments); returns its id.
    ///
    /// # Panics
    /// When there is no such pull request.
    pub fn add_review_body(&self, owner: &str, repo: &str, number: u64, author: &str, event: &str, body: &str) -> u64 {
        self.submit_review(owner, repo, number, author, event, body, &[]).0
    }

    #[allow(clippy::too_many_arguments)]
    fn submit_review(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        author: &str,
        event: &str,
        body: &str,
        lines: &[(&str, u64, &str)],
    ) -> (u64, Vec<u64>) {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let pull = state.pulls.iter().find(|p| p.repo == key && p.number == number).cloned();
            let pull = pull.unwrap_or_else(|| panic!("add_review: no pull request {number}"));
            let head = pulls::head_sha(state, &pull);
            let lines = lines.iter().map(|(p, l, b)| ((*p).to_owned(), (*b).to_owned(), *l, 0)).collect();
            let review = pulls::insert_review(state, &pull, author, event, body, &head, lines);
            (review.id, review.comments.iter().map(|c| c.0).collect())
        })
    }

    /// The pull requests of a repository, oldest first.
    pub fn pulls(&self, owner: &str, repo: &str) -> Vec<Value> {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let pulls: Vec<_> = state.pulls.iter().filter(|p| p.repo == key).cloned().collect();
            pulls.iter().map(|p| wire::pull(state, p)).collect()
        })
    }

    /// The reviews of pull request `number`, each with its line comments
    /// under `comments`.
    pub fn reviews(&self, owner: &str, repo: &str, number: u64) -> Vec<Value> {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let reviews: Vec<_> =
                state.reviews.iter().filter(|r| r.repo == key && r.number == number).cloned().collect();
            let Some(pull) = state.pulls.iter().find(|p| p.repo == key && p.number == number).cloned() else {
                return Vec::new();
            };
            reviews
                .iter()
                .map(|r| {
                    let mut json = pulls::review_json(state, &pull, r);
                    json["comments"] = pulls::review_comments(state, &pull, r);
                    json
                })
                .collect()
        })
    }

    /// Every request so far, in arrival order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.server.calls()
    }

    /// The requests with `method` whose path starts with `prefix`.
    pub fn calls_matching(&self, method: &str, prefix: &str) -> Vec<RecordedCall> {
        self.calls()
            .into_iter()
            .filter(|c| c.method.eq_ignore_ascii_case(method) && c.path.starts_with(prefix))
            .collect()
    }

    /// Forgets the recorded requests.
    pub fn clear_calls(&self) {
        self.server.clear_calls();
    }

    /// Answers the next request with `method` whose path starts with
    /// `path_prefix` with this status, headers and body (once), before
    /// any check.
    pub fn fail_next(&self, method: &str, path_prefix: &str, status: u16, headers: &[(&str, &str)], body: &str) {
        self.with(|state| {
            state.faults.push_back(Fault {
                method: method.to_owned(),
                path_prefix: path_prefix.to_owned(),
                status,
                headers: headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect(),
                body: body.to_owned(),
            });
        });
    }

    /// While on, every request answers 503.
    pub fn set_outage(&self, outage: bool) {
        self.with(|state| state.outage = outage);
    }

    /// Every request so far that was not a conforming operation of the
    /// swagger, as the violation's text (`no operation for GET /api/v1/…`,
    /// `repoChangeFiles: body: unknown property "/files/0/contents" …`).
    pub fn violations(&self) -> Vec<String> {
        self.with(|state| state.violations.clone())
    }

    /// The operations this fake serves: `(operationId, method, sample
    /// path)`; each sample is a request of that operation.
    pub fn served_operations() -> Vec<(&'static str, &'static str, &'static str)> {
        routes::ROUTES.iter().map(|r| (r.operation, r.method, r.sample)).collect()
    }
}

fn expect_repo<'a>(state: &'a mut State, owner: &str, repo: &str) -> &'a mut Repo {
    state.repo_mut(owner, repo).unwrap_or_else(|| panic!("repository {owner}/{repo} was not seeded"))
}

impl State {
    /// The repository, if seeded.
    pub(crate) fn repo_mut(&mut self, owner: &str, name: &str) -> Option<&mut Repo> {
        self.repos.get_mut(&repo_key(owner, name))
    }

    /// The label names of issue or pull request `number` of repository `key`.
    pub(crate) fn labels_of(&mut self, key: &str, number: u64) -> Option<&mut Vec<String>> {
        if let Some(issue) = self.issues.iter_mut().find(|i| i.repo == key && i.number == number) {
            return Some(&mut issue.labels);
        }
        self.pulls.iter_mut().find(|p| p.repo == key && p.number == number).map(|p| &mut p.labels)
    }
}
