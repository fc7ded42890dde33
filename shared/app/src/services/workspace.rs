//! `runtime::Workspace` over the runner pool: every repository operation
//! goes through a lease of the configured sandbox provider, whose code
//! comes from the edge's own GitHub access (`GitHubCheckout`): the tarball
//! of the exact commit behind a short-lived link, handed to the provider
//! apart from the recorded request. The sandbox never sees a GitHub
//! credential.

use agent_zero_contracts::{CheckResult, ProposedChange};
use agent_zero_github::Rs256Signer;
use agent_zero_ports::{Clock, HttpClient};
use agent_zero_runner::{
    CheckoutSource, Command, Coordinator, ProviderError, Runner, RunnerError, RunnerPool, RunnerPoolConfig,
    SandboxProvider, SandboxRequest,
};
use agent_zero_runtime::{Diff, Lease, LeaseRequest, Workspace, WorkspaceError};

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
    pub(crate) config: &'a Settings,
    pub(crate) http: &'a H,
    pub(crate) signer: &'a S,
    pub(crate) installation: Option<u64>,
    pub(crate) now_ms: u64,
}

impl<H: HttpClient, S: Rs256Signer> CheckoutPort for GitHubCheckout<'_, H, S> {
    async fn source(&self, repository: &str, git_ref: &str) -> Result<(String, CheckoutSource), String> {
        let failed = |e: &dyn std::fmt::Display| format!("checkout of `{repository}`: {e}");
        let github = self.config.github().map_err(|e| failed(&e.message))?;
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
        Ok((commit.clone(), CheckoutSource::Archive { url, commit }))
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

impl<C: Coordinator, P: SandboxProvider, K: Clock, G: CheckoutPort> Workspace for PoolWorkspace<'_, C, P, K, G> {
    async fn lease(&self, request: &LeaseRequest) -> Result<Lease, WorkspaceError> {
        let pool = self.pool()?;
        let id = lease_id(&request.task_id);
        // A replay of a provisioned lease needs no second checkout.
        if let Ok(runner) = pool.attach(&id).await {
            return Ok(Lease { id: runner.lease().id.clone(), runner: runner.describe() });
        }
        let (commit, source) =
            self.checkout.source(&request.repository, &self.git_ref).await.map_err(WorkspaceError::Failed)?;
        // The operator's ceiling bounds the lease; the repository cannot raise it.
        let lease_ms = request.lease_ms.min(pool.config().max_lease_ms);
        let sandbox = SandboxRequest::new(
            &request.task_id,
            &request.repository,
            commit,
            request.mode,
            request.writable,
            request.network,
            lease_ms,
        );
        let runner = pool.acquire(&sandbox, &id, &source).await.map_err(error)?;
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

    async fn file_modes(
        &self,
        lease: &Lease,
        paths: &[String],
    ) -> Result<Vec<(String, Option<String>)>, WorkspaceError> {
        let modes = self.attach(lease).await?.file_modes(paths).await.map_err(error)?;
        Ok(paths.iter().cloned().zip(modes.into_iter().map(|m| m.map(|m| m.as_git().to_owned()))).collect())
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
