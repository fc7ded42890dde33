//! A task's raw log, read in order, and its replay: the conclusion rebuilt
//! from the log's facts alone, to compare with the one the log recorded.
//!
//! I/O boundary: [`read_log`] reads `task/{id}/log/*` through the
//! [`KeyValue`] port; [`replay`] is pure.

use agent_zero_contracts::{EvidenceBundle, TaskResult};
use agent_zero_ports::KeyValue;

use crate::conclude::conclude;
use crate::fact::{Entry, Fact};
use crate::resident::{FoldError, Resident};
use crate::store::{Store, is_valid_task_id};
use crate::task::TaskError;

/// Most entries [`read_log`] returns: far above any real run (a run with
/// three attempts commits about forty), so a log is never cut in practice.
pub const MAX_LOG_ENTRIES: u64 = 4096;

/// Every committed entry of task `id`, from seq 0 up to the first gap, or
/// `None` when the task does not exist. One KV read per entry.
pub async fn read_log<K: KeyValue>(kv: &K, id: &str) -> Result<Option<Vec<Entry>>, TaskError> {
    if !is_valid_task_id(id) {
        return Err(TaskError::InvalidTaskId(id.to_owned()));
    }
    let store = Store::new(kv);
    let mut entries = Vec::new();
    for seq in 0..MAX_LOG_ENTRIES {
        match store.entry(id, seq).await? {
            Some(entry) => entries.push(entry),
            None => break,
        }
    }
    Ok((!entries.is_empty()).then_some(entries))
}

/// What a replay of a log found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Replay {
    /// The log folded to its end.
    pub resident: Resident,
    /// The last conclusion rebuilt from the facts before it (every field
    /// derived from the log, the summary sentence taken from the record);
    /// `None` when the log has not concluded.
    pub rebuilt: Option<(TaskResult, EvidenceBundle)>,
    /// The last conclusion as the log recorded it.
    pub recorded: Option<(TaskResult, EvidenceBundle)>,
}

/// Folds `entries` from entry 0 with the engine's own fold and, at each
/// `Concluded` fact, rebuilds the conclusion from the state the facts
/// before it produce, exactly as the tick that wrote it did.
pub fn replay(entries: &[Entry]) -> Result<Replay, FoldError> {
    let mut resident = Resident::default();
    let mut rebuilt = None;
    let mut recorded = None;
    for entry in entries {
        if let Some(at) = entry.facts.iter().position(|f| matches!(f, Fact::Concluded { .. })) {
            let mut ended = resident.clone();
            ended.apply(&Entry { seq: entry.seq, at_ms: entry.at_ms, facts: entry.facts[..at].to_vec() })?;
            let Fact::Concluded { result, evidence } = &entry.facts[at] else { unreachable!("found above") };
            let state = ended.state.terminal().ok_or_else(|| FoldError::Malformed {
                seq: entry.seq,
                reason: format!("a conclusion while the task is {}", ended.state),
            })?;
            let Some(stimulus) = ended.stimulus.as_deref() else {
                let reason = "a conclusion before the delivery was admitted".into();
                return Err(FoldError::Malformed { seq: entry.seq, reason });
            };
            let summary = base_summary(&evidence.summary, stimulus.source.as_deref());
            rebuilt = Some(conclude(&ended, stimulus, state, summary));
            recorded = Some(((**result).clone(), (**evidence).clone()));
        }
        resident.apply(entry)?;
    }
    Ok(Replay { resident, rebuilt, recorded })
}

/// The tick's summary sentence: [`conclude`] appends ` ({source})`.
fn base_summary<'a>(summary: &'a str, source: Option<&str>) -> &'a str {
    match source {
        Some(source) => summary.strip_suffix(&format!(" ({source})")).unwrap_or(summary),
        None => summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_loses_only_its_source_suffix() {
        assert_eq!(base_summary("Fixed it (api:ops)", Some("api:ops")), "Fixed it");
        assert_eq!(base_summary("Fixed it", Some("api:ops")), "Fixed it");
        assert_eq!(base_summary("Fixed it (api:ops)", None), "Fixed it (api:ops)");
    }
}
