//! GitLab webhooks (gitlab.com and self-managed): the two ways a hook
//! proves it is GitLab's, and the three hooks intake reads.
//!
//! - The secret token: GitLab sends the configured value as it is in
//!   `X-Gitlab-Token`; compared in constant time (`subtle`).
//! - The signing token (Standard Webhooks): `webhook-signature` holds one
//!   or more space-separated `v1,<base64 HMAC-SHA256>` of
//!   `"{webhook-id}.{webhook-timestamp}.{body}"` under the key the
//!   `whsec_<base64>` token encodes; `webhook-timestamp` (Unix seconds)
//!   must be within [`TOLERANCE_SECS`] of now, so a captured delivery
//!   cannot be sent again later. The MAC is `hmac`'s, compared with its
//!   constant-time `verify_slice`.
//!
//! Each configured secret is required: a hook with both set must carry
//! both. Events (`X-Gitlab-Event`): `Issue Hook` (open; update adding a
//! label), `Merge Request Hook` (open; update with new commits, which
//! carries `oldrev`), `Note Hook` (a merge request diff note).
//!
//! The run path's calls are [`api`]; publication (status, note, branch,
//! merge request) is [`publish`].

pub mod api;
pub mod diff;
pub mod publish;
mod review;
mod thread;

pub use review::{finding_marker, summary_marker};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::arrival::{
    Arrival, ArrivalKind, AuthError, Forge, Ignored, MAX_NAME_BYTES, Parsed, Payload, PayloadError, cap,
    check_delivery_id, header,
};

/// The secret token's header.
pub const TOKEN_HEADER: &str = "x-gitlab-token";
/// The event's header.
pub const EVENT_HEADER: &str = "x-gitlab-event";
/// Standard Webhooks' headers, as GitLab sends them with a signing token.
pub const ID_HEADER: &str = "webhook-id";
/// Unix seconds, signed with the body.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// `v1,<base64>` entries separated by spaces.
pub const SIGNATURE_HEADER: &str = "webhook-signature";
/// How far a signed timestamp may be from now (Standard Webhooks' 5 minutes).
pub const TOLERANCE_SECS: u64 = 5 * 60;
/// The signing token's prefix.
pub const SIGNING_PREFIX: &str = "whsec_";

/// The delivery id, in the order read: the signed `webhook-id` (GitLab
/// sets it to the `Idempotency-Key`, the same on every retry), the
/// `Idempotency-Key`, then `X-Gitlab-Event-UUID` (GitLab before 17.4).
pub const DELIVERY_HEADERS: [&str; 3] = [ID_HEADER, "idempotency-key", "x-gitlab-event-uuid"];

/// Why a signing token cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SigningTokenError {
    /// Not `whsec_` followed by the base64 of the key.
    #[error("expected `whsec_` followed by the base64 of the key ({0})")]
    Malformed(&'static str),
}

/// The secrets a GitLab hook is checked against; at least one is set.
#[derive(Clone)]
pub struct GitLabSecrets {
    token: Option<String>,
    signing_key: Option<Vec<u8>>,
}

impl std::fmt::Debug for GitLabSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitLabSecrets")
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .field("signing_key", &self.signing_key.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl GitLabSecrets {
    /// The secret token (`X-Gitlab-Token`) and the signing token
    /// (`whsec_<base64>`), either may be `None`; `Ok(None)` when both are.
    pub fn new(token: Option<&str>, signing_token: Option<&str>) -> Result<Option<Self>, SigningTokenError> {
        let signing_key = signing_token.map(signing_key).transpose()?;
        let token = token.filter(|t| !t.is_empty()).map(str::to_owned);
        Ok((token.is_some() || signing_key.is_some()).then_some(Self { token, signing_key }))
    }

    /// Whether deliveries must carry a Standard Webhooks signature.
    pub const fn signs(&self) -> bool {
        self.signing_key.is_some()
    }

    /// Whether deliveries must carry the secret token.
    pub const fn has_token(&self) -> bool {
        self.token.is_some()
    }
}

fn signing_key(token: &str) -> Result<Vec<u8>, SigningTokenError> {
    let encoded =
        token.trim().strip_prefix(SIGNING_PREFIX).ok_or(SigningTokenError::Malformed("no `whsec_` prefix"))?;
    let key = STANDARD.decode(encoded).map_err(|_| SigningTokenError::Malformed("not base64"))?;
    if key.is_empty() {
        return Err(SigningTokenError::Malformed("the key is empty"));
    }
    Ok(key)
}

/// Checks every configured secret against the delivery's headers and body,
/// at `now_secs` (Unix seconds). Nothing in the body is read.
pub fn verify(secrets: &GitLabSecrets, headers: &http::HeaderMap, body: &[u8], now_secs: u64) -> Result<(), AuthError> {
    if let Some(token) = &secrets.token {
        let given = header(headers, TOKEN_HEADER).ok_or(AuthError::Missing { header: "X-Gitlab-Token" })?;
        if !bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
            return Err(AuthError::WrongToken { header: "X-Gitlab-Token" });
        }
    }
    if let Some(key) = &secrets.signing_key {
        verify_signature(key, headers, body, now_secs)?;
    }
    Ok(())
}

