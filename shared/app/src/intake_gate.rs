//! The repository's trigger policy, applied at intake before anything is
//! stored. The first tick of a delivery reads `.agent-zero.yml` (a GitHub
//! call intake does not make) and records its triggers here, one small key
//! per repository; intake reads that key and answers a delivery the policy
//! would decline (an outsider's comment, an issue without the label, a
//! pull request while proactive review is off) with 202 and the reason,
//! writing nothing: no delivery record, no task, no queue message. So
//! outsiders cannot fill a store's key quota or its daily writes.
//!
//! A record older than [`FRESH_MS`], or none, and intake records the
//! delivery as before: its tick reads the policy again and refreshes the
//! record, so a policy that starts allowing more is honoured within the
//! hour.

use agent_zero_agent::Policy;
use agent_zero_github::{IgnoreReason, ParsedDelivery, PolicySwitches};
use agent_zero_ports::KeyValue;
use serde::{Deserialize, Serialize};

/// How long a recorded policy gates intake.
pub(crate) const FRESH_MS: u64 = 60 * 60 * 1_000;

/// What intake needs of a repository's policy, and when it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GateRecord {
    proactive_enabled: bool,
    issues_enabled: bool,
    issues_require_label: String,
    author_associations: Vec<String>,
    allowed_bots: Vec<String>,
    read_at_ms: u64,
}

impl GateRecord {
    fn of(policy: &Policy, now_ms: u64) -> Self {
        Self {
            proactive_enabled: policy.proactive.enabled,
            issues_enabled: policy.issues.enabled,
            issues_require_label: policy.issues.require_label.clone(),
            author_associations: policy.triggers.author_associations.clone(),
            allowed_bots: policy.triggers.allowed_bots.clone(),
            read_at_ms: now_ms,
        }
    }

    fn switches(&self) -> PolicySwitches<'_> {
        PolicySwitches {
            proactive_enabled: self.proactive_enabled,
            issues_enabled: self.issues_enabled,
            issues_require_label: &self.issues_require_label,
            author_associations: &self.author_associations,
            allowed_bots: &self.allowed_bots,
        }
    }
}

/// The key of `owner/repo`'s record (names are case-insensitive on GitHub).
fn key(repository: &str) -> String {
    format!("gate/{}", repository.to_ascii_lowercase())
}

/// Why the repository's recorded policy declines `seed`, when a fresh one
/// is recorded and does. One read; nothing is written.
pub(crate) async fn declines<K: KeyValue>(kv: &K, seed: &ParsedDelivery, now_ms: u64) -> Option<IgnoreReason> {
    let bytes = kv.get(&key(&seed.repository.full_name())).await.ok().flatten()?;
    let record: GateRecord = agent_zero_contracts::json::from_slice(&bytes).ok()?;
    if now_ms.saturating_sub(record.read_at_ms) >= FRESH_MS {
        return None;
    }
    seed.admit(&record.switches()).err()
}

/// Records `policy`'s triggers for `repository`, read at `now_ms`: written
/// when they changed or the record is past half its freshness, so a busy
/// repository costs a write about every half hour, not one per delivery.
/// Best effort: without it, intake records deliveries as before.
pub(crate) async fn record<K: KeyValue>(kv: &K, repository: &str, policy: &Policy, now_ms: u64) {
    let record = GateRecord::of(policy, now_ms);
    let key = key(repository);
    let current: Option<GateRecord> =
        kv.get(&key).await.ok().flatten().and_then(|b| agent_zero_contracts::json::from_slice(&b).ok());
    let fresh_enough = current.as_ref().is_some_and(|c| {
        GateRecord { read_at_ms: record.read_at_ms, ..c.clone() } == record
            && now_ms.saturating_sub(c.read_at_ms) < FRESH_MS / 2
    });
    if !fresh_enough && let Ok(bytes) = serde_json::to_vec(&record) {
        let _ = kv.put(&key, &bytes).await;
    }
}

#[cfg(test)]
mod tests {
    use agent_zero_github::{Intake, IntakeOptions, parse_delivery};
    use agent_zero_ports::{MemoryKv, block_on};

    use super::*;

    fn comment_by(association: &str) -> ParsedDelivery {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/github-webhooks/pull_request_review_comment/created.payload.json"
        );
        let mut payload: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        payload["comment"]["author_association"] = serde_json::json!(association);
        let body = serde_json::to_vec(&payload).unwrap();
        match parse_delivery("pull_request_review_comment", "d-1", &body, &IntakeOptions::default()).unwrap() {
            Intake::Task(seed) => *seed,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_fresh_record_declines_an_outsider_and_admits_a_collaborator() {
        let kv = MemoryKv::new();
        let outsider = comment_by("NONE");
        let repository = outsider.repository.full_name();
        let now = 1_000_000;
        assert_eq!(block_on(declines(&kv, &outsider, now)), None, "no record: intake records it");
        block_on(record(&kv, &repository, &Policy::default(), now));
        let reason = block_on(declines(&kv, &outsider, now + 1)).expect("declined");
        assert_eq!(reason.code(), "author-not-allowed");
        assert_eq!(block_on(declines(&kv, &comment_by("COLLABORATOR"), now + 1)), None);
        // Stale after an hour: recorded again, and its tick re-reads the policy.
        assert_eq!(block_on(declines(&kv, &outsider, now + FRESH_MS)), None);
    }

    #[test]
    fn an_unchanged_policy_is_rewritten_only_after_half_its_freshness() {
        let kv = MemoryKv::new();
        let policy = Policy::default();
        block_on(record(&kv, "acme/demo", &policy, 0));
        block_on(record(&kv, "ACME/demo", &policy, 10));
        let stored = block_on(kv.get("gate/acme/demo")).unwrap().unwrap();
        let stored: GateRecord = serde_json::from_slice(&stored).unwrap();
        assert_eq!(stored.read_at_ms, 0, "not rewritten");
        block_on(record(&kv, "acme/demo", &policy, FRESH_MS / 2));
        let stored: GateRecord = serde_json::from_slice(&block_on(kv.get("gate/acme/demo")).unwrap().unwrap()).unwrap();
        assert_eq!(stored.read_at_ms, FRESH_MS / 2);
    }
}
