//! Renders an [`EvidenceBundle`] for people: GitHub check-run summaries,
//! the issue validation comment, pull-request bodies, a standalone Markdown
//! document, server-rendered HTML pages and the JSON record itself; and
//! the one page shell ([`render_page`]) every HTML page of the app uses.
//!
//! Every function here is pure: bundle and options in, text out. No I/O, no
//! clock (times are already strings in the bundle), no allocation beyond the
//! output. The I/O boundary is the caller: the publisher posts what this
//! crate returns, the app serves it.
//!
//! Three promises hold for every renderer:
//!
//! - **Never more than the evidence.** "Verified" is written only when
//!   `bundle.verified` is true *and* the bundle's own state, changed files and
//!   checks agree ([`shown_verified`]). Gaps (cut output, timed-out or missing
//!   checks, omitted files) are always listed.
//! - **Untrusted text stays data.** Issue text, model output, command output
//!   and reviewer text cannot mention anyone, auto-link an issue, inject HTML,
//!   break out of a code fence or fake our headings; bidi controls and NUL are
//!   replaced by U+FFFD; given secret values become `[redacted]`.
//! - **GitHub's limits hold.** Check-run summaries, comments and pull-request
//!   bodies fit in [`GITHUB_TEXT_LIMIT`] bytes (so also characters), cut on a
//!   line and UTF-8 boundary with a visible note saying what was cut.

#![forbid(unsafe_code)]

mod cost;
mod coverage;
mod format;
mod html;
mod json;
mod markdown;
mod outcome;
mod text;

pub use html::{
    Nav, TaskListItem, Viewer, render_events_html, render_evidence_html, render_page, render_refreshing_page,
    render_task_list_html,
};
pub use json::render_json;
pub use markdown::{
    CheckRunOutput, ReviewComment, ReviewOutput, TITLE_MAX_BYTES, render_check_run, render_issue_comment,
    render_markdown_document, render_pull_request_body, render_review, render_thread_answer,
};
pub use outcome::{CheckConclusion, Outcome, blocking_conclusion, conclusion, outcome, shown_verified};

/// GitHub's limit for a check-run summary, an issue comment and a
/// pull-request body: 65,535 characters. Output is held to this many
/// *bytes*, which is never more characters.
pub const GITHUB_TEXT_LIMIT: usize = 65_535;

/// First line of the issue validation comment. The publisher finds its own
/// comment by `body.starts_with(ISSUE_VALIDATION_MARKER)` (and the comment's
/// author being the app) and edits it in place instead of posting again.
pub const ISSUE_VALIDATION_MARKER: &str = "<!-- agent-zero:issue-validation -->";

/// First line of every pull-request body this crate renders, for the same
/// find-and-update purpose as [`ISSUE_VALIDATION_MARKER`].
pub const PULL_REQUEST_MARKER: &str = "<!-- agent-zero:pull-request -->";

/// Escapes `& < > " '` for HTML text and attribute values (for pages the
/// app renders outside this crate, such as its API docs).
pub fn escape_html(text: &str) -> String {
    html::escape(text)
}

/// One line of untrusted text for an HTML page, the way this crate's pages
/// treat it: `secrets` replaced with [`REDACTED`], line breaks and tabs
/// folded to spaces, control and bidi characters replaced, then escaped.
/// Not capped.
pub fn clean_html_line(text: &str, secrets: &[&str]) -> String {
    let ctx = text::Ctx::new(&RenderOptions { secrets, ..RenderOptions::default() });
    html::escape(&text::clean(&ctx, text, false))
}

/// How to render. `Default` gives GitHub's limits and no secrets.
#[derive(Debug, Clone, Copy)]
pub struct RenderOptions<'a> {
    /// Values that must never appear in output (tokens, keys); every
    /// occurrence, in any field, becomes [`REDACTED`]. Empty values are ignored.
    /// When any is given, GitHub-token-shaped runs (`ghs_...`, `ghp_...`,
    /// `github_pat_...`) are redacted too, so a minted installation token
    /// never leaves in a publication.
    pub secrets: &'a [&'a str],
    /// Absolute or root-relative link to the task's evidence page, offered in
    /// footers and in the note of a cut report.
    pub evidence_url: Option<&'a str>,
    /// Absolute or root-relative link to the task's signed receipt
    /// (`GET /api/v1/tasks/{id}/receipt`), offered beside the evidence
    /// where the deployment signs receipts (docs/receipts.md).
    pub receipt_url: Option<&'a str>,
    /// Prefix of the app's own page links (`{base_path}/tasks/{id}`,
    /// `{base_path}/?cursor=...`); empty when the app is served at the root.
    pub base_path: &'a str,
    /// Byte limit of GitHub-bound Markdown (check run, comment, PR body).
    pub max_bytes: usize,
    /// Bytes shown of one untrusted block (a check's stdout, an explanation)
    /// in GitHub-bound Markdown. Command output keeps its tail.
    pub max_block_bytes: usize,
    /// The same, for the standalone document and the HTML page.
    pub max_page_block_bytes: usize,
}

impl Default for RenderOptions<'_> {
    fn default() -> Self {
        Self {
            secrets: &[],
            evidence_url: None,
            receipt_url: None,
            base_path: "",
            max_bytes: GITHUB_TEXT_LIMIT,
            max_block_bytes: 4_000,
            max_page_block_bytes: 64 * 1024,
        }
    }
}
