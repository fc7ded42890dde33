//! Putting a lease's code into its checkout directory: the archive the
//! edge obtained (downloaded here, unpacked, committed as the baseline the
//! diff is taken against), or a clone from `--repos DIR` / public GitHub.
//! Every step is bounded by the checkout deadline. The archive link carries
//! its own short-lived token, or the download carries a header with the
//! forge's token: neither is ever logged, put in an argv or an environment,
//! or echoed in an error.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The largest archive the server downloads.
const MAX_ARCHIVE_BYTES: u64 = 256 * 1024 * 1024;

/// Why a checkout failed: an HTTP status, a code and a message without the link.
pub(crate) struct Failed {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
}

fn failed(status: u16, code: &'static str, message: impl Into<String>) -> Failed {
    Failed { status, code, message: message.into() }
}

/// Downloads `url` (with `header`, a name and value, when given; at most
/// `MAX_ARCHIVE_BYTES`), unpacks it into `checkout` and commits it. A link
/// alone may redirect up to 3 times; with a header no redirect is followed
/// (`ureq` drops only `authorization` on one, and a `private-token` must not
/// reach another origin either), so a redirect answer fails the download.
pub(crate) fn from_archive(
    dir: &Path,
    checkout: &Path,
    url: &str,
    header: Option<(&str, &str)>,
    commit: &str,
    deadline: Instant,
) -> Result<(), Failed> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(remaining.max(Duration::from_millis(1))))
        .max_redirects(if header.is_some() { 0 } else { 3 })
        .build()
        .into();
    let mut get = agent.get(url);
    if let Some((name, value)) = header {
        get = get.header(name, value);
    }
    let response = get.call().map_err(|e| {
        let reason = if matches!(e, ureq::Error::Timeout(_)) { "timed out".to_owned() } else { kind_of(&e) };
        failed(502, "archive-failed", format!("downloading the checkout archive: {reason}"))
    })?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(failed(502, "archive-failed", format!("the checkout archive answered {status}")));
    }
    let archive = dir.join("checkout.tar.gz");
    let mut body = response.into_body();
    let mut reader = body.with_config().limit(MAX_ARCHIVE_BYTES).reader();
    let mut file = std::fs::File::create(&archive).map_err(|e| failed(500, "archive-failed", e.to_string()))?;
    std::io::copy(&mut reader, &mut file)
        .map_err(|e| failed(502, "archive-failed", format!("reading the checkout archive: {}", e.kind())))?;
    drop(file);
    std::fs::create_dir_all(checkout).map_err(|e| failed(500, "archive-failed", e.to_string()))?;
    let tar = bounded(
        Command::new("tar")
            .arg("-xzf")
            .arg(&archive)
            .args(["--strip-components=1", "--no-same-owner", "--no-same-permissions", "-C"])
            .arg(checkout),
        deadline,
    )?;
    let _ = std::fs::remove_file(&archive);
    if !tar.0 {
        return Err(failed(502, "archive-failed", format!("unpacking the checkout archive: {}", tar.1)));
    }
    let message = format!("agent-zero checkout of {commit}");
    for args in [
        &["init", "--quiet"][..],
        &["add", "--all", "--force"][..],
        &[
            "-c",
            "user.name=agent-zero",
            "-c",
            "user.email=agent-zero@invalid",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "--quiet",
            "--no-verify",
            "--allow-empty",
            "-m",
            &message,
        ][..],
    ] {
        let (ok, stderr) =
            bounded(Command::new("git").args(args).current_dir(checkout).env("GIT_TERMINAL_PROMPT", "0"), deadline)?;
        if !ok {
            return Err(failed(500, "git-failed", stderr));
        }
    }
    Ok(())
}

/// Clones `source` and checks out `git_ref` detached, bounded by `deadline`.
pub(crate) fn from_clone(
    dir: &Path,
    checkout: &Path,
    source: &str,
    git_ref: &str,
    deadline: Instant,
) -> Result<(), Failed> {
    let git = |args: &[&str], cwd: &Path| {
        bounded(Command::new("git").args(args).current_dir(cwd).env("GIT_TERMINAL_PROMPT", "0"), deadline)
    };
    let (ok, stderr) = git(&["clone", "--quiet", "--no-checkout", "--", source, "checkout"], dir)?;
    if !ok {
        return Err(failed(502, "clone-failed", stderr));
    }
    let (ok, stderr) = git(&["checkout", "--quiet", "--detach", git_ref, "--"], checkout)?;
    if !ok {
        return Err(failed(422, "unknown-ref", stderr));
    }
    Ok(())
}

/// Runs `command` to completion or kills it at `deadline`: (success, stderr).
fn bounded(command: &mut Command, deadline: Instant) -> Result<(bool, String), Failed> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(500, "checkout-tool", e.to_string()))?;
    let mut stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(pipe) = stderr.as_mut() {
            let _ = pipe.take(16 * 1024).read_to_string(&mut text);
        }
        text
    });
    loop {
        if let Some(status) = child.try_wait().map_err(|e| failed(500, "checkout-tool", e.to_string()))? {
            let text = reader.join().unwrap_or_default();
            return Ok((status.success(), text.trim().to_owned()));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(504, "checkout-timeout", "the checkout did not finish within its deadline"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The kind of a download error, without its text (which may hold the link).
fn kind_of(error: &ureq::Error) -> String {
    match error {
        ureq::Error::Io(e) => format!("I/O error ({})", e.kind()),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::ConnectionFailed => "connection failed".into(),
        ureq::Error::TooManyRedirects => "too many redirects".into(),
        _ => "transport error".into(),
    }
}
