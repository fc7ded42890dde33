//! Gitea and Forgejo webhooks: one scheme, two spellings.
//!
//! - The signature: `X-Gitea-Signature` / `X-Forgejo-Signature`, the hex
//!   HMAC-SHA256 of the body under the hook's secret (no prefix, no
//!   timestamp: a delivery is told from a replay by its id alone). Every
//!   one present must match; `hmac`'s `verify_slice` compares in constant
//!   time.
//! - The event: dispatched on `X-Gitea-Event-Type` / `X-Forgejo-Event-Type`,
//!   never on `X-Gitea-Event`: for reviews Gitea sends
//!   `pull_request_approved|_rejected|_comment` there, and the
//!   `pull_request_review_*` spelling only in the `-Type` header. A review
//!   payload carries `review.type` and `review.content` and no review id.
//! - A delivery carrying any `X-Forgejo-*` header is Forgejo's.
//!
//! Events read: `issues` (opened), `issue_label` (label_updated; the
//! payload holds the issue's labels, not which was added),
//! `pull_request` (opened), `pull_request_sync` (synchronized),
//! `pull_request_review_comment` and `pull_request_review_rejected`
//! (reviewed); an approval carries no claim and is ignored.

pub mod api;
mod commit;
pub mod diff;
pub mod publish;
mod review;
mod side_branch;
mod thread;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::arrival::{
    Arrival, ArrivalKind, AuthError, Forge, Ignored, MAX_NAME_BYTES, Parsed, Payload, PayloadError, cap,
    check_delivery_id, header,
};

/// Signature headers, Forgejo's first (it sends both).
pub const SIGNATURE_HEADERS: [(&str, &str); 2] =
    [("x-forgejo-signature", "X-Forgejo-Signature"), ("x-gitea-signature", "X-Gitea-Signature")];
/// Event type headers.
pub const EVENT_TYPE_HEADERS: [(&str, &str); 2] =
    [("x-forgejo-event-type", "X-Forgejo-Event-Type"), ("x-gitea-event-type", "X-Gitea-Event-Type")];
/// Delivery id headers.
pub const DELIVERY_HEADERS: [(&str, &str); 2] =
    [("x-forgejo-delivery", "X-Forgejo-Delivery"), ("x-gitea-delivery", "X-Gitea-Delivery")];

/// Which of the two sent the delivery.
pub fn forge_of(headers: &http::HeaderMap) -> Forge {
    if headers.keys().any(|name| name.as_str().starts_with("x-forgejo-")) { Forge::Forgejo } else { Forge::Gitea }
}

/// Checks the delivery's signature headers against `body` under `secret`.
pub fn verify(secret: &[u8], headers: &http::HeaderMap, body: &[u8]) -> Result<(), AuthError> {
    let mut checked = false;
    for (name, shown) in SIGNATURE_HEADERS {
        let Some(value) = header(headers, name) else { continue };
        let mut claimed = [0u8; 32];
        hex::decode_to_slice(value, &mut claimed)
            .map_err(|_| AuthError::Malformed { header: shown, reason: "expected 64 hex digits" })?;
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts any key length");
        mac.update(body);
        mac.verify_slice(&claimed).map_err(|_| AuthError::Mismatch { header: shown })?;
        checked = true;
    }
    if checked { Ok(()) } else { Err(AuthError::Missing { header: "X-Gitea-Signature" }) }
}

/// The signature header's value for `body`, as Gitea sends it (for tests).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts any key length");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

