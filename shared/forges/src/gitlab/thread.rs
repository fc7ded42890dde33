//! The answer to a reviewer's diff note, in its discussion: a reply
//! (`POST .../merge_requests/:iid/discussions/:discussion_id/notes`), so
//! it sits under the note on the diff, where the reviewer reads it.
//!
//! One answer per discussion: a reply of ours (by our username) in that
//! discussion whose first line is the answer marker of the newest note
//! asked about there means it is answered; a retry reuses it. The marker
//! holds only a note id GitLab gave (a number we parsed), so a marker
//! planted in the reviewer's text is never ours: it is not by our
//! username, and it is data.

use agent_zero_contracts::FeedbackItem;
use agent_zero_ports::HttpClient;

use super::api::{GitLabClient, GitLabError};
use crate::publication::StepOutcome;

/// The first line of our answer to note `id`.
pub(crate) fn marker(id: u64) -> String {
    format!("<!-- agent-zero:answer review-comment={id} -->")
}

/// The note ids of the feedback items that are review comments (the ids
/// the gate gave them, `review-comment:{id}`).
pub(crate) fn asked(feedback: &[FeedbackItem]) -> Vec<u64> {
    feedback.iter().filter_map(|item| item.id.strip_prefix("review-comment:")?.parse().ok()).collect()
}

/// Answers the notes `asked` of merge request `iid` with `text`: one reply
/// in each discussion that holds one of them, unless ours is there.
pub(crate) async fn answer<H: HttpClient>(
    client: &GitLabClient<'_, H>,
    project: &str,
    iid: u64,
    login: &str,
    asked: &[u64],
    text: &str,
) -> Result<StepOutcome, GitLabError> {
    let (discussions, _) = client.discussions(project, iid).await?;
    let by_us = |n: &super::api::DiscussionNote| {
        !n.system && n.author.as_ref().is_some_and(|u| u.username.eq_ignore_ascii_case(login))
    };
    let (mut created, mut reused) = (None, None);
    for discussion in &discussions {
        // The newest note asked about in this discussion names the answer.
        let Some(newest) = discussion.notes.iter().map(|n| n.id).filter(|id| asked.contains(id)).max() else {
            continue;
        };
        let marker = marker(newest);
        if let Some(ours) = discussion.notes.iter().find(|n| by_us(n) && n.body.lines().next() == Some(&marker)) {
            reused = reused.or(Some(client.merge_request_note_url(project, iid, ours.id)));
            continue;
        }
        let url = client.reply(project, iid, &discussion.id, &format!("{marker}\n{text}")).await?;
        created = created.or(Some(url));
    }
    Ok(match (created, reused) {
        (Some(url), _) => StepOutcome::Created { url: Some(url) },
        (None, Some(url)) => StepOutcome::Reused { url: Some(url) },
        (None, None) => StepOutcome::skipped("the reviewer's notes are in no discussion of the merge request"),
    })
}