fn verify_signature(key: &[u8], headers: &http::HeaderMap, body: &[u8], now_secs: u64) -> Result<(), AuthError> {
    let id = header(headers, ID_HEADER).ok_or(AuthError::Missing { header: "webhook-id" })?;
    let timestamp = header(headers, TIMESTAMP_HEADER).ok_or(AuthError::Missing { header: "webhook-timestamp" })?;
    let signatures = header(headers, SIGNATURE_HEADER).ok_or(AuthError::Missing { header: "webhook-signature" })?;
    let at: u64 = timestamp
        .parse()
        .map_err(|_| AuthError::Malformed { header: "webhook-timestamp", reason: "expected Unix seconds" })?;
    let skew_secs = now_secs.abs_diff(at);
    if skew_secs > TOLERANCE_SECS {
        return Err(AuthError::Stale { header: "webhook-timestamp", skew_secs, tolerance_secs: TOLERANCE_SECS });
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    let mut well_formed = false;
    for entry in signatures.split(' ').filter(|e| !e.is_empty()) {
        // Other versions (`v1a,` for asymmetric keys) are not ours to check.
        let Some(encoded) = entry.strip_prefix("v1,") else { continue };
        let Ok(claimed) = STANDARD.decode(encoded) else { continue };
        well_formed = true;
        if mac.clone().verify_slice(&claimed).is_ok() {
            return Ok(());
        }
    }
    if well_formed {
        Err(AuthError::Mismatch { header: "webhook-signature" })
    } else {
        Err(AuthError::Malformed { header: "webhook-signature", reason: "no `v1,<base64>` entry" })
    }
}

/// `webhook-signature` for `body` as GitLab sends it (for tests and tools).
pub fn sign(signing_token: &str, id: &str, timestamp: u64, body: &[u8]) -> Result<String, SigningTokenError> {
    let key = signing_key(signing_token)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC accepts any key length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    Ok(format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes())))
}

/// The delivery's id ([`DELIVERY_HEADERS`]), checked.
pub fn delivery_id(headers: &http::HeaderMap) -> Result<&str, PayloadError> {
    let names = ["webhook-id", "Idempotency-Key", "X-Gitlab-Event-UUID"];
    let (name, id) = DELIVERY_HEADERS
        .iter()
        .zip(names)
        .find_map(|(h, name)| header(headers, h).map(|v| (name, v)))
        .ok_or(PayloadError::MissingHeader { header: "X-Gitlab-Event-UUID" })?;
    check_delivery_id(name, id)?;
    Ok(id)
}

/// Parses a verified delivery of `event` (`X-Gitlab-Event`).
pub fn parse(event: &str, delivery_id: &str, body: &[u8]) -> Result<Parsed, PayloadError> {
    let kind = match event {
        "Issue Hook" => issue(event, body)?,
        "Merge Request Hook" => merge_request(event, body)?,
        "Note Hook" => note(event, body)?,
        _ => return Ok(Parsed::Ignored(Ignored::UnsupportedEvent { event: cap(event, MAX_NAME_BYTES) })),
    };
    Ok(match kind {
        Ok(mut arrival) => {
            arrival.delivery_id = delivery_id.to_owned();
            Parsed::Arrival(Box::new(arrival))
        }
        Err(ignored) => Parsed::Ignored(ignored),
    })
}

