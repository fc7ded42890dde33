//! `runtime::Workspace` over the runner pool: every repository operation
//! goes through a lease of the configured sandbox provider, whose code
//! comes from the edge's own GitHub access (`GitHubCheckout`): the tarball
//! of the exact commit behind a short-lived link, handed to the provider
//! apart from the recorded request. The sandbox never sees a GitHub
//! credential.

use agent_zero_contracts::{CheckResult, ProposedChange};
use agent_zero_engine::{ChecksPoll, Diff, LeaseRecord, LeaseRequest, LeasedSandbox, Workspace, WorkspaceError};
use agent_zero_github::Rs256Signer;
use agent_zero_ports::{Clock, HttpClient};
use agent_zero_runner::{
    CheckoutSource, Command, Coordinator, ProviderError, ProviderKind, ProvisionedLease, QuotaError, Runner,
    RunnerError, RunnerPool, RunnerPoolConfig, SandboxProvider, SandboxRequest,
};

use crate::Settings;

/// Where a lease's code comes from: the commit to check out and how.
pub(crate) trait CheckoutPort {
    /// `git_ref` of `repository` resolved to what the sandbox gets.
    async fn source(&self, repository: &str, git_ref: &str) -> Result<(String, CheckoutSource), String>;
}

/// No GitHub access: an anonymous clone of a public repository.
pub(crate) struct PublicCheckout;

impl CheckoutPort for PublicCheckout {
    async fn source(&self, _: &str, git_ref: &str) -> Result<(String, CheckoutSource), String> {
        Ok((git_ref.to_owned(), CheckoutSource::PublicClone))
    }
}

/// The edge's GitHub access (`GITHUB_TOKEN` or the App's installation
/// token, `GITHUB_API_URL` for GitHub Enterprise Server): resolves the ref
/// to its commit and asks for that commit's archive link. Without
/// configured credentials, a public clone.
pub(crate) struct GitHubCheckout<'a, H, S> {
    pub(crate) settings: &'a Settings,
    pub(crate) http: &'a H,
    pub(crate) signer: &'a S,
    pub(crate) installation: Option<u64>,
    pub(crate) now_ms: u64,
}

impl<H: HttpClient, S: Rs256Signer> CheckoutPort for GitHubCheckout<'_, H, S> {
    async fn source(&self, repository: &str, git_ref: &str) -> Result<(String, CheckoutSource), String> {
        let failed = |e: &dyn std::fmt::Display| format!("checkout of `{repository}`: {e}");
        let github = self.settings.github().map_err(|e| failed(&e.message))?;
        if github.credentials.is_none() {
            return PublicCheckout.source(repository, git_ref).await;
        }
        let (owner, name) = repository.split_once('/').ok_or_else(|| failed(&"not `owner/name`"))?;
        let client =
            github.client(self.http, self.signer, self.installation, self.now_ms).await.map_err(|e| failed(&e))?;
        let commit = if is_commit_sha(git_ref) {
            git_ref.to_ascii_lowercase()
        } else {
            let branch = match git_ref {
                "HEAD" => client.repository(owner, name).await.map_err(|e| failed(&e))?.default_branch,
                other => other.to_owned(),
            };
            client.branch_head(owner, name, &branch).await.map_err(|e| failed(&e))?
        };
        let url = client.archive_link(owner, name, &commit).await.map_err(|e| failed(&e))?;
        Ok((commit.clone(), CheckoutSource::Archive { url, commit, authorization: None }))
    }
}

fn is_commit_sha(git_ref: &str) -> bool {
    agent_zero_contracts::Sha::is_valid(git_ref)
}

/// The sandbox port of one tick. `pool` is `Err` when no provider is
/// configured or the pool settings are malformed: every call then fails
/// with that reason (recorded as a fact).
pub(crate) struct PoolWorkspace<'a, C, P, K, G = PublicCheckout> {
    pool: Result<RunnerPool<'a, C, P, K>, String>,
    /// What to check out: the pull request head, else the default branch.
    git_ref: String,
    checkout: G,
}

