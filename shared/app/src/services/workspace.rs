//! `runtime::Workspace` over the runner pool: every repository operation
//! goes through a lease of the configured sandbox provider.

use agent_zero_contracts::{CheckResult, ProposedChange};
use agent_zero_ports::Clock;
use agent_zero_runner::{
    Command, Coordinator, ProviderError, Runner, RunnerError, RunnerPool, RunnerPoolConfig, SandboxProvider,
    SandboxRequest,
};
use agent_zero_runtime::{Diff, Lease, LeaseRequest, Workspace, WorkspaceError};

/// The sandbox port of one tick. `pool` is `Err` when no provider is
/// configured: every call then fails with that reason (recorded as a fact).
pub(crate) struct PoolWorkspace<'a, C, P, K> {
    pool: Result<RunnerPool<'a, C, P, K>, String>,
    /// What to check out: the pull request head, else the default branch.
    git_ref: String,
}

impl<'a, C: Coordinator, P: SandboxProvider, K: Clock> PoolWorkspace<'a, C, P, K> {
    pub(crate) fn new(
        coordinator: &'a C,
        provider: Result<&'a P, String>,
        clock: &'a K,
        config: RunnerPoolConfig,
        git_ref: String,
    ) -> Self {
        let pool = provider.map(|p| RunnerPool::new(coordinator, p, clock, config));
        Self { pool, git_ref }
    }

    fn pool(&self) -> Result<&RunnerPool<'a, C, P, K>, WorkspaceError> {
        self.pool.as_ref().map_err(|e| WorkspaceError::Failed(e.clone()))
    }

    async fn attach(&self, lease: &Lease) -> Result<Runner<'a, P>, WorkspaceError> {
        self.pool()?.attach(&lease.id).await.map_err(error)
    }
}

fn error(e: RunnerError) -> WorkspaceError {
    match e {
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

impl<C: Coordinator, P: SandboxProvider, K: Clock> Workspace for PoolWorkspace<'_, C, P, K> {
    async fn lease(&self, request: &LeaseRequest) -> Result<Lease, WorkspaceError> {
        let sandbox = SandboxRequest::new(
            &request.task_id,
            &request.repository,
            &self.git_ref,
            request.mode,
            request.writable,
            request.network,
            request.lease_ms,
        );
        let runner = self.pool()?.acquire(&sandbox, &lease_id(&request.task_id)).await.map_err(error)?;
        Ok(Lease { id: runner.lease().id.clone(), runner: runner.describe() })
    }

    async fn list_files(&self, lease: &Lease) -> Result<Vec<String>, WorkspaceError> {
        self.attach(lease).await?.list_files().await.map_err(error)
    }

    async fn read_files(
        &self,
        lease: &Lease,
        paths: &[String],
    ) -> Result<Vec<(String, Option<String>)>, WorkspaceError> {
        let runner = self.attach(lease).await?;
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            match runner.read_file(path).await {
                Ok(text) => out.push((path.clone(), Some(text))),
                Err(RunnerError::Provider(ProviderError::NotFound { .. }))
                | Err(RunnerError::PathOutsideCheckout { .. }) => out.push((path.clone(), None)),
                Err(e) => return Err(error(e)),
            }
        }
        Ok(out)
    }

    async fn write_files(
        &self,
        lease: &Lease,
        changes: &[ProposedChange],
        _idempotency_key: &str,
    ) -> Result<(), WorkspaceError> {
        // Full-content writes are idempotent: a replay writes the same bytes.
        let runner = self.attach(lease).await?;
        for change in changes {
            runner.write_file(&change.path, &change.content).await.map_err(error)?;
        }
        Ok(())
    }

    async fn run(
        &self,
        lease: &Lease,
        commands: &[Vec<String>],
        timeout_ms: u64,
        _idempotency_key: &str,
    ) -> Result<Vec<CheckResult>, WorkspaceError> {
        let runner = self.attach(lease).await?;
        let mut results = Vec::with_capacity(commands.len());
        for argv in commands {
            results.push(runner.run(&Command::new(argv.clone(), timeout_ms)).await.map_err(error)?);
        }
        Ok(results)
    }

    async fn diff(&self, lease: &Lease) -> Result<Diff, WorkspaceError> {
        let patch = self.attach(lease).await?.diff().await.map_err(error)?;
        Ok(Diff { changed_files: changed_files(&patch), patch })
    }

    async fn release(&self, lease: &Lease) -> Result<(), WorkspaceError> {
        self.pool()?.release(&lease.id).await.map(|_| ()).map_err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::changed_files;

    #[test]
    fn changed_files_from_patch_headers() {
        let patch = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/new dir/x.py b/new dir/x.py\nnew file mode 100644\n";
        assert_eq!(changed_files(patch), ["calc.py", "new dir/x.py"]);
        assert!(changed_files("").is_empty());
    }
}
