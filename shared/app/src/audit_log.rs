//! The append-only audit log of control-plane mutations: who, what, when,
//! outcome.
//!
//! Each entry is one write-once key, `audit/{when}-{request_id}` (`{when}`
//! = `9999999999999 - now_ms`, so a prefix listing is newest first); there
//! is no counter and no key is ever rewritten. Only authenticated attempts
//! are recorded (an anonymous caller cannot make the app write). Text is
//! redacted on the way in: no configured secret or token is stored. Each
//! entry lives as long as a finished task (`AGENT_ZERO_RETENTION_DAYS`):
//! Workers KV expires it, elsewhere the retention pass removes it.

use agent_zero_contracts::rfc3339;
use agent_zero_ports::{KeyValue, KvError};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::auth::redact;
use crate::retention::{Kind, Lifetimes};

const PREFIX: &str = "audit/";

/// The audited mutations: the name each is listed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuditAction {
    #[serde(rename = "tasks.create")]
    TasksCreate,
    #[serde(rename = "approvals.decide")]
    ApprovalsDecide,
    #[serde(rename = "sweep")]
    Sweep,
    #[serde(rename = "dashboard.sign-in")]
    DashboardSignIn,
    #[serde(rename = "dashboard.revoke-sessions")]
    DashboardRevokeSessions,
}

impl AuditAction {
    /// Every action, in the order the OpenAPI document lists them.
    pub const ALL: [Self; 5] =
        [Self::TasksCreate, Self::ApprovalsDecide, Self::Sweep, Self::DashboardSignIn, Self::DashboardRevokeSessions];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::TasksCreate => "tasks.create",
            Self::ApprovalsDecide => "approvals.decide",
            Self::Sweep => "sweep",
            Self::DashboardSignIn => "dashboard.sign-in",
            Self::DashboardRevokeSessions => "dashboard.revoke-sessions",
        }
    }
}

/// One audited mutation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// RFC 3339 UTC.
    pub at: String,
    /// The authenticated principal's name.
    pub principal: String,
    /// What was done.
    pub action: AuditAction,
    /// The task id (or, for a refused create, the requested repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `approve`, `reject`, the requested mode: what was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The HTTP status answered.
    pub status: u16,
    /// `ok`, or the error code answered.
    pub outcome: String,
    /// The field an error was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub request_id: String,
}

impl AuditEntry {
    /// The entry with every free-text field scrubbed of `secrets`.
    fn redacted(&self, secrets: &[String]) -> Self {
        let scrub = |v: &Option<String>| v.as_deref().map(|t| redact(t, secrets));
        Self {
            principal: redact(&self.principal, secrets),
            target: scrub(&self.target),
            detail: scrub(&self.detail),
            field: scrub(&self.field),
            ..self.clone()
        }
    }
}

/// Appends `entry` at `now_ms`.
pub(crate) async fn append<K: KeyValue>(
    kv: &K,
    entry: &AuditEntry,
    now_ms: u64,
    settings: &crate::Settings,
) -> Result<(), KvError> {
    let when = 9_999_999_999_999u64.saturating_sub(now_ms);
    let id = format!("{when:013}-{}", entry.request_id);
    let key = format!("{PREFIX}{id}");
    let entry = AuditEntry { at: rfc3339(now_ms), ..entry.redacted(crate::auth::secrets(settings)) };
    let bytes = serde_json::to_vec(&entry).map_err(|e| KvError::Backend(e.to_string()))?;
    let lifetime_ms = settings.run().map(|run| run.lifetimes.task_ms).unwrap_or(Lifetimes::default().task_ms);
    kv.put_expiring(&key, &bytes, lifetime_ms.div_ceil(1_000)).await?;
    if !kv.expires_on_its_own(&key) {
        crate::retention::schedule(kv, now_ms.saturating_add(lifetime_ms), Kind::Audit, &id).await?;
    }
    Ok(())
}

/// One page of the log, newest first, and the cursor of the next.
pub(crate) async fn list<K: KeyValue>(
    kv: &K,
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<AuditEntry>, Option<String>), ListError> {
    let backend = cursor.map(decode_cursor).transpose()?;
    let page = kv.list(PREFIX, backend.as_deref(), limit).await?;
    let mut entries = Vec::with_capacity(page.keys.len());
    for key in &page.keys {
        if let Some(bytes) = kv.get(key).await?
            && let Ok(entry) = agent_zero_codecs::json::from_slice(&bytes)
        {
            entries.push(entry);
        }
    }
    Ok((entries, page.cursor.map(|c| URL_SAFE_NO_PAD.encode(format!("{PREFIX}\n{c}")))))
}

/// Why the log could not be listed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ListError {
    /// The KV backend failed.
    #[error("audit log: {0}")]
    Kv(#[from] KvError),
    /// A cursor this listing did not hand out.
    #[error("cursor: not a cursor this API handed out")]
    InvalidCursor,
}

fn decode_cursor(cursor: &str) -> Result<String, ListError> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| ListError::InvalidCursor)?;
    let text = String::from_utf8(bytes).map_err(|_| ListError::InvalidCursor)?;
    match text.split_once('\n') {
        Some((PREFIX, backend)) if !backend.is_empty() => Ok(backend.to_owned()),
        _ => Err(ListError::InvalidCursor),
    }
}
