//! Provider adapters against a loopback HTTP server answering in each
//! provider's documented response shapes; every request goes over real HTTP.

mod support;

use std::collections::BTreeMap;

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::Secret;
use agent_zero_runner::providers::{CloudflareSandbox, CustomSandbox, E2b};
use agent_zero_runner::{
    ArchiveAuth, CheckoutSource, Exec, FileMode, Provision, SandboxProvider, SandboxRef, SandboxRequest,
};
use support::{Loopback, block_on};

const KEY: &str = "provider-key-0c0ffee";

fn request(network: NetworkPolicy) -> SandboxRequest {
    SandboxRequest::new("t1", "acme/app", "main", RunMode::Fix, true, network, 600_000)
}

const PUBLIC: CheckoutSource = CheckoutSource::PublicClone;

fn provision<'a>(writable: bool, source: &'a CheckoutSource) -> Provision<'a> {
    Provision { lease_id: "lease-t1", writable, source, checkout_timeout_ms: 120_000 }
}

fn exec(argv: &[&str]) -> Exec {
    Exec {
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        cwd: "src".into(),
        timeout_ms: 5_000,
        max_output_bytes: 1000,
        env: BTreeMap::new(),
    }
}

fn envelope(flags: u8, json: &str) -> Vec<u8> {
    let mut out = vec![flags];
    out.extend((json.len() as u32).to_be_bytes());
    out.extend(json.as_bytes());
    out
}

