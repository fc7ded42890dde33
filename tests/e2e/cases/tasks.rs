//! The task API on both runtimes: the authorization matrix, pagination
//! with creates in between, CORS, the OpenAPI document and its page.

use agent_zero_e2e::{Reply, Runtime, Server, ServerOptions};
use serde_json::{Value, json};

use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case { name: "tasks_authorization_matrix", run: tasks_authorization_matrix },
    Case {
        name: "tasks_that_could_never_run_are_503_naming_the_setting",
        run: tasks_that_could_never_run_are_503_naming_the_setting,
    },
    Case { name: "tasks_reads_can_require_a_token", run: tasks_reads_can_require_a_token },
    Case { name: "tasks_pagination_with_concurrent_creates", run: tasks_pagination_with_concurrent_creates },
    Case { name: "tasks_openapi_document_and_page", run: tasks_openapi_document_and_page },
];

const ALICE: &str = "e2e-alice-4f0c9a7d2b61";
const BOB: &str = "e2e-bob-8e3d1c5a7f92";
const MALLORY: &str = "e2e-mallory-000000000";
const SHA: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c";

fn vars(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut vars = vec![
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", format!("alice:{ALICE},bob:{BOB}")),
        ("AGENT_ZERO_CONTROL_PLANE_MODES", "alice:observe|suggest|fix".to_owned()),
        ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets".to_owned()),
        // Tasks must be able to run to be accepted; none of these is reached.
        ("AGENT_ZERO_SANDBOX_PROVIDER", "custom".to_owned()),
        ("AGENT_ZERO_SANDBOX_URL", "http://127.0.0.1:9".to_owned()),
        ("AGENT_ZERO_SANDBOX_TOKEN", "e2e-unreached".to_owned()),
        ("OPENAI_API_KEY", "sk-e2e-unreached".to_owned()),
    ];
    vars.extend(extra.iter().map(|(n, v)| (*n, (*v).to_owned())));
    vars.into_iter().map(|(n, v)| (n.to_owned(), v)).collect()
}

fn start(runtime: Runtime, vars: Vec<(String, String)>) -> Server {
    Server::start(runtime, &ServerOptions { vars, ..ServerOptions::default() }).unwrap_or_else(|e| panic!("{e}"))
}

fn call(server: &Server, method: &str, path: &str, token: Option<&str>, body: Option<&Value>) -> Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers: Vec<(&str, &str)> = Vec::new();
    if let Some(auth) = &auth {
        headers.push(("authorization", auth));
    }
    if body.is_some() {
        headers.push(("content-type", "application/json"));
    }
    let bytes = body.map(|b| serde_json::to_vec(b).unwrap()).unwrap_or_default();
    server.send(method, path, &headers, &bytes)
}

/// A task is accepted only when it can run here: without a sandbox provider,
/// or without a model credential, creating one is 503 naming the variable,
/// and nothing is created.
fn tasks_that_could_never_run_are_503_naming_the_setting(runtime: Runtime) {
    let all = vars(&[]);
    let without =
        |names: &[&str]| all.iter().filter(|(n, _)| !names.contains(&n.as_str())).cloned().collect::<Vec<_>>();
    for (missing, field) in
        [(&["AGENT_ZERO_SANDBOX_PROVIDER"][..], "AGENT_ZERO_SANDBOX_PROVIDER"), (&["OPENAI_API_KEY"][..], "_API_KEY")]
    {
        let server = start(runtime, without(missing));
        let reply = call(&server, "POST", "/api/v1/tasks", Some(ALICE), Some(&task_body("acme/widgets", "observe")));
        assert_eq!(reply.status, 503, "{missing:?}: {}", reply.text());
        let error = &reply.json()["error"];
        assert_eq!(error["code"], "not_configured", "{error}");
        assert!(error["field"].as_str().is_some_and(|f| f.ends_with(field)), "{missing:?}: {error}");
        let listed = call(&server, "GET", "/api/v1/tasks", Some(ALICE), None).json();
        assert_eq!(listed["items"].as_array().map(Vec::len), Some(0), "nothing was created: {listed}");
    }
    // A malformed run setting is named too, never replaced by its default.
    let mut malformed = vars(&[("AGENT_ZERO_MODEL_TIMEOUT_MS", "2 minutes")]);
    malformed.retain(|(n, v)| n != "AGENT_ZERO_MODEL_TIMEOUT_MS" || v == "2 minutes");
    let server = start(runtime, malformed);
    let reply = call(&server, "POST", "/api/v1/tasks", Some(ALICE), Some(&task_body("acme/widgets", "observe")));
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.json()["error"]["field"], "AGENT_ZERO_MODEL_TIMEOUT_MS");
    assert!(!reply.text().contains("2 minutes"), "the value is not echoed: {}", reply.text());
}

