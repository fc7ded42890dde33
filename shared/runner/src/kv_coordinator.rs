//! Coordinators for hosts: [`KvCoordinator`] keeps every held lease under
//! one key of a key-value store (a Durable Object's storage on Cloudflare,
//! Spin's `default` store on Spin), and [`RemoteCoordinator`] forwards each
//! operation, as one message, to such a store's single writer (the Durable
//! Object) through [`CoordinatorTransport`].
//!
//! Each change is a compare-and-swap loop on that one key: read the ledger,
//! apply the quota rule ([`apply_quota`]) or the change to it, and write it back
//! with [`KeyValue::compare_and_swap`] expecting exactly the bytes read. A
//! concurrent writer in between (another Spin instance: Spin runs
//! concurrent requests as concurrent instances over one store) makes the
//! swap fail, and the change is decided again from a fresh read, so no
//! lease is lost and no quota is exceeded. The atomicity is the store's
//! (`wasi:keyvalue/atomics` on Spin, the Durable Object's storage on
//! Cloudflare), never the caller's.

use agent_zero_ports::KeyValue;
use serde::Serialize;

use crate::coordinator::{Acquired, Coordinator, CoordinatorError, QuotaError, apply_quota, holds_sandbox};
use crate::request::{Lease, LeaseLimits};

/// The key holding the JSON array of held leases.
pub const LEASES_KEY: &str = "leases/held";

/// Most compare-and-swap attempts of one ledger change: each failed attempt
/// means another writer's change succeeded, so only sustained contention
/// (more than this many changes landing inside one change's read-to-write
/// window) exhausts it, and that is answered as unavailable.
const MAX_LEDGER_ATTEMPTS: usize = 32;

/// Lease bookkeeping in one key of a key-value store with compare-and-swap.
#[derive(Debug)]
pub struct KvCoordinator<K> {
    kv: K,
}

/// What one attempt of a ledger change decided.
enum Change<T> {
    /// Write the changed ledger, then answer `T`.
    Write(T),
    /// Nothing changed: answer `T` without writing.
    Keep(T),
}

fn unavailable(e: impl std::fmt::Display) -> CoordinatorError {
    CoordinatorError::Unavailable(e.to_string())
}

impl<K: KeyValue> KvCoordinator<K> {
    /// Bookkeeping in `kv`.
    pub fn new(kv: K) -> Self {
        Self { kv }
    }

    /// The ledger's stored bytes (the compare-and-swap's expected value) and
    /// the leases they hold.
    async fn read(&self) -> Result<(Option<Vec<u8>>, Vec<Lease>), CoordinatorError> {
        let raw = self.kv.get(LEASES_KEY).await.map_err(unavailable)?;
        let held = match &raw {
            Some(bytes) => {
                agent_zero_codecs::json::from_slice(bytes).map_err(|e| unavailable(format!("lease record: {e}")))?
            }
            None => Vec::new(),
        };
        Ok((raw, held))
    }

    async fn held(&self) -> Result<Vec<Lease>, CoordinatorError> {
        Ok(self.read().await?.1)
    }

    /// Applies `change` to the ledger as one compare-and-swap, deciding it
    /// again from a fresh read each time another writer got in first, at
    /// most [`MAX_LEDGER_ATTEMPTS`] times.
    async fn change<T>(
        &self,
        what: &str,
        mut change: impl FnMut(&mut Vec<Lease>) -> Result<Change<T>, CoordinatorError>,
    ) -> Result<T, CoordinatorError> {
        for _ in 0..MAX_LEDGER_ATTEMPTS {
            let (raw, mut held) = self.read().await?;
            let answer = match change(&mut held)? {
                Change::Keep(answer) => return Ok(answer),
                Change::Write(answer) => answer,
            };
            let bytes = serde_json::to_vec(&held).map_err(unavailable)?;
            if self.kv.compare_and_swap(LEASES_KEY, raw.as_deref(), &bytes).await.map_err(unavailable)? {
                return Ok(answer);
            }
        }
        Err(CoordinatorError::Unavailable(format!(
            "{what}: `{LEASES_KEY}` was changed by other writers during each of {MAX_LEDGER_ATTEMPTS} attempts"
        )))
    }
}