#[test]
fn e2b_create_clone_exec_and_kill() {
    let end =
        [envelope(0, r#"{"event":{"end":{"exited":true,"status":"exit status 0"}}}"#), envelope(2, "{}")].concat();
    let out = [envelope(0, r#"{"event":{"data":{"stdout":"b2sK"}}}"#), end.clone()].concat();
    let server = Loopback::start()
        .answer(200, "[]")
        .answer(201, r#"{"templateID":"base","sandboxID":"sbx1","clientID":"c","envdVersion":"0.2","envdAccessToken":"envd-tok-77","domain":null}"#)
        .answer(200, &end)
        .answer(200, &end)
        .answer(200, &end)
        .answer(200, &out)
        .answer(404, r#"{"code":404,"message":"sandbox not found"}"#);
    let e2b = E2b::new(server.client(), Secret::new(KEY), "base");
    block_on(async {
        let p = e2b.provision(&request(NetworkPolicy::Restricted), &provision(true, &PUBLIC)).await.unwrap();
        assert_eq!(p.network, NetworkPolicy::Restricted, "E2B enforces denyOut/allowOut");
        assert_eq!((p.external_id.as_str(), p.root.as_str(), p.isolated), ("sbx1", "/home/user/repo", true));
        let sandbox = SandboxRef { external_id: p.external_id, root: p.root };
        let result = e2b.exec(&sandbox, &exec(&["cargo", "test"])).await.unwrap();
        assert_eq!((result.exit_code, result.stdout.as_str()), (0, "ok\n"));
        e2b.stop("sbx1").await.unwrap(); // 404 = already gone
    });
    let seen = server.seen();
    assert_eq!(seen[0].uri, "https://api.e2b.app/v2/sandboxes?metadata=agentZeroLease%3Dlease-t1&state=running");
    assert_eq!(seen[1].uri, "https://api.e2b.app/sandboxes");
    assert_eq!(seen[1].headers["x-api-key"], KEY);
    let create: serde_json::Value = serde_json::from_slice(&seen[1].body).unwrap();
    assert_eq!(create["timeout"], 600);
    assert_eq!(create["network"]["denyOut"][0], "0.0.0.0/0");
    assert_eq!(seen[2].uri, "https://49983-sbx1.e2b.app/process.Process/Start");
    assert_eq!(create["metadata"]["agentZeroLease"], "lease-t1");
    // The public clone fetches exactly the one commit, shallow.
    let fetch: serde_json::Value = serde_json::from_slice(&seen[3].body[5..]).unwrap();
    assert_eq!(
        fetch["process"]["args"],
        serde_json::json!([
            "-C",
            "/home/user/repo",
            "fetch",
            "--quiet",
            "--depth",
            "1",
            "--",
            "https://github.com/acme/app.git",
            "main"
        ])
    );
    assert_eq!(seen[5].headers["x-access-token"], "envd-tok-77");
    assert_eq!(seen[5].headers["content-type"], "application/connect+json");
    let start: serde_json::Value = serde_json::from_slice(&seen[5].body[5..]).unwrap();
    assert_eq!(start["process"]["cmd"], "cargo");
    assert_eq!(start["process"]["cwd"], "/home/user/repo/src");
    assert!(!format!("{e2b:?}").contains("envd-tok-77") && !format!("{e2b:?}").contains(KEY));
}

#[test]
fn cloudflare_bridge_sse_and_refusals() {
    let sse = "event: stdout\ndata: aGkK\n\nevent: stderr\ndata: ZXJyCg==\n\nevent: exit\ndata: {\"exit_code\":0}\n\n";
    let killed = "event: exit\ndata: {\"exit_code\":124}\n\n";
    let server = Loopback::start()
        .answer(200, sse)
        .answer(401, format!("{{\"error\":\"bad token {KEY}\"}}"))
        .answer(200, killed);
    let base = server.base_url();
    let bridge = CloudflareSandbox::new(server.client(), format!("{base}/"), Secret::new(KEY));
    block_on(async {
        let sandbox = SandboxRef { external_id: "abc".into(), root: "/workspace/repo".into() };
        let with_env = Exec { env: BTreeMap::from([("CI".to_owned(), "1".to_owned())]), ..exec(&["ls"]) };
        let out = bridge.exec(&sandbox, &with_env).await.unwrap();
        assert_eq!((out.exit_code, out.stdout.as_str(), out.stderr.as_str()), (0, "hi\n", "err\n"));
        let error = bridge.read_file(&sandbox, "a b.txt").await.unwrap_err();
        assert!(error.to_string().contains("401") && !error.to_string().contains(KEY), "{error}");
        let refused = bridge.provision(&request(NetworkPolicy::None), &provision(false, &PUBLIC)).await.unwrap_err();
        assert!(refused.to_string().contains("none"), "{refused}");
        // No egress control in the bridge: `restricted` would be a claim, not a policy.
        let refused =
            bridge.provision(&request(NetworkPolicy::Restricted), &provision(false, &PUBLIC)).await.unwrap_err();
        assert!(refused.to_string().contains("`restricted` is not enforceable"), "{refused}");
        let out = bridge.exec(&sandbox, &exec(&["sleep", "60"])).await.unwrap();
        assert!(out.timed_out && out.exit_code == 124, "{out:?}");
    });
    let seen = server.seen();
    assert_eq!(seen[0].uri, format!("{base}/v1/sandbox/abc/exec"));
    let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    // cloudflare/sandbox-sdk `packages/sandbox/src/bridge/types.ts` (6abf639):
    // `ExecRequest` is argv, timeout_ms and cwd; an environment rides in
    // argv, behind the wrapper that proves the checkout is still there and
    // enters the working directory.
    let argv: Vec<&str> = body["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(argv[..2], ["sh", "-c"]);
    assert!(argv[2].starts_with("[ -e /workspace/repo/.git/agent-zero-checkout ]"), "{}", argv[2]);
    assert_eq!(argv[3..], ["sh", "/workspace/repo/src", "env", "CI=1", "ls"]);
    assert_eq!(body["timeout_ms"], 5_000);
    assert!(body.get("env").is_none());
    assert!(body.get("cwd").is_none(), "the wrapper enters the directory");
    assert_eq!(seen[1].uri, format!("{base}/v1/sandbox/abc/file/workspace/repo/a%20b.txt"));
}

/// A bridge sandbox sleeps when idle and wakes empty: the checkout marker
/// written at provisioning tells a lost checkout from a command's own
/// failure and from a missing file.
#[test]
fn cloudflare_bridge_reports_a_lost_checkout() {
    let ok = "event: exit\ndata: {\"exit_code\":0}\n\n";
    // The wrapper's own line on stderr, and its status.
    let lost = "event: stderr\ndata: YWdlbnQtemVybzogY2hlY2tvdXQgbG9zdAo=\n\nevent: exit\ndata: {\"exit_code\":75}\n\n";
    // A command that exits 75 by itself says something else.
    let own = "event: stderr\ndata: bG9zdCBteSB3YXkK\n\nevent: exit\ndata: {\"exit_code\":75}\n\n";
    let missing = r#"{"error":"not found"}"#;
    let mut server = Loopback::start().answer(200, r#"{"id":"sb-9"}"#);
    // git init, fetch, checkout (a public clone), then the marker.
    for _ in 0..4 {
        server = server.answer(200, ok);
    }
    let server = server
        .answer(200, lost)
        .answer(200, own)
        .answer(404, missing)
        .answer(404, missing)
        .answer(404, missing)
        .answer(200, "x");
    let base = server.base_url();
    let bridge = CloudflareSandbox::new(server.client(), base.clone(), Secret::new(KEY));
    block_on(async {
        let p = bridge.provision(&request(NetworkPolicy::Full), &provision(true, &PUBLIC)).await.unwrap();
        let sandbox = SandboxRef { external_id: p.external_id, root: p.root };
        let error = bridge.exec(&sandbox, &exec(&["cargo", "test"])).await.unwrap_err();
        assert!(matches!(error, agent_zero_runner::ProviderError::CheckoutLost { .. }), "{error}");
        assert!(error.to_string().contains("sleepAfter"), "the fix is named: {error}");
        let out = bridge.exec(&sandbox, &exec(&["./exit75"])).await.unwrap();
        assert_eq!((out.exit_code, out.stderr.as_str()), (75, "lost my way\n"), "a command's own status stands");
        // Neither the file nor the marker: the checkout is gone.
        let error = bridge.read_file(&sandbox, "src/lib.rs").await.unwrap_err();
        assert!(matches!(error, agent_zero_runner::ProviderError::CheckoutLost { .. }), "{error}");
        // The marker is there: the file is simply missing.
        let error = bridge.read_file(&sandbox, "src/gone.rs").await.unwrap_err();
        assert!(matches!(error, agent_zero_runner::ProviderError::NotFound { .. }), "{error}");
    });
    let seen = server.seen();
    let bodies: Vec<serde_json::Value> = seen[1..5].iter().map(|s| serde_json::from_slice(&s.body).unwrap()).collect();
    // The checkout itself runs unwrapped; the marker comes last.
    assert!(bodies[..3].iter().all(|b| b["argv"][0] == "git"), "{bodies:?}");
    assert_eq!(bodies[3]["argv"], serde_json::json!(["touch", "/workspace/repo/.git/agent-zero-checkout"]));
    let reads: Vec<&str> = seen[7..].iter().map(|s| s.uri.strip_prefix(&base).unwrap()).collect();
    assert_eq!(
        reads,
        [
            "/v1/sandbox/sb-9/file/workspace/repo/src/lib.rs",
            "/v1/sandbox/sb-9/file/workspace/repo/.git/agent-zero-checkout",
            "/v1/sandbox/sb-9/file/workspace/repo/src/gone.rs",
            "/v1/sandbox/sb-9/file/workspace/repo/.git/agent-zero-checkout",
        ]
    );
}

#[test]
fn custom_protocol_leases_runs_files_and_release() {
    let server = Loopback::start()
        .answer(201, r#"{"leaseId":"lease-7","isolated":false,"writable":true,"network":"restricted","checkout":{"ref":"main","commit":"3f2c"}}"#)
        .answer(200, r#"{"exitCode":101,"stdout":"","stderr":"tail\n","durationMs":48,"truncatedBytes":3,"timedOut":false}"#)
        .answer(200, r#"{"path":"src/lib.rs","content":"fn main() {}\n"}"#)
        .answer(403, format!(r#"{{"error":{{"code":"read-only","message":"token {KEY} is read-only"}}}}"#))
        .answer(200, r#"{"files":["Cargo.toml","src/lib.rs"]}"#)
        .answer(200, r#"{"diff":"diff --git a/x b/x\n"}"#)
        .answer(200, r#"{"modes":["100755",null,"120000"]}"#)
        .answer(204, "");
    let base = server.base_url();
    let custom = CustomSandbox::new(server.client(), base.clone(), Secret::new(KEY));
    block_on(async {
        let p = custom.provision(&request(NetworkPolicy::Restricted), &provision(true, &PUBLIC)).await.unwrap();
        assert_eq!((p.external_id.as_str(), p.isolated), ("lease-7", false));
        assert_eq!(p.network, NetworkPolicy::Full, "a server that names no enforcement enforces nothing");
        let sandbox = SandboxRef { external_id: p.external_id, root: p.root };
        let out = custom.exec(&sandbox, &exec(&["cargo", "test"])).await.unwrap();
        assert_eq!((out.exit_code, out.stderr.as_str(), out.duration_ms, out.truncated_bytes), (101, "tail\n", 48, 3));
        assert_eq!(custom.read_file(&sandbox, "src/lib.rs").await.unwrap(), b"fn main() {}\n");
        let error = custom.write_file(&sandbox, "src/lib.rs", b"x").await.unwrap_err();
        assert!(error.to_string().contains("403") && !error.to_string().contains(KEY), "{error}");
        assert_eq!(custom.list_files(&sandbox).await.unwrap(), ["Cargo.toml", "src/lib.rs"]);
        assert_eq!(custom.diff(&sandbox).await.unwrap(), "diff --git a/x b/x\n");
        let paths = ["run.sh", "gone", "link"].map(String::from);
        let modes = custom.file_modes(&sandbox, &paths).await.unwrap();
        assert_eq!(modes, [Some(FileMode::Executable), None, Some(FileMode::Symlink)]);
        custom.stop("lease-7").await.unwrap();
    });
    let seen = server.seen();
    let calls: Vec<(&str, &str)> =
        seen.iter().map(|s| (s.method.as_str(), s.uri.strip_prefix(&base).unwrap())).collect();
    assert_eq!(
        calls,
        [
            ("POST", "/v1/leases"),
            ("POST", "/v1/leases/lease-7/run"),
            ("POST", "/v1/leases/lease-7/read"),
            ("POST", "/v1/leases/lease-7/write"),
            ("GET", "/v1/leases/lease-7/files"),
            ("GET", "/v1/leases/lease-7/diff"),
            ("POST", "/v1/leases/lease-7/modes"),
            ("DELETE", "/v1/leases/lease-7"),
        ]
    );
    assert!(seen.iter().all(|s| s.headers["authorization"] == format!("Bearer {KEY}")));
    let create: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(
        create,
        serde_json::json!({"taskId":"t1","repository":"acme/app","ref":"main","writable":true,"network":"restricted","leaseMs":600_000,"idempotencyKey":"lease-t1"})
    );
    let run: serde_json::Value = serde_json::from_slice(&seen[1].body).unwrap();
    assert_eq!(
        (run["argv"][1].as_str(), run["cwd"].as_str(), run["timeoutMs"].as_u64()),
        (Some("test"), Some("src"), Some(5_000))
    );
    assert!(!format!("{custom:?}").contains(KEY));
}

/// The harness itself: a request to a public host arrives on loopback with
/// method, path, query, headers and body intact, under its original URL.
#[test]
fn loopback_preserves_the_request_and_its_origin() {
    use agent_zero_ports::HttpClient;
    let server = Loopback::start().answer(418, "teapot");
    let request = http::Request::builder()
        .method("PUT")
        .uri("https://api.example.com/a/b%20c?x=1&y=%2F")
        .header("x-api-key", KEY)
        .body(b"\x00payload\xff".to_vec())
        .unwrap();
    let response = block_on(server.client().send(request)).unwrap();
    assert_eq!((response.status().as_u16(), response.body().as_slice()), (418, &b"teapot"[..]));
    let seen = server.seen();
    assert_eq!((seen[0].method.as_str(), seen[0].uri.as_str()), ("PUT", "https://api.example.com/a/b%20c?x=1&y=%2F"));
    assert_eq!(seen[0].headers["x-api-key"], KEY);
    assert_eq!(seen[0].headers["host"], server.base_url().trim_start_matches("http://"));
    assert_eq!(seen[0].body, b"\x00payload\xff");
}

/// A request the script did not expect fails the test that made it.
#[test]
#[should_panic(expected = "unscripted requests")]
fn loopback_rejects_unscripted_requests() {
    use agent_zero_ports::HttpClient;
    let server = Loopback::start();
    let request = http::Request::builder().uri("https://api.e2b.app/sandboxes").body(Vec::new()).unwrap();
    let response = block_on(server.client().send(request)).unwrap();
    assert_eq!(response.status().as_u16(), 599);
    server.seen();
}

/// An archive checkout through a vendor that takes files: the edge
/// downloads the link (no credential header), uploads the bytes, unpacks
/// and commits a baseline with argv that never contain the link.
#[test]
fn e2b_archive_checkout_uploads_and_never_puts_the_link_in_a_command() {
    let link = "https://codeload.github.com/acme/app/legacy.tar.gz/abc123?token=LINKTOKEN42";
    let end =
        [envelope(0, r#"{"event":{"end":{"exited":true,"status":"exit status 0"}}}"#), envelope(2, "{}")].concat();
    let mut server = Loopback::start()
        .answer(200, "[]")
        .answer(201, r#"{"templateID":"base","sandboxID":"sbx2","clientID":"c","envdVersion":"0.2","envdAccessToken":"envd-tok-78","domain":null}"#)
        .answer(200, "gzip-archive-bytes")
        .answer(200, "[]");
    for _ in 0..6 {
        server = server.answer(200, &end);
    }
    let e2b = E2b::new(server.client(), Secret::new(KEY), "base");
    let source = CheckoutSource::Archive { url: Secret::new(link), commit: "abc123".into(), authorization: None };
    block_on(async {
        let p = e2b.provision(&request(NetworkPolicy::None), &provision(true, &source)).await.unwrap();
        assert_eq!(p.external_id, "sbx2");
    });
    let seen = server.seen();
    assert_eq!(seen[2].uri, link);
    assert!(!seen[2].headers.contains_key("authorization") && !seen[2].headers.contains_key("x-api-key"));
    assert!(seen[3].uri.starts_with("https://49983-sbx2.e2b.app/files"), "{}", seen[3].uri);
    let argvs: Vec<serde_json::Value> = seen[4..]
        .iter()
        .map(|s| serde_json::from_slice::<serde_json::Value>(&s.body[5..]).unwrap()["process"].clone())
        .collect();
    assert_eq!(argvs[1]["cmd"], "tar");
    assert_eq!(argvs[5]["args"][argvs[5]["args"].as_array().unwrap().len() - 1], "agent-zero checkout of abc123");
    for s in &seen[3..] {
        assert!(
            !String::from_utf8_lossy(&s.body).contains("LINKTOKEN42") && !s.uri.contains("LINKTOKEN42"),
            "{}",
            s.uri
        );
    }
    let create: serde_json::Value = serde_json::from_slice(&seen[1].body).unwrap();
    assert_eq!(create["allow_internet_access"], false, "the edge fetched the code, so the sandbox needs no egress");
}

/// A forge archive that needs its token in a header (GitLab's
/// `private-token`): the edge's download carries it, marked sensitive, and
/// no other request (the vendor's API, the upload, any argv) does.
#[test]
fn e2b_archive_download_carries_the_forge_header_and_nothing_else_does() {
    let link = "https://gitlab.example/api/v4/projects/7/repository/archive.tar.gz?sha=abc123";
    let end =
        [envelope(0, r#"{"event":{"end":{"exited":true,"status":"exit status 0"}}}"#), envelope(2, "{}")].concat();
    let mut server = Loopback::start()
        .answer(200, "[]")
        .answer(201, r#"{"templateID":"base","sandboxID":"sbx4","clientID":"c","envdVersion":"0.2","envdAccessToken":"envd-tok-80","domain":null}"#)
        .answer(200, "gzip-archive-bytes")
        .answer(200, "[]");
    for _ in 0..6 {
        server = server.answer(200, &end);
    }
    let e2b = E2b::new(server.client(), Secret::new(KEY), "base");
    let authorization = Some(ArchiveAuth { name: "private-token", value: Secret::new("glpat-FORGE-TOKEN-77") });
    let source = CheckoutSource::Archive { url: Secret::new(link), commit: "abc123".into(), authorization };
    block_on(async { e2b.provision(&request(NetworkPolicy::None), &provision(true, &source)).await.unwrap() });
    let seen = server.seen();
    assert_eq!((seen[2].method.as_str(), seen[2].uri.as_str()), ("GET", link));
    assert_eq!(seen[2].headers["private-token"], "glpat-FORGE-TOKEN-77");
    assert!(!seen[2].headers.contains_key("x-api-key"), "the vendor's key never goes to the forge");
    for (i, s) in seen.iter().enumerate().filter(|(i, _)| *i != 2) {
        let headers = format!("{:?}", s.headers);
        assert!(
            !String::from_utf8_lossy(&s.body).contains("FORGE-TOKEN") && !headers.contains("FORGE-TOKEN"),
            "request {i} ({}) carries the forge token",
            s.uri
        );
    }
}

/// A forge that refuses the token and echoes it back: the error names the
/// status, never the header value (nor the link); the sandbox is killed.
#[test]
fn a_refused_archive_download_never_shows_the_header_value() {
    let server = Loopback::start()
        .answer(200, "[]")
        .answer(201, r#"{"templateID":"base","sandboxID":"sbx5","clientID":"c","envdVersion":"0.2","envdAccessToken":"envd-tok-81","domain":null}"#)
        .answer(401, r#"{"message":"token token gitea-FORGE-TOKEN-78 is invalid"}"#)
        .answer(204, "");
    let e2b = E2b::new(server.client(), Secret::new(KEY), "base");
    let link = "https://gitea.example/api/v1/repos/acme/app/archive/abc123.tar.gz";
    let authorization = Some(ArchiveAuth { name: "authorization", value: Secret::new("token gitea-FORGE-TOKEN-78") });
    let source = CheckoutSource::Archive { url: Secret::new(link), commit: "abc123".into(), authorization };
    let error = block_on(e2b.provision(&request(NetworkPolicy::None), &provision(true, &source))).unwrap_err();
    let (text, debug) = (error.to_string(), format!("{error:?}"));
    assert!(text.contains("download checkout answered 401"), "{text}");
    assert!(!text.contains("FORGE-TOKEN") && !debug.contains("FORGE-TOKEN"), "{debug}");
    let seen = server.seen();
    assert_eq!(seen[2].headers["authorization"], "token gitea-FORGE-TOKEN-78");
    assert_eq!((seen[3].method.as_str(), seen[3].uri.as_str()), ("DELETE", "https://api.e2b.app/sandboxes/sbx5"));
}

/// The custom protocol takes the link in the create body only, with the
/// lease id as idempotency key and the checkout bound.
#[test]
fn custom_archive_link_goes_in_the_create_body_only() {
    let server = Loopback::start().answer(201, r#"{"leaseId":"lease-8","isolated":false}"#);
    let custom = CustomSandbox::new(server.client(), server.base_url(), Secret::new(KEY));
    let source = CheckoutSource::Archive {
        url: Secret::new("http://127.0.0.1:1/_codeload/x?token=T0K"),
        commit: "abc".into(),
        authorization: None,
    };
    let request = request(NetworkPolicy::None);
    block_on(async { custom.provision(&request, &provision(false, &source)).await.unwrap() });
    let create: serde_json::Value = serde_json::from_slice(&server.seen()[0].body).unwrap();
    assert_eq!(
        create["archive"],
        serde_json::json!({"url": "http://127.0.0.1:1/_codeload/x?token=T0K", "commit": "abc", "timeoutMs": 120_000})
    );
    assert_eq!(create["idempotencyKey"], "lease-t1");
    assert!(!serde_json::to_string(&request).unwrap().contains("T0K"));
    assert!(!format!("{source:?}").contains("T0K"));
}

/// A forge archive that needs a header: `archive.authorization` in the
/// create body (only there), never in the recorded request or the source's
/// `Debug`; a server answer echoing it is scrubbed from the error.
#[test]
fn custom_archive_header_goes_in_the_create_body_only() {
    let link = "http://127.0.0.1:1/api/v4/projects/7/repository/archive.tar.gz?sha=abc&token=T0K";
    let echo =
        format!(r#"{{"error":{{"code":"archive-failed","message":"bad token Bearer glpat-HDR-TOKEN-9 for {link}"}}}}"#);
    let server = Loopback::start().answer(201, r#"{"leaseId":"lease-9","isolated":false}"#).answer(502, echo);
    let custom = CustomSandbox::new(server.client(), server.base_url(), Secret::new(KEY));
    let authorization = Some(ArchiveAuth { name: "authorization", value: Secret::new("Bearer glpat-HDR-TOKEN-9") });
    let source = CheckoutSource::Archive { url: Secret::new(link), commit: "abc".into(), authorization };
    let request = request(NetworkPolicy::None);
    block_on(async { custom.provision(&request, &provision(false, &source)).await.unwrap() });
    let error = block_on(custom.provision(&request, &provision(false, &source))).unwrap_err();
    let seen = server.seen();
    let create: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(
        create["archive"],
        serde_json::json!({"url": link, "commit": "abc", "timeoutMs": 120_000,
            "authorization": {"name": "authorization", "value": "Bearer glpat-HDR-TOKEN-9"}})
    );
    // The server's own bearer token is the request's header; the forge's is in the body only.
    assert_eq!(seen[0].headers["authorization"], format!("Bearer {KEY}"));
    assert!(!serde_json::to_string(&request).unwrap().contains("HDR-TOKEN"));
    let debug = format!("{source:?}");
    assert!(!debug.contains("HDR-TOKEN") && debug.contains("name: \"authorization\""), "{debug}");
    let (text, debug) = (error.to_string(), format!("{error:?}"));
    assert!(text.contains("502") && text.contains("archive-failed"), "{text}");
    for shown in [&text, &debug] {
        assert!(!shown.contains("HDR-TOKEN") && !shown.contains("T0K"), "{shown}");
    }
}

/// E2B per its published definitions (e2b-dev/E2B `spec/envd/process/process.proto`,
/// `spec/openapi.yml`, JS SDK `sandbox/commands`): stdin closed, the SDK's
/// keepalive header, a command past its deadline killed by its tag with
/// SIGKILL and reported `timed_out`, and the create response's `domain` used.
#[test]
fn e2b_deadline_kills_the_command_and_the_domain_is_honoured() {
    let deadline = envelope(2, r#"{"error":{"code":"deadline_exceeded","message":"context deadline exceeded"}}"#);
    let end =
        [envelope(0, r#"{"event":{"end":{"exited":true,"status":"exit status 0"}}}"#), envelope(2, "{}")].concat();
    let server = Loopback::start()
        .answer(200, "[]")
        .answer(201, r#"{"templateID":"base","sandboxID":"sbx3","clientID":"c","envdVersion":"0.2","envdAccessToken":"envd-tok-79","domain":"eu.e2b.dev"}"#)
        .answer(200, &end)
        .answer(200, &end)
        .answer(200, &end)
        .answer(200, &deadline)
        .answer(200, "{}");
    let e2b = E2b::new(server.client(), Secret::new(KEY), "base");
    block_on(async {
        let p = e2b.provision(&request(NetworkPolicy::Full), &provision(true, &PUBLIC)).await.unwrap();
        let sandbox = SandboxRef { external_id: p.external_id, root: p.root };
        let out = e2b.exec(&sandbox, &exec(&["sleep", "60"])).await.unwrap();
        assert!(out.timed_out && out.exit_code == -1, "{out:?}");
    });
    let seen = server.seen();
    assert_eq!(seen[5].uri, "https://49983-sbx3.eu.e2b.dev/process.Process/Start");
    assert_eq!(seen[5].headers["keepalive-ping-interval"], "50");
    let start: serde_json::Value = serde_json::from_slice(&seen[5].body[5..]).unwrap();
    assert_eq!(start["stdin"], false);
    assert_eq!(seen[6].uri, "https://49983-sbx3.eu.e2b.dev/process.Process/SendSignal");
    let kill: serde_json::Value = serde_json::from_slice(&seen[6].body).unwrap();
    assert_eq!(kill["signal"], "SIGNAL_SIGKILL");
    assert_eq!(kill["process"]["tag"], start["tag"]);
    assert_eq!(seen[6].headers["x-access-token"], "envd-tok-79");
}

/// An envd error that echoes the sandbox's access token never carries it.
#[test]
fn e2b_envd_errors_are_scrubbed_of_the_envd_token() {
    let end =
        [envelope(0, r#"{"event":{"end":{"exited":true,"status":"exit status 0"}}}"#), envelope(2, "{}")].concat();
    let server = Loopback::start()
        .answer(200, "[]")
        .answer(201, r#"{"templateID":"base","sandboxID":"sbx4","clientID":"c","envdVersion":"0.2","envdAccessToken":"envd-tok-80","domain":null}"#)
        .answer(200, &end)
        .answer(200, &end)
        .answer(200, &end)
        .answer(401, r#"{"code":401,"message":"invalid access token envd-tok-80"}"#);
    let e2b = E2b::new(server.client(), Secret::new(KEY), "base");
    block_on(async {
        let p = e2b.provision(&request(NetworkPolicy::Full), &provision(true, &PUBLIC)).await.unwrap();
        let sandbox = SandboxRef { external_id: p.external_id, root: p.root };
        let error = e2b.read_file(&sandbox, "a.rs").await.unwrap_err();
        assert!(error.to_string().contains("401") && !error.to_string().contains("envd-tok-80"), "{error}");
        assert!(!format!("{error:?}").contains("envd-tok-80"));
    });
}

/// A replayed provision (the edge crashed after creating the sandbox) finds
/// the sandbox tagged with its lease id and creates nothing.
#[test]
fn e2b_replay_finds_the_sandbox_of_the_lease() {
    let end =
        [envelope(0, r#"{"event":{"end":{"exited":true,"status":"exit status 0"}}}"#), envelope(2, "{}")].concat();
    let server = Loopback::start()
        .answer(200, r#"[{"templateID":"base","sandboxID":"sbx-old","clientID":"c","startedAt":"2026-01-01T00:00:00Z","endAt":"2026-01-01T01:00:00Z","cpuCount":2,"memoryMB":512,"diskSizeMB":1024,"state":"running","envdVersion":"0.2","metadata":{"agentZeroLease":"lease-t1"}}]"#)
        .answer(200, r#"{"templateID":"base","sandboxID":"sbx-old","clientID":"c","envdVersion":"0.2","envdAccessToken":"envd-tok-81","domain":null}"#)
        .answer(200, &end)
        .answer(200, &end)
        .answer(200, &end);
    let e2b = E2b::new(server.client(), Secret::new(KEY), "base");
    let p = block_on(e2b.provision(&request(NetworkPolicy::Full), &provision(true, &PUBLIC))).unwrap();
    assert_eq!(p.external_id, "sbx-old");
    let seen = server.seen();
    assert!(
        seen.iter().all(|s| !(s.method == "POST" && s.uri == "https://api.e2b.app/sandboxes")),
        "no second sandbox"
    );
    assert_eq!(seen[1].uri, "https://api.e2b.app/sandboxes/sbx-old");
    assert_eq!(seen[2].headers["x-access-token"], "envd-tok-81");
}
