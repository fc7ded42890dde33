//! RunnerPool quotas under interleaved acquires, expiry, release, credentials.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::ManualClock;
use agent_zero_ports::Secret;
use agent_zero_runner::{
    CheckoutSource, Command, Exec, ExecOutput, MemoryCoordinator, ProviderError, ProviderKind, Provision, Provisioned,
    QuotaError, RunnerError, RunnerPool, RunnerPoolConfig, SandboxProvider, SandboxRef, SandboxRequest,
};

const SECRET: &str = "prov-secret-9f8e7d";

/// Suspends once, so acquires interleave at the provisioning await.
struct YieldOnce(bool);
impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

#[derive(Debug)]
struct Fake {
    secret: Secret,
    provisioned: Cell<u32>,
    stopped: RefCell<Vec<String>>,
    fail_stop: Cell<bool>,
    output: RefCell<ExecOutput>,
    file: RefCell<Vec<u8>>,
}

impl Fake {
    fn new() -> Self {
        Self {
            secret: Secret::new(SECRET),
            provisioned: Cell::new(0),
            stopped: RefCell::default(),
            fail_stop: Cell::new(false),
            output: RefCell::default(),
            file: RefCell::new(b"content".to_vec()),
        }
    }
}

impl SandboxProvider for Fake {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Custom
    }
    async fn provision(&self, request: &SandboxRequest, _: &Provision<'_>) -> Result<Provisioned, ProviderError> {
        YieldOnce(false).await;
        self.provisioned.set(self.provisioned.get() + 1);
        Ok(Provisioned {
            external_id: format!("sbx-{}", request.task_id),
            root: String::new(),
            isolated: true,
            network: request.network,
        })
    }
    async fn exec(&self, _: &SandboxRef, _: &Exec) -> Result<ExecOutput, ProviderError> {
        Ok(self.output.borrow().clone())
    }
    async fn read_file(&self, _: &SandboxRef, _: &str) -> Result<Vec<u8>, ProviderError> {
        Ok(self.file.borrow().clone())
    }
    async fn write_file(&self, _: &SandboxRef, _: &str, _: &[u8]) -> Result<(), ProviderError> {
        Ok(())
    }
    async fn stop(&self, id: &str) -> Result<(), ProviderError> {
        if self.fail_stop.get() {
            return Err(ProviderError::Status {
                provider: "custom",
                operation: "stop",
                status: 500,
                message: self.secret.scrub(&format!("bad key {SECRET}")),
            });
        }
        self.stopped.borrow_mut().push(id.to_owned());
        Ok(())
    }
}

/// Polls every future round-robin until all finish (a single-threaded host).
fn run_interleaved<T>(mut futures: Vec<Pin<Box<dyn Future<Output = T> + '_>>>) -> Vec<T> {
    let mut results: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    let mut cx = Context::from_waker(Waker::noop());
    while results.iter().any(Option::is_none) {
        for (i, f) in futures.iter_mut().enumerate() {
            if results[i].is_none()
                && let Poll::Ready(v) = f.as_mut().poll(&mut cx)
            {
                results[i] = Some(v);
            }
        }
    }
    results.into_iter().map(Option::unwrap).collect()
}

fn block_on<F: Future>(f: F) -> F::Output {
    run_interleaved(vec![Box::pin(f)]).pop().unwrap()
}

fn request(task: &str, repo: &str, mode: RunMode, lease_ms: u64) -> SandboxRequest {
    SandboxRequest::new(task, repo, "main", mode, true, NetworkPolicy::Restricted, lease_ms)
}

