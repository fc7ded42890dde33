//! Provider adapters against a scripted in-process HttpClient answering in
//! each provider's documented response shapes.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::{HttpClient, HttpError};
use agent_zero_runner::providers::{CloudflareSandbox, Daytona, E2b, VercelSandbox};
use agent_zero_runner::{Exec, SandboxProvider, SandboxRef, SandboxRequest, Secret};

const KEY: &str = "provider-key-0c0ffee";

#[derive(Debug, Default)]
struct Scripted {
    answers: RefCell<VecDeque<(u16, Vec<u8>)>>,
    seen: RefCell<Vec<(String, String, BTreeMap<String, String>, Vec<u8>)>>,
}

impl Scripted {
    fn answer(self, status: u16, body: impl AsRef<[u8]>) -> Self {
        self.answers.borrow_mut().push_back((status, body.as_ref().to_vec()));
        self
    }
}

impl HttpClient for &Scripted {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let headers = request.headers().iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned())).collect();
        self.seen.borrow_mut().push((request.method().to_string(), request.uri().to_string(), headers, request.body().clone()));
        let (status, body) = self.answers.borrow_mut().pop_front().expect("unscripted request");
        Ok(http::Response::builder().status(status).body(body).unwrap())
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("suspended"),
    }
}

fn request(network: NetworkPolicy) -> SandboxRequest {
    SandboxRequest::new("t1", "acme/app", "main", RunMode::Fix, true, network, 600_000)
}

fn exec(argv: &[&str]) -> Exec {
    Exec { argv: argv.iter().map(|s| (*s).to_owned()).collect(), cwd: "src".into(), timeout_ms: 5_000, max_output_bytes: 1000, env: BTreeMap::new() }
}

fn envelope(flags: u8, json: &str) -> Vec<u8> {
    let mut out = vec![flags];
    out.extend((json.len() as u32).to_be_bytes());
    out.extend(json.as_bytes());
    out
}

