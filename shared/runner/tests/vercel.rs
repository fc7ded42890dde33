//! The Vercel adapter against the SDK's own shapes (`fixtures/vercel`, from
//! `@vercel/sandbox` 3.1.0, commit 81d725b): every request goes over real
//! HTTP to a loopback server answering the fixtures.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::Secret;
use agent_zero_runner::providers::VercelSandbox;
use agent_zero_runner::{
    ArchiveAuth, CheckoutSource, Exec, ProviderError, Provision, SandboxProvider, SandboxRef, SandboxRequest,
};
use serde_json::{Value, json};
use support::{Loopback, Loopclient, block_on};

const KEY: &str = "vercel-token-0c0ffee";
const API: &str = "https://vercel.com/api";
const OCTETS: &str = "application/octet-stream";
const NDJSON: &str = "application/x-ndjson";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/vercel/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn vercel(client: Loopclient) -> VercelSandbox<Loopclient> {
    VercelSandbox::new(client, Secret::new(KEY), Some("team_9".into())).with_project(Some("prj_42".into()))
}

fn request() -> SandboxRequest {
    SandboxRequest::new("t1", "acme/app", "main", RunMode::Fix, true, NetworkPolicy::None, 600_000)
}

fn exec(argv: &[&str], timeout_ms: u64) -> Exec {
    Exec {
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        cwd: "src".into(),
        timeout_ms,
        max_output_bytes: 1000,
        env: BTreeMap::from([("CI".to_owned(), "1".to_owned())]),
    }
}

fn session() -> SandboxRef {
    SandboxRef { external_id: "agent-zero-lease-t1/sess_4f1".into(), root: "/vercel/sandbox".into() }
}

fn body(seen: &support::Seen) -> Value {
    serde_json::from_slice(&seen.body).unwrap()
}

/// Each command: run, wait, logs.
fn command(server: Loopback, finished: &str, logs: &str) -> Loopback {
    server.answer(200, fixture("command.json")).answer(200, finished).answer_typed(200, NDJSON, logs)
}

