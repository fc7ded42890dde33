//! The strongly consistent coordination port: quota bookkeeping for leases.
//!
//! Each method is ONE atomic operation on the coordinator's side, so a
//! Durable Object (single-threaded per id) or a Spin key-value transaction
//! implements it directly: the whole check-and-insert of `try_acquire` runs
//! inside the coordinator, never as read-then-write from the caller.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::request::{Lease, LeaseLimits};

/// Why a lease was refused before anything was provisioned. Each names the
/// limit it hit.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize)]
#[serde(tag = "code", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum QuotaError {
    /// The pool already holds `maxActive` leases.
    #[error("runner pool capacity is exhausted: {active} of maxActive {limit} leases are active")]
    MaxActive { active: u32, limit: u32 },
    /// The repository already holds `maxActivePerRepository` leases.
    #[error("repository `{repository}` runner quota is exhausted: {active} of maxActivePerRepository {limit}")]
    MaxActivePerRepository { repository: String, active: u32, limit: u32 },
    /// The requested lease is longer than `maxLeaseMs`.
    #[error("requested leaseMs {requested} exceeds maxLeaseMs {limit}")]
    LeaseTooLong { requested: u64, limit: u64 },
    /// A lease of zero milliseconds can do nothing.
    #[error("requested leaseMs must be positive")]
    EmptyLease,
}

/// The coordinator could not answer (binding missing, storage failure).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CoordinatorError {
    /// The backend failed; the message never contains a credential.
    #[error("lease coordinator unavailable: {0}")]
    Unavailable(String),
    /// `update` named a lease the coordinator does not hold (released or swept).
    #[error("lease `{0}` is not held")]
    UnknownLease(String),
}

/// The outcome of a successful `try_acquire`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Acquired {
    /// The lease as stored (an existing one when `replayed`).
    pub lease: Lease,
    /// Leases held after this call, pool-wide and for the repository.
    pub active: u32,
    pub active_for_repository: u32,
    /// The same lease id was already held: a redelivered tick, not a new lease.
    pub replayed: bool,
}

/// Strongly consistent lease bookkeeping.
pub trait Coordinator {
    /// Atomically: if `lease.id` is held, return it (`replayed`); else check
    /// every limit against the held leases (expired ones still count until
    /// swept) and insert `lease`, or refuse with the limit that was hit.
    async fn try_acquire(
        &self,
        lease: &Lease,
        limits: &LeaseLimits,
        now_ms: u64,
    ) -> Result<Result<Acquired, QuotaError>, CoordinatorError>;
    /// Replaces a held lease's record (provisioning filled in its sandbox).
    async fn update(&self, lease: &Lease) -> Result<(), CoordinatorError>;
    /// Removes a lease; releasing an unknown id is not an error. With
    /// `sandbox`, only a lease holding that sandbox (its `external_id`) is
    /// removed: a holder releasing from its own record never frees the
    /// quota of a newer sandbox under the same id. Returns the removed
    /// record, if any.
    async fn release(&self, lease_id: &str, sandbox: Option<&str>) -> Result<Option<Lease>, CoordinatorError>;
    /// Held leases past their ceiling at `now_ms`, for the sweep.
    async fn expired(&self, now_ms: u64) -> Result<Vec<Lease>, CoordinatorError>;
    /// One held lease.
    async fn get(&self, lease_id: &str) -> Result<Option<Lease>, CoordinatorError>;
}

/// The single source of truth for the quota decision, shared by every
/// coordinator implementation so hosts cannot drift apart.
pub fn apply_quota(held: &[Lease], lease: &Lease, limits: &LeaseLimits) -> Result<Acquired, QuotaError> {
    if let Some(existing) = held.iter().find(|l| l.id == lease.id) {
        let for_repo = held.iter().filter(|l| l.repository == existing.repository).count() as u32;
        return Ok(Acquired {
            lease: existing.clone(),
            active: held.len() as u32,
            active_for_repository: for_repo,
            replayed: true,
        });
    }
    if lease.lease_ms == 0 {
        return Err(QuotaError::EmptyLease);
    }
    if lease.lease_ms > limits.max_lease_ms {
        return Err(QuotaError::LeaseTooLong { requested: lease.lease_ms, limit: limits.max_lease_ms });
    }
    let active = held.len() as u32;
    if active >= limits.max_active {
        return Err(QuotaError::MaxActive { active, limit: limits.max_active });
    }
    let for_repo = held.iter().filter(|l| l.repository == lease.repository).count() as u32;
    if for_repo >= limits.max_active_per_repository {
        return Err(QuotaError::MaxActivePerRepository {
            repository: lease.repository.clone(),
            active: for_repo,
            limit: limits.max_active_per_repository,
        });
    }
    Ok(Acquired { lease: lease.clone(), active: active + 1, active_for_repository: for_repo + 1, replayed: false })
}

