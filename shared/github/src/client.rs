//! A small GitHub REST client over the [`HttpClient`] port: the repository,
//! a branch's head commit, a file at a commit, and installation tokens.
//!
//! Every request carries `Accept: application/vnd.github+json`,
//! `X-GitHub-Api-Version: 2022-11-28`, a `User-Agent` and a timeout. Errors
//! name the operation and status, and at most GitHub's short `message`
//! (capped, dropped if it would contain the token): never the token, never
//! the response body.

use std::rc::Rc;

use agent_zero_contracts::is_repository_relative_path;
use agent_zero_ports::{HttpClient, HttpError, RequestTimeout};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use thiserror::Error;

use agent_zero_ports::Secret;

use crate::token_cache::TokenCache;

/// `GITHUB_API_URL` when unset.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// The REST API version requested.
pub const API_VERSION: &str = "2022-11-28";
/// Per-request deadline unless configured otherwise.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
const MAX_MESSAGE_BYTES: usize = 200;
/// The most bytes one GitHub API answer may carry (JSON pages, file contents).
const MAX_RESPONSE_BYTES: u64 = 8 * 1024 * 1024;

/// Why a GitHub API call failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum GitHubError {
    /// `GITHUB_API_URL` is not an absolute `http(s)` URL without query.
    #[error("invalid GITHUB_API_URL: {reason}")]
    InvalidBaseUrl { reason: &'static str },
    /// An owner, repository, ref or path that cannot be put in a URL safely.
    #[error("invalid {what} `{value}`")]
    InvalidName { what: &'static str, value: String },
    /// The host could not deliver the request.
    #[error("GitHub {operation}: {source}")]
    Transport { operation: &'static str, source: HttpError },
    /// GitHub answered with a non-success status.
    #[error("GitHub {operation} answered {status}{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Status { operation: &'static str, status: u16, message: Option<String> },
    /// The response did not have the documented shape.
    #[error("GitHub {operation} returned an unexpected body at `{path}`: {reason}")]
    Decode { operation: &'static str, path: String, reason: String },
    /// The path names a directory, symlink or submodule, not a file.
    #[error("`{path}` is a {kind}, not a file")]
    NotAFile { path: String, kind: String },
    /// The file is over the caller's limit, or too large for the contents
    /// API to inline (it then sends no content).
    #[error("`{path}` is {size} bytes, over the {limit}-byte limit")]
    FileTooLarge { path: String, size: u64, limit: u64 },
}

/// Where and how to reach the API (operator configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiConfig {
    base_url: String,
    user_agent: String,
    timeout_ms: u64,
}

impl ApiConfig {
    /// From `GITHUB_API_URL` (`None` or empty: [`DEFAULT_API_URL`]). GitHub
    /// Enterprise Server is `https://HOST/api/v3`; tests use loopback `http`.
    pub fn new(base_url: Option<&str>, user_agent: &str) -> Result<Self, GitHubError> {
        let base = base_url.map(str::trim).filter(|b| !b.is_empty()).unwrap_or(DEFAULT_API_URL);
        let base = base.trim_end_matches('/');
        let rest = base
            .strip_prefix("https://")
            .or_else(|| base.strip_prefix("http://"))
            .ok_or(GitHubError::InvalidBaseUrl { reason: "must start with https:// or http://" })?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(GitHubError::InvalidBaseUrl { reason: "has no host" });
        }
        if rest.contains(['?', '#', '@', ' ']) {
            return Err(GitHubError::InvalidBaseUrl {
                reason: "must not carry a query, fragment, user info or spaces",
            });
        }
        let user_agent = if user_agent.trim().is_empty() { "agent-zero-edge" } else { user_agent.trim() };
        Ok(Self { base_url: base.to_owned(), user_agent: user_agent.to_owned(), timeout_ms: DEFAULT_TIMEOUT_MS })
    }

    /// Sets the per-request timeout.
    pub fn with_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = timeout_ms;
        self
    }

    /// The base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

/// What the client needs to know about a repository.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct RepositoryInfo {
    pub full_name: String,
    pub default_branch: String,
    #[serde(default)]
    pub private: bool,
}

