//! [`FakeGitHub`]: a loopback stand-in for the GitHub REST API v3, with an
//! in-memory model of the repositories a test seeds.
//!
//! Served routes (answers in GitHub's JSON shapes, `x-ratelimit-*` headers
//! on every answer; anything else is GitHub's 404):
//!
//! - `GET /repos/{o}/{r}`, `GET /repos/{o}/{r}/commits/{ref}`,
//!   `GET /repos/{o}/{r}/contents/{path}?ref=` (files and directories)
//! - `GET /repos/{o}/{r}/git/ref/{ref}`, `GET|POST /repos/{o}/{r}/git/refs`,
//!   `PATCH|DELETE /repos/{o}/{r}/git/refs/{ref}` (fast-forward unless
//!   `force`; 422 `Reference already exists` on a duplicate create)
//! - `POST|GET /repos/{o}/{r}/git/{blobs,trees,commits}`
//! - `GET /user` (the token's user; 403 for an installation token) and
//!   `GET /app` (the App of the JWT: its `slug`)
//! - `POST /app/installations/{id}/access_tokens` (each token expires an
//!   hour later, or at [`FakeGitHub::expire_installation_tokens`]: 401
//!   "Bad credentials" from then on) and
//!   `GET /repos/{o}/{r}/installation` (the App's JWT and nothing else;
//!   404 when no installation covers the repository: `installation.rs`)
//! - `POST|PATCH|GET /repos/{o}/{r}/check-runs[/{id}]`, and
//!   `GET /repos/{o}/{r}/commits/{ref}/check-runs` (`check_name`, `status`,
//!   `filter=latest|all`, paginated; `collab.rs`); writing a check run takes
//!   a GitHub App installation's token (`ghs_`), as GitHub's checks API does:
//!   any other is 403 "You must authenticate via a GitHub App."
//! - `POST /repos/{o}/{r}/statuses/{sha}` and
//!   `GET /repos/{o}/{r}/commits/{ref}/statuses` (commit statuses)
//! - `GET|POST /repos/{o}/{r}/issues/{n}/comments` (paginated with `Link`),
//!   `GET|PATCH|DELETE /repos/{o}/{r}/issues/comments/{id}`
//! - `GET /repos/{o}/{r}/issues/{n}` (issues seeded with
//!   [`FakeGitHub::open_issue`], and pull requests as GitHub shows them there; `issues.rs`)
//! - `POST /repos/{o}/{r}/pulls`, `GET /repos/{o}/{r}/pulls/{n}`
//! - `GET /repos/{o}/{r}/pulls/{n}/files`, `GET|POST .../pulls/{n}/reviews`
//!   (pull requests seeded with [`FakeGitHub::open_pull_request`]; `pulls.rs`)
//! - `GET /repos/{o}/{r}/tarball/{ref}` (302 to a short-lived link) and the
//!   link itself (`archive.rs`)
//!
//! Issue numbers need not be seeded: comments may be posted on any number of
//! a seeded repository.
//!
//! Writes are attributed as GitHub attributes them: a comment, pull request
//! or commit made with an installation token is by the App's bot
//! ([`FakeGitHub::app_login`], `{slug}[bot]`, `type: "Bot"`); with any other
//! token by the tokens' user ([`DEFAULT_ACTOR`] unless
//! [`FakeGitHub::set_actor`]), `type: "User"`. A test plants comments by
//! anyone else with [`FakeGitHub::add_comment`].

mod archive;
mod auth;
pub use auth::verified_jwt_claims;
mod collab;
mod description;
pub use description::{OPENAPI_ENV, openapi_path};
mod gitdata;
mod identity;
mod installation;
mod issues;
mod oauth;
mod permissions;
pub use oauth::account_id;
mod pulls;
mod routes;
mod state;
mod store;
mod wire;

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::fixture::FixtureRepo;
use crate::record::RecordedCall;
use crate::server::Loopback;
use crate::time::now_rfc3339;
use state::{Fault, Repo, State, repo_key};
use store::{Commit, GitStore};

