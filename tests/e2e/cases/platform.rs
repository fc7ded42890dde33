//! Inside a platform's limits, on both runtimes. Under the `fermyon-cloud`
//! profile (`AGENT_ZERO_PLATFORM`; a hosted Spin ends a request handler
//! after 30 s, and our Spin host does the same with `--wall-clock-secs`), a
//! fix whose check runs longer than any invocation may, and whose model
//! answers in most of a tick, still ends verified: the checks are started
//! in the sandbox and polled by later ticks, each invocation starts a tick
//! only while it would still end in time and hands the rest to a fresh one.
//! No invocation that ran ticks ran past the wall clock (each runtime logs
//! every invocation's wall time). A configuration that cannot fit is
//! refused before any task exists, naming the setting.

use agent_zero_e2e::{Reply, Runtime, Server, ServerOptions};
use agent_zero_fakes::calc;
use serde_json::json;

use super::lifecycle::{
    OPERATOR, World, decision, file_issue, policy, read, wait_github, wait_terminal, world_on_platform, world_with_vars,
};
use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "platform_a_check_longer_than_an_invocation_verifies_on_fermyon_cloud",
        run: a_check_longer_than_an_invocation_verifies_on_fermyon_cloud,
    },
    Case {
        name: "platform_a_model_timeout_past_the_wall_clock_is_refused_by_name",
        run: a_model_timeout_past_the_wall_clock_is_refused_by_name,
    },
    Case { name: "platform_the_doctor_says_what_the_store_guarantees", run: the_doctor_says_what_the_store_guarantees },
    Case {
        name: "platform_a_host_missing_from_spins_allow_list_is_named_before_any_task",
        run: a_host_missing_from_spins_allow_list_is_named_before_any_task,
    },
    Case {
        name: "platform_on_the_free_workers_plan_an_issue_becomes_a_verified_pull_request",
        run: on_the_free_workers_plan_an_issue_becomes_a_verified_pull_request,
    },
];

/// Fermyon Cloud's wall clock per request handler (docs/platforms.md).
const WALL_CLOCK_SECS: u64 = 30;
/// Three invocations long: only a check started and polled across ticks can
/// finish.
const CHECK_SECS: u64 = 90;
/// Most of a tick (25 s inside 30 s).
const MODEL_MS: u64 = 20_000;

