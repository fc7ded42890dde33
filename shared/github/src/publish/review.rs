//! The pull-request review of a proactive run: one review, `event:
//! COMMENT` (the app never approves or requests changes), its line
//! comments on the right side of the diff, posted together with `POST
//! /repos/{o}/{r}/pulls/{n}/reviews`. GitHub refuses (422) a comment whose
//! line is not in the diff; the anchors come from the diff's own hunks.
//!
//! Keyed by repository, pull request and head: a review of ours (our login
//! *and* our marker) for this head, or one that already carries this
//! finding, means it was posted; it is never posted twice.
//!
//! Re-runs converge. Each line comment of ours starts with a marker holding
//! its quote (hex, so untrusted text never shapes the markup); before
//! posting, our earlier review comments (`GET .../pulls/{n}/comments`) are
//! read: a comment whose file and quote are already posted is dropped, and
//! an earlier one whose quote the head's file no longer holds (read with
//! the contents API, unless the ledger says the file did not change) gets
//! one reply, `Resolved in {sha}` (`POST .../comments/{id}/replies`). REST
//! only: GraphQL's `resolveReviewThread` needs thread node ids and a second
//! API for a state a reply already tells the reader.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use agent_zero_contracts::{EvidenceBundle, ReviewLedger, Trigger};
use agent_zero_evidence::{ReviewOutput, render_review};
use agent_zero_forges::publication::{finding_marker, marked_quote};
use agent_zero_ports::HttpClient;
use serde::Deserialize;
use serde_json::{Value, json};

use super::comment::MAX_COMMENT_PAGES;
use super::rest::{Halt, Paged, Rest, User, error_message, written_by};
use super::{LOGIN_UNKNOWN, PublishFile, PublishRequest, REVIEW_MARKER_ROOM, settle, suggestion};
use super::{PublishReport, PublishStep, StepOutcome};
use crate::client::{GitHubError, MAX_REVIEW_PAGES, REVIEW_PREFIX, is_sha, repo_path};

/// Most files read at the head to learn whether earlier quotes are gone.
const MAX_RESOLVE_READS: usize = 20;
/// Most bytes of a file read for that.
const MAX_RESOLVE_FILE_BYTES: u64 = 1_000_000;

const RESOLVED_PREFIX: &str = "<!-- agent-zero:resolved head=";
const MARKER_END: &str = " -->";

/// The first line of every review this app posts: the head it reviewed and
/// the finding it reports, both values the app controls.
pub(crate) fn marker(head_sha: &str, finding_id: &str) -> Option<String> {
    let id_ok = finding_id.len() <= 64 && finding_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    (is_sha(head_sha) && id_ok && !finding_id.is_empty())
        .then(|| format!("{REVIEW_PREFIX}{} finding={finding_id}{MARKER_END}", head_sha.to_ascii_lowercase()))
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Deserialize)]
struct Review {
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<User>,
    #[serde(default)]
    html_url: Option<String>,
}

/// A review comment as `GET .../pulls/{n}/comments` lists it (and as
/// GitHub answers a reply or an edit).
#[derive(Debug, Deserialize)]
pub(crate) struct ReviewComment {
    pub(crate) id: u64,
    #[serde(default)]
    pub(crate) path: String,
    #[serde(default)]
    pub(crate) body: Option<String>,
    #[serde(default)]
    pub(crate) user: Option<User>,
    #[serde(default)]
    pub(crate) in_reply_to_id: Option<u64>,
    #[serde(default)]
    pub(crate) html_url: Option<String>,
}

/// Reads the review comments of pull request `number` of `repo_path`, 100
/// a page, handing each to `visit` until it breaks. More than
/// [`MAX_COMMENT_PAGES`] pages is the step's failure: `risk` says what not
/// knowing them all would do.
pub(crate) async fn list_review_comments<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    (repo_path, number): (&str, u64),
    risk: &str,
    visit: impl FnMut(ReviewComment) -> ControlFlow<()>,
) -> Result<(), Halt> {
    let first = rest.url(&format!("/repos/{repo_path}/pulls/{number}/comments?per_page=100"));
    match rest.pages("list review comments", first, MAX_COMMENT_PAGES, visit).await? {
        Paged::Done | Paged::Stopped => Ok(()),
        Paged::PagesLeft => {
            Err(Halt::Failed(format!("more than {MAX_COMMENT_PAGES} pages of review comments; {risk}")))
        }
    }
}

