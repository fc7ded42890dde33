//! The answer to another reviewer (a person or an AI reviewer), in the
//! thread of the review comment that started a feedback run: confirmed,
//! not confirmed with every reason, or inconclusive. One reply of ours per
//! comment, edited in place when the comment is checked again; ours means
//! written by our own login, replying to that comment, and opening with
//! its marker. The validation comment on the pull request keeps the full
//! evidence.

use serde::Deserialize;
use serde_json::json;

use agent_zero_ports::HttpClient;

use super::comment::MAX_COMMENT_PAGES;
use super::report::StepOutcome;
use super::rest::{Halt, Rest, next_link};
use crate::client::repo_path;

/// The first line of our reply to review comment `id`.
pub(crate) fn marker(id: u64) -> String {
    format!("<!-- agent-zero:answer review-comment={id} -->")
}

#[derive(Deserialize)]
struct User {
    login: String,
}

#[derive(Deserialize)]
struct Comment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<User>,
    #[serde(default)]
    in_reply_to_id: Option<u64>,
    #[serde(default)]
    html_url: Option<String>,
}

/// Replies `text` (marked) to review comment `comment` of pull request
/// `number`, or edits our earlier reply to it.
pub(crate) async fn answer<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    owner: &str,
    repo: &str,
    number: u64,
    comment: u64,
    login: &str,
    text: &str,
) -> Result<StepOutcome, Halt> {
    let repo_path = repo_path(owner, repo)?;
    let marker = marker(comment);
    let body = format!("{marker}\n{text}");
    let mut url = rest.url(&format!("/repos/{repo_path}/pulls/{number}/comments?per_page=100"));
    let mut ours = None;
    for page_index in 0.. {
        if page_index == MAX_COMMENT_PAGES {
            return Err(Halt::Failed(format!(
                "more than {MAX_COMMENT_PAGES} pages of review comments; not answering twice"
            )));
        }
        let response = rest.call("list review comments", http::Method::GET, &url, None).await?;
        let next = next_link(&response, rest.client.parts().1.base_url());
        let page: Vec<Comment> = rest.decode("list review comments", response)?;
        ours = ours.or_else(|| {
            page.into_iter().find(|c| {
                c.in_reply_to_id == Some(comment)
                    && c.user.as_ref().is_some_and(|u| u.login.eq_ignore_ascii_case(login))
                    && c.body.as_deref().is_some_and(|b| b.starts_with(&marker))
            })
        });
        match next {
            Some(next) if ours.is_none() => url = next,
            _ => break,
        }
    }
    let payload = json!({ "body": body });
    match ours {
        Some(earlier) if earlier.body.as_deref() == Some(body.as_str()) => {
            Ok(StepOutcome::Reused { url: earlier.html_url })
        }
        Some(earlier) => {
            let url = rest.url(&format!("/repos/{repo_path}/pulls/comments/{}", earlier.id));
            let edited: Comment =
                rest.json("update review comment reply", http::Method::PATCH, &url, Some(&payload)).await?;
            Ok(StepOutcome::Updated { url: edited.html_url })
        }
        None => {
            let url = rest.url(&format!("/repos/{repo_path}/pulls/{number}/comments/{comment}/replies"));
            let created: Comment =
                rest.json("reply to review comment", http::Method::POST, &url, Some(&payload)).await?;
            Ok(StepOutcome::Created { url: created.html_url })
        }
    }
}
