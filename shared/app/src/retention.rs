//! Retention: every record has a lifetime, so storage grows with work and
//! not with history.
//!
//! | record | lives | removed by |
//! |---|---|---|
//! | `delivery/github/{task}` (a delivery's answer, for redeliveries) | `AGENT_ZERO_DELIVERY_RETENTION_DAYS`, default 3 (GitHub's redelivery window) | Workers KV expiration on Cloudflare (no schedule key there); the retention pass (`crate::retention_pass`) elsewhere |
//! | a finished task: `task/{id}/…` and its index keys | `AGENT_ZERO_RETENTION_DAYS` after it ended, default 30 | the retention pass |
//! | an audit entry (`audit/{id}`) | `AGENT_ZERO_RETENTION_DAYS` after it was written | Workers KV expiration on Cloudflare; the retention pass (`crate::retention_pass`) elsewhere |
//! | a dashboard revocation (`dashboard/revoked/{id}`) | until the sessions it refuses have expired (at most 8 hours) | Workers KV expiration on Cloudflare; the retention pass (`crate::retention_pass`) elsewhere (`crate::dashboard::revocation`) |
//! | an accepted body's digest (`delivery/github/sha256-{hex}`, replay refusal) | `AGENT_ZERO_DELIVERY_RETENTION_DAYS` | as a delivery record (`crate::routes::webhooks` `replay`) |
//! | the runs of a pull request or issue in one hour (`delivery/github/runs-…`) | the hour and the next | as a delivery record (`crate::intake_gate::runs`) |
//! | a repository's recorded triggers (`gate/{repo}`) | one key a repository, rewritten while it is active | bounded by repositories |
//! | the policy text cache (`policy/{owner}/{repo}`) | one key a repository, replaced by a push | bounded by repositories |
//! | an installation's last change (`installation/{id}`) | until the installation is deleted | bounded by live installations |
//!
//! A task waiting for a person (`needs-human`) is never removed: it is not
//! finished. Each lifetime is scheduled when the record is written, as one
//! key `retention/{due_ms:013}/{kind}/{id}`: ascending key order is due
//! order, so the pass (run by every sweep) lists from the front and stops
//! at the first key not yet due. It costs nothing while nothing is due,
//! and a bounded amount per sweep ([`MAX_PURGED_PER_PASS`]) when it is.
//! A delivery record also carries its own `expiresAtMs`, so an expired one
//! is never answered from, whether or not it was removed yet.

use agent_zero_ports::{KeyValue, KvError};

use crate::Config;
use crate::error::{ApiError, ErrorCode};

/// Prefix of every schedule key.
pub const RETENTION_PREFIX: &str = "retention/";
/// Most records one pass removes (each task is a list plus a delete per key).
pub const MAX_PURGED_PER_PASS: usize = 25;
const DAY_MS: f64 = 86_400_000.0;

/// The operator's lifetimes, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifetimes {
    pub delivery_ms: u64,
    pub task_ms: u64,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Self { delivery_ms: 3 * 86_400_000, task_ms: 30 * 86_400_000 }
    }
}

impl Lifetimes {
    /// From `AGENT_ZERO_DELIVERY_RETENTION_DAYS` and `AGENT_ZERO_RETENTION_DAYS`
    /// (positive numbers of days; fractions allowed). A malformed value is an
    /// error naming the variable, never replaced by the default.
    pub(crate) fn from_config(config: &Config) -> Result<Self, ApiError> {
        let defaults = Self::default();
        Ok(Self {
            delivery_ms: days(config, "AGENT_ZERO_DELIVERY_RETENTION_DAYS")?.unwrap_or(defaults.delivery_ms),
            task_ms: days(config, "AGENT_ZERO_RETENTION_DAYS")?.unwrap_or(defaults.task_ms),
        })
    }
}

fn days(config: &Config, name: &str) -> Result<Option<u64>, ApiError> {
    let Some(text) = config.get(name) else { return Ok(None) };
    let bad = || {
        ApiError::new(ErrorCode::NotConfigured, format!("{name} must be a positive number of days (fractions allowed)"))
            .with_field(name)
    };
    let value = agent_zero_codecs::decimal::parse(text.trim()).ok_or_else(bad)?;
    if !value.is_finite() || value <= 0.0 || value > 36_500.0 {
        return Err(bad());
    }
    Ok(Some(((value * DAY_MS) as u64).max(1)))
}

/// What a schedule key removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A delivery record (`delivery/github/{id}`).
    Delivery,
    /// A finished task's log, claims, meta and index keys.
    Task,
    /// An audit entry (`audit/{id}`).
    Audit,
    /// A dashboard revocation (`dashboard/revoked/{id}`).
    Revocation,
}

impl Kind {
    const fn as_str(self) -> &'static str {
        match self {
            Self::Delivery => "delivery",
            Self::Task => "task",
            Self::Audit => "audit",
            Self::Revocation => "revocation",
        }
    }
}

/// The schedule key of `id` due at `due_ms`.
/// The record a delivery schedule id names: `gl-...` GitLab's,
/// `gt-...` Gitea's and Forgejo's, anything else (`gh-...`) GitHub's.
pub(crate) fn delivery_record_key(id: &str) -> String {
    let forge = match id.get(..3) {
        Some("gl-") => "gitlab",
        Some("gt-") => "gitea",
        _ => "github",
    };
    format!("delivery/{forge}/{id}")
}

pub fn schedule_key(due_ms: u64, kind: Kind, id: &str) -> String {
    format!("{RETENTION_PREFIX}{due_ms:013}/{}/{id}", kind.as_str())
}

pub(crate) fn parse_schedule_key(key: &str) -> Option<(u64, Kind, &str)> {
    let rest = key.strip_prefix(RETENTION_PREFIX)?;
    let (due, rest) = rest.split_once('/')?;
    let (kind, id) = rest.split_once('/')?;
    let kind = match kind {
        "delivery" => Kind::Delivery,
        "task" => Kind::Task,
        "audit" => Kind::Audit,
        "revocation" => Kind::Revocation,
        _ => return None,
    };
    (due.len() == 13 && !id.is_empty()).then_some(())?;
    Some((due.parse().ok()?, kind, id))
}

/// Schedules `id` for removal at `due_ms` (idempotent: the same due time
/// is the same key).
pub async fn schedule<K: KeyValue>(kv: &K, due_ms: u64, kind: Kind, id: &str) -> Result<(), KvError> {
    kv.put(&schedule_key(due_ms, kind, id), b"").await
}

/// Schedules a finished task after the tick that finished it; a task that
/// runs on or waits for a person is left alone.
pub async fn schedule_finished<K: KeyValue>(
    kv: &K,
    lifetimes: &Lifetimes,
    resident: &agent_zero_engine::Resident,
) -> Result<(), KvError> {
    let (Some(ended), Some(origin)) = (resident.ended_ms, resident.origin()) else { return Ok(()) };
    schedule(kv, ended.saturating_add(lifetimes.task_ms), Kind::Task, origin.task_id).await
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
