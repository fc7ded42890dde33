//! What every forge adapter publishes by, whatever the forge: when a run
//! may become a pull request and when it may comment ([`eligibility`],
//! checked again here from the record, whatever the engine decided), the
//! subject marker that tells our validation comment apart
//! ([`comment_target`]), the branch name and the pull request's title.
//! Each adapter (GitHub's `agent_zero_github::publish`, [`crate::gitea`])
//! takes one [`PublishRequest`] and does the forge's own calls.

pub mod comment_target;
pub mod eligibility;
mod finding;
mod report;
mod status;
pub mod suggestion;

pub use finding::{MARKED_QUOTE_BYTES, comment_marker, finding_marker, marked_quote};
pub use report::{PublishReport, PublishStep, PublishedPullRequest, RetryAfter, StepOutcome, StepReport};
pub use status::{CHECK_RUN_NAME, CheckRunStatus, status_description, status_state};

use agent_zero_contracts::{EvidenceBundle, FeedbackItem, IssueRef, TaskResult};
use agent_zero_evidence::RenderOptions;

/// Most files one pull request carries.
pub const MAX_PUBLISHED_FILES: usize = 300;

/// One changed file, read from the sandbox by the caller: its full new
/// content, or `None` when the run deleted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishFile<'a> {
    pub path: &'a str,
    pub content: Option<&'a [u8]>,
}

impl<'a> PublishFile<'a> {
    /// A file with this full content.
    pub const fn new(path: &'a str, content: &'a [u8]) -> Self {
        Self { path, content: Some(content) }
    }

    /// A file the run deleted.
    pub const fn deleted(path: &'a str) -> Self {
        Self { path, content: None }
    }
}

/// The repository policy fields publication reads (`issues.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishPolicy<'a> {
    /// `issues.validationComment`.
    pub validation_comment: bool,
    /// `issues.branchPrefix`.
    pub branch_prefix: &'a str,
    /// `checkRun.blocking`: the check run concludes as a required check
    /// needs ([`agent_zero_evidence::blocking_conclusion`]).
    pub blocking_check_run: bool,
}

impl Default for PublishPolicy<'_> {
    fn default() -> Self {
        Self { validation_comment: true, branch_prefix: "agent-zero/", blocking_check_run: false }
    }
}

/// Everything one publication needs. Borrowed: the caller owns the record.
#[derive(Debug, Clone, Copy)]
pub struct PublishRequest<'a> {
    pub bundle: &'a EvidenceBundle,
    pub result: &'a TaskResult,
    pub task_id: &'a str,
    /// The repository the run worked on (branch and pull request go here).
    pub owner: &'a str,
    pub repo: &'a str,
    /// Its default branch, when the caller knows it (else one `GET /repos`).
    pub default_branch: Option<&'a str>,
    /// The pull request head the run reported on: the check run goes there.
    pub head_sha: Option<&'a str>,
    /// The issue of an issue run: the comment goes there.
    pub issue: Option<&'a IssueRef>,
    pub policy: PublishPolicy<'a>,
    /// The changed files' contents (see [`PublishFile`]).
    pub files: &'a [PublishFile<'a>],
    /// The task's feedback items: the id of a review or review comment
    /// names the subject of a feedback run's comment (nothing else of them
    /// is read).
    pub feedback: &'a [FeedbackItem],
    /// Our own login on the forge (GitHub: `GET /user` for a token,
    /// `{app-slug}[bot]` for an App; Gitea: `GET /user`): only comments by
    /// it are ours.
    /// `None` (not learned): the comment step fails and writes nothing; it
    /// never falls back to "any marked comment is ours".
    pub bot_login: Option<&'a str>,
    /// Secrets to redact, evidence link, limits.
    pub render: RenderOptions<'a>,
    /// Now, for `x-ratelimit-reset` arithmetic.
    pub now_ms: u64,
}

