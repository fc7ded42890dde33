//! Release the sandbox lease after the ending (a lease already gone counts
//! as released).

use super::{Acted, Run};
use crate::fact::{Fact, LeaseRecord};
use crate::ports::{Workspace, WorkspaceError};
use crate::resident::FoldError;
use crate::store::TickStats;

pub(super) async fn release<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    workspace: &W,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    stats.sandbox_calls += 1;
    match workspace.release(lease).await {
        Ok(()) | Err(WorkspaceError::LeaseGone(_)) => Acted::now(vec![Fact::Released]),
        Err(e) => run.sandbox_failed("release", e),
    }
}