/// The user the product's tokens belong to (what `GET /user` answers, and
/// the author of comments, pull requests and commits without an author
/// written with them), unless [`FakeGitHub::set_actor`] says otherwise. A
/// plain user account, as a personal access token's owner is; writes with
/// an installation token are by [`FakeGitHub::app_login`] instead.
pub const DEFAULT_ACTOR: &str = "agent-zero-operator";

/// The registered App's slug unless [`FakeGitHub::set_app_slug`] says
/// otherwise; its bot account is `agent-zero-edge[bot]`.
const DEFAULT_APP_SLUG: &str = "agent-zero-edge";

/// A fake GitHub on `127.0.0.1:<port>`; stops when dropped.
#[derive(Debug)]
pub struct FakeGitHub {
    state: Arc<Mutex<State>>,
    server: Loopback,
}

impl FakeGitHub {
    /// Starts serving on an ephemeral loopback port.
    ///
    /// # Panics
    /// When no loopback port can be bound, or GitHub's REST description
    /// is not where [`openapi_path`] says (`cd tests/node && npm ci`).
    pub fn start() -> Self {
        if let Err(message) = description::api() {
            panic!("{message}");
        }
        let state = Arc::new(Mutex::new(State {
            actor: DEFAULT_ACTOR.to_owned(),
            app_slug: DEFAULT_APP_SLUG.to_owned(),
            ..State::default()
        }));
        let handler_state = Arc::clone(&state);
        let server = Loopback::start("fake-github", Arc::new(move |call| routes::handle(&handler_state, call)));
        state.lock().unwrap_or_else(PoisonError::into_inner).base_url = server.url().to_owned();
        Self { state, server }
    }