fn task_body(repository: &str, mode: &str) -> Value {
    json!({
        "repository": repository,
        "mode": mode,
        "trigger": "feedback",
        "feedback": [{ "body": "`limit` of 0 divides by zero", "path": "src/limit.rs", "line": 3 }],
        "pullRequest": { "number": 7, "headSha": SHA },
    })
}

fn created_id(reply: &Reply) -> String {
    assert_eq!(reply.status, 201, "{}", reply.text());
    reply.json()["id"].as_str().expect("an id").to_owned()
}

fn field(reply: &Reply) -> Option<String> {
    reply.json()["error"]["field"].as_str().map(str::to_owned)
}

fn tasks_authorization_matrix(runtime: Runtime) {
    let server = start(runtime, vars(&[("AGENT_ZERO_CONTROL_PLANE_ORIGINS", "https://ops.example")]));
    let none: Option<&str> = None;
    let credentials = [none, Some(MALLORY), Some(BOB), Some(ALICE)];

    // POST /api/v1/tasks: credential x allowlisted x mode.
    let mut ids = Vec::new();
    for token in credentials {
        for repository in ["acme/widgets", "acme/other"] {
            for mode in ["observe", "fix"] {
                let reply = call(&server, "POST", "/api/v1/tasks", token, Some(&task_body(repository, mode)));
                let expected = match (token, repository, mode) {
                    (None, ..) | (Some(MALLORY), ..) => (401, Some("Authorization")),
                    (_, "acme/other", _) => (403, Some("repository")),
                    (Some(BOB), _, "fix") => (403, Some("mode")),
                    _ => (201, None),
                };
                let got = (reply.status, field(&reply));
                assert_eq!(
                    got,
                    (expected.0, expected.1.map(str::to_owned)),
                    "{token:?} {repository} {mode}: {}",
                    reply.text()
                );
                if reply.status == 201 {
                    assert_eq!(reply.json()["mode"], "observe", "the default policy restricts the mode");
                    ids.push(created_id(&reply));
                }
            }
        }
    }
    assert_eq!(ids.len(), 3);

    // Reads are open by default; the audit log needs a token.
    let task = format!("/api/v1/tasks/{}", ids[0]);
    for token in credentials {
        for path in ["/api/v1/tasks", task.as_str()] {
            assert_eq!(call(&server, "GET", path, token, None).status, 200, "{path} {token:?}");
        }
        let audit = call(&server, "GET", "/api/v1/audit", token, None);
        let expected = if matches!(token, Some(BOB | ALICE)) { 200 } else { 401 };
        assert_eq!(audit.status, expected, "audit {token:?}");
    }
    let audit = call(&server, "GET", "/api/v1/audit?limit=100", Some(BOB), None).json();
    let entries = audit["items"].as_array().unwrap();
    // Authenticated attempts only: bob 4 (1 created), alice 4 (2 created).
    assert_eq!(entries.len(), 8, "{audit}");
    assert_eq!(entries.iter().filter(|e| e["outcome"] == "ok").count(), 3);
    assert!(entries.iter().all(|e| e["principal"] == "alice" || e["principal"] == "bob"));

    // Approvals: authentication first, then the task must exist and wait.
    for token in credentials {
        let decide = json!({ "decision": "reject" });
        let missing = call(&server, "POST", "/api/v1/approvals/api-missing", token, Some(&decide));
        let existing = call(&server, "POST", &format!("/api/v1/approvals/{}", ids[0]), token, Some(&decide));
        if matches!(token, Some(BOB | ALICE)) {
            assert_eq!(missing.status, 404, "{}", missing.text());
            // The task is queued or running (409) or, if its ticks already
            // parked it, waiting (200): never a 2xx for a task that is not.
            assert!(matches!(existing.status, 200 | 409), "{}", existing.text());
        } else {
            assert_eq!((missing.status, existing.status), (401, 401));
        }
    }
    let actor = json!({ "decision": "approve", "actor": "alice" });
    let reply = call(&server, "POST", &format!("/api/v1/approvals/{}", ids[0]), Some(BOB), Some(&actor));
    assert_eq!((reply.status, field(&reply).as_deref()), (400, Some("actor")));

    // CORS: only the listed origin.
    let preflight = |origin: &str| {
        server.send("OPTIONS", "/api/v1/tasks", &[("origin", origin), ("access-control-request-method", "POST")], b"")
    };
    let allowed = preflight("https://ops.example");
    assert_eq!(allowed.status, 204);
    assert_eq!(allowed.header("access-control-allow-origin"), Some("https://ops.example"));
    let refused = preflight("https://evil.example");
    assert_eq!(refused.header("access-control-allow-origin"), None);
    let get = server.send("GET", "/api/v1/tasks", &[("origin", "https://ops.example")], b"");
    assert_eq!(get.header("access-control-allow-origin"), Some("https://ops.example"));

    // Without tokens every mutation fails closed.
    drop(server);
    let bare = start(runtime, Vec::new());
    for (method, path) in [("POST", "/api/v1/tasks"), ("POST", "/api/v1/approvals/api-x"), ("GET", "/api/v1/audit")] {
        let body = if method == "POST" { Some(task_body("acme/widgets", "observe")) } else { None };
        let reply = call(&bare, method, path, Some(ALICE), body.as_ref());
        assert_eq!(reply.status, 503, "{method} {path}: {}", reply.text());
        assert_eq!(field(&reply).as_deref(), Some("AGENT_ZERO_CONTROL_PLANE_TOKENS"));
    }
}

