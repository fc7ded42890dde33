//! Lease a sandbox for the run (and leave `queued` with the first lease).
//!
//! The lease is also the run's admission: the deployment runs at most
//! `AGENT_ZERO_MAX_RUNNING` tasks at once, and `_PER_REPOSITORY` of one
//! repository (the reference's scheduler: 4 and 1), counted as the lease
//! coordinator's active leases. A queued task whose lease is refused as
//! [`WorkspaceError::Full`] waits in `queued`: nothing is committed, the
//! same seq's tick runs again later (as a poll of running checks does),
//! and the wait is not the run's time. The task gives its lease back as it
//! ends or stops for a person ([`super::release`]); a crashed holder's lease
//! expires and the coordinator's sweep frees it.

use agent_zero_contracts::{RunMode, TaskState};

use super::{Acted, Run};
use crate::fact::Fact;
use crate::ports::{LeaseRequest, Workspace, WorkspaceError};
use crate::resident::FoldError;
use crate::store::TickStats;

pub(super) async fn lease<W: Workspace>(
    run: &Run<'_>,
    workspace: &W,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let stimulus = run.stimulus;
    let policy = &stimulus.policy;
    let suggests = run.suggests();
    // A run that may write a witness (`review.witness.command`, on a pull
    // request) leases a writable sandbox, as a suggestion does: the write
    // reaches only that disposable checkout, and is undone after it ran.
    let witnesses = crate::witness::may_run(stimulus);
    stats.sandbox_calls += 1;
    let request = LeaseRequest {
        task_id: stimulus.task_id.clone(),
        repository: stimulus.repository.clone(),
        // The sandbox writes for a writing mode only: a suggestion's
        // proof is a fix confined to the sandbox.
        mode: if suggests || witnesses { RunMode::Fix } else { stimulus.mode },
        writable: ((stimulus.mode.may_write() || suggests) && policy.autofix.enabled) || witnesses,
        network: policy.permissions.network,
        lease_ms: run.remaining_ms(),
        idempotency_key: run.cx.key.clone(),
    };
    match workspace.lease(&request).await {
        Ok(lease) => {
            let mut facts = vec![Fact::Leased { lease }];
            if run.r.state == TaskState::Queued {
                let message = "Collecting the checkout, its files and its native checks";
                facts.push(run.transition(TaskState::Discovering, message, None));
            }
            Acted::now(facts)
        }
        Err(WorkspaceError::Full(bound)) if run.r.state == TaskState::Queued => {
            let waited = run.cx.now_ms.saturating_sub(run.r.started_ms);
            Acted::waiting(wait_ms(waited), bound)
        }
        Err(e) => run.sandbox_failed("lease", e),
    }
}

/// The shortest wait of a queued task for a running slot.
pub(crate) const MIN_WAIT_MS: u64 = 5_000;
/// The longest.
pub(crate) const MAX_WAIT_MS: u64 = 60_000;

/// How long a task that has waited `waited_ms` in `queued` waits before it
/// asks again: a sixth of its wait so far, from 5 s to a minute, so a long
/// queue asks the coordinator less often.
fn wait_ms(waited_ms: u64) -> u64 {
    (waited_ms / 6).clamp(MIN_WAIT_MS, MAX_WAIT_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_grows_with_the_time_waited_from_five_seconds_to_a_minute() {
        assert_eq!(wait_ms(0), MIN_WAIT_MS);
        assert_eq!(wait_ms(60_000), 10_000);
        assert_eq!(wait_ms(3_600_000), MAX_WAIT_MS);
    }
}
