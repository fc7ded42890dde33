//! Stable data contracts shared by every part of Agent Zero Edge.
//!
//! Plain data with serde, and the one vocabulary every crate validates the
//! same way (model providers, repository names, commit SHAs, URL
//! encoding): no I/O, no clock, no host SDK. JSON field names are
//! camelCase and enum values kebab-case, as in the TypeScript reference, so
//! records written by one host are read by the other and by operators' tools.

#![forbid(unsafe_code)]

mod check;
mod cost;
mod enums;
mod evidence;
pub mod fence;
mod finding;
mod model;
mod names;
mod refs;
mod task;
mod time;
mod witness;

pub use check::{CheckResult, all_checks_passed};
pub use cost::RunCost;
pub use enums::{
    ChangeRisk, FeedbackKind, NetworkPolicy, QuoteRule, RunMode, Severity, TaskState, TerminalState, Trigger, Verdict,
};
pub use evidence::{
    Coverage, DiffAnchor, EvidenceBundle, FileCoverage, FileReview, OmittedItem, Refusal, ReviewLedger, SkipReason,
    TreeFile,
};
pub use finding::{
    AgentDecision, BoundedCriteria, Finding, MAX_ACCEPTANCE_CRITERIA, MAX_CRITERION_CHARS, ModelFinding,
    ProposedChange, QuoteCheck,
};
pub use model::{DEFAULT_MODEL, ModelPolicy, ModelProvider};
pub use names::{RepoName, Sha, decode_component, encode_component, encode_path};
pub use refs::{FeedbackItem, ForgeKind, IssueRef, PullRequestRef, UntrustedText};
pub use task::{RunnerDescription, TaskEvent, TaskResult, Usage, is_verified};
pub use time::rfc3339;
pub use witness::{MAX_WITNESS_BYTES, Witness, WitnessOutcome, WitnessRun};

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

/// A map or set built by inserting `items` one by one, in order (a later
/// key replaces an earlier one, as `collect` does). `collect` into a
/// `BTreeMap`/`BTreeSet` (and a `serde_json::Map`) first sorts a vector
/// of the items, which links a stable sort per item type (about 5 KB of
/// wasm each). For the short lists the callers build (paths, variables,
/// schema properties) inserting costs nothing measurable and links no sort.
pub fn inserted<C: Default + Extend<T>, T>(items: impl IntoIterator<Item = T>) -> C {
    let mut built = C::default();
    built.extend(items);
    built
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_matches_collect() {
        use std::collections::{BTreeMap, BTreeSet};
        let pairs = [("b", 1), ("a", 2), ("b", 3), ("c", 4), ("a", 5)];
        let by_insert: BTreeMap<&str, i32> = inserted(pairs);
        assert_eq!(by_insert, pairs.into_iter().collect::<BTreeMap<_, _>>());
        assert_eq!(by_insert.get("b"), Some(&3), "a later key replaces an earlier one");
        let words = ["z", "y", "z", "x"];
        assert_eq!(inserted::<BTreeSet<&str>, _>(words), words.into_iter().collect::<BTreeSet<_>>());
        let json: serde_json::Map<String, serde_json::Value> =
            inserted([("k".to_owned(), 1.into()), ("j".to_owned(), 2.into()), ("k".to_owned(), 3.into())]);
        assert_eq!(serde_json::Value::Object(json), serde_json::json!({"j": 2, "k": 3}));
    }

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
