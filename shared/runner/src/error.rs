//! Errors of the pool and the runner handle.

use thiserror::Error;

use crate::coordinator::{CoordinatorError, QuotaError};
use crate::provider::ProviderError;

/// Why a pool or runner operation failed. No variant carries a credential.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// A pool limit refused the lease before anything was provisioned.
    #[error(transparent)]
    Quota(#[from] QuotaError),
    /// The coordination store failed.
    #[error(transparent)]
    Coordinator(#[from] CoordinatorError),
    /// The sandbox provider failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// A request field is malformed.
    #[error("invalid sandbox request `{field}`: {reason}")]
    InvalidRequest { field: &'static str, reason: String },
    /// The command is not a runnable argv.
    #[error("invalid command `{field}`: {reason}")]
    InvalidCommand { field: &'static str, reason: String },
    /// A path or working directory leaves the checkout.
    #[error("`{field}` `{path}` is not inside the checkout")]
    PathOutsideCheckout { field: &'static str, path: String },
    /// A write through a read-only (observe/suggest) lease.
    #[error("write to `{path}` refused: the lease is read-only")]
    ReadOnly { path: String },
    /// The file is over the read limit ([`MAX_READ_BYTES`](crate::MAX_READ_BYTES)).
    #[error("`{path}` is {size} bytes, over the {limit}-byte read limit")]
    FileTooLarge { path: String, size: u64, limit: u64 },
    /// The file is not UTF-8 text.
    #[error("`{0}` is not UTF-8 text")]
    NotUtf8(String),
    /// The lease has no sandbox yet (provisioning did not finish).
    #[error("lease `{0}` has no provisioned sandbox")]
    NotProvisioned(String),
    /// The checkout's source could not be resolved (the edge's GitHub
    /// access failed): nothing was provisioned.
    #[error("{0}")]
    Checkout(String),
    /// No such lease is held (released, swept, or never acquired).
    #[error("lease `{0}` is not held")]
    UnknownLease(String),
}
