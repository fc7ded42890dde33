//! The answer to another reviewer (a person or an AI reviewer), in the
//! thread of the review comment that started a feedback run: confirmed,
//! not confirmed with every reason, or inconclusive. One reply of ours per
//! comment, edited in place when the comment is checked again; ours means
//! written by our own login, replying to that comment, and opening with
//! its marker. The validation comment on the pull request keeps the full
//! evidence.

use std::ops::ControlFlow;

use serde_json::json;

use agent_zero_ports::HttpClient;

use super::StepOutcome;
use super::rest::{Halt, Rest, written_by};
use super::review::{ReviewComment, list_review_comments};
use crate::client::repo_path;

/// The first line of our reply to review comment `id`.
pub(crate) fn marker(id: u64) -> String {
    format!("<!-- agent-zero:answer review-comment={id} -->")
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
    let mut ours = None;
    list_review_comments(rest, (&repo_path, number), "not answering twice", |c| {
        let mine = c.in_reply_to_id == Some(comment)
            && written_by(c.user.as_ref(), login)
            && c.body.as_deref().is_some_and(|b| b.starts_with(&marker));
        if mine {
            ours = Some(c);
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })
    .await?;
    let payload = json!({ "body": body });
    match ours {
        Some(earlier) if earlier.body.as_deref() == Some(body.as_str()) => {
            Ok(StepOutcome::Reused { url: earlier.html_url })
        }
        Some(earlier) => {
            let url = rest.url(&format!("/repos/{repo_path}/pulls/comments/{}", earlier.id));
            let edited: ReviewComment =
                rest.json("update review comment reply", http::Method::PATCH, &url, Some(&payload)).await?;
            Ok(StepOutcome::Updated { url: edited.html_url })
        }
        None => {
            let url = rest.url(&format!("/repos/{repo_path}/pulls/{number}/comments/{comment}/replies"));
            let created: ReviewComment =
                rest.json("reply to review comment", http::Method::POST, &url, Some(&payload)).await?;
            Ok(StepOutcome::Created { url: created.html_url })
        }
    }
}
