//! The retention pass (run by every sweep): removes the records
//! [`crate::retention`] scheduled, once they are due, each by its kind
//! (a dashboard revocation through [`crate::dashboard::revocation`], which
//! itself schedules through `retention`: so the pass lives here, above both).

use agent_zero_contracts::TaskState;
use agent_zero_ports::{KeyValue, KvError};

use crate::retention::{Kind, MAX_PURGED_PER_PASS, RETENTION_PREFIX, parse_schedule_key};

/// What one pass removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RetentionReport {
    /// Delivery records removed.
    pub deliveries: u32,
    /// Finished tasks removed (log, claims, meta, index).
    pub tasks: u32,
    /// Audit entries removed.
    pub audit: u32,
    /// Dashboard revocations removed.
    pub revocations: u32,
    /// Scheduled tasks that were not finished (approved since, or a
    /// schedule this engine did not write): left alone.
    pub kept: u32,
}

/// Removes what is due at `now_ms`, at most [`MAX_PURGED_PER_PASS`] records.
pub async fn pass<K: KeyValue>(kv: &K, now_ms: u64) -> Result<RetentionReport, KvError> {
    let mut report = RetentionReport::default();
    let page = kv.list(RETENTION_PREFIX, None, MAX_PURGED_PER_PASS).await?;
    for key in &page.keys {
        let Some((due, kind, id)) = parse_schedule_key(key) else {
            kv.delete(key).await?;
            continue;
        };
        if due > now_ms {
            break;
        }
        match kind {
            Kind::Delivery => {
                kv.delete(&crate::retention::delivery_record_key(id)).await?;
                report.deliveries += 1;
            }
            Kind::Audit => {
                kv.delete(&format!("audit/{id}")).await?;
                report.audit += 1;
            }
            Kind::Revocation => {
                if crate::dashboard::revocation::remove_if_due(kv, id, now_ms).await? {
                    report.revocations += 1;
                }
            }
            Kind::Task => {
                match purge_task(kv, id).await? {
                    Purged::Removed => report.tasks += 1,
                    Purged::Kept => report.kept += 1,
                    // Removed by an earlier pass whose schedule key a
                    // listing still showed (Workers KV lists lag deletes).
                    Purged::Gone => {}
                }
            }
        }
        kv.delete(key).await?;
    }
    Ok(report)
}

/// What a purge found.
enum Purged {
    Removed,
    /// Not finished (approved since, or a schedule this engine did not write).
    Kept,
    /// Already gone.
    Gone,
}

/// Removes a finished task's keys and index entries.
async fn purge_task<K: KeyValue>(kv: &K, id: &str) -> Result<Purged, KvError> {
    let resident = match agent_zero_engine::load(kv, id).await {
        Ok(Some(resident)) => resident,
        Ok(None) | Err(agent_zero_engine::TaskError::InvalidTaskId(_)) => return Ok(Purged::Gone),
        Err(e) => return Err(KvError::Backend(e.to_string())),
    };
    let finished =
        resident.state.is_terminal() && resident.state != TaskState::NeedsHuman && resident.ended_ms.is_some();
    if !finished {
        return Ok(Purged::Kept);
    }
    // The index first, entry 0 last: a crash anywhere in between leaves a
    // task that still loads, and the next pass (the schedule key is deleted
    // after this returns) removes the rest.
    crate::task_index::forget_task(kv, id).await?;
    let prefix = format!("task/{id}/");
    let first = agent_zero_engine::log_key(id, 0);
    // Bounded: a task has at most 48 ticks' worth of entries and claims.
    for _ in 0..8 {
        let page = kv.list(&prefix, None, 100).await?;
        let rest: Vec<&String> = page.keys.iter().filter(|k| **k != first).collect();
        if rest.is_empty() {
            if !page.keys.is_empty() {
                kv.delete(&first).await?;
            }
            break;
        }
        for key in rest {
            kv.delete(key).await?;
        }
    }
    Ok(Purged::Removed)
}
