//! Lease a sandbox for the run (and leave `queued` with the first lease).

use agent_zero_contracts::{RunMode, TaskState};

use super::{Acted, Run};
use crate::fact::Fact;
use crate::ports::{LeaseRequest, Workspace};
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
    stats.sandbox_calls += 1;
    let request = LeaseRequest {
        task_id: stimulus.task_id.clone(),
        repository: stimulus.repository.clone(),
        // The sandbox writes for a writing mode only: a suggestion's
        // proof is a fix confined to the sandbox.
        mode: if suggests { RunMode::Fix } else { stimulus.mode },
        writable: (stimulus.mode.may_write() || suggests) && policy.autofix.enabled,
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
        Err(e) => run.sandbox_failed("lease", e),
    }
}
