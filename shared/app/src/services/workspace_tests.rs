//! The workspace port over the runner pool: lost checkouts, and what each
//! step asks of the lease coordinator.

use std::cell::{Cell, RefCell};

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::{ManualClock, block_on};
use agent_zero_runner::{
    CountingCoordinator, Exec, ExecOutput, MemoryCoordinator, ProviderKind, Provision, Provisioned, SandboxRef,
};

use super::*;

#[test]
fn changed_files_from_patch_headers() {
    let patch = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/new dir/x.py b/new dir/x.py\nnew file mode 100644\n";
    assert_eq!(changed_files(patch), ["calc.py", "new dir/x.py"]);
    assert!(changed_files("").is_empty());
}

/// A sandbox that can lose its checkout, as a sleeping bridge sandbox
/// does; once stopped, it answers "not found", as the providers' HTTP APIs do.
#[derive(Default)]
struct Sleepy {
    provisioned: Cell<u32>,
    lost: Cell<bool>,
    stopped: RefCell<Vec<String>>,
}

impl Sleepy {
    fn alive(&self, sandbox: &SandboxRef) -> Result<(), ProviderError> {
        if self.stopped.borrow().contains(&sandbox.external_id) {
            let what = sandbox.external_id.clone();
            return Err(ProviderError::NotFound { provider: "cloudflare", operation: "exec", what });
        }
        Ok(())
    }
}

impl SandboxProvider for Sleepy {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Cloudflare
    }
    async fn provision(&self, request: &SandboxRequest, _: &Provision<'_>) -> Result<Provisioned, ProviderError> {
        self.provisioned.set(self.provisioned.get() + 1);
        self.lost.set(false);
        Ok(Provisioned {
            external_id: format!("sbx-{}", self.provisioned.get()),
            root: "/workspace/repo".into(),
            isolated: true,
            network: request.network,
        })
    }
    async fn exec(&self, sandbox: &SandboxRef, _: &Exec) -> Result<ExecOutput, ProviderError> {
        self.alive(sandbox)?;
        if self.lost.get() {
            return Err(ProviderError::CheckoutLost {
                provider: "cloudflare",
                operation: "run",
                reason: "slept".into(),
            });
        }
        // One answer for every script: a regular file, for each path asked about.
        Ok(ExecOutput { stdout: "f\n".into(), ..ExecOutput::default() })
    }
    async fn read_file(&self, sandbox: &SandboxRef, _: &str) -> Result<Vec<u8>, ProviderError> {
        self.alive(sandbox)?;
        Ok(Vec::new())
    }
    async fn write_file(&self, _: &SandboxRef, _: &str, _: &[u8]) -> Result<(), ProviderError> {
        Ok(())
    }
    async fn stop(&self, id: &str) -> Result<(), ProviderError> {
        self.stopped.borrow_mut().push(id.to_owned());
        Ok(())
    }
}

#[test]
fn a_lost_checkout_releases_the_lease_so_the_next_lease_is_a_fresh_sandbox() {
    let coordinator = MemoryCoordinator::new();
    let provider = Sleepy::default();
    let clock = ManualClock::new(1_000_000);
    let workspace =
        PoolWorkspace::new(&coordinator, Ok(&provider), &clock, Ok(RunnerPoolConfig::default()), "main".into());
    let request = LeaseRequest {
        task_id: "t-sleepy".into(),
        repository: "acme/app".into(),
        mode: RunMode::Fix,
        writable: true,
        network: NetworkPolicy::Full,
        lease_ms: 600_000,
        idempotency_key: "k".into(),
    };
    let checks = [vec!["cargo".to_owned(), "test".to_owned()]];
    block_on(async {
        let lease = workspace.lease(&request).await.unwrap();
        workspace.run(&lease, &checks, 5_000, "k").await.unwrap();
        // The sandbox slept: the check did not run, the lease is gone.
        provider.lost.set(true);
        let error = workspace.run(&lease, &checks, 5_000, "k").await.unwrap_err();
        assert!(matches!(error, WorkspaceError::LeaseGone(_)), "{error}");
        assert_eq!(provider.stopped.borrow().as_slice(), ["sbx-1"], "the dead sandbox is stopped");
        // Leasing again provisions a new sandbox instead of replaying the lost one.
        let again = workspace.lease(&request).await.unwrap();
        assert_eq!((again.id.as_str(), provider.provisioned.get()), (lease.id.as_str(), 2));
        workspace.run(&again, &checks, 5_000, "k").await.unwrap();
    });
}

