//! The provider port: what every hosted sandbox adapter implements.
//!
//! Credentials are constructor state of an adapter ([`agent_zero_ports::Secret`]); nothing in
//! these types carries one, and adapters scrub their secrets from any text
//! they turn into an error.

use std::collections::BTreeMap;

use agent_zero_ports::HttpError;
use thiserror::Error;

pub use self::jobs::JobPoll;
use crate::checkout::Provision;
use crate::request::{ProviderKind, SandboxRequest};

pub(crate) mod jobs;

/// A provisioned sandbox, as the provider reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provisioned {
    pub external_id: String,
    /// Checkout root inside the sandbox; `""` when paths are checkout-relative.
    pub root: String,
    /// Whether commands run inside an isolated boundary.
    pub isolated: bool,
    /// The network policy the provider enforces (not the one asked for):
    /// what the evidence reports.
    pub network: agent_zero_contracts::NetworkPolicy,
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

/// A checkout file as Git records it: what a published tree entry's mode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileMode {
    /// `100644`.
    Regular,
    /// `100755`: the owner's executable bit is set.
    Executable,
    /// `120000`: never published (its content would be the link target).
    Symlink,
}

impl FileMode {
    /// The Git tree mode.
    pub fn as_git(self) -> &'static str {
        match self {
            Self::Regular => "100644",
            Self::Executable => "100755",
            Self::Symlink => "120000",
        }
    }

    /// A Git tree mode as this crate names it.
    pub fn from_git(mode: &str) -> Option<Self> {
        [Self::Regular, Self::Executable, Self::Symlink].into_iter().find(|m| m.as_git() == mode)
    }
}

/// The fixed script that reports one mode letter per positional argument
/// (`l` symlink, `x` executable file, `f` file, `-` absent): paths are
/// arguments, never script text.
const MODES_SCRIPT: &str = r#"for f do if [ -L "$f" ]; then echo l; elif [ -f "$f" ] && [ -x "$f" ]; then echo x; elif [ -f "$f" ]; then echo f; else echo -; fi; done"#;

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
    /// The sandbox no longer holds the checkout it was provisioned with
    /// (it slept and restarted empty): the lease is lost, and a new one
    /// must be provisioned and the changes written again.
    #[error("{provider} {operation}: the sandbox lost its checkout ({reason})")]
    CheckoutLost { provider: &'static str, operation: &'static str, reason: String },
}

/// A hosted sandbox. Implementations live in [`crate::providers`].
pub trait SandboxProvider {
    /// Which provider this is (recorded in evidence).
    fn kind(&self) -> ProviderKind;
    /// Creates a sandbox with `request.repository` at `request.git_ref`
    /// checked out from `provision.source`, honouring `provision.writable`
    /// (already policy-checked) and `request.network`, tagged with
    /// `provision.lease_id` (a replay with the same lease id finds the
    /// sandbox it made where the provider can look it up).
    async fn provision(
        &self,
        request: &SandboxRequest,
        provision: &Provision<'_>,
    ) -> Result<Provisioned, ProviderError>;
    /// Runs one argv inside the checkout.
    async fn exec(&self, sandbox: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError>;
    /// Reads a checkout-relative file.
    async fn read_file(&self, sandbox: &SandboxRef, path: &str) -> Result<Vec<u8>, ProviderError>;
    /// Writes a checkout-relative file, creating parent directories.
    async fn write_file(&self, sandbox: &SandboxRef, path: &str, content: &[u8]) -> Result<(), ProviderError>;
    /// Whether [`Self::write_file`] over an existing file keeps its mode
    /// (its executable bit). Uploads that create the file anew (E2B's and
    /// Daytona's file APIs, the Cloudflare bridge's `PUT`) do not.
    fn writes_keep_modes(&self) -> bool {
        true
    }
    /// [`Self::write_file`], keeping an existing file's executable bit: a
    /// rewritten script stays a script in the checks and in the published
    /// tree.
    async fn write_file_keeping_mode(
        &self,
        sandbox: &SandboxRef,
        path: &str,
        content: &[u8],
    ) -> Result<(), ProviderError> {
        if self.writes_keep_modes() {
            return self.write_file(sandbox, path, content).await;
        }
        let before = self.file_modes(sandbox, &[path.to_owned()]).await?;
        self.write_file(sandbox, path, content).await?;
        if before.first() == Some(&Some(FileMode::Executable)) {
            let mut chmod = fixed_git(&[]);
            chmod.argv = ["chmod", "+x", "--", path].map(str::to_owned).into();
            let out = self.exec(sandbox, &chmod).await?;
            if out.exit_code != 0 {
                return Err(ProviderError::Protocol {
                    provider: self.kind().as_str(),
                    operation: "write file",
                    reason: format!("restoring the executable bit of `{path}` exited {}", out.exit_code),
                });
            }
        }
        Ok(())
    }
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
    /// The mode of each checkout-relative path (`None`: absent or not a
    /// file), in order. By default one fixed `sh` script over the paths as
    /// arguments.
    async fn file_modes(&self, sandbox: &SandboxRef, paths: &[String]) -> Result<Vec<Option<FileMode>>, ProviderError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut exec = fixed_git(&[]);
        exec.argv = ["sh", "-c", MODES_SCRIPT, "agent-zero-modes"].map(str::to_owned).into();
        exec.argv.extend(paths.iter().cloned());
        let out = self.exec(sandbox, &exec).await?;
        git_ok(self.kind(), "file modes", &out)?;
        let modes: Vec<Option<FileMode>> = out
            .stdout
            .lines()
            .map(|line| match line.trim() {
                "l" => Some(FileMode::Symlink),
                "x" => Some(FileMode::Executable),
                "f" => Some(FileMode::Regular),
                _ => None,
            })
            .collect();
        if modes.len() != paths.len() {
            return Err(ProviderError::Protocol {
                provider: self.kind().as_str(),
                operation: "file modes",
                reason: format!("{} modes for {} paths", modes.len(), paths.len()),
            });
        }
        Ok(modes)
    }
    /// Starts `execs` as one detached background job named `job_id` (1 to
    /// 64 of `[A-Za-z0-9._-]`) that runs them in order, each in its own
    /// `cwd` with its own environment and its `timeout_ms` enforced inside
    /// the sandbox, whatever the ones before it did; returns once the job is
    /// started. Starting a job id that exists already starts nothing (a
    /// replayed tick must not run the checks twice). By default one exec of
    /// a fixed `sh` script, the commands as its arguments (`jobs.rs` says
    /// where the job's files live, outside the checkout, and how a poll
    /// reads them).
    async fn start_job(&self, sandbox: &SandboxRef, job_id: &str, execs: &[Exec]) -> Result<(), ProviderError> {
        jobs::start(self, sandbox, job_id, execs).await
    }
    /// Where job `job_id` of `execs` (the same commands it was started
    /// with; their `max_output_bytes` caps each stream's tail) stands. By
    /// default one exec of a fixed `sh` script.
    async fn poll_job(&self, sandbox: &SandboxRef, job_id: &str, execs: &[Exec]) -> Result<JobPoll, ProviderError> {
        jobs::poll(self, sandbox, job_id, execs).await
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

/// A fixed git command succeeded with its whole output: a truncated
/// listing or diff is an error, never a shorter answer.
pub(crate) fn git_ok(kind: ProviderKind, operation: &'static str, out: &ExecOutput) -> Result<(), ProviderError> {
    if out.exit_code == 0 && out.truncated_bytes == 0 && !out.timed_out {
        return Ok(());
    }
    if out.exit_code == 0 {
        return Err(ProviderError::Protocol {
            provider: kind.as_str(),
            operation,
            reason: format!("git output was cut ({} bytes dropped) or timed out", out.truncated_bytes),
        });
    }
    Err(ProviderError::Protocol {
        provider: kind.as_str(),
        operation,
        reason: format!("git exited {}: {}", out.exit_code, out.stderr.chars().take(300).collect::<String>()),
    })
}

/// `git init` + one commit of everything unpacked: the diff's baseline.
#[cfg_attr(
    not(all(feature = "custom", feature = "e2b", feature = "daytona", feature = "vercel", feature = "cloudflare")),
    allow(dead_code, reason = "the adapters that check out by archive are left out")
)]
pub(crate) fn baseline(root: &str, commit: &str) -> Vec<(&'static str, Vec<String>)> {
    let message = format!("agent-zero checkout of {commit}");
    let identity = ["-c", "user.name=agent-zero", "-c", "user.email=agent-zero@invalid", "-c", "commit.gpgsign=false"];
    let mut commit_args = vec!["git", "-C", root];
    commit_args.extend(identity);
    commit_args.extend(["commit", "--quiet", "--no-verify", "--allow-empty", "-m", &message]);
    [vec!["git", "init", "--quiet", root], vec!["git", "-C", root, "add", "--all", "--force"], commit_args]
        .into_iter()
        .map(|args| ("baseline", args.into_iter().map(str::to_owned).collect()))
        .collect()
}

