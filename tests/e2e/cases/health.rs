//! Health, routing and storage on both runtimes.

use std::io::{Read as _, Write as _};

use agent_zero_e2e::{Runtime, Server, ServerOptions};

use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "health_reports_version_capabilities_and_storage",
        run: health_reports_version_capabilities_and_storage,
    },
    Case { name: "health_reports_a_broken_kv_binding", run: health_reports_a_broken_kv_binding },
    Case { name: "unknown_route_and_wrong_method", run: unknown_route_and_wrong_method },
    Case { name: "the_tick_role_is_not_reachable_from_outside", run: the_tick_role_is_not_reachable_from_outside },
    Case {
        name: "malformed_settings_are_named_where_needed_and_the_rest_keeps_serving",
        run: malformed_settings_are_named_where_needed_and_the_rest_keeps_serving,
    },
];

fn start(runtime: Runtime, options: &ServerOptions) -> Server {
    Server::start(runtime, options).unwrap_or_else(|e| panic!("{e}"))
}

fn health_reports_version_capabilities_and_storage(runtime: Runtime) {
    let secret = "e2e-secret-value-1234";
    let options = ServerOptions {
        vars: vec![
            ("GITHUB_WEBHOOK_SECRET".into(), secret.into()),
            ("GITHUB_TOKEN".into(), "ghp_e2e_token_value".into()),
        ],
        ..ServerOptions::default()
    };
    let server = start(runtime, &options);
    let reply = server.send("GET", "/api/v1/health", &[], b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.header("content-type").unwrap_or_default().starts_with("application/json"));
    let body = reply.json();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["name"], "agent-zero-edge");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    let expected_host = match runtime {
        Runtime::Workerd => "cloudflare",
        Runtime::Spin => "spin",
    };
    assert_eq!(body["host"], expected_host);
    assert_eq!(body["storage"]["ok"], true);
    let caps = &body["capabilities"];
    assert_eq!(caps["webhookSecret"]["configured"], true);
    assert_eq!(caps["githubCredentials"]["kind"], "token");
    assert_eq!(caps["modelProvider"]["configured"], false);
    assert_eq!(caps["sandboxProvider"]["configured"], false);
    let text = reply.text();
    assert!(!text.contains(secret) && !text.contains("ghp_e2e_token_value"), "health leaked a value: {text}");
}

fn health_reports_a_broken_kv_binding(runtime: Runtime) {
    let server = start(runtime, &ServerOptions { without_kv: true, ..ServerOptions::default() });
    let reply = server.send("GET", "/api/v1/health", &[], b"");
    assert_eq!(reply.status, 503, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["status"], "degraded");
    assert_eq!(body["storage"]["ok"], false);
    assert_eq!(body["error"]["code"], "storage_unavailable");
    let message = body["storage"]["message"].as_str().unwrap_or_default().to_owned();
    let expected = match runtime {
        Runtime::Workerd => "binding `KV`",
        // Its SQLite database, where the app keeps its state by default.
        Runtime::Spin => "database `default`",
    };
    assert!(message.contains("unavailable") && message.contains(expected), "{message}");
}

fn unknown_route_and_wrong_method(runtime: Runtime) {
    let server = start(runtime, &ServerOptions::default());
    let reply = server.send("GET", "/api/v1/nope", &[], b"");
    assert_eq!(reply.status, 404);
    assert_eq!(reply.json()["error"]["code"], "not_found");
    let reply = server.send("DELETE", "/api/v1/health", &[], b"");
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("allow"), Some("GET"));
    assert_eq!(reply.json()["error"]["code"], "method_not_allowed");
}

/// Each settings section is parsed once and on its own: a malformed
/// variable is 503 naming it on the routes that need it (never its value),
/// health lists it, and every other route keeps serving.
fn malformed_settings_are_named_where_needed_and_the_rest_keeps_serving(runtime: Runtime) {
    let secret = "e2e-settings-secret";
    let token = "e2e-settings-operator";
    let options = ServerOptions {
        vars: vec![
            ("GITHUB_WEBHOOK_SECRET".into(), secret.into()),
            ("AGENT_ZERO_WEBHOOK_MAX_BYTES".into(), "25MB".into()),
            ("AGENT_ZERO_MODEL_TIMEOUT_MS".into(), "2minutes".into()),
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS".into(), format!("ops:{token}")),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES".into(), "acme/widgets".into()),
            ("AGENT_ZERO_SANDBOX_PROVIDER".into(), "custom".into()),
            ("AGENT_ZERO_SANDBOX_URL".into(), "http://127.0.0.1:9".into()),
            ("AGENT_ZERO_SANDBOX_TOKEN".into(), "e2e-settings-sandbox".into()),
            ("OPENAI_API_KEY".into(), "sk-e2e-settings".into()),
        ],
        ..ServerOptions::default()
    };
    let server = start(runtime, &options);
    let health = server.send("GET", "/api/v1/health", &[], b"");
    assert_eq!(health.status, 200, "{}", health.text());
    let problems = health.json()["settings"]["problems"].clone();
    let named: Vec<&str> = problems.as_array().unwrap().iter().filter_map(|p| p["variable"].as_str()).collect();
    assert_eq!(named, ["AGENT_ZERO_WEBHOOK_MAX_BYTES", "AGENT_ZERO_MODEL_TIMEOUT_MS"], "{problems}");

    // The webhook route needs its limit before it reads the body.
    let ping = br#"{"zen":"Keep it logically awesome.","hook_id":1}"#;
    let reply = server.deliver_github(secret, "ping", "e2e-settings-ping", ping);
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.json()["error"]["field"], "AGENT_ZERO_WEBHOOK_MAX_BYTES", "{}", reply.text());

    // Creating a task needs the run settings; listing tasks does not.
    let auth = format!("Bearer {token}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    let body = br#"{"repository":"acme/widgets","mode":"observe","trigger":"feedback","feedback":[{"body":"`limit` of 0 divides by zero","path":"src/limit.rs","line":3}]}"#;
    let reply = server.send("POST", "/api/v1/tasks", &headers, body);
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.json()["error"]["field"], "AGENT_ZERO_MODEL_TIMEOUT_MS", "{}", reply.text());
    let reply = server.send("GET", "/api/v1/tasks", &headers[..1], b"");
    assert_eq!(reply.status, 200, "{}", reply.text());

    for text in [health.text(), reply.text()] {
        assert!(!text.contains("25MB") && !text.contains("2minutes"), "a value was shown: {text}");
    }
}

/// The tick worker has no route, and the Spin tick component's route is
/// private: a hand-off sent from outside, even naming the component as its
/// `Host`, reaches the HTTP side, which has no such route.
fn the_tick_role_is_not_reachable_from_outside(runtime: Runtime) {
    let server = start(runtime, &ServerOptions::default());
    let hand_off = br#"[{"taskId":"t-1","expectedSeq":1,"delayMs":0}]"#;
    let reply = server.send("POST", "/ticks", &[("content-type", "application/json")], hand_off);
    assert_eq!(reply.status, 404, "{}", reply.text());
    assert_eq!(reply.json()["error"]["code"], "not_found", "the app's own 404: {}", reply.text());
    // The client library sets `Host` itself; this one names the component.
    let address = server.base_url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    let head = format!(
        "POST /ticks HTTP/1.1\r\nHost: agent-zero-ticks.spin.internal\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        hand_off.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(hand_off)).expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(answer.contains("\"not_found\"") && !answer.contains("accepted"), "{answer}");
}
