//! The provider port: what every hosted sandbox adapter implements.
//!
//! Credentials are constructor state of an adapter ([`Secret`]); nothing in
//! these types carries one, and adapters scrub their secrets from any text
//! they turn into an error.

use std::collections::BTreeMap;

pub use agent_zero_ports::Secret;
use agent_zero_ports::HttpError;
use thiserror::Error;

use crate::request::{ProviderKind, SandboxRequest};

/// A provisioned sandbox, as the provider reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provisioned {
    pub external_id: String,
    /// Checkout root inside the sandbox; `""` when paths are checkout-relative.
    pub root: String,
    /// Whether commands run inside an isolated boundary.
    pub isolated: bool,
}

/// Which sandbox an operation addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxRef {
    pub external_id: String,
    pub root: String,
}

impl SandboxRef {
    /// `relative` (already validated) under the checkout root.
    pub fn path(&self, relative: &str) -> String {
        match (self.root.is_empty(), relative.is_empty()) {
            (true, _) => relative.to_owned(),
            (false, true) => self.root.clone(),
            (false, false) => format!("{}/{}", self.root.trim_end_matches('/'), relative),
        }
    }
}

/// One command, already validated by the `Runner`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    pub argv: Vec<String>,
    /// Checkout-relative working directory (`""` is the checkout root).
    pub cwd: String,
    pub timeout_ms: u64,
    pub max_output_bytes: u64,
    /// Extra environment, already filtered by the runner's allowlist.
    pub env: BTreeMap<String, String>,
}

/// What a command produced, before the runner's own cap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    pub duration_ms: u64,
    /// Bytes the provider already dropped.
    pub truncated_bytes: u64,
    pub timed_out: bool,
}

/// Why a provider operation failed. Messages are scrubbed of credentials.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// No response (transport, host refusal, timeout).
    #[error("{provider} {operation}: {source}")]
    Http { provider: &'static str, operation: &'static str, source: HttpError },
    /// The provider answered with an error status.
    #[error("{provider} {operation} answered {status}: {message}")]
    Status { provider: &'static str, operation: &'static str, status: u16, message: String },
    /// The provider's answer did not have the documented shape.
    #[error("{provider} {operation}: unexpected response: {reason}")]
    Protocol { provider: &'static str, operation: &'static str, reason: String },
    /// The file or sandbox does not exist.
    #[error("{provider} {operation}: `{what}` not found")]
    NotFound { provider: &'static str, operation: &'static str, what: String },
    /// The adapter cannot do this (e.g. a read-only lease was asked to write).
    #[error("{provider} {operation}: {reason}")]
    Refused { provider: &'static str, operation: &'static str, reason: String },
}

/// A hosted sandbox. Implementations live in [`crate::providers`].
pub trait SandboxProvider {
    /// Which provider this is (recorded in evidence).
    fn kind(&self) -> ProviderKind;
    /// Creates a sandbox with `request.repository` at `request.git_ref`
    /// checked out, honouring `writable` (already policy-checked) and `network`.
    async fn provision(&self, request: &SandboxRequest, writable: bool) -> Result<Provisioned, ProviderError>;
    /// Runs one argv inside the checkout.
    async fn exec(&self, sandbox: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError>;
    /// Reads a checkout-relative file.
    async fn read_file(&self, sandbox: &SandboxRef, path: &str) -> Result<Vec<u8>, ProviderError>;
    /// Writes a checkout-relative file, creating parent directories.
    async fn write_file(&self, sandbox: &SandboxRef, path: &str, content: &[u8]) -> Result<(), ProviderError>;
    /// Tracked and untracked (not ignored) files of the checkout.
    async fn list_files(&self, sandbox: &SandboxRef) -> Result<Vec<String>, ProviderError> {
        let exec = fixed_git(&["ls-files", "-z", "--cached", "--others", "--exclude-standard"]);
        let out = self.exec(sandbox, &exec).await?;
        git_ok(self.kind(), "list files", &out)?;
        Ok(out.stdout.split('\0').filter(|s| !s.is_empty()).map(str::to_owned).collect())
    }
    /// `git diff` of the checkout, new files included.
    async fn diff(&self, sandbox: &SandboxRef) -> Result<String, ProviderError> {
        let _ = self.exec(sandbox, &fixed_git(&["add", "--intent-to-add", "--all"])).await?;
        let out = self.exec(sandbox, &fixed_git(&["diff", "--no-ext-diff", "--no-color"])).await?;
        git_ok(self.kind(), "diff", &out)?;
        Ok(out.stdout)
    }
    /// Destroys the sandbox; stopping one that is already gone is success.
    async fn stop(&self, external_id: &str) -> Result<(), ProviderError>;
}

/// A git invocation whose argv is fixed by this crate.
pub(crate) fn fixed_git(args: &[&str]) -> Exec {
    let mut argv = vec!["git".to_owned()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    Exec { argv, cwd: String::new(), timeout_ms: 30_000, max_output_bytes: 4_000_000, env: BTreeMap::new() }
}

fn git_ok(kind: ProviderKind, operation: &'static str, out: &ExecOutput) -> Result<(), ProviderError> {
    if out.exit_code == 0 {
        return Ok(());
    }
    Err(ProviderError::Protocol {
        provider: kind.as_str(),
        operation,
        reason: format!("git exited {}: {}", out.exit_code, out.stderr.chars().take(300).collect::<String>()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints() {
        let secret = Secret::new("tok-123");
        assert_eq!(format!("{secret:?}"), "Secret([redacted])");
        assert_eq!(secret.scrub("bad tok-123 here"), "bad [redacted] here");
        let sandbox = SandboxRef { external_id: "x".into(), root: "/workspace/repo/".into() };
        assert_eq!(sandbox.path("src/a.rs"), "/workspace/repo/src/a.rs");
        assert_eq!(sandbox.path(""), "/workspace/repo/");
    }
}

/// Clones `repository` at `git_ref` into `root` with git argv fixed by this
/// crate, for providers whose create call cannot check out a repository.
pub(crate) async fn clone_checkout<P: SandboxProvider + ?Sized>(
    provider: &P,
    external_id: &str,
    root: &str,
    repository: &str,
    git_ref: &str,
) -> Result<(), ProviderError> {
    let outside = SandboxRef { external_id: external_id.to_owned(), root: String::new() };
    let url = format!("https://github.com/{repository}.git");
    let clone = fixed_git(&["clone", "--quiet", "--no-checkout", "--", &url, root]);
    let out = provider.exec(&outside, &clone).await?;
    git_ok(provider.kind(), "clone", &out)?;
    let checkout = fixed_git(&["-C", root, "checkout", "--quiet", "--detach", git_ref, "--"]);
    let out = provider.exec(&outside, &checkout).await?;
    git_ok(provider.kind(), "checkout", &out)
}
