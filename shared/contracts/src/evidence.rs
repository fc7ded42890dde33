//! The durable record of a run, from which every report is rendered.

use serde::{Deserialize, Serialize};

use crate::{
    CheckResult, Finding, IssueRef, PullRequestRef, RunMode, RunnerDescription, TaskEvent, TerminalState, Trigger,
    Usage, Verdict,
};

/// Everything a report may say about a run. Derived only from facts the run
/// observed, so the same run always renders the same report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceBundle {
    pub task_id: String,
    /// `owner/name`.
    pub repository: String,
    pub state: TerminalState,
    pub verdict: Verdict,
    pub verified: bool,
    pub mode: RunMode,
    pub trigger: Trigger,
    /// Where the task came from (`github:<delivery>`, `api:<principal>`).
    pub source: Option<String>,
    pub issue: Option<IssueRef>,
    pub pull_request: Option<PullRequestRef>,
    pub runner: RunnerDescription,
    pub finding: Option<Finding>,
    pub plan: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    pub changed_files: Vec<String>,
    pub checks: Vec<CheckResult>,
    pub attempts: u32,
    pub transitions: Vec<TaskEvent>,
    pub usage: Usage,
    /// Why a write was refused, when it was (one distinct code per link of
    /// the authorisation chain, e.g. `autofix-disabled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    /// What the run did not look at: the report must say so.
    pub coverage: Coverage,
    pub summary: String,
    /// A pull-request review: every changed file and how much of it was
    /// read, and where the findings sit in the diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewLedger>,
    /// The files of the change as the sandbox held them when the checks
    /// passed (read back at review): what a pull request publishes, so it
    /// can be matched to what was verified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tree: Vec<TreeFile>,
    /// What the run cost its host up to its conclusion: each tick's
    /// operations as its commit recorded them in the task log (counted up
    /// to that commit; a commit's own writes count in the next tick), with
    /// the model's tokens and dollars. `None` when no tick was metered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::RunCost>,
    /// What the finding's witness showed at the pull request's head and
    /// base (`docs/witness.md`); absent when none was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness: Option<crate::WitnessRun>,
}

/// One file of the verified tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeFile {
    /// Repository-relative path.
    pub path: String,
    /// SHA-256 of the content, lowercase hex.
    pub sha256: String,
    pub bytes: u64,
    /// The Git mode the sandbox held: `100644`, or `100755` for an
    /// executable file (a symlink, `120000`, is never published). Records
    /// written before modes were kept read as `100644`.
    #[serde(default = "regular_mode")]
    pub mode: String,
}

fn regular_mode() -> String {
    "100644".into()
}

/// What a pull-request review read of the pull request's changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewLedger {
    /// The head the review read (`base...head`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_sha: Option<String>,
    /// Every changed file the forge listed, in its order.
    pub files: Vec<FileCoverage>,
    /// Why the list of changed files is incomplete or missing, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlisted: Option<String>,
    /// The findings' places on the right side of the diff.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<DiffAnchor>,
    /// The head an earlier review of this pull request read, when this one
    /// reads only what changed since (`files` are those changed since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Changed files of the pull request not changed since `since`: read by
    /// that review, not shown again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<String>,
}

impl ReviewLedger {
    /// True when every changed file was listed and read whole.
    pub fn is_complete(&self) -> bool {
        self.unlisted.is_none() && self.files.iter().all(|f| f.review == FileReview::Reviewed)
    }

    /// Files read whole, read in part, and skipped.
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |r: FileReview| self.files.iter().filter(|f| f.review == r).count();
        (n(FileReview::Reviewed), n(FileReview::Partial), n(FileReview::Skipped))
    }
}

/// One changed file in a review's ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileCoverage {
    pub path: String,
    pub review: FileReview,
    /// The hunk headers read (`@@ -1,3 +1,4 @@`), when read in part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hunks: Vec<String>,
    /// The hunk headers left out, when read in part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_hunks: Vec<String>,
    /// Why it was skipped or read in part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<SkipReason>,
}

/// How much of a changed file a review read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileReview {
    Reviewed,
    Partial,
    Skipped,
}

/// Why a changed file (or some of its hunks) was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    /// The review's total diff budget was spent.
    Budget,
    /// No text diff (GitHub sends no patch and counts no lines).
    Binary,
    /// A lockfile, minified or generated file.
    Generated,
    /// Third-party code kept in the repository.
    Vendored,
    /// Over the per-file budget, or too large for GitHub to send a patch.
    TooLarge,
}

impl SkipReason {
    /// The words a ledger uses.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Budget => "diff budget spent",
            Self::Binary => "binary",
            Self::Generated => "generated",
            Self::Vendored => "vendored",
            Self::TooLarge => "too large",
        }
    }
}

/// Where a finding sits: lines of the head's version of `path` that the
/// diff shows (GitHub's `side: RIGHT`), `start_line..=line`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffAnchor {
    pub finding_id: String,
    pub path: String,
    pub line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// The finding's quote those lines hold (whitespace collapsed): a later
    /// review of the pull request resolves the comment once it is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
}

/// A refused write: a stable code and a sentence for humans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    pub code: String,
    pub message: String,
}

/// What was not covered by the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    pub omitted: Vec<OmittedItem>,
}

impl Coverage {
    /// True when nothing was left out.
    pub fn is_complete(&self) -> bool {
        self.omitted.is_empty()
    }
}

/// One thing left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OmittedItem {
    /// `file`, `diff-hunk`, `check`, `output` or `context`.
    pub kind: String,
    /// The path, command or hunk header concerned.
    pub subject: String,
    pub reason: String,
}
