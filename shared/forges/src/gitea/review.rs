//! The review of a proactive run on a Gitea or Forgejo pull request: ONE
//! review (`POST .../pulls/{n}/reviews`, `event: COMMENT`) whose body is
//! the summary and whose line comments are the findings, each at its path
//! and new-side line (`new_position`: Gitea's line numbers are the file's,
//! not diff positions).
//!
//! Found again by our login and the review marker on its first line (the
//! pull request's number and the head reviewed: numbers we hold, nothing
//! anyone else wrote), so a retry posts nothing twice. A later head gets a
//! review of its own, without the line comments an earlier review of ours
//! already holds (same file, same finding marker: the quote, hex-encoded,
//! as on GitHub and GitLab). A marker anyone else wrote (in a review, the
//! pull request's text or its diff) is text: only reviews by our login
//! are read as ours.
//!
//! A comment Gitea would not show on the diff (its line is not in the pull
//! request's hunks, or the pull request moved on to another head since the
//! run read it) goes into the review's body instead, with its file and
//! line. Gitea has no suggestion blocks: in `suggest` mode a comment whose
//! verified change GitHub could have shown as one says Gitea cannot, and
//! any other says why there is no suggestion, as GitHub's would
//! (`publication::suggestion`).

use agent_zero_contracts::RunMode;
use agent_zero_evidence::{ReviewComment, ReviewOutput, render_review};
use agent_zero_ports::HttpClient;

use super::api::{GiteaClient, GiteaError, NewLineComment};
use crate::publication::comment_marker as finding_marker;
use crate::publication::suggestion::{Syntax, verified_content};
use crate::publication::{PublishRequest, StepOutcome, capped};

const REVIEW_PREFIX: &str = "<!-- agent-zero:review pull-request=";
const MARKER_END: &str = " -->";
/// Room kept in the body for its marker and the unplaced comments' list.
const SUMMARY_ROOM: usize = 4 * 1024;
/// Most of our own earlier reviews whose comments are read.
const MAX_OWN_REVIEWS: usize = 20;

/// The marker of our review of `head` on pull request `number`, or `None`
/// when `head` is no commit id.
pub(crate) fn review_marker(number: u64, head: &str) -> Option<String> {
    agent_zero_contracts::Sha::is_valid(head)
        .then(|| format!("{REVIEW_PREFIX}{number} head={}{MARKER_END}", head.to_ascii_lowercase()))
}

/// The review step of a proactive run on pull request `number` at `head`.
pub(crate) async fn publish<H: HttpClient>(
    client: &GiteaClient<'_, H>,
    request: &PublishRequest<'_>,
    number: u64,
    head: &str,
) -> Result<StepOutcome, GiteaError> {
    let (owner, repo) = (request.owner, request.repo);
    let mut render = request.render;
    render.max_bytes = render.max_bytes.saturating_sub(SUMMARY_ROOM);
    let Some(review) = render_review(request.bundle, &render) else {
        return Ok(StepOutcome::skipped("no supported finding to post"));
    };
    let Some(login) = request.bot_login else {
        let reason = "the token's own Gitea login is not known, so no review can be told apart as ours";
        return Ok(StepOutcome::failed(reason));
    };
    let Some(marker) = review_marker(number, head) else {
        return Ok(StepOutcome::failed("the head is not a commit id, so no review can be marked"));
    };
    let reviews = client.reviews(owner, repo, number).await?;
    let mut ours: Vec<_> = reviews.iter().filter(|r| r.by(login) && r.body.starts_with(REVIEW_PREFIX)).collect();
    if let Some(found) = ours.iter().find(|r| r.body.lines().next() == Some(marker.as_str())) {
        return Ok(StepOutcome::Reused { url: found.html_url.clone() });
    }
    // Line comments an earlier review of ours holds (newest reviews first).
    ours.retain(|r| r.comments_count > 0);
    ours.sort_unstable_by_key(|r| std::cmp::Reverse(r.id));
    ours.truncate(MAX_OWN_REVIEWS);
    let mut posted: Vec<(String, String)> = Vec::new();
    for earlier in ours {
        for c in client.review_comments(owner, repo, number, earlier.id).await? {
            if c.user.as_ref().is_some_and(|u| u.login.eq_ignore_ascii_case(login)) {
                posted.push((c.path, c.body.lines().next().unwrap_or_default().to_owned()));
            }
        }
    }
    let already = |c: &ReviewComment| posted.iter().any(|(path, first)| *path == c.path && *first == finding_marker(c));
    let fresh: Vec<&ReviewComment> = review.comments.iter().filter(|c| !already(c)).collect();
    if fresh.is_empty() && !review.comments.is_empty() {
        return Ok(StepOutcome::skipped("every finding of this review is already posted on the pull request"));
    }
    // Where each comment goes: the diff of the head reviewed, or the body.
    let current = client.pull_request(owner, repo, number).await?;
    let files = if current.head.sha.eq_ignore_ascii_case(head) {
        let diff = client.pull_diff(owner, repo, number).await?;
        Some(super::diff::split(&String::from_utf8_lossy(&diff)))
    } else {
        None
    };
    let no_suggestion = request.bundle.mode == RunMode::Suggest;
    let mut bodies: Vec<(&ReviewComment, String)> = Vec::new();
    let mut unplaced: Vec<(&ReviewComment, &str)> = Vec::new();
    for comment in fresh {
        match placement(comment, files.as_deref()) {
            Ok(()) => {
                let mut body = format!("{}\n{}", finding_marker(comment), comment.body);
                // In `suggest` mode, what GitHub's comment would say: why
                // there is no suggestion, or, where a verified change
                // could have been one, that Gitea cannot show it.
                match verified_content(request.bundle, request.files, comment) {
                    None => {}
                    Some(Err(none)) => body.push_str(&none.markdown(Syntax::GitHub)),
                    Some(Ok(_)) => body.push_str(super::commit::NO_SUGGESTIONS),
                }
                bodies.push((comment, body));
            }
            Err(why) => unplaced.push((comment, why)),
        }
    }
    let lines: Vec<NewLineComment<'_>> =
        bodies.iter().map(|(c, body)| NewLineComment { path: &c.path, line: u64::from(c.line), body }).collect();
    let text = summary_text(&marker, &review, &unplaced, no_suggestion);
    let created = client.create_review(owner, repo, number, head, &text, &lines).await?;
    Ok(StepOutcome::Created { url: created.html_url })
}

