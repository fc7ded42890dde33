//! What a repository-native check left behind when it ran: its argv, exit
//! code, output and time. The checks of a run and a witness's runs are both
//! this.

use serde::{Deserialize, Serialize};

/// Captured evidence for one repository-native check invocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// The argv, as run (never a shell string).
    pub command: Vec<String>,
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    pub duration_ms: u64,
    /// Bytes of output dropped at `runner.maxOutputBytes`, if any.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated_bytes: u64,
    /// True when the command was stopped at its timeout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CheckResult {
    /// Whether the check ran to completion and exited 0.
    pub fn passed(&self) -> bool {
        self.exit_code == 0 && !self.timed_out
    }
}

/// True when at least one check ran and all of them passed.
pub fn all_checks_passed(checks: &[CheckResult]) -> bool {
    !checks.is_empty() && checks.iter().all(CheckResult::passed)
}