/// A file read through the contents API.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileContents {
    pub path: String,
    /// The blob sha.
    pub sha: String,
    pub bytes: Vec<u8>,
}

/// One entry of a pull request's changed files, as GitHub lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct PullRequestFile {
    pub filename: String,
    /// `added`, `removed`, `modified`, `renamed`, `copied`, `changed`, `unchanged`.
    pub status: String,
    #[serde(default)]
    pub additions: u64,
    #[serde(default)]
    pub deletions: u64,
    /// The unified-diff hunks; absent for a binary file or a diff too large.
    #[serde(default)]
    pub patch: Option<String>,
    #[serde(default)]
    pub previous_filename: Option<String>,
}

/// A pull request's changed files, and whether GitHub lists more.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PullRequestFiles {
    pub files: Vec<PullRequestFile>,
    /// More files follow than were read.
    pub more: bool,
}

/// What a command needs of a pull request (`GET .../pulls/{n}`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PullRequestInfo {
    pub head_sha: String,
    pub base_sha: String,
    /// `state` is `open` (not closed, not merged).
    pub open: bool,
}

#[derive(Deserialize)]
struct PullRequestWire {
    state: String,
    head: ShaWire,
    base: ShaWire,
}

#[derive(Deserialize)]
struct ShaWire {
    sha: String,
}

/// Two commits compared, as GitHub answers `GET .../compare/{base}...{head}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Comparison {
    /// `ahead`, `behind`, `identical` or `diverged`.
    pub status: String,
    /// The files changed from the merge base to the head (at most 300).
    #[serde(default)]
    pub files: Vec<PullRequestFile>,
}

/// A freshly minted installation access token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InstallationToken {
    pub token: Secret,
    /// `expires_at` as GitHub sent it (RFC 3339).
    pub expires_at: String,
}

/// Who a [`GitHubClient`] calls GitHub as: what GitHub lets it write
/// depends on it (only a GitHub App's installation may write check runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// No token: public repositories only, nothing written.
    Anonymous,
    /// A token of a person or an OAuth App (`GITHUB_TOKEN`), or an App's
    /// own JWT.
    Token,
    /// A GitHub App installation's token.
    Installation,
}

/// A GitHub REST client for one caller identity.
pub struct GitHubClient<'a, H> {
    http: &'a H,
    config: &'a ApiConfig,
    token: Option<Secret>,
    caller: Caller,
    /// Where an installation token came from: forgotten there when GitHub
    /// answers 401 to it.
    cached_in: Option<(Rc<TokenCache>, u64)>,
}