fn a_check_longer_than_an_invocation_verifies_on_fermyon_cloud(runtime: Runtime) {
    let policy = policy("fix").replace(
        "checks:\n  - [python3, -m, unittest]\n",
        "checks:\n  - [python3, -m, unittest]\n  - [python3, slow_check.py]\n",
    );
    assert!(policy.contains("slow_check.py"), "{policy}");
    let slow = format!("import time\n\ntime.sleep({CHECK_SECS})\nprint('slow check done')\n");
    let world = world_on_platform(
        runtime,
        &policy,
        &[("slow_check.py", &slow)],
        &[("AGENT_ZERO_PLATFORM", "fermyon-cloud"), ("AGENT_ZERO_MODEL_TIMEOUT_MS", "24000")],
        WALL_CLOCK_SECS,
    );
    world.model.push_decision_after(MODEL_MS, decision("mechanical", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "platform-fermyon-cloud");
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    let checks = task["result"]["checks"].as_array().cloned().unwrap_or_default();
    let slow_check = checks.iter().find(|c| c["command"].to_string().contains("slow_check.py"));
    let slow_check = slow_check.unwrap_or_else(|| panic!("the slow check ran: {text}"));
    assert_eq!(slow_check["exitCode"], 0, "{slow_check}");
    assert!(slow_check["durationMs"].as_u64().unwrap_or(0) >= CHECK_SECS * 1_000, "{slow_check}");

    let walls = world.server.invocation_wall_ms();
    assert!(!walls.is_empty(), "{}: no invocation's wall time was logged", runtime.name());
    let longest = walls.iter().copied().max().unwrap_or(0);
    assert!(
        longest <= WALL_CLOCK_SECS * 1_000,
        "{}: an invocation ran {longest} ms, past the {WALL_CLOCK_SECS} s wall clock: {walls:?}",
        runtime.name()
    );
    // The model's 20 s answer was waited for inside one invocation.
    assert!(longest >= MODEL_MS, "{}: the model call ran inside an invocation: {walls:?}", runtime.name());
    println!("  {}: {} invocations, longest {longest} ms", runtime.name(), walls.len());
}

/// `POST /api/v1/tasks` as the operator: a fix of the fixture repository's
/// bug, reported as review feedback.
fn create_task(world: &World) -> Reply {
    // The task names an open pull request at its current head, as the API requires.
    let head = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c";
    let number = world.github.open_pull_request(world.fixture.owner(), world.fixture.name(), "feedback", head, &[]);
    let body = serde_json::to_vec(&json!({
        "repository": format!("{}/{}", world.fixture.owner(), world.fixture.name()),
        "mode": "fix",
        "trigger": "feedback",
        "feedback": [{ "body": "`mean` divides by the wrong count", "path": "calc.py", "line": 3 }],
        "pullRequest": { "number": number, "headSha": head },
    }))
    .unwrap();
    let auth = format!("Bearer {OPERATOR}");
    let headers = [("content-type", "application/json"), ("authorization", auth.as_str())];
    world.server.send("POST", "/api/v1/tasks", &headers, &body)
}

fn a_model_timeout_past_the_wall_clock_is_refused_by_name(runtime: Runtime) {
    let world = world_with_vars(
        runtime,
        &policy("fix"),
        &[
            ("AGENT_ZERO_PLATFORM", "fermyon-cloud"),
            ("AGENT_ZERO_MODEL_TIMEOUT_MS", "60000"),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/calc"),
        ],
    );
    let health = world.server.send("GET", "/api/v1/health", &[], b"");
    assert_eq!(health.status, 200, "{}", health.text());
    let platform = &health.json()["platform"];
    assert_eq!(platform["name"], "fermyon-cloud", "{platform}");
    assert_eq!(platform["chosenBy"], "AGENT_ZERO_PLATFORM", "{platform}");
    assert_eq!(platform["limits"]["wallClockMs"]["value"], WALL_CLOCK_SECS * 1_000, "{platform}");
    assert_eq!(platform["conflicts"][0]["variable"], "AGENT_ZERO_MODEL_TIMEOUT_MS", "{platform}");

    let reply = create_task(&world);
    assert_eq!(reply.status, 503, "{}", reply.text());
    let error = &reply.json()["error"];
    assert_eq!(error["code"], "not_configured", "{error}");
    assert_eq!(error["field"], "AGENT_ZERO_MODEL_TIMEOUT_MS", "{error}");
    assert!(error["message"].as_str().unwrap_or_default().contains("fermyon-cloud"), "{error}");
    let listed = read(&world.server, "/api/v1/tasks").json();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(0), "nothing was created: {listed}");
}

/// `agent-zero doctor`'s `store-atomic` check observes the store: on the
/// Spin host, its SQLite database (one atomic statement per conditional
/// write) and, with `agent_zero_store = key-value`, its key-value store
/// with Spin's default semantics (a swap from absent is an upsert, so
/// creations go through increment tickets); on workerd, each task's
/// records live in its own Durable Object.
fn the_doctor_says_what_the_store_guarantees(runtime: Runtime) {
    let stores: &[Option<&str>] = match runtime {
        Runtime::Spin => &[None, Some("key-value")],
        Runtime::Workerd => &[None],
    };
    for store in stores {
        let mut vars = vec![("AGENT_ZERO_CONTROL_PLANE_TOKENS".to_owned(), format!("operator:{OPERATOR}"))];
        vars.extend(store.map(|store| ("AGENT_ZERO_STORE".to_owned(), store.to_owned())));
        let server = Server::start(runtime, &ServerOptions { vars, ..ServerOptions::default() })
            .unwrap_or_else(|e| panic!("{e}"));
        let auth = format!("Bearer {OPERATOR}");
        let reply = server.send("GET", "/api/v1/doctor", &[("authorization", auth.as_str())], b"");
        assert_eq!(reply.status, 200, "{}", reply.text());
        let body = reply.json();
        let check = body["checks"].as_array().unwrap().iter().find(|c| c["name"] == "store-atomic").cloned();
        let check = check.unwrap_or_else(|| panic!("no store-atomic check ({store:?}): {body}"));
        assert_eq!(check["status"], "pass", "{check}");
        let detail = check["detail"].as_str().unwrap_or_default();
        match (runtime, store) {
            (Runtime::Spin, None) => assert!(detail.contains("SQLite") && detail.contains("atomic"), "{check}"),
            (Runtime::Spin, Some(_)) => {
                assert!(detail.contains("upsert") && detail.contains("increment tickets"), "{check}");
            }
            (Runtime::Workerd, _) => assert!(detail.contains("Durable Object"), "{check}"),
        }
    }
}

