//! The few fields of GitHub webhook payloads the intake reads. Everything
//! else in a payload is skipped unread; fields GitHub may omit or send as
//! `null` are optional. No `#[serde(flatten)]`: it would buffer the whole
//! payload.

use serde::{Deserialize, Deserializer};

/// Just the action, read first so unhandled actions are ignored without
/// parsing the rest.
#[derive(Debug, Deserialize)]
pub(crate) struct ActionOnly {
    #[serde(default)]
    pub(crate) action: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Account {
    pub(crate) login: String,
    #[serde(default, rename = "type")]
    pub(crate) kind: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RepositoryPayload {
    pub(crate) name: String,
    pub(crate) owner: Account,
    #[serde(default)]
    pub(crate) default_branch: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct InstallationId {
    pub(crate) id: u64,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CommitPointer {
    pub(crate) sha: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PullRequestPayload {
    pub(crate) number: u64,
    pub(crate) head: CommitPointer,
    pub(crate) base: CommitPointer,
    #[serde(default)]
    pub(crate) draft: Option<bool>,
    #[serde(default)]
    pub(crate) title: Option<String>,
    #[serde(default)]
    pub(crate) body: Option<String>,
    /// Who opened it (`null` for a deleted account).
    #[serde(default)]
    pub(crate) user: Option<Account>,
    /// The opener's relation to the repository (`OWNER`, `MEMBER`, ...).
    #[serde(default)]
    pub(crate) author_association: Option<String>,
    /// The labels it carries, after the action (a `labeled` one included).
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) labels: Vec<Label>,
    /// When it last changed (ISO 8601): every action intake acts on moves it.
    #[serde(default)]
    pub(crate) updated_at: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ReviewPayload {
    pub(crate) id: u64,
    pub(crate) state: String,
    #[serde(default)]
    pub(crate) body: Option<String>,
    /// `null` for a deleted account.
    #[serde(default)]
    pub(crate) user: Option<Account>,
    /// The author's relation to the repository (`OWNER`, `MEMBER`, ...).
    #[serde(default)]
    pub(crate) author_association: Option<String>,
    /// When it was submitted (ISO 8601).
    #[serde(default)]
    pub(crate) submitted_at: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ReviewCommentPayload {
    pub(crate) id: u64,
    #[serde(default)]
    pub(crate) body: Option<String>,
    #[serde(default)]
    pub(crate) user: Option<Account>,
    #[serde(default)]
    pub(crate) author_association: Option<String>,
    #[serde(default)]
    pub(crate) path: Option<String>,
    #[serde(default)]
    pub(crate) line: Option<u64>,
    #[serde(default)]
    pub(crate) original_line: Option<u64>,
    /// When it was written or last edited (ISO 8601).
    #[serde(default)]
    pub(crate) updated_at: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Label {
    pub(crate) name: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct IssuePayload {
    pub(crate) number: u64,
    #[serde(default)]
    pub(crate) title: Option<String>,
    #[serde(default)]
    pub(crate) body: Option<String>,
    #[serde(default)]
    pub(crate) user: Option<Account>,
    #[serde(default)]
    pub(crate) author_association: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) labels: Vec<Label>,
    #[serde(default)]
    pub(crate) state: Option<String>,
    /// Present (an object of links) when the issue is a pull request.
    #[serde(default)]
    pub(crate) pull_request: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) html_url: Option<String>,
    /// When it last changed (ISO 8601): opening and labelling move it.
    #[serde(default)]
    pub(crate) updated_at: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PullRequestEvent {
    pub(crate) pull_request: PullRequestPayload,
    /// The label added by a `labeled` action.
    #[serde(default)]
    pub(crate) label: Option<Label>,
    pub(crate) repository: RepositoryPayload,
    pub(crate) sender: Account,
    #[serde(default)]
    pub(crate) installation: Option<InstallationId>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ReviewEvent {
    pub(crate) review: ReviewPayload,
    pub(crate) pull_request: PullRequestPayload,
    pub(crate) repository: RepositoryPayload,
    pub(crate) sender: Account,
    #[serde(default)]
    pub(crate) installation: Option<InstallationId>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ReviewCommentEvent {
    pub(crate) comment: ReviewCommentPayload,
    pub(crate) pull_request: PullRequestPayload,
    pub(crate) repository: RepositoryPayload,
    pub(crate) sender: Account,
    #[serde(default)]
    pub(crate) installation: Option<InstallationId>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct IssuesEvent {
    pub(crate) issue: IssuePayload,
    /// The label added by a `labeled` action.
    #[serde(default)]
    pub(crate) label: Option<Label>,
    pub(crate) repository: RepositoryPayload,
    pub(crate) sender: Account,
    #[serde(default)]
    pub(crate) installation: Option<InstallationId>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PingEvent {
    #[serde(default)]
    pub(crate) hook_id: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RepositoryName {
    pub(crate) full_name: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct InstallationAccount {
    #[serde(default)]
    pub(crate) login: Option<String>,
    /// Enterprise accounts have a slug instead of a login.
    #[serde(default)]
    pub(crate) slug: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct InstallationPayload {
    pub(crate) id: u64,
    #[serde(default)]
    pub(crate) account: Option<InstallationAccount>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct InstallationEvent {
    pub(crate) installation: InstallationPayload,
    /// The repositories granted at `created` (and listed at other actions).
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) repositories: Vec<RepositoryName>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) repositories_added: Vec<RepositoryName>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) repositories_removed: Vec<RepositoryName>,
}

/// `null` where GitHub usually sends an empty list.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
