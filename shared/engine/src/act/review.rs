//! Review: inspect the diff the run left in the sandbox, read back the
//! verified files (what is published), and end the run: completed, or at
//! a person when the diff is not the authorised change.

use agent_zero_contracts::{TerminalState, TreeFile};

use super::{Acted, Run};
use crate::fact::{Fact, LeaseRecord, ReadBack};
use crate::ports::Workspace;
use crate::resident::{FoldError, Resident};
use crate::store::TickStats;

/// The Git mode of a symlink: read back, never published.
const SYMLINK_MODE: &str = "120000";

pub(super) async fn review<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    workspace: &W,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let r = run.r;
    let applied = &r.attempt.applied;
    stats.sandbox_calls += 1;
    let diff = match workspace.diff(lease).await {
        Ok(diff) => diff,
        Err(e) => return run.sandbox_failed("diff", e),
    };
    // Judged: what the run wrote, and any tracked file a check
    // modified. A new file the run did not write is a byproduct of
    // the checks (`__pycache__/`, `target/`, coverage): listed, never
    // published, never a reason to stop.
    let (byproducts, changed_files): (Vec<String>, Vec<String>) =
        diff.changed_files.into_iter().partition(|f| !applied.contains(f) && !r.discovery.files.contains(f));
    let out_of_scope: Vec<String> = changed_files.iter().filter(|f| !applied.contains(f)).cloned().collect();
    let empty = changed_files.is_empty();
    // What is published is what was verified: the run's files read
    // back now, after the checks passed, with their digests.
    stats.sandbox_calls += 1;
    let read = match workspace.read_files(lease, applied).await {
        Ok(read) => read,
        Err(e) => return run.sandbox_failed("read-back", e),
    };
    stats.sandbox_calls += 1;
    let modes = match workspace.file_modes(lease, applied).await {
        Ok(modes) => modes,
        Err(e) => return run.sandbox_failed("read-back", e),
    };
    let (tree, removed) = read_back(r, read, &modes);
    let symlinks: Vec<String> =
        tree.iter().filter(|t| t.file.mode == SYMLINK_MODE).map(|t| t.file.path.clone()).collect();
    let facts = vec![Fact::Reviewed { changed_files, out_of_scope: out_of_scope.clone(), byproducts, tree }];
    let stop = |summary: &str| run.finish(facts.clone(), TerminalState::NeedsHuman, summary, None);
    if !removed.is_empty() {
        return stop(&format!("The checks removed files the run wrote: {}", removed.join(", ")));
    }
    if !symlinks.is_empty() {
        return stop(&format!(
            "The checks left symbolic links where the run wrote files: {}; a symlink is never published",
            symlinks.join(", ")
        ));
    }
    if !out_of_scope.is_empty() {
        stop(&format!("The diff changes files outside the authorised change: {}", out_of_scope.join(", ")))
    } else if empty {
        stop("Every check passed but the checkout is unchanged, so nothing was fixed.")
    } else if let Some(refusal) = crate::witness::fix_refusal(r) {
        stop(&format!("A person must decide: {}", refusal.message))
    } else {
        let title = r.attempt.finding.as_ref().map_or("the finding", |f| f.claim.title.as_str());
        run.finish(facts, TerminalState::Completed, &format!("Fixed and verified: {title}"), None)
    }
}

/// The run's files as read back from the sandbox: each with its digest and
/// mode (and its content when a check rewrote it), and the paths a check
/// removed.
fn read_back(
    r: &Resident,
    read: Vec<(String, Option<String>)>,
    modes: &[(String, Option<String>)],
) -> (Vec<ReadBack>, Vec<String>) {
    use sha2::Digest as _;
    let written = |path: &str| {
        r.attempt.decision.as_ref().and_then(|d| d.changes.iter().find(|c| c.path == path)).map(|c| c.content.as_str())
    };
    let mut tree = Vec::new();
    let mut removed = Vec::new();
    for (path, content) in read {
        let Some(content) = content else {
            removed.push(path);
            continue;
        };
        let digest = sha2::Sha256::digest(content.as_bytes());
        let sha256 = hex::encode(digest);
        let rewritten = written(&path) != Some(content.as_str());
        let bytes = content.len() as u64;
        let mode = modes.iter().find(|(p, _)| *p == path).and_then(|(_, m)| m.clone());
        let Some(mode) = mode else {
            // Read, yet absent by the time its mode was asked: removed.
            removed.push(path);
            continue;
        };
        tree.push(ReadBack { file: TreeFile { path, sha256, bytes, mode }, content: rewritten.then_some(content) });
    }
    (tree, removed)
}