/// A checkout that counts how often it was resolved (each a GitHub call).
#[derive(Default)]
struct CountedCheckout(Cell<u32>);

impl CheckoutPort for &CountedCheckout {
    async fn source(&self, _: &str, _: &str) -> Result<(String, CheckoutSource), String> {
        self.0.set(self.0.get() + 1);
        Ok(("0123456789abcdef0123456789abcdef01234567".into(), CheckoutSource::PublicClone))
    }
}

fn fix_request() -> LeaseRequest {
    LeaseRequest {
        task_id: "t-cost".into(),
        repository: "acme/app".into(),
        mode: RunMode::Fix,
        writable: true,
        network: NetworkPolicy::Restricted,
        lease_ms: 600_000,
        idempotency_key: "k".into(),
    }
}

/// Every operation a fix run makes between its lease and its release.
async fn every_operation<W: Workspace>(workspace: &W, lease: &LeaseRecord) -> Result<(), WorkspaceError> {
    let checks = [vec!["make".to_owned(), "test".to_owned()]];
    let paths = ["calc.py".to_owned()];
    workspace.list_files(lease).await?;
    workspace.read_files(lease, &paths).await?;
    let change = ProposedChange { path: "calc.py".into(), content: "x = 1\n".into(), reason: "fix".into() };
    workspace.write_files(lease, &[change], "k").await?;
    workspace.run(lease, &checks, 5_000, "k").await?;
    workspace.file_modes(lease, &paths).await?;
    workspace.diff(lease).await?;
    Ok(())
}

#[test]
fn a_run_asks_the_lease_coordinator_three_times_lease_to_release() {
    let (coordinator, provider, clock) = (CountingCoordinator::new(), Sleepy::default(), ManualClock::new(1_000_000));
    let checkout = CountedCheckout::default();
    let workspace =
        PoolWorkspace::new(&coordinator, Ok(&provider), &clock, Ok(RunnerPoolConfig::default()), "main".into())
            .with_checkout(&checkout);
    block_on(async {
        let lease = workspace.lease(&fix_request()).await.unwrap();
        assert_eq!((coordinator.count(), checkout.0.get()), (2, 1), "reserve and record the sandbox");
        let sandbox = lease.sandbox.clone().expect("the record names its sandbox");
        assert_eq!((sandbox.external_id.as_str(), sandbox.root.as_str()), ("sbx-1", "/workspace/repo"));
        assert_eq!(sandbox.expires_at_ms, 1_600_000);
        for _ in 0..3 {
            clock.advance(10_000);
            every_operation(&workspace, &lease).await.unwrap();
        }
        assert_eq!(coordinator.count(), 2, "no operation asks the coordinator");
        // A redelivered lease tick: the reservation answers, with no checkout.
        assert_eq!(workspace.lease(&fix_request()).await.unwrap(), lease);
        assert_eq!((coordinator.count(), checkout.0.get()), (3, 1));
        workspace.release(&lease).await.unwrap();
        assert_eq!(coordinator.count(), 4, "the release is one request");
        assert_eq!(provider.stopped.borrow().as_slice(), ["sbx-1"]);
        assert!(coordinator.inner().snapshot().is_empty());
    });
}

#[test]
fn a_lease_swept_meanwhile_is_gone_and_the_next_lease_provisions_afresh() {
    let (coordinator, provider, clock) = (CountingCoordinator::new(), Sleepy::default(), ManualClock::new(1_000_000));
    let config = RunnerPoolConfig::default();
    let workspace = PoolWorkspace::new(&coordinator, Ok(&provider), &clock, Ok(config), "main".into());
    let checks = [vec!["make".to_owned()]];
    block_on(async {
        let lease = workspace.lease(&fix_request()).await.unwrap();
        clock.advance(600_000);
        let swept = RunnerPool::new(&coordinator, &provider, &clock, config).sweep().await.unwrap();
        assert_eq!(swept.stopped, ["lease-t-cost"]);
        let before = coordinator.count();
        // What attaching through the coordinator answered: the engine records
        // `lease-gone` and leases again.
        let error = workspace.run(&lease, &checks, 5_000, "k").await.unwrap_err();
        assert_eq!(error, WorkspaceError::LeaseGone("lease-t-cost".into()));
        assert_eq!(workspace.diff(&lease).await.unwrap_err(), error);
        assert_eq!(coordinator.count(), before, "the ceiling is checked from the record");
        let again = workspace.lease(&fix_request()).await.unwrap();
        assert_eq!(again.sandbox.map(|s| s.external_id).as_deref(), Some("sbx-2"));
    });
}