impl<'a, C: Coordinator, P: SandboxProvider, K: Clock> PoolWorkspace<'a, C, P, K> {
    pub(crate) fn new(
        coordinator: &'a C,
        provider: Result<&'a P, String>,
        clock: &'a K,
        config: Result<RunnerPoolConfig, String>,
        git_ref: String,
    ) -> Self {
        let pool = provider.and_then(|p| config.map(|config| RunnerPool::new(coordinator, p, clock, config)));
        Self { pool, git_ref, checkout: PublicCheckout }
    }
}

impl<'a, C: Coordinator, P: SandboxProvider, K: Clock, G: CheckoutPort> PoolWorkspace<'a, C, P, K, G> {
    /// The same workspace, its code coming from `checkout`.
    pub(crate) fn with_checkout<G2: CheckoutPort>(self, checkout: G2) -> PoolWorkspace<'a, C, P, K, G2> {
        PoolWorkspace { pool: self.pool, git_ref: self.git_ref, checkout }
    }

    fn pool(&self) -> Result<&RunnerPool<'a, C, P, K>, WorkspaceError> {
        self.pool.as_ref().map_err(|e| WorkspaceError::Failed(e.clone()))
    }

    /// The runner of `lease`: from the record when it has the sandbox (no
    /// coordinator request; its ceiling checked against the clock), else
    /// (a record written by older code) as the coordinator holds it.
    async fn attach(&self, lease: &LeaseRecord) -> Result<Runner<'a, P>, WorkspaceError> {
        let pool = self.pool()?;
        match provisioned(lease) {
            Some(recorded) => pool.attach_provisioned(&recorded).map_err(error),
            None => pool.attach(&lease.id).await.map_err(error),
        }
    }

    /// `e` as the runtime's error; a sandbox that lost its checkout (a
    /// bridge sandbox that slept) is released first, so the lease the
    /// runtime takes again is provisioned afresh and the changes rewritten.
    /// A provider failure on a runner attached from the record is checked
    /// against the coordinator (one request, on failures only): a lease
    /// released or swept meanwhile is gone, as attaching through the
    /// coordinator would have answered.
    async fn failed(&self, lease: &LeaseRecord, e: RunnerError) -> WorkspaceError {
        if matches!(e, RunnerError::Provider(ProviderError::CheckoutLost { .. })) {
            if let Ok(pool) = self.pool() {
                let _ = match provisioned(lease) {
                    Some(recorded) => pool.release_provisioned(&recorded).await,
                    None => pool.release(&lease.id).await,
                };
            }
            return WorkspaceError::LeaseGone(format!("{} ({e})", lease.id));
        }
        if matches!(e, RunnerError::Provider(_)) && !self.still_held(lease).await {
            return WorkspaceError::LeaseGone(format!("{} ({e})", lease.id));
        }
        error(e)
    }

    /// Whether what the sandbox answered can be trusted as the lease's: a
    /// lease attached through the coordinator was held when attached; one
    /// attached from its record is asked about (one request). A failed
    /// question answers `true`: the answer stands as it came.
    async fn still_held(&self, lease: &LeaseRecord) -> bool {
        match (self.pool(), provisioned(lease)) {
            (Ok(pool), Some(recorded)) => pool.holds(&recorded).await.unwrap_or(true),
            _ => true,
        }
    }
}

/// The record of a lease `runner` serves: with its sandbox, so later ticks
/// attach without the coordinator.
fn record<P: SandboxProvider>(runner: &Runner<'_, P>) -> LeaseRecord {
    let lease = runner.lease();
    LeaseRecord {
        id: lease.id.clone(),
        runner: runner.describe(),
        sandbox: Some(LeasedSandbox {
            external_id: lease.external_id.clone(),
            root: lease.root.clone(),
            expires_at_ms: lease.expires_at_ms,
        }),
    }
}

