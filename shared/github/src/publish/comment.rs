//! The issue validation comment: found by [`ISSUE_VALIDATION_MARKER`] (and
//! our own login) and edited in place; posted only when there is none. No
//! other comment is ever edited, and nothing else on the issue is touched.

use agent_zero_evidence::ISSUE_VALIDATION_MARKER;
use agent_zero_ports::HttpClient;
use serde::Deserialize;
use serde_json::json;

use super::report::StepOutcome;
use super::rest::{Halt, Rest, next_link};
use crate::client::repo_path;

/// Comment pages read (100 each) when looking for our comment; past them
/// the publication fails rather than post a duplicate.
pub const MAX_COMMENT_PAGES: usize = 10;

#[derive(Deserialize)]
struct Comment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<User>,
    #[serde(default)]
    html_url: Option<String>,
}

#[derive(Deserialize)]
struct User {
    login: String,
}

impl Comment {
    fn is_ours(&self, bot_login: Option<&str>) -> bool {
        let marked = self.body.as_deref().is_some_and(|b| b.trim_start().starts_with(ISSUE_VALIDATION_MARKER));
        let author = match (bot_login, &self.user) {
            (None, _) => true,
            (Some(login), Some(user)) => user.login.eq_ignore_ascii_case(login),
            (Some(_), None) => false,
        };
        marked && author
    }
}

/// Edits our validation comment on issue `number`, or posts it once.
pub(crate) async fn upsert<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    owner: &str,
    repo: &str,
    number: u64,
    bot_login: Option<&str>,
    text: &str,
) -> Result<StepOutcome, Halt> {
    let repo_path = repo_path(owner, repo)?;
    let body = json!({ "body": text });
    match find_ours(rest, &repo_path, number, bot_login).await? {
        Some(id) => {
            let url = rest.url(&format!("/repos/{repo_path}/issues/comments/{id}"));
            let comment: Comment = rest.json("update issue comment", http::Method::PATCH, &url, Some(&body)).await?;
            Ok(StepOutcome::Updated { url: comment.html_url })
        }
        None => {
            let url = rest.url(&format!("/repos/{repo_path}/issues/{number}/comments"));
            let comment: Comment = rest.json("create issue comment", http::Method::POST, &url, Some(&body)).await?;
            // Two deliveries of the same publication can both find no comment
            // and both post. Converge on one: keep the oldest of ours, delete
            // our newer duplicates (only ever our own comments).
            let ours = all_ours(rest, &repo_path, number, bot_login).await?;
            if let Some(&keep) = ours.iter().min() {
                for id in ours.into_iter().filter(|id| *id != keep) {
                    let url = rest.url(&format!("/repos/{repo_path}/issues/comments/{id}"));
                    let _ = rest.call("delete duplicate issue comment", http::Method::DELETE, &url, None).await?;
                }
                if keep != comment.id {
                    return Ok(StepOutcome::Updated { url: None });
                }
            }
            Ok(StepOutcome::Created { url: comment.html_url })
        }
    }
}

/// Ids of every comment of ours on the issue (first [`MAX_COMMENT_PAGES`] pages).
async fn all_ours<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    repo_path: &str,
    number: u64,
    bot_login: Option<&str>,
) -> Result<Vec<u64>, Halt> {
    const OP: &str = "list issue comments";
    let base = rest.client.parts().1.base_url();
    let mut url = rest.url(&format!("/repos/{repo_path}/issues/{number}/comments?per_page=100"));
    let mut ours = Vec::new();
    for _ in 0..MAX_COMMENT_PAGES {
        let response = rest.call(OP, http::Method::GET, &url, None).await?;
        let next = next_link(&response, base);
        let page: Vec<Comment> = rest.decode(OP, response)?;
        ours.extend(page.iter().filter(|c| c.is_ours(bot_login)).map(|c| c.id));
        match next {
            Some(next) => url = next,
            None => break,
        }
    }
    Ok(ours)
}

/// Our comment's id, reading at most [`MAX_COMMENT_PAGES`] pages. Any
/// failure to read is a failure of the step: not knowing would mean posting
/// a second comment.
async fn find_ours<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    repo_path: &str,
    number: u64,
    bot_login: Option<&str>,
) -> Result<Option<u64>, Halt> {
    const OP: &str = "list issue comments";
    let base = rest.client.parts().1.base_url();
    let mut url = rest.url(&format!("/repos/{repo_path}/issues/{number}/comments?per_page=100"));
    for _ in 0..MAX_COMMENT_PAGES {
        let response = rest.call(OP, http::Method::GET, &url, None).await?;
        let next = next_link(&response, base);
        let page: Vec<Comment> = rest.decode(OP, response)?;
        if let Some(ours) = page.iter().find(|c| c.is_ours(bot_login)) {
            return Ok(Some(ours.id));
        }
        match next {
            Some(next) => url = next,
            None => return Ok(None),
        }
    }
    Err(Halt::Failed(format!(
        "the issue has more than {} comments; not posting a possible duplicate",
        MAX_COMMENT_PAGES * 100
    )))
}
