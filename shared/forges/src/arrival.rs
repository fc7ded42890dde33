//! What every forge adapter's webhook intake produces: a neutral
//! [`Arrival`] (an issue opened or labelled, a change request opened or
//! updated, a review comment), or a delivery ignored with its reason, and
//! the errors each step can refuse with. The vocabulary is the forge's
//! neutral one: a repository path, a change request number, a commit id.

/// The forges this crate reads deliveries from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Forge {
    /// gitlab.com or a self-managed GitLab.
    GitLab,
    /// Gitea.
    Gitea,
    /// Forgejo (a Gitea fork; it sends Gitea's headers too).
    Forgejo,
}

impl Forge {
    /// The forge's name as answers and records spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::GitLab => "gitlab",
            Self::Gitea => "gitea",
            Self::Forgejo => "forgejo",
        }
    }
}

/// A delivery id may be this long at most.
pub const MAX_DELIVERY_ID_BYTES: usize = 64;
/// Names taken from a payload (paths, logins, labels, refs) are cut at this
/// many bytes.
pub const MAX_NAME_BYTES: usize = 255;
/// Labels kept from one issue or change request.
pub const MAX_LABELS: usize = 50;

/// What a verified, well-formed delivery of a supported event is about.
/// References only: titles, descriptions and comment text are untrusted and
/// are not carried (the run path reads them again from the forge's API).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Arrival {
    pub forge: Forge,
    /// The forge's delivery id, the de-duplication key.
    pub delivery_id: String,
    /// The event as the forge named it (`Merge Request Hook`, `issues`, ...).
    pub event: String,
    /// The payload's action (`open`, `update`, `opened`, `reviewed`, ...).
    pub action: String,
    /// The repository's path on the forge (`group/subgroup/project`, `owner/repo`).
    pub repository: String,
    /// The issue's or change request's number in its repository (GitLab's
    /// `iid`, Gitea's `number`).
    pub number: u64,
    /// Who caused the delivery, by the forge's login.
    pub sender: Option<String>,
    /// The change request's head commit, when the payload names one.
    pub head: Option<String>,
    /// The labels the issue or change request carries (capped).
    pub labels: Vec<String>,
    pub kind: ArrivalKind,
}

impl Arrival {
    /// The arrival as answers and records show it: camelCase fields, the
    /// kind's name as `arrival` and its own fields beside the rest, absent
    /// values left out. Written out rather than derived: a derived
    /// `Serialize` costs wasm for what one function says.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        let mut out = serde_json::Map::new();
        let mut put = |key: &str, value: Value| {
            if !value.is_null() {
                out.insert(key.to_owned(), value);
            }
        };
        let text = |s: &Option<String>| s.as_ref().map_or(Value::Null, |s| Value::from(s.as_str()));
        put("forge", self.forge.as_str().into());
        put("deliveryId", self.delivery_id.as_str().into());
        put("event", self.event.as_str().into());
        put("action", self.action.as_str().into());
        put("repository", self.repository.as_str().into());
        put("number", self.number.into());
        put("sender", text(&self.sender));
        put("head", text(&self.head));
        if !self.labels.is_empty() {
            put("labels", self.labels.clone().into());
        }
        put("arrival", self.kind.name().into());
        match &self.kind {
            ArrivalKind::IssueOpened | ArrivalKind::ChangeRequestOpened => {}
            ArrivalKind::IssueLabelled { added } => {
                if !added.is_empty() {
                    put("added", added.clone().into());
                }
            }
            ArrivalKind::ChangeRequestUpdated { previous_head } => put("previousHead", text(previous_head)),
            ArrivalKind::ReviewComment { state, path, line, discussion, body_bytes } => {
                put("state", text(state));
                put("path", text(path));
                put("line", line.map_or(Value::Null, Value::from));
                put("discussion", text(discussion));
                put("bodyBytes", (*body_bytes).into());
            }
        }
        Value::Object(out)
    }
}