/// Whether `held` is what a release naming `sandbox` may remove: any lease
/// when `sandbox` is `None`, else only the one holding that sandbox.
pub(crate) fn holds_sandbox(held: &Lease, sandbox: Option<&str>) -> bool {
    sandbox.is_none_or(|sandbox| held.external_id.as_deref() == Some(sandbox))
}

/// A [`MemoryCoordinator`] that records each request by name, as the
/// `LeaseCoordinator` Durable Object bills them: for the benches and the
/// tests that hold a run to its count of coordinator requests.
#[derive(Debug, Default)]
pub struct CountingCoordinator {
    inner: MemoryCoordinator,
    calls: RefCell<Vec<&'static str>>,
}

impl CountingCoordinator {
    /// An empty coordinator with no request counted.
    pub fn new() -> Self {
        Self::default()
    }

    /// The coordinator it counts in front of.
    pub fn inner(&self) -> &MemoryCoordinator {
        &self.inner
    }

    /// How many requests were made since the last [`Self::take`].
    pub fn count(&self) -> usize {
        self.calls.borrow().len()
    }

    /// The requests made since the last call, by name, in order.
    pub fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.calls.borrow_mut())
    }

    fn record(&self, name: &'static str) {
        self.calls.borrow_mut().push(name);
    }
}

impl Coordinator for CountingCoordinator {
    async fn try_acquire(
        &self,
        lease: &Lease,
        limits: &LeaseLimits,
        now_ms: u64,
    ) -> Result<Result<Acquired, QuotaError>, CoordinatorError> {
        self.record("try_acquire");
        self.inner.try_acquire(lease, limits, now_ms).await
    }
    async fn update(&self, lease: &Lease) -> Result<(), CoordinatorError> {
        self.record("update");
        self.inner.update(lease).await
    }
    async fn release(&self, lease_id: &str, sandbox: Option<&str>) -> Result<Option<Lease>, CoordinatorError> {
        self.record("release");
        self.inner.release(lease_id, sandbox).await
    }
    async fn expired(&self, now_ms: u64) -> Result<Vec<Lease>, CoordinatorError> {
        self.record("expired");
        self.inner.expired(now_ms).await
    }
    async fn get(&self, lease_id: &str) -> Result<Option<Lease>, CoordinatorError> {
        self.record("get");
        self.inner.get(lease_id).await
    }
}

/// An in-memory coordinator: each call completes without suspending, so it
/// is atomic on a single-threaded host and in tests.
#[derive(Debug, Default)]
pub struct MemoryCoordinator {
    leases: RefCell<BTreeMap<String, Lease>>,
}

impl MemoryCoordinator {
    /// An empty coordinator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every held lease, for assertions.
    pub fn snapshot(&self) -> Vec<Lease> {
        self.leases.borrow().values().cloned().collect()
    }
}

impl Coordinator for MemoryCoordinator {
    async fn try_acquire(
        &self,
        lease: &Lease,
        limits: &LeaseLimits,
        _now_ms: u64,
    ) -> Result<Result<Acquired, QuotaError>, CoordinatorError> {
        let mut leases = self.leases.borrow_mut();
        let held: Vec<Lease> = leases.values().cloned().collect();
        let decision = apply_quota(&held, lease, limits);
        if let Ok(acquired) = &decision
            && !acquired.replayed
        {
            leases.insert(lease.id.clone(), lease.clone());
        }
        Ok(decision)
    }

    async fn update(&self, lease: &Lease) -> Result<(), CoordinatorError> {
        let mut leases = self.leases.borrow_mut();
        match leases.get_mut(&lease.id) {
            Some(slot) => {
                *slot = lease.clone();
                Ok(())
            }
            None => Err(CoordinatorError::UnknownLease(lease.id.clone())),
        }
    }

    async fn release(&self, lease_id: &str, sandbox: Option<&str>) -> Result<Option<Lease>, CoordinatorError> {
        let mut leases = self.leases.borrow_mut();
        if !leases.get(lease_id).is_some_and(|held| holds_sandbox(held, sandbox)) {
            return Ok(None);
        }
        Ok(leases.remove(lease_id))
    }

    async fn expired(&self, now_ms: u64) -> Result<Vec<Lease>, CoordinatorError> {
        Ok(self.leases.borrow().values().filter(|l| l.is_expired(now_ms)).cloned().collect())
    }

    async fn get(&self, lease_id: &str) -> Result<Option<Lease>, CoordinatorError> {
        Ok(self.leases.borrow().get(lease_id).cloned())
    }
}
