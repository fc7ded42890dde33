//! Publish the recorded conclusion through the forge, with the verified
//! content of the change; a failed attempt is recorded and retried, never
//! a failure of the run.

use agent_zero_contracts::{EvidenceBundle, ProposedChange, TaskResult};

use super::{Acted, Run};
use crate::fact::{Fact, PublicationOutcome};
use crate::ports::{Forge, Publication};
use crate::resident::FoldError;
use crate::step::backoff;
use crate::store::TickStats;

pub(super) async fn publish<P: Forge>(
    run: &Run<'_>,
    result: &TaskResult,
    evidence: &EvidenceBundle,
    publisher: &P,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let attempt = &run.r.attempt;
    stats.publications += 1;
    // The verified content: what a check rewrote replaces what was written.
    let changes: Vec<ProposedChange> = attempt
        .decision
        .iter()
        .flat_map(|d| d.changes.iter().filter(|c| attempt.applied.contains(&c.path)))
        .map(|c| {
            let mut c = c.clone();
            if let Some((_, content)) = attempt.rewritten.iter().find(|(p, _)| *p == c.path) {
                c.content.clone_from(content);
            }
            c
        })
        .collect();
    let key = &run.cx.key;
    let publication = Publication { stimulus: run.stimulus, result, evidence, changes: &changes, idempotency_key: key };
    let (outcome, delay_ms) = match publisher.publish(publication).await {
        Ok(reference) => (PublicationOutcome::Published { reference }, 0),
        Err(reason) => {
            let delay = backoff(run.cx.limits, run.r.conclusion.publish_attempts + 1);
            (PublicationOutcome::Failed { reason }, delay)
        }
    };
    Acted::after(vec![Fact::Published { outcome }], delay_ms)
}
