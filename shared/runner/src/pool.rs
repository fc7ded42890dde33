//! `RunnerPool`: quota-checked leases over one provider.

use agent_zero_ports::Clock;

use crate::checkout::{CheckoutSource, Provision};
use crate::coordinator::{Coordinator, CoordinatorError};
use crate::error::RunnerError;
use crate::provider::SandboxProvider;
use crate::request::{Lease, LeaseLimits, ProvisionedLease, RunnerPoolConfig, SandboxRequest};
use crate::runner::Runner;

/// What one expiry sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseSweep {
    /// Lease ids stopped and released.
    pub stopped: Vec<String>,
    /// Lease ids whose stop failed, with why; they stay held for the next sweep.
    pub failed: Vec<(String, String)>,
}

/// Owns leases: enforces the limits before provisioning, hands out bounded
/// [`Runner`]s, releases idempotently and sweeps expired leases.
#[derive(Debug)]
pub struct RunnerPool<'a, C, P, K> {
    coordinator: &'a C,
    provider: &'a P,
    clock: &'a K,
    config: RunnerPoolConfig,
}

impl<'a, C: Coordinator, P: SandboxProvider, K: Clock> RunnerPool<'a, C, P, K> {
    /// A pool over `provider`, counting leases in `coordinator`.
    pub fn new(coordinator: &'a C, provider: &'a P, clock: &'a K, config: RunnerPoolConfig) -> Self {
        Self { coordinator, provider, clock, config }
    }

    /// The limits in force.
    pub fn config(&self) -> RunnerPoolConfig {
        self.config
    }

