//! GitLab's REST API v4 as the run path reads and writes it (gitlab.com
//! and self-managed). Each call is an operation of GitLab's published
//! OpenAPI definition (`doc/api/openapi/openapi_v2.yaml`).
//!
//! A project is always named by its full path (`group/sub/project`), sent
//! URL-encoded as `:id` (`group%2Fsub%2Fproject`); a file path is one
//! encoded segment too (`src%2Flib%2Ers`: `.` is encoded as GitLab's docs
//! do, so a path ending in `.json` is never read as a format suffix).
//!
//! Authentication is the access token (personal, project or group) in
//! `PRIVATE-TOKEN`; a token is never in a URL, an error or a record. I/O
//! only through [`HttpClient`].

use agent_zero_contracts::encode_component;
use agent_zero_ports::{HttpClient, HttpError, RequestTimeout, ResponseLimit, Secret};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use crate::publication::{capped, is_safe_ref};

mod merge_requests;

pub use merge_requests::{
    DiffRefs, Discussion, DiscussionNote, LinePosition, ListedDiffs, MergeRequestDetail, MergeRequestDiff, NotePosition,
};

/// The most bytes of one API answer read (a raw file read sets its own).
const MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;
/// Items asked for per page of a listing (GitLab's most).
const PER_PAGE: usize = 100;
/// Pages of one listing read at most.
const MAX_PAGES: usize = 10;
/// The token's header.
pub const TOKEN_HEADER: &str = "PRIVATE-TOKEN";
/// GitLab's limit on a commit status's `description` (characters).
pub const MAX_STATUS_DESCRIPTION: usize = 255;

/// Why a GitLab call produced nothing usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GitLabError {
    /// A project, ref or path that cannot be put in a URL safely.
    #[error("invalid {what} `{value}`")]
    InvalidName { what: &'static str, value: String },
    /// The host could not deliver the request.
    #[error("GitLab {operation}: {source}")]
    Transport { operation: &'static str, source: HttpError },
    /// GitLab answered with a non-success status.
    #[error("GitLab {operation} answered {status}{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Status { operation: &'static str, status: u16, message: Option<String> },
    /// The answer did not have the definition's shape.
    #[error("GitLab {operation} returned an unexpected body: {reason}")]
    Decode { operation: &'static str, reason: String },
}

impl GitLabError {
    /// The status GitLab answered, if it answered.
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

    /// GitLab's message, if it gave one.
    pub fn message(&self) -> Option<&str> {
        match self {
            Self::Status { message, .. } => message.as_deref(),
            _ => None,
        }
    }
}

/// Where the API is: `{instance}/api/v4`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitLabApi {
    instance: String,
    base: String,
    timeout_ms: u64,
}

impl GitLabApi {
    /// The API of the instance at `instance_url` (an absolute `http(s)` URL
    /// the settings checked, e.g. `https://gitlab.com`), each call bounded
    /// by `timeout_ms`.
    pub fn new(instance_url: &str, timeout_ms: u64) -> Self {
        let instance = instance_url.trim_end_matches('/').to_owned();
        Self { base: format!("{instance}/api/v4"), instance, timeout_ms }
    }

    /// The web page of a project's issue or merge request note.
    fn note_url(&self, project: &str, on: Noteable, note: u64) -> String {
        let (kind, iid) = match on {
            Noteable::Issue(iid) => ("issues", iid),
            Noteable::MergeRequest(iid) => ("merge_requests", iid),
        };
        format!("{}/{project}/-/{kind}/{iid}#note_{note}", self.instance)
    }
}

/// An account.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    pub id: u64,
    pub username: String,
}

/// What the run path reads of a project.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Project {
    pub id: u64,
    pub path_with_namespace: String,
    /// Empty for a project with no commit yet (GitLab answers `null`).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub default_branch: String,
    pub web_url: String,
}

/// What the run path reads of an issue. `title` and `description` are untrusted.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Issue {
    pub iid: u64,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub title: String,
    /// `null` (no description) reads as empty.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub description: String,
    /// `opened` or `closed`.
    pub state: String,
    /// Seen only by members allowed to: its text is not for a model.
    #[serde(default)]
    pub confidential: bool,
    /// Label names (GitLab lists them as strings unless asked for details).
    #[serde(default)]
    pub labels: Vec<String>,
    #[serde(default)]
    pub author: Option<User>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub web_url: String,
}

