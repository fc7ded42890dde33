//! Runs per pull request or issue per rolling hour
//! (`triggers.maxRunsPerHour`), counted at intake before anything is
//! stored: a delivery over the cap is answered 202 with the reason and
//! writes nothing.
//!
//! Storage: one small key per pull request or issue per clock hour,
//! `delivery/github/runs-{repo}-{number}-{hour}` (`{repo}` the first 8 bytes
//! of SHA-256 of the lower-case `owner/name`, or of `{forge}:{path}` for a
//! GitLab, Gitea or Forgejo repository, hex; `{hour}` the hours since
//! the epoch), holding the start times (milliseconds) of that hour's runs,
//! as decimal text separated by spaces: one more serde_json reader and
//! writer (of `Vec<u64>`) would be wasm for two lines of parsing.
//! The rolling hour ending now lies within this clock hour and the one
//! before, so a check is two reads, and a start one write, to this hour's
//! key (of what the check read). Nothing is a counter that must be atomic: each key lists times,
//! and the times past the hour are ignored. A key is needed until its hour
//! plus one has passed; it is written with that lifetime (Workers KV
//! expires it itself) and, on a store that keeps it, scheduled once, when
//! its hour's first run creates it, for the retention pass, which removes
//! `delivery/github/` records.
//!
//! Not atomic: KV has no increment, and Workers KV is eventually consistent
//! (and takes one write a second per key). Deliveries that race, or that
//! land before a write is visible, may each pass; the cap bounds a loop or
//! a flood, not the last run.

use agent_zero_github::{IgnoreReason, ParsedDelivery, Subject};
use agent_zero_ports::KeyValue;
use sha2::Digest;

/// One hour, in milliseconds: the window of `triggers.maxRunsPerHour`.
pub(crate) const HOUR_MS: u64 = 60 * 60 * 1_000;

/// The pull request's or issue's number, for the keys.
fn number(parsed: &ParsedDelivery) -> Option<u64> {
    match &parsed.subject {
        Subject::PullRequest(pr) => Some(pr.number),
        Subject::Issue(issue) => Some(issue.number),
        _ => None,
    }
}

/// The id (under `delivery/github/`) of the key of `repository`'s
/// `number` for `hour`.
fn id(repository: &str, number: u64, hour: u64) -> String {
    let digest = sha2::Sha256::digest(repository.to_ascii_lowercase().as_bytes());
    format!("runs-{}-{number}-{hour}", hex::encode(&digest[..8]))
}

/// The start times one key holds; what is not a time is skipped.
async fn starts<K: KeyValue>(kv: &K, id: &str) -> Vec<u64> {
    let Some(bytes) = kv.get(&format!("delivery/github/{id}")).await.ok().flatten() else { return Vec::new() };
    String::from_utf8_lossy(&bytes).split_ascii_whitespace().filter_map(|t| t.parse().ok()).collect()
}

/// The runs a pull request or issue started in the hour before a delivery.
#[derive(Debug)]
pub(crate) struct Hour {
    number: u64,
    /// This clock hour's key, and what it held.
    id: String,
    this_hour: Vec<u64>,
    /// Runs started in the rolling hour.
    started: usize,
}

impl Hour {
    /// The runs of `parsed`'s pull request or issue in the hour before
    /// `now_ms`: two reads (this clock hour's key and the last one's).
    pub(crate) async fn of<K: KeyValue>(kv: &K, parsed: &ParsedDelivery, now_ms: u64) -> Option<Self> {
        Some(Self::of_subject(kv, &parsed.repository.full_name(), number(parsed)?, now_ms).await)
    }

    /// The runs of `repository`'s (`owner/name`, or a GitLab, Gitea or
    /// Forgejo one as `intake_gate::forge_repository` names it) issue or
    /// change request `number` in the hour before `now_ms`.
    pub(crate) async fn of_subject<K: KeyValue>(kv: &K, repository: &str, number: u64, now_ms: u64) -> Self {
        let hour = now_ms / HOUR_MS;
        let since = now_ms.saturating_sub(HOUR_MS);
        let in_window = |times: &[u64]| times.iter().filter(|at| **at > since && **at <= now_ms).count();
        let last_hour = starts(kv, &id(repository, number, hour.saturating_sub(1))).await;
        let id = id(repository, number, hour);
        let this_hour = starts(kv, &id).await;
        let started = in_window(&last_hour) + in_window(&this_hour);
        Self { number, id, this_hour, started }
    }

    /// Why another run may not start under `triggers.maxRunsPerHour: max`.
    pub(crate) fn refusal(&self, max: u32) -> Option<IgnoreReason> {
        (self.started >= max as usize).then_some(IgnoreReason::MaxRunsPerHour { number: self.number, max })
    }

