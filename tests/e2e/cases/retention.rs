//! Retention on both hosts, with lifetimes of a few seconds: a finished
//! task and its delivery record are gone after their lifetimes, removed by
//! the sweep's retention pass; a task waiting for a person is kept, and a
//! redelivery of its delivery is still a duplicate (the task log decides).

use std::time::{Duration, Instant};

use agent_zero_e2e::Runtime;
use agent_zero_fakes::calc;
use serde_json::{Value, json};

use super::lifecycle::{
    OPERATOR, decision, deliver, file_issue, labeled_issue, policy, read, wait_terminal, world_with_vars,
};
use crate::Case;

pub(crate) const CASES: &[Case] = &[Case {
    name: "retention_finished_tasks_and_delivery_records_expire_live_ones_stay",
    run: finished_tasks_and_delivery_records_expire_live_ones_stay,
}];

/// About 2.6 s, in days.
const LIFETIME_DAYS: &str = "0.00003";

fn finished_tasks_and_delivery_records_expire_live_ones_stay(runtime: Runtime) {
    let world = world_with_vars(
        runtime,
        &policy("fix"),
        &[("AGENT_ZERO_RETENTION_DAYS", LIFETIME_DAYS), ("AGENT_ZERO_DELIVERY_RETENTION_DAYS", LIFETIME_DAYS)],
    );
    // Finished: a label the policy does not act on, in the repository's
    // first delivery (recorded: no tick has read its policy yet).
    let mut payload: Value = serde_json::from_slice(&labeled_issue(&world)).unwrap();
    payload["label"]["name"] = json!("wontfix");
    let body = serde_json::to_vec(&payload).unwrap();
    let reply = deliver(&world, "retention-ignored", "issues", &body);
    assert_eq!(reply.status, 202, "{}", reply.text());
    let ignored = reply.json()["taskId"].as_str().unwrap().to_owned();
    assert_eq!(wait_terminal(&world, &ignored)["state"], "ignored");
    // While its record lives, a redelivery is answered from it.
    let again = deliver(&world, "retention-ignored", "issues", &body);
    assert_eq!((again.status, again.json()["duplicate"].clone()), (200, json!(true)), "{}", again.text());

    // Live: a high-impact fix waits for a person. (Delivered second: the
    // first tick recorded the repository's policy, which from then on
    // declines a `wontfix` label at intake, storing nothing.)
    world.model.push_decision(decision("high-impact", calc::CALC_PY_FIXED));
    let live = file_issue(&world, "retention-live");
    assert_eq!(wait_terminal(&world, &live)["state"], "needs-human");

    // The sweep's retention pass removes it once due.
    let auth = format!("Bearer {OPERATOR}");
    let started = Instant::now();
    let mut removed = 0;
    while read(&world.server, &format!("/api/v1/tasks/{ignored}")).status != 404 {
        // On workerd, the platform's own cron trigger runs the sweep (the
        // front worker's `scheduled` handler, through wrangler dev's
        // `--test-scheduled` route); on Spin, its route, as a cron job calls it.
        let swept = match runtime {
            Runtime::Workerd => world.server.send("GET", "/__scheduled?cron=*%2F5+*+*+*+*", &[], b""),
            Runtime::Spin => world.server.send("POST", "/api/v1/sweep", &[("authorization", &auth)], b""),
        };
        assert_eq!(swept.status, 200, "{}", swept.text());
        if runtime == Runtime::Spin {
            removed += swept.json()["tasksRemoved"].as_u64().unwrap_or(0);
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the finished task was never removed: {}", swept.text());
        std::thread::sleep(Duration::from_millis(500));
    }
    // The Spin host also sweeps on its own schedule, so one of its sweeps
    // may be the one that removed it: never more than the one task.
    assert!(removed <= 1, "only the finished task was removed: {removed}");
    let list = read(&world.server, "/api/v1/tasks").json();
    let ids: Vec<&str> = list["items"].as_array().unwrap().iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, [live.as_str()], "the index forgot it too: {list}");
    // Its delivery record is gone as well: the same delivery id is new again.
    let fresh = deliver(&world, "retention-ignored", "issues", &body);
    assert_eq!(fresh.status, 202, "{}", fresh.text());
    assert!(fresh.json()["duplicate"].is_null(), "{}", fresh.text());

    // Nothing live was removed: the waiting task is whole, and its
    // delivery, whose record expired, is still a duplicate.
    let kept = read(&world.server, &format!("/api/v1/tasks/{live}"));
    assert_eq!(kept.status, 200, "{}", kept.text());
    assert_eq!(kept.json()["state"], "needs-human");
    let redelivered = deliver(&world, "retention-live", "issues", &labeled_issue(&world));
    assert_eq!(redelivered.status, 200, "{}", redelivered.text());
    assert_eq!(redelivered.json()["duplicate"], true, "{}", redelivered.text());
    assert_eq!(redelivered.json()["taskId"], live.as_str());
}