/// Where a note is: an issue or a merge request, by its `iid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noteable {
    Issue(u64),
    MergeRequest(u64),
}

impl Noteable {
    fn path(self) -> String {
        match self {
            Self::Issue(iid) => format!("issues/{iid}/notes"),
            Self::MergeRequest(iid) => format!("merge_requests/{iid}/notes"),
        }
    }
}

/// A note (comment) on an issue or merge request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Note {
    pub id: u64,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub body: String,
    #[serde(default)]
    pub author: Option<User>,
    /// GitLab's own notes ("changed the description"), never ours.
    #[serde(default)]
    pub system: bool,
    /// Its web page, filled in by the client (the API gives none).
    #[serde(skip)]
    pub web_url: Option<String>,
}

/// A merge request, as listed or created.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MergeRequest {
    pub iid: u64,
    pub web_url: String,
    pub source_branch: String,
}

/// A commit status (`POST /projects/:id/statuses/:sha`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitStatus<'a> {
    /// `pending`, `running`, `success`, `failed` or `canceled`.
    pub state: &'a str,
    /// The status's `name` (GitLab's `context`).
    pub name: &'a str,
    /// At most [`MAX_STATUS_DESCRIPTION`] characters (cut by the client).
    pub description: &'a str,
    /// Where the status links to (the evidence page).
    pub target_url: Option<&'a str>,
}

/// One action of a [`GitLabClient::create_commit`] commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitAction<'a> {
    /// A new file with this content (a regular file).
    Create { path: &'a str, content: &'a [u8] },
    /// An existing file with this content (its mode is kept).
    Update { path: &'a str, content: &'a [u8] },
    /// An existing file removed.
    Delete { path: &'a str },
    /// The execute flag of a file set or cleared.
    Chmod { path: &'a str, executable: bool },
}

/// What publication reads of a commit (`GET .../repository/commits/:sha`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Commit {
    pub id: String,
    #[serde(default)]
    pub parent_ids: Vec<String>,
}

/// One file of a commit's diff (`GET .../commits/:sha/diff`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DiffFile {
    pub old_path: String,
    pub new_path: String,
    /// The mode after the commit (`null` for a deleted file).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub b_mode: String,
    #[serde(default)]
    pub new_file: bool,
    #[serde(default)]
    pub renamed_file: bool,
    #[serde(default)]
    pub deleted_file: bool,
}

/// A file's metadata at a ref (the `X-Gitlab-*` headers of `HEAD .../repository/files/:file_path`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMeta {
    /// `X-Gitlab-Execute-Filemode`.
    pub executable: bool,
}

#[derive(Deserialize)]
struct Member {
    access_level: u32,
}

#[derive(Deserialize)]
struct Branch {
    commit: BranchCommit,
}

#[derive(Deserialize)]
struct BranchCommit {
    id: String,
}

/// GitLab's error bodies: `{"message": "404 Project Not Found"}`,
/// `{"message": {"field": ["is invalid"]}}` or, from the authentication
/// layer, `{"error": "...", "error_description": "..."}`.
#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

impl ErrorBody {
    fn text(self) -> Option<String> {
        let message = match self.message {
            Some(Value::String(text)) => Some(text),
            Some(Value::Null) | None => None,
            Some(other) => Some(other.to_string()),
        };
        message.or(self.error_description).or(self.error)
    }
}

fn null_as_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

/// A GitLab client, authenticated with `token` when one is configured.
#[derive(Debug, Clone, Copy)]
pub struct GitLabClient<'a, H> {
    http: &'a H,
    api: &'a GitLabApi,
    token: Option<&'a Secret>,
}

impl<'a, H: HttpClient> GitLabClient<'a, H> {
    /// A client of `api` sending `token` in `PRIVATE-TOKEN` (none:
    /// anonymous, public projects only).
    pub const fn new(http: &'a H, api: &'a GitLabApi, token: Option<&'a Secret>) -> Self {
        Self { http, api, token }
    }

    /// The archive of `commit` (`GET .../repository/archive.tar.gz?sha=`):
    /// its URL, and the value of the [`TOKEN_HEADER`] that authorises the
    /// download, for whoever downloads it.
    pub fn archive(&self, project: &str, commit: &str) -> Result<(String, Option<Secret>), GitLabError> {
        let commit = sha(commit)?;
        let url = format!("{}/projects/{}/repository/archive.tar.gz?sha={commit}", self.api.base, project_id(project)?);
        Ok((url, self.token.map(|t| Secret::new(t.expose()))))
    }