/// The kind of arrival, with what only that kind carries.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArrivalKind {
    /// An issue was opened.
    IssueOpened,
    /// An issue's labels changed.
    IssueLabelled {
        /// The labels just added, when the forge says which (GitLab's
        /// `changes.labels`; Gitea's `label_updated` names none).
        added: Vec<String>,
    },
    /// A change request (merge request, pull request) was opened.
    ChangeRequestOpened,
    /// New commits were pushed to a change request.
    ChangeRequestUpdated {
        /// The head before the push (GitLab's `oldrev`).
        previous_head: Option<String>,
    },
    /// A review comment on a change request: a merge request diff note, a
    /// Gitea/Forgejo review.
    ReviewComment {
        /// The review's verdict where the forge has one (`comment`,
        /// `rejected`).
        state: Option<String>,
        /// The file the comment is anchored to (GitLab's `position.new_path`).
        path: Option<String>,
        /// The line in the new file it is anchored to.
        line: Option<u64>,
        /// GitLab's discussion (thread) id.
        discussion: Option<String>,
        /// The comment's or review's length in bytes (its text is not kept).
        body_bytes: usize,
    },
}

impl ArrivalKind {
    /// The kind's stable kebab-case name.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::IssueOpened => "issue-opened",
            Self::IssueLabelled { .. } => "issue-labelled",
            Self::ChangeRequestOpened => "change-request-opened",
            Self::ChangeRequestUpdated { .. } => "change-request-updated",
            Self::ReviewComment { .. } => "review-comment",
        }
    }
}

/// A verified delivery this intake does not act on, and why. Answered 202
/// without storing anything, as GitHub's route answers the same.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Ignored {
    /// An event this intake does not read.
    #[error("event `{event}` is not handled")]
    UnsupportedEvent { event: String },
    /// A handled event whose action carries no work.
    #[error("`{event}` action `{action}` is not handled{detail}")]
    UnsupportedAction {
        event: String,
        action: String,
        /// Why, when the action alone does not say (`: no label was added`).
        detail: String,
    },
    /// An approval carries no claim to validate.
    #[error("a `{state}` review carries no claim to validate")]
    ReviewCarriesNoClaim { state: String },
}

impl Ignored {
    /// The stable kebab-case code of this reason.
    pub const fn code(&self) -> &'static str {
        match self {
            Self::UnsupportedEvent { .. } => "unsupported-event",
            Self::UnsupportedAction { .. } => "unsupported-action",
            Self::ReviewCarriesNoClaim { .. } => "review-carries-no-claim",
        }
    }
}

/// What a verified delivery parsed to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Parsed {
    /// Work for the engine (not yet run: see docs/forges.md).
    Arrival(Box<Arrival>),
    /// Nothing to do, with the reason.
    Ignored(Ignored),
}

/// Why a delivery was refused before its body was read: every variant
/// answers 401 and names the header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A header the configured secret needs is missing or empty.
    #[error("missing {header} header")]
    Missing { header: &'static str },
    /// The header does not have the form the scheme defines.
    #[error("malformed {header} header: {reason}")]
    Malformed { header: &'static str, reason: &'static str },
    /// A shared token that is not the configured one.
    #[error("{header} is not the configured token")]
    WrongToken { header: &'static str },
    /// A well-formed signature that is not this body's under the secret.
    #[error("{header} does not match the body")]
    Mismatch { header: &'static str },
    /// A signed timestamp outside the tolerance around now.
    #[error("{header} is {skew_secs} s from now; at most {tolerance_secs} s is accepted")]
    Stale { header: &'static str, skew_secs: u64, tolerance_secs: u64 },
}

impl AuthError {
    /// The header that was wrong.
    pub const fn header(&self) -> &'static str {
        match self {
            Self::Missing { header }
            | Self::Malformed { header, .. }
            | Self::WrongToken { header }
            | Self::Mismatch { header }
            | Self::Stale { header, .. } => header,
        }
    }
}

/// Why a verified delivery's headers or body cannot be read: 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// A header the forge always sends is missing.
    #[error("missing {header} header")]
    MissingHeader { header: &'static str },
    /// The delivery id cannot key a record.
    #[error("invalid {header} `{id}`: {reason}")]
    InvalidDeliveryId { header: &'static str, id: String, reason: &'static str },
    /// The body is not JSON of the event's shape.
    #[error("invalid {event} payload: {message}")]
    Invalid { event: String, message: String },
}

/// Checks a delivery id before it keys anything: letters, digits, `-` and
/// `_`, at most [`MAX_DELIVERY_ID_BYTES`] bytes (UUIDs and Standard
/// Webhooks' `msg_...` ids fit).
pub fn check_delivery_id(header: &'static str, id: &str) -> Result<(), PayloadError> {
    let reason = if id.is_empty() {
        "empty"
    } else if id.len() > MAX_DELIVERY_ID_BYTES {
        "longer than 64 bytes"
    } else if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        "only letters, digits, `-` and `_` are allowed"
    } else {
        return Ok(());
    };
    Err(PayloadError::InvalidDeliveryId { header, id: cap(id, MAX_DELIVERY_ID_BYTES), reason })
}

/// `text` cut to at most `max` bytes at a character boundary.
pub(crate) fn cap(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// The value of header `name`, when present, UTF-8 and not blank.
pub(crate) fn header<'h>(headers: &'h http::HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty())
}

