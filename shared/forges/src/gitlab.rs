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

use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::arrival::{
    Arrival, ArrivalKind, AuthError, Forge, Ignored, MAX_LABELS, MAX_NAME_BYTES, Parsed, PayloadError, cap,
    check_delivery_id, header, parse_json,
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
    let key = agent_zero_contracts::base64::decode(encoded).map_err(|_| SigningTokenError::Malformed("not base64"))?;
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
        let Ok(claimed) = agent_zero_contracts::base64::decode(encoded) else { continue };
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
    Ok(format!("v1,{}", agent_zero_contracts::base64::encode(mac.finalize().into_bytes())))
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

#[derive(Deserialize)]
struct Project {
    path_with_namespace: String,
}

#[derive(Deserialize)]
struct User {
    username: String,
}

#[derive(Deserialize)]
struct Label {
    title: String,
}

#[derive(Deserialize)]
struct Commit {
    id: String,
}

#[derive(Deserialize)]
struct Attributes {
    #[serde(default)]
    iid: Option<u64>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    oldrev: Option<String>,
    #[serde(default)]
    last_commit: Option<Commit>,
    // Note Hook
    #[serde(default)]
    noteable_type: Option<String>,
    #[serde(default, rename = "type")]
    note_type: Option<String>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    discussion_id: Option<String>,
    #[serde(default)]
    position: Option<Position>,
}

#[derive(Deserialize)]
struct Position {
    #[serde(default)]
    new_path: Option<String>,
    #[serde(default)]
    new_line: Option<u64>,
    #[serde(default)]
    head_sha: Option<String>,
}

#[derive(Deserialize, Default)]
struct LabelChange {
    #[serde(default)]
    previous: Vec<Label>,
    #[serde(default)]
    current: Vec<Label>,
}

#[derive(Deserialize, Default)]
struct Changes {
    #[serde(default)]
    labels: Option<LabelChange>,
}

#[derive(Deserialize)]
struct MergeRequestRef {
    iid: u64,
    #[serde(default)]
    last_commit: Option<Commit>,
}

#[derive(Deserialize)]
struct Hook {
    project: Project,
    #[serde(default)]
    user: Option<User>,
    object_attributes: Attributes,
    #[serde(default)]
    labels: Vec<Label>,
    #[serde(default)]
    changes: Option<Changes>,
    #[serde(default)]
    merge_request: Option<MergeRequestRef>,
}

type Outcome = Result<Result<Arrival, Ignored>, PayloadError>;

fn arrival(event: &str, hook: &Hook, number: u64, kind: ArrivalKind) -> Arrival {
    Arrival {
        forge: Forge::GitLab,
        delivery_id: String::new(),
        event: event.to_owned(),
        action: hook.object_attributes.action.clone().unwrap_or_default(),
        repository: cap(&hook.project.path_with_namespace, MAX_NAME_BYTES),
        number,
        sender: hook.user.as_ref().map(|u| cap(&u.username, MAX_NAME_BYTES)),
        head: None,
        labels: hook.labels.iter().take(MAX_LABELS).map(|l| cap(&l.title, MAX_NAME_BYTES)).collect(),
        kind,
    }
}

fn unsupported(event: &str, action: &str, detail: &str) -> Ignored {
    Ignored::UnsupportedAction {
        event: event.to_owned(),
        action: cap(action, MAX_NAME_BYTES),
        detail: detail.to_owned(),
    }
}

fn number(event: &str, value: Option<u64>, field: &str) -> Result<u64, PayloadError> {
    value.ok_or_else(|| PayloadError::Invalid { event: event.to_owned(), message: format!("missing field `{field}`") })
}

fn issue(event: &str, body: &[u8]) -> Outcome {
    let hook: Hook = parse_json(event, body)?;
    let iid = number(event, hook.object_attributes.iid, "object_attributes.iid")?;
    let action = hook.object_attributes.action.as_deref().unwrap_or_default();
    let kind = match action {
        "open" => ArrivalKind::IssueOpened,
        "update" => {
            let change = hook.changes.as_ref().and_then(|c| c.labels.as_ref());
            let added: Vec<String> = change
                .map(|c| {
                    c.current
                        .iter()
                        .filter(|l| !c.previous.iter().any(|p| p.title == l.title))
                        .take(MAX_LABELS)
                        .map(|l| cap(&l.title, MAX_NAME_BYTES))
                        .collect()
                })
                .unwrap_or_default();
            if added.is_empty() {
                return Ok(Err(unsupported(event, action, ": no label was added")));
            }
            ArrivalKind::IssueLabelled { added }
        }
        _ => return Ok(Err(unsupported(event, action, ""))),
    };
    Ok(Ok(arrival(event, &hook, iid, kind)))
}

fn merge_request(event: &str, body: &[u8]) -> Outcome {
    let hook: Hook = parse_json(event, body)?;
    let attributes = &hook.object_attributes;
    let iid = number(event, attributes.iid, "object_attributes.iid")?;
    let action = attributes.action.as_deref().unwrap_or_default();
    let kind = match (action, &attributes.oldrev) {
        ("open", _) => ArrivalKind::ChangeRequestOpened,
        ("update", Some(oldrev)) => ArrivalKind::ChangeRequestUpdated { previous_head: Some(cap(oldrev, 64)) },
        ("update", None) => return Ok(Err(unsupported(event, action, ": no new commits (no `oldrev`)"))),
        _ => return Ok(Err(unsupported(event, action, ""))),
    };
    let mut arrival = arrival(event, &hook, iid, kind);
    arrival.head = attributes.last_commit.as_ref().map(|c| cap(&c.id, 64));
    Ok(Ok(arrival))
}

fn note(event: &str, body: &[u8]) -> Outcome {
    let hook: Hook = parse_json(event, body)?;
    let attributes = &hook.object_attributes;
    let on = attributes.noteable_type.as_deref().unwrap_or_default();
    let kind = attributes.note_type.as_deref().unwrap_or("Note");
    if on != "MergeRequest" || kind != "DiffNote" {
        let detail = format!(": a {kind} on a {on}; only merge request diff notes are read");
        return Ok(Err(unsupported(event, "comment", &detail)));
    }
    let merge_request = hook.merge_request.as_ref();
    let iid = number(event, merge_request.map(|m| m.iid), "merge_request.iid")?;
    let position = attributes.position.as_ref();
    let kind = ArrivalKind::ReviewComment {
        state: None,
        path: position.and_then(|p| p.new_path.as_deref()).map(|p| cap(p, MAX_NAME_BYTES)),
        line: position.and_then(|p| p.new_line),
        discussion: attributes.discussion_id.as_deref().map(|d| cap(d, 64)),
        body_bytes: attributes.note.as_deref().map_or(0, str::len),
    };
    let mut arrival = arrival(event, &hook, iid, kind);
    arrival.action = "comment".to_owned();
    arrival.head = position
        .and_then(|p| p.head_sha.as_deref())
        .or_else(|| merge_request.and_then(|m| m.last_commit.as_ref()).map(|c| c.id.as_str()))
        .map(|h| cap(h, 64));
    Ok(Ok(arrival))
}

#[cfg(test)]
#[path = "gitlab_tests.rs"]
mod tests;