#[test]
fn concurrent_acquires_never_exceed_quotas() {
    for (max_active, per_repo) in [(4, 1), (3, 2), (1, 1), (5, 5)] {
        let (coordinator, provider, clock) = (MemoryCoordinator::new(), Fake::new(), ManualClock::new(0));
        let config =
            RunnerPoolConfig { max_active, max_active_per_repository: per_repo, ..RunnerPoolConfig::default() };
        let pool = RunnerPool::new(&coordinator, &provider, &clock, config);
        let requests: Vec<SandboxRequest> =
            (0..24).map(|i| request(&format!("t{i}"), &format!("acme/r{}", i % 3), RunMode::Fix, 1000)).collect();
        let futures = requests
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let pool = &pool;
                Box::pin(async move {
                    pool.acquire(r, &format!("lease-{i}"), &CheckoutSource::PublicClone).await.map(|_| ())
                }) as Pin<Box<dyn Future<Output = _>>>
            })
            .collect();
        let results: Vec<Result<(), RunnerError>> = run_interleaved(futures);
        let granted = results.iter().filter(|r| r.is_ok()).count() as u32;
        assert_eq!(granted, max_active.min(3 * per_repo), "limits {max_active}/{per_repo}");
        assert_eq!(provider.provisioned.get(), granted, "refusals happen before provisioning");
        let held = coordinator.snapshot();
        for repo in ["acme/r0", "acme/r1", "acme/r2"] {
            assert!(held.iter().filter(|l| l.repository == repo).count() as u32 <= per_repo);
        }
        assert!(results.iter().filter_map(|r| r.as_ref().err()).all(|e| matches!(
            e,
            RunnerError::Quota(QuotaError::MaxActive { .. } | QuotaError::MaxActivePerRepository { .. })
        )));
    }
}

#[test]
fn quota_errors_name_their_limit_and_lease_ceiling() {
    let (coordinator, provider, clock) = (MemoryCoordinator::new(), Fake::new(), ManualClock::new(0));
    let config = RunnerPoolConfig {
        max_active: 1,
        max_active_per_repository: 1,
        max_lease_ms: 1000,
        ..RunnerPoolConfig::default()
    };
    let pool = RunnerPool::new(&coordinator, &provider, &clock, config);
    block_on(async {
        let long = pool
            .acquire(&request("a", "acme/app", RunMode::Fix, 5000), "l-a", &CheckoutSource::PublicClone)
            .await
            .unwrap_err();
        assert_eq!(long.to_string(), "requested leaseMs 5000 exceeds maxLeaseMs 1000");
        assert!(
            pool.acquire(&request("a", "acme/app", RunMode::Fix, 0), "l-a", &CheckoutSource::PublicClone)
                .await
                .unwrap_err()
                .to_string()
                .contains("positive")
        );
        pool.acquire(&request("a", "acme/app", RunMode::Fix, 1000), "l-a", &CheckoutSource::PublicClone).await.unwrap();
        let full = pool
            .acquire(&request("b", "acme/other", RunMode::Fix, 1000), "l-b", &CheckoutSource::PublicClone)
            .await
            .unwrap_err();
        assert!(full.to_string().contains("maxActive 1"), "{full}");
        // A redelivered tick gets the same lease back, not a second sandbox.
        let again = pool
            .acquire(&request("a", "acme/app", RunMode::Fix, 1000), "l-a", &CheckoutSource::PublicClone)
            .await
            .unwrap();
        assert_eq!(again.lease().external_id, "sbx-a");
        assert_eq!(provider.provisioned.get(), 1);
        let bad = pool
            .acquire(&request("c", "not a repo", RunMode::Fix, 10), "l-c", &CheckoutSource::PublicClone)
            .await
            .unwrap_err();
        assert!(bad.to_string().contains("repository"), "{bad}");
    });
}

