//! The bounded `Runner` handle a lease hands out: argv commands, file reads
//! and writes, diff and file listing, nothing else.

use std::collections::BTreeMap;

use agent_zero_contracts::{CheckResult, RunnerDescription, is_repository_relative_path};

use crate::error::RunnerError;
use crate::provider::JobPoll;
use crate::provider::{Exec, ExecOutput, FileMode, ProviderError, SandboxProvider, SandboxRef};
use crate::request::{Lease, ProvisionedLease};

/// Environment names a command may set; everything else is refused, so a
/// check cannot smuggle in `LD_PRELOAD` or a credential-shaped variable.
pub const ENV_ALLOWLIST: &[&str] = &["CI", "LANG", "LC_ALL", "NODE_ENV", "RUST_BACKTRACE", "TERM", "TZ", "NO_COLOR"];

/// The largest file [`Runner::read_file`] returns, on every provider.
pub const MAX_READ_BYTES: usize = 2 * 1024 * 1024;

/// One command as the agent asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub argv: Vec<String>,
    /// Checkout-relative directory; `""` is the checkout root.
    pub cwd: String,
    pub timeout_ms: u64,
    pub env: BTreeMap<String, String>,
}

impl Command {
    /// `argv` in the checkout root with `timeout_ms`.
    pub fn new<I, S>(argv: I, timeout_ms: u64) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self { argv: argv.into_iter().map(Into::into).collect(), cwd: String::new(), timeout_ms, env: BTreeMap::new() }
    }

    /// Runs in `cwd` (checkout-relative).
    #[must_use]
    pub fn in_dir(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = cwd.into();
        self
    }
}

/// Refuses an argv that cannot be run without a shell or is malformed.
pub fn validate_argv(argv: &[String]) -> Result<(), RunnerError> {
    let Some(program) = argv.first() else {
        return Err(RunnerError::InvalidCommand { field: "argv", reason: "must not be empty".into() });
    };
    if program.is_empty() {
        return Err(RunnerError::InvalidCommand { field: "argv[0]", reason: "program must not be empty".into() });
    }
    if let Some(i) = argv.iter().position(|a| a.contains('\0')) {
        return Err(RunnerError::InvalidCommand { field: "argv", reason: format!("argument {i} contains NUL") });
    }
    Ok(())
}

/// Refuses a job id that is not 1 to 64 bytes of `[A-Za-z0-9._-]`, or is
/// `.` or `..` (it names a directory in the sandbox).
fn validate_job_id(job_id: &str) -> Result<(), RunnerError> {
    if crate::provider::jobs::is_job_id(job_id) {
        Ok(())
    } else {
        Err(RunnerError::InvalidCommand {
            field: "jobId",
            reason: format!("`{job_id}` is not 1 to 64 of [A-Za-z0-9._-] (nor `.` or `..`)"),
        })
    }
}

/// Checks a checkout-relative directory (`""` allowed).
fn validate_cwd(cwd: &str) -> Result<(), RunnerError> {
    if cwd.is_empty() || cwd == "." || is_repository_relative_path(cwd) {
        Ok(())
    } else {
        Err(RunnerError::PathOutsideCheckout { field: "cwd", path: cwd.to_owned() })
    }
}

/// Keeps at most `max` bytes of `stdout` + `stderr` together, dropping the
/// head of each stream (the end of a failing check says why). Returns the
/// bytes dropped.
pub fn cap_output(stdout: &mut String, stderr: &mut String, max: u64) -> u64 {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let total = stdout.len() + stderr.len();
    if total <= max {
        return 0;
    }
    let stderr_share = stderr.len().min(max / 2);
    let stdout_keep = stdout.len().min(max - stderr_share);
    let stderr_keep = stderr.len().min(max - stdout_keep);
    keep_tail(stdout, stdout_keep);
    keep_tail(stderr, stderr_keep);
    (total - stdout.len() - stderr.len()) as u64
}

fn keep_tail(text: &mut String, keep: usize) {
    if text.len() <= keep {
        return;
    }
    let mut start = text.len() - keep;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text.drain(..start);
}

/// Where a background job of checks stands ([`Runner::poll_checks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChecksPoll {
    /// Still running: poll again later.
    Running,
    /// Every command ended: one result per command, in order.
    Done(Vec<CheckResult>),
    /// The sandbox has no live job of that id and no results for it (its
    /// process was killed, the sandbox restarted): why.
    Lost(String),
}

