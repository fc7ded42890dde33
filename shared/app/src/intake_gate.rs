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
//! hour. A record written before `triggers.optInLabel` and
//! `triggers.maxRunsPerHour` existed counts as none.
//!
//! A delivery the record admits is one run of its pull request or issue:
//! [`runs`] caps them at `triggers.maxRunsPerHour` a rolling hour.

mod runs;

use agent_zero_agent::Policy;
use agent_zero_github::{IgnoreReason, ParsedDelivery, PolicySwitches};
use agent_zero_ports::KeyValue;
use serde::{Deserialize, Serialize};

pub(crate) use runs::Hour;

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
    /// `None` in a record from before the setting: read as no record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    opt_in_label: Option<String>,
    /// `None` in a record from before the setting: read as no record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_runs_per_hour: Option<u32>,
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
            opt_in_label: Some(policy.triggers.opt_in_label.clone()),
            max_runs_per_hour: Some(policy.triggers.max_runs_per_hour),
            read_at_ms: now_ms,
        }
    }
}

/// The switches `policy` sets: what the tick admits a delivery under, and
/// what its record gates intake with.
pub(crate) fn switches(policy: &Policy) -> PolicySwitches<'_> {
    PolicySwitches {
        proactive_enabled: policy.proactive.enabled,
        issues_enabled: policy.issues.enabled,
        issues_require_label: &policy.issues.require_label,
        author_associations: &policy.triggers.author_associations,
        allowed_bots: &policy.triggers.allowed_bots,
        opt_in_label: &policy.triggers.opt_in_label,
    }
}

/// What a repository's recorded policy says of a delivery at intake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No fresh record: intake stores the delivery, and its tick reads the
    /// policy (and records it).
    Unknown,
    /// Declined: answered with the reason, nothing stored.
    Declined(IgnoreReason),
    /// Admitted, as one of at most this many runs an hour of its pull
    /// request or issue (`triggers.maxRunsPerHour`).
    Admitted { max_runs_per_hour: u32 },
}

/// The key of `owner/repo`'s record (names are case-insensitive on GitHub).
fn key(repository: &str) -> String {
    format!("gate/{}", repository.to_ascii_lowercase())
}

/// The record of `repository` (`owner/name` on GitHub, [`forge_repository`]
/// elsewhere) when a fresh one with every setting is recorded. One read.
async fn fresh<K: KeyValue>(kv: &K, repository: &str, now_ms: u64) -> Option<(GateRecord, String, u32)> {
    let bytes = kv.get(&key(repository)).await.ok().flatten()?;
    let record = agent_zero_codecs::json::from_slice::<GateRecord>(&bytes).ok()?;
    let (Some(opt_in_label), Some(max_runs_per_hour)) = (record.opt_in_label.clone(), record.max_runs_per_hour) else {
        return None;
    };
    (now_ms.saturating_sub(record.read_at_ms) < FRESH_MS).then_some((record, opt_in_label, max_runs_per_hour))
}

/// What the repository's recorded policy, when a fresh one is recorded,
/// says of `parsed`. One read; nothing is written.
pub(crate) async fn verdict<K: KeyValue>(kv: &K, parsed: &ParsedDelivery, now_ms: u64) -> Verdict {
    let Some((record, opt_in_label, max_runs_per_hour)) = fresh(kv, &parsed.repository.full_name(), now_ms).await
    else {
        return Verdict::Unknown;
    };
    let opt_in_label = &opt_in_label;
    let switches = PolicySwitches {
        proactive_enabled: record.proactive_enabled,
        issues_enabled: record.issues_enabled,
        issues_require_label: &record.issues_require_label,
        author_associations: &record.author_associations,
        allowed_bots: &record.allowed_bots,
        opt_in_label,
    };
    match parsed.admit(&switches) {
        Err(reason) => Verdict::Declined(reason),
        Ok(()) => Verdict::Admitted { max_runs_per_hour },
    }
}

/// The name a GitLab, Gitea or Forgejo repository's record and run hours
/// go by: `{forge}:{path}` (no GitHub `owner/name` has a colon).
pub(crate) fn forge_repository(forge: &str, path: &str) -> String {
    format!("{forge}:{path}")
}

