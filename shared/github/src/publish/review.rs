//! The pull-request review of a proactive run: one review, `event:
//! COMMENT` (the app never approves or requests changes), its line
//! comments on the right side of the diff, posted together with `POST
//! /repos/{o}/{r}/pulls/{n}/reviews`. GitHub refuses (422) a comment whose
//! line is not in the diff; the anchors come from the diff's own hunks.
//!
//! Keyed by repository, pull request and head: a review of ours (our login
//! *and* our marker) for this head, or one that already carries this
//! finding, means it was posted; it is never posted twice.

use agent_zero_evidence::ReviewOutput;
use agent_zero_ports::HttpClient;
use serde::Deserialize;
use serde_json::{Value, json};

use super::report::StepOutcome;
use super::rest::{Halt, Rest, error_message, next_link};
use crate::client::{is_sha, repo_path};

/// Review pages read (100 each) when looking for ours; past them the
/// publication fails rather than post a duplicate.
pub(crate) const MAX_REVIEW_PAGES: usize = 10;

/// The first line of every review this app posts: the head it reviewed and
/// the finding it reports, both values the app controls.
pub(crate) fn marker(head_sha: &str, finding_id: &str) -> Option<String> {
    let id_ok = finding_id.len() <= 64 && finding_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    (is_sha(head_sha) && id_ok && !finding_id.is_empty())
        .then(|| format!("<!-- agent-zero:review head={} finding={finding_id} -->", head_sha.to_ascii_lowercase()))
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

#[derive(Deserialize)]
struct User {
    login: String,
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

/// Posts `review` once for this head and finding.
pub(crate) async fn post<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    target: Target<'_>,
    review: &ReviewOutput,
) -> Result<StepOutcome, Halt> {
    let Some(marker) = marker(target.head_sha, target.finding_id) else {
        return Err(Halt::Failed("the head sha or finding id cannot mark a review".into()));
    };
    let repo_path = repo_path(target.owner, target.repo)?;
    if let Some(url) = find_ours(rest, &repo_path, target, &marker).await? {
        return Ok(StepOutcome::Reused { url });
    }
    let comments: Vec<Value> = review
        .comments
        .iter()
        .map(|c| {
            let mut comment = json!({ "path": c.path, "line": c.line, "side": "RIGHT", "body": c.body });
            if let Some(start) = c.start_line {
                comment["start_line"] = json!(start);
                comment["start_side"] = json!("RIGHT");
            }
            comment
        })
        .collect();
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
    let head_key = format!("<!-- agent-zero:review head={} ", target.head_sha.to_ascii_lowercase());
    let finding_key = format!(" finding={} -->", target.finding_id);
    let mut url = rest.url(&format!("/repos/{repo_path}/pulls/{}/reviews?per_page=100", target.number));
    for _ in 0..MAX_REVIEW_PAGES {
        let response = rest.call("list pull request reviews", http::Method::GET, &url, None).await?;
        let next = next_link(&response, rest.client.parts().1.base_url());
        let page: Vec<Review> = rest.decode("list pull request reviews", response)?;
        for review in page {
            let by_us = review.user.as_ref().is_some_and(|u| u.login.eq_ignore_ascii_case(target.login));
            let first = review.body.as_deref().and_then(|b| b.lines().next()).unwrap_or_default();
            let ours = first == marker
                || (first.starts_with("<!-- agent-zero:review head=")
                    && (first.starts_with(&head_key) || first.ends_with(&finding_key)));
            if by_us && ours {
                return Ok(Some(review.html_url));
            }
        }
        match next {
            Some(next) => url = next,
            None => return Ok(None),
        }
    }
    Err(Halt::Failed(format!("more than {MAX_REVIEW_PAGES} pages of reviews; not posting one that may exist")))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
