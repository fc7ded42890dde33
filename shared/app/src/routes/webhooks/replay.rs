//! A captured signed delivery sent again under a fresh `X-GitHub-Delivery`
//! starts nothing. The signature covers the body, not the delivery id, so
//! de-duplicating by id alone would let anyone holding one signed body
//! (a proxy's log, a leaked capture) start its run again at will.
//!
//! - Intake remembers the SHA-256 of every body it acted on (a task or an
//!   installation change), as `delivery/github/sha256-{hex}` holding the
//!   delivery id it came with, for the delivery retention
//!   (`AGENT_ZERO_DELIVERY_RETENTION_DAYS`, default 3 days). The same body
//!   under another id is refused (`replayed-body`); under its own id it is
//!   GitHub's redelivery, answered as the duplicate it is.
//! - A task delivery whose payload is dated (the latest of its
//!   `updated_at`/`submitted_at`, see `ParsedDelivery::event_at_ms`) earlier
//!   than that retention is refused (`stale-event`): its digest may be
//!   forgotten by then, and GitHub redelivers only within 3 days. So a body
//!   is refused while it is remembered, and once it is old enough to be
//!   forgotten. (Installation payloads carry the installation's own dates,
//!   not the event's: only their digest guards them.)
//!
//! Both refusals store nothing and answer 202 with the reason. Like every
//! check-then-write on KV, two copies racing each other may both pass.

use agent_zero_github::{IgnoreReason, ParsedDelivery};
use agent_zero_ports::KeyValue;
use sha2::Digest;

/// The SHA-256 of a body, hex.
pub(crate) fn digest(body: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(body))
}

fn id(digest: &str) -> String {
    format!("sha256-{digest}")
}

/// Why `parsed` is too old to act on at `now_ms` under a replay window of
/// `window_ms`, if it is.
pub(crate) fn stale(parsed: &ParsedDelivery, now_ms: u64, window_ms: u64) -> Option<IgnoreReason> {
    let at = parsed.event_at_ms?;
    (now_ms.saturating_sub(at) > window_ms)
        .then(|| IgnoreReason::StaleEvent { at: agent_zero_contracts::rfc3339(at), hours: window_ms / 3_600_000 })
}

/// Whether the body of `digest` was accepted, within its lifetime, under a
/// delivery id other than `delivery`. One read.
///
/// The record is `{expires_ms} {delivery id}` (a delivery id has no
/// spaces): text, as one more serde_json reader would be wasm for a split.
pub(crate) async fn replayed<K: KeyValue>(kv: &K, digest: &str, delivery: &str, now_ms: u64) -> bool {
    let Some(bytes) = kv.get(&format!("delivery/github/{}", id(digest))).await.ok().flatten() else { return false };
    let text = String::from_utf8_lossy(&bytes);
    match text.split_once(' ').and_then(|(expires, id)| Some((expires.parse::<u64>().ok()?, id))) {
        Some((expires_ms, accepted_as)) => expires_ms > now_ms && accepted_as != delivery,
        // Not ours to read: refuse rather than run a body twice.
        None => true,
    }
}

/// Remembers that the body of `digest` was accepted as `delivery`, until
/// `now_ms + window_ms`. Best effort, like the delivery's own record.
pub(crate) async fn remember<K: KeyValue>(kv: &K, digest: &str, delivery: &str, now_ms: u64, window_ms: u64) {
    let expires_ms = now_ms.saturating_add(window_ms);
    let record = format!("{expires_ms} {delivery}");
    crate::intake_gate::keep_until(kv, &id(digest), record.as_bytes(), now_ms, expires_ms).await;
}

#[cfg(test)]
mod tests {
    use agent_zero_ports::{MemoryKv, block_on};

    use super::*;

    #[test]
    fn a_body_is_remembered_with_its_delivery_for_the_window() {
        let kv = MemoryKv::new();
        let body = br#"{"action":"opened"}"#;
        let digest = digest(body);
        assert_eq!(
            digest, "d592421cfe150deec6c49b8989cc99478e39c7f8cdd4c36f5b1c4cfeff394e24",
            "as sha256sum prints it"
        );
        assert!(!block_on(replayed(&kv, &digest, "d-1", 0)), "never seen");
        block_on(remember(&kv, &digest, "d-1", 1_000, 5_000));
        assert!(!block_on(replayed(&kv, &digest, "d-1", 2_000)), "its own redelivery");
        assert!(block_on(replayed(&kv, &digest, "d-2", 2_000)), "another id: a replay");
        assert!(!block_on(replayed(&kv, &digest, "d-2", 6_000)), "forgotten after the window");
        let stored = kv.snapshot();
        assert_eq!(stored[&format!("delivery/github/sha256-{digest}")], b"6000 d-1");
        let keys: Vec<String> = stored.into_keys().collect();
        assert_eq!(keys[0], format!("delivery/github/sha256-{digest}"));
        assert_eq!(keys[1], crate::retention::schedule_key(6_000, crate::retention::Kind::Delivery, &id(&digest)));
    }
}