/// Create in the operator's project on `/v3/sandboxes` (no `runtime`), the
/// archive link as the source, the lease as name and tag; the tarball is
/// committed as the baseline; teardown stops the session and deletes the
/// sandbox.
#[test]
fn provision_creates_in_the_project_commits_the_baseline_and_teardown_deletes() {
    let link = "https://codeload.github.com/acme/app/legacy.tar.gz/abc123?token=LINKTOKEN42";
    let mut server = Loopback::start()
        .answer(404, r#"{"error":{"code":"not_found","message":"Sandbox not found"}}"#)
        .answer(200, fixture("sandbox-and-session.json"));
    let done = fixture("command-finished.json").replace("\"exitCode\":3", "\"exitCode\":0");
    for _ in 0..3 {
        server = command(server, &done, "");
    }
    let server = server.answer(200, fixture("stop-session.json")).answer(200, fixture("delete-sandbox.json"));
    let vercel = vercel(server.client());
    let source = CheckoutSource::Archive { url: Secret::new(link), commit: "abc123".into(), authorization: None };
    let lease = Provision { lease_id: "lease-t1", writable: true, source: &source, checkout_timeout_ms: 120_000 };
    block_on(async {
        let p = vercel.provision(&request(), &lease).await.unwrap();
        assert_eq!((p.external_id.as_str(), p.root.as_str()), ("agent-zero-lease-t1/sess_4f1", "/vercel/sandbox"));
        vercel.stop(&p.external_id).await.unwrap();
    });
    let seen = server.seen();
    let calls: Vec<(&str, &str)> = seen.iter().map(|s| (s.method.as_str(), s.uri.as_str())).collect();
    let find = format!("{API}/v2/sandboxes/agent-zero-lease-t1?teamId=team_9&projectId=prj_42&resume=false");
    let run = format!("{API}/v2/sandboxes/sessions/sess_4f1/cmd?teamId=team_9");
    let wait = format!("{API}/v2/sandboxes/sessions/sess_4f1/cmd/cmd_1?teamId=team_9&wait=true");
    let logs = format!("{API}/v2/sandboxes/sessions/sess_4f1/cmd/cmd_1/logs?teamId=team_9");
    assert_eq!(calls[0], ("GET", find.as_str()));
    assert_eq!(calls[1], ("POST", &*format!("{API}/v3/sandboxes?teamId=team_9")));
    assert_eq!(calls[2..5], [("POST", run.as_str()), ("GET", wait.as_str()), ("GET", logs.as_str())]);
    assert_eq!(calls[11], ("POST", &*format!("{API}/v2/sandboxes/sessions/sess_4f1/stop?teamId=team_9")));
    assert_eq!(
        calls[12],
        ("DELETE", &*format!("{API}/v2/sandboxes/agent-zero-lease-t1?teamId=team_9&projectId=prj_42"))
    );
    let create = body(&seen[1]);
    assert_eq!(create["projectId"], "prj_42");
    assert!(create.get("runtime").is_none(), "a runtime sends the SDK to /v2/sandboxes");
    assert_eq!(create["source"], json!({"type": "tarball", "url": link}));
    assert_eq!(create["networkPolicy"], json!({"mode": "deny-all"}));
    assert_eq!(
        (create["name"].as_str(), create["tags"]["agentZeroLease"].as_str()),
        (Some("agent-zero-lease-t1"), Some("lease-t1"))
    );
    assert_eq!(create["timeout"], 600_000);
    let commit = body(&seen[8]);
    assert_eq!(commit["command"], "git");
    assert_eq!(commit["args"].as_array().unwrap().last().unwrap(), "agent-zero checkout of abc123");
    for s in &seen[2..] {
        assert!(!String::from_utf8_lossy(&s.body).contains("LINKTOKEN42") && !s.uri.contains("LINKTOKEN42"));
    }
    assert!(seen.iter().all(|s| s.headers["authorization"] == format!("Bearer {KEY}")));
}

/// Vercel fetches a tarball from a link alone: a forge archive that needs
/// its token in a header is refused before anything is sent, saying why.
#[test]
fn an_archive_needing_a_header_is_refused_before_any_call() {
    let server = Loopback::start();
    let vercel = vercel(server.client());
    let link = "https://gitea.example/api/v1/repos/acme/app/archive/abc123.tar.gz";
    let authorization = Some(ArchiveAuth { name: "authorization", value: Secret::new("token FORGE-TOKEN-5") });
    let source = CheckoutSource::Archive { url: Secret::new(link), commit: "abc123".into(), authorization };
    let lease = Provision { lease_id: "lease-t1", writable: true, source: &source, checkout_timeout_ms: 120_000 };
    let error = block_on(vercel.provision(&request(), &lease)).unwrap_err();
    let ProviderError::Refused { provider: "vercel", operation: "create sandbox", reason } = &error else {
        panic!("{error:?}")
    };
    assert!(reason.contains("takes a link only") && reason.contains("use another sandbox provider"), "{reason}");
    assert!(!format!("{error:?}").contains("FORGE-TOKEN"));
    assert!(server.seen().is_empty(), "nothing was sent");
}

/// A replay of the same lease finds the running sandbox by its name and
/// creates nothing; without a project nothing is sent at all.
#[test]
fn a_replay_finds_the_sandbox_and_a_missing_project_is_named() {
    let server = Loopback::start().answer(200, fixture("sandbox-and-session.json"));
    let vercel_ = vercel(server.client());
    let lease = Provision {
        lease_id: "lease-t1",
        writable: true,
        source: &CheckoutSource::PublicClone,
        checkout_timeout_ms: 120_000,
    };
    let p = block_on(vercel_.provision(&request(), &lease)).unwrap();
    assert_eq!(p.external_id, "agent-zero-lease-t1/sess_4f1");
    assert_eq!(server.seen().len(), 1, "found, not created");

    let server = Loopback::start();
    let unconfigured = VercelSandbox::new(server.client(), Secret::new(KEY), None);
    let error = block_on(unconfigured.provision(&request(), &lease)).unwrap_err();
    assert!(matches!(error, ProviderError::Refused { .. }) && error.to_string().contains("`VERCEL_PROJECT_ID`"));
    assert!(server.seen().is_empty());
}

/// A command runs with the sandbox-enforced `timeout`; its exit status,
/// duration and both streams come back, each stream bounded.
#[test]
fn a_command_runs_waits_and_reads_its_logs_bounded() {
    let long = format!("{{\"stream\":\"stdout\",\"data\":\"{}end\"}}\n", "x".repeat(5000));
    let server = command(Loopback::start(), &fixture("command-finished.json"), &fixture("logs.ndjson"));
    let server = command(server, &fixture("command-finished.json"), &long);
    let vercel = vercel(server.client());
    block_on(async {
        let out = vercel.exec(&session(), &exec(&["git", "status"], 5_000)).await.unwrap();
        assert_eq!((out.exit_code, out.stdout.as_str(), out.stderr.as_str()), (3, "on main\n", "warn\n"));
        assert_eq!((out.duration_ms, out.timed_out, out.truncated_bytes), (41, false, 0));
        let out = vercel.exec(&session(), &exec(&["git", "log"], 5_000)).await.unwrap();
        assert_eq!((out.stdout.len(), out.truncated_bytes), (1000, 4003));
        assert!(out.stdout.ends_with("end"));
    });
    let seen = server.seen();
    assert_eq!(
        body(&seen[0]),
        json!({"command": "git", "args": ["status"], "cwd": "/vercel/sandbox/src", "env": {"CI": "1"}, "sudo": false, "timeout": 5_000})
    );
}

/// Past its deadline a command is `timed_out`: killed by the sandbox (137
/// at the deadline), or, when the wait outlives the deadline, killed by
/// the adapter through `…/cmd/{id}/kill` with SIGKILL. An OOM-style 137
/// before the deadline is the command's own exit.
#[test]
fn a_command_past_its_deadline_is_killed_and_timed_out() {
    let server = command(Loopback::start(), &fixture("command-killed.json"), "");
    let early = fixture("command-killed.json").replace("5004", "120");
    let server = command(server, &early, "");
    let server = server
        .answer(200, fixture("command.json"))
        .answer_late(Duration::from_millis(1500), 200, fixture("command-killed.json"))
        .answer(200, fixture("command.json"))
        .answer_typed(200, NDJSON, fixture("logs.ndjson"));
    let vercel = vercel(server.client_capped(Duration::from_millis(400)));
    block_on(async {
        let out = vercel.exec(&session(), &exec(&["sleep", "60"], 5_000)).await.unwrap();
        assert!(out.timed_out && out.exit_code == 137, "{out:?}");
        let out = vercel.exec(&session(), &exec(&["eat-memory"], 5_000)).await.unwrap();
        assert!(!out.timed_out && out.exit_code == 137, "{out:?}");
        let out = vercel.exec(&session(), &exec(&["sleep", "60"], 5_000)).await.unwrap();
        assert!(out.timed_out && out.exit_code == -1 && out.stdout == "on main\n", "{out:?}");
    });
    let seen = server.seen();
    assert_eq!(seen[8].method, "POST");
    assert_eq!(seen[8].uri, format!("{API}/v2/sandboxes/sessions/sess_4f1/cmd/cmd_1/kill?teamId=team_9"));
    assert_eq!(body(&seen[8]), json!({"signal": 9}));
}

/// `410` is a stopped sandbox (gone), on commands and at teardown; a file
/// read answering 2xx JSON is an error, never content; a log stream's
/// `error` line is an error.
#[test]
fn gone_and_error_payloads_are_never_content() {
    let server = Loopback::start()
        .answer_typed(200, OCTETS, "fn main() {}\n")
        .answer_typed(200, "application/json", fixture("error-json.json"))
        .answer(410, fixture("gone.json"))
        .answer(410, fixture("gone.json"))
        .answer(404, r#"{"error":{"code":"not_found","message":"Sandbox not found"}}"#);
    let server = command(server, &fixture("command-finished.json"), &fixture("logs-error.ndjson"));
    let vercel = vercel(server.client());
    block_on(async {
        assert_eq!(vercel.read_file(&session(), "src/main.rs").await.unwrap(), b"fn main() {}\n");
        let error = vercel.read_file(&session(), "src").await.unwrap_err();
        assert!(error.to_string().contains("application/json, not a file"), "{error}");
        let gone = vercel.exec(&session(), &exec(&["ls"], 5_000)).await.unwrap_err();
        assert!(matches!(gone, ProviderError::NotFound { .. }), "{gone}");
        vercel.stop(&session().external_id).await.unwrap();
        let error = vercel.exec(&session(), &exec(&["ls"], 5_000)).await.unwrap_err();
        assert!(error.to_string().contains("the sandbox stopped while streaming logs"), "{error}");
    });
    let seen = server.seen();
    assert_eq!(body(&seen[0]), json!({"path": "/vercel/sandbox/src/main.rs"}));
    assert_eq!(seen[0].uri, format!("{API}/v2/sandboxes/sessions/sess_4f1/fs/read?teamId=team_9"));
}

/// A file is written as a gzipped tarball (`…/fs/write`, `x-cwd` the
/// checkout); its header mode is the file's: a rewritten executable stays
/// executable, a new file is 0644.
#[test]
fn a_rewritten_executable_stays_executable() {
    let x = "{\"stream\":\"stdout\",\"data\":\"x\\n\"}\n";
    let absent = "{\"stream\":\"stdout\",\"data\":\"-\\n\"}\n";
    let done = fixture("command-finished.json").replace("\"exitCode\":3", "\"exitCode\":0");
    let server = command(Loopback::start(), &done, x).answer(200, "{}");
    let server = command(server, &done, absent).answer(200, "{}");
    let vercel = vercel(server.client());
    block_on(async {
        vercel.write_file(&session(), "tools/run.sh", b"#!/bin/sh\n").await.unwrap();
        vercel.write_file(&session(), "src/new.rs", b"fn f() {}\n").await.unwrap();
    });
    let seen = server.seen();
    assert_eq!(body(&seen[0])["args"][2], "agent-zero-modes");
    assert_eq!(body(&seen[0])["args"][3], "tools/run.sh");
    for (write, mode) in [(&seen[3], b"0000755"), (&seen[7], b"0000644")] {
        assert_eq!(write.uri, format!("{API}/v2/sandboxes/sessions/sess_4f1/fs/write?teamId=team_9"));
        assert_eq!(
            (write.headers["content-type"].as_str(), write.headers["x-cwd"].as_str()),
            ("application/gzip", "/vercel/sandbox")
        );
        // gzip header (10) + stored block header (5), then the ustar header.
        assert_eq!(&write.body[15 + 100..15 + 107], mode);
    }
    assert_eq!(&seen[3].body[15..15 + 12], b"tools/run.sh");
}