#[cfg(test)]
mod tests {
    use agent_zero_ports::Secret;

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

    /// An upload that recreates the file, like E2B's, Daytona's and the
    /// bridge's: every command it is asked to run is recorded.
    struct Recreating {
        mode: &'static str,
        ran: std::cell::RefCell<Vec<Vec<String>>>,
    }

    impl SandboxProvider for Recreating {
        fn kind(&self) -> ProviderKind {
            ProviderKind::E2b
        }
        fn writes_keep_modes(&self) -> bool {
            false
        }
        async fn provision(&self, _: &SandboxRequest, _: &Provision<'_>) -> Result<Provisioned, ProviderError> {
            unreachable!("not provisioned in this test")
        }
        async fn exec(&self, _: &SandboxRef, exec: &Exec) -> Result<ExecOutput, ProviderError> {
            self.ran.borrow_mut().push(exec.argv.clone());
            let stdout =
                if exec.argv.first().is_some_and(|a| a == "sh") { format!("{}\n", self.mode) } else { String::new() };
            Ok(ExecOutput { stdout, ..ExecOutput::default() })
        }
        async fn read_file(&self, _: &SandboxRef, _: &str) -> Result<Vec<u8>, ProviderError> {
            Ok(Vec::new())
        }
        async fn write_file(&self, _: &SandboxRef, _: &str, _: &[u8]) -> Result<(), ProviderError> {
            Ok(())
        }
        async fn stop(&self, _: &str) -> Result<(), ProviderError> {
            Ok(())
        }
    }

    #[test]
    fn a_rewritten_executable_keeps_its_bit_where_uploads_recreate_files() {
        let sandbox = SandboxRef { external_id: "x".into(), root: "/home/user/repo".into() };
        for (mode, chmod) in [("x", true), ("f", false), ("-", false)] {
            let provider = Recreating { mode, ran: Default::default() };
            agent_zero_ports::block_on(provider.write_file_keeping_mode(&sandbox, "bin/run.sh", b"echo hi\n")).unwrap();
            let ran = provider.ran.into_inner();
            let chmods: Vec<&Vec<String>> = ran.iter().filter(|argv| argv[0] == "chmod").collect();
            assert_eq!(chmods.len(), usize::from(chmod), "mode {mode}: {ran:?}");
            if chmod {
                assert_eq!(chmods[0].as_slice(), ["chmod", "+x", "--", "bin/run.sh"]);
            }
        }
    }
}
