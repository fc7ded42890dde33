//! The reference server treats a lease like a VM or a container: a process
//! a command leaves running in the background outlives the `run` that
//! started it (the edge's background checks rely on it), a `run` answers
//! when its command exits even if such a process still holds its output,
//! each lease has its own `TMPDIR` outside its checkout, and releasing the
//! lease ends everything it left running.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::Secret;
use agent_zero_ports::block_on;
use agent_zero_runner::providers::CustomSandbox;
use agent_zero_runner::{CheckoutSource, Exec, ExecOutput, Provision, SandboxProvider, SandboxRef, SandboxRequest};

mod common;

use common::{Ureq, fixture_repo, start_server};

const TOKEN: &str = "sandbox-background-token-91d2";

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
    let server = start_server(repos.path(), TOKEN);
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
    let server = start_server(repos.path(), TOKEN);
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
    let server = start_server(repos.path(), TOKEN);
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