#[test]
fn e2b_create_clone_exec_and_kill() {
    let end = [envelope(0, r#"{"event":{"end":{"exited":true,"status":"exit status 0"}}}"#), envelope(2, "{}")].concat();
    let out = [envelope(0, r#"{"event":{"data":{"stdout":"b2sK"}}}"#), end.clone()].concat();
    let client = Scripted::default()
        .answer(201, r#"{"templateID":"base","sandboxID":"sbx1","clientID":"c","envdVersion":"0.2","envdAccessToken":"envd-tok-77","domain":null}"#)
        .answer(200, &end)
        .answer(200, &end)
        .answer(200, &out)
        .answer(404, r#"{"code":404,"message":"sandbox not found"}"#);
    let e2b = E2b::new(&client, Secret::new(KEY), "base");
    block_on(async {
        let p = e2b.provision(&request(NetworkPolicy::Restricted), true).await.unwrap();
        assert_eq!((p.external_id.as_str(), p.root.as_str(), p.isolated), ("sbx1", "/home/user/repo", true));
        let sandbox = SandboxRef { external_id: p.external_id, root: p.root };
        let result = e2b.exec(&sandbox, &exec(&["cargo", "test"])).await.unwrap();
        assert_eq!((result.exit_code, result.stdout.as_str()), (0, "ok\n"));
        e2b.stop("sbx1").await.unwrap(); // 404 = already gone
    });
    let seen = client.seen.borrow();
    assert_eq!(seen[0].1, "https://api.e2b.app/sandboxes");
    assert_eq!(seen[0].2["x-api-key"], KEY);
    let create: serde_json::Value = serde_json::from_slice(&seen[0].3).unwrap();
    assert_eq!(create["timeout"], 600);
    assert_eq!(create["network"]["denyOut"][0], "0.0.0.0/0");
    assert_eq!(seen[1].1, "https://49983-sbx1.e2b.app/process.Process/Start");
    assert_eq!(seen[3].2["x-access-token"], "envd-tok-77");
    assert_eq!(seen[3].2["content-type"], "application/connect+json");
    let start: serde_json::Value = serde_json::from_slice(&seen[3].3[5..]).unwrap();
    assert_eq!(start["process"]["cmd"], "cargo");
    assert_eq!(start["process"]["cwd"], "/home/user/repo/src");
    assert!(!format!("{e2b:?}").contains("envd-tok-77") && !format!("{e2b:?}").contains(KEY));
}

#[test]
fn daytona_quotes_argv_and_reads_merged_output() {
    let client = Scripted::default()
        .answer(200, r#"{"id":"d1","state":"started","toolboxProxyUrl":"https://proxy.app.daytona.io/toolbox"}"#)
        .answer(200, r#"{"exitCode":1,"result":"FAIL: it's broken\n"}"#)
        .answer(500, format!(r#"{{"message":"invalid key {KEY}"}}"#));
    let daytona = Daytona::new(&client, Secret::new(KEY));
    block_on(async {
        let sandbox = SandboxRef { external_id: "d1".into(), root: "/home/daytona/repo".into() };
        let out = daytona.exec(&sandbox, &exec(&["grep", "-r", "it's $(x)", "."])).await.unwrap();
        assert_eq!((out.exit_code, out.stdout.as_str()), (1, "FAIL: it's broken\n"));
        let error = daytona.read_file(&sandbox, "a.rs").await.unwrap_err();
        assert!(error.to_string().contains("500") && !error.to_string().contains(KEY), "{error}");
    });
    let seen = client.seen.borrow();
    assert_eq!(seen[0].1, "https://app.daytona.io/api/sandbox/d1");
    assert_eq!(seen[1].1, "https://proxy.app.daytona.io/toolbox/d1/process/execute");
    let body: serde_json::Value = serde_json::from_slice(&seen[1].3).unwrap();
    assert_eq!(body["command"], r#"grep -r 'it'\''s $(x)' ."#);
    assert_eq!(body["cwd"], "/home/daytona/repo/src");
    assert_eq!(body["timeout"], 5);
    assert_eq!(seen[2].1, "https://proxy.app.daytona.io/toolbox/d1/files/download?path=%2Fhome%2Fdaytona%2Frepo%2Fa.rs");
}

#[test]
fn vercel_runs_waits_and_reads_logs() {
    let client = Scripted::default()
        .answer(200, r#"{"command":{"id":"cmd_1","name":"git","args":["status"],"cwd":"/vercel/sandbox","sandboxId":"sb_1","exitCode":null,"startedAt":1}}"#)
        .answer(200, r#"{"command":{"id":"cmd_1","name":"git","args":["status"],"cwd":"/vercel/sandbox","sandboxId":"sb_1","exitCode":3,"startedAt":1}}"#)
        .answer(200, "{\"stream\":\"stdout\",\"data\":\"on main\\n\"}\n{\"stream\":\"stderr\",\"data\":\"warn\\n\"}\n")
        .answer(200, "{}");
    let vercel = VercelSandbox::new(&client, Secret::new(KEY), Some("team_9".into()));
    block_on(async {
        let sandbox = SandboxRef { external_id: "sb_1".into(), root: "/vercel/sandbox".into() };
        let out = vercel.exec(&sandbox, &exec(&["git", "status"])).await.unwrap();
        assert_eq!((out.exit_code, out.stdout.as_str(), out.stderr.as_str()), (3, "on main\n", "warn\n"));
        vercel.write_file(&sandbox, "src/a.txt", b"hi").await.unwrap();
    });
    let seen = client.seen.borrow();
    assert_eq!(seen[0].1, "https://api.vercel.com/v1/sandboxes/sb_1/cmd?teamId=team_9");
    assert_eq!(seen[1].1, "https://api.vercel.com/v1/sandboxes/sb_1/cmd/cmd_1?wait=true&teamId=team_9");
    assert_eq!(seen[3].2["content-type"], "application/gzip");
    assert_eq!(seen[3].2["authorization"], format!("Bearer {KEY}"));
}

#[test]
fn cloudflare_bridge_sse_and_refusals() {
    let sse = "event: stdout\ndata: aGkK\n\nevent: stderr\ndata: ZXJyCg==\n\nevent: exit\ndata: {\"exit_code\":0}\n\n";
    let client = Scripted::default().answer(200, sse).answer(401, format!("{{\"error\":\"bad token {KEY}\"}}"));
    let bridge = CloudflareSandbox::new(&client, "https://bridge.example.workers.dev/", Secret::new(KEY));
    block_on(async {
        let sandbox = SandboxRef { external_id: "abc".into(), root: "/workspace/repo".into() };
        let out = bridge.exec(&sandbox, &exec(&["ls"])).await.unwrap();
        assert_eq!((out.exit_code, out.stdout.as_str(), out.stderr.as_str()), (0, "hi\n", "err\n"));
        let error = bridge.read_file(&sandbox, "a b.txt").await.unwrap_err();
        assert!(error.to_string().contains("401") && !error.to_string().contains(KEY), "{error}");
        let refused = bridge.provision(&request(NetworkPolicy::None), false).await.unwrap_err();
        assert!(refused.to_string().contains("none"), "{refused}");
    });
    let seen = client.seen.borrow();
    assert_eq!(seen[0].1, "https://bridge.example.workers.dev/v1/sandbox/abc/exec");
    let body: serde_json::Value = serde_json::from_slice(&seen[0].3).unwrap();
    assert_eq!(body["argv"][0], "ls");
    assert_eq!(body["cwd"], "/workspace/repo/src");
    assert_eq!(seen[1].1, "https://bridge.example.workers.dev/v1/sandbox/abc/file/workspace/repo/a%20b.txt");
}
