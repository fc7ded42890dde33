//! Gitea's REST API v1 as the run path reads and writes it (Forgejo's API
//! is Gitea's for every call here). Each call is an operation of Gitea's
//! published swagger (`tests/fixtures/gitea-api/`), and the loopback Gitea
//! the tests use refuses a request that is not.
//!
//! Authentication is the access token in `Authorization: token <t>` (the
//! swagger's `AuthorizationHeaderToken`); a token is never in a URL, an
//! error or a record. I/O only through [`HttpClient`].

use agent_zero_contracts::{encode_component, encode_path};
use agent_zero_ports::{HttpClient, HttpError, RequestTimeout, ResponseLimit, Secret};
use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::{Value, json};

use crate::publication::{capped, is_safe_ref};

mod branches;
mod pulls;
mod timeline;
pub use branches::{CommitText, CommitWithMessage};
pub use pulls::{MAX_DIFF_BYTES, NewLineComment, PullRequestInfo, PullRequestSide, PullReview, ReviewLineComment};
pub use timeline::{Timeline, TimelineEvent};

/// The most bytes of one API answer read (a raw file read sets its own).
const MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;
/// Items asked for per page of a listing.
const PAGE_LIMIT: usize = 50;
/// Pages of one listing read at most.
const MAX_PAGES: usize = 10;

/// Why a Gitea call produced nothing usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GiteaError {
    /// An owner, repository, ref or path that cannot be put in a URL safely.
    #[error("invalid {what} `{value}`")]
    InvalidName { what: &'static str, value: String },
    /// The host could not deliver the request.
    #[error("Gitea {operation}: {source}")]
    Transport { operation: &'static str, source: HttpError },
    /// Gitea answered with a non-success status.
    #[error("Gitea {operation} answered {status}{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Status { operation: &'static str, status: u16, message: Option<String> },
    /// The answer did not have the swagger's shape.
    #[error("Gitea {operation} returned an unexpected body: {reason}")]
    Decode { operation: &'static str, reason: String },
}

impl GiteaError {
    /// The status Gitea answered, if it answered.
    pub const fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether asking again later may succeed (transport, 429, 5xx). An
    /// answer over its size limit, or a destination the host does not
    /// allow, stays so.
    pub const fn retryable(&self) -> bool {
        match self {
            Self::Transport { source: HttpError::TooLarge { .. } | HttpError::NotAllowed(_), .. } => false,
            Self::Transport { .. } => true,
            Self::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}

/// Where the API is: `{GITEA_URL}/api/v1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GiteaApi {
    base: String,
    timeout_ms: u64,
}

impl GiteaApi {
    /// The API of the instance at `instance_url` (an absolute `http(s)` URL
    /// the settings checked), each call bounded by `timeout_ms`.
    pub fn new(instance_url: &str, timeout_ms: u64) -> Self {
        Self { base: format!("{}/api/v1", instance_url.trim_end_matches('/')), timeout_ms }
    }
}

/// An account.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    pub login: String,
}

/// What the run path reads of a repository.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Repository {
    pub default_branch: String,
}

/// A label.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Label {
    pub name: String,
}

/// What the run path reads of an issue. `title` and `body` are untrusted.
#[derive(Debug, Clone, Deserialize)]
pub struct Issue {
    pub number: u64,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub body: String,
    pub state: String,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub labels: Vec<Label>,
    #[serde(default)]
    pub html_url: Option<String>,
    /// Present on a pull request (Gitea lists them as issues too).
    #[serde(default)]
    pub pull_request: Option<IgnoredAny>,
}

impl Issue {
    /// Whether this "issue" is a pull request.
    pub const fn is_pull_request(&self) -> bool {
        self.pull_request.is_some()
    }
}

/// A comment on an issue or pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub html_url: Option<String>,
}

/// A pull request, as listed or created.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    pub html_url: String,
    pub head: PullRequestBranch,
}

/// One side of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestBranch {
    #[serde(rename = "ref")]
    pub name: String,
}

/// A commit status (`CreateStatusOption`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitStatus<'a> {
    /// `pending`, `success`, `error`, `failure` or `warning`.
    pub state: &'a str,
    pub context: &'a str,
    pub description: &'a str,
    /// Where the status links to (the evidence page).
    pub target_url: Option<&'a str>,
}

