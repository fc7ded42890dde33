//! The reference server treats a lease like a VM or a container: a process
//! a command leaves running in the background outlives the `run` that
//! started it (the edge's background checks rely on it), a `run` answers
//! when its command exits even if such a process still holds its output,
//! each lease has its own `TMPDIR` outside its checkout, and releasing the
//! lease ends everything it left running.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::{HttpClient, HttpError, block_on};
use agent_zero_runner::providers::CustomSandbox;
use agent_zero_runner::{
    CheckoutSource, Exec, ExecOutput, Provision, SandboxProvider, SandboxRef, SandboxRequest, Secret,
};

const TOKEN: &str = "sandbox-background-token-91d2";

#[derive(Debug)]
struct Ureq(ureq::Agent);

impl HttpClient for Ureq {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let response = self.0.run(request).map_err(|e| HttpError::Transport(e.to_string()))?;
        let (parts, mut body) = response.into_parts();
        let bytes = body.read_to_vec().map_err(|e| HttpError::Transport(e.to_string()))?;
        Ok(http::Response::from_parts(parts, bytes))
    }
}

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Started as `custom_provider.rs` starts it: on a port it binds itself.
fn start_server(repos: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-zero-sandbox"))
        .args(["--listen", "127.0.0.1:0", "--repos"])
        .arg(repos)
        .env("AGENT_ZERO_SANDBOX_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut server = Server(child, String::new());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let Some(address) = line.trim_end().strip_prefix("agent-zero-sandbox listening on ") else {
        panic!("sandbox server did not start: {line:?}");
    };
    server.1 = format!("http://{address}");
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    server
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "git {args:?}");
}

fn fixture_repo(root: &Path) {
    let repo = root.join("acme/app");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "--quiet", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@e", "add", "README.md"]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "--quiet", "-m", "init"]);
}

fn lease(provider: &CustomSandbox<Ureq>, id: &str) -> SandboxRef {
    let request = SandboxRequest::new(id, "acme/app", "main", RunMode::Fix, true, NetworkPolicy::None, 600_000);
    let provision =
        Provision { lease_id: id, writable: true, source: &CheckoutSource::PublicClone, checkout_timeout_ms: 60_000 };
    let provisioned = block_on(provider.provision(&request, &provision)).unwrap();
    SandboxRef { external_id: provisioned.external_id, root: provisioned.root }
}

fn sh(provider: &CustomSandbox<Ureq>, sandbox: &SandboxRef, script: &str) -> ExecOutput {
    let exec = Exec {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        cwd: String::new(),
        timeout_ms: 60_000,
        max_output_bytes: 10_000,
        env: BTreeMap::new(),
    };
    block_on(provider.exec(sandbox, &exec)).unwrap()
}

/// Whether `pid` is a live process (a zombie nobody reaped yet is dead).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

fn wait_dead(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(Instant::now() < deadline, "process {pid} still alive");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A detached process (its own session, or only its output redirected)
/// keeps running after the `run` that started it answered, which it does
/// at once; releasing the lease kills it.
#[test]
fn a_background_process_outlives_its_run_until_the_lease_is_released() {
    let repos = tempfile::tempdir().unwrap();
    fixture_repo(repos.path());
    let server = start_server(repos.path());
    let provider = CustomSandbox::new(
        Ureq(ureq::Agent::config_builder().http_status_as_error(false).build().into()),
        &server.1,
        Secret::new(TOKEN),
    );
    let sandbox = lease(&provider, "lease-bg");
    let started = Instant::now();
    let spawned = sh(
        &provider,
        &sandbox,
        "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!; \
         sleep 300 </dev/null >/dev/null 2>&1 & echo $!",
    );
    assert!(started.elapsed() < Duration::from_secs(5), "the run waited on its background: {:?}", started.elapsed());
    let pids: Vec<u32> = spawned.stdout.split_whitespace().map(|p| p.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2, "{spawned:?}");
    // Later calls find them running.
    let _ = sh(&provider, &sandbox, "true");
    for pid in &pids {
        assert!(alive(*pid), "background process {pid} did not outlive its run");
    }
    block_on(provider.stop(&sandbox.external_id)).unwrap();
    for pid in pids {
        wait_dead(pid);
    }
}

/// A background process that keeps the command's output pipes open does
/// not hold the answer: it comes when the command exits, with what the
/// command wrote.
#[test]
fn a_run_answers_when_its_command_exits_whatever_holds_its_pipes() {
    let repos = tempfile::tempdir().unwrap();
    fixture_repo(repos.path());
    let server = start_server(repos.path());
    let provider = CustomSandbox::new(
        Ureq(ureq::Agent::config_builder().http_status_as_error(false).build().into()),
        &server.1,
        Secret::new(TOKEN),
    );
    let sandbox = lease(&provider, "lease-pipes");
    let started = Instant::now();
    let out = sh(&provider, &sandbox, "sleep 300 & echo $!; echo done");
    assert!(started.elapsed() < Duration::from_secs(10), "the run waited on its background: {:?}", started.elapsed());
    let (pid, rest) = out.stdout.split_once('\n').unwrap();
    assert_eq!((out.exit_code, rest), (0, "done\n"), "{out:?}");
    let pid: u32 = pid.parse().unwrap();
    assert!(alive(pid));
    block_on(provider.stop(&sandbox.external_id)).unwrap();
    wait_dead(pid);
}

/// Each lease has a `TMPDIR` of its own, outside its checkout and gone
/// with it; a job directory under one is not in another.
#[test]
fn each_lease_has_its_own_tmpdir_outside_its_checkout() {
    let repos = tempfile::tempdir().unwrap();
    fixture_repo(repos.path());
    let server = start_server(repos.path());
    let provider = CustomSandbox::new(
        Ureq(ureq::Agent::config_builder().http_status_as_error(false).build().into()),
        &server.1,
        Secret::new(TOKEN),
    );
    let (a, b) = (lease(&provider, "lease-a"), lease(&provider, "lease-b"));
    let where_a = sh(&provider, &a, r#"printf '%s\n%s' "$TMPDIR" "$(pwd -P)"; mkdir "$TMPDIR/mine""#);
    let where_b = sh(&provider, &b, r#"printf '%s' "$TMPDIR"; [ -d "$TMPDIR/mine" ] && echo " shared""#);
    let (tmp_a, checkout_a) = where_a.stdout.split_once('\n').unwrap();
    assert_ne!(tmp_a, where_b.stdout, "{where_a:?} {where_b:?}");
    assert!(!where_b.stdout.ends_with("shared"));
    let tmp_a = std::fs::canonicalize(tmp_a).unwrap();
    assert!(!tmp_a.starts_with(checkout_a), "{tmp_a:?} is inside {checkout_a}");
    assert!(tmp_a.join("mine").is_dir());
    block_on(provider.stop(&a.external_id)).unwrap();
    assert!(!tmp_a.exists(), "released with its lease");
    block_on(provider.stop(&b.external_id)).unwrap();
}