/// A payload read as a JSON tree: the fields intake needs are picked by
/// path, so no payload type is compiled (each derived `Deserialize` costs
/// wasm; the tree parser is in every artefact already).
pub(crate) struct Payload<'e> {
    event: &'e str,
    root: serde_json::Value,
}

impl<'e> Payload<'e> {
    /// Parses `body`; the error names the event.
    pub(crate) fn parse(event: &'e str, body: &[u8]) -> Result<Self, PayloadError> {
        let root: serde_json::Value = serde_json::from_slice(body)
            .map_err(|e| PayloadError::Invalid { event: event.to_owned(), message: e.to_string() })?;
        if !root.is_object() {
            return Err(PayloadError::Invalid { event: event.to_owned(), message: "expected a JSON object".into() });
        }
        Ok(Self { event, root })
    }

    /// The value at `pointer` (`/a/b`), when present and not null.
    pub(crate) fn get(&self, pointer: &str) -> Option<&serde_json::Value> {
        self.root.pointer(pointer).filter(|v| !v.is_null())
    }

    /// The string at `pointer`, when it is one.
    pub(crate) fn str(&self, pointer: &str) -> Option<&str> {
        self.get(pointer).and_then(serde_json::Value::as_str)
    }

    /// The string at `pointer`, cut to `max` bytes; an error naming the
    /// field when it is missing or not a string.
    pub(crate) fn text(&self, pointer: &str, max: usize) -> Result<String, PayloadError> {
        self.str(pointer).map(|s| cap(s, max)).ok_or_else(|| self.missing(pointer, "a string"))
    }

    /// The whole number at `pointer`; an error naming the field otherwise.
    pub(crate) fn number(&self, pointer: &str) -> Result<u64, PayloadError> {
        self.get(pointer).and_then(serde_json::Value::as_u64).ok_or_else(|| self.missing(pointer, "a whole number"))
    }

    /// The `key` of each object in the array at `pointer`, capped.
    pub(crate) fn names(&self, pointer: &str, key: &str) -> Vec<String> {
        self.get(pointer)
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|item| item.get(key)?.as_str())
            .take(MAX_LABELS)
            .map(|name| cap(name, MAX_NAME_BYTES))
            .collect()
    }

    fn missing(&self, pointer: &str, what: &str) -> PayloadError {
        let field = pointer.trim_start_matches('/').replace('/', ".");
        PayloadError::Invalid { event: self.event.to_owned(), message: format!("`{field}` must be {what}") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_ids_are_checked_before_they_key_anything() {
        assert!(check_delivery_id("X", "8c1e7f3a-0a4b-4f8e-9c55-2f8e4a1b6d10").is_ok());
        assert!(check_delivery_id("X", "msg_2Lx3Kd9f").is_ok());
        for (id, reason) in [("", "empty"), ("a/b", "only letters"), (&"a".repeat(65), "longer")] {
            let e = check_delivery_id("X-Gitea-Delivery", id).unwrap_err();
            assert!(e.to_string().contains(reason) && e.to_string().contains("X-Gitea-Delivery"), "{e}");
        }
    }

    #[test]
    fn an_arrival_serialises_flat_with_its_kind() {
        let arrival = Arrival {
            forge: Forge::GitLab,
            delivery_id: "d-1".into(),
            event: "Merge Request Hook".into(),
            action: "update".into(),
            repository: "group/project".into(),
            number: 3,
            sender: None,
            head: Some("c136499e".into()),
            labels: vec![],
            kind: ArrivalKind::ChangeRequestUpdated { previous_head: Some("8b641937".into()) },
        };
        let json = arrival.to_json();
        assert_eq!(json["arrival"], "change-request-updated");
        assert_eq!(json["previousHead"], "8b641937");
        assert_eq!(json["forge"], "gitlab");
        assert_eq!(cap("héllo", 2), "h");
    }
}