/// Whether Gitea shows `comment` on the diff read (`None`: the pull
/// request moved on), or why not.
fn placement(comment: &ReviewComment, files: Option<&[super::diff::DiffFile]>) -> Result<(), &'static str> {
    let Some(files) = files else {
        return Err("the pull request has moved on from the head that was reviewed");
    };
    let Some(file) = files.iter().find(|f| f.path == comment.path && f.status != "removed") else {
        return Err("its file is not among the pull request's changes");
    };
    let patch = file.patch.as_deref().unwrap_or_default();
    match crate::gitlab::diff::place(patch, u64::from(comment.line)) {
        Some(_) => Ok(()),
        None => Err("its line is not in the pull request's diff"),
    }
}

/// The review's body: its marker, the summary, and the comments that are
/// on no line, each with its file, line and why.
fn summary_text(
    marker: &str,
    review: &ReviewOutput,
    unplaced: &[(&ReviewComment, &str)],
    no_suggestion: bool,
) -> String {
    let mut text = format!("{marker}\n{}", review.body);
    if !unplaced.is_empty() {
        text.push_str("\n\n### Not on a line of the diff\n");
        for (comment, why) in unplaced {
            // The path is the run's own (a file it read), shown as code.
            let path = capped(&comment.path).replace('`', "'");
            text.push_str(&format!("\n**`{path}` line {}** ({why}):\n\n{}\n", comment.line, comment.body));
        }
        if no_suggestion {
            text.push_str(super::commit::NO_SUGGESTIONS);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(path: &str, line: u32, quote: Option<&str>) -> ReviewComment {
        ReviewComment { path: path.into(), line, start_line: None, body: "b".into(), quote: quote.map(str::to_owned) }
    }

    #[test]
    fn markers_carry_only_numbers_a_commit_id_and_the_quotes_marker() {
        let sha = "9F3C2A1B7E6D5C4B3A291807F6E5D4C3B2A19080";
        assert_eq!(
            review_marker(7, sha).as_deref(),
            Some("<!-- agent-zero:review pull-request=7 head=9f3c2a1b7e6d5c4b3a291807f6e5d4c3b2a19080 -->")
        );
        assert_eq!(review_marker(7, "main --> <b>"), None);
        let planted = "x --> <script>alert(1)</script> <!--";
        assert_eq!(finding_marker(&comment("a.py", 3, Some(planted))), crate::publication::finding_marker(planted));
        assert_eq!(finding_marker(&comment("a.py", 3, None)), "<!-- agent-zero:finding line=3 -->");
    }

    #[test]
    fn a_comment_off_the_diff_goes_into_the_body_with_its_place() {
        let files = super::super::diff::split(
            "diff --git a/src/lib.py b/src/lib.py\nindex 1..2 100644\n--- a/src/lib.py\n+++ b/src/lib.py\n@@ -1 +1,2 @@\n-x = 1\n+x = 2\n+y = x / 0\n",
        );
        assert_eq!(placement(&comment("src/lib.py", 2, None), Some(&files)), Ok(()));
        assert_eq!(
            placement(&comment("src/lib.py", 9, None), Some(&files)),
            Err("its line is not in the pull request's diff")
        );
        assert!(placement(&comment("other.py", 1, None), Some(&files)).is_err());
        assert!(placement(&comment("src/lib.py", 2, None), None).unwrap_err().contains("moved on"));
        let review = ReviewOutput { body: "## Agent Zero review".into(), comments: vec![] };
        let off = comment("src/lib.py", 9, Some("q"));
        let marker = review_marker(4, &"a".repeat(40)).unwrap();
        let text = summary_text(&marker, &review, &[(&off, "its line is not in the pull request's diff")], true);
        assert!(text.starts_with(&format!("{marker}\n## Agent Zero review")), "{text}");
        assert!(text.contains("**`src/lib.py` line 9** (its line is not in the pull request's diff)"), "{text}");
        assert!(text.contains("Gitea has no suggestion blocks"), "{text}");
    }
}
