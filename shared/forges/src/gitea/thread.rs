//! The answer to a reviewer's line comment, in its conversation.
//!
//! Gitea 1.22's API has no reply to a review comment (the web UI's reply
//! is not an API operation). What joins a conversation is where a comment
//! is: Gitea's "Files changed" view gathers every code comment of the pull
//! request by its file and line (`FetchCodeComments` groups by `TreePath`;
//! `Diff.LoadComments` puts each line's comments, whatever their review,
//! under that line, oldest first), and that line's comments are one
//! conversation. So the answer is a new review (`event: COMMENT`) with one
//! line comment at the same path and new-side line; in the Conversation
//! tab it is listed under its own review. docs/forges.md says so.
//!
//! One answer per comment: ours is a line comment, in a review by our own
//! login, at the comment's path, opening with the comment's marker. Gitea
//! has no API to edit a review comment, so an answer given stands (the
//! validation comment on the pull request is edited in place and keeps the
//! latest evidence).

use agent_zero_contracts::FeedbackItem;
use agent_zero_ports::HttpClient;

use super::api::{GiteaClient, GiteaError, NewLineComment};
use crate::publication::StepOutcome;

/// Most of our own reviews whose comments are read to find an answer.
const MAX_OWN_REVIEWS: usize = 20;

/// The first line of our answer to review comment `id`.
pub(crate) fn marker(id: u64) -> String {
    format!("<!-- agent-zero:answer review-comment={id} -->")
}

/// A reviewer's comment to answer: its id, path and new-side line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Asked<'a> {
    pub(crate) id: u64,
    pub(crate) path: &'a str,
    pub(crate) line: u64,
}

/// The feedback items that are review comments on a new-side line (the
/// ids intake gave them, `review-comment:{id}`).
pub(crate) fn asked(feedback: &[FeedbackItem]) -> Vec<Asked<'_>> {
    feedback
        .iter()
        .filter_map(|item| {
            let id = item.id.strip_prefix("review-comment:")?.parse().ok()?;
            let (path, line) = (item.path.as_deref()?, item.line.filter(|l| *l > 0)?);
            Some(Asked { id, path, line })
        })
        .collect()
}

/// Answers each of `asked` with `text` at its path and line on `head`: one
/// review holding every answer not given yet.
#[allow(clippy::too_many_arguments)] // the pull request's coordinates and the answer
pub(crate) async fn answer<H: HttpClient>(
    client: &GiteaClient<'_, H>,
    owner: &str,
    repo: &str,
    number: u64,
    head: &str,
    login: &str,
    asked: &[Asked<'_>],
    text: &str,
) -> Result<StepOutcome, GiteaError> {
    let reviews = client.reviews(owner, repo, number).await?;
    let mut ours: Vec<u64> = reviews.iter().filter(|r| r.by(login) && r.comments_count > 0).map(|r| r.id).collect();
    // The newest first.
    ours.sort_unstable_by(|a, b| b.cmp(a));
    ours.truncate(MAX_OWN_REVIEWS);
    let mut answered = Vec::new();
    let mut earlier_url = None;
    for id in ours {
        for comment in client.review_comments(owner, repo, number, id).await? {
            let mine = comment.user.as_ref().is_some_and(|u| u.login.eq_ignore_ascii_case(login));
            if let Some(a) =
                asked.iter().find(|a| mine && comment.path == a.path && comment.body.starts_with(&marker(a.id)))
            {
                answered.push(a.id);
                earlier_url = earlier_url.or(comment.html_url);
            }
        }
    }
    let bodies: Vec<(&Asked<'_>, String)> =
        asked.iter().filter(|a| !answered.contains(&a.id)).map(|a| (a, format!("{}\n{text}", marker(a.id)))).collect();
    if bodies.is_empty() {
        return Ok(StepOutcome::Reused { url: earlier_url });
    }
    let comments: Vec<NewLineComment<'_>> =
        bodies.iter().map(|(a, body)| NewLineComment { path: a.path, line: a.line, body }).collect();
    let review = client.create_review(owner, repo, number, head, "", &comments).await?;
    Ok(StepOutcome::Created { url: review.html_url })
}
