//! Execute: write the authorised changes into the sandbox checkout (again,
//! with `reapply`, after the lease that held them was lost).

use agent_zero_contracts::{ProposedChange, TaskState};

use super::{Acted, Run};
use crate::fact::{Fact, LeaseRecord};
use crate::ports::Workspace;
use crate::resident::FoldError;
use crate::store::TickStats;

pub(super) async fn execute<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    changes: &[ProposedChange],
    reapply: bool,
    workspace: &W,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    stats.sandbox_calls += 1;
    if let Err(e) = workspace.write_files(lease, changes, &run.cx.key).await {
        return run.sandbox_failed("write-files", e);
    }
    let mut facts = vec![Fact::Applied { files: changes.iter().map(|c| c.path.clone()).collect() }];
    if !reapply {
        let message = format!("Running {} repository check(s)", run.r.discovery.checks.len());
        facts.push(run.transition(TaskState::Verifying, &message, Some(run.r.attempts())));
    }
    Acted::now(facts)
}
