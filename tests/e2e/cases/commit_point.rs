//! The commit point on each runtime: writers racing for one task (an
//! approve and a reject; copies of one delivery) are decided by the host's
//! atomic insert (a `TaskStore` Durable Object per task on workerd; on
//! Spin one SQL statement, or with `agent_zero_store = key-value` an
//! `increment` ticket: docs/spin-stores.md), so exactly one wins and the
//! rest are told so.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use agent_zero_e2e::{Reply, Runtime};
use agent_zero_fakes::calc;
use serde_json::{Value, json};

use super::lifecycle::{
    World, deliver, file_issue, finding, labeled_issue, policy, read, wait_terminal, world, world_with_vars,
};
use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case { name: "racing_approve_and_reject_one_wins_each_round", run: racing_approve_and_reject_one_wins_each_round },
    Case {
        name: "simultaneous_copies_of_a_delivery_create_one_task",
        run: simultaneous_copies_of_a_delivery_create_one_task,
    },
    Case {
        name: "on_spin_s_key_value_store_copies_and_racing_decisions_act_once",
        run: on_spin_s_key_value_store_copies_and_racing_decisions_act_once,
    },
];

/// The operator token `lifecycle::world` configures (`operator:` with every mode).
const OPERATOR: &str = "e2e-operator-token";
const ROUNDS: usize = 20;

/// A model answer whose change is high-impact: the task stops at needs-human.
fn high_impact() -> Value {
    let mut finding = finding(calc::BUG_QUOTE, 0.95);
    finding["changeRisk"] = json!("high-impact");
    json!({
        "finding": finding,
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": calc::BUG_PATH, "content": calc::CALC_PY_FIXED, "reason": "fix the denominator" }]
    })
}

/// Posts `decision` on `task_id` as the operator.
fn decide(world: &World, task_id: &str, decision: &str) -> Reply {
    let body = serde_json::to_vec(&json!({ "decision": decision, "comment": "racing" })).unwrap();
    let auth = format!("Bearer {OPERATOR}");
    world.server.send(
        "POST",
        &format!("/api/v1/approvals/{task_id}"),
        &[("content-type", "application/json"), ("authorization", &auth)],
        &body,
    )
}

/// Runs `work(i)` on `n` threads released together by one barrier; the
/// answers in thread order.
fn at_once<T: Send>(n: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(n);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (barrier, work) = (&barrier, &work);
                scope.spawn(move || {
                    barrier.wait();
                    work(i)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a racing request panicked")).collect()
    })
}

/// Waits until the task has left `needs-human` and reached a terminal state.
fn wait_decided(world: &World, task_id: &str) -> Value {
    let started = Instant::now();
    loop {
        let task = wait_terminal(world, task_id);
        if task["state"] != "needs-human" {
            return task;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the decision never took effect: {task}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn racing_approve_and_reject_one_wins_each_round(runtime: Runtime) {
    racing_decisions(&world(runtime, &policy("fix")), ROUNDS);
}

/// `rounds` tasks, each stopped for a person and decided by an approve and
/// a reject sent at once: one wins, and the task ends as it decided.
fn racing_decisions(world: &World, rounds: usize) {
    let mut decided = Vec::new();
    for round in 0..rounds {
        world.model.push_decision(high_impact());
        let task_id = file_issue(world, &format!("commit-race-{round}"));
        let task = wait_terminal(world, &task_id);
        assert_eq!(task["state"], "needs-human", "round {round}: {task}");

        let replies = at_once(2, |i| decide(world, &task_id, ["approve", "reject"][i]));
        let answers: Vec<(u16, String)> = replies.iter().map(|r| (r.status, r.text())).collect();
        let winners: Vec<usize> = (0..2).filter(|&i| replies[i].status == 200).collect();
        let losers: Vec<usize> = (0..2).filter(|&i| replies[i].status == 409).collect();
        assert!(winners.len() == 1 && losers.len() == 1, "round {round}: one 200 and one 409, got {answers:?}");
        let winner = ["approve", "reject"][winners[0]];
        assert_eq!(replies[winners[0]].json()["decision"], winner, "round {round}: {answers:?}");
        assert_eq!(replies[losers[0]].json()["error"]["code"], "conflict", "round {round}: {answers:?}");
        decided.push((task_id, winner));
    }

    // Every task ends as its winner decided: approved ones run to a
    // verified completion, rejected ones fail.
    for (round, (task_id, winner)) in decided.iter().enumerate() {
        let task = wait_decided(world, task_id);
        let text = task.to_string();
        match *winner {
            "approve" => {
                assert_eq!(task["state"], "completed", "round {round} (approved): {text}");
                assert_eq!(task["result"]["verified"], true, "round {round} (approved): {text}");
                assert_eq!(task["approvedBy"], "operator", "round {round} (approved): {text}");
            }
            _ => assert_eq!(task["state"], "failed", "round {round} (rejected): {text}"),
        }
    }
    let approved = decided.iter().filter(|(_, w)| *w == "approve").count();
    println!("  {approved} of {rounds} rounds won by approve");
}

fn simultaneous_copies_of_a_delivery_create_one_task(runtime: Runtime) {
    copies_of_a_delivery(&world(runtime, &policy("fix")));
}

/// On Spin's key-value store (for a platform without SQLite), where a
/// creation is an `increment` ticket and a tick's claim and commit are
/// single-key writes: the same two races, fewer rounds. Not on workerd,
/// whose store is not a choice (main.rs, `UNSUPPORTED`).
fn on_spin_s_key_value_store_copies_and_racing_decisions_act_once(runtime: Runtime) {
    let world = world_with_vars(runtime, &policy("fix"), &[("AGENT_ZERO_STORE", "key-value")]);
    copies_of_a_delivery(&world);
    racing_decisions(&world, 6);
}

/// Eight copies of one delivery sent at once: one task, created once.
fn copies_of_a_delivery(world: &World) {
    world.model.push_decision(high_impact());
    let body = labeled_issue(world);
    let replies = at_once(8, |_| deliver(world, "commit-copies-1", "issues", &body));
    let answers: Vec<(u16, String)> = replies.iter().map(|r| (r.status, r.text())).collect();
    let bodies: Vec<Value> = replies.iter().map(Reply::json).collect();
    let created = (0..8)
        .filter(|&i| replies[i].status == 202 && bodies[i]["state"] == "queued" && bodies[i]["duplicate"].is_null());
    assert_eq!(created.count(), 1, "exactly one copy reports the task created: {answers:?}");
    let duplicates = (0..8).filter(|&i| replies[i].status == 200 && bodies[i]["duplicate"] == true);
    assert_eq!(duplicates.count(), 7, "the other copies say duplicate: {answers:?}");
    let task_id = bodies[0]["taskId"].as_str().expect("a task id").to_owned();
    assert!(bodies.iter().all(|b| b["taskId"] == task_id.as_str()), "every copy names one task: {answers:?}");

    // One task exists and runs; the listing holds it once.
    let task = wait_terminal(world, &task_id);
    assert_eq!(task["state"], "needs-human", "{task}");
    let listed = read(&world.server, "/api/v1/tasks");
    assert_eq!(listed.status, 200, "{}", listed.text());
    let ids: Vec<Value> = listed.json()["items"].as_array().expect("items").iter().map(|t| t["id"].clone()).collect();
    assert_eq!(ids, [json!(task_id)], "one task listed: {}", listed.text());
    assert_eq!(world.model.calls().len(), 1, "one task asked the model once");
}
