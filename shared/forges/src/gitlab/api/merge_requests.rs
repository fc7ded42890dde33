//! A merge request as a review reads and answers it: the merge request
//! itself (state, head, `diff_refs`, author), its changed files with
//! their hunks (`GET .../merge_requests/:iid/diffs`), its discussions, and
//! a new discussion, placed on a line of the diff (`POST
//! .../merge_requests/:iid/discussions` with a `position`) or not, and a
//! reply in one (`POST .../discussions/:id/notes`), each an
//! operation of GitLab's published definition.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{GitLabClient, GitLabError, MAX_PAGES, Noteable, PER_PAGE, User, null_as_empty, project_id, sha};
use agent_zero_ports::HttpClient;

/// What a review's gate and publication read of a merge request
/// (`GET .../merge_requests/:iid`). `title` and `description` are untrusted.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MergeRequestDetail {
    pub iid: u64,
    /// `opened`, `closed`, `locked` or `merged`.
    pub state: String,
    /// The head commit (`null` before GitLab has read the source branch).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub sha: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub title: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub description: String,
    /// GitLab 13.2+; older versions say `work_in_progress`.
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub work_in_progress: bool,
    #[serde(default)]
    pub author: Option<User>,
    #[serde(default)]
    pub labels: Vec<String>,
    pub source_project_id: u64,
    pub target_project_id: u64,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub target_branch: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub web_url: String,
    /// The commits a diff note's `position` names (`null` until GitLab
    /// has computed the diff).
    #[serde(default)]
    pub diff_refs: Option<DiffRefs>,
}

impl MergeRequestDetail {
    /// A draft, by either of GitLab's names for it.
    pub const fn is_draft(&self) -> bool {
        self.draft || self.work_in_progress
    }
}

/// A merge request's `diff_refs`: the merge base, the target branch's head
/// when the diff was computed, and the source branch's head.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DiffRefs {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub base_sha: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub start_sha: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub head_sha: String,
}

/// One changed file of a merge request (`Entities::Diff`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MergeRequestDiff {
    pub old_path: String,
    pub new_path: String,
    /// The hunks from the first `@@` on; empty for a binary file, a change
    /// of mode only, or a diff GitLab collapsed as too large.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub diff: String,
    #[serde(default)]
    pub new_file: bool,
    #[serde(default)]
    pub renamed_file: bool,
    #[serde(default)]
    pub deleted_file: bool,
}

/// A discussion (thread) of a merge request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Discussion {
    pub id: String,
    #[serde(default)]
    pub notes: Vec<DiscussionNote>,
}

/// A note of a discussion; `position` when it is placed on the diff.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DiscussionNote {
    pub id: u64,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub body: String,
    #[serde(default)]
    pub author: Option<User>,
    #[serde(default)]
    pub system: bool,
    #[serde(default)]
    pub position: Option<NotePosition>,
}

/// Where a diff note is placed, as GitLab answers it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NotePosition {
    #[serde(default)]
    pub new_path: Option<String>,
    #[serde(default)]
    pub new_line: Option<u64>,
}

/// A line of a merge request's diff, as a new discussion's `position`
/// (`position_type: text`): an added line has only `new_line`; a context
/// line both `old_line` and `new_line`, as GitLab requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinePosition<'a> {
    pub refs: &'a DiffRefs,
    pub old_path: &'a str,
    pub new_path: &'a str,
    pub old_line: Option<u64>,
    pub new_line: u64,
}

/// Changed files of a merge request, and whether GitLab lists more.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedDiffs {
    pub files: Vec<MergeRequestDiff>,
    /// More than the files asked for are there.
    pub more: bool,
}

