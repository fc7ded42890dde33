//! The durable record of a run, from which every report is rendered.

use serde::{Deserialize, Serialize};

use crate::{
    CheckResult, Finding, IssueRef, PullRequestRef, RunMode, RunnerDescription, TaskEvent,
    TerminalState, Trigger, Usage, Verdict,
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