/// One earlier line comment of ours and what it quoted.
#[derive(Debug)]
struct Posted {
    id: u64,
    path: String,
    quote: String,
    /// A reply of ours already says it is resolved.
    resolved: bool,
}

/// What one review is about.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) owner: &'a str,
    pub(crate) repo: &'a str,
    pub(crate) number: u64,
    pub(crate) head_sha: &'a str,
    pub(crate) finding_id: &'a str,
    /// Our own login: only reviews by it are ours.
    pub(crate) login: &'a str,
}

/// The review and resolve steps of a proactive run on a pull request;
/// `Err(ms)` on a rate limit.
pub(crate) async fn publish<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    request: &PublishRequest<'_>,
    report: &mut PublishReport,
) -> Result<(), u64> {
    let bundle = request.bundle;
    let (Some(pr), Some(sha), Some(ledger)) = (&bundle.pull_request, request.head_sha, &bundle.review) else {
        return Ok(());
    };
    if bundle.trigger != Trigger::Proactive {
        return Ok(());
    }
    // The marker line is added to the rendered body: keep the whole within the limit.
    let mut render = request.render;
    render.max_bytes = render.max_bytes.saturating_sub(REVIEW_MARKER_ROOM);
    let review = render_review(bundle, &render);
    let Some(login) = request.bot_login else {
        if review.is_some() {
            report.push(PublishStep::Review, StepOutcome::failed(LOGIN_UNKNOWN));
        }
        report.push(PublishStep::Resolve, StepOutcome::skipped(LOGIN_UNKNOWN));
        return Ok(());
    };
    let finding_id = bundle.finding.as_ref().map_or("none", |f| f.id.as_str());
    let target = Target { owner: &pr.owner, repo: &pr.repo, number: pr.number, head_sha: sha, finding_id, login };
    let earlier = match earlier_findings(rest, target).await {
        Ok(earlier) => earlier,
        Err(halt) => {
            let outcome = settle(Err(halt))?;
            if review.is_some() {
                report.push(PublishStep::Review, outcome.clone());
            }
            report.push(PublishStep::Resolve, outcome);
            return Ok(());
        }
    };
    if let Some(review) = review {
        let outcome = post(rest, target, &review, &earlier, (bundle, request.files)).await;
        report.push(PublishStep::Review, settle(outcome)?);
    }
    report.push(PublishStep::Resolve, settle(resolve(rest, target, ledger, &earlier).await)?);
    Ok(())
}