impl PublishRequest<'_> {
    /// Whether publishing this request writes a validation comment (and
    /// so needs [`bot_login`](Self::bot_login)).
    pub fn posts_comment(&self) -> bool {
        eligibility::comment_refusal(self).is_none()
    }

    /// Whether publishing this request posts a pull-request review or
    /// resolves earlier findings (and so needs [`bot_login`](Self::bot_login)
    /// to find ours).
    pub fn posts_review(&self) -> bool {
        let proactive = self.bundle.trigger == agent_zero_contracts::Trigger::Proactive;
        self.head_sha.is_some() && proactive && self.bundle.review.is_some()
    }
}

/// One plain line: the issue's title (or the finding's), without control
/// or bidi characters, at most 200 bytes.
pub fn pull_request_title(request: &PublishRequest<'_>, issue: &IssueRef) -> String {
    let source = Some(issue.title.text.as_str())
        .filter(|t| !t.trim().is_empty())
        .or_else(|| request.bundle.finding.as_ref().map(|f| f.claim.title.as_str()))
        .unwrap_or_default();
    let cleaned: String = source
        .chars()
        .map(|c| {
            if c.is_control()
                || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            {
                ' '
            } else {
                c
            }
        })
        .collect();
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    if words.is_empty() {
        return format!("Agent Zero: fix for issue #{}", issue.number);
    }
    let mut title = format!("Agent Zero: {}", words.join(" "));
    if title.len() > 200 {
        let mut end = 197;
        while !title.is_char_boundary(end) {
            end -= 1;
        }
        title.truncate(end);
        title.push_str("...");
    }
    title
}

/// A finished run's check-run text and its completed status: the
/// conclusion rendered from the evidence, as a required check needs it
/// when `checkRun.blocking` ([`agent_zero_evidence::blocking_conclusion`]).
pub fn concluded(request: &PublishRequest<'_>) -> (agent_zero_evidence::CheckRunOutput, CheckRunStatus) {
    let output = agent_zero_evidence::render_check_run(request.bundle, &request.render);
    let conclusion = if request.policy.blocking_check_run {
        agent_zero_evidence::blocking_conclusion(request.bundle, output.conclusion)
    } else {
        output.conclusion
    };
    (output, CheckRunStatus::Completed(conclusion))
}

/// The branch a task publishes to: `<prefix><issue>-<task id>`, if it is a
/// name we are willing to create (stricter than Git: alphanumeric segments
/// with `.`, `_`, `-`, joined by `/`).
pub fn branch_name(prefix: &str, issue: u64, task_id: &str) -> Option<String> {
    let name = format!("{prefix}{issue}-{task_id}");
    let segment_ok = |s: &str| {
        !s.is_empty()
            && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            && !s.ends_with(".lock")
    };
    let safe = name.len() <= 200 && name.split('/').all(segment_ok) && is_safe_ref(&name);
    safe.then_some(name)
}

/// A branch name or commit sha as Git allows them (the parts that matter
/// for a URL: no `..`, no control characters, no leading `/` or `-`).
pub fn is_safe_ref(git_ref: &str) -> bool {
    !(git_ref.is_empty()
        || git_ref.len() > 255
        || git_ref.starts_with(['/', '-'])
        || git_ref.ends_with('/')
        || git_ref.contains("..")
        || git_ref.contains("//")
        || git_ref.chars().any(|c| c.is_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\')))
}

/// At most 200 bytes of untrusted `value`, for a message.
pub(crate) fn capped(value: &str) -> String {
    agent_zero_contracts::UntrustedText::capped(value, 200).text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_are_strict() {
        assert_eq!(branch_name("agent-zero/", 7, "t-01abc").as_deref(), Some("agent-zero/7-t-01abc"));
        assert_eq!(branch_name("", 7, "t1").as_deref(), Some("7-t1"));
        for (prefix, task) in [
            ("agent-zero/", "a..b"),
            ("agent-zero/", "x y"),
            ("agent-zero/", "x:y"),
            ("agent-zero//", "t"),
            ("/", "t"),
            ("a/", "t.lock"),
            ("a/", "t/../main"),
            ("a/", "t~1"),
        ] {
            assert_eq!(branch_name(prefix, 7, task), None, "{prefix}{task}");
        }
        assert_eq!(branch_name("a/", 1, &"x".repeat(300)), None);
    }
}
