//! Running one argv with a timeout that kills the process group, and an
//! output cap that keeps each stream's tail; ending every process a lease
//! left running when it is released.
//!
//! Like a VM or a container, a lease outlives each command: a process a
//! command leaves running in the background (a job the edge polls later,
//! `PROTOCOL.md` "Background jobs") keeps running after the `run` that
//! started it answered, until it ends or the lease is released.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a finished (or killed) command produced.
pub(crate) struct Outcome {
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    pub duration_ms: u64,
    pub truncated_bytes: u64,
    pub timed_out: bool,
}

/// Inherited from the server's environment; nothing else is (the token never is).
const INHERITED: &[&str] = &["PATH", "HOME", "LANG", "USER"];

/// How long the answer waits, once the command exited, for its output
/// pipes to close. A process it left running in the background that still
/// holds them (it did not redirect its output) does not hold the answer
/// past this; what it writes later is not in it (as Go's
/// `exec.Cmd.WaitDelay`).
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// The whole environment a command starts with: the inherited names,
/// `TMPDIR` (the lease's own, outside its checkout, deleted with it: as on
/// a machine of its own, a lease's temporary files are not another's), no
/// prompt from git, and the request's own `env`.
pub(crate) fn environment(env: &BTreeMap<String, String>, tmpdir: &Path) -> BTreeMap<String, String> {
    let mut all: BTreeMap<String, String> =
        INHERITED.iter().filter_map(|name| std::env::var(name).ok().map(|value| ((*name).to_owned(), value))).collect();
    all.insert("TMPDIR".into(), tmpdir.to_string_lossy().into_owned());
    all.insert("GIT_TERMINAL_PROMPT".into(), "0".into());
    all.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
    all
}

pub(crate) fn run(
    argv: &[String],
    cwd: &Path,
    tmpdir: &Path,
    timeout: Duration,
    max_output: usize,
    env: &BTreeMap<String, String>,
) -> std::io::Result<Outcome> {
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .current_dir(cwd)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.envs(environment(env, tmpdir)).process_group(0);
    let started = Instant::now();
    let mut child = command.spawn()?;
    let half = max_output;
    let out = Drain::start(child.stdout.take(), half);
    let err = Drain::start(child.stderr.take(), half);
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() >= timeout {
            timed_out = true;
            // Kill the whole group: a test runner's children must not
            // survive. (A process that left the group, a background job in
            // a session of its own, lives on until the lease ends.)
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.kill();
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let duration_ms = started.elapsed().as_millis() as u64;
    // The answer is due now: the pipes get a short grace, not the lifetime
    // of whatever the command left running.
    let grace = Instant::now() + PIPE_GRACE;
    let (stdout, cut_out) = out.finish(grace);
    let (stderr, cut_err) = err.finish(grace);
    let (mut stdout, mut stderr) =
        (String::from_utf8_lossy(&stdout).into_owned(), String::from_utf8_lossy(&stderr).into_owned());
    // One budget for both streams, as the runner counts it.
    let extra = agent_zero_runner::cap_output(&mut stdout, &mut stderr, max_output as u64);
    Ok(Outcome {
        exit_code: if timed_out { -1 } else { status.code().unwrap_or(-1) },
        stdout,
        stderr,
        duration_ms,
        truncated_bytes: cut_out + cut_err + extra,
        timed_out,
    })
}

/// A pipe drained on a thread of its own, keeping at most `cap` trailing
/// bytes and counting the bytes dropped; readable before the pipe closes.
struct Drain {
    kept: Arc<Mutex<(Vec<u8>, u64)>>,
    closed: mpsc::Receiver<()>,
    cap: usize,
}

impl Drain {
    fn start<R: Read + Send + 'static>(pipe: Option<R>, cap: usize) -> Self {
        let kept = Arc::new(Mutex::new((Vec::new(), 0u64)));
        let (done, closed) = mpsc::channel();
        let shared = Arc::clone(&kept);
        std::thread::spawn(move || {
            if let Some(mut pipe) = pipe {
                let mut buffer = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut buffer) {
                    if n == 0 {
                        break;
                    }
                    let mut kept = shared.lock().expect("pipe buffer");
                    kept.0.extend_from_slice(&buffer[..n]);
                    // Trim in batches: at most twice the cap is ever held.
                    if kept.0.len() > cap.saturating_mul(2).max(8192) {
                        let excess = kept.0.len() - cap;
                        kept.1 += excess as u64;
                        kept.0.drain(..excess);
                    }
                }
            }
            let _ = done.send(());
        });
        Self { kept, closed, cap }
    }

    /// What was read by the time the pipe closed, or by `deadline` if it is
    /// still open then (the reader goes on, unobserved, until it closes).
    fn finish(self, deadline: Instant) -> (Vec<u8>, u64) {
        let _ = self.closed.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        let (mut kept, mut dropped) = std::mem::take(&mut *self.kept.lock().expect("pipe buffer"));
        if kept.len() > self.cap {
            let excess = kept.len() - self.cap;
            dropped += excess as u64;
            kept.drain(..excess);
        }
        (kept, dropped)
    }
}

/// Kills every process whose environment holds `TMPDIR=<tmpdir>`: what a
/// lease's commands started, whatever session or process group they moved
/// to (a background job leads its own), as destroying a VM or container
/// ends everything in it. Reads `/proc` (Linux); elsewhere nothing is found
/// and background processes outlive their lease. A process that cleared its
/// environment escapes too. Several passes: a child forked while its parent
/// was being killed is found by the next.
pub(crate) fn kill_lease_processes(tmpdir: &Path) {
    let mut tag = b"TMPDIR=".to_vec();
    tag.extend_from_slice(tmpdir.as_os_str().as_bytes());
    let me = std::process::id().to_string();
    for _ in 0..10 {
        let Ok(entries) = std::fs::read_dir("/proc") else { return };
        let pids: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.bytes().all(|b| b.is_ascii_digit()) && *name != me)
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|environ| environ.split(|b| *b == 0).any(|entry| entry == tag.as_slice()))
            })
            .collect();
        if pids.is_empty() {
            return;
        }
        let _ = Command::new("kill").arg("-KILL").arg("--").args(&pids).stderr(Stdio::null()).status();
        std::thread::sleep(Duration::from_millis(20));
    }
}