/// One file of a [`GiteaClient::change_files`] commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileChange<'a> {
    /// A new file with this content.
    Create { path: &'a str, content: &'a [u8] },
    /// An existing file (its blob `sha` at the base) with this content.
    Update { path: &'a str, content: &'a [u8], sha: &'a str },
    /// An existing file (its blob `sha` at the base) removed.
    Delete { path: &'a str, sha: &'a str },
}

/// What publication reads of a commit (`GET .../git/commits/{sha}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommitInfo {
    #[serde(default)]
    pub parents: Vec<CommitParent>,
    /// The files the commit changed (asked for with `files=true`).
    #[serde(default)]
    pub files: Vec<AffectedFile>,
}

/// A parent of a commit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommitParent {
    pub sha: String,
}

/// A file a commit changed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AffectedFile {
    pub filename: String,
}

#[derive(Deserialize)]
struct Permission {
    permission: String,
}

#[derive(Deserialize)]
struct Branch {
    commit: BranchCommit,
}

#[derive(Deserialize)]
struct BranchCommit {
    id: String,
}

#[derive(Deserialize)]
struct Contents {
    sha: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct FilesResponse {
    #[serde(default)]
    commit: Option<CommitMeta>,
}

#[derive(Deserialize)]
struct CommitMeta {
    sha: String,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: Option<String>,
}

/// A Gitea client, authenticated with `token` when one is configured.
#[derive(Debug, Clone, Copy)]
pub struct GiteaClient<'a, H> {
    http: &'a H,
    api: &'a GiteaApi,
    token: Option<&'a Secret>,
}

impl<'a, H: HttpClient> GiteaClient<'a, H> {
    /// A client of `api` sending `token` (none: anonymous, public repositories only).
    pub const fn new(http: &'a H, api: &'a GiteaApi, token: Option<&'a Secret>) -> Self {
        Self { http, api, token }
    }

    /// The archive of `commit` (`GET .../archive/{sha}.tar.gz`): its URL,
    /// and the header that authorises the download (the token), for
    /// whoever downloads it. Gitea has no short-lived archive link.
    pub fn archive(&self, owner: &str, repo: &str, commit: &str) -> Result<(String, Option<Secret>), GiteaError> {
        if !agent_zero_contracts::Sha::is_valid(commit) {
            return Err(GiteaError::InvalidName { what: "commit", value: capped(commit) });
        }
        let url = format!("{}/repos/{}/archive/{commit}.tar.gz", self.api.base, repo_path(owner, repo)?);
        Ok((url, self.token.map(|t| Secret::new(format!("token {}", t.expose())))))
    }

    /// The token's own account (`GET /user`): comments by it are ours.
    pub async fn own_login(&self) -> Result<String, GiteaError> {
        let user: User = self.json("get the token's user", http::Method::GET, "/user", None).await?;
        Ok(user.login)
    }

    /// `GET /repos/{owner}/{repo}`.
    pub async fn repository(&self, owner: &str, repo: &str) -> Result<Repository, GiteaError> {
        let path = format!("/repos/{}", repo_path(owner, repo)?);
        self.json("get repository", http::Method::GET, &path, None).await
    }

    /// The commit `branch` points at (`GET .../branches/{branch}`).
    pub async fn branch_head(&self, owner: &str, repo: &str, branch: &str) -> Result<String, GiteaError> {
        let path = format!("/repos/{}/branches/{}", repo_path(owner, repo)?, git_ref(branch)?);
        let branch: Branch = self.json("get branch", http::Method::GET, &path, None).await?;
        Ok(branch.commit.id)
    }

