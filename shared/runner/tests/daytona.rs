//! The Daytona adapter against its last release's shapes (`fixtures/daytona`,
//! v0.190.0): every request goes over real HTTP to a loopback server.

mod support;

use std::collections::BTreeMap;

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::Secret;
use agent_zero_runner::providers::Daytona;
use agent_zero_runner::{CheckoutSource, Exec, FileMode, Provision, SandboxProvider, SandboxRef, SandboxRequest};
use serde_json::{Value, json};
use support::{Loopback, block_on};

const KEY: &str = "daytona-key-0c0ffee";
const API: &str = "https://app.daytona.io/api";
const TOOLBOX: &str = "https://proxy.app.daytona.io/toolbox/d1";
const DONE: &str = r#"{"exitCode":0,"result":""}"#;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/daytona/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn request(network: NetworkPolicy) -> SandboxRequest {
    SandboxRequest::new("t1", "acme/app", "main", RunMode::Fix, true, network, 600_000)
}

const LEASE: Provision<'static> = Provision {
    lease_id: "lease-t1",
    writable: true,
    source: &CheckoutSource::PublicClone,
    checkout_timeout_ms: 120_000,
};

fn exec(argv: &[&str]) -> Exec {
    Exec {
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        cwd: "src".into(),
        timeout_ms: 5_000,
        max_output_bytes: 1000,
        env: BTreeMap::from([("CI".to_owned(), "1".to_owned())]),
    }
}

fn sandbox() -> SandboxRef {
    SandboxRef { external_id: "d1".into(), root: "/home/daytona/repo".into() }
}

fn body(seen: &support::Seen) -> Value {
    serde_json::from_slice(&seen.body).unwrap()
}

/// Create names the sandbox after the lease with `autoDeleteInterval: 0`;
/// provisioning waits for `started` before the checkout; teardown deletes.
#[test]
fn provision_waits_for_started_and_teardown_deletes() {
    let server = Loopback::start()
        .answer(404, fixture("not-found.json"))
        .answer(200, fixture("sandbox-creating.json"))
        .answer(200, fixture("sandbox-creating.json"))
        .answer(200, fixture("sandbox-started.json"))
        .answer(200, DONE)
        .answer(200, DONE)
        .answer(200, DONE)
        .answer(200, "");
    let daytona = Daytona::new(server.client(), Secret::new(KEY));
    block_on(async {
        let p = daytona.provision(&request(NetworkPolicy::Full), &LEASE).await.unwrap();
        assert_eq!((p.external_id.as_str(), p.root.as_str()), ("d1", "/home/daytona/repo"));
        daytona.stop("d1").await.unwrap();
    });
    let seen = server.seen();
    let calls: Vec<(&str, &str)> = seen.iter().map(|s| (s.method.as_str(), s.uri.as_str())).collect();
    assert_eq!(
        calls[..4],
        [
            ("GET", &*format!("{API}/sandbox/agent-zero-lease-t1")),
            ("POST", &*format!("{API}/sandbox")),
            ("GET", &*format!("{API}/sandbox/d1")),
            ("GET", &*format!("{API}/sandbox/d1")),
        ]
    );
    assert_eq!(calls[4], ("POST", &*format!("{TOOLBOX}/process/execute")));
    assert_eq!(calls[7], ("DELETE", &*format!("{API}/sandbox/d1")));
    let create = body(&seen[1]);
    assert_eq!(
        (create["name"].as_str(), create["autoDeleteInterval"].as_i64()),
        (Some("agent-zero-lease-t1"), Some(0))
    );
    assert_eq!(create["labels"]["agent-zero-lease"], "lease-t1");
    assert_eq!(create["autoStopInterval"], 10);
    assert_eq!(create["networkBlockAll"], false);
    assert!(seen.iter().all(|s| s.headers["authorization"] == format!("Bearer {KEY}")));
}

