//! `agent-zero doctor` prints each check as it completes: the binary runs
//! against a loopback deployment that holds its answer to the signed ping
//! until the lines before it have been read from the child's stdout, and
//! its answer to the token check until the ping's line has been read. A
//! doctor that printed its report at the end would never show those lines
//! while a request is held: the server gives up after a bound and the
//! recorded order then shows the answer before the line. No sleep: every
//! wait is on a line or a channel.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the server holds an answer at most (only a broken doctor waits it out).
const HOLD: Duration = Duration::from_secs(20);

const HEALTH: &str = r#"{"status":"ok","name":"agent-zero","version":"9.9.9","host":"loopback",
"storage":{"ok":true,"probe":"read-write"},
"capabilities":{"webhookSecret":{"configured":true},"githubCredentials":{"configured":true,"kind":"token"},
"modelProvider":{"configured":true,"providers":["openai"]},"sandboxProvider":{"configured":true,"provider":"custom"},
"controlPlane":{"configured":true}}}"#;

/// What happened, in order: `line <text>` read by the test, `answer <path>` sent by the server.
type Events = Arc<Mutex<Vec<String>>>;

/// One request: its path; the body is read and dropped.
fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let path = request_line.split_whitespace().nth(1)?.to_owned();
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        if header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(path)
}

/// Serves connections one at a time: the health report, the signed ping
/// (after `ping_gate`), the token check (after `token_gate`), no deep checks.
fn serve(listener: TcpListener, events: Events, ping_gate: Receiver<()>, token_gate: Receiver<()>) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { return };
        let Some(path) = read_request(&mut stream) else { continue };
        let (status, body) = match path.as_str() {
            "/api/v1/health" => ("200 OK", HEALTH.replace('\n', "")),
            "/webhooks/github" => {
                let _ = ping_gate.recv_timeout(HOLD);
                ("200 OK", r#"{"pong":true}"#.to_owned())
            }
            p if p.starts_with("/api/v1/audit") => {
                let _ = token_gate.recv_timeout(HOLD);
                ("200 OK", r#"{"entries":[]}"#.to_owned())
            }
            _ => ("404 Not Found", r#"{"error":{"code":"not_found","message":"no route"}}"#.to_owned()),
        };
        events.lock().unwrap().push(format!("answer {path}"));
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        if path == "/api/v1/doctor" {
            return;
        }
    }
}

#[test]
fn doctor_prints_each_check_before_the_next_one_answers() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let events: Events = Arc::default();
    let (ping_release, ping_gate): (Sender<()>, _) = channel();
    let (token_release, token_gate): (Sender<()>, _) = channel();
    let server = {
        let events = events.clone();
        std::thread::spawn(move || serve(listener, events, ping_gate, token_gate))
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-zero"))
        .args(["doctor", "--url", &url, "--token", "tok-streams", "--webhook-secret", "hook-streams"])
        .env_remove("AGENT_ZERO_URL")
        .env_remove("AGENT_ZERO_TOKEN")
        .env_remove("AGENT_ZERO_WEBHOOK_SECRET")
        .env("NO_PROXY", "*")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let line = line.unwrap();
        events.lock().unwrap().push(format!("line {line}"));
        // The ping is held until the check before it shows; the token check
        // until the ping's line shows.
        if line.contains("webhook-secret") {
            // (the server may have given up already)
            let _ = ping_release.send(());
        }
        if line.contains("signed-ping") {
            let _ = token_release.send(());
        }
    }
    assert!(child.wait().unwrap().success());
    server.join().unwrap();
    let events = events.lock().unwrap().clone();
    let at = |needle: &str| {
        events.iter().position(|e| e.contains(needle)).unwrap_or_else(|| panic!("no `{needle}` in {events:#?}"))
    };
    assert!(at("line PASS  webhook-secret") < at("answer /webhooks/github"), "{events:#?}");
    assert!(at("answer /webhooks/github") < at("line PASS  signed-ping"), "{events:#?}");
    assert!(at("line PASS  signed-ping") < at("answer /api/v1/audit"), "{events:#?}");
    assert!(at("answer /api/v1/audit") < at("line PASS  control-plane"), "{events:#?}");
    assert!(events.last().is_some_and(|e| e == "line all checks passed"), "{events:#?}");
}