/// The lease a record describes, when it names its sandbox (records
/// written by older code do not) and a provider this build knows.
fn provisioned(lease: &LeaseRecord) -> Option<ProvisionedLease> {
    let sandbox = lease.sandbox.as_ref()?;
    Some(ProvisionedLease {
        id: lease.id.clone(),
        provider: ProviderKind::parse(&lease.runner.provider)?,
        writable: lease.runner.writable,
        network: lease.runner.network,
        isolated: lease.runner.isolated,
        external_id: sandbox.external_id.clone(),
        root: sandbox.root.clone(),
        expires_at_ms: sandbox.expires_at_ms,
    })
}

fn error(e: RunnerError) -> WorkspaceError {
    match e {
        // The pool's active leases are the run bounds: a full pool is a
        // wait in `queued`, named by the setting that bounds it.
        RunnerError::Quota(QuotaError::MaxActive { active, .. }) => WorkspaceError::Full(format!(
            "{active} tasks are running, as many as {} allows",
            super::sandbox::MAX_RUNNING
        )),
        RunnerError::Quota(QuotaError::MaxActivePerRepository { repository, active, .. }) => {
            WorkspaceError::Full(format!(
                "{active} task(s) of `{repository}` are running, as many as {} allows",
                super::sandbox::MAX_RUNNING_PER_REPOSITORY
            ))
        }
        RunnerError::Quota(q) => WorkspaceError::Refused(q.to_string()),
        RunnerError::UnknownLease(id) | RunnerError::NotProvisioned(id) => WorkspaceError::LeaseGone(id),
        other => WorkspaceError::Failed(other.to_string()),
    }
}

/// The lease id of a task: one sandbox per task, so a redelivered lease
/// tick replays the same lease instead of taking a second one.
fn lease_id(task_id: &str) -> String {
    format!("lease-{task_id}")
}

/// Paths named by `diff --git a/<path> b/<path>` headers.
fn changed_files(patch: &str) -> Vec<String> {
    let mut files: Vec<String> = patch
        .lines()
        .filter_map(|l| l.strip_prefix("diff --git a/"))
        .filter_map(|rest| rest.split_once(" b/").map(|(_, b)| b.to_owned()))
        .collect();
    files.dedup();
    files
}

