//! The run bounds (the reference's scheduler) on the built worker and Spin
//! component: with one task running per repository, a second task of the
//! repository waits in `queued` until the first ends, then runs; with
//! `AGENT_ZERO_MAX_QUEUED=1`, a third delivery while the second waits is
//! answered 503 naming the bound, stored nowhere, and taken as new when
//! GitHub redelivers it; a task created through the API is refused alike.

use serde_json::{Value, json};

use agent_zero_e2e::Runtime;
use agent_zero_fakes::calc;

use super::lifecycle::{
    OPERATOR, decision, deliver, file_issue, labeled_issue, policy, read, wait_for_model_call, wait_terminal,
    world_with_vars,
};
use crate::Case;

pub(crate) const CASES: &[Case] = &[Case {
    name: "run_bounds_a_second_task_of_a_repository_waits_and_a_full_queue_refuses",
    run: a_second_task_waits_and_a_full_queue_refuses,
}];

/// When the task entered `state` (its event's timestamp, RFC 3339).
fn entered(task: &Value, state: &str) -> String {
    let events = task["events"].as_array().expect("events");
    let event = events.iter().find(|e| e["state"] == state).unwrap_or_else(|| panic!("no {state} event: {task}"));
    event["timestamp"].as_str().expect("a timestamp").to_owned()
}

fn a_second_task_waits_and_a_full_queue_refuses(runtime: Runtime) {
    let world = world_with_vars(
        runtime,
        &policy("fix"),
        &[
            ("AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY", "1"),
            ("AGENT_ZERO_MAX_QUEUED", "1"),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/calc"),
        ],
    );
    // The first task's model call stays in flight a while: it runs, holding
    // the repository's slot, while the others arrive.
    world.model.push_decision_after(1_000, decision("mechanical", calc::CALC_PY_FIXED));
    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    let first = file_issue(&world, "bounds-first");
    wait_for_model_call(&world);

    // The second waits in `queued`: the repository's one slot is taken.
    let second = file_issue(&world, "bounds-second");
    // One task is queued, as many as AGENT_ZERO_MAX_QUEUED allows: a third
    // delivery is refused naming the bound, and nothing is stored.
    let third = deliver(&world, "bounds-third", "issues", &labeled_issue(&world));
    assert_eq!(third.status, 503, "{}", third.text());
    let error = &third.json()["error"];
    assert_eq!((error["code"].as_str(), error["field"].as_str()), (Some("queue_full"), Some("AGENT_ZERO_MAX_QUEUED")));
    assert!(third.header("retry-after").is_some(), "{:?}", third.headers);
    let task = json!({
        "repository": "acme/calc",
        "mode": "observe",
        "trigger": "feedback",
        "feedback": [{ "body": "average() is wrong", "path": "calc.py", "line": 1 }],
    });
    let auth = format!("Bearer {OPERATOR}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    let api = world.server.send("POST", "/api/v1/tasks", &headers, task.to_string().as_bytes());
    assert_eq!(api.status, 503, "{}", api.text());
    assert_eq!(api.json()["error"]["field"], "AGENT_ZERO_MAX_QUEUED", "{}", api.text());
    let listed = read(&world.server, "/api/v1/tasks").json();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(2), "the refused ones stored nothing: {listed}");

    // The first ends; only then does the second leave `queued`, and runs.
    let (first, second) = (wait_terminal(&world, &first), wait_terminal(&world, &second));
    assert_eq!((first["state"].as_str(), second["state"].as_str()), (Some("completed"), Some("completed")));
    assert!(
        entered(&second, "discovering") >= entered(&first, "completed"),
        "the second started before the first ended: {first} {second}"
    );
    let waited = world.server.app_log_lines().unwrap_or_default().into_iter().any(|line| {
        line["agent_zero"] == "tick"
            && line["task_id"] == second["id"]
            && line.to_string().contains("AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY")
    });
    assert!(waited, "no tick of the second task says which bound it waited for");

    // The queue has room again: GitHub's redelivery of the refused one is new.
    let again = deliver(&world, "bounds-third", "issues", &labeled_issue(&world));
    assert_eq!(again.status, 202, "{}", again.text());
    assert!(again.json()["duplicate"].is_null(), "{}", again.text());
}