    /// The token's own account (`GET /user`): notes by it are ours.
    pub async fn own_user(&self) -> Result<User, GitLabError> {
        self.json("get the token's user", http::Method::GET, "/user", None).await
    }

    /// The account named `username` (`GET /users?username=`), if any.
    pub async fn user_by_username(&self, username: &str) -> Result<Option<User>, GitLabError> {
        let path = format!("/users?username={}", encode_component(username));
        let users: Vec<User> = self.json("find user", http::Method::GET, &path, None).await?;
        Ok(users.into_iter().find(|u| u.username.eq_ignore_ascii_case(username)))
    }

    /// `GET /projects/:id`.
    pub async fn project(&self, project: &str) -> Result<Project, GitLabError> {
        let path = format!("/projects/{}", project_id(project)?);
        self.json("get project", http::Method::GET, &path, None).await
    }

    /// The commit `branch` points at (`GET .../repository/branches/:branch`).
    pub async fn branch_head(&self, project: &str, branch: &str) -> Result<String, GitLabError> {
        let path = format!("/projects/{}/repository/branches/{}", project_id(project)?, ref_segment(branch)?);
        let branch: Branch = self.json("get branch", http::Method::GET, &path, None).await?;
        Ok(branch.commit.id)
    }

    /// The commit `branch` points at, `None` when there is no such branch.
    pub async fn branch_head_if_any(&self, project: &str, branch: &str) -> Result<Option<String>, GitLabError> {
        match self.branch_head(project, branch).await {
            Ok(head) => Ok(Some(head)),
            Err(e) if e.status() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The bytes of `path` at `git_ref` (`GET .../repository/files/:file_path/raw?ref=`),
    /// `None` when there is no such file; more than `max_bytes` is an error.
    pub async fn raw_file(
        &self,
        project: &str,
        path: &str,
        git_ref: &str,
        max_bytes: usize,
    ) -> Result<Option<Vec<u8>>, GitLabError> {
        let url = format!(
            "/projects/{}/repository/files/{}/raw?ref={}",
            project_id(project)?,
            file_segment(path)?,
            ref_segment(git_ref)?
        );
        let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX);
        let response = self.send("read file", http::Method::GET, &url, None, limit).await?;
        if response.status() == http::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        self.success("read file", response).map(|r| Some(r.into_body()))
    }

    /// Whether `path` is a file at `git_ref`, and its execute flag, `None`
    /// when absent: `HEAD .../repository/files/:file_path?ref=`, whose
    /// answer is the file's metadata as `X-Gitlab-*` headers without its
    /// bytes. A file whose `X-Gitlab-Size` is over `max_bytes` is the same
    /// error its read would be. No `X-Gitlab-Execute-Filemode` (GitLab
    /// before 14.10) reads as a regular file.
    pub async fn file_meta(
        &self,
        project: &str,
        path: &str,
        git_ref: &str,
        max_bytes: usize,
    ) -> Result<Option<FileMeta>, GitLabError> {
        const OPERATION: &str = "read file";
        let url = format!(
            "/projects/{}/repository/files/{}?ref={}",
            project_id(project)?,
            file_segment(path)?,
            ref_segment(git_ref)?
        );
        let response = self.send(OPERATION, http::Method::HEAD, &url, None, MAX_RESPONSE_BYTES).await?;
        if response.status() == http::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let response = self.success(OPERATION, response)?;
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX);
        if header("x-gitlab-size").and_then(|v| v.parse::<u64>().ok()).is_some_and(|size| size > limit) {
            return Err(GitLabError::Transport { operation: OPERATION, source: HttpError::TooLarge { limit } });
        }
        let executable = header("x-gitlab-execute-filemode").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        Ok(Some(FileMeta { executable }))
    }

    /// `GET .../issues/:issue_iid`.
    pub async fn issue(&self, project: &str, iid: u64) -> Result<Issue, GitLabError> {
        let path = format!("/projects/{}/issues/{iid}", project_id(project)?);
        self.json("get issue", http::Method::GET, &path, None).await
    }