impl<C: Coordinator, P: SandboxProvider, K: Clock, G: CheckoutPort> Workspace for PoolWorkspace<'_, C, P, K, G> {
    async fn lease(&self, request: &LeaseRequest) -> Result<LeaseRecord, WorkspaceError> {
        let pool = self.pool()?;
        let id = lease_id(&request.task_id);
        // The operator's ceiling bounds the lease; the repository cannot raise it.
        let lease_ms = request.lease_ms.min(pool.config().max_lease_ms);
        let sandbox = SandboxRequest::new(
            &request.task_id,
            &request.repository,
            &self.git_ref,
            request.mode,
            request.writable,
            request.network,
            lease_ms,
        );
        // A replay of a provisioned lease is answered by the reservation
        // itself and needs no checkout: the source is resolved only to
        // provision.
        let resolve =
            async || self.checkout.source(&request.repository, &self.git_ref).await.map_err(RunnerError::Checkout);
        let runner = pool.acquire_with(&sandbox, &id, resolve).await.map_err(error)?;
        Ok(record(&runner))
    }

    async fn list_files(&self, lease: &LeaseRecord) -> Result<Vec<String>, WorkspaceError> {
        match self.attach(lease).await?.list_files().await {
            Ok(files) => Ok(files),
            Err(e) => Err(self.failed(lease, e).await),
        }
    }

    async fn read_files(
        &self,
        lease: &LeaseRecord,
        paths: &[String],
    ) -> Result<Vec<(String, Option<String>)>, WorkspaceError> {
        let runner = self.attach(lease).await?;
        let mut out = Vec::with_capacity(paths.len());
        let mut not_found = false;
        for path in paths {
            match runner.read_file(path).await {
                Ok(text) => out.push((path.clone(), Some(text))),
                Err(RunnerError::Provider(ProviderError::NotFound { .. })) => {
                    not_found = true;
                    out.push((path.clone(), None));
                }
                Err(RunnerError::PathOutsideCheckout { .. }) => out.push((path.clone(), None)),
                Err(e) => return Err(self.failed(lease, e).await),
            }
        }
        // A stopped sandbox answers "not found" too: an absent file is
        // reported only while the lease is held.
        if not_found && !self.still_held(lease).await {
            return Err(WorkspaceError::LeaseGone(lease.id.clone()));
        }
        Ok(out)
    }

    async fn file_modes(
        &self,
        lease: &LeaseRecord,
        paths: &[String],
    ) -> Result<Vec<(String, Option<String>)>, WorkspaceError> {
        let modes = match self.attach(lease).await?.file_modes(paths).await {
            Ok(modes) => modes,
            Err(e) => return Err(self.failed(lease, e).await),
        };
        Ok(paths.iter().cloned().zip(modes.into_iter().map(|m| m.map(|m| m.as_git().to_owned()))).collect())
    }

    async fn write_files(
        &self,
        lease: &LeaseRecord,
        changes: &[ProposedChange],
        _idempotency_key: &str,
    ) -> Result<(), WorkspaceError> {
        // Full-content writes are idempotent: a replay writes the same bytes.
        let runner = self.attach(lease).await?;
        for change in changes {
            if let Err(e) = runner.write_file(&change.path, &change.content).await {
                return Err(self.failed(lease, e).await);
            }
        }
        Ok(())
    }

    async fn run(
        &self,
        lease: &LeaseRecord,
        commands: &[Vec<String>],
        timeout_ms: u64,
        _idempotency_key: &str,
    ) -> Result<Vec<CheckResult>, WorkspaceError> {
        let runner = self.attach(lease).await?;
        let mut results = Vec::with_capacity(commands.len());
        for argv in commands {
            match runner.run(&Command::new(argv.clone(), timeout_ms)).await {
                Ok(result) => results.push(result),
                Err(e) => return Err(self.failed(lease, e).await),
            }
        }
        Ok(results)
    }

    async fn start_checks(
        &self,
        lease: &LeaseRecord,
        commands: &[Vec<String>],
        timeout_ms: u64,
        job: &str,
    ) -> Result<(), WorkspaceError> {
        let runner = self.attach(lease).await?;
        let commands: Vec<Command> = commands.iter().map(|argv| Command::new(argv.clone(), timeout_ms)).collect();
        match runner.start_checks(job, &commands).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failed(lease, e).await),
        }
    }

    async fn poll_checks(
        &self,
        lease: &LeaseRecord,
        commands: &[Vec<String>],
        timeout_ms: u64,
        job: &str,
    ) -> Result<ChecksPoll, WorkspaceError> {
        let runner = self.attach(lease).await?;
        let commands: Vec<Command> = commands.iter().map(|argv| Command::new(argv.clone(), timeout_ms)).collect();
        match runner.poll_checks(job, &commands).await {
            Ok(agent_zero_runner::ChecksPoll::Running) => Ok(ChecksPoll::Running),
            Ok(agent_zero_runner::ChecksPoll::Done(results)) => Ok(ChecksPoll::Done(results)),
            Ok(agent_zero_runner::ChecksPoll::Lost(_)) if !self.still_held(lease).await => {
                Err(WorkspaceError::LeaseGone(lease.id.clone()))
            }
            Ok(agent_zero_runner::ChecksPoll::Lost(reason)) => Ok(ChecksPoll::Lost(reason)),
            Err(e) => Err(self.failed(lease, e).await),
        }
    }

    async fn diff(&self, lease: &LeaseRecord) -> Result<Diff, WorkspaceError> {
        let patch = match self.attach(lease).await?.diff().await {
            Ok(patch) => patch,
            Err(e) => return Err(self.failed(lease, e).await),
        };
        Ok(Diff { changed_files: changed_files(&patch), patch })
    }

    async fn release(&self, lease: &LeaseRecord) -> Result<(), WorkspaceError> {
        let pool = self.pool()?;
        let released = match provisioned(lease) {
            Some(recorded) => pool.release_provisioned(&recorded).await,
            None => pool.release(&lease.id).await,
        };
        released.map(|_| ()).map_err(error)
    }
}

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;