impl<K: KeyValue> Coordinator for KvCoordinator<K> {
    async fn try_acquire(
        &self,
        lease: &Lease,
        limits: &LeaseLimits,
        _now_ms: u64,
    ) -> Result<Result<Acquired, QuotaError>, CoordinatorError> {
        self.change("acquiring a lease", |held| {
            let decision = apply_quota(held, lease, limits);
            Ok(match &decision {
                Ok(acquired) if !acquired.replayed => {
                    held.push(lease.clone());
                    Change::Write(decision)
                }
                _ => Change::Keep(decision),
            })
        })
        .await
    }

    async fn update(&self, lease: &Lease) -> Result<(), CoordinatorError> {
        self.change("updating a lease", |held| {
            let slot = held
                .iter_mut()
                .find(|l| l.id == lease.id)
                .ok_or_else(|| CoordinatorError::UnknownLease(lease.id.clone()))?;
            *slot = lease.clone();
            Ok(Change::Write(()))
        })
        .await
    }

    async fn release(&self, lease_id: &str, sandbox: Option<&str>) -> Result<Option<Lease>, CoordinatorError> {
        self.change("releasing a lease", |held| {
            Ok(match held.iter().position(|l| l.id == lease_id && holds_sandbox(l, sandbox)) {
                Some(at) => Change::Write(Some(held.remove(at))),
                None => Change::Keep(None),
            })
        })
        .await
    }

    async fn expired(&self, now_ms: u64) -> Result<Vec<Lease>, CoordinatorError> {
        Ok(self.held().await?.into_iter().filter(|l| l.is_expired(now_ms)).collect())
    }

    async fn get(&self, lease_id: &str) -> Result<Option<Lease>, CoordinatorError> {
        Ok(self.held().await?.into_iter().find(|l| l.id == lease_id))
    }
}

/// One coordinator operation as a message (the Durable Object's request).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum CoordinatorOp {
    TryAcquire {
        lease: Lease,
        limits: LeaseLimits,
        now_ms: u64,
    },
    Update {
        lease: Lease,
    },
    /// `sandbox` is absent from the messages of older code (and ignored by
    /// an older coordinator): an unconditional release.
    Release {
        lease_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<String>,
    },
    Expired {
        now_ms: u64,
    },
    Get {
        lease_id: String,
    },
}

/// The answer to a [`CoordinatorOp`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reply", rename_all = "kebab-case")]
pub enum CoordinatorReply {
    Acquired { acquired: Acquired },
    Refused { quota: QuotaError },
    Done,
    Lease { lease: Option<Lease> },
    Leases { leases: Vec<Lease> },
    UnknownLease { lease_id: String },
    Unavailable { message: String },
}

/// Applies `op` to `coordinator` (inside the single writer).
pub async fn apply_op<C: Coordinator>(coordinator: &C, op: CoordinatorOp) -> CoordinatorReply {
    let result = match op {
        CoordinatorOp::TryAcquire { lease, limits, now_ms } => {
            coordinator.try_acquire(&lease, &limits, now_ms).await.map(|r| match r {
                Ok(acquired) => CoordinatorReply::Acquired { acquired },
                Err(quota) => CoordinatorReply::Refused { quota },
            })
        }
        CoordinatorOp::Update { lease } => coordinator.update(&lease).await.map(|()| CoordinatorReply::Done),
        CoordinatorOp::Release { lease_id, sandbox } => {
            coordinator.release(&lease_id, sandbox.as_deref()).await.map(|lease| CoordinatorReply::Lease { lease })
        }
        CoordinatorOp::Expired { now_ms } => {
            coordinator.expired(now_ms).await.map(|leases| CoordinatorReply::Leases { leases })
        }
        CoordinatorOp::Get { lease_id } => {
            coordinator.get(&lease_id).await.map(|lease| CoordinatorReply::Lease { lease })
        }
    };
    result.unwrap_or_else(|e| match e {
        CoordinatorError::UnknownLease(lease_id) => CoordinatorReply::UnknownLease { lease_id },
        other => CoordinatorReply::Unavailable { message: other.to_string() },
    })
}

/// Carries one operation to the single writer and brings its reply back.
pub trait CoordinatorTransport {
    /// Sends `op`; transport failures are `CoordinatorError::Unavailable`.
    async fn call(&self, op: &CoordinatorOp) -> Result<CoordinatorReply, CoordinatorError>;
}