    /// The commit `branch` points at, `None` when there is no such branch.
    pub async fn branch_head_if_any(
        &self,
        owner: &str,
        repo: &str,
        branch: &str,
    ) -> Result<Option<String>, GiteaError> {
        match self.branch_head(owner, repo, branch).await {
            Ok(head) => Ok(Some(head)),
            Err(e) if e.status() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A commit's parents and the files it changed.
    pub async fn commit(&self, owner: &str, repo: &str, sha: &str) -> Result<CommitInfo, GiteaError> {
        if !agent_zero_contracts::Sha::is_valid(sha) {
            return Err(GiteaError::InvalidName { what: "commit", value: capped(sha) });
        }
        let path =
            format!("/repos/{}/git/commits/{sha}?stat=false&verification=false&files=true", repo_path(owner, repo)?);
        self.json("get commit", http::Method::GET, &path, None).await
    }

    /// The bytes of `path` at `git_ref` (`GET .../raw/{path}?ref=`), `None`
    /// when there is no such file; more than `limit` bytes is an error.
    pub async fn raw_file(
        &self,
        owner: &str,
        repo: &str,
        path: &str,
        git_ref: &str,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, GiteaError> {
        let url = format!(
            "/repos/{}/raw/{}?ref={}",
            repo_path(owner, repo)?,
            file_path(path)?,
            encode_component(git_ref_str(git_ref)?)
        );
        let response = self.send("read file", http::Method::GET, &url, None, limit).await?;
        if response.status() == http::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Ok(Some(self.success("read file", response)?.into_body()))
    }

    /// The blob sha of `path` at `git_ref`, `None` when absent (a
    /// directory or a link is an error: the run writes files only).
    pub async fn file_sha(
        &self,
        owner: &str,
        repo: &str,
        path: &str,
        git_ref: &str,
    ) -> Result<Option<String>, GiteaError> {
        let url = format!(
            "/repos/{}/contents/{}?ref={}",
            repo_path(owner, repo)?,
            file_path(path)?,
            encode_component(git_ref_str(git_ref)?)
        );
        let response = self.send("get contents", http::Method::GET, &url, None, MAX_RESPONSE_BYTES).await?;
        if response.status() == http::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let contents: Contents = decode("get contents", self.success("get contents", response)?.body())?;
        if contents.kind != "file" {
            return Err(GiteaError::InvalidName { what: "file (it is not a regular file)", value: capped(path) });
        }
        Ok(Some(contents.sha))
    }

    /// `GET .../issues/{number}`.
    pub async fn issue(&self, owner: &str, repo: &str, number: u64) -> Result<Issue, GiteaError> {
        let path = format!("/repos/{}/issues/{number}", repo_path(owner, repo)?);
        self.json("get issue", http::Method::GET, &path, None).await
    }

    /// What `login` may do in the repository: `none`, `read`, `write`,
    /// `admin` or `owner` (`GET .../collaborators/{login}/permission`).
    pub async fn permission(&self, owner: &str, repo: &str, login: &str) -> Result<String, GiteaError> {
        let path = format!("/repos/{}/collaborators/{}/permission", repo_path(owner, repo)?, encode_component(login));
        let permission: Permission = self.json("get permission", http::Method::GET, &path, None).await?;
        Ok(permission.permission)
    }

    /// Posts a commit status on `sha` (`POST .../statuses/{sha}`).
    pub async fn create_status(
        &self,
        owner: &str,
        repo: &str,
        sha: &str,
        status: &CommitStatus<'_>,
    ) -> Result<(), GiteaError> {
        if !agent_zero_contracts::Sha::is_valid(sha) {
            return Err(GiteaError::InvalidName { what: "commit", value: capped(sha) });
        }
        let mut body = json!({ "state": status.state, "context": status.context, "description": status.description });
        if let Some(url) = status.target_url {
            body["target_url"] = Value::from(url);
        }
        let path = format!("/repos/{}/statuses/{sha}", repo_path(owner, repo)?);
        let _: IgnoredAny = self.json("create commit status", http::Method::POST, &path, Some(&body)).await?;
        Ok(())
    }

    /// The comments of issue or pull request `number`, oldest first (Gitea
    /// answers them all at once: the operation takes no page).
    pub async fn comments(&self, owner: &str, repo: &str, number: u64) -> Result<Vec<Comment>, GiteaError> {
        let path = format!("/repos/{}/issues/{number}/comments", repo_path(owner, repo)?);
        self.json("list comments", http::Method::GET, &path, None).await
    }

    /// Comments on issue or pull request `number`.
    pub async fn create_comment(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        body: &str,
    ) -> Result<Comment, GiteaError> {
        let path = format!("/repos/{}/issues/{number}/comments", repo_path(owner, repo)?);
        self.json("create comment", http::Method::POST, &path, Some(&json!({ "body": body }))).await
    }

    /// Replaces the text of comment `id`.
    pub async fn edit_comment(&self, owner: &str, repo: &str, id: u64, body: &str) -> Result<Comment, GiteaError> {
        let path = format!("/repos/{}/issues/comments/{id}", repo_path(owner, repo)?);
        self.json("edit comment", http::Method::PATCH, &path, Some(&json!({ "body": body }))).await
    }

    /// One commit of `changes` on `base`'s head, on the new branch
    /// `branch` (`POST .../contents`, Gitea's "change files"): the commit.
    pub async fn change_files(
        &self,
        owner: &str,
        repo: &str,
        base: &str,
        branch: &str,
        message: &str,
        changes: &[FileChange<'_>],
    ) -> Result<String, GiteaError> {
        use base64::Engine as _;
        let encode = |content: &[u8]| base64::engine::general_purpose::STANDARD.encode(content);
        let mut files = Vec::with_capacity(changes.len());
        for change in changes {
            let file = match *change {
                FileChange::Create { path, content } => {
                    json!({ "operation": "create", "path": file_name(path)?, "content": encode(content) })
                }
                FileChange::Update { path, content, sha } => json!({
                    "operation": "update", "path": file_name(path)?, "content": encode(content), "sha": sha
                }),
                FileChange::Delete { path, sha } => {
                    json!({ "operation": "delete", "path": file_name(path)?, "sha": sha })
                }
            };
            files.push(file);
        }
        let body = json!({
            "branch": git_ref_str(base)?,
            "new_branch": git_ref_str(branch)?,
            "message": message,
            "files": files,
        });
        let path = format!("/repos/{}/contents", repo_path(owner, repo)?);
        let answer: FilesResponse = self.json("change files", http::Method::POST, &path, Some(&body)).await?;
        answer
            .commit
            .map(|c| c.sha)
            .ok_or(GiteaError::Decode { operation: "change files", reason: "no commit in the answer".into() })
    }

    /// The open pull request whose head is `branch`, if any (at most
    /// [`MAX_PAGES`] pages of open pull requests are read).
    pub async fn open_pull_request(
        &self,
        owner: &str,
        repo: &str,
        branch: &str,
    ) -> Result<Option<PullRequest>, GiteaError> {
        let base = format!("/repos/{}/pulls", repo_path(owner, repo)?);
        for page in 1..=MAX_PAGES {
            let path = format!("{base}?state=open&page={page}&limit={PAGE_LIMIT}");
            let pulls: Vec<PullRequest> = self.json("list pull requests", http::Method::GET, &path, None).await?;
            let last = pulls.len() < PAGE_LIMIT;
            if let Some(found) = pulls.into_iter().find(|p| p.head.name == branch) {
                return Ok(Some(found));
            }
            if last {
                break;
            }
        }
        Ok(None)
    }

    /// Opens a pull request of `head` into `base`.
    pub async fn create_pull_request(
        &self,
        owner: &str,
        repo: &str,
        head: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> Result<PullRequest, GiteaError> {
        let path = format!("/repos/{}/pulls", repo_path(owner, repo)?);
        let body = json!({ "head": git_ref_str(head)?, "base": git_ref_str(base)?, "title": title, "body": body });
        self.json("create pull request", http::Method::POST, &path, Some(&body)).await
    }

    /// Every item of the listing at `base` (a path without a query, or
    /// with one ending in `&`-joinable parameters), oldest first, page by
    /// page, at most [`MAX_PAGES`] pages; `true` beside them when the
    /// listing was read to its end.
    async fn pages<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        base: &str,
    ) -> Result<(Vec<T>, bool), GiteaError> {
        let joiner = if base.contains('?') { '&' } else { '?' };
        let mut all = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = format!("{base}{joiner}page={page}&limit={PAGE_LIMIT}");
            let items: Vec<T> = self.json(operation, http::Method::GET, &path, None).await?;
            let last = items.len() < PAGE_LIMIT;
            all.extend(items);
            if last {
                return Ok((all, true));
            }
        }
        Ok((all, false))
    }

    async fn json<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<T, GiteaError> {
        let body = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
        let response = self.send(operation, method, path, body, MAX_RESPONSE_BYTES).await?;
        decode(operation, self.success(operation, response)?.body())
    }

    async fn send(
        &self,
        operation: &'static str,
        method: http::Method,
        path: &str,
        body: Option<Vec<u8>>,
        limit: u64,
    ) -> Result<http::Response<Vec<u8>>, GiteaError> {
        let url = format!("{}{path}", self.api.base);
        let mut builder = http::Request::builder()
            .method(method)
            .uri(&url)
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::USER_AGENT, "agent-zero-edge");
        if let Some(token) = self.token {
            builder = builder.header(http::header::AUTHORIZATION, format!("token {}", token.expose()));
        }
        if body.is_some() {
            builder = builder.header(http::header::CONTENT_TYPE, "application/json");
        }
        let mut request = builder
            .body(body.unwrap_or_default())
            .map_err(|_| GiteaError::InvalidName { what: "request URL", value: capped(&url) })?;
        request.extensions_mut().insert(RequestTimeout(self.api.timeout_ms));
        ResponseLimit::set(&mut request, limit);
        self.http.send(request).await.map_err(|source| GiteaError::Transport { operation, source })
    }

    fn success(
        &self,
        operation: &'static str,
        response: http::Response<Vec<u8>>,
    ) -> Result<http::Response<Vec<u8>>, GiteaError> {
        if response.status().is_success() {
            return Ok(response);
        }
        let message = serde_json::from_slice::<ErrorBody>(response.body())
            .ok()
            .and_then(|b| b.message)
            .map(|m| capped(&m))
            .filter(|m| !self.token.is_some_and(|t| t.appears_in(m)));
        Err(GiteaError::Status { operation, status: response.status().as_u16(), message })
    }
}

fn decode<T: DeserializeOwned>(operation: &'static str, body: &[u8]) -> Result<T, GiteaError> {
    serde_json::from_slice(body).map_err(|e| GiteaError::Decode { operation, reason: e.to_string() })
}

/// Whether `name` is a plain Gitea owner or repository name: 1 to 100
/// letters, digits, `-`, `_` or `.`, not `.` or `..`.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `owner/repo`, each a plain name ([`is_plain_name`]).
fn repo_path(owner: &str, repo: &str) -> Result<String, GiteaError> {
    let plain = is_plain_name;
    if !plain(owner) {
        return Err(GiteaError::InvalidName { what: "owner", value: capped(owner) });
    }
    if !plain(repo) {
        return Err(GiteaError::InvalidName { what: "repository", value: capped(repo) });
    }
    Ok(format!("{owner}/{repo}"))
}

fn git_ref_str(git_ref: &str) -> Result<&str, GiteaError> {
    if is_safe_ref(git_ref) {
        Ok(git_ref)
    } else {
        Err(GiteaError::InvalidName { what: "ref", value: capped(git_ref) })
    }
}

fn git_ref(git_ref: &str) -> Result<String, GiteaError> {
    git_ref_str(git_ref).map(encode_path)
}

/// A repository path as the contents API takes it.
fn file_name(path: &str) -> Result<&str, GiteaError> {
    let plain = agent_zero_contracts::is_repository_relative_path(path)
        && !path.split('/').any(|s| s.is_empty() || s == "." || s == "..");
    if plain { Ok(path) } else { Err(GiteaError::InvalidName { what: "path", value: capped(path) }) }
}

fn file_path(path: &str) -> Result<String, GiteaError> {
    file_name(path).map(encode_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_leave_the_repository_are_refused() {
        assert_eq!(repo_path("acme", "app").unwrap(), "acme/app");
        for (owner, repo) in [("..", "x"), ("a/b", "x"), ("a", ""), ("a", "x?y"), ("a", "x#")] {
            assert!(repo_path(owner, repo).is_err(), "{owner}/{repo}");
        }
        assert!(file_name("src/lib.rs").is_ok());
        for bad in ["../x", "/etc/passwd", "a//b", "a/./b", ""] {
            assert!(file_name(bad).is_err(), "{bad}");
        }
        assert!(git_ref_str("agent-zero/1-t").is_ok());
        assert!(git_ref_str("a..b").is_err());
    }

    #[test]
    fn only_transport_rate_limits_and_server_errors_are_retried() {
        let status = |status| GiteaError::Status { operation: "x", status, message: None };
        assert!(status(503).retryable() && status(429).retryable());
        assert!(!status(404).retryable() && !status(422).retryable());
        assert!(GiteaError::Transport { operation: "x", source: HttpError::Timeout(1) }.retryable());
        // Over its limit or not allowed: the same again next time.
        assert!(!GiteaError::Transport { operation: "x", source: HttpError::TooLarge { limit: 1 } }.retryable());
        assert!(!GiteaError::Transport { operation: "x", source: HttpError::NotAllowed("h".into()) }.retryable());
    }
}
