//! The validation comment: ours only when it is written by our own login
//! (learned from GitHub, see [`crate::IdentityCache`]) *and* opens with
//! [`ISSUE_VALIDATION_MARKER`] and this run's subject marker
//! ([`super::subject`]). Ours is edited in place; it is posted only when
//! there is none. A comment by anyone else is never edited or deleted,
//! whatever it says, and nothing else on the issue is touched.

use std::ops::ControlFlow;

use agent_zero_ports::HttpClient;
use serde::Deserialize;
use serde_json::json;

use super::StepOutcome;
use super::rest::{Halt, Paged, Rest, User, written_by};
use crate::client::repo_path;
use agent_zero_forges::publication::comment_target::{carries, marked};

/// Comment pages read (100 each) when looking for our comment (on an
/// issue, or among a pull request's review comments); past them the
/// publication fails rather than post a duplicate.
pub const MAX_COMMENT_PAGES: usize = 10;

/// How far back the comments are read again when it has more than
/// [`MAX_COMMENT_PAGES`] pages: the comments updated in the last day (with
/// `since`), which hold ours if this run or a recent one wrote it. So a
/// crowded issue, or one an outsider floods, still gets its verdict.
pub(super) const RECENT_COMMENTS_MS: u64 = 24 * 60 * 60 * 1000;

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

/// Whose comments are ours, and which of them answer this subject.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ours<'a> {
    /// Our own login (`{slug}[bot]` for an App).
    pub(crate) login: &'a str,
    /// The subject's marker line.
    pub(crate) marker: &'a str,
}

impl Comment {
    fn is_ours(&self, ours: Ours<'_>) -> bool {
        written_by(self.user.as_ref(), ours.login) && self.body.as_deref().is_some_and(|b| carries(b, ours.marker))
    }
}

/// Edits our validation comment on issue `number`, or posts it once.
pub(crate) async fn upsert<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    owner: &str,
    repo: &str,
    number: u64,
    ours: Ours<'_>,
    text: &str,
) -> Result<StepOutcome, Halt> {
    let repo_path = repo_path(owner, repo)?;
    let body = json!({ "body": marked(text, ours.marker) });
    match find_ours(rest, &repo_path, number, ours).await? {
        Some(id) => {
            let url = rest.url(&format!("/repos/{repo_path}/issues/comments/{id}"));
            let comment: Comment = rest.json("update issue comment", http::Method::PATCH, &url, Some(&body)).await?;
            Ok(StepOutcome::Updated { url: comment.html_url })
        }
        None => {
            let url = rest.url(&format!("/repos/{repo_path}/issues/{number}/comments"));
            let comment: Comment = rest.json("create issue comment", http::Method::POST, &url, Some(&body)).await?;
            // Two deliveries of the same publication (or two runs on the same
            // subject) can both find no comment and both post. Converge on
            // one: keep the oldest of ours, delete our newer duplicates. Only
            // comments by our own login with this subject's marker are
            // candidates: nobody else's comment is ever deleted.
            let mine = all_ours(rest, &repo_path, number, ours).await?;
            if let Some(&keep) = mine.iter().min() {
                for id in mine.into_iter().filter(|id| *id != keep) {
                    let url = rest.url(&format!("/repos/{repo_path}/issues/comments/{id}"));
                    let _ = rest.call("delete duplicate issue comment", http::Method::DELETE, &url, None).await?;
                }
                if keep != comment.id {
                    // The older one stays; it gets this run's verdict.
                    let url = rest.url(&format!("/repos/{repo_path}/issues/comments/{keep}"));
                    let kept: Comment =
                        rest.json("update issue comment", http::Method::PATCH, &url, Some(&body)).await?;
                    return Ok(StepOutcome::Updated { url: kept.html_url });
                }
            }
            Ok(StepOutcome::Created { url: comment.html_url })
        }
    }
}

/// The first page of the comments of issue `number`.
fn first_page<H: HttpClient>(rest: &Rest<'_, '_, H>, repo_path: &str, number: u64) -> String {
    rest.url(&format!("/repos/{repo_path}/issues/{number}/comments?per_page=100"))
}

/// The first page of the comments of issue `number` updated in the last
/// [`RECENT_COMMENTS_MS`] (GitHub's `since`, `YYYY-MM-DDTHH:MM:SSZ`).
fn recent_page<H: HttpClient>(rest: &Rest<'_, '_, H>, repo_path: &str, number: u64) -> String {
    let since = rest.now_ms.saturating_sub(RECENT_COMMENTS_MS);
    let since = agent_zero_contracts::rfc3339(since - since % 1000).replace(".000Z", "Z");
    rest.url(&format!("/repos/{repo_path}/issues/{number}/comments?per_page=100&since={since}"))
}

/// Hands the comments of issue `number` to `visit`: the first
/// [`MAX_COMMENT_PAGES`] pages and, when there are more, the comments
/// updated in the last day. More than that many pages of those too is the
/// step's failure: not knowing would mean posting a second comment.
async fn scan<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    repo_path: &str,
    number: u64,
    mut visit: impl FnMut(Comment) -> ControlFlow<()>,
) -> Result<Paged, Halt> {
    let first = first_page(rest, repo_path, number);
    let paged = rest.pages("list issue comments", first, MAX_COMMENT_PAGES, &mut visit).await?;
    if paged != Paged::PagesLeft {
        return Ok(paged);
    }
    let recent = recent_page(rest, repo_path, number);
    match rest.pages("list issue comments", recent, MAX_COMMENT_PAGES, &mut visit).await? {
        Paged::PagesLeft => Err(Halt::Failed(format!(
            "the issue has more than {} comments, {} of them in the last day; not posting a possible duplicate",
            MAX_COMMENT_PAGES * 100,
            MAX_COMMENT_PAGES * 100
        ))),
        paged => Ok(paged),
    }
}

/// Ids of every comment of ours on the issue ([`scan`]'s comments).
async fn all_ours<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    repo_path: &str,
    number: u64,
    ours: Ours<'_>,
) -> Result<Vec<u64>, Halt> {
    let mut mine = Vec::new();
    scan(rest, repo_path, number, |c: Comment| {
        if c.is_ours(ours) && !mine.contains(&c.id) {
            mine.push(c.id);
        }
        ControlFlow::Continue(())
    })
    .await?;
    Ok(mine)
}

/// Our comment's id, among [`scan`]'s comments.
async fn find_ours<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    repo_path: &str,
    number: u64,
    ours: Ours<'_>,
) -> Result<Option<u64>, Halt> {
    let mut found = None;
    let paged = scan(rest, repo_path, number, |c: Comment| {
        found = c.is_ours(ours).then_some(c.id);
        if found.is_some() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    })
    .await?;
    Ok(if paged == Paged::Stopped { found } else { None })
}
