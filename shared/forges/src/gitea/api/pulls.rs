//! Pull requests as review feedback reads and answers them: the pull
//! request, its reviews and a review's line comments, its diff, and a new
//! review. Each an operation of Gitea 1.22's swagger.
//!
//! Gitea's line numbers are the file's, not diff positions: a review
//! comment's `position` is its line on the new side (0 when it is on the
//! old side), `original_position` its line on the old side; a new
//! comment's `new_position` is its line on the new side.

use agent_zero_ports::HttpClient;
use serde::Deserialize;
use serde_json::json;

use super::{GiteaClient, GiteaError, Label, User, file_name, repo_path};

/// The most bytes of a pull request's diff read.
pub const MAX_DIFF_BYTES: u64 = 4 * 1024 * 1024;

/// What review feedback reads of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestInfo {
    pub number: u64,
    /// Untrusted.
    #[serde(default)]
    pub title: String,
    /// Untrusted.
    #[serde(default)]
    pub body: String,
    /// `open` or `closed`.
    pub state: String,
    #[serde(default)]
    pub merged: bool,
    /// A work in progress (Gitea's `WIP:` title prefixes).
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub labels: Vec<Label>,
    #[serde(default)]
    pub user: Option<User>,
    pub head: PullRequestSide,
    pub base: PullRequestSide,
    #[serde(default)]
    pub html_url: Option<String>,
}

/// One side of a pull request, with its commit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestSide {
    #[serde(rename = "ref")]
    pub name: String,
    pub sha: String,
}

/// A pull request review (`PullReview`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullReview {
    pub id: u64,
    #[serde(default)]
    pub user: Option<User>,
    /// `APPROVED`, `PENDING`, `COMMENT`, `REQUEST_CHANGES`, `REQUEST_REVIEW`.
    #[serde(default)]
    pub state: String,
    /// Untrusted.
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub comments_count: u64,
    #[serde(default)]
    pub dismissed: bool,
    #[serde(default)]
    pub commit_id: String,
    #[serde(default)]
    pub html_url: Option<String>,
}

impl PullReview {
    /// Whether `login` wrote it.
    pub fn by(&self, login: &str) -> bool {
        self.user.as_ref().is_some_and(|u| u.login.eq_ignore_ascii_case(login))
    }
}

/// A line comment of a review (`PullReviewComment`). `body` is untrusted.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReviewLineComment {
    pub id: u64,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub path: String,
    /// Its line on the new side; 0 when it is on the old side.
    #[serde(default)]
    pub position: u64,
    /// Its line on the old side; 0 when it is on the new side.
    #[serde(default)]
    pub original_position: u64,
    #[serde(default)]
    pub pull_request_review_id: u64,
    #[serde(default)]
    pub html_url: Option<String>,
}

/// One line comment of a new review: `path` at `line` on the new side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewLineComment<'a> {
    pub path: &'a str,
    pub line: u64,
    pub body: &'a str,
}

impl<H: HttpClient> GiteaClient<'_, H> {
    /// `GET .../pulls/{number}`.
    pub async fn pull_request(&self, owner: &str, repo: &str, number: u64) -> Result<PullRequestInfo, GiteaError> {
        let path = format!("/repos/{}/pulls/{number}", repo_path(owner, repo)?);
        self.json("get pull request", http::Method::GET, &path, None).await
    }

    /// The reviews of pull request `number`, oldest first (as many pages
    /// as are read).
    pub async fn reviews(&self, owner: &str, repo: &str, number: u64) -> Result<Vec<PullReview>, GiteaError> {
        let base = format!("/repos/{}/pulls/{number}/reviews", repo_path(owner, repo)?);
        Ok(self.pages("list pull reviews", &base).await?.0)
    }

    /// The line comments of review `id` (Gitea answers them all at once).
    pub async fn review_comments(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        id: u64,
    ) -> Result<Vec<ReviewLineComment>, GiteaError> {
        let path = format!("/repos/{}/pulls/{number}/reviews/{id}/comments", repo_path(owner, repo)?);
        self.json("list pull review comments", http::Method::GET, &path, None).await
    }

    /// The pull request's diff (`GET .../pulls/{number}.diff`), git's
    /// unified format, at most [`MAX_DIFF_BYTES`].
    pub async fn pull_diff(&self, owner: &str, repo: &str, number: u64) -> Result<Vec<u8>, GiteaError> {
        let path = format!("/repos/{}/pulls/{number}.diff", repo_path(owner, repo)?);
        let response = self.send("get pull request diff", http::Method::GET, &path, None, MAX_DIFF_BYTES).await?;
        Ok(self.success("get pull request diff", response)?.into_body())
    }

    /// Posts a review (`event` `COMMENT`) on `commit` with `comments`
    /// (`POST .../pulls/{number}/reviews`): the review.
    pub async fn create_review(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        commit: &str,
        body: &str,
        comments: &[NewLineComment<'_>],
    ) -> Result<PullReview, GiteaError> {
        if !agent_zero_contracts::Sha::is_valid(commit) {
            return Err(GiteaError::InvalidName { what: "commit", value: crate::publication::capped(commit) });
        }
        let mut lines = Vec::with_capacity(comments.len());
        for c in comments {
            lines.push(json!({ "path": file_name(c.path)?, "body": c.body, "new_position": c.line }));
        }
        let body = json!({ "event": "COMMENT", "body": body, "commit_id": commit, "comments": lines });
        let path = format!("/repos/{}/pulls/{number}/reviews", repo_path(owner, repo)?);
        self.json("create pull review", http::Method::POST, &path, Some(&body)).await
    }
}