/// Posts `review` once for this head and finding, without the line
/// comments already posted (same file, same quote); in `suggest` mode each
/// comment says whether it carries a verified suggestion (`suggestion.rs`).
async fn post<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    target: Target<'_>,
    review: &ReviewOutput,
    earlier: &[Posted],
    (bundle, files): (&EvidenceBundle, &[PublishFile<'_>]),
) -> Result<StepOutcome, Halt> {
    let Some(marker) = marker(target.head_sha, target.finding_id) else {
        return Err(Halt::Failed("the head sha or finding id cannot mark a review".into()));
    };
    let repo_path = repo_path(target.owner, target.repo)?;
    if let Some(url) = find_ours(rest, &repo_path, target, &marker).await? {
        return Ok(StepOutcome::Reused { url });
    }
    let already = |path: &str, quote: &str| {
        let mark = finding_marker(quote);
        earlier.iter().any(|p| p.path == path && finding_marker(&p.quote) == mark)
    };
    let fresh: Vec<_> =
        review.comments.iter().filter(|c| !c.quote.as_deref().is_some_and(|q| already(&c.path, q))).collect();
    if fresh.is_empty() && !review.comments.is_empty() {
        return Ok(StepOutcome::skipped("every finding of this review is already posted on the pull request"));
    }
    let mut comments: Vec<Value> = Vec::with_capacity(fresh.len());
    for c in fresh {
        let mut body = match c.quote.as_deref() {
            Some(quote) => format!("{}\n{}", finding_marker(quote), c.body),
            None => c.body.clone(),
        };
        let at = (target.owner, target.repo, target.head_sha);
        if let Some(suggestion) = suggestion::for_comment(rest, at, bundle, files, c).await? {
            body.push_str(&suggestion.markdown(agent_zero_forges::publication::suggestion::Syntax::GitHub));
        }
        let mut comment = json!({ "path": c.path, "line": c.line, "side": "RIGHT", "body": body });
        if let Some(start) = c.start_line {
            comment["start_line"] = json!(start);
            comment["start_side"] = json!("RIGHT");
        }
        comments.push(comment);
    }
    let body = json!({
        "commit_id": target.head_sha,
        "body": format!("{marker}\n{}", review.body),
        "event": "COMMENT",
        "comments": comments,
    });
    let url = rest.url(&format!("/repos/{repo_path}/pulls/{}/reviews", target.number));
    let response = rest.call("create pull request review", http::Method::POST, &url, Some(&body)).await?;
    if response.status().as_u16() == 422 {
        // A line outside the diff, or a review GitHub will not take: say which.
        return Err(Halt::Failed(format!("GitHub refused the review (422): {}", error_message(&response))));
    }
    let posted: Review = rest.decode("create pull request review", response)?;
    Ok(StepOutcome::Created { url: posted.html_url })
}

/// The URL of our review for this head or this finding, if one exists.
async fn find_ours<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    repo_path: &str,
    target: Target<'_>,
    marker: &str,
) -> Result<Option<Option<String>>, Halt> {
    let head_key = format!("{REVIEW_PREFIX}{} ", target.head_sha.to_ascii_lowercase());
    let finding_key = format!(" finding={}{MARKER_END}", target.finding_id);
    let first = rest.url(&format!("/repos/{repo_path}/pulls/{}/reviews?per_page=100", target.number));
    let mut found = None;
    let paged = rest
        .pages("list pull request reviews", first, MAX_REVIEW_PAGES, |review: Review| {
            let by_us = written_by(review.user.as_ref(), target.login);
            let first = review.body.as_deref().and_then(|b| b.lines().next()).unwrap_or_default();
            let ours = first == marker
                || (first.starts_with(REVIEW_PREFIX)
                    && (first.starts_with(&head_key) || first.ends_with(&finding_key)));
            if by_us && ours {
                found = Some(review.html_url);
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })
        .await?;
    match paged {
        Paged::Stopped => Ok(found),
        Paged::Done => Ok(None),
        Paged::PagesLeft => {
            Err(Halt::Failed(format!("more than {MAX_REVIEW_PAGES} pages of reviews; not posting one that may exist")))
        }
    }
}

/// Our earlier line comments on the pull request, each with its quote and
/// whether a reply of ours already resolved it.
async fn earlier_findings<H: HttpClient>(rest: &Rest<'_, '_, H>, target: Target<'_>) -> Result<Vec<Posted>, Halt> {
    let repo_path = repo_path(target.owner, target.repo)?;
    let mut posted = Vec::new();
    let mut resolved = Vec::new();
    let risk = "not posting findings that may exist";
    list_review_comments(rest, (&repo_path, target.number), risk, |comment| {
        if !written_by(comment.user.as_ref(), target.login) {
            return ControlFlow::Continue(());
        }
        let body = comment.body.as_deref().unwrap_or_default();
        match comment.in_reply_to_id {
            Some(parent) if body.starts_with(RESOLVED_PREFIX) => resolved.push(parent),
            Some(_) => {}
            None => {
                if let Some(quote) = marked_quote(body) {
                    posted.push(Posted { id: comment.id, path: comment.path, quote, resolved: false });
                }
            }
        }
        ControlFlow::Continue(())
    })
    .await?;
    for p in &mut posted {
        p.resolved = resolved.contains(&p.id);
    }
    Ok(posted)
}

/// Replies "resolved in {sha}" to each open finding of ours whose quote
/// the head's file no longer holds.
async fn resolve<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    target: Target<'_>,
    ledger: &ReviewLedger,
    earlier: &[Posted],
) -> Result<StepOutcome, Halt> {
    let open: Vec<&Posted> = earlier.iter().filter(|p| !p.resolved).collect();
    if open.is_empty() {
        return Ok(StepOutcome::skipped("no open finding of ours on this pull request"));
    }
    let repo_path = repo_path(target.owner, target.repo)?;
    let sha = target.head_sha.to_ascii_lowercase();
    // The head's text of each file concerned (`None`: no such file).
    let mut texts: BTreeMap<&str, Option<String>> = BTreeMap::new();
    let (mut replied, mut unread, mut last_url) = (0usize, 0usize, None);
    for finding in open {
        // A file that did not change since the review that posted it still holds it.
        if ledger.unchanged.contains(&finding.path) {
            continue;
        }
        if !texts.contains_key(finding.path.as_str()) {
            if texts.len() == MAX_RESOLVE_READS {
                unread += 1;
                continue;
            }
            let read =
                rest.client.file_at(target.owner, target.repo, &finding.path, &sha, MAX_RESOLVE_FILE_BYTES).await;
            let text = match read {
                Ok(file) => file.map(|f| collapse(&String::from_utf8_lossy(&f.bytes))),
                Err(
                    GitHubError::FileTooLarge { .. } | GitHubError::NotAFile { .. } | GitHubError::InvalidName { .. },
                ) => {
                    unread += 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            texts.insert(finding.path.as_str(), text);
        }
        let holds = texts[finding.path.as_str()].as_deref().is_some_and(|t| t.contains(finding.quote.as_str()));
        if holds {
            continue;
        }
        let body = json!({
            "body": format!(
                "{RESOLVED_PREFIX}{sha}{MARKER_END}\nResolved in {sha}: the quoted lines are no longer in this file at that head."
            )
        });
        let url = rest.url(&format!("/repos/{repo_path}/pulls/{}/comments/{}/replies", target.number, finding.id));
        let response = rest.call("reply to review comment", http::Method::POST, &url, Some(&body)).await?;
        if !response.status().is_success() {
            return Err(rest.failure("reply to review comment", response));
        }
        let reply: Review = rest.decode("reply to review comment", response)?;
        last_url = reply.html_url;
        replied += 1;
    }
    Ok(match (replied, unread) {
        (0, 0) => StepOutcome::skipped("every open finding of ours is still in the head"),
        (0, n) => StepOutcome::skipped(format!("{n} open findings could not be checked against the head")),
        _ => StepOutcome::Created { url: last_url },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::reviewed_head;

    #[test]
    fn markers_carry_only_values_the_app_controls() {
        let sha = "9F3C2A1B7E6D5C4B3A291807F6E5D4C3B2A19080";
        assert_eq!(
            marker(sha, "finding-00ff").as_deref(),
            Some("<!-- agent-zero:review head=9f3c2a1b7e6d5c4b3a291807f6e5d4c3b2a19080 finding=finding-00ff -->")
        );
        assert_eq!(marker("main", "finding-1"), None);
        assert_eq!(marker(sha, "x --> <b>"), None);
        assert_eq!(marker(sha, ""), None);
        let body = format!("{}\n## Agent Zero review", marker(sha, "finding-1").unwrap());
        assert_eq!(reviewed_head(&body), Some("9f3c2a1b7e6d5c4b3a291807f6e5d4c3b2a19080"));
        assert_eq!(reviewed_head("<!-- agent-zero:review head=main finding=x -->"), None);
        assert_eq!(reviewed_head("looks good"), None);
    }
}
