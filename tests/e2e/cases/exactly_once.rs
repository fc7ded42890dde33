//! Exactly-once steps on both runtimes: a check that runs longer than the
//! sweep's grace runs once, and eight concurrent re-drives of a tick whose
//! model call is in flight cost one model call, one commit and one
//! published result. The claim each acting tick takes on its seq, until the
//! step's own bound, is what holds the duplicates off.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use agent_zero_e2e::{Reply, Runtime};
use agent_zero_fakes::calc;
use serde_json::Value;

use super::lifecycle::{
    OPERATOR, World, assert_each_step_committed_once, decision, file_issue, policy, read, runs_carrying,
    wait_for_model_call, wait_github, wait_terminal, world, world_with_files,
};
use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "exactly_once_a_check_longer_than_the_sweep_grace_runs_once",
        run: a_check_longer_than_the_sweep_grace_runs_once,
    },
    Case {
        name: "exactly_once_eight_redrives_of_a_tick_in_flight_make_one_model_call",
        run: eight_redrives_of_a_tick_in_flight_make_one_model_call,
    },
];

fn sweep(world: &World) -> Reply {
    let reply =
        world.server.send("POST", "/api/v1/sweep?graceMs=0", &[("authorization", &format!("Bearer {OPERATOR}"))], b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply
}

fn state(world: &World, task_id: &str) -> String {
    read(&world.server, &format!("/api/v1/tasks/{task_id}")).json()["state"].as_str().unwrap_or_default().to_owned()
}

fn a_check_longer_than_the_sweep_grace_runs_once(runtime: Runtime) {
    // A repository check of 4 s; the sweep runs with no grace all along.
    let policy = policy("fix").replace(
        "checks:\n  - [python3, -m, unittest]\n",
        "checks:\n  - [python3, -m, unittest]\n  - [python3, slow_check.py]\n",
    );
    assert!(policy.contains("slow_check.py"), "{policy}");
    let world = world_with_files(runtime, &policy, &[("slow_check.py", "import time\n\ntime.sleep(4)\n")]);
    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "exactly-once-slow-check");
    let started = Instant::now();
    while state(&world, &task_id) != "verifying" {
        assert!(started.elapsed() < Duration::from_secs(60), "never reached verifying: {}", state(&world, &task_id));
        std::thread::sleep(Duration::from_millis(50));
    }
    // While the checks run: re-drive attempts, each turned away by the live claim.
    let mut claimed = 0;
    while state(&world, &task_id) == "verifying" {
        claimed += sweep(&world).json()["ticksClaimed"].as_u64().unwrap_or(0);
        assert!(started.elapsed() < Duration::from_secs(90), "the checks never finished");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(claimed > 0, "the sweep saw the live claim at least once");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    assert_eq!(task["result"]["verified"], true, "{task}");
    assert_each_step_committed_once(&task);
    // Both checks ran in one background job, started once; polls carry no argv.
    assert_eq!(runs_carrying(&world, "slow_check.py"), 1, "{}", super::lifecycle::sandbox_record(&world));
    assert_eq!(runs_carrying(&world, "unittest"), 1, "{}", super::lifecycle::sandbox_record(&world));
    assert_eq!(world.model.calls().len(), 1, "the model was asked once");
}

fn eight_redrives_of_a_tick_in_flight_make_one_model_call(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    // The understand call is answered after 0.8 s (under the 1.5 s model
    // timeout): in flight while the re-drives arrive.
    world.model.push_decision_after(800, decision("mechanical", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "exactly-once-eight");
    wait_for_model_call(&world);
    // Eight at once while the call is in flight.
    let barrier = Arc::new(Barrier::new(8));
    let answers: Vec<Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                let world = &world;
                scope.spawn(move || {
                    barrier.wait();
                    sweep(world).json()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a sweep")).collect()
    });
    let redriven: u64 = answers.iter().map(|a| a["ticksEnqueued"].as_u64().unwrap_or(0)).sum();
    assert_eq!(redriven, 0, "no sweep re-drove the claimed tick: {answers:?}");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    assert_eq!(task["result"]["verified"], true, "{task}");
    assert_each_step_committed_once(&task);
    assert_eq!(world.model.calls().len(), 1, "one model call for the step");
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(&world, "the pull request", |g| !g.pulls(owner, name).is_empty());
    assert_eq!(world.github.pulls(owner, name).len(), 1, "one published result");
    assert_eq!(
        runs_carrying(&world, "unittest"),
        1,
        "the one check ran once: {}",
        super::lifecycle::sandbox_record(&world)
    );
}