fn tasks_reads_can_require_a_token(runtime: Runtime) {
    let server = start(runtime, vars(&[("AGENT_ZERO_CONTROL_PLANE_READS", "token")]));
    let id =
        created_id(&call(&server, "POST", "/api/v1/tasks", Some(ALICE), Some(&task_body("acme/widgets", "observe"))));
    for path in ["/api/v1/tasks".to_owned(), format!("/api/v1/tasks/{id}")] {
        for (token, status) in [(None, 401), (Some(MALLORY), 401), (Some(BOB), 200), (Some(ALICE), 200)] {
            assert_eq!(call(&server, "GET", &path, token, None).status, status, "{path} {token:?}");
        }
    }
    assert_eq!(call(&server, "GET", "/api/v1/openapi.json", None, None).status, 200);
}

fn ids_of(reply: &Reply) -> Vec<String> {
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect()
}

fn tasks_pagination_with_concurrent_creates(runtime: Runtime) {
    let server = start(runtime, vars(&[]));
    let create = || {
        created_id(&call(&server, "POST", "/api/v1/tasks", Some(ALICE), Some(&task_body("acme/widgets", "observe"))))
    };
    let created: Vec<String> = (0..7).map(|_| create()).collect();
    let page = |query: &str| call(&server, "GET", &format!("/api/v1/tasks?{query}"), None, None);

    let first = page("limit=3");
    let mut seen = ids_of(&first);
    let mut cursor = first.json()["nextCursor"].as_str().expect("more pages").to_owned();
    let mut late = Vec::new();
    loop {
        late.push(create());
        let next = page(&format!("limit=3&cursor={cursor}"));
        seen.extend(ids_of(&next));
        match next.json()["nextCursor"].as_str() {
            Some(c) => cursor = c.to_owned(),
            None => break,
        }
    }
    let newest_first: Vec<String> = created.iter().rev().cloned().collect();
    assert_eq!(seen, newest_first, "each task once, newest first, none created meanwhile");

    let all = ids_of(&page("limit=100&repository=acme%2Fwidgets"));
    assert_eq!(all.len(), created.len() + late.len());
    let late_newest_first: Vec<String> = late.iter().rev().cloned().collect();
    assert_eq!(all[..late.len()], late_newest_first[..]);
    assert!(ids_of(&page("repository=acme%2Fother")).is_empty());
    let reply = page("limit=101");
    assert_eq!((reply.status, field(&reply).as_deref()), (400, Some("limit")));
    let reply = page("cursor=bm90LWEtY3Vyc29y");
    assert_eq!((reply.status, field(&reply).as_deref()), (400, Some("cursor")));

    let detail = call(&server, "GET", &format!("/api/v1/tasks/{}", created[0]), None, None);
    assert_eq!(detail.status, 200, "{}", detail.text());
    let detail = detail.json();
    assert_eq!(detail["id"], json!(created[0]));
    assert_eq!(detail["source"], "api:alice");
    assert!(detail["events"].is_array());
}

fn tasks_openapi_document_and_page(runtime: Runtime) {
    let server = start(runtime, Vec::new());
    let reply = server.send("GET", "/api/v1/openapi.json", &[], b"");
    assert_eq!(reply.status, 200);
    let document = reply.json();
    assert_eq!(document["openapi"], "3.1.0");
    assert!(document["paths"]["/api/v1/tasks"]["post"].is_object());
    let page = server.send("GET", "/api/v1/docs", &[], b"");
    assert_eq!(page.status, 200);
    assert!(page.header("content-type").unwrap_or_default().starts_with("text/html"));
    let csp = page.header("content-security-policy").unwrap_or_default();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    let html = page.text();
    assert!(html.contains("createTask") && !html.contains("<script"), "the page renders the document without script");
}