    /// Reserves a lease under the quotas, then provisions its sandbox with
    /// the code from `source` (never recorded). `lease_id` comes from the
    /// caller (e.g. `lease-{taskId}`), so a redelivered tick asking again
    /// gets the same lease back, and the provider gets it as its
    /// idempotency key: a replay after a crash mid-provisioning finds the
    /// sandbox it made instead of making a second one.
    pub async fn acquire(
        &self,
        request: &SandboxRequest,
        lease_id: &str,
        source: &CheckoutSource,
    ) -> Result<Runner<'a, P>, RunnerError> {
        self.acquire_with(request, lease_id, async || Ok((request.git_ref.clone(), source.clone()))).await
    }

    /// [`Self::acquire`] with the checkout resolved only when a sandbox is
    /// to be provisioned: `resolve` answers the commit to check out (what
    /// the lease then records as its `git_ref`, `request.git_ref` being
    /// what was asked for) and its source. A replay of a provisioned lease
    /// is one coordinator request and never calls it; when it fails, the
    /// reservation is released.
    pub async fn acquire_with(
        &self,
        request: &SandboxRequest,
        lease_id: &str,
        resolve: impl AsyncFnOnce() -> Result<(String, CheckoutSource), RunnerError>,
    ) -> Result<Runner<'a, P>, RunnerError> {
        check_request(request, lease_id)?;
        let limits = LeaseLimits::from(self.config);
        let reservation = Lease::reserve(lease_id, request, self.provider.kind(), self.clock.now_ms());
        let acquired = self.coordinator.try_acquire(&reservation, &limits, self.clock.now_ms()).await??;
        if acquired.replayed && acquired.lease.external_id.is_some() {
            return Runner::new(self.provider, &acquired.lease, self.config.max_output_bytes);
        }
        let resolved = resolve().await.and_then(|(commit, source)| {
            let request = SandboxRequest { git_ref: commit, ..request.clone() };
            check_request(&request, lease_id).map(|()| (request, source))
        });
        let (request, source) = match resolved {
            Ok(resolved) => resolved,
            Err(error) => {
                self.coordinator.release(lease_id, None).await?;
                return Err(error);
            }
        };
        let provision = Provision {
            lease_id,
            writable: reservation.writable,
            source: &source,
            checkout_timeout_ms: Provision::checkout_bound(request.lease_ms),
        };
        let provisioned = match self.provider.provision(&request, &provision).await {
            Ok(provisioned) => provisioned,
            Err(error) => {
                self.coordinator.release(lease_id, None).await?;
                return Err(error.into());
            }
        };
        // The clock starts once the sandbox exists: slow provisioning must
        // not hand back a lease that is already expired.
        let started = self.clock.now_ms();
        let mut lease = reservation;
        lease.git_ref = request.git_ref;
        lease.acquired_at_ms = started;
        lease.expires_at_ms = started.saturating_add(request.lease_ms);
        lease.external_id = Some(provisioned.external_id.clone());
        lease.root = Some(provisioned.root);
        lease.isolated = provisioned.isolated;
        // The lease (and the evidence) record the network as enforced.
        lease.network = provisioned.network;
        match self.coordinator.update(&lease).await {
            Ok(()) => Runner::new(self.provider, &lease, self.config.max_output_bytes),
            Err(error) => {
                // Swept or released meanwhile: nobody holds quota for it.
                let _ = self.provider.stop(&provisioned.external_id).await;
                Err(match error {
                    CoordinatorError::UnknownLease(id) => RunnerError::UnknownLease(id),
                    other => other.into(),
                })
            }
        }
    }

    /// The runner of a lease acquired earlier (a later tick), as the
    /// coordinator holds it: one request.
    pub async fn attach(&self, lease_id: &str) -> Result<Runner<'a, P>, RunnerError> {
        let lease =
            self.coordinator.get(lease_id).await?.ok_or_else(|| RunnerError::UnknownLease(lease_id.to_owned()))?;
        if lease.is_expired(self.clock.now_ms()) {
            return Err(RunnerError::UnknownLease(lease_id.to_owned()));
        }
        Runner::new(self.provider, &lease, self.config.max_output_bytes)
    }

    /// The runner of a lease acquired earlier, from what its holder kept of
    /// it ([`Runner::lease`]), without asking the coordinator: past its
    /// ceiling it is gone (`UnknownLease`), as [`Self::attach`] answers.
    /// The sweep stops only leases past their ceiling and a holder releases
    /// only its own, so a lease within it is still held; a holder that
    /// sees its sandbox fail can ask [`Self::holds`] to tell a lease gone
    /// meanwhile from a failure.
    pub fn attach_provisioned(&self, lease: &ProvisionedLease) -> Result<Runner<'a, P>, RunnerError> {
        if lease.is_expired(self.clock.now_ms()) {
            return Err(RunnerError::UnknownLease(lease.id.clone()));
        }
        Ok(Runner::provisioned(self.provider, lease.clone(), self.config.max_output_bytes))
    }

    /// Whether the coordinator still holds `lease` with its sandbox, within
    /// its ceiling (one request).
    pub async fn holds(&self, lease: &ProvisionedLease) -> Result<bool, RunnerError> {
        let held = self.coordinator.get(&lease.id).await?;
        Ok(held.is_some_and(|held| {
            held.external_id.as_deref() == Some(lease.external_id.as_str()) && !held.is_expired(self.clock.now_ms())
        }))
    }

    /// Stops the sandbox and frees the quota. Releasing an unknown or
    /// already released lease returns `Ok(false)`. When the provider stop
    /// fails the lease stays held, so a retry or the sweep can stop it.
    pub async fn release(&self, lease_id: &str) -> Result<bool, RunnerError> {
        let Some(lease) = self.coordinator.get(lease_id).await? else {
            return Ok(false);
        };
        if let Some(external_id) = &lease.external_id {
            self.provider.stop(external_id).await?;
        }
        Ok(self.coordinator.release(lease_id, lease.external_id.as_deref()).await?.is_some())
    }

    /// [`Self::release`] from what the holder kept of the lease: its
    /// sandbox stopped, then the lease released only if it still holds that
    /// sandbox (one coordinator request). `Ok(false)` when it was released
    /// already, or a newer sandbox holds the id (left to its holder). When
    /// the stop fails nothing is released, as with [`Self::release`].
    pub async fn release_provisioned(&self, lease: &ProvisionedLease) -> Result<bool, RunnerError> {
        self.provider.stop(&lease.external_id).await?;
        Ok(self.coordinator.release(&lease.id, Some(&lease.external_id)).await?.is_some())
    }

    /// Stops every lease past its ceiling (cron on Cloudflare, the chosen
    /// trigger on Spin).
    pub async fn sweep(&self) -> Result<LeaseSweep, RunnerError> {
        let mut report = LeaseSweep::default();
        for lease in self.coordinator.expired(self.clock.now_ms()).await? {
            // The listing names each sandbox: no second read to stop it.
            let released = match ProvisionedLease::of(&lease) {
                Some(provisioned) => self.release_provisioned(&provisioned).await,
                None => self.release(&lease.id).await,
            };
            match released {
                Ok(_) => report.stopped.push(lease.id),
                Err(error) => report.failed.push((lease.id, error.to_string())),
            }
        }
        Ok(report)
    }
}

fn check_request(request: &SandboxRequest, lease_id: &str) -> Result<(), RunnerError> {
    let invalid = |field, reason: &str| Err(RunnerError::InvalidRequest { field, reason: reason.to_owned() });
    if lease_id.is_empty() {
        return invalid("leaseId", "must not be empty");
    }
    if request.task_id.is_empty() {
        return invalid("taskId", "must not be empty");
    }
    if !is_repository_name(&request.repository) {
        return invalid("repository", "must be `owner/name`");
    }
    if request.git_ref.is_empty() || request.git_ref.starts_with('-') || request.git_ref.contains(['\0', ' ', '\n']) {
        return invalid("gitRef", "must be a branch, tag or commit name");
    }
    Ok(())
}

/// `owner/name` with GitHub's characters only ([`agent_zero_contracts::RepoName`]).
pub fn is_repository_name(repository: &str) -> bool {
    agent_zero_contracts::RepoName::is_valid(repository)
}