/// A coordinator whose every operation runs remotely, in the single writer.
#[derive(Debug)]
pub struct RemoteCoordinator<T> {
    transport: T,
}

impl<T: CoordinatorTransport> RemoteCoordinator<T> {
    /// Forwards operations through `transport`.
    pub fn new(transport: T) -> Self {
        Self { transport }
    }

    async fn call(&self, op: CoordinatorOp) -> Result<CoordinatorReply, CoordinatorError> {
        match self.transport.call(&op).await? {
            CoordinatorReply::Unavailable { message } => Err(CoordinatorError::Unavailable(message)),
            CoordinatorReply::UnknownLease { lease_id } => Err(CoordinatorError::UnknownLease(lease_id)),
            reply => Ok(reply),
        }
    }
}

/// Names the reply's kind only: a reply's records are no error message.
fn unexpected(reply: &CoordinatorReply) -> CoordinatorError {
    let kind = match reply {
        CoordinatorReply::Acquired { .. } => "acquired",
        CoordinatorReply::Refused { .. } => "refused",
        CoordinatorReply::Done => "done",
        CoordinatorReply::Lease { .. } => "lease",
        CoordinatorReply::Leases { .. } => "leases",
        CoordinatorReply::UnknownLease { .. } => "unknown-lease",
        CoordinatorReply::Unavailable { .. } => "unavailable",
    };
    CoordinatorError::Unavailable(format!("unexpected coordinator reply `{kind}`"))
}

impl<T: CoordinatorTransport> Coordinator for RemoteCoordinator<T> {
    async fn try_acquire(
        &self,
        lease: &Lease,
        limits: &LeaseLimits,
        now_ms: u64,
    ) -> Result<Result<Acquired, QuotaError>, CoordinatorError> {
        match self.call(CoordinatorOp::TryAcquire { lease: lease.clone(), limits: *limits, now_ms }).await? {
            CoordinatorReply::Acquired { acquired } => Ok(Ok(acquired)),
            CoordinatorReply::Refused { quota } => Ok(Err(quota)),
            other => Err(unexpected(&other)),
        }
    }