    /// The base URL to put in `GITHUB_API_URL` (`http://127.0.0.1:<port>`).
    pub fn url(&self) -> String {
        self.server.url().to_owned()
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Seeds a public repository whose `default_branch` holds `files`
    /// (path, content) in one commit; returns that commit's sha. Replaces a
    /// repository of the same name.
    pub fn add_repo(&self, owner: &str, repo: &str, default_branch: &str, files: &[(&str, &str)]) -> String {
        self.seed(owner, repo, default_branch, None, files)
    }

    /// Like [`add_repo`](Self::add_repo), but the head commit has the given
    /// sha: for a repository that also exists as a real local clone (the
    /// sandbox checks out the sha GitHub reports).
    pub fn add_repo_at_commit(
        &self,
        owner: &str,
        repo: &str,
        default_branch: &str,
        commit_sha: &str,
        files: &[(&str, &str)],
    ) {
        self.seed(owner, repo, default_branch, Some(commit_sha), files);
    }

    /// Seeds the fixture's repository at its real head commit and files.
    pub fn add_fixture(&self, fixture: &FixtureRepo) {
        let files = fixture.files();
        let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
        self.add_repo_at_commit(fixture.owner(), fixture.name(), fixture.branch(), &fixture.head_sha(), &files);
    }

    fn seed(&self, owner: &str, name: &str, branch: &str, sha: Option<&str>, files: &[(&str, &str)]) -> String {
        self.with(|state| {
            let mut git = GitStore::default();
            let flat = git.flat_from_files(files);
            let tree = git.put_tree(flat);
            let commit = Commit {
                tree,
                parents: Vec::new(),
                message: "Initial commit".into(),
                author_name: owner.into(),
                author_email: format!("{owner}@users.noreply.github.com"),
                date: now_rfc3339(),
            };
            let head = match sha {
                Some(sha) => {
                    git.put_commit_with_id(sha, commit);
                    sha.to_ascii_lowercase()
                }
                None => git.put_commit(commit),
            };
            git.refs.insert(format!("heads/{branch}"), head.clone());
            let id = state.fresh_id() + 100_000;
            let repo = Repo {
                owner: owner.into(),
                name: name.into(),
                id,
                default_branch: branch.into(),
                private: false,
                git,
                next_number: 1,
            };
            state.repos.insert(repo_key(owner, name), repo);
            head
        })
    }

    /// Makes a seeded repository private (anonymous reads then get 404 when a
    /// token is required).
    ///
    /// # Panics
    /// When the repository was not seeded.
    pub fn set_private(&self, owner: &str, repo: &str, private: bool) {
        self.with(|state| expect_repo(state, owner, repo).private = private);
    }

    /// Commits `content` at `path` on `branch` (creating the branch from the
    /// default branch if needed); returns the new commit's sha.
    ///
    /// # Panics
    /// When the repository was not seeded.
    pub fn set_file(&self, owner: &str, repo: &str, branch: &str, path: &str, content: &str) -> String {
        self.with(|state| {
            let repo = expect_repo(state, owner, repo);
            let parent =
                repo.git.resolve(&format!("heads/{branch}")).or_else(|| repo.git.resolve(&repo.default_branch));
            let mut flat = parent.as_deref().and_then(|p| repo.git.files_at(p)).cloned().unwrap_or_default();
            let blob = repo.git.put_blob(content.as_bytes());
            flat.insert(path.to_owned(), (store::FILE_MODE.to_owned(), blob));
            let tree = repo.git.put_tree(flat);
            let sha = repo.git.put_commit(Commit {
                tree,
                parents: parent.into_iter().collect(),
                message: format!("Update {path}"),
                author_name: repo.owner.clone(),
                author_email: format!("{}@users.noreply.github.com", repo.owner),
                date: now_rfc3339(),
            });
            repo.git.refs.insert(format!("heads/{branch}"), sha.clone());
            sha
        })
    }

    /// The commit a branch points at now.
    pub fn branch_sha(&self, owner: &str, repo: &str, branch: &str) -> Option<String> {
        self.with(|state| state.repo_mut(owner, repo)?.git.refs.get(&format!("heads/{branch}")).cloned())
    }

    /// The text of `path` at a ref (branch, tag or commit sha): to assert
    /// what the product committed.
    pub fn file(&self, owner: &str, repo: &str, git_ref: &str, path: &str) -> Option<String> {
        self.with(|state| {
            let git = &state.repo_mut(owner, repo)?.git;
            let sha = git.resolve(git_ref)?;
            let (_, blob) = git.files_at(&sha)?.get(path)?;
            git.blob(blob).map(|b| String::from_utf8_lossy(b).into_owned())
        })
    }

    /// Requires `Authorization: Bearer|token <token>` (this token or one the
    /// fake minted for an installation) on every route but anonymous reads
    /// of public repositories; others get 401 `Bad credentials` (or
    /// `Requires authentication` without a header). May be called again to
    /// accept several tokens.
    pub fn require_token(&self, token: &str) {
        self.with(|state| state.tokens.push(token.to_owned()));
    }

    /// Registers the GitHub App (`iss` of its JWTs) and, when given, the
    /// public key its RS256 signatures must verify against.
    ///
    /// # Panics
    /// When `public_key_pem` is not an RSA public key.
    pub fn register_app(&self, app_id: &str, public_key_pem: Option<&str>) {
        let key = public_key_pem.map(|pem| auth::public_key(pem).unwrap_or_else(|e| panic!("register_app: {e}")));
        self.with(|state| state.app = Some(auth::App { id: app_id.to_owned(), key }));
    }

    /// Grants the App's installations `permissions` (`("contents",
    /// "write")`, ...), as its manifest's `default_permissions` do: tokens
    /// then get these or the subset they ask for, and a route a token lacks
    /// the permission for is 403 (`permissions.rs`). Without it, tokens may
    /// do everything.
    pub fn grant_app_permissions(&self, permissions: &[(&str, &str)]) {
        let grants = permissions.iter().map(|(p, l)| ((*p).to_owned(), (*l).to_owned())).collect();
        self.with(|state| state.app_grants = Some(grants));
    }

    /// Adds an App installation on `account` that can mint tokens; it
    /// covers every repository of the account.
    pub fn add_installation(&self, installation_id: u64, account: &str) {
        self.with(|state| state.installations.insert(installation_id, account.to_owned()));
    }

    /// Limits installation `installation_id` to these repositories
    /// (`owner/name`), as an owner who picked "Only select repositories"
    /// does: `GET /repos/{o}/{r}/installation` is then 404 for the others.
    pub fn set_installation_repositories(&self, installation_id: u64, repositories: &[&str]) {
        let keys = repositories
            .iter()
            .map(|r| {
                let (owner, name) = r.split_once('/').unwrap_or((r, ""));
                repo_key(owner, name)
            })
            .collect();
        self.with(|state| state.installation_repositories.insert(installation_id, keys));
    }

    /// Makes every installation token minted so far expired, as an hour
    /// later: GitHub answers 401 "Bad credentials" to each from now on,
    /// whatever its `expires_at` said.
    pub fn expire_installation_tokens(&self) {
        let now = crate::time::now_secs();
        self.with(|state| state.minted_expiry.values_mut().for_each(|expires| *expires = now));
    }

    /// The installation tokens minted so far (for secret-leak scans).
    pub fn minted_tokens(&self) -> Vec<String> {
        self.with(|state| state.minted.clone())
    }

    /// Sets the user the configured tokens belong to (`GET /user`, and the
    /// author of what they write).
    pub fn set_actor(&self, login: &str) {
        self.with(|state| state.actor = login.to_owned());
    }

    /// Sets the App's slug (`GET /app`); its bot is `{slug}[bot]`.
    pub fn set_app_slug(&self, slug: &str) {
        self.with(|state| state.app_slug = slug.to_owned());
    }

    /// The App's bot login, `{slug}[bot]`: the author of what an
    /// installation token writes.
    pub fn app_login(&self) -> String {
        self.with(|state| state.app_login())
    }

    /// Seeds a comment on issue or pull request `number`; returns its id.
    ///
    /// # Panics
    /// When the repository was not seeded.
    pub fn add_comment(&self, owner: &str, repo: &str, number: u64, login: &str, body: &str) -> u64 {
        self.with(|state| {
            expect_repo(state, owner, repo);
            collab::insert_comment(state, &repo_key(owner, repo), number, login, body).id
        })
    }

    /// Seeds a comment written and last updated at `at` (RFC 3339, e.g.
    /// `2020-01-01T00:00:00Z`); returns its id.
    ///
    /// # Panics
    /// When the repository was not seeded.
    pub fn add_comment_at(&self, owner: &str, repo: &str, number: u64, login: &str, body: &str, at: &str) -> u64 {
        self.with(|state| {
            expect_repo(state, owner, repo);
            let id = collab::insert_comment(state, &repo_key(owner, repo), number, login, body).id;
            if let Some(comment) = state.comments.iter_mut().find(|c| c.id == id) {
                at.clone_into(&mut comment.created_at);
                at.clone_into(&mut comment.updated_at);
            }
            id
        })
    }

    /// The comments on issue or pull request `number`, as the API shows them.
    pub fn comments(&self, owner: &str, repo: &str, number: u64) -> Vec<Value> {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let comments: Vec<_> =
                state.comments.iter().filter(|c| c.repo == key && c.number == number).cloned().collect();
            comments.iter().map(|c| state.comment_json(c)).collect()
        })
    }

    /// The commit statuses of a repository, oldest first.
    pub fn statuses(&self, owner: &str, repo: &str) -> Vec<Value> {
        self.with(|state| {
            let key = repo_key(owner, repo);
            state.statuses.iter().filter(|(k, _)| *k == key).map(|(_, status)| status.clone()).collect()
        })
    }

    /// The check runs of a repository, as last updated.
    pub fn check_runs(&self, owner: &str, repo: &str) -> Vec<Value> {
        self.with(|state| {
            let key = repo_key(owner, repo);
            state.check_runs.iter().filter(|(k, _)| *k == key).map(|(_, run)| run.clone()).collect()
        })
    }

    /// The pull requests opened on a repository.
    pub fn pulls(&self, owner: &str, repo: &str) -> Vec<Value> {
        self.with(|state| {
            let key = repo_key(owner, repo);
            state.pulls.iter().filter(|(k, _)| *k == key).map(|(_, pull)| pull.clone()).collect()
        })
    }

    /// Answers the next request whose method is `method` and whose decoded
    /// path starts with `path_prefix` with this status, headers and body
    /// instead (once; faults queue in order). E.g. 403 with
    /// `x-ratelimit-remaining: 0` and `x-ratelimit-reset`, 429 with
    /// `retry-after`, or 500.
    pub fn fail_next(&self, method: &str, path_prefix: &str, status: u16, headers: &[(&str, &str)], body: &str) {
        let fault = Fault {
            method: method.to_owned(),
            path_prefix: path_prefix.to_owned(),
            status,
            headers: headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect(),
            body: body.to_owned(),
        };
        self.with(|state| state.faults.push_back(fault));
    }

    /// Starts (`true`) or ends an outage: meanwhile every request is
    /// answered 503 `Service Unavailable` and changes nothing.
    pub fn set_outage(&self, outage: bool) {
        self.with(|state| state.outage = outage);
    }

    /// Every request so far, in arrival order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.server.calls()
    }

    /// The requests with this method whose decoded path starts with
    /// `path_prefix`.
    pub fn calls_matching(&self, method: &str, path_prefix: &str) -> Vec<RecordedCall> {
        self.calls()
            .into_iter()
            .filter(|c| c.method.eq_ignore_ascii_case(method) && c.decoded_path().starts_with(path_prefix))
            .collect()
    }

    /// Forgets the recorded requests.
    pub fn clear_calls(&self) {
        self.server.clear_calls();
    }

    /// Every request so far that was no conforming operation of GitHub's
    /// REST description, as the violation's text (`no operation for GET
    /// /repos/o/r/git/refs/heads/x`, `pulls/create: body: unknown property
    /// "/labels" ...`).
    pub fn violations(&self) -> Vec<String> {
        self.with(|state| state.violations.clone())
    }

    /// Panics, listing them, when any request so far was no conforming
    /// operation of GitHub's REST description: for a test's (or the e2e
    /// harness's) end.
    ///
    /// # Panics
    /// When [`violations`](Self::violations) is not empty.
    pub fn assert_no_violations(&self) {
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "the product sent {} request(s) GitHub's REST description (@octokit/openapi) does not allow:\n  {}",
            violations.len(),
            violations.join("\n  ")
        );
    }

    /// The operations this fake serves: `(operationId, method, sample
    /// path)`; each sample is a request of that operation.
    pub fn served_operations() -> Vec<(&'static str, &'static str, &'static str)> {
        description::ROUTES.iter().map(|r| (r.operation, r.method, r.sample)).collect()
    }

    /// The routes this fake serves that are not `api.github.com` (so not
    /// in the description, not checked): `(method, path prefix)`.
    pub fn exempt_routes() -> &'static [(&'static str, &'static str)] {
        description::EXEMPT
    }
}

/// Says on stderr which requests broke GitHub's description (and which
/// asked for operations the fake does not model), so a test that passed
/// anyway (a product that tolerated the 404, 422 or 501) still shows them
/// in its output.
impl Drop for FakeGitHub {
    fn drop(&mut self) {
        let (violations, unserved) = self.with(|state| (state.violations.clone(), state.unserved.clone()));
        if !violations.is_empty() {
            eprintln!(
                "FakeGitHub: {} request(s) GitHub's REST description does not allow:\n  {}",
                violations.len(),
                violations.join("\n  ")
            );
        }
        if !unserved.is_empty() {
            eprintln!("FakeGitHub: answered 501 (not modelled):\n  {}", unserved.join("\n  "));
        }
    }
}

fn expect_repo<'a>(state: &'a mut State, owner: &str, repo: &str) -> &'a mut Repo {
    state.repo_mut(owner, repo).unwrap_or_else(|| panic!("FakeGitHub: {owner}/{repo} was not seeded (add_repo)"))
}
