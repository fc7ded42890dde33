//! The key-value lease ledger (`KvCoordinator`, Spin's `leases/held`) under
//! concurrent writers: every change is a compare-and-swap, so a write that
//! lands between another coordinator's read and write makes that one decide
//! again instead of overwriting it.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::{KeyPage, KeyValue, KvError, MemoryKv, block_on};
use agent_zero_runner::{
    Coordinator, CoordinatorError, KvCoordinator, LEASES_KEY, Lease, LeaseLimits, ProviderKind, QuotaError,
    SandboxRequest,
};

type Hook<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// A `MemoryKv` that runs `hook` (another coordinator's whole operation)
/// after the next read of the ledger and before the write that follows it:
/// the interleaving two Spin instances can produce.
struct Interleaved<'a> {
    kv: &'a MemoryKv,
    hook: RefCell<Option<Hook<'a>>>,
    /// Armed by a read of the ledger; the hook runs before the next write.
    armed: Cell<bool>,
    swaps: Cell<usize>,
}

impl<'a> Interleaved<'a> {
    fn new(kv: &'a MemoryKv, hook: impl Future<Output = ()> + 'a) -> Self {
        Self { kv, hook: RefCell::new(Some(Box::pin(hook))), armed: Cell::new(false), swaps: Cell::new(0) }
    }

    async fn run_hook(&self) {
        if self.armed.replace(false) {
            let hook = self.hook.borrow_mut().take();
            if let Some(hook) = hook {
                hook.await;
            }
        }
    }
}

impl KeyValue for Interleaved<'_> {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let value = self.kv.get(key).await;
        self.armed.set(key == LEASES_KEY);
        value
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.run_hook().await;
        self.kv.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), KvError> {
        self.run_hook().await;
        self.kv.delete(key).await
    }
    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        self.kv.list(prefix, cursor, limit).await
    }
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        self.run_hook().await;
        self.kv.put_if_absent(key, value).await
    }
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        self.run_hook().await;
        self.swaps.set(self.swaps.get() + 1);
        self.kv.compare_and_swap(key, expected, value).await
    }
}

fn lease(id: &str, repo: &str) -> Lease {
    let request = SandboxRequest::new(id, repo, "main", RunMode::Fix, true, NetworkPolicy::Restricted, 1_000);
    Lease::reserve(id, &request, ProviderKind::Custom, 0)
}

fn held(kv: &MemoryKv) -> Vec<String> {
    let bytes = block_on(kv.get(LEASES_KEY)).unwrap().unwrap_or_else(|| b"[]".to_vec());
    let leases: Vec<Lease> = serde_json::from_slice(&bytes).unwrap();
    leases.into_iter().map(|l| l.id).collect()
}

const ONE_PER_REPO: LeaseLimits = LeaseLimits { max_active: 8, max_active_per_repository: 1, max_lease_ms: 5_000 };

/// A reads an empty ledger, B acquires the repository's only slot, then A
/// writes: A's swap fails, A decides again on B's ledger and is refused.
/// (A plain read-then-put would have stored A's lease over B's: two leases
/// granted where the quota allows one, and B's lost.)
#[test]
fn an_acquire_between_read_and_write_cannot_overbook() {
    let kv = MemoryKv::new();
    let b = KvCoordinator::new(&kv);
    let b_result = RefCell::new(None);
    let a = KvCoordinator::new(Interleaved::new(&kv, async {
        *b_result.borrow_mut() = Some(b.try_acquire(&lease("b", "o/r"), &ONE_PER_REPO, 0).await);
    }));
    let a_result = block_on(a.try_acquire(&lease("a", "o/r"), &ONE_PER_REPO, 0)).unwrap();
    assert!(!b_result.take().unwrap().unwrap().unwrap().replayed, "B acquired inside A's read-to-write window");
    assert!(
        matches!(a_result, Err(QuotaError::MaxActivePerRepository { active: 1, limit: 1, .. })),
        "A decided again on B's ledger: {a_result:?}"
    );
    assert_eq!(held(&kv), ["b"]);
}

