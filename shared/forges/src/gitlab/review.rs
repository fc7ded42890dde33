//! The review of a proactive run on a GitLab merge request: each line
//! comment of the review as its own discussion placed on the diff
//! (`position_type: text`, the merge request's `diff_refs`, `new_line`
//! for an added line, `old_line` and `new_line` for a context line), and
//! the review's summary as one discussion on the merge request (no
//! position), found again by our username and its marker: a later review
//! whose summary differs is a reply in that same thread, so a merge
//! request has one summary thread. The notes API (`.../notes`, edited in
//! place as an issue's note is) would do as well; the loopback GitLab
//! holds the product to the discussions operations it serves.
//!
//! Nothing is posted twice: a discussion of ours (its first note by our
//! username) on the same file whose first line is the same finding marker
//! (the quote, hex-encoded, as on GitHub) means that comment is there. A
//! comment GitLab cannot place (its line is not in the merge request's
//! diff, or the merge request moved on to another head since the run read
//! it) goes into the summary note instead, with its file and line.
//!
//! In `suggest` mode a line discussion carries GitLab's suggestion block
//! (` ```suggestion:-N+0 `, the commented line and the `N` above it) by
//! the same rules as GitHub's (`publication::suggestion`): only for a
//! change verified in the sandbox that is exactly the commented lines
//! replaced, the head's file read at the reviewed head; otherwise the
//! discussion says why there is none.

use agent_zero_evidence::{ReviewComment, ReviewOutput, render_review};
use agent_zero_ports::HttpClient;

use super::api::{DiffRefs, Discussion, GitLabClient, GitLabError, LinePosition, MergeRequestDiff};
use super::diff::place;
pub use crate::publication::comment_marker as finding_marker;
use crate::publication::comment_target::{carries, marked};
use crate::publication::suggestion::{MAX_HEAD_FILE_BYTES, Suggestion, Syntax, verified_content};
use crate::publication::{PublishReport, PublishRequest, PublishStep, StepOutcome, capped};

const MARKER_END: &str = " -->";
/// Most changed files read to place the comments (three pages).
const MAX_DIFF_FILES: usize = 300;
/// Room kept in the summary for its marker and the unplaced comments' list.
const SUMMARY_ROOM: usize = 4 * 1024;

/// The marker of our summary note on merge request `iid`: a number we
/// parsed, nothing anyone else wrote.
pub fn summary_marker(iid: u64) -> String {
    format!("<!-- agent-zero:review merge-request={iid}{MARKER_END}")
}

/// What one review needs to know of the merge request.
struct Target<'a> {
    project: &'a str,
    iid: u64,
    login: &'a str,
    /// The merge request's web page (note links are under it).
    web_url: String,
}

/// The review step of a proactive run: line discussions and the summary
/// note. A retryable failure is returned for the caller to settle.
pub(super) async fn publish<H: HttpClient>(
    client: &GitLabClient<'_, H>,
    request: &PublishRequest<'_>,
    project: &str,
    report: &mut PublishReport,
) -> Result<(), GitLabError> {
    let bundle = request.bundle;
    let (Some(pr), Some(head)) = (&bundle.pull_request, request.head_sha) else { return Ok(()) };
    let mut render = request.render;
    render.max_bytes = render.max_bytes.saturating_sub(SUMMARY_ROOM);
    let Some(review) = render_review(bundle, &render) else {
        report.push(PublishStep::Review, StepOutcome::skipped("no supported finding to post"));
        return Ok(());
    };
    let Some(login) = request.bot_login else {
        let reason = "the token's own GitLab username is not known, so no discussion can be told apart as ours";
        report.push(PublishStep::Review, StepOutcome::failed(reason));
        return Ok(());
    };
    let mut target = Target { project, iid: pr.number, login, web_url: String::new() };
    let outcome = post(client, &mut target, (head, request), &review).await?;
    report.push(PublishStep::Review, outcome);
    Ok(())
}

/// Where each comment goes: placed on the diff, or into the summary.
enum Placement<'a> {
    Line(&'a ReviewComment, LinePosition<'a>),
    Summary(&'a ReviewComment, &'static str),
}