#[test]
fn observe_and_suggest_are_read_only_and_described() {
    let (coordinator, provider, clock) = (MemoryCoordinator::new(), Fake::new(), ManualClock::new(0));
    let pool = RunnerPool::new(
        &coordinator,
        &provider,
        &clock,
        RunnerPoolConfig { max_active: 9, max_active_per_repository: 9, ..RunnerPoolConfig::default() },
    );
    block_on(async {
        for (i, mode) in [RunMode::Observe, RunMode::Suggest].into_iter().enumerate() {
            let runner = pool
                .acquire(
                    &request(&format!("m{i}"), "acme/app", mode, 1000),
                    &format!("m{i}"),
                    &CheckoutSource::PublicClone,
                )
                .await
                .unwrap();
            assert!(!runner.describe().writable);
            assert_eq!(runner.describe().network, NetworkPolicy::Restricted);
            assert!(matches!(runner.write_file("a.txt", "x").await, Err(RunnerError::ReadOnly { .. })));
        }
        let fix = pool
            .acquire(&request("f", "acme/app", RunMode::Fix, 1000), "f", &CheckoutSource::PublicClone)
            .await
            .unwrap();
        assert!(fix.describe().writable && fix.describe().isolated);
        fix.write_file("a.txt", "x").await.unwrap();
        assert!(matches!(fix.write_file("../a", "x").await, Err(RunnerError::PathOutsideCheckout { .. })));
        assert!(matches!(
            fix.run(&Command::new(Vec::<String>::new(), 10)).await,
            Err(RunnerError::InvalidCommand { .. })
        ));
        assert!(matches!(
            fix.run(&Command::new(["ls"], 10).in_dir("../up")).await,
            Err(RunnerError::PathOutsideCheckout { .. })
        ));
        let mut with_env = Command::new(["ls"], 10);
        with_env.env.insert("LD_PRELOAD".into(), "x".into());
        assert!(fix.run(&with_env).await.unwrap_err().to_string().contains("LD_PRELOAD"));
        *provider.output.borrow_mut() = ExecOutput {
            exit_code: 1,
            stdout: "o".repeat(300_000),
            stderr: "e".into(),
            truncated_bytes: 7,
            ..ExecOutput::default()
        };
        let result = fix.run(&Command::new(["make", "test"], 10)).await.unwrap();
        assert_eq!(result.stdout.len() + result.stderr.len(), 200_000);
        assert_eq!(result.truncated_bytes, 7 + 100_001);
        // Every read is bounded, whatever the provider sent.
        assert_eq!(fix.read_file("a.txt").await.unwrap(), "content");
        *provider.file.borrow_mut() = vec![b'x'; agent_zero_runner::MAX_READ_BYTES + 1];
        let big = fix.read_file("a.txt").await.unwrap_err();
        assert!(matches!(big, RunnerError::FileTooLarge { .. }) && big.to_string().contains("a.txt"), "{big}");
        // The lease records the network the provider enforces.
        assert_eq!(fix.describe().network, NetworkPolicy::Restricted);
    });
}

#[test]
fn expiry_sweep_release_and_credentials() {
    let (coordinator, provider, clock) = (MemoryCoordinator::new(), Fake::new(), ManualClock::new(1_000));
    let pool = RunnerPool::new(
        &coordinator,
        &provider,
        &clock,
        RunnerPoolConfig { max_active: 9, max_active_per_repository: 9, ..RunnerPoolConfig::default() },
    );
    block_on(async {
        pool.acquire(&request("short", "acme/app", RunMode::Fix, 1_000), "short", &CheckoutSource::PublicClone)
            .await
            .unwrap();
        pool.acquire(&request("long", "acme/app", RunMode::Fix, 60_000), "long", &CheckoutSource::PublicClone)
            .await
            .unwrap();
        clock.advance(999);
        assert!(pool.sweep().await.unwrap().stopped.is_empty());
        clock.advance(1);
        let report = pool.sweep().await.unwrap();
        assert_eq!(report.stopped, ["short"]);
        assert_eq!(*provider.stopped.borrow(), ["sbx-short"]);
        assert!(matches!(pool.attach("short").await, Err(RunnerError::UnknownLease(_))));
        assert!(pool.attach("long").await.is_ok());

        // A failed stop keeps the lease (and its quota) for a retry.
        provider.fail_stop.set(true);
        let error = pool.release("long").await.unwrap_err();
        clock.advance(120_000);
        let report = pool.sweep().await.unwrap();
        assert_eq!(report.failed.len(), 1);
        provider.fail_stop.set(false);
        assert!(pool.release("long").await.unwrap());
        assert!(!pool.release("long").await.unwrap());
        assert!(!pool.release("never-existed").await.unwrap());
        assert!(coordinator.snapshot().is_empty());

        // Credential scan: nothing observable carries the provider secret.
        let mut observed =
            vec![format!("{error}"), format!("{error:?}"), format!("{provider:?}"), format!("{report:?}")];
        pool.acquire(&request("x", "acme/app", RunMode::Fix, 1_000), "x", &CheckoutSource::PublicClone).await.unwrap();
        observed.extend(coordinator.snapshot().iter().map(|l| serde_json::to_string(l).unwrap()));
        observed.push(serde_json::to_string(&request("x", "acme/app", RunMode::Fix, 1)).unwrap());
        for text in observed {
            assert!(!text.contains(SECRET), "secret leaked: {text}");
        }
    });
}