    /// The access level of `user_id` in the project, inherited ones
    /// included (`GET .../members/all/:user_id`): 0 when not a member, 10
    /// guest, 15 planner, 20 reporter, 30 developer, 40 maintainer, 50 owner.
    pub async fn access_level(&self, project: &str, user_id: u64) -> Result<u32, GitLabError> {
        let path = format!("/projects/{}/members/all/{user_id}", project_id(project)?);
        let response = self.send("get member", http::Method::GET, &path, None, MAX_RESPONSE_BYTES).await?;
        if response.status() == http::StatusCode::NOT_FOUND {
            return Ok(0);
        }
        let member: Member = decode("get member", self.success("get member", response)?.body())?;
        Ok(member.access_level)
    }

    /// Posts a commit status on `sha` (`POST .../statuses/:sha`).
    pub async fn create_status(&self, project: &str, sha_: &str, status: &CommitStatus<'_>) -> Result<(), GitLabError> {
        let sha_ = sha(sha_)?;
        let description: String = status.description.chars().take(MAX_STATUS_DESCRIPTION).collect();
        let mut body = json!({ "state": status.state, "name": status.name, "description": description });
        if let Some(url) = status.target_url {
            body["target_url"] = Value::from(url);
        }
        let path = format!("/projects/{}/statuses/{sha_}", project_id(project)?);
        let _: IgnoredAny = self.json("create commit status", http::Method::POST, &path, Some(&body)).await?;
        Ok(())
    }

    /// The notes of an issue or merge request, oldest first (at most
    /// [`MAX_PAGES`] pages).
    pub async fn notes(&self, project: &str, on: Noteable) -> Result<Vec<Note>, GitLabError> {
        let base = format!("/projects/{}/{}", project_id(project)?, on.path());
        let mut all = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = format!("{base}?sort=asc&order_by=created_at&per_page={PER_PAGE}&page={page}");
            let notes: Vec<Note> = self.json("list notes", http::Method::GET, &path, None).await?;
            let last = notes.len() < PER_PAGE;
            all.extend(notes.into_iter().map(|n| self.located(project, on, n)));
            if last {
                break;
            }
        }
        Ok(all)
    }

    /// Adds a note to an issue or merge request.
    pub async fn create_note(&self, project: &str, on: Noteable, body: &str) -> Result<Note, GitLabError> {
        let path = format!("/projects/{}/{}", project_id(project)?, on.path());
        let note = self.json("create note", http::Method::POST, &path, Some(&json!({ "body": body }))).await?;
        Ok(self.located(project, on, note))
    }

    /// Replaces the text of note `id`.
    pub async fn edit_note(&self, project: &str, on: Noteable, id: u64, body: &str) -> Result<Note, GitLabError> {
        let path = format!("/projects/{}/{}/{id}", project_id(project)?, on.path());
        let note = self.json("edit note", http::Method::PUT, &path, Some(&json!({ "body": body }))).await?;
        Ok(self.located(project, on, note))
    }

    fn located(&self, project: &str, on: Noteable, mut note: Note) -> Note {
        note.web_url = Some(self.api.note_url(project, on, note.id));
        note
    }

    /// A commit's id and parents.
    pub async fn commit(&self, project: &str, sha_: &str) -> Result<Commit, GitLabError> {
        let path = format!("/projects/{}/repository/commits/{}?stats=false", project_id(project)?, sha(sha_)?);
        self.json("get commit", http::Method::GET, &path, None).await
    }

    /// The files a commit changed against its first parent (at most
    /// [`MAX_PAGES`] pages).
    pub async fn commit_diff(&self, project: &str, sha_: &str) -> Result<Vec<DiffFile>, GitLabError> {
        let base = format!("/projects/{}/repository/commits/{}/diff", project_id(project)?, sha(sha_)?);
        let mut all = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = format!("{base}?per_page={PER_PAGE}&page={page}");
            let files: Vec<DiffFile> = self.json("get commit diff", http::Method::GET, &path, None).await?;
            let last = files.len() < PER_PAGE;
            all.extend(files);
            if last {
                break;
            }
        }
        Ok(all)
    }

    /// One commit of `actions` on `start_sha`, on the new branch `branch`
    /// (`POST .../repository/commits`; never `force`): the commit.
    pub async fn create_commit(
        &self,
        project: &str,
        branch: &str,
        start_sha: &str,
        message: &str,
        actions: &[CommitAction<'_>],
    ) -> Result<Commit, GitLabError> {
        let mut list = Vec::with_capacity(actions.len());
        for action in actions {
            list.push(action_json(action)?);
        }
        let body = json!({
            "branch": git_ref(branch)?,
            "start_sha": sha(start_sha)?,
            "commit_message": message,
            "actions": list,
        });
        let path = format!("/projects/{}/repository/commits", project_id(project)?);
        self.json("create commit", http::Method::POST, &path, Some(&body)).await
    }

    /// The open merge request from `source_branch`, if any.
    pub async fn open_merge_request(
        &self,
        project: &str,
        source_branch: &str,
    ) -> Result<Option<MergeRequest>, GitLabError> {
        let path = format!(
            "/projects/{}/merge_requests?state=opened&source_branch={}&per_page={PER_PAGE}",
            project_id(project)?,
            encode_component(git_ref(source_branch)?)
        );
        let found: Vec<MergeRequest> = self.json("list merge requests", http::Method::GET, &path, None).await?;
        Ok(found.into_iter().find(|m| m.source_branch == source_branch))
    }

    /// Opens a merge request of `source_branch` into `target_branch`.
    pub async fn create_merge_request(
        &self,
        project: &str,
        source_branch: &str,
        target_branch: &str,
        title: &str,
        description: &str,
    ) -> Result<MergeRequest, GitLabError> {
        let path = format!("/projects/{}/merge_requests", project_id(project)?);
        let body = json!({
            "source_branch": git_ref(source_branch)?,
            "target_branch": git_ref(target_branch)?,
            "title": title,
            "description": description,
        });
        self.json("create merge request", http::Method::POST, &path, Some(&body)).await
    }

    async fn json<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<T, GitLabError> {
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
    ) -> Result<http::Response<Vec<u8>>, GitLabError> {
        let url = format!("{}{path}", self.api.base);
        let mut builder = http::Request::builder()
            .method(method)
            .uri(&url)
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::USER_AGENT, "agent-zero-edge");
        if let Some(token) = self.token {
            builder = builder.header(TOKEN_HEADER, token.expose());
        }
        if body.is_some() {
            builder = builder.header(http::header::CONTENT_TYPE, "application/json");
        }
        let mut request = builder
            .body(body.unwrap_or_default())
            .map_err(|_| GitLabError::InvalidName { what: "request URL or token", value: capped(&url) })?;
        request.extensions_mut().insert(RequestTimeout(self.api.timeout_ms));
        ResponseLimit::set(&mut request, limit);
        self.http.send(request).await.map_err(|source| GitLabError::Transport { operation, source })
    }

    fn success(
        &self,
        operation: &'static str,
        response: http::Response<Vec<u8>>,
    ) -> Result<http::Response<Vec<u8>>, GitLabError> {
        if response.status().is_success() {
            return Ok(response);
        }
        let message = serde_json::from_slice::<ErrorBody>(response.body())
            .ok()
            .and_then(ErrorBody::text)
            .map(|m| capped(&m))
            .filter(|m| !self.token.is_some_and(|t| t.appears_in(m)));
        Err(GitLabError::Status { operation, status: response.status().as_u16(), message })
    }
}

