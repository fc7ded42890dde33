//! Leases attached and released from what their holder kept
//! ([`ProvisionedLease`]): the coordinator requests each step costs, and
//! what a lease expired, swept or taken again meanwhile answers.

use std::cell::{Cell, RefCell};

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::{ManualClock, block_on};
use agent_zero_runner::{
    CheckoutSource, Command, CountingCoordinator, Exec, ExecOutput, ProviderError, ProviderKind, Provision,
    Provisioned, RunnerError, RunnerPool, RunnerPoolConfig, SandboxProvider, SandboxRef, SandboxRequest,
};

/// A provider whose sandboxes are numbered and answer "not found" once stopped.
#[derive(Debug, Default)]
struct Numbered {
    provisioned: Cell<u32>,
    stopped: RefCell<Vec<String>>,
}

impl Numbered {
    fn alive(&self, sandbox: &SandboxRef, operation: &'static str) -> Result<(), ProviderError> {
        if self.stopped.borrow().contains(&sandbox.external_id) {
            return Err(ProviderError::NotFound { provider: "custom", operation, what: sandbox.external_id.clone() });
        }
        Ok(())
    }
}

impl SandboxProvider for Numbered {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Custom
    }
    async fn provision(&self, request: &SandboxRequest, _: &Provision<'_>) -> Result<Provisioned, ProviderError> {
        self.provisioned.set(self.provisioned.get() + 1);
        Ok(Provisioned {
            external_id: format!("sbx-{}", self.provisioned.get()),
            root: "/work/repo".into(),
            isolated: true,
            network: request.network,
        })
    }
    async fn exec(&self, sandbox: &SandboxRef, _: &Exec) -> Result<ExecOutput, ProviderError> {
        self.alive(sandbox, "exec")?;
        Ok(ExecOutput::default())
    }
    async fn read_file(&self, sandbox: &SandboxRef, _: &str) -> Result<Vec<u8>, ProviderError> {
        self.alive(sandbox, "read file")?;
        Ok(b"text".to_vec())
    }
    async fn write_file(&self, sandbox: &SandboxRef, _: &str, _: &[u8]) -> Result<(), ProviderError> {
        self.alive(sandbox, "write file")
    }
    async fn stop(&self, id: &str) -> Result<(), ProviderError> {
        self.stopped.borrow_mut().push(id.to_owned());
        Ok(())
    }
}

fn request() -> SandboxRequest {
    SandboxRequest::new("t1", "acme/app", "main", RunMode::Fix, true, NetworkPolicy::Restricted, 60_000)
}

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

#[test]
fn a_lease_costs_three_coordinator_requests_from_acquire_to_release() {
    let (coordinator, provider, clock) = (CountingCoordinator::new(), Numbered::default(), ManualClock::new(1_000));
    let pool = RunnerPool::new(&coordinator, &provider, &clock, RunnerPoolConfig::default());
    let resolved = Cell::new(0);
    let resolve = async || {
        resolved.set(resolved.get() + 1);
        Ok((COMMIT.to_owned(), CheckoutSource::PublicClone))
    };
    block_on(async {
        let runner = pool.acquire_with(&request(), "lease-t1", resolve).await.unwrap();
        assert_eq!(coordinator.take(), ["try_acquire", "update"]);
        assert_eq!(resolved.get(), 1);
        let kept = runner.lease().clone();
        assert_eq!((kept.external_id.as_str(), kept.root.as_str()), ("sbx-1", "/work/repo"));
        assert_eq!(kept.expires_at_ms, 61_000);
        // The coordinator holds the commit the checkout resolved, not the branch asked for.
        assert_eq!(coordinator.inner().snapshot()[0].git_ref, COMMIT);

        // Later ticks: every operation from the record, none asks the coordinator.
        for _ in 0..5 {
            clock.advance(1_000);
            let runner = pool.attach_provisioned(&kept).unwrap();
            assert_eq!(runner.describe(), pool.attach_provisioned(&kept).unwrap().describe());
            runner.run(&Command::new(["make", "test"], 1_000)).await.unwrap();
            runner.read_file("README.md").await.unwrap();
            runner.write_file("calc.py", "x = 1\n").await.unwrap();
        }
        assert_eq!(coordinator.take(), Vec::<&str>::new());

        // A redelivered lease tick: the reservation answers it, with no checkout.
        let again = pool
            .acquire_with(&request(), "lease-t1", async || -> Result<(String, CheckoutSource), RunnerError> {
                panic!("a replay resolves no checkout")
            })
            .await
            .unwrap();
        assert_eq!(again.lease(), &kept);
        assert_eq!(coordinator.take(), ["try_acquire"]);

        assert!(pool.release_provisioned(&kept).await.unwrap());
        assert_eq!(coordinator.take(), ["release"]);
        assert_eq!(provider.stopped.borrow().as_slice(), ["sbx-1"]);
        assert!(coordinator.inner().snapshot().is_empty());
        // Releasing twice stops again (stopping a stopped sandbox is success) and frees nothing.
        assert!(!pool.release_provisioned(&kept).await.unwrap());
    });
}

