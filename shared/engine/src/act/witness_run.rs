//! The sandbox half every witness tick shares (`docs/witness.md`): the
//! witness written into the checkout, run with the policy's command and
//! removed (or the file it replaced put back), the `rm` of files, and the
//! bound on what of a run's output the evidence keeps. `witness.rs` (a
//! review's head and base) and `witness_fix.rs` (an issue run's before and
//! after) use it.

use agent_zero_contracts::{CheckResult, ProposedChange, Witness};

use super::Run;
use crate::fact::LeaseRecord;
use crate::ports::{Workspace, WorkspaceError};
use crate::store::TickStats;

/// Most bytes of each of a witness run's stdout and stderr kept in the
/// evidence (their ends: where a failing test says why).
pub(crate) const MAX_WITNESS_OUTPUT_BYTES: usize = 4 * 1024;

/// Writes the witness (reading first the file it replaces, if any), runs
/// it, and removes it or puts that file back. The outer error: the
/// checkout could not be put back; the inner: the witness did not run.
pub(super) async fn run_alone<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    workspace: &W,
    stats: &mut TickStats,
    witness: &Witness,
    label: &str,
) -> Result<Result<CheckResult, WorkspaceError>, WorkspaceError> {
    let key = format!("{}:{label}", run.cx.key);
    let original = if run.r.discovery.files.contains(&witness.path) {
        stats.sandbox_calls += 1;
        let read = workspace.read_files(lease, std::slice::from_ref(&witness.path)).await?;
        read.into_iter().next().and_then(|(_, content)| content)
    } else {
        None
    };
    let policy = &run.stimulus.policy.review.witness;
    let mut argv = policy.command.clone();
    argv.push(witness.path.clone());
    let file = ProposedChange {
        path: witness.path.clone(),
        content: witness.content.clone(),
        reason: "the claim's witness (never published)".into(),
    };
    stats.sandbox_calls += 2;
    let ran = match workspace.write_files(lease, std::slice::from_ref(&file), &key).await {
        Ok(()) => {
            let timeout = policy.timeout_ms.min(run.remaining_ms());
            workspace.run(lease, &[argv], timeout, &format!("{key}-run")).await.and_then(first)
        }
        Err(e) => Err(e),
    };
    stats.sandbox_calls += 1;
    match original {
        Some(content) => {
            let back =
                ProposedChange { path: witness.path.clone(), content, reason: "put back after the witness".into() };
            workspace.write_files(lease, &[back], &format!("{key}-restore")).await?;
        }
        None => remove(workspace, lease, std::slice::from_ref(&witness.path), &format!("{key}-rm")).await?,
    }
    Ok(ran)
}

/// Removes `paths` from the checkout (`rm -f --`, the engine's own command).
pub(super) async fn remove<W: Workspace>(
    workspace: &W,
    lease: &LeaseRecord,
    paths: &[String],
    key: &str,
) -> Result<(), WorkspaceError> {
    let mut argv: Vec<String> = ["rm", "-f", "--"].map(str::to_owned).into();
    argv.extend(paths.iter().cloned());
    let removed = first(workspace.run(lease, &[argv], REMOVE_MS, key).await?)?;
    if removed.passed() {
        Ok(())
    } else {
        Err(WorkspaceError::Failed(format!("removing {} exited {}", paths.join(", "), removed.exit_code)))
    }
}

/// Bound on the `rm` that removes files.
const REMOVE_MS: u64 = 30_000;

pub(super) fn first(results: Vec<CheckResult>) -> Result<CheckResult, WorkspaceError> {
    results.into_iter().next().ok_or_else(|| WorkspaceError::Failed("the sandbox returned no result".into()))
}

/// `result` with the ends of its output, at most
/// [`MAX_WITNESS_OUTPUT_BYTES`] of each stream, the rest counted.
pub(super) fn bounded(mut result: CheckResult) -> CheckResult {
    for stream in [&mut result.stdout, &mut result.stderr] {
        if stream.len() > MAX_WITNESS_OUTPUT_BYTES {
            let mut cut = stream.len() - MAX_WITNESS_OUTPUT_BYTES;
            while !stream.is_char_boundary(cut) {
                cut += 1;
            }
            result.truncated_bytes += cut as u64;
            stream.replace_range(..cut, "");
        }
    }
    result
}