/// The only way the rest of the system touches a checkout.
#[derive(Debug)]
pub struct Runner<'p, P> {
    provider: &'p P,
    lease: ProvisionedLease,
    sandbox: SandboxRef,
    max_output_bytes: u64,
}

impl<'p, P: SandboxProvider> Runner<'p, P> {
    pub(crate) fn new(provider: &'p P, lease: &Lease, max_output_bytes: u64) -> Result<Self, RunnerError> {
        let lease = ProvisionedLease::of(lease).ok_or_else(|| RunnerError::NotProvisioned(lease.id.clone()))?;
        Ok(Self::provisioned(provider, lease, max_output_bytes))
    }

    pub(crate) fn provisioned(provider: &'p P, lease: ProvisionedLease, max_output_bytes: u64) -> Self {
        let sandbox = SandboxRef { external_id: lease.external_id.clone(), root: lease.root.clone() };
        Self { provider, lease, sandbox, max_output_bytes }
    }

    /// The lease this runner belongs to: what its holder keeps to attach
    /// again without the coordinator.
    pub fn lease(&self) -> &ProvisionedLease {
        &self.lease
    }

    /// What this boundary may do, for evidence.
    pub fn describe(&self) -> RunnerDescription {
        RunnerDescription {
            provider: self.lease.provider.as_str().to_owned(),
            isolated: self.lease.isolated,
            writable: self.lease.writable,
            network: self.lease.network,
        }
    }

    /// Runs one argv; a non-zero exit is a result, not an error.
    pub async fn run(&self, command: &Command) -> Result<CheckResult, RunnerError> {
        let exec = self.exec_for(command)?;
        let out = self.provider.exec(&self.sandbox, &exec).await?;
        Ok(self.check_result(command, out))
    }

    /// Starts `commands` in order as background job `job_id` (1 to 64 of
    /// `[A-Za-z0-9._-]`) in the sandbox and returns once it is started:
    /// each command bounded by its own `timeout_ms`, a failing one not
    /// stopping the next. Starting a job id that exists already starts
    /// nothing. Commands are validated as [`Self::run`] validates them.
    pub async fn start_checks(&self, job_id: &str, commands: &[Command]) -> Result<(), RunnerError> {
        validate_job_id(job_id)?;
        let execs = commands.iter().map(|c| self.exec_for(c)).collect::<Result<Vec<Exec>, RunnerError>>()?;
        Ok(self.provider.start_job(&self.sandbox, job_id, &execs).await?)
    }

    /// Where background job `job_id` of `commands` (those it was started
    /// with) stands: once done, one result per command in order, built as
    /// [`Self::run`] builds it.
    pub async fn poll_checks(&self, job_id: &str, commands: &[Command]) -> Result<ChecksPoll, RunnerError> {
        validate_job_id(job_id)?;
        let execs = commands.iter().map(|c| self.exec_for(c)).collect::<Result<Vec<Exec>, RunnerError>>()?;
        Ok(match self.provider.poll_job(&self.sandbox, job_id, &execs).await? {
            JobPoll::Running => ChecksPoll::Running,
            JobPoll::Lost(reason) => ChecksPoll::Lost(reason),
            JobPoll::Done(outputs) => {
                if outputs.len() != commands.len() {
                    return Err(RunnerError::Provider(ProviderError::Protocol {
                        provider: self.provider.kind().as_str(),
                        operation: "poll job",
                        reason: format!("{} results for {} commands", outputs.len(), commands.len()),
                    }));
                }
                ChecksPoll::Done(commands.iter().zip(outputs).map(|(c, out)| self.check_result(c, out)).collect())
            }
        })
    }

    /// The provider's exec of a validated command.
    fn exec_for(&self, command: &Command) -> Result<Exec, RunnerError> {
        validate_argv(&command.argv)?;
        validate_cwd(&command.cwd)?;
        if command.timeout_ms == 0 {
            return Err(RunnerError::InvalidCommand { field: "timeoutMs", reason: "must be positive".into() });
        }
        if let Some(name) = command.env.keys().find(|k| !ENV_ALLOWLIST.contains(&k.as_str())) {
            return Err(RunnerError::InvalidCommand {
                field: "env",
                reason: format!("`{name}` is not in the allowlist"),
            });
        }
        let cwd = if command.cwd == "." { String::new() } else { command.cwd.clone() };
        Ok(Exec {
            argv: command.argv.clone(),
            cwd,
            timeout_ms: command.timeout_ms,
            max_output_bytes: self.max_output_bytes,
            env: command.env.clone(),
        })
    }