    /// Records that a run started at `now_ms` (after it was stored), with
    /// what [`Hour::of`] read: one write, and on a store that keeps keys, a
    /// schedule key when this writes the hour's first run. Best effort: a
    /// failed write forgets one run.
    pub(crate) async fn record_start<K: KeyValue>(mut self, kv: &K, now_ms: u64) {
        let created = self.this_hour.is_empty();
        self.this_hour.push(now_ms);
        // Bounded: no cap lets more runs an hour than this keeps.
        let keep = agent_zero_agent::policy::MAX_RUNS_PER_HOUR as usize;
        let first = self.this_hour.len().saturating_sub(keep);
        let text: Vec<String> = self.this_hour[first..].iter().map(u64::to_string).collect();
        // Needed until no rolling hour reaches back into this clock hour.
        let expires = (now_ms / HOUR_MS + 2) * HOUR_MS;
        let key = format!("delivery/github/{}", self.id);
        let ttl_secs = (expires - now_ms).div_ceil(1_000);
        if kv.put_expiring(&key, text.join(" ").as_bytes(), ttl_secs).await.is_ok()
            && created
            && !kv.expires_on_its_own(&key)
        {
            let _ = crate::retention::schedule(kv, expires, crate::retention::Kind::Delivery, &self.id).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_zero_github::{Intake, IntakeOptions, parse_delivery};
    use agent_zero_ports::{MemoryKv, block_on};

    use super::*;

    fn comment_on(number: u64) -> ParsedDelivery {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/github-webhooks/pull_request_review_comment/created.payload.json"
        );
        let mut payload: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        payload["pull_request"]["number"] = serde_json::json!(number);
        let body = serde_json::to_vec(&payload).unwrap();
        match parse_delivery("pull_request_review_comment", "d-1", &body, &IntakeOptions::default()).unwrap() {
            Intake::Task(parsed) => *parsed,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_rolling_hour_across_two_clock_hours() {
        let kv = MemoryKv::new();
        let parsed = comment_on(2);
        let start = 500 * HOUR_MS + 50 * 60_000; // hh:50
        let refusal = |parsed: &ParsedDelivery, max, at| block_on(Hour::of(&kv, parsed, at)).unwrap().refusal(max);
        let start_at = |at| block_on(block_on(Hour::of(&kv, &parsed, at)).unwrap().record_start(&kv, at));
        start_at(start);
        start_at(start + 15 * 60_000); // hh+1:05
        assert_eq!(refusal(&parsed, 3, start + 20 * 60_000), None);
        let refused = refusal(&parsed, 2, start + 20 * 60_000).expect("two in the hour");
        assert_eq!(refused, IgnoreReason::MaxRunsPerHour { number: 2, max: 2 });
        assert!(refused.to_string().contains("triggers.maxRunsPerHour"), "{refused}");
        // Another pull request has runs of its own.
        assert_eq!(refusal(&comment_on(3), 2, start + 20 * 60_000), None);
        // An hour after the first, one is left in the window.
        assert_eq!(refusal(&parsed, 2, start + HOUR_MS), None);
        assert!(refusal(&parsed, 1, start + HOUR_MS).is_some());
        assert_eq!(refusal(&parsed, 1, start + 15 * 60_000 + HOUR_MS), None);
    }

    #[test]
    fn each_hours_key_is_scheduled_once_and_lives_until_no_window_needs_it() {
        let kv = MemoryKv::new();
        let parsed = comment_on(2);
        let hour = 500;
        for minute in [1, 2, 3] {
            let at = hour * HOUR_MS + minute * 60_000;
            block_on(block_on(Hour::of(&kv, &parsed, at)).unwrap().record_start(&kv, at));
        }
        let keys: Vec<String> = kv.snapshot().into_keys().collect();
        let id = id(&parsed.repository.full_name(), 2, hour);
        let schedule = crate::retention::schedule_key((hour + 2) * HOUR_MS, crate::retention::Kind::Delivery, &id);
        assert_eq!(keys, [format!("delivery/github/{id}"), schedule.clone()], "one key, one schedule");
        let times = String::from_utf8(kv.snapshot()[&keys[0]].clone()).unwrap();
        assert_eq!(
            times,
            format!("{} {} {}", hour * HOUR_MS + 60_000, hour * HOUR_MS + 120_000, hour * HOUR_MS + 180_000)
        );
        assert!(id.len() < 60, "{id}");
        // The retention pass removes it when due, as it does delivery records.
        let report = block_on(crate::retention_pass::pass(&kv, (hour + 2) * HOUR_MS)).unwrap();
        assert_eq!(report.deliveries, 1);
        assert!(kv.snapshot().is_empty());
    }
}
