//! Lifecycle events, usage, the runner description and the terminal result.

use serde::{Deserialize, Serialize};

use crate::{CheckResult, Finding, NetworkPolicy, TaskState, TerminalState, Verdict, all_checks_passed};

/// One observed lifecycle transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskEvent {
    pub state: TaskState,
    pub message: String,
    /// RFC 3339 UTC, from the clock the host passed in.
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// Tokens, latency and (only when the policy priced the model) cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub latency_ms: u64,
    /// Present only when `inputCostPerMillionTokens` and
    /// `outputCostPerMillionTokens` were configured; never guessed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Sum of two usages; cost is known only when both sides knew it. A side
    /// without tokens (a run's usage before its first answer) costs nothing,
    /// so the other side's cost stands.
    pub fn add(&self, other: &Self) -> Self {
        let free = |u: &Self| u.input_tokens == 0 && u.output_tokens == 0 && u.cost_usd.is_none();
        Self {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            latency_ms: self.latency_ms + other.latency_ms,
            cost_usd: match (self.cost_usd, other.cost_usd) {
                (Some(a), Some(b)) => Some(a + b),
                (known, None) if free(other) => known,
                (None, known) if free(self) => known,
                _ => None,
            },
        }
    }
}

/// What the execution boundary of a run was actually allowed to do,
/// recorded so a claim of isolation is auditable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerDescription {
    /// Sandbox provider (`custom`, `e2b`, `daytona`, `vercel`, `cloudflare`), or `none`.
    pub provider: String,
    /// True only when repository commands ran inside an isolated sandbox.
    pub isolated: bool,
    pub writable: bool,
    pub network: NetworkPolicy,
}

impl RunnerDescription {
    /// The description of a run that never leased a sandbox.
    pub fn none() -> Self {
        Self { provider: "none".into(), isolated: false, writable: false, network: NetworkPolicy::None }
    }
}

/// The complete, self-describing outcome of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskResult {
    pub id: String,
    pub state: TerminalState,
    pub verdict: Verdict,
    /// See [`is_verified`]; never set any other way.
    pub verified: bool,
    pub finding: Option<Finding>,
    pub plan: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    pub checks: Vec<CheckResult>,
    pub changed_files: Vec<String>,
    pub attempts: u32,
    pub events: Vec<TaskEvent>,
    pub runner: RunnerDescription,
    pub usage: Usage,
    pub summary: String,
}

/// The one definition of "verified": the run completed, changed at least one
/// file, and every executed check passed (and at least one ran).
pub fn is_verified(state: TerminalState, changed_files: &[String], checks: &[CheckResult]) -> bool {
    state == TerminalState::Completed && !changed_files.is_empty() && all_checks_passed(checks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(code: i32) -> CheckResult {
        CheckResult {
            command: vec!["make".into(), "test".into()],
            exit_code: code,
            stdout: String::new(),
            stderr: String::new(),
            duration_ms: 1,
            truncated_bytes: 0,
            timed_out: false,
        }
    }

    #[test]
    fn verified_needs_completion_changes_and_passing_checks() {
        let files = vec!["a.rs".to_owned()];
        assert!(is_verified(TerminalState::Completed, &files, &[check(0)]));
        assert!(!is_verified(TerminalState::Completed, &[], &[check(0)]));
        assert!(!is_verified(TerminalState::Completed, &files, &[]));
        assert!(!is_verified(TerminalState::Completed, &files, &[check(0), check(2)]));
        assert!(!is_verified(TerminalState::Failed, &files, &[check(0)]));
        assert!(!is_verified(TerminalState::NeedsHuman, &files, &[check(0)]));
    }

    #[test]
    fn usage_cost_only_when_known() {
        let a = Usage { input_tokens: 1, output_tokens: 2, latency_ms: 3, cost_usd: Some(0.5) };
        let b = Usage { cost_usd: None, ..a.clone() };
        assert_eq!(a.add(&a).cost_usd, Some(1.0));
        assert_eq!(a.add(&b).cost_usd, None);
        assert_eq!(a.add(&b).input_tokens, 2);
        // A run's usage starts empty: its first priced answer keeps its cost.
        assert_eq!(Usage::default().add(&a).cost_usd, Some(0.5));
        assert_eq!(a.add(&Usage::default()).cost_usd, Some(0.5));
        assert_eq!(Usage::default().add(&b).cost_usd, None);
    }
}