#[test]
fn past_its_ceiling_a_kept_lease_is_gone_without_asking() {
    let (coordinator, provider, clock) = (CountingCoordinator::new(), Numbered::default(), ManualClock::new(0));
    let pool = RunnerPool::new(&coordinator, &provider, &clock, RunnerPoolConfig::default());
    block_on(async {
        let kept = pool.acquire(&request(), "lease-t1", &CheckoutSource::PublicClone).await.unwrap().lease().clone();
        coordinator.take();
        clock.advance(59_999);
        assert!(pool.attach_provisioned(&kept).is_ok());
        clock.advance(1);
        let error = pool.attach_provisioned(&kept).unwrap_err();
        assert_eq!(error, RunnerError::UnknownLease("lease-t1".into()));
        // The coordinator, which still holds it until the sweep, was not asked.
        assert_eq!(coordinator.take(), Vec::<&str>::new());
        // As attaching through the coordinator answers.
        assert_eq!(pool.attach("lease-t1").await.unwrap_err(), error);
        // The sweep stops it from its listing: no second read per lease.
        coordinator.take();
        let swept = pool.sweep().await.unwrap();
        assert_eq!(swept.stopped, ["lease-t1"]);
        assert_eq!(coordinator.take(), ["expired", "release"]);
        assert_eq!(provider.stopped.borrow().as_slice(), ["sbx-1"]);
        assert!(!pool.holds(&kept).await.unwrap());
    });
}

#[test]
fn a_stale_record_never_releases_a_newer_sandbox_under_the_same_id() {
    let (coordinator, provider, clock) = (CountingCoordinator::new(), Numbered::default(), ManualClock::new(0));
    let pool = RunnerPool::new(&coordinator, &provider, &clock, RunnerPoolConfig::default());
    block_on(async {
        let first = pool.acquire(&request(), "lease-t1", &CheckoutSource::PublicClone).await.unwrap().lease().clone();
        assert!(pool.release_provisioned(&first).await.unwrap());
        let second = pool.acquire(&request(), "lease-t1", &CheckoutSource::PublicClone).await.unwrap().lease().clone();
        assert_eq!(second.external_id, "sbx-2");
        assert!(pool.holds(&second).await.unwrap() && !pool.holds(&first).await.unwrap());
        // A holder releasing from the first record stops only its sandbox.
        assert!(!pool.release_provisioned(&first).await.unwrap());
        assert_eq!(coordinator.inner().snapshot().len(), 1, "the newer lease keeps its quota");
        assert_eq!(provider.stopped.borrow().as_slice(), ["sbx-1", "sbx-1"]);
        assert!(pool.attach_provisioned(&second).unwrap().read_file("a").await.is_ok());
    });
}

#[test]
fn a_checkout_that_cannot_be_resolved_releases_its_reservation() {
    let (coordinator, provider, clock) = (CountingCoordinator::new(), Numbered::default(), ManualClock::new(0));
    let pool = RunnerPool::new(&coordinator, &provider, &clock, RunnerPoolConfig::default());
    block_on(async {
        let error = pool
            .acquire_with(&request(), "lease-t1", async || Err(RunnerError::Checkout("github: 502".into())))
            .await
            .unwrap_err();
        assert_eq!(error, RunnerError::Checkout("github: 502".into()));
        assert_eq!(coordinator.take(), ["try_acquire", "release"]);
        assert!(coordinator.inner().snapshot().is_empty());
        assert_eq!(provider.provisioned.get(), 0);
        // A resolved ref that is no ref is refused before provisioning, and released too.
        let error = pool
            .acquire_with(&request(), "lease-t1", async || Ok(("-x".to_owned(), CheckoutSource::PublicClone)))
            .await
            .unwrap_err();
        assert!(matches!(error, RunnerError::InvalidRequest { field: "gitRef", .. }), "{error}");
        assert!(coordinator.inner().snapshot().is_empty());
    });
}