    async fn update(&self, lease: &Lease) -> Result<(), CoordinatorError> {
        match self.call(CoordinatorOp::Update { lease: lease.clone() }).await? {
            CoordinatorReply::Done => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    async fn release(&self, lease_id: &str, sandbox: Option<&str>) -> Result<Option<Lease>, CoordinatorError> {
        let op = CoordinatorOp::Release { lease_id: lease_id.to_owned(), sandbox: sandbox.map(str::to_owned) };
        match self.call(op).await? {
            CoordinatorReply::Lease { lease } => Ok(lease),
            other => Err(unexpected(&other)),
        }
    }

    async fn expired(&self, now_ms: u64) -> Result<Vec<Lease>, CoordinatorError> {
        match self.call(CoordinatorOp::Expired { now_ms }).await? {
            CoordinatorReply::Leases { leases } => Ok(leases),
            other => Err(unexpected(&other)),
        }
    }

    async fn get(&self, lease_id: &str) -> Result<Option<Lease>, CoordinatorError> {
        match self.call(CoordinatorOp::Get { lease_id: lease_id.to_owned() }).await? {
            CoordinatorReply::Lease { lease } => Ok(lease),
            other => Err(unexpected(&other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_zero_contracts::{NetworkPolicy, RunMode};
    use agent_zero_ports::MemoryKv;

    use super::*;
    use crate::request::{ProviderKind, SandboxRequest};

    use agent_zero_ports::block_on;

    fn lease(id: &str, repo: &str) -> Lease {
        let request = SandboxRequest::new(id, repo, "HEAD", RunMode::Fix, true, NetworkPolicy::Restricted, 1_000);
        Lease::reserve(id, &request, ProviderKind::Custom, 0)
    }

    /// Sends every op through its JSON form into a `KvCoordinator`, like the
    /// Durable Object does.
    struct Loopback(KvCoordinator<MemoryKv>);

    impl CoordinatorTransport for Loopback {
        async fn call(&self, op: &CoordinatorOp) -> Result<CoordinatorReply, CoordinatorError> {
            let op: CoordinatorOp = serde_json::from_slice(&serde_json::to_vec(op).unwrap()).unwrap();
            let reply = apply_op(&self.0, op).await;
            Ok(serde_json::from_slice(&serde_json::to_vec(&reply).unwrap()).unwrap())
        }
    }

    #[test]
    fn quota_release_expiry_through_json_messages() {
        let remote = RemoteCoordinator::new(Loopback(KvCoordinator::new(MemoryKv::new())));
        let limits = LeaseLimits { max_active: 2, max_active_per_repository: 1, max_lease_ms: 5_000 };
        block_on(async {
            let a = remote.try_acquire(&lease("a", "o/r1"), &limits, 0).await.unwrap().unwrap();
            assert!(!a.replayed);
            assert!(remote.try_acquire(&lease("a", "o/r1"), &limits, 0).await.unwrap().unwrap().replayed);
            let same_repo = remote.try_acquire(&lease("b", "o/r1"), &limits, 0).await.unwrap();
            assert!(matches!(same_repo, Err(QuotaError::MaxActivePerRepository { limit: 1, .. })));
            remote.try_acquire(&lease("c", "o/r2"), &limits, 0).await.unwrap().unwrap();
            let full = remote.try_acquire(&lease("d", "o/r3"), &limits, 0).await.unwrap();
            assert!(matches!(full, Err(QuotaError::MaxActive { active: 2, limit: 2 })));
            assert_eq!(remote.expired(999).await.unwrap(), vec![]);
            assert_eq!(remote.expired(1_000).await.unwrap().len(), 2);
            assert_eq!(remote.release("a", None).await.unwrap().map(|l| l.id), Some("a".into()));
            assert_eq!(remote.release("a", None).await.unwrap(), None);
            assert!(matches!(remote.update(&lease("zz", "o/r9")).await, Err(CoordinatorError::UnknownLease(_))));
            assert_eq!(remote.get("c").await.unwrap().map(|l| l.id), Some("c".into()));
            remote.try_acquire(&lease("d", "o/r3"), &limits, 0).await.unwrap().unwrap();
        });
    }

    #[test]
    fn a_release_naming_a_sandbox_removes_only_the_lease_holding_it() {
        let remote = RemoteCoordinator::new(Loopback(KvCoordinator::new(MemoryKv::new())));
        let limits = LeaseLimits { max_active: 2, max_active_per_repository: 2, max_lease_ms: 5_000 };
        block_on(async {
            let mut held = lease("a", "o/r");
            remote.try_acquire(&held, &limits, 0).await.unwrap().unwrap();
            // Still provisioning: no sandbox to match.
            assert_eq!(remote.release("a", Some("sbx-1")).await.unwrap(), None);
            held.external_id = Some("sbx-2".into());
            remote.update(&held).await.unwrap();
            assert_eq!(remote.release("a", Some("sbx-1")).await.unwrap(), None);
            assert_eq!(remote.get("a").await.unwrap(), Some(held.clone()));
            assert_eq!(remote.release("a", Some("sbx-2")).await.unwrap(), Some(held));
            assert_eq!(remote.get("a").await.unwrap(), None);
        });
        // Older code's message names no sandbox: an unconditional release.
        let op: CoordinatorOp = serde_json::from_str(r#"{"op":"release","lease_id":"a"}"#).unwrap();
        assert_eq!(op, CoordinatorOp::Release { lease_id: "a".into(), sandbox: None });
        assert_eq!(serde_json::to_string(&op).unwrap(), r#"{"op":"release","lease_id":"a"}"#);
    }

    #[test]
    fn storage_failure_is_unavailable_and_changes_nothing() {
        let kv = MemoryKv::new();
        let coordinator = KvCoordinator::new(&kv);
        let limits = LeaseLimits { max_active: 2, max_active_per_repository: 2, max_lease_ms: 5_000 };
        block_on(async {
            kv.set_fault(Some(agent_zero_ports::MemoryKvFault::Writes));
            assert!(matches!(
                coordinator.try_acquire(&lease("a", "o/r"), &limits, 0).await,
                Err(CoordinatorError::Unavailable(_))
            ));
            kv.set_fault(None);
            assert_eq!(coordinator.get("a").await.unwrap(), None);
        });
    }
}
