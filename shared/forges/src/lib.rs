//! Webhook intake for the forges beside GitHub: GitLab (gitlab.com and
//! self-managed) and Gitea/Forgejo. Each adapter verifies a delivery the
//! way its forge signs it, names its delivery id and event, and parses the
//! events the agent reads into one neutral [`Arrival`] (an issue opened or
//! labelled, a change request opened or updated, a review comment), or an
//! [`Ignored`] reason. GitHub's intake (`agent-zero-github`) has the same
//! three steps; the run path is GitHub's only for now (docs/forges.md).
//!
//! I/O boundary: none. Every function is of headers, bytes and, for
//! GitLab's signed timestamp, the time passed in; no clock, no network.

#![forbid(unsafe_code)]

mod arrival;
pub mod gitea;
pub mod gitlab;
pub mod publication;

pub use arrival::{
    Arrival, ArrivalKind, AuthError, Forge, Ignored, MAX_DELIVERY_ID_BYTES, MAX_LABELS, MAX_NAME_BYTES, Parsed,
    PayloadError, check_delivery_id,
};
