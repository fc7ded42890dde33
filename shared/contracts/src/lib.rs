//! Stable data contracts shared by every part of Agent Zero Edge.
//!
//! Plain data with serde, and the one vocabulary every crate validates the
//! same way (model providers, repository names, commit SHAs, URL
//! encoding): no I/O, no clock, no host SDK. JSON field names are
//! camelCase and enum values kebab-case, as in the TypeScript reference, so
//! records written by one host are read by the other and by operators' tools.

#![forbid(unsafe_code)]

mod cost;
mod enums;
mod evidence;
mod finding;
pub mod json;
mod model;
mod names;
mod refs;
mod tagged;
mod task;
mod time;

pub use cost::RunCost;
pub use enums::{
    ChangeRisk, FeedbackKind, NetworkPolicy, RunMode, Severity, TaskState, TerminalState, Trigger, Verdict,
};
pub use evidence::{
    Coverage, DiffAnchor, EvidenceBundle, FileCoverage, FileReview, OmittedItem, Refusal, ReviewLedger, SkipReason,
    TreeFile,
};
pub use finding::{AgentDecision, CheckResult, Finding, ModelFinding, ProposedChange, all_checks_passed};
pub use model::{DEFAULT_MODEL, ModelPolicy, ModelProvider};
pub use names::{RepoName, Sha, decode_component, encode_component, encode_path};
pub use refs::{FeedbackItem, IssueRef, PullRequestRef, UntrustedText};
pub use tagged::{Reordered, TagFirst, read_tag_first};
pub use task::{RunnerDescription, TaskEvent, TaskResult, Usage, is_verified};
pub use time::rfc3339;

/// Whether a path may address a file inside a checkout: relative, no `..`
/// segment, no NUL, nothing inside `.git`. A cheap pre-check for untrusted
/// model and reviewer input; the sandbox enforces the boundary again.
pub fn is_repository_relative_path(path: &str) -> bool {
    if path.is_empty() || path.contains('\0') {
        return false;
    }
    let bytes = path.as_bytes();
    let windows_drive = bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && (bytes[2] == b'/' || bytes[2] == b'\\');
    if path.starts_with('/') || path.starts_with('\\') || windows_drive {
        return false;
    }
    !path.split(['/', '\\']).any(|segment| segment == ".." || segment.eq_ignore_ascii_case(".git"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_relative_paths() {
        for ok in ["src/lib.rs", "a", "dir/.gitignore", "x/..y/z"] {
            assert!(is_repository_relative_path(ok), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "\\x",
            "C:/x",
            "c:\\x",
            "../x",
            "a/../b",
            "a/..",
            ".git/config",
            "a/.GIT/hooks",
            "a\0b",
            "a\\..\\b",
        ] {
            assert!(!is_repository_relative_path(bad), "{bad:?}");
        }
    }
}