/// The same window with room for both: A's retry keeps B's lease and adds
/// its own (no lease lost).
#[test]
fn an_acquire_between_read_and_write_keeps_both_leases() {
    let kv = MemoryKv::new();
    block_on(KvCoordinator::new(&kv).try_acquire(&lease("first", "o/x"), &ONE_PER_REPO, 0)).unwrap().unwrap();
    let b = KvCoordinator::new(&kv);
    let store = Interleaved::new(&kv, async {
        b.try_acquire(&lease("b", "o/b"), &ONE_PER_REPO, 0).await.unwrap().unwrap();
    });
    let a = KvCoordinator::new(&store);
    block_on(a.try_acquire(&lease("a", "o/a"), &ONE_PER_REPO, 0)).unwrap().unwrap();
    assert_eq!(store.swaps.get(), 2, "the first swap failed, the retry succeeded");
    assert_eq!(held(&kv), ["first", "b", "a"]);
}

/// A release racing an acquire: neither the released lease comes back nor
/// the acquired one is lost.
#[test]
fn a_release_between_read_and_write_loses_no_lease() {
    let kv = MemoryKv::new();
    let plain = KvCoordinator::new(&kv);
    block_on(plain.try_acquire(&lease("old", "o/old"), &ONE_PER_REPO, 0)).unwrap().unwrap();
    let a = KvCoordinator::new(Interleaved::new(&kv, async {
        plain.try_acquire(&lease("new", "o/new"), &ONE_PER_REPO, 0).await.unwrap().unwrap();
    }));
    assert_eq!(block_on(a.release("old", None)).unwrap().map(|l| l.id).as_deref(), Some("old"));
    assert_eq!(held(&kv), ["new"]);
    // An update racing a release of the same lease is refused, not resurrected.
    let a = KvCoordinator::new(Interleaved::new(&kv, async {
        plain.release("new", None).await.unwrap();
    }));
    assert!(
        matches!(block_on(a.update(&lease("new", "o/new"))), Err(CoordinatorError::UnknownLease(id)) if id == "new")
    );
    assert_eq!(held(&kv), Vec::<String>::new());
}

/// A store whose ledger changes under every attempt: the change gives up
/// after a bounded number of attempts, unavailable and naming why, with
/// nothing of its own written.
#[test]
fn sustained_contention_gives_up_with_the_reason() {
    struct AlwaysChanged(MemoryKv, Cell<usize>);
    impl KeyValue for AlwaysChanged {
        async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
            self.0.get(key).await
        }
        async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
            self.0.put(key, value).await
        }
        async fn delete(&self, key: &str) -> Result<(), KvError> {
            self.0.delete(key).await
        }
        async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
            self.0.list(prefix, cursor, limit).await
        }
        async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
            self.0.put_if_absent(key, value).await
        }
        async fn compare_and_swap(&self, _: &str, _: Option<&[u8]>, _: &[u8]) -> Result<bool, KvError> {
            self.1.set(self.1.get() + 1);
            Ok(false)
        }
    }
    let store = AlwaysChanged(MemoryKv::new(), Cell::new(0));
    let coordinator = KvCoordinator::new(&store);
    match block_on(coordinator.try_acquire(&lease("a", "o/r"), &ONE_PER_REPO, 0)) {
        Err(CoordinatorError::Unavailable(reason)) => {
            assert!(reason.contains("attempts") && reason.contains(LEASES_KEY), "{reason}")
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
    let attempts = store.1.get();
    assert!((2..=64).contains(&attempts), "bounded retries, got {attempts}");
    assert_eq!(block_on(store.0.get(LEASES_KEY)).unwrap(), None);
}

/// Atomic conditional writes are required: a store that cannot do them
/// (Workers KV) makes every change unavailable instead of racing.
#[test]
fn a_store_without_compare_and_swap_is_unavailable() {
    struct NoCas(MemoryKv);
    impl KeyValue for NoCas {
        async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
            self.0.get(key).await
        }
        async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
            self.0.put(key, value).await
        }
        async fn delete(&self, key: &str) -> Result<(), KvError> {
            self.0.delete(key).await
        }
        async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
            self.0.list(prefix, cursor, limit).await
        }
        async fn put_if_absent(&self, key: &str, _: &[u8]) -> Result<bool, KvError> {
            Err(KvError::Unsupported(key.to_owned()))
        }
        async fn compare_and_swap(&self, key: &str, _: Option<&[u8]>, _: &[u8]) -> Result<bool, KvError> {
            Err(KvError::Unsupported(key.to_owned()))
        }
    }
    let coordinator = KvCoordinator::new(NoCas(MemoryKv::new()));
    assert!(matches!(
        block_on(coordinator.try_acquire(&lease("a", "o/r"), &ONE_PER_REPO, 0)),
        Err(CoordinatorError::Unavailable(reason)) if reason.contains("atomically")
    ));
}