fn action_json(action: &CommitAction<'_>) -> Result<Value, GitLabError> {
    Ok(match *action {
        CommitAction::Create { path, content } => content_action("create", path, content)?,
        CommitAction::Update { path, content } => content_action("update", path, content)?,
        CommitAction::Delete { path } => json!({ "action": "delete", "file_path": file_name(path)? }),
        CommitAction::Chmod { path, executable } => {
            json!({ "action": "chmod", "file_path": file_name(path)?, "execute_filemode": executable })
        }
    })
}

/// Text content as it is; anything that is not UTF-8 as base64.
fn content_action(action: &str, path: &str, content: &[u8]) -> Result<Value, GitLabError> {
    use base64::Engine as _;
    let path = file_name(path)?;
    Ok(match std::str::from_utf8(content) {
        Ok(text) => json!({ "action": action, "file_path": path, "content": text }),
        Err(_) => json!({
            "action": action,
            "file_path": path,
            "content": base64::engine::general_purpose::STANDARD.encode(content),
            "encoding": "base64",
        }),
    })
}

fn decode<T: DeserializeOwned>(operation: &'static str, body: &[u8]) -> Result<T, GitLabError> {
    serde_json::from_slice(body).map_err(|e| GitLabError::Decode { operation, reason: e.to_string() })
}