async fn post<H: HttpClient>(
    client: &GitLabClient<'_, H>,
    target: &mut Target<'_>,
    (head, request): (&str, &PublishRequest<'_>),
    review: &ReviewOutput,
) -> Result<StepOutcome, GitLabError> {
    let (project, iid) = (target.project, target.iid);
    let merge_request = client.merge_request(project, iid).await?;
    target.web_url.clone_from(&merge_request.web_url);
    let refs = merge_request.diff_refs.clone().filter(|r| r.head_sha.eq_ignore_ascii_case(head));
    let diffs = match &refs {
        Some(_) => client.merge_request_diffs(project, iid, MAX_DIFF_FILES).await?.files,
        None => Vec::new(),
    };
    let placements: Vec<Placement<'_>> = review.comments.iter().map(|c| placement(c, refs.as_ref(), &diffs)).collect();
    let (discussions, more) = client.discussions(project, iid).await?;
    if more {
        let reason = "more discussions than are read at once; posting could repeat one already there";
        return Ok(StepOutcome::failed(reason));
    }
    let ours = |comment: &ReviewComment| {
        let marker = finding_marker(comment);
        discussions.iter().any(|d| {
            d.notes.first().is_some_and(|n| {
                !n.system
                    && n.author.as_ref().is_some_and(|u| u.username.eq_ignore_ascii_case(target.login))
                    && n.body.lines().next() == Some(marker.as_str())
                    && n.position.as_ref().and_then(|p| p.new_path.as_deref()) == Some(comment.path.as_str())
            })
        })
    };
    let (mut created, mut unplaced) = (0, Vec::new());
    for placement in placements {
        match placement {
            Placement::Summary(comment, why) => unplaced.push((comment, why)),
            Placement::Line(comment, _) if ours(comment) => {}
            Placement::Line(comment, at) => {
                let mut body = format!("{}\n{}", finding_marker(comment), comment.body);
                if let Some(suggestion) = suggestion(client, target.project, head, request, comment).await? {
                    body.push_str(&suggestion.markdown(Syntax::GitLab));
                }
                match client.create_discussion(project, iid, &body, Some(&at)).await {
                    Ok(_) => created += 1,
                    // GitLab could not place it after all (`line_code`): it
                    // goes into the summary.
                    Err(e) if e.status() == Some(400) => {
                        unplaced.push((comment, "GitLab did not place it on the diff"))
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    let summary = summary_text(iid, review, &unplaced);
    let note = upsert_summary(client, target, &discussions, &summary).await?;
    Ok(match note {
        StepOutcome::Reused { url } if created > 0 => StepOutcome::Created { url },
        StepOutcome::Updated { url } if created > 0 => StepOutcome::Created { url },
        other => other,
    })
}

/// In `suggest` mode, the suggestion for `comment`: the head's file read
/// at `head` against the verified content. GitLab unreachable, 429 or 5xx
/// is the caller's to retry; a file it will not give is a reason.
async fn suggestion<H: HttpClient>(
    client: &GitLabClient<'_, H>,
    project: &str,
    head: &str,
    request: &PublishRequest<'_>,
    comment: &ReviewComment,
) -> Result<Option<Suggestion>, GitLabError> {
    let verified = match verified_content(request.bundle, request.files, comment) {
        None => return Ok(None),
        Some(Err(none)) => return Ok(Some(none)),
        Some(Ok(verified)) => verified,
    };
    let max = usize::try_from(MAX_HEAD_FILE_BYTES).unwrap_or(usize::MAX);
    match client.raw_file(project, &comment.path, head, max).await {
        Ok(file) => Ok(Some(Suggestion::of_head(file.as_deref(), verified, comment))),
        Err(e) if e.retryable() => Err(e),
        Err(_) => Ok(Some(Suggestion::None("the commented file cannot be read to place a suggestion".into()))),
    }
}

/// Our summary thread with `text` as its newest note of ours: reused when
/// it already is, a reply in it when the text differs, a new thread when
/// there is none.
async fn upsert_summary<H: HttpClient>(
    client: &GitLabClient<'_, H>,
    target: &Target<'_>,
    discussions: &[Discussion],
    text: &str,
) -> Result<StepOutcome, GitLabError> {
    let marker = summary_marker(target.iid);
    let by_us =
        |author: Option<&super::api::User>| author.is_some_and(|u| u.username.eq_ignore_ascii_case(target.login));
    let ours = discussions.iter().find(|d| {
        d.notes
            .first()
            .is_some_and(|n| !n.system && n.position.is_none() && by_us(n.author.as_ref()) && carries(&n.body, &marker))
    });
    let url = |note: u64| format!("{}#note_{note}", target.web_url);
    match ours {
        Some(thread) => {
            let newest = thread.notes.iter().rev().find(|n| !n.system && by_us(n.author.as_ref()));
            match newest {
                Some(note) if note.body == text => Ok(StepOutcome::Reused { url: Some(url(note.id)) }),
                _ => {
                    let reply = client.reply(target.project, target.iid, &thread.id, text).await?;
                    Ok(StepOutcome::Updated { url: Some(reply) })
                }
            }
        }
        None => {
            let (_, created) = client.create_discussion(target.project, target.iid, text, None).await?;
            Ok(StepOutcome::Created { url: Some(created) })
        }
    }
}

fn placement<'a>(
    comment: &'a ReviewComment,
    refs: Option<&'a DiffRefs>,
    diffs: &'a [MergeRequestDiff],
) -> Placement<'a> {
    let Some(refs) = refs else {
        return Placement::Summary(comment, "the merge request has moved on from the head that was reviewed");
    };
    let Some(file) = diffs.iter().find(|d| d.new_path == comment.path && !d.deleted_file) else {
        return Placement::Summary(comment, "its file is not among the merge request's changes");
    };
    match place(&file.diff, u64::from(comment.line)) {
        Some(old_line) => Placement::Line(
            comment,
            LinePosition {
                refs,
                old_path: &file.old_path,
                new_path: &file.new_path,
                old_line,
                new_line: u64::from(comment.line),
            },
        ),
        None => Placement::Summary(comment, "its line is not in the merge request's diff"),
    }
}

/// The summary note: its marker, the review, and the comments that are
/// on no line, each with its file, line and why.
fn summary_text(iid: u64, review: &ReviewOutput, unplaced: &[(&ReviewComment, &str)]) -> String {
    let mut text = marked(&review.body, &summary_marker(iid));
    if !unplaced.is_empty() {
        text.push_str("\n\n### Not on a line of the diff\n");
        for (comment, why) in unplaced {
            // The path is the run's own (a file it read), shown as code.
            let path = capped(&comment.path).replace('`', "'");
            text.push_str(&format!("\n**`{path}` line {}** ({why}):\n\n{}\n", comment.line, comment.body));
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
    fn markers_carry_only_numbers_and_the_quotes_marker() {
        assert_eq!(summary_marker(7), "<!-- agent-zero:review merge-request=7 -->");
        let planted = "x --> <script>alert(1)</script> <!--";
        let marker = finding_marker(&comment("a.py", 3, Some(planted)));
        assert_eq!(marker, crate::publication::finding_marker(planted));
        assert_eq!(crate::publication::marked_quote(&marker).as_deref(), Some(planted));
        assert_eq!(finding_marker(&comment("a.py", 3, None)), "<!-- agent-zero:finding line=3 -->");
    }

    #[test]
    fn a_comment_off_the_diff_goes_into_the_summary_with_its_place() {
        let review = ReviewOutput { body: "## Agent Zero review".into(), comments: vec![] };
        let off = comment("calc/stats.py", 1, Some("q"));
        let text = summary_text(4, &review, &[(&off, "its line is not in the merge request's diff")]);
        assert!(text.contains("\n<!-- agent-zero:review merge-request=4 -->\n## Agent Zero review"), "{text}");
        assert!(text.contains("**`calc/stats.py` line 1** (its line is not in the merge request's diff)"), "{text}");
        let carries = crate::publication::comment_target::carries;
        assert!(carries(&text, &summary_marker(4)) && !carries(&text, &summary_marker(5)));
    }
}
