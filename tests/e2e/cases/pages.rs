//! The dashboard pages and evidence routes, served by the built worker and
//! Spin component and rendered by headless Chromium at phone size.
//!
//! The finished task is made through the product only: `POST /api/v1/tasks`
//! creates it, the host's own tick delivery runs it, and with no sandbox
//! configured it fails and concludes with its evidence.

use agent_zero_e2e::browser::{decode_png, screenshot};
use std::time::{Duration, Instant};

use agent_zero_e2e::{Reply, Runtime, Server, ServerOptions};

use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case { name: "pages_task_list_renders_on_a_phone", run: task_list_renders_on_a_phone },
    Case { name: "pages_finished_task_evidence_renders_on_a_phone", run: finished_task_evidence_renders_on_a_phone },
    Case { name: "pages_unknown_task_page_renders_on_a_phone", run: unknown_task_page_renders_on_a_phone },
    Case { name: "pages_evidence_routes_answer_in_the_error_shape", run: evidence_routes_answer_in_the_error_shape },
];

/// An iPhone-sized viewport.
const PHONE: (u32, u32) = (390, 844);

const TOKEN: &str = "tok-e2e-pages-5b7c9d1e3f";
const SECRET: &str = "e2e-webhook-secret-8a6f4d2c";

fn start(runtime: Runtime) -> Server {
    Server::start(runtime, &ServerOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// A server that accepts tasks from `e2e` for `octo/widgets`.
fn start_with_api(runtime: Runtime) -> Server {
    let vars = [
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", format!("e2e:{TOKEN}")),
        ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "octo/widgets".to_owned()),
        ("GITHUB_WEBHOOK_SECRET", SECRET.to_owned()),
        // A task must be able to run to be accepted: a sandbox nobody
        // listens on (the task fails and concludes) and a model key.
        ("AGENT_ZERO_SANDBOX_PROVIDER", "custom".to_owned()),
        ("AGENT_ZERO_SANDBOX_URL", "http://127.0.0.1:9".to_owned()),
        ("AGENT_ZERO_SANDBOX_TOKEN", "e2e-unreached".to_owned()),
        ("OPENAI_API_KEY", "sk-e2e-unreached".to_owned()),
    ];
    let options =
        ServerOptions { vars: vars.into_iter().map(|(n, v)| (n.to_owned(), v)).collect(), ..ServerOptions::default() };
    Server::start(runtime, &options).unwrap_or_else(|e| panic!("{e}"))
}

/// HTML-escapes like the renderers do.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// What every HTML answer promises: its type, a script-less policy, no
/// sniffing, no script in the markup.
fn assert_safe_html(reply: &Reply) -> String {
    assert_eq!(reply.header("content-type"), Some("text/html; charset=utf-8"));
    let csp = reply.header("content-security-policy").unwrap_or_default();
    assert!(csp.starts_with("default-src 'none'") && !csp.contains("script-src"), "{csp}");
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    assert!(reply.header("cache-control").is_some());
    let html = reply.text();
    assert!(!html.to_lowercase().contains("<script"), "a script in the page: {html}");
    assert!(html.contains("name=\"viewport\""), "not laid out for phones");
    html
}

/// Screenshots `path` at phone size and checks the image is that size and
/// shows something (text on a background), not a blank page.
fn assert_renders(server: &Server, path: &str) {
    let png = screenshot(&server.url(path), PHONE.0, PHONE.1).unwrap_or_else(|e| panic!("{e}"));
    let image = decode_png(&png).unwrap_or_else(|e| panic!("screenshot of {path}: {e}"));
    // For review: AGENT_ZERO_E2E_SCREENSHOTS=<dir> keeps every screenshot.
    if let Ok(dir) = std::env::var("AGENT_ZERO_E2E_SCREENSHOTS") {
        let name: String = path.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        let file = std::path::Path::new(&dir).join(format!("{}{name}.png", server.runtime.name()));
        std::fs::write(&file, &png).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
    assert_eq!((image.width, image.height), PHONE, "screenshot of {path}");
    let foreground = image.foreground_pixels();
    // Anti-aliased text gives many colours; a blank page has one.
    assert!(
        image.colours() > 8 && foreground > 1_000,
        "{path} looks blank: {} colours, {foreground} foreground pixels",
        image.colours()
    );
    println!(
        "    screenshot {path}: {}x{}, {} bytes, {} colours, {foreground} foreground pixels",
        image.width,
        image.height,
        png.len(),
        image.colours()
    );
}

fn task_list_renders_on_a_phone(runtime: Runtime) {
    let server = start(runtime);
    let reply = server.send("GET", "/", &[("accept", "text/html")], b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
    let html = assert_safe_html(&reply);
    assert!(html.contains("<h1>Tasks</h1>") && html.contains("No tasks on this page."), "{html}");
    assert_renders(&server, "/");
}

fn unknown_task_page_renders_on_a_phone(runtime: Runtime) {
    let server = start(runtime);
    let reply = server.send("GET", "/tasks/no-such-task", &[], b"");
    assert_eq!(reply.status, 404, "{}", reply.text());
    let html = assert_safe_html(&reply);
    assert!(html.contains("task `no-such-task` does not exist"), "{html}");
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    assert_renders(&server, "/tasks/no-such-task");

    let hostile = "/tasks/%3Cscript%3Ealert(1)%3C%2Fscript%3E";
    let reply = server.send("GET", hostile, &[], b"");
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_safe_html(&reply);
}

fn evidence_routes_answer_in_the_error_shape(runtime: Runtime) {
    let server = start(runtime);
    for suffix in ["", ".md", ".json", ".html"] {
        let path = format!("/api/v1/tasks/no-such-task/evidence{suffix}");
        let reply = server.send("GET", &path, &[], b"");
        assert_eq!(reply.status, 404, "{path}: {}", reply.text());
        assert_eq!(reply.json()["error"]["code"], "not_found", "{path}");
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"), "{path}");
        let invalid = server.send("GET", &format!("/api/v1/tasks/bad%20id/evidence{suffix}"), &[], b"");
        assert_eq!(invalid.status, 400, "{path}");
        assert_eq!(invalid.json()["error"]["field"], "id");
    }
    let reply = server.send("GET", "/api/v1/tasks/no-such-task/evidence", &[("accept", "image/png")], b"");
    assert_eq!(reply.status, 406, "{}", reply.text());
    assert_eq!(reply.json()["error"]["code"], "not_acceptable");
    assert_eq!(reply.header("vary"), Some("Accept"));
}

fn finished_task_evidence_renders_on_a_phone(runtime: Runtime) {
    let server = start_with_api(runtime);
    let body = serde_json::json!({
        "repository": "octo/widgets",
        "mode": "observe",
        "trigger": "feedback",
        "feedback": [{ "body": "<script>alert(1)</script> `limit` of 0 divides by zero", "path": "src/limit.rs", "line": 3 }],
        "pullRequest": { "number": 7, "headSha": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c" },
    });
    let auth = format!("Bearer {TOKEN}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    let created = server.send("POST", "/api/v1/tasks", &headers, body.to_string().as_bytes());
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["id"].as_str().expect("id").to_owned();

    // The host delivers the ticks; without a sandbox the task fails and concludes.
    let evidence_path = format!("/api/v1/tasks/{id}/evidence.json");
    let started = Instant::now();
    let evidence = loop {
        let reply = server.send("GET", &evidence_path, &[], b"");
        if reply.status == 200 {
            break reply;
        }
        assert_eq!(reply.status, 409, "{}", reply.text());
        assert!(started.elapsed() < Duration::from_secs(120), "task {id} did not conclude: {}", reply.text());
        std::thread::sleep(Duration::from_millis(500));
    };
    let bundle = evidence.json();
    assert_eq!(bundle["taskId"], id.as_str());
    assert_eq!(bundle["state"], "failed");
    assert_eq!(bundle["verified"], false);
    let summary = bundle["summary"].as_str().expect("summary").to_owned();

    let reply = server.send("GET", &format!("/tasks/{id}"), &[], b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
    let html = assert_safe_html(&reply);
    assert!(html.contains("class=\"badge failure\""), "{html}");
    for content in [id.as_str(), "octo/widgets", "api:e2e", summary.as_str()] {
        assert!(html.contains(&escape(content)), "the page lacks {content:?}: {html}");
    }
    let markdown = server.send("GET", &format!("/api/v1/tasks/{id}/evidence"), &[("accept", "text/markdown")], b"");
    assert_eq!(markdown.status, 200);
    assert_eq!(markdown.header("content-type"), Some("text/markdown; charset=utf-8"));
    let list = server.send("GET", "/", &[], b"");
    assert!(list.text().contains(&format!("/tasks/{id}")), "{}", list.text());
    for reply in [&evidence, &reply, &markdown, &list] {
        assert!(!reply.text().contains(SECRET) && !reply.text().contains(TOKEN), "a secret leaked");
    }
    assert_renders(&server, &format!("/tasks/{id}"));
    assert_renders(&server, "/");
}