/// Whether `project` is a GitLab project path this client names:
/// `group/sub/project`, each segment a GitLab path (letters, digits, `_`,
/// `-`, `.`; not `.`/`..`, not starting with `-`), at least a namespace
/// and a project, 1,024 bytes at most.
pub fn is_project_path(project: &str) -> bool {
    let segment_ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 255
            && s != "."
            && s != ".."
            && !s.starts_with('-')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    project.len() <= 1024 && project.split('/').count() >= 2 && project.split('/').all(segment_ok)
}

/// `group/sub/project` ([`is_project_path`]) as `:id`, the whole one
/// encoded segment.
fn project_id(project: &str) -> Result<String, GitLabError> {
    if is_project_path(project) {
        Ok(encode_dots(&encode_component(project)))
    } else {
        Err(GitLabError::InvalidName { what: "project path", value: capped(project) })
    }
}

fn git_ref(git_ref: &str) -> Result<&str, GitLabError> {
    if is_safe_ref(git_ref) {
        Ok(git_ref)
    } else {
        Err(GitLabError::InvalidName { what: "ref", value: capped(git_ref) })
    }
}

/// A branch or ref as one encoded URL segment or query value.
fn ref_segment(value: &str) -> Result<String, GitLabError> {
    git_ref(value).map(|r| encode_dots(&encode_component(r)))
}

fn sha(value: &str) -> Result<&str, GitLabError> {
    if agent_zero_contracts::Sha::is_valid(value) {
        Ok(value)
    } else {
        Err(GitLabError::InvalidName { what: "commit", value: capped(value) })
    }
}

/// A repository path as the commits API takes it.
fn file_name(path: &str) -> Result<&str, GitLabError> {
    let plain = agent_zero_contracts::is_repository_relative_path(path)
        && !path.split('/').any(|s| s.is_empty() || s == "." || s == "..");
    if plain { Ok(path) } else { Err(GitLabError::InvalidName { what: "path", value: capped(path) }) }
}

/// A repository path as one encoded URL segment (`/` as `%2F`).
fn file_segment(path: &str) -> Result<String, GitLabError> {
    file_name(path).map(|p| encode_dots(&encode_component(p)))
}