type Outcome = Result<Result<Arrival, Ignored>, PayloadError>;

/// The fields every hook shares, and `kind`.
fn arrival(hook: &Payload<'_>, event: &str, number: u64, kind: ArrivalKind) -> Result<Arrival, PayloadError> {
    Ok(Arrival {
        forge: Forge::GitLab,
        delivery_id: String::new(),
        event: event.to_owned(),
        action: hook.str("/object_attributes/action").map(|a| cap(a, MAX_NAME_BYTES)).unwrap_or_default(),
        repository: hook.text("/project/path_with_namespace", MAX_NAME_BYTES)?,
        number,
        sender: hook.str("/user/username").map(|u| cap(u, MAX_NAME_BYTES)),
        head: None,
        labels: hook.names("/labels", "title"),
        kind,
    })
}

fn unsupported(event: &str, action: &str, detail: &str) -> Ignored {
    Ignored::UnsupportedAction {
        event: event.to_owned(),
        action: cap(action, MAX_NAME_BYTES),
        detail: detail.to_owned(),
    }
}

fn issue(event: &str, body: &[u8]) -> Outcome {
    let hook = Payload::parse(event, body)?;
    let iid = hook.number("/object_attributes/iid")?;
    let action = hook.str("/object_attributes/action").unwrap_or_default();
    let kind = match action {
        "open" => ArrivalKind::IssueOpened,
        "update" => {
            let previous = hook.names("/changes/labels/previous", "title");
            let added: Vec<String> = hook
                .names("/changes/labels/current", "title")
                .into_iter()
                .filter(|label| !previous.contains(label))
                .collect();
            if added.is_empty() {
                return Ok(Err(unsupported(event, action, ": no label was added")));
            }
            ArrivalKind::IssueLabelled { added }
        }
        _ => return Ok(Err(unsupported(event, action, ""))),
    };
    Ok(Ok(arrival(&hook, event, iid, kind)?))
}

fn merge_request(event: &str, body: &[u8]) -> Outcome {
    let hook = Payload::parse(event, body)?;
    let iid = hook.number("/object_attributes/iid")?;
    let action = hook.str("/object_attributes/action").unwrap_or_default();
    let kind = match (action, hook.str("/object_attributes/oldrev")) {
        ("open", _) => ArrivalKind::ChangeRequestOpened,
        ("update", Some(oldrev)) => ArrivalKind::ChangeRequestUpdated { previous_head: Some(cap(oldrev, 64)) },
        ("update", None) => return Ok(Err(unsupported(event, action, ": no new commits (no `oldrev`)"))),
        _ => return Ok(Err(unsupported(event, action, ""))),
    };
    let mut arrival = arrival(&hook, event, iid, kind)?;
    arrival.head = hook.str("/object_attributes/last_commit/id").map(|c| cap(c, 64));
    Ok(Ok(arrival))
}

fn note(event: &str, body: &[u8]) -> Outcome {
    let hook = Payload::parse(event, body)?;
    let on = hook.str("/object_attributes/noteable_type").unwrap_or_default();
    let kind = hook.str("/object_attributes/type").unwrap_or("Note");
    if on != "MergeRequest" || kind != "DiffNote" {
        let detail = format!(": a {kind} on a {on}; only merge request diff notes are read");
        return Ok(Err(unsupported(event, "comment", &detail)));
    }
    let iid = hook.number("/merge_request/iid")?;
    let kind = ArrivalKind::ReviewComment {
        state: None,
        path: hook.str("/object_attributes/position/new_path").map(|p| cap(p, MAX_NAME_BYTES)),
        line: hook.get("/object_attributes/position/new_line").and_then(serde_json::Value::as_u64),
        discussion: hook.str("/object_attributes/discussion_id").map(|d| cap(d, 64)),
        body_bytes: hook.str("/object_attributes/note").map_or(0, str::len),
    };
    let mut arrival = arrival(&hook, event, iid, kind)?;
    arrival.action = "comment".to_owned();
    arrival.head = hook
        .str("/object_attributes/position/head_sha")
        .or_else(|| hook.str("/merge_request/last_commit/id"))
        .map(|h| cap(h, 64));
    Ok(Ok(arrival))
}

#[cfg(test)]
#[path = "gitlab_tests.rs"]
mod tests;