#[test]
fn a_lease_released_meanwhile_within_its_ceiling_is_gone_not_a_failure() {
    let (coordinator, provider, clock) = (CountingCoordinator::new(), Sleepy::default(), ManualClock::new(1_000_000));
    let config = RunnerPoolConfig::default();
    let workspace = PoolWorkspace::new(&coordinator, Ok(&provider), &clock, Ok(config), "main".into());
    let checks = [vec!["make".to_owned()]];
    block_on(async {
        let lease = workspace.lease(&fix_request()).await.unwrap();
        // Released by someone else (its sandbox stopped), well within the ceiling.
        assert!(RunnerPool::new(&coordinator, &provider, &clock, config).release("lease-t-cost").await.unwrap());
        let gone = WorkspaceError::LeaseGone("lease-t-cost".into());
        // The stopped sandbox's "not found" is checked against the coordinator.
        let error = workspace.run(&lease, &checks, 5_000, "k").await.unwrap_err();
        assert!(matches!(&error, WorkspaceError::LeaseGone(why) if why.starts_with("lease-t-cost (")), "{error}");
        // A file the stopped sandbox calls absent is not reported absent.
        assert_eq!(workspace.read_files(&lease, &["calc.py".to_owned()]).await.unwrap_err(), gone);
        // Held again under the same id (a newer sandbox): the old record stays gone.
        let again = workspace.lease(&fix_request()).await.unwrap();
        assert!(matches!(workspace.list_files(&lease).await, Err(WorkspaceError::LeaseGone(_))));
        // Releasing from the old record leaves the newer lease held.
        workspace.release(&lease).await.unwrap();
        assert_eq!(coordinator.inner().snapshot().len(), 1);
        every_operation(&workspace, &again).await.unwrap();
    });
}

#[test]
fn a_record_written_before_it_attaches_through_the_coordinator() {
    let (coordinator, provider, clock) = (CountingCoordinator::new(), Sleepy::default(), ManualClock::new(1_000_000));
    let workspace =
        PoolWorkspace::new(&coordinator, Ok(&provider), &clock, Ok(RunnerPoolConfig::default()), "main".into());
    block_on(async {
        workspace.lease(&fix_request()).await.unwrap();
        // The record as older code wrote it to the log: no sandbox.
        let old = r#"{"id":"lease-t-cost","runner":{"provider":"cloudflare","isolated":true,"writable":true,"network":"restricted"}}"#;
        let lease: LeaseRecord = serde_json::from_str(old).unwrap();
        assert_eq!(lease.sandbox, None);
        let before = coordinator.count();
        every_operation(&workspace, &lease).await.unwrap();
        assert_eq!(coordinator.count() - before, 6, "one coordinator read per operation, as before");
        workspace.release(&lease).await.unwrap();
        assert_eq!(coordinator.count() - before, 8, "a read and the release");
        assert_eq!(provider.stopped.borrow().as_slice(), ["sbx-1"]);
        assert!(coordinator.inner().snapshot().is_empty());
        // Gone afterwards, as before.
        let error = workspace.list_files(&lease).await.unwrap_err();
        assert_eq!(error, WorkspaceError::LeaseGone("lease-t-cost".into()));
    });
}

#[test]
fn a_lease_refused_for_quota_resolves_no_checkout() {
    let (coordinator, provider, clock) = (CountingCoordinator::new(), Sleepy::default(), ManualClock::new(1_000_000));
    let checkout = CountedCheckout::default();
    let config = RunnerPoolConfig { max_active_per_repository: 1, ..RunnerPoolConfig::default() };
    let workspace =
        PoolWorkspace::new(&coordinator, Ok(&provider), &clock, Ok(config), "main".into()).with_checkout(&checkout);
    block_on(async {
        workspace.lease(&fix_request()).await.unwrap();
        let other = LeaseRequest { task_id: "t-other".into(), ..fix_request() };
        let error = workspace.lease(&other).await.unwrap_err();
        // The pool's bound is the run bound: the task waits, told which.
        assert!(
            matches!(&error, WorkspaceError::Full(bound) if bound.contains("AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY")),
            "{error}"
        );
        // One request, and GitHub is not asked for a checkout it cannot use.
        assert_eq!((coordinator.count(), checkout.0.get()), (3, 1));
    });
}
