//! Atomic commit points under real concurrency: many instances at once on
//! one store (Spin runs each request as its own instance over the `default`
//! store; Cloudflare serialises leases in the LeaseCoordinator Durable
//! Object).

use agent_zero_e2e::Runtime;
use agent_zero_fakes::calc;

use super::lifecycle::{World, decision, file_issue, policy, sandbox_stats, wait_terminal, world};
use crate::Case;

pub(crate) const CASES: &[Case] = &[Case {
    name: "lease_ledger_holds_for_eight_concurrent_tasks",
    run: lease_ledger_holds_for_eight_concurrent_tasks,
}];

const TASKS: usize = 8;

/// The lease ledger as stored: on Spin the `leases/held` row of the
/// components' SQLite database; on Cloudflare it lives in the Durable
/// Object, which this suite cannot read.
fn ledger(world: &World) -> Option<serde_json::Value> {
    if world.server.runtime != Runtime::Spin {
        return None;
    }
    let values = world.server.spin_values();
    let bytes = values.get("leases/held").expect("leases/held was written");
    Some(serde_json::from_slice(bytes).expect("leases/held is JSON"))
}

/// Eight deliveries of one repository at once (maxActivePerRepository is 1):
/// every lease change is a compare-and-swap of `leases/held`, so concurrent
/// instances never hold two sandboxes for the repository at once, every task
/// still gets its lease in turn, and every lease is released at the end. A
/// read-then-write ledger loses leases here (an overwritten lease is never
/// stopped: `active` stays above 0) or overbooks (`peak` above 1).
fn lease_ledger_holds_for_eight_concurrent_tasks(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    for _ in 0..TASKS {
        world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    }
    // Delivered one after another; the tasks themselves then run, and race
    // for leases, concurrently.
    let ids: Vec<String> = (0..TASKS).map(|i| file_issue(&world, &format!("atomic-lease-{i}"))).collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), TASKS, "eight deliveries, eight tasks: {ids:?}");
    for id in &ids {
        let task = wait_terminal(&world, id);
        assert_eq!(task["state"], "completed", "{task}");
        assert_eq!(task["result"]["verified"], true, "{task}");
    }
    // A task is terminal before its lease is released (release, then
    // publish): wait for the last release, bounded.
    let started = std::time::Instant::now();
    let stats = loop {
        let stats = sandbox_stats(&world);
        let released = ledger(&world).is_none_or(|held| held == serde_json::json!([]));
        if (stats["active"] == 0 && released) || started.elapsed() > std::time::Duration::from_secs(60) {
            break stats;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    assert_eq!(stats["created"], TASKS, "one sandbox per task: {stats}");
    assert_eq!(stats["peak"], 1, "never more than maxActivePerRepository sandboxes at once: {stats}");
    assert_eq!(stats["active"], 0, "every sandbox was stopped: {stats}");
    if let Some(held) = ledger(&world) {
        assert_eq!(held, serde_json::json!([]), "every lease was released from leases/held");
    }
}