/// What the recorded policy of a GitLab, Gitea or Forgejo repository
/// (`repository` as [`forge_repository`] names it), when a fresh one is
/// recorded, says of `arrival` at intake. Only what the arrival itself
/// shows decides here: the switches, and the labels it carries or added.
/// Who its author is to the repository takes the forge's API, so that
/// stays with the gate (the first tick), as do labels past the payload's
/// cap. One read; nothing is written.
pub(crate) async fn forge_verdict<K: KeyValue>(
    kv: &K,
    repository: &str,
    arrival: &agent_zero_forges::Arrival,
    now_ms: u64,
) -> Verdict {
    use agent_zero_forges::ArrivalKind;
    let Some((record, _, max_runs_per_hour)) = fresh(kv, repository, now_ms).await else { return Verdict::Unknown };
    let required = record.issues_require_label.trim();
    let carries = |labels: &[String]| required.is_empty() || labels.iter().any(|l| l.eq_ignore_ascii_case(required));
    let all_labels = arrival.labels.len() < agent_zero_forges::MAX_LABELS;
    let declined = match &arrival.kind {
        ArrivalKind::IssueOpened | ArrivalKind::IssueLabelled { .. } if !record.issues_enabled => {
            Some(IgnoreReason::IssuesDisabled)
        }
        ArrivalKind::IssueLabelled { added } if !added.is_empty() && !carries(added) => {
            Some(IgnoreReason::OtherLabelAdded { added: added[0].clone(), required: required.to_owned() })
        }
        ArrivalKind::IssueOpened | ArrivalKind::IssueLabelled { .. } if all_labels && !carries(&arrival.labels) => {
            Some(IgnoreReason::MissingRequiredLabel { required: required.to_owned() })
        }
        ArrivalKind::ChangeRequestOpened | ArrivalKind::ChangeRequestUpdated { .. } if !record.proactive_enabled => {
            Some(IgnoreReason::ProactiveDisabled)
        }
        _ => None,
    };
    match declined {
        Some(reason) => Verdict::Declined(reason),
        None => Verdict::Admitted { max_runs_per_hour },
    }
}

/// Writes `value` as the intake record `delivery/github/{id}`, to be gone
/// at `expires_ms`: one write where the store expires keys itself (Workers
/// KV), a retention schedule key besides it elsewhere (the pass removes
/// every `delivery/github/` record the same way). Best effort.
pub(crate) async fn keep_until<K: KeyValue>(kv: &K, id: &str, value: &[u8], now_ms: u64, expires_ms: u64) {
    let key = format!("delivery/github/{id}");
    let ttl_secs = expires_ms.saturating_sub(now_ms).div_ceil(1_000);
    if kv.put_expiring(&key, value, ttl_secs).await.is_ok() && !kv.expires_on_its_own(&key) {
        let _ = crate::retention::schedule(kv, expires_ms, crate::retention::Kind::Delivery, id).await;
    }
}

/// Records `policy`'s triggers for `repository`, read at `now_ms`: written
/// when they changed or the record is past half its freshness, so a busy
/// repository costs a write about every half hour, not one per delivery.
/// Best effort: without it, intake records deliveries as before.
pub(crate) async fn record<K: KeyValue>(kv: &K, repository: &str, policy: &Policy, now_ms: u64) {
    let record = GateRecord::of(policy, now_ms);
    let key = key(repository);
    let current: Option<GateRecord> =
        kv.get(&key).await.ok().flatten().and_then(|b| agent_zero_codecs::json::from_slice(&b).ok());
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
            Intake::Task(parsed) => *parsed,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_fresh_record_declines_an_outsider_and_admits_a_collaborator() {
        let kv = MemoryKv::new();
        let outsider = comment_by("NONE");
        let repository = outsider.repository.full_name();
        let now = 1_000_000;
        assert_eq!(block_on(verdict(&kv, &outsider, now)), Verdict::Unknown, "no record: intake records it");
        block_on(record(&kv, &repository, &Policy::default(), now));
        let Verdict::Declined(reason) = block_on(verdict(&kv, &outsider, now + 1)) else { panic!("declined") };
        assert_eq!(reason.code(), "author-not-allowed");
        let max_runs_per_hour = agent_zero_agent::policy::DEFAULT_MAX_RUNS_PER_HOUR;
        assert_eq!(
            block_on(verdict(&kv, &comment_by("COLLABORATOR"), now + 1)),
            Verdict::Admitted { max_runs_per_hour }
        );
        // Stale after an hour: recorded again, and its tick re-reads the policy.
        assert_eq!(block_on(verdict(&kv, &outsider, now + FRESH_MS)), Verdict::Unknown);
    }

    #[test]
    fn the_record_carries_the_opt_in_label_and_the_cap() {
        let kv = MemoryKv::new();
        let policy = Policy::parse("triggers:\n  optInLabel: ok-to-review\n  maxRunsPerHour: 3\n").unwrap();
        block_on(record(&kv, "Codertocat/Hello-World", &policy, 0));
        let stored: serde_json::Value =
            serde_json::from_slice(&block_on(kv.get("gate/codertocat/hello-world")).unwrap().unwrap()).unwrap();
        assert_eq!((stored["optInLabel"].as_str(), stored["maxRunsPerHour"].as_u64()), (Some("ok-to-review"), Some(3)));
        assert_eq!(block_on(verdict(&kv, &comment_by("OWNER"), 1)), Verdict::Admitted { max_runs_per_hour: 3 });
        // A record from before the two settings gates nothing: its tick writes a new one.
        let mut old = stored.clone();
        old.as_object_mut().unwrap().retain(|k, _| k != "optInLabel" && k != "maxRunsPerHour");
        block_on(kv.put("gate/codertocat/hello-world", &serde_json::to_vec(&old).unwrap())).unwrap();
        assert_eq!(block_on(verdict(&kv, &comment_by("NONE"), 1)), Verdict::Unknown);
        block_on(record(&kv, "Codertocat/Hello-World", &policy, 2));
        assert!(matches!(block_on(verdict(&kv, &comment_by("NONE"), 3)), Verdict::Declined(_)), "rewritten at once");
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
