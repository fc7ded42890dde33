//! The worker's own entry module (functions/cloudflare/entry.mjs) keeps
//! what worker-build's shim gave: after a call into wasm ends the way a trap
//! does, the next request gets a fresh instance and is served. workerd only:
//! a Spin component instance serves one request and is dropped.

use agent_zero_e2e::{Runtime, Server, ServerOptions, repo_root};

use crate::Case;

pub(crate) const CASES: &[Case] = &[Case {
    name: "worker_serves_again_after_its_wasm_instance_is_terminated",
    run: worker_serves_again_after_its_wasm_instance_is_terminated,
}];

const SECRET: &str = "e2e-entry-secret";

fn worker_serves_again_after_its_wasm_instance_is_terminated(runtime: Runtime) {
    if runtime != Runtime::Workerd {
        return;
    }
    let options = ServerOptions {
        vars: vec![("GITHUB_WEBHOOK_SECRET".to_owned(), SECRET.to_owned())],
        // The built entry behind a wrapper with one more route (see the file).
        entry: Some(repo_root().join("tests/e2e/entries/trap.mjs")),
        ..ServerOptions::default()
    };
    let server = Server::start(runtime, &options).unwrap_or_else(|e| panic!("{e}"));
    let ping = std::fs::read(repo_root().join("tests/fixtures/github-webhooks/ping/payload.json"))
        .unwrap_or_else(|e| panic!("the ping fixture: {e}"));
    // A verified delivery first: the isolate holds settings and the imported key.
    let before = server.deliver_github(SECRET, "ping", "entry-before", &ping);
    assert_eq!(before.status, 200, "{}", before.text());

    let terminated = server.send("POST", "/__e2e/terminate", &[], b"");
    assert_eq!(terminated.status, 500, "the call into wasm did not throw: {}", terminated.text());
    // The glue rethrows it as its own error once it has marked the instance.
    assert!(terminated.text().starts_with("terminated: "), "{}", terminated.text());

    // The old instance would answer every call with "Module terminated".
    let health = server.send("GET", "/api/v1/health", &[], b"");
    assert_eq!(health.status, 200, "{}", health.text());
    for n in 0..3 {
        let after = server.deliver_github(SECRET, "ping", &format!("entry-after-{n}"), &ping);
        assert_eq!(after.status, 200, "delivery {n} after the fresh instance: {}", after.text());
        assert_eq!(after.json()["pong"], true, "{}", after.text());
    }
}