impl<H: HttpClient> GitLabClient<'_, H> {
    /// `GET .../merge_requests/:iid`.
    pub async fn merge_request(&self, project: &str, iid: u64) -> Result<MergeRequestDetail, GitLabError> {
        let path = format!("/projects/{}/merge_requests/{iid}", project_id(project)?);
        self.json("get merge request", http::Method::GET, &path, None).await
    }

    /// The first `max_files` changed files of merge request `iid`
    /// (`GET .../merge_requests/:iid/diffs`, 100 a page; after a full page
    /// the next is asked for, so exactly `max_files` files is not "more").
    pub async fn merge_request_diffs(
        &self,
        project: &str,
        iid: u64,
        max_files: usize,
    ) -> Result<ListedDiffs, GitLabError> {
        let base = format!("/projects/{}/merge_requests/{iid}/diffs", project_id(project)?);
        let mut listed = ListedDiffs::default();
        for page in 1.. {
            let path = format!("{base}?per_page={PER_PAGE}&page={page}");
            let files: Vec<MergeRequestDiff> =
                self.json("list merge request diffs", http::Method::GET, &path, None).await?;
            let last = files.len() < PER_PAGE;
            listed.files.extend(files);
            if listed.files.len() > max_files {
                listed.files.truncate(max_files);
                listed.more = true;
                break;
            }
            if last {
                break;
            }
        }
        Ok(listed)
    }

    /// The discussions of merge request `iid`, oldest first (at most
    /// [`MAX_PAGES`] pages); `true` beside them when there are more.
    pub async fn discussions(&self, project: &str, iid: u64) -> Result<(Vec<Discussion>, bool), GitLabError> {
        let base = format!("/projects/{}/merge_requests/{iid}/discussions", project_id(project)?);
        let mut all = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = format!("{base}?per_page={PER_PAGE}&page={page}");
            let found: Vec<Discussion> = self.json("list discussions", http::Method::GET, &path, None).await?;
            let last = found.len() < PER_PAGE;
            all.extend(found);
            if last {
                return Ok((all, false));
            }
        }
        Ok((all, true))
    }

    /// Starts a discussion on merge request `iid`, placed at `at` on the
    /// diff or (`None`) on the merge request itself; the discussion's id
    /// and the web page of its first note.
    pub async fn create_discussion(
        &self,
        project: &str,
        iid: u64,
        body: &str,
        at: Option<&LinePosition<'_>>,
    ) -> Result<(String, String), GitLabError> {
        let mut request = json!({ "body": body });
        if let Some(at) = at {
            let mut position = json!({
                "position_type": "text",
                "base_sha": sha(&at.refs.base_sha)?,
                "start_sha": sha(&at.refs.start_sha)?,
                "head_sha": sha(&at.refs.head_sha)?,
                "old_path": super::file_name(at.old_path)?,
                "new_path": super::file_name(at.new_path)?,
                "new_line": at.new_line,
            });
            if let Some(old) = at.old_line {
                position["old_line"] = Value::from(old);
            }
            request["position"] = position;
        }
        let path = format!("/projects/{}/merge_requests/{iid}/discussions", project_id(project)?);
        let created: Discussion = self.json("create discussion", http::Method::POST, &path, Some(&request)).await?;
        let note = created.notes.first().map_or(0, |n| n.id);
        Ok((created.id, self.api.note_url(project, Noteable::MergeRequest(iid), note)))
    }

    /// Adds a note to discussion `discussion` of merge request `iid`; the
    /// web page of the note.
    pub async fn reply(&self, project: &str, iid: u64, discussion: &str, body: &str) -> Result<String, GitLabError> {
        let plain =
            !discussion.is_empty() && discussion.len() <= 64 && discussion.bytes().all(|b| b.is_ascii_alphanumeric());
        if !plain {
            return Err(GitLabError::InvalidName { what: "discussion id", value: super::capped(discussion) });
        }
        let path = format!("/projects/{}/merge_requests/{iid}/discussions/{discussion}/notes", project_id(project)?);
        let note: DiscussionNote =
            self.json("reply to discussion", http::Method::POST, &path, Some(&json!({ "body": body }))).await?;
        Ok(self.api.note_url(project, Noteable::MergeRequest(iid), note.id))
    }

    /// The web page of note `note` of merge request `iid`.
    pub fn merge_request_note_url(&self, project: &str, iid: u64, note: u64) -> String {
        self.api.note_url(project, Noteable::MergeRequest(iid), note)
    }
}