/// A sandbox that ends in `error` fails provisioning with its reason and is
/// deleted; a replay of a lease finds its sandbox by name and creates none.
#[test]
fn a_failed_start_is_torn_down_and_a_replay_creates_nothing() {
    let server = Loopback::start()
        .answer(404, fixture("not-found.json"))
        .answer(200, fixture("sandbox-error.json"))
        .answer(200, "")
        .answer(200, fixture("sandbox-started.json"))
        .answer(200, DONE)
        .answer(200, DONE)
        .answer(200, DONE);
    let daytona = Daytona::new(server.client(), Secret::new(KEY));
    block_on(async {
        let error = daytona.provision(&request(NetworkPolicy::None), &LEASE).await.unwrap_err();
        assert!(error.to_string().contains("no runner available in region us"), "{error}");
        let p = daytona.provision(&request(NetworkPolicy::None), &LEASE).await.unwrap();
        assert_eq!(p.external_id, "d1");
    });
    let seen = server.seen();
    assert_eq!((seen[2].method.as_str(), seen[2].uri.as_str()), ("DELETE", &*format!("{API}/sandbox/d1")));
    assert_eq!(body(&seen[1])["networkBlockAll"], true);
    assert_eq!(
        (seen[3].method.as_str(), seen[3].uri.as_str()),
        ("GET", &*format!("{API}/sandbox/agent-zero-lease-t1"))
    );
    assert!(seen[3..].iter().all(|s| !(s.method == "POST" && s.uri.ends_with("/api/sandbox"))), "no second sandbox");
}

/// The argv is quoted word by word, the environment goes in `envs` (never
/// on the command line), output is bounded, a `408` is `timed_out`, and the
/// file listing never holds git's stderr.
#[test]
fn commands_are_quoted_bounded_and_timed_out_on_408() {
    let long = json!({"exitCode": 0, "result": format!("{}tail", "x".repeat(4000))}).to_string();
    let server = Loopback::start()
        .answer(200, fixture("sandbox-started.json"))
        .answer(200, fixture("execute.json"))
        .answer(200, &long)
        .answer(408, fixture("execute-timeout.json"))
        .answer(200, r#"{"exitCode":0,"result":"a.rs\u0000src/b.rs\u0000"}"#)
        .answer(500, format!(r#"{{"statusCode":500,"message":"invalid key {KEY}"}}"#))
        .answer(200, r#"{"exitCode":0,"result":"x\nf\nl\n-\n"}"#);
    let daytona = Daytona::new(server.client(), Secret::new(KEY));
    block_on(async {
        let out = daytona.exec(&sandbox(), &exec(&["grep", "-r", "it's $(x)", "."])).await.unwrap();
        assert_eq!((out.exit_code, out.stdout.as_str()), (1, "FAIL: it's broken\n"));
        let out = daytona.exec(&sandbox(), &exec(&["cat", "big"])).await.unwrap();
        assert_eq!((out.stdout.len(), out.truncated_bytes, out.stdout.ends_with("tail")), (1000, 3004, true));
        let slow = daytona.exec(&sandbox(), &exec(&["sleep", "60"])).await.unwrap();
        assert!(slow.timed_out && slow.exit_code == -1, "a 408 is a timeout, not an error: {slow:?}");
        assert_eq!(daytona.list_files(&sandbox()).await.unwrap(), ["a.rs", "src/b.rs"]);
        let error = daytona.read_file(&sandbox(), "a.rs").await.unwrap_err();
        assert!(error.to_string().contains("500") && !error.to_string().contains(KEY), "{error}");
        let paths = ["run.sh", "a.rs", "link", "gone"].map(String::from);
        let modes = daytona.file_modes(&sandbox(), &paths).await.unwrap();
        assert_eq!(modes, [Some(FileMode::Executable), Some(FileMode::Regular), Some(FileMode::Symlink), None]);
    });
    let seen = server.seen();
    assert_eq!(seen[0].uri, format!("{API}/sandbox/d1"));
    assert_eq!(
        body(&seen[1]),
        json!({"command": r#"grep -r 'it'\''s $(x)' ."#, "cwd": "/home/daytona/repo/src", "timeout": 5, "envs": {"CI": "1"}})
    );
    assert_eq!(body(&seen[4])["command"], "git ls-files -z --cached --others --exclude-standard 2>/dev/null");
    assert_eq!(seen[5].uri, format!("{TOOLBOX}/files/download?path=%2Fhome%2Fdaytona%2Frepo%2Fa.rs"));
    // One fixed script; the paths are its arguments, never script text.
    let modes = body(&seen[6])["command"].as_str().unwrap().to_owned();
    assert!(modes.starts_with("sh -c 'for f do if [ -L \"$f\" ]"), "{modes}");
    assert!(modes.ends_with("' agent-zero-modes run.sh a.rs link gone"), "{modes}");
}