impl<H> std::fmt::Debug for GitHubClient<'_, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubClient")
            .field("base_url", &self.config.base_url)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl<'a, H: HttpClient> GitHubClient<'a, H> {
    /// An unauthenticated client (public repositories, low rate limit).
    pub fn new(http: &'a H, config: &'a ApiConfig) -> Self {
        Self { http, config, token: None, caller: Caller::Anonymous, cached_in: None }
    }

    /// The same client, sending `token` as `Authorization: Bearer`: a
    /// person's or an OAuth App's token, or an App's JWT.
    pub fn with_token(mut self, token: Secret) -> Self {
        self.token = Some(token);
        self.caller = Caller::Token;
        self
    }

    /// The same client, sending a GitHub App installation's `token`.
    pub fn with_installation_token(mut self, token: Secret) -> Self {
        self.token = Some(token);
        self.caller = Caller::Installation;
        self
    }

    /// The same client, forgetting its installation token in `cache` (as
    /// `installation`'s) when GitHub answers 401 to it: the call fails, and
    /// the next client mints a fresh token rather than sending the refused
    /// one again until its expiry.
    pub fn forgetting_in(mut self, cache: Rc<TokenCache>, installation: u64) -> Self {
        self.cached_in = Some((cache, installation));
        self
    }

    /// Who this client calls GitHub as.
    pub fn caller(&self) -> Caller {
        self.caller
    }

    /// The HTTP port and configuration, for building a sibling client.
    pub fn parts(&self) -> (&'a H, &'a ApiConfig) {
        (self.http, self.config)
    }

    /// `GET /repos/{owner}/{repo}`.
    pub async fn repository(&self, owner: &str, repo: &str) -> Result<RepositoryInfo, GitHubError> {
        const OP: &str = "get repository";
        let url = format!("{}/repos/{}", self.config.base_url, repo_path(owner, repo)?);
        let response = self.send(OP, http::Method::GET, &url, None, self.token.as_ref()).await?;
        let response = self.success(OP, response)?;
        decode(OP, response.body())
    }

    /// The commit sha `branch` points at: `GET /repos/{o}/{r}/git/ref/heads/{branch}`.
    pub async fn branch_head(&self, owner: &str, repo: &str, branch: &str) -> Result<String, GitHubError> {
        const OP: &str = "get branch ref";
        check_ref(branch)?;
        let url = format!(
            "{}/repos/{}/git/ref/heads/{}",
            self.config.base_url,
            repo_path(owner, repo)?,
            encode(branch, true)
        );
        let response = self.send(OP, http::Method::GET, &url, None, self.token.as_ref()).await?;
        let reference: GitRef = decode(OP, self.success(OP, response)?.body())?;
        if reference.object.kind != "commit" || !is_sha(&reference.object.sha) {
            return Err(GitHubError::Decode {
                operation: OP,
                path: "object".into(),
                reason: format!("expected a commit, got a {}", capped(&reference.object.kind)),
            });
        }
        Ok(reference.object.sha)
    }

    /// The file at `path` in commit or ref `git_ref`, at most `max_bytes`:
    /// `GET /repos/{o}/{r}/contents/{path}?ref=`. `Ok(None)` when there is no
    /// such file (404).
    pub async fn file_at(
        &self,
        owner: &str,
        repo: &str,
        path: &str,
        git_ref: &str,
        max_bytes: u64,
    ) -> Result<Option<FileContents>, GitHubError> {
        const OP: &str = "get contents";
        if !is_repository_relative_path(path) || path.ends_with('/') {
            return Err(GitHubError::InvalidName { what: "path", value: capped(path) });
        }
        check_ref(git_ref)?;
        let url = format!(
            "{}/repos/{}/contents/{}?ref={}",
            self.config.base_url,
            repo_path(owner, repo)?,
            encode(path, true),
            encode(git_ref, false)
        );
        let response = self.send(OP, http::Method::GET, &url, None, self.token.as_ref()).await?;
        if response.status() == http::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let body = self.success(OP, response)?.into_body();
        if body.first() == Some(&b'[') {
            return Err(GitHubError::NotAFile { path: path.to_owned(), kind: "directory".into() });
        }
        let entry: ContentEntry = decode(OP, &body)?;
        if entry.kind != "file" {
            return Err(GitHubError::NotAFile { path: path.to_owned(), kind: capped(&entry.kind) });
        }
        if entry.size > max_bytes {
            return Err(GitHubError::FileTooLarge { path: path.to_owned(), size: entry.size, limit: max_bytes });
        }
        if entry.encoding.as_deref() != Some("base64") {
            // Over 1 MB the API answers `"encoding": "none"` and no content.
            return Err(GitHubError::FileTooLarge { path: path.to_owned(), size: entry.size, limit: max_bytes });
        }
        // The API wraps the content at 60 columns: the line breaks go first.
        let packed: Vec<u8> = entry.content.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        let bytes = STANDARD.decode(packed).map_err(|e| GitHubError::Decode {
            operation: OP,
            path: "content".into(),
            reason: e.to_string(),
        })?;
        Ok(Some(FileContents { path: entry.path, sha: entry.sha, bytes }))
    }

    /// `POST /app/installations/{id}/access_tokens`, authenticated with the
    /// App's JWT.
    pub async fn create_installation_token(
        &self,
        app_jwt: &Secret,
        installation_id: u64,
    ) -> Result<InstallationToken, GitHubError> {
        const OP: &str = "create installation token";
        let url = format!("{}/app/installations/{installation_id}/access_tokens", self.config.base_url);
        let response = self.send(OP, http::Method::POST, &url, Some(Vec::new()), Some(app_jwt)).await?;
        let response = self.success(OP, response)?;
        let minted: MintedToken = decode(OP, response.body())?;
        Ok(InstallationToken { token: Secret::new(minted.token), expires_at: minted.expires_at })
    }

    /// The short-lived download link of the tarball of `sha`:
    /// `GET /repos/{o}/{r}/tarball/{sha}` answers `302` with a `Location`
    /// that carries its own token, scoped to that archive and valid for
    /// minutes; the redirect is not followed. A fork pull request's head is
    /// served through the base repository; GitHub Enterprise Server through
    /// the configured `GITHUB_API_URL`. The link is a credential of its
    /// own: hold it as a [`Secret`].
    pub async fn archive_link(&self, owner: &str, repo: &str, sha: &str) -> Result<Secret, GitHubError> {
        const OP: &str = "get archive link";
        check_ref(sha)?;
        let url = format!("{}/repos/{}/tarball/{}", self.config.base_url, repo_path(owner, repo)?, encode(sha, true));
        let response = self.send(OP, http::Method::GET, &url, None, self.token.as_ref()).await?;
        if !response.status().is_redirection() {
            let response = self.success(OP, response)?;
            return Err(GitHubError::Status {
                operation: OP,
                status: response.status().as_u16(),
                message: Some("expected a redirect to the archive".into()),
            });
        }
        let location = response.headers().get(http::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or_default();
        if !(location.starts_with("https://") || location.starts_with("http://")) {
            return Err(GitHubError::Decode {
                operation: OP,
                path: "Location".into(),
                reason: "not an absolute http(s) URL".into(),
            });
        }
        Ok(Secret::new(location))
    }

    /// The files pull request `number` changes (`base...head`), with their
    /// patches: `GET /repos/{o}/{r}/pulls/{n}/files?per_page=100`, following
    /// `Link: rel="next"` (on this API only) for at most `max_files`. GitHub
    /// itself lists at most 3,000 files and sends no `patch` for a binary
    /// file or a diff too large for it.
    pub async fn pull_request_files(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        max_files: usize,
    ) -> Result<PullRequestFiles, GitHubError> {
        const OP: &str = "list pull request files";
        let mut url =
            format!("{}/repos/{}/pulls/{number}/files?per_page=100", self.config.base_url, repo_path(owner, repo)?);
        let mut listed = PullRequestFiles::default();
        loop {
            let response = self.send(OP, http::Method::GET, &url, None, self.token.as_ref()).await?;
            let response = self.success(OP, response)?;
            let page: Vec<PullRequestFile> = decode(OP, response.body())?;
            let next = next_link(&response, &self.config.base_url);
            let room = max_files.saturating_sub(listed.files.len());
            let more_here = page.len() > room;
            listed.files.extend(page.into_iter().take(room));
            match next {
                Some(next) if !more_here && listed.files.len() < max_files => url = next,
                Some(_) => {
                    listed.more = true;
                    return Ok(listed);
                }
                None => {
                    listed.more = more_here;
                    return Ok(listed);
                }
            }
        }
    }

    /// The files changed from `base` to `head`: `GET
    /// /repos/{o}/{r}/compare/{base}...{head}` (GitHub lists at most 300
    /// files there), with the comparison's `status` (`ahead`, `behind`,
    /// `identical`, `diverged`).
    pub async fn compare(&self, owner: &str, repo: &str, base: &str, head: &str) -> Result<Comparison, GitHubError> {
        const OP: &str = "compare commits";
        for sha in [base, head] {
            if !is_sha(sha) {
                return Err(GitHubError::InvalidName { what: "commit sha", value: capped(sha) });
            }
        }
        let url = format!("{}/repos/{}/compare/{base}...{head}", self.config.base_url, repo_path(owner, repo)?);
        let response = self.send(OP, http::Method::GET, &url, None, self.token.as_ref()).await?;
        let response = self.success(OP, response)?;
        decode(OP, response.body())
    }

    /// A pull request's current head and base and whether it is open:
    /// `GET /repos/{o}/{r}/pulls/{n}`.
    pub async fn pull_request(&self, owner: &str, repo: &str, number: u64) -> Result<PullRequestInfo, GitHubError> {
        const OP: &str = "get pull request";
        let url = format!("{}/repos/{}/pulls/{number}", self.config.base_url, repo_path(owner, repo)?);
        let response = self.send(OP, http::Method::GET, &url, None, self.token.as_ref()).await?;
        let response = self.success(OP, response)?;
        let pull: PullRequestWire = decode(OP, response.body())?;
        for (field, sha) in [("head.sha", &pull.head.sha), ("base.sha", &pull.base.sha)] {
            if !is_sha(sha) {
                return Err(GitHubError::Decode {
                    operation: OP,
                    path: field.into(),
                    reason: "not a commit sha".into(),
                });
            }
        }
        Ok(PullRequestInfo { head_sha: pull.head.sha, base_sha: pull.base.sha, open: pull.state == "open" })
    }

    /// Reacts to issue comment `comment_id` with `content` (`eyes`, `+1`,
    /// ...): `POST /repos/{o}/{r}/issues/comments/{id}/reactions`. GitHub
    /// answers 200 for a reaction that already exists, so it is safe to repeat.
    pub async fn react_to_issue_comment(
        &self,
        owner: &str,
        repo: &str,
        comment_id: u64,
        content: &str,
    ) -> Result<(), GitHubError> {
        const OP: &str = "create reaction";
        let url = format!(
            "{}/repos/{}/issues/comments/{comment_id}/reactions",
            self.config.base_url,
            repo_path(owner, repo)?
        );
        let body = serde_json::to_vec(&serde_json::json!({ "content": content })).unwrap_or_default();
        let response = self.send(OP, http::Method::POST, &url, Some(body), self.token.as_ref()).await?;
        self.success(OP, response)?;
        Ok(())
    }

    /// The heads our earlier reviews of pull request `number` read, oldest
    /// first: reviews by `login` whose first line is our review marker
    /// (`GET /repos/{o}/{r}/pulls/{n}/reviews`, at most
    /// [`MAX_REVIEW_PAGES`] pages).
    pub async fn reviewed_heads(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        login: &str,
    ) -> Result<Vec<String>, GitHubError> {
        const OP: &str = "list pull request reviews";
        #[derive(Deserialize)]
        struct Review {
            #[serde(default)]
            body: Option<String>,
            #[serde(default)]
            user: Option<Login>,
        }
        #[derive(Deserialize)]
        struct Login {
            login: String,
        }
        let mut url =
            format!("{}/repos/{}/pulls/{number}/reviews?per_page=100", self.config.base_url, repo_path(owner, repo)?);
        let mut heads = Vec::new();
        for _ in 0..MAX_REVIEW_PAGES {
            let response = self.send(OP, http::Method::GET, &url, None, self.token.as_ref()).await?;
            let response = self.success(OP, response)?;
            let next = next_link(&response, &self.config.base_url);
            let page: Vec<Review> = decode(OP, response.body())?;
            for review in page {
                let by_us = review.user.is_some_and(|u| u.login.eq_ignore_ascii_case(login));
                let head = review.body.as_deref().and_then(reviewed_head);
                if let (true, Some(head)) = (by_us, head) {
                    heads.push(head.to_owned());
                }
            }
            match next {
                Some(next) => url = next,
                None => break,
            }
        }
        Ok(heads)
    }

    /// A request sent with this client's own token (for the publication
    /// adapter, which builds its own URLs and reads statuses itself).
    pub(crate) async fn send_authorized(
        &self,
        operation: &'static str,
        method: http::Method,
        url: &str,
        body: Option<Vec<u8>>,
    ) -> Result<http::Response<Vec<u8>>, GitHubError> {
        self.send(operation, method, url, body, self.token.as_ref()).await
    }

    async fn send(
        &self,
        operation: &'static str,
        method: http::Method,
        url: &str,
        body: Option<Vec<u8>>,
        bearer: Option<&Secret>,
    ) -> Result<http::Response<Vec<u8>>, GitHubError> {
        let mut builder = http::Request::builder()
            .method(method)
            .uri(url)
            .header(http::header::ACCEPT, "application/vnd.github+json")
            .header(http::header::USER_AGENT, &self.config.user_agent)
            .header("x-github-api-version", API_VERSION);
        if let Some(token) = bearer {
            builder = builder.header(http::header::AUTHORIZATION, format!("Bearer {}", token.expose()));
        }
        if body.is_some() {
            builder = builder.header(http::header::CONTENT_TYPE, "application/json");
        }
        let mut request = builder
            .body(body.unwrap_or_default())
            .map_err(|_| GitHubError::InvalidName { what: "request URL", value: capped(url) })?;
        request.extensions_mut().insert(RequestTimeout(self.config.timeout_ms));
        // No API answer we read is near this (contents reads are capped
        // far lower); a larger one fails as `TooLarge` naming the limit.
        agent_zero_ports::ResponseLimit::set(&mut request, MAX_RESPONSE_BYTES);
        let response = self.http.send(request).await.map_err(|source| GitHubError::Transport { operation, source })?;
        if response.status() == http::StatusCode::UNAUTHORIZED
            && let (Some((cache, installation)), Some(token)) = (&self.cached_in, bearer)
        {
            cache.forget(*installation, token);
        }
        Ok(response)
    }

    pub(crate) fn success(
        &self,
        operation: &'static str,
        response: http::Response<Vec<u8>>,
    ) -> Result<http::Response<Vec<u8>>, GitHubError> {
        if response.status().is_success() {
            return Ok(response);
        }
        let message = agent_zero_codecs::json::from_slice::<ErrorBody>(response.body())
            .ok()
            .and_then(|b| b.message)
            .map(|m| capped(&m))
            .filter(|m| !self.token.as_ref().is_some_and(|t| t.appears_in(m)));
        Err(GitHubError::Status { operation, status: response.status().as_u16(), message })
    }
}

#[derive(Deserialize)]
struct GitRef {
    object: GitObject,
}

#[derive(Deserialize)]
struct GitObject {
    sha: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct ContentEntry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    size: u64,
    path: String,
    sha: String,
    #[serde(default)]
    content: String,
}

#[derive(Deserialize)]
struct MintedToken {
    token: String,
    expires_at: String,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: Option<String>,
}

pub(crate) fn decode<'de, T: Deserialize<'de>>(operation: &'static str, body: &'de [u8]) -> Result<T, GitHubError> {
    // The path only on failure, from serde_json's error position
    // (`json_path_at`), so each response type compiles once.
    agent_zero_codecs::json::from_slice(body).map_err(|e| GitHubError::Decode {
        operation,
        path: crate::json_path::json_path_at(body, e.line(), e.column()),
        reason: capped(&e.to_string()),
    })
}

/// `owner/repo` for a URL, after checking both are GitHub names.
pub(crate) fn repo_path(owner: &str, repo: &str) -> Result<String, GitHubError> {
    let valid = |name: &str| {
        !name.is_empty()
            && name.len() <= 100
            && name != "."
            && name != ".."
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    if !valid(owner) {
        return Err(GitHubError::InvalidName { what: "owner", value: capped(owner) });
    }
    if !valid(repo) {
        return Err(GitHubError::InvalidName { what: "repository", value: capped(repo) });
    }
    Ok(format!("{owner}/{repo}"))
}

/// A branch name or commit sha as Git allows them (the parts that matter
/// for a URL: no `..`, no control characters, no leading `/` or `-`).
pub(crate) fn check_ref(git_ref: &str) -> Result<(), GitHubError> {
    if !agent_zero_forges::publication::is_safe_ref(git_ref) {
        return Err(GitHubError::InvalidName { what: "ref", value: capped(git_ref) });
    }
    Ok(())
}

/// Percent-encodes a URL component ([`agent_zero_contracts::encode_component`]),
/// keeping `/` when `keep_slash` (a file path).
pub(crate) fn encode(value: &str, keep_slash: bool) -> String {
    if keep_slash { agent_zero_contracts::encode_path(value) } else { agent_zero_contracts::encode_component(value) }
}

pub(crate) fn is_sha(value: &str) -> bool {
    agent_zero_contracts::Sha::is_valid(value)
}

pub(crate) fn capped(value: &str) -> String {
    agent_zero_contracts::UntrustedText::capped(value, MAX_MESSAGE_BYTES).text
}

/// The first words of our reviews' marker line (`publish::review` writes it).
pub(crate) const REVIEW_PREFIX: &str = "<!-- agent-zero:review head=";

/// The head a review body's marker names, when it starts with ours.
pub(crate) fn reviewed_head(body: &str) -> Option<&str> {
    let first = body.lines().next()?;
    let head = first.strip_prefix(REVIEW_PREFIX)?.split(' ').next()?;
    is_sha(head).then_some(head)
}

/// Review pages read (100 each) when looking for ours; past them the
/// publication fails rather than post a duplicate.
pub(crate) const MAX_REVIEW_PAGES: usize = 10;

/// The `rel="next"` target of a `Link` header, only when it stays under
/// `base_url` (the token is never sent anywhere else).
pub(crate) fn next_link(response: &http::Response<Vec<u8>>, base_url: &str) -> Option<String> {
    let link = response.headers().get(http::header::LINK)?.to_str().ok()?;
    link.split(',').find_map(|part| {
        let (target, params) = part.trim().split_once(';')?;
        let is_next = params.split(';').any(|p| matches!(p.trim(), "rel=\"next\"" | "rel=next"));
        let url = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let under_base = url.strip_prefix(base_url).is_some_and(|rest| rest.starts_with('/'));
        (is_next && under_base).then(|| url.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        assert_eq!(ApiConfig::new(None, "ua").unwrap().base_url(), DEFAULT_API_URL);
        assert_eq!(ApiConfig::new(Some(" "), "ua").unwrap().base_url(), DEFAULT_API_URL);
        let ghes = ApiConfig::new(Some("https://ghe.example.com/api/v3/"), "ua").unwrap();
        assert_eq!(ghes.base_url(), "https://ghe.example.com/api/v3");
        assert_eq!(ApiConfig::new(Some("http://127.0.0.1:8080"), "").unwrap().user_agent, "agent-zero-edge");
        for bad in ["ftp://x", "api.github.com", "https://", "https://x?y=1", "https://user@x"] {
            assert!(matches!(ApiConfig::new(Some(bad), "ua"), Err(GitHubError::InvalidBaseUrl { .. })), "{bad}");
        }
    }

    #[test]
    fn names_and_refs_are_checked_and_encoded() {
        assert_eq!(repo_path("octo-org", "hello.world_1").unwrap(), "octo-org/hello.world_1");
        for (owner, repo) in [("..", "r"), ("o", ".."), ("o/x", "r"), ("o", "r?x"), ("", "r"), ("o", "r%2f")] {
            assert!(repo_path(owner, repo).is_err(), "{owner}/{repo}");
        }
        for bad in ["", "a..b", "-x", "/x", "x/", "a b", "a:b", "a\nb", "a//b"] {
            assert!(check_ref(bad).is_err(), "{bad:?}");
        }
        assert!(check_ref("feature/x-1").is_ok());
        assert_eq!(encode("feature/ü#1", true), "feature/%C3%BC%231");
        assert_eq!(encode("a/b&c", false), "a%2Fb%26c");
    }
}