/// `.` as `%2E`, as GitLab's docs encode paths: a trailing `.json` or
/// `.xml` is then never taken for a format suffix.
fn encode_dots(encoded: &str) -> String {
    encoded.replace('.', "%2E")
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use agent_zero_ports::block_on;

    use super::*;

    /// Records each request and answers `status` with `body`.
    struct Recorder {
        seen: RefCell<Vec<(String, String, Option<String>)>>,
        status: u16,
        body: &'static str,
    }

    impl HttpClient for Recorder {
        async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
            let token = request.headers().get(TOKEN_HEADER).map(|v| v.to_str().unwrap().to_owned());
            self.seen.borrow_mut().push((request.method().to_string(), request.uri().to_string(), token));
            Ok(http::Response::builder().status(self.status).body(self.body.as_bytes().to_vec()).unwrap())
        }
    }

    fn recorder(status: u16, body: &'static str) -> Recorder {
        Recorder { seen: RefCell::default(), status, body }
    }

    #[test]
    fn project_and_file_paths_are_one_encoded_segment_each() {
        let api = GitLabApi::new("https://gitlab.example.com/", 1000);
        let token = Secret::new("glpat-secret");
        let http = recorder(200, "abc");
        let client = GitLabClient::new(&http, &api, Some(&token));
        let raw = block_on(client.raw_file("group/sub/my.project", "src/a b/lib.rs", "agent-zero/7-t", 10));
        assert_eq!(raw.unwrap().as_deref(), Some(&b"abc"[..]));
        let (method, uri, sent) = http.seen.borrow()[0].clone();
        assert_eq!(method, "GET");
        assert_eq!(
            uri,
            "https://gitlab.example.com/api/v4/projects/group%2Fsub%2Fmy%2Eproject/repository/files/\
             src%2Fa%20b%2Flib%2Ers/raw?ref=agent-zero%2F7-t"
        );
        // The token is in its header, never in the URL.
        assert_eq!(sent.as_deref(), Some("glpat-secret"));
        let (url, header) = client.archive("acme/widgets", &"a".repeat(40)).unwrap();
        assert_eq!(
            url,
            format!(
                "https://gitlab.example.com/api/v4/projects/acme%2Fwidgets/repository/archive.tar.gz?sha={}",
                "a".repeat(40)
            )
        );
        assert_eq!(header.as_ref().map(Secret::expose), Some("glpat-secret"));
    }

    #[test]
    fn names_that_could_leave_the_project_are_refused() {
        assert_eq!(project_id("acme/widgets").unwrap(), "acme%2Fwidgets");
        for bad in ["widgets", "acme/", "/acme/w", "acme//w", "acme/../w", "acme/w?x", "acme/w#", "acme/-w", "a/w%2F"] {
            assert!(project_id(bad).is_err(), "{bad}");
        }
        assert_eq!(file_segment("src/lib.rs").unwrap(), "src%2Flib%2Ers");
        for bad in ["../x", "/etc/passwd", "a//b", "a/./b", ""] {
            assert!(file_segment(bad).is_err(), "{bad}");
        }
        assert!(ref_segment("a..b").is_err() && sha("main").is_err());
        let http = recorder(200, "{}");
        let api = GitLabApi::new("https://gitlab.example.com", 1000);
        let client = GitLabClient::new(&http, &api, None);
        assert!(matches!(block_on(client.project("acme")), Err(GitLabError::InvalidName { .. })));
        assert!(http.seen.borrow().is_empty(), "nothing is sent for a bad name");
    }

    #[test]
    fn only_transport_rate_limits_and_server_errors_are_retried() {
        let status = |status| GitLabError::Status { operation: "x", status, message: None };
        assert!(status(503).retryable() && status(429).retryable());
        assert!(!status(404).retryable() && !status(400).retryable() && !status(403).retryable());
        assert!(GitLabError::Transport { operation: "x", source: HttpError::Timeout(1) }.retryable());
        assert!(!GitLabError::Transport { operation: "x", source: HttpError::TooLarge { limit: 1 } }.retryable());
        assert!(!GitLabError::Transport { operation: "x", source: HttpError::NotAllowed("h".into()) }.retryable());
    }

    #[test]
    fn errors_name_the_call_and_gitlabs_message_without_the_token() {
        let api = GitLabApi::new("https://gitlab.example.com", 1000);
        let token = Secret::new("glpat-secret");
        for (body, shown) in [
            (r#"{"message":"404 Project Not Found"}"#, "GitLab get project answered 404: 404 Project Not Found"),
            (
                r#"{"message":{"title":["is too long"]}}"#,
                r#"GitLab get project answered 404: {"title":["is too long"]}"#,
            ),
            (
                r#"{"error":"invalid_token","error_description":"Token was revoked"}"#,
                "GitLab get project answered 404: Token was revoked",
            ),
            (r#"{"message":"bad token glpat-secret"}"#, "GitLab get project answered 404"),
        ] {
            let http = recorder(404, body);
            let error = block_on(GitLabClient::new(&http, &api, Some(&token)).project("acme/widgets")).unwrap_err();
            assert_eq!(error.to_string(), shown);
        }
    }

    #[test]
    fn a_missing_member_has_no_access_and_a_null_description_is_empty() {
        let api = GitLabApi::new("https://gitlab.example.com", 1000);
        let http = recorder(404, r#"{"message":"404 Not found"}"#);
        assert_eq!(block_on(GitLabClient::new(&http, &api, None).access_level("acme/widgets", 7)), Ok(0));
        assert_eq!(http.seen.borrow()[0].1, "https://gitlab.example.com/api/v4/projects/acme%2Fwidgets/members/all/7");
        let issue: Issue = serde_json::from_str(
            r#"{"iid":3,"title":"t","description":null,"state":"opened","labels":["bug"],"author":{"id":1,"username":"u"},"web_url":"w"}"#,
        )
        .unwrap();
        assert_eq!((issue.description.as_str(), issue.labels.as_slice()), ("", &["bug".to_owned()][..]));
    }

    #[test]
    fn text_goes_as_it_is_and_other_bytes_as_base64() {
        let text = action_json(&CommitAction::Update { path: "a.txt", content: b"hi\n" }).unwrap();
        assert_eq!(text, json!({ "action": "update", "file_path": "a.txt", "content": "hi\n" }));
        let binary = action_json(&CommitAction::Create { path: "b.bin", content: &[0xff, 0x00] }).unwrap();
        assert_eq!(
            binary,
            json!({ "action": "create", "file_path": "b.bin", "content": "/wA=", "encoding": "base64" })
        );
        let chmod = action_json(&CommitAction::Chmod { path: "run.sh", executable: true }).unwrap();
        assert_eq!(chmod, json!({ "action": "chmod", "file_path": "run.sh", "execute_filemode": true }));
    }
}
