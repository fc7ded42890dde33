//! What a publication did, step by step: the record the engine keeps so a
//! reader sees why a pull request exists or does not.

use std::fmt;

use serde::Serialize;

/// One thing the adapter publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PublishStep {
    /// The `Agent Zero` check run on the pull request head.
    CheckRun,
    /// A commit status (Gitea, Forgejo; GitHub with a token).
    Status,
    /// The pull-request review of a proactive run (line comments).
    Review,
    /// Replies to our earlier line comments whose quoted lines the head no
    /// longer holds: "resolved in {sha}".
    Resolve,
    /// The issue validation comment.
    IssueComment,
    /// The answer in the thread of the review comment a feedback run checked.
    ThreadAnswer,
    /// The fresh branch carrying the verified change.
    Branch,
    /// The pull request from that branch.
    PullRequest,
    /// A review-feedback run's verified change as a commit on a side
    /// branch from the pull request's head (Gitea, Forgejo: no suggestion
    /// blocks).
    SideBranch,
}

impl PublishStep {
    /// Stable kebab-case name (logs, records).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::CheckRun => "check-run",
            Self::Status => "status",
            Self::Review => "review",
            Self::Resolve => "resolve",
            Self::IssueComment => "issue-comment",
            Self::ThreadAnswer => "thread-answer",
            Self::Branch => "branch",
            Self::PullRequest => "pull-request",
            Self::SideBranch => "side-branch",
        }
    }
}

/// What happened to one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum StepOutcome {
    /// Written for the first time.
    Created { url: Option<String> },
    /// Our own earlier object, edited in place.
    Updated { url: Option<String> },
    /// Already published by an earlier attempt of this task; left as it is.
    Reused { url: Option<String> },
    /// Not attempted, on purpose.
    Skipped { reason: String },
    /// Attempted and failed; the run itself is not failed by this.
    Failed { reason: String },
}

impl StepOutcome {
    pub fn skipped(reason: impl Into<String>) -> Self {
        Self::Skipped { reason: reason.into() }
    }

    pub fn failed(reason: impl Into<String>) -> Self {
        Self::Failed { reason: reason.into() }
    }

    /// The object's URL, when it exists now.
    pub fn url(&self) -> Option<&str> {
        match self {
            Self::Created { url } | Self::Updated { url } | Self::Reused { url } => url.as_deref(),
            Self::Skipped { .. } | Self::Failed { .. } => None,
        }
    }

    /// The reason of a skipped or failed step.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Skipped { reason } | Self::Failed { reason } => Some(reason),
            _ => None,
        }
    }
}

/// `check-run: created (https://…)`, `review: skipped (reason)`: what the
/// publication's summary says of one step.
impl fmt::Display for StepReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = match &self.outcome {
            StepOutcome::Created { .. } => "created",
            StepOutcome::Updated { .. } => "updated",
            StepOutcome::Reused { .. } => "reused",
            StepOutcome::Skipped { .. } => "skipped",
            StepOutcome::Failed { .. } => "failed",
        };
        write!(f, "{}: {status}", self.step.as_str())?;
        match self.outcome.url().or(self.outcome.reason()) {
            Some(detail) => write!(f, " ({detail})"),
            None => Ok(()),
        }
    }
}

/// A step and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepReport {
    pub step: PublishStep,
    #[serde(flatten)]
    pub outcome: StepOutcome,
}

/// GitHub asked us to slow down: re-enqueue the publication after `ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RetryAfter {
    pub ms: u64,
}

/// The pull request the publication opened or found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedPullRequest {
    pub number: u64,
    pub url: String,
    pub branch: String,
}

/// Everything one publication did. Never an error: a failed step is a
/// recorded reason, and the run's own outcome stands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishReport {
    /// The steps attempted or skipped, in order. After a rate limit the
    /// remaining steps are absent (see `retry_after`).
    pub steps: Vec<StepReport>,
    pub pull_request: Option<PublishedPullRequest>,
    /// Set when a rate limit stopped the publication: everything is safe to
    /// run again (each step finds what an earlier attempt wrote).
    pub retry_after: Option<RetryAfter>,
}

impl PublishReport {
    /// The outcome of `step`, if it was reached.
    pub fn outcome(&self, step: PublishStep) -> Option<&StepOutcome> {
        self.steps.iter().find(|s| s.step == step).map(|s| &s.outcome)
    }

    /// Why no pull request exists: the reason of the first branch or pull
    /// request step that was skipped or failed, or the rate limit.
    pub fn no_pull_request_reason(&self) -> Option<String> {
        if self.pull_request.is_some() {
            return None;
        }
        let reason = [PublishStep::Branch, PublishStep::PullRequest]
            .into_iter()
            .find_map(|step| self.outcome(step).and_then(StepOutcome::reason).map(str::to_owned));
        reason.or_else(|| self.retry_after.map(|r| format!("the forge's rate limit: retry in {} ms", r.ms)))
    }

    /// One line for the task's record: the pull request (or why there is
    /// none), then each step.
    pub fn summary(&self) -> String {
        let steps: Vec<String> = self.steps.iter().map(ToString::to_string).collect();
        let pull_request = match (&self.pull_request, self.no_pull_request_reason()) {
            (Some(pr), _) => format!("pull request {}", pr.url),
            (None, Some(reason)) => format!("no pull request: {reason}"),
            (None, None) => "no pull request".to_owned(),
        };
        format!("{pull_request}; {}", steps.join("; "))
    }

    pub fn push(&mut self, step: PublishStep, outcome: StepOutcome) {
        self.steps.push(StepReport { step, outcome });
    }
}

#[cfg(test)]
mod tests {
    use super::{PublishStep, StepOutcome, StepReport};

    #[test]
    fn a_step_reads_as_its_name_status_and_url_or_reason() {
        let line = |step, outcome| StepReport { step, outcome }.to_string();
        let url = Some("https://github.com/o/r/pull/1".to_owned());
        assert_eq!(
            line(PublishStep::PullRequest, StepOutcome::Created { url }),
            "pull-request: created (https://github.com/o/r/pull/1)"
        );
        assert_eq!(line(PublishStep::CheckRun, StepOutcome::Reused { url: None }), "check-run: reused");
        assert_eq!(line(PublishStep::Review, StepOutcome::skipped("no findings")), "review: skipped (no findings)");
        assert_eq!(line(PublishStep::Branch, StepOutcome::failed("422")), "branch: failed (422)");
    }
}
