//! A branch made from a commit, and what a commit says of itself: the
//! calls a review-feedback run's side branch needs (`super::super::side_branch`).
//! Each an operation of Gitea 1.22's swagger.

use agent_zero_contracts::encode_path;
use agent_zero_ports::HttpClient;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::json;

use super::{CommitParent, GiteaClient, GiteaError, git_ref_str, repo_path};
use crate::publication::capped;

/// A commit's parents and message (`GET .../git/commits/{sha}`). Not
/// `#[serde(flatten)]` over [`CommitInfo`]: flattening buffers the whole
/// answer and costs the tick artefacts kilobytes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommitWithMessage {
    #[serde(default)]
    pub parents: Vec<CommitParent>,
    pub commit: CommitText,
}

/// The part of a commit that is git's own (`RepoCommit`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommitText {
    #[serde(default)]
    pub message: String,
}

impl<H: HttpClient> GiteaClient<'_, H> {
    /// Creates `branch` at commit `sha` (`POST .../branches`,
    /// `CreateBranchRepoOption` with `old_ref_name`). Gitea answers 409
    /// when the branch exists.
    pub async fn create_branch_at(&self, owner: &str, repo: &str, branch: &str, sha: &str) -> Result<(), GiteaError> {
        if !agent_zero_contracts::Sha::is_valid(sha) {
            return Err(GiteaError::InvalidName { what: "commit", value: capped(sha) });
        }
        let path = format!("/repos/{}/branches", repo_path(owner, repo)?);
        let body = json!({ "new_branch_name": git_ref_str(branch)?, "old_ref_name": sha });
        let _: IgnoredAny = self.json("create branch", http::Method::POST, &path, Some(&body)).await?;
        Ok(())
    }

    /// A commit's parents and its message.
    pub async fn commit_with_message(
        &self,
        owner: &str,
        repo: &str,
        sha: &str,
    ) -> Result<CommitWithMessage, GiteaError> {
        if !agent_zero_contracts::Sha::is_valid(sha) {
            return Err(GiteaError::InvalidName { what: "commit", value: capped(sha) });
        }
        let path =
            format!("/repos/{}/git/commits/{sha}?stat=false&verification=false&files=false", repo_path(owner, repo)?);
        self.json("get commit", http::Method::GET, &path, None).await
    }

    /// The web page of `branch` (`{GITEA_URL}/{owner}/{repo}/src/branch/{branch}`).
    pub fn branch_url(&self, owner: &str, repo: &str, branch: &str) -> Result<String, GiteaError> {
        let root = self.api.base.strip_suffix("/api/v1").unwrap_or(&self.api.base);
        Ok(format!("{root}/{}/src/branch/{}", repo_path(owner, repo)?, encode_path(git_ref_str(branch)?)))
    }
}
