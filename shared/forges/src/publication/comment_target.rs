//! What a validation comment answers, and the marker line that names it.
//!
//! The comment's first line is [`ISSUE_VALIDATION_MARKER`]; the second
//! names the subject, e.g. `<!-- agent-zero:subject issue=42 -->` or
//! `<!-- agent-zero:subject pull-request=7 review-comment=123 -->`. Both are
//! HTML comments, invisible when GitHub renders the body. The subject line
//! is built only from numbers and ids we parsed or minted (an issue or pull
//! request number, a review or review comment id, our own task id), never
//! from text anyone else wrote, so nothing can forge or close it. Runs on
//! the same subject (a re-run of the issue, a redelivery of the same review
//! comment) find and edit the same comment; two subjects never share one.

use agent_zero_contracts::Trigger;
use agent_zero_evidence::ISSUE_VALIDATION_MARKER;

use super::PublishRequest;

/// Longest task id that names a subject.
const MAX_TASK_ID_BYTES: usize = 128;

/// Where the feedback of a feedback run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source<'a> {
    /// A pull request review (`review:{id}`).
    Review(u64),
    /// A pull request review comment (`review-comment:{id}`).
    ReviewComment(u64),
    /// Feedback with no GitHub id of its own (given through the task API):
    /// the task itself is the subject.
    Task(&'a str),
}

/// What a validation comment answers (its "subject" in the marker line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentTarget<'a> {
    /// The issue of an issue run.
    Issue(u64),
    /// Review feedback on a pull request.
    Feedback { pull_request: u64, source: Source<'a> },
}

impl CommentTarget<'_> {
    /// The subject of `request`'s comment; `Err` says why it cannot be named.
    pub fn of<'r>(request: &'r PublishRequest<'_>) -> Result<CommentTarget<'r>, String> {
        if let Some(issue) = request.issue {
            return Ok(CommentTarget::Issue(issue.number));
        }
        let bundle = request.bundle;
        let Some(pr) = bundle.pull_request.as_ref().filter(|_| bundle.trigger == Trigger::Feedback) else {
            return Err("the run has no issue and no review feedback to answer".into());
        };
        let github_source = match request.feedback {
            [item] => parse_source(&item.id),
            _ => None,
        };
        let source = match github_source {
            Some(source) => source,
            None if is_task_id(request.task_id) => Source::Task(request.task_id),
            None => {
                return Err(format!(
                    "the task id `{}` cannot name the comment's subject",
                    super::capped(request.task_id)
                ));
            }
        };
        Ok(CommentTarget::Feedback { pull_request: pr.number, source })
    }

    /// The marker line, without a line break.
    pub fn marker(&self) -> String {
        let what = match self {
            Self::Issue(number) => format!("issue={number}"),
            Self::Feedback { pull_request, source } => {
                let source = match source {
                    Source::Review(id) => format!("review={id}"),
                    Source::ReviewComment(id) => format!("review-comment={id}"),
                    Source::Task(id) => format!("task={id}"),
                };
                format!("pull-request={pull_request} {source}")
            }
        };
        format!("<!-- agent-zero:subject {what} -->")
    }
}

/// `text` (a rendered comment, which starts with [`ISSUE_VALIDATION_MARKER`])
/// with the subject `marker` as its second line.
pub fn marked(text: &str, marker: &str) -> String {
    let rest = text.strip_prefix(ISSUE_VALIDATION_MARKER).map_or_else(|| format!("\n{text}"), str::to_owned);
    format!("{ISSUE_VALIDATION_MARKER}\n{marker}{rest}")
}

/// Whether `body` opens with [`ISSUE_VALIDATION_MARKER`] and then exactly
/// `marker` on its own line.
pub fn carries(body: &str, marker: &str) -> bool {
    let Some(rest) = body.trim_start().strip_prefix(ISSUE_VALIDATION_MARKER) else {
        return false;
    };
    let rest = rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n'));
    rest.and_then(|r| r.strip_prefix(marker)).is_some_and(|r| r.is_empty() || r.starts_with(['\r', '\n']))
}

/// `review:{id}` and `review-comment:{id}`, the ids intake gives GitHub's
/// feedback; anything else is not a GitHub source.
fn parse_source(id: &str) -> Option<Source<'static>> {
    let number = |digits: &str| {
        (!digits.is_empty() && digits.len() <= 20 && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<u64>().ok())
            .flatten()
    };
    if let Some(digits) = id.strip_prefix("review-comment:") {
        return number(digits).map(Source::ReviewComment);
    }
    id.strip_prefix("review:").and_then(number).map(Source::Review)
}

/// Task ids as the app mints them (`gh-…`, `api-…`): letters, digits, `-`, `_`.
fn is_task_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_TASK_ID_BYTES
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_name_the_subject() {
        assert_eq!(CommentTarget::Issue(42).marker(), "<!-- agent-zero:subject issue=42 -->");
        let review = CommentTarget::Feedback { pull_request: 7, source: Source::ReviewComment(123) };
        assert_eq!(review.marker(), "<!-- agent-zero:subject pull-request=7 review-comment=123 -->");
        let task = CommentTarget::Feedback { pull_request: 7, source: Source::Task("api-ab12") };
        assert_eq!(task.marker(), "<!-- agent-zero:subject pull-request=7 task=api-ab12 -->");
    }

    #[test]
    fn only_our_ids_become_sources() {
        assert_eq!(parse_source("review:55"), Some(Source::Review(55)));
        assert_eq!(parse_source("review-comment:9"), Some(Source::ReviewComment(9)));
        for bad in ["review:", "review:+5", "review:5 -->", "review-comment:x", "api-1", "review:99999999999999999999"]
        {
            assert_eq!(parse_source(bad), None, "{bad}");
        }
        assert!(is_task_id("gh-1b2c-3d") && is_task_id("api-abc"));
        for bad in ["", "a b", "x-->", "a>b", "<!--", "t\n"] {
            assert!(!is_task_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_body_carries_exactly_its_marker() {
        let issue_4 = CommentTarget::Issue(4).marker();
        let issue_42 = CommentTarget::Issue(42).marker();
        let body = marked(&format!("{ISSUE_VALIDATION_MARKER}\n## Agent Zero"), &issue_42);
        assert_eq!(body, format!("{ISSUE_VALIDATION_MARKER}\n{issue_42}\n## Agent Zero"));
        assert!(carries(&body, &issue_42));
        assert!(!carries(&body, &issue_4), "issue 4 is not issue 42");
        assert!(carries(&format!("{ISSUE_VALIDATION_MARKER}\r\n{issue_42}\r\nx"), &issue_42));
        assert!(carries(&format!("{ISSUE_VALIDATION_MARKER}\n{issue_42}"), &issue_42));
        // The bare marker (no subject), the subject alone, or the subject
        // further down the body are not this subject's comment.
        assert!(!carries(&format!("{ISSUE_VALIDATION_MARKER}\n## Agent Zero"), &issue_42));
        assert!(!carries(&format!("{issue_42}\n## Agent Zero"), &issue_42));
        assert!(!carries(&format!("{ISSUE_VALIDATION_MARKER}\nhello\n{issue_42}"), &issue_42));
        assert!(!carries(&format!("{ISSUE_VALIDATION_MARKER}\n{issue_42} and more"), &issue_42));
    }
}