    /// The result of `command` from what the provider reported, within this
    /// runner's output cap.
    fn check_result(&self, command: &Command, mut out: ExecOutput) -> CheckResult {
        let cut = cap_output(&mut out.stdout, &mut out.stderr, self.max_output_bytes);
        CheckResult {
            command: command.argv.clone(),
            exit_code: out.exit_code,
            stdout: out.stdout,
            stderr: out.stderr,
            duration_ms: out.duration_ms,
            truncated_bytes: out.truncated_bytes + cut,
            timed_out: out.timed_out,
        }
    }

    /// Reads a checkout-relative UTF-8 file.
    pub async fn read_file(&self, path: &str) -> Result<String, RunnerError> {
        check_path(path)?;
        let bytes = self.provider.read_file(&self.sandbox, path).await?;
        if bytes.len() > MAX_READ_BYTES {
            return Err(RunnerError::FileTooLarge {
                path: path.to_owned(),
                size: bytes.len() as u64,
                limit: MAX_READ_BYTES as u64,
            });
        }
        String::from_utf8(bytes).map_err(|_| RunnerError::NotUtf8(path.to_owned()))
    }

    /// The mode of each checkout-relative path, in order (`None`: absent).
    pub async fn file_modes(&self, paths: &[String]) -> Result<Vec<Option<FileMode>>, RunnerError> {
        for path in paths {
            check_path(path)?;
        }
        Ok(self.provider.file_modes(&self.sandbox, paths).await?)
    }

    /// Writes a checkout-relative file; refused on a read-only lease.
    pub async fn write_file(&self, path: &str, content: &str) -> Result<(), RunnerError> {
        check_path(path)?;
        if !self.lease.writable {
            return Err(RunnerError::ReadOnly { path: path.to_owned() });
        }
        Ok(self.provider.write_file_keeping_mode(&self.sandbox, path, content.as_bytes()).await?)
    }

    /// The checkout's `git diff`, new files included.
    pub async fn diff(&self) -> Result<String, RunnerError> {
        Ok(self.provider.diff(&self.sandbox).await?)
    }

    /// Files in the checkout (tracked and untracked, not ignored).
    pub async fn list_files(&self) -> Result<Vec<String>, RunnerError> {
        Ok(self.provider.list_files(&self.sandbox).await?)
    }
}

fn check_path(path: &str) -> Result<(), RunnerError> {
    if is_repository_relative_path(path) {
        Ok(())
    } else {
        Err(RunnerError::PathOutsideCheckout { field: "path", path: path.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_validation() {
        assert!(validate_argv(&["git".into(), "status".into()]).is_ok());
        assert!(matches!(validate_argv(&[]), Err(RunnerError::InvalidCommand { field: "argv", .. })));
        assert!(matches!(validate_argv(&[String::new()]), Err(RunnerError::InvalidCommand { field: "argv[0]", .. })));
        let nul = validate_argv(&["echo".into(), "a\0b".into()]).unwrap_err();
        assert!(nul.to_string().contains("argument 1 contains NUL"), "{nul}");
        assert!(validate_cwd("").is_ok() && validate_cwd("src").is_ok());
        assert!(validate_cwd("../x").is_err() && validate_cwd("/etc").is_err() && validate_cwd(".git").is_err());
    }

    #[test]
    fn output_cap_keeps_tails_and_counts_the_cut() {
        let mut out = "a".repeat(100);
        let mut err = "b".repeat(100);
        assert_eq!(cap_output(&mut out, &mut err, 500), 0);
        assert_eq!(cap_output(&mut out, &mut err, 50), 150);
        assert_eq!(out.len() + err.len(), 50);
        assert_eq!(err.len(), 25);
        let mut out = format!("{}END", "x".repeat(97));
        let mut err = String::new();
        assert_eq!(cap_output(&mut out, &mut err, 10), 90);
        assert!(out.ends_with("END"));
        // A cut never splits a character.
        let mut out = "é".repeat(10);
        let cut = cap_output(&mut out, &mut String::new(), 5);
        assert_eq!(out, "éé");
        assert_eq!(cut, 16);
    }
}
