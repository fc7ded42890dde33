//! Running one argv with a timeout that kills the process group, and an
//! output cap that keeps each stream's tail.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
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
const INHERITED: &[&str] = &["PATH", "HOME", "LANG", "TMPDIR", "USER"];

/// The whole environment a command starts with: the inherited names, no
/// prompt from git, and the request's own `env`.
pub(crate) fn environment(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut all: BTreeMap<String, String> =
        INHERITED.iter().filter_map(|name| std::env::var(name).ok().map(|value| ((*name).to_owned(), value))).collect();
    all.insert("GIT_TERMINAL_PROMPT".into(), "0".into());
    all.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
    all
}

pub(crate) fn run(
    argv: &[String],
    cwd: &Path,
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
    command.envs(environment(env)).process_group(0);
    let started = Instant::now();
    let mut child = command.spawn()?;
    let half = max_output;
    let out = reader(child.stdout.take(), half);
    let err = reader(child.stderr.take(), half);
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() >= timeout {
            timed_out = true;
            // Kill the whole group: a test runner's children must not survive.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.kill();
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (stdout, cut_out) = out.join().unwrap_or_default();
    let (stderr, cut_err) = err.join().unwrap_or_default();
    let (mut stdout, mut stderr) =
        (String::from_utf8_lossy(&stdout).into_owned(), String::from_utf8_lossy(&stderr).into_owned());
    // One budget for both streams, as the runner counts it.
    let extra = agent_zero_runner::cap_output(&mut stdout, &mut stderr, max_output as u64);
    Ok(Outcome {
        exit_code: if timed_out { -1 } else { status.code().unwrap_or(-1) },
        stdout,
        stderr,
        duration_ms: started.elapsed().as_millis() as u64,
        truncated_bytes: cut_out + cut_err + extra,
        timed_out,
    })
}

/// Drains a pipe, keeping at most `cap` trailing bytes; returns them and the count dropped.
fn reader<R: Read + Send + 'static>(pipe: Option<R>, cap: usize) -> std::thread::JoinHandle<(Vec<u8>, u64)> {
    std::thread::spawn(move || {
        let Some(mut pipe) = pipe else { return (Vec::new(), 0) };
        let mut kept = Vec::new();
        let mut dropped = 0u64;
        let mut buffer = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buffer) {
            if n == 0 {
                break;
            }
            kept.extend_from_slice(&buffer[..n]);
            if kept.len() > cap.saturating_mul(2).max(8192) {
                let excess = kept.len() - cap;
                dropped += excess as u64;
                kept.drain(..excess);
            }
        }
        if kept.len() > cap {
            let excess = kept.len() - cap;
            dropped += excess as u64;
            kept.drain(..excess);
        }
        (kept, dropped)
    })
}