/// Under `cloudflare-free`, a labelled issue still becomes a verified pull
/// request, and no tick's metered count (what it spent, with what the polls
/// before it spent and committed nothing for) reaches the free plan's 50
/// subrequests per invocation.
fn on_the_free_workers_plan_an_issue_becomes_a_verified_pull_request(runtime: Runtime) {
    const FREE_SUBREQUESTS: u64 = 50;
    let world = world_with_vars(runtime, &policy("fix"), &[("AGENT_ZERO_PLATFORM", "cloudflare-free")]);
    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "platform-cloudflare-free");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    assert_eq!(task["result"]["verified"], true, "{task}");
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(&world, "the pull request", |g| !g.pulls(owner, name).is_empty());
    assert_eq!(world.github.pulls(owner, name).len(), 1, "one pull request");

    let health = world.server.send("GET", "/api/v1/health", &[], b"").json();
    assert_eq!(health["platform"]["name"], "cloudflare-free", "{health}");
    assert_eq!(health["platform"]["conflicts"], json!([]), "{health}");
    let log = read(&world.server, &format!("/api/v1/tasks/{task_id}/log")).json();
    let entries = log["entries"].as_array().expect("the log's entries");
    let mut ticks = 0;
    for entry in entries {
        for fact in entry["facts"].as_array().unwrap().iter().filter(|f| f["fact"] == "metered") {
            ticks += 1;
            let spent = fact["cost"]["subrequests"].as_u64().unwrap_or(0);
            assert!(spent < FREE_SUBREQUESTS, "entry {}: {spent} subrequests: {fact}", entry["seq"]);
        }
    }
    assert!(ticks > 5, "every committed tick was metered: {ticks}");
}

/// A model endpoint that the tick component's `allowed_outbound_hosts` in
/// `spin.toml` does not list: on Spin, health names the variable and task
/// creation answers 503 naming it and the origin variable that would allow
/// it, before any task exists (every model call
/// would be refused by Spin at run time). Workers keep no such list.
fn a_host_missing_from_spins_allow_list_is_named_before_any_task(runtime: Runtime) {
    let world = world_with_vars(
        runtime,
        &policy("fix"),
        &[
            ("AGENT_ZERO_MODEL_BASE_URL", "https://models.example.com/v1"),
            // The operator changed the URL and not the origin Spin allows.
            ("AGENT_ZERO_MODEL_ORIGIN", ""),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/calc"),
        ],
    );
    let health = world.server.send("GET", "/api/v1/health", &[], b"").json();
    let conflicts = health["platform"]["conflicts"].clone();
    let reply = create_task(&world);
    match runtime {
        Runtime::Spin => {
            assert_eq!(conflicts[0]["variable"], "AGENT_ZERO_MODEL_BASE_URL", "{health}");
            let message = conflicts[0]["message"].as_str().unwrap_or_default();
            assert!(message.contains("\"https://models.example.com\"") && message.contains("spin.toml"), "{message}");
            assert!(message.contains("set the variable `agent_zero_model_origin`"), "{message}");
            assert_eq!(reply.status, 503, "{}", reply.text());
            assert_eq!(reply.json()["error"]["field"], "AGENT_ZERO_MODEL_BASE_URL", "{}", reply.text());
        }
        Runtime::Workerd => {
            assert_eq!(conflicts, json!([]), "{health}");
            assert_eq!(reply.status, 201, "{}", reply.text());
        }
    }
}