fn first<'h>(
    headers: &'h http::HeaderMap,
    names: [(&str, &'static str); 2],
) -> Result<(&'static str, &'h str), PayloadError> {
    names
        .iter()
        .find_map(|(name, shown)| header(headers, name).map(|v| (*shown, v)))
        .ok_or(PayloadError::MissingHeader { header: names[1].1 })
}

/// The event type (`X-Forgejo-Event-Type`, else `X-Gitea-Event-Type`).
pub fn event_type(headers: &http::HeaderMap) -> Result<&str, PayloadError> {
    first(headers, EVENT_TYPE_HEADERS).map(|(_, v)| v)
}

/// The delivery's id, checked.
pub fn delivery_id(headers: &http::HeaderMap) -> Result<&str, PayloadError> {
    let (shown, id) = first(headers, DELIVERY_HEADERS)?;
    check_delivery_id(shown, id)?;
    Ok(id)
}

/// Parses a verified delivery of `event_type` from `forge`.
pub fn parse(forge: Forge, event_type: &str, delivery_id: &str, body: &[u8]) -> Result<Parsed, PayloadError> {
    let event = event_type;
    let wants = match event {
        "issues" | "issue_label" => Wants::Issue,
        "pull_request" | "pull_request_sync" => Wants::PullRequest,
        "pull_request_review_comment" | "pull_request_review_rejected" | "pull_request_review_approved" => {
            Wants::Review
        }
        _ => return Ok(Parsed::Ignored(Ignored::UnsupportedEvent { event: cap(event, MAX_NAME_BYTES) })),
    };
    let hook = Payload::parse(event, body)?;
    let action = hook.text("/action", MAX_NAME_BYTES)?;
    let unsupported = || {
        Parsed::Ignored(Ignored::UnsupportedAction {
            event: event.to_owned(),
            action: action.clone(),
            detail: String::new(),
        })
    };
    // A pull request's number is also at the top, which some captured
    // payloads keep alone.
    let pull_number = || hook.number("/number").or_else(|_| hook.number("/pull_request/number"));
    let (number, head, labels, kind) = match wants {
        Wants::Issue => {
            let kind = match (event, action.as_str()) {
                ("issues", "opened") => ArrivalKind::IssueOpened,
                ("issue_label", "label_updated") => ArrivalKind::IssueLabelled { added: Vec::new() },
                _ => return Ok(unsupported()),
            };
            (hook.number("/issue/number")?, None, hook.names("/issue/labels", "name"), kind)
        }
        Wants::PullRequest => {
            let kind = match action.as_str() {
                "opened" => ArrivalKind::ChangeRequestOpened,
                "synchronized" => ArrivalKind::ChangeRequestUpdated { previous_head: None },
                _ => return Ok(unsupported()),
            };
            let head = hook.text("/pull_request/head/sha", 64)?;
            (pull_number()?, Some(head), hook.names("/pull_request/labels", "name"), kind)
        }
        Wants::Review => {
            if action != "reviewed" {
                return Ok(unsupported());
            }
            let kind = hook.text("/review/type", MAX_NAME_BYTES)?;
            let state = kind.strip_prefix("pull_request_review_").unwrap_or(&kind);
            if state == "approved" {
                return Ok(Parsed::Ignored(Ignored::ReviewCarriesNoClaim { state: "approved".into() }));
            }
            let kind = ArrivalKind::ReviewComment {
                state: Some(state.to_owned()),
                path: None,
                line: None,
                discussion: None,
                body_bytes: hook.str("/review/content").map_or(0, str::len),
            };
            let head = hook.text("/pull_request/head/sha", 64)?;
            (pull_number()?, Some(head), hook.names("/pull_request/labels", "name"), kind)
        }
    };
    Ok(Parsed::Arrival(Box::new(Arrival {
        forge,
        delivery_id: delivery_id.to_owned(),
        event: event.to_owned(),
        action,
        repository: hook.text("/repository/full_name", MAX_NAME_BYTES)?,
        number,
        sender: hook.str("/sender/login").map(|u| cap(u, MAX_NAME_BYTES)),
        head,
        labels,
        kind,
    })))
}

enum Wants {
    Issue,
    PullRequest,
    Review,
}

#[cfg(test)]
#[path = "gitea_tests.rs"]
mod tests;
