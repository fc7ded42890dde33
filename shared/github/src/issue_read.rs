//! Reading one issue (`GET /repos/{o}/{r}/issues/{n}`): what a task the
//! control plane creates for an issue needs of it (`agent-zero fix <url>`),
//! read with the deployment's credentials when the task is created, as a
//! webhook delivery carries it. The title and body stay untrusted text.

use agent_zero_ports::HttpClient;
use serde::Deserialize;

use crate::client::{GitHubClient, GitHubError, decode, repo_path};

/// An issue as a task needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IssueInfo {
    pub title: String,
    /// Absent or empty on GitHub: `None`.
    pub body: Option<String>,
    /// The issue's page (`html_url`).
    pub html_url: Option<String>,
    /// `state` is `open`.
    pub open: bool,
    /// GitHub answers this route for a pull request too (with a
    /// `pull_request` object): then this is set.
    pub pull_request: bool,
}

#[derive(Deserialize)]
struct IssueWire {
    title: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
    state: String,
    #[serde(default)]
    pull_request: Option<serde::de::IgnoredAny>,
}

impl<H: HttpClient> GitHubClient<'_, H> {
    /// Issue `number` of `owner/repo`: `GET /repos/{o}/{r}/issues/{n}`.
    pub async fn issue(&self, owner: &str, repo: &str, number: u64) -> Result<IssueInfo, GitHubError> {
        const OP: &str = "get issue";
        let url = format!("{}/repos/{}/issues/{number}", self.parts().1.base_url(), repo_path(owner, repo)?);
        let response = self.send_authorized(OP, http::Method::GET, &url, None).await?;
        let response = self.success(OP, response)?;
        let issue: IssueWire = decode(OP, response.body())?;
        Ok(IssueInfo {
            title: issue.title,
            body: issue.body.filter(|b| !b.trim().is_empty()),
            html_url: issue.html_url,
            open: issue.state == "open",
            pull_request: issue.pull_request.is_some(),
        })
    }
}
