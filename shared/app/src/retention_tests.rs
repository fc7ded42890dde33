use agent_zero_agent::Policy;
use agent_zero_contracts::{RunMode, TaskState, Trigger};
use agent_zero_engine::{Entry, Fact, Resident, Stimulus, TaskInput, log_key};
use agent_zero_ports::MemoryKv;

use super::*;
use crate::retention_pass::{RetentionReport, pass};
use crate::test_host::{RecordingQueue, START_MS, block_on};

const DAY: u64 = 86_400_000;

fn stimulus(id: &str) -> Stimulus {
    Stimulus {
        task_id: id.into(),
        repository: "acme/widgets".into(),
        trigger: Trigger::Feedback,
        mode: RunMode::Observe,
        source: Some("api:test".into()),
        input: TaskInput::default(),
        policy: Policy::default(),
    }
}

/// Creates task `id`, indexed, and moves it along `path` at entry 1 (at `at_ms`).
fn task(kv: &MemoryKv, id: &str, path: &[TaskState], at_ms: u64) -> Resident {
    block_on(async {
        let queue = RecordingQueue::default();
        let s = stimulus(id);
        agent_zero_engine::create(kv, &queue, s.clone(), START_MS).await.unwrap();
        crate::task_index::record_created(kv, &s, START_MS).await.unwrap();
        let facts = path
            .windows(2)
            .map(|w| Fact::Transition { from: w[0], to: w[1], message: String::new(), attempt: None })
            .collect();
        let entry = Entry { seq: 1, at_ms, facts };
        kv.put(&log_key(id, 1), &serde_json::to_vec(&entry).unwrap()).await.unwrap();
        let resident = agent_zero_engine::load(kv, id).await.unwrap().unwrap();
        crate::task_index::record_tick(kv, &resident, at_ms).await.unwrap();
        resident
    })
}

fn keys(kv: &MemoryKv, prefix: &str) -> Vec<String> {
    kv.snapshot().keys().filter(|k| k.starts_with(prefix)).cloned().collect()
}

#[test]
fn lifetimes_come_from_the_operator_and_a_malformed_one_names_its_variable() {
    assert_eq!(Lifetimes::from_config(&Config::from_pairs([])).unwrap(), Lifetimes::default());
    assert_eq!(Lifetimes::default().delivery_ms, 3 * DAY, "GitHub redelivers for 3 days");
    let set = Config::from_pairs([("AGENT_ZERO_RETENTION_DAYS", "7"), ("AGENT_ZERO_DELIVERY_RETENTION_DAYS", "0.5")]);
    assert_eq!(Lifetimes::from_config(&set).unwrap(), Lifetimes { delivery_ms: DAY / 2, task_ms: 7 * DAY });
    for bad in ["thirty", "0", "-1", "NaN", "inf", "99999999"] {
        let config = Config::from_pairs([("AGENT_ZERO_RETENTION_DAYS", bad)]);
        let error = Lifetimes::from_config(&config).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("AGENT_ZERO_RETENTION_DAYS"), "{bad}");
        assert!(!error.message.contains(bad), "the value is not echoed: {}", error.message);
    }
}

#[test]
fn a_finished_task_is_removed_after_its_lifetime_and_nothing_live_is() {
    let kv = MemoryKv::new();
    let lifetimes = Lifetimes { delivery_ms: 3 * DAY, task_ms: 30 * DAY };
    let ended = START_MS + 1_000;
    let done = task(&kv, "t-done", &[TaskState::Queued, TaskState::Failed], ended);
    let running = task(&kv, "t-running", &[TaskState::Queued, TaskState::Discovering], ended);
    task(&kv, "t-unscheduled", &[TaskState::Queued, TaskState::Failed], ended);
    assert_eq!(done.ended_ms, Some(ended));
    assert_eq!(running.ended_ms, None);
    block_on(async {
        schedule_finished(&kv, &lifetimes, &done).await.unwrap();
        schedule_finished(&kv, &lifetimes, &running).await.unwrap();
        // Scheduled twice (a redelivered last tick): the same key.
        schedule_finished(&kv, &lifetimes, &done).await.unwrap();
        assert_eq!(keys(&kv, RETENTION_PREFIX), [schedule_key(ended + 30 * DAY, Kind::Task, "t-done")]);

        // Not due yet: nothing removed, nothing read past the first key.
        assert_eq!(pass(&kv, ended + 30 * DAY - 1).await.unwrap(), RetentionReport::default());
        assert_eq!(keys(&kv, "task/t-done/").len(), 4, "log 0, log 1, meta, summary");

        // Due: the log, claims, meta, the summary and every index key go;
        // the others stay.
        let report = pass(&kv, ended + 30 * DAY).await.unwrap();
        assert_eq!(report, RetentionReport { deliveries: 0, tasks: 1, audit: 0, revocations: 0, kept: 0 });
        assert!(keys(&kv, "task/t-done/").is_empty());
        assert!(
            !kv.snapshot().keys().any(|k| k.starts_with("index/") && k.ends_with("t-done")),
            "{:?}",
            keys(&kv, "index/")
        );
        assert!(keys(&kv, RETENTION_PREFIX).is_empty());
        assert!(agent_zero_engine::load(&kv, "t-done").await.unwrap().is_none());
        // A schedule key a lagging listing still shows: nothing to remove, not counted.
        schedule_finished(&kv, &lifetimes, &done).await.unwrap();
        assert_eq!(pass(&kv, ended + 30 * DAY).await.unwrap(), RetentionReport::default());
        assert!(keys(&kv, RETENTION_PREFIX).is_empty());
        for live in ["t-running", "t-unscheduled"] {
            assert!(agent_zero_engine::load(&kv, live).await.unwrap().is_some(), "{live} kept");
            assert!(crate::task_index::read_summary(&kv, live).await.unwrap().is_some(), "{live} still listed");
        }
    });
}

#[test]
fn a_schedule_for_a_task_that_is_not_finished_removes_nothing() {
    let kv = MemoryKv::new();
    task(&kv, "t-human", &[TaskState::Queued, TaskState::Discovering], START_MS);
    block_on(async {
        schedule(&kv, START_MS, Kind::Task, "t-human").await.unwrap();
        let report = pass(&kv, START_MS + DAY).await.unwrap();
        assert_eq!(report, RetentionReport { deliveries: 0, tasks: 0, audit: 0, revocations: 0, kept: 1 });
        assert!(agent_zero_engine::load(&kv, "t-human").await.unwrap().is_some());
        assert!(keys(&kv, RETENTION_PREFIX).is_empty(), "the schedule is spent");
    });
}

#[test]
fn delivery_records_are_removed_when_due_in_due_order() {
    let kv = MemoryKv::new();
    block_on(async {
        for (n, due) in [(1, START_MS + 10), (2, START_MS + 20), (3, START_MS + 30)] {
            kv.put(&format!("delivery/github/gh-{n}"), b"{}").await.unwrap();
            schedule(&kv, due, Kind::Delivery, &format!("gh-{n}")).await.unwrap();
        }
        // A key this engine never writes, ahead of the queue, is dropped, not a blocker.
        kv.put(&format!("{RETENTION_PREFIX}0000-garbage"), b"").await.unwrap();
        let report = pass(&kv, START_MS + 20).await.unwrap();
        assert_eq!(report.deliveries, 2);
        assert_eq!(keys(&kv, "delivery/"), ["delivery/github/gh-3"]);
        assert_eq!(keys(&kv, RETENTION_PREFIX), [schedule_key(START_MS + 30, Kind::Delivery, "gh-3")]);
    });
}

#[test]
fn one_pass_is_bounded() {
    let kv = MemoryKv::new();
    block_on(async {
        for n in 0..(MAX_PURGED_PER_PASS + 5) {
            schedule(&kv, START_MS + n as u64, Kind::Delivery, &format!("gh-{n}")).await.unwrap();
        }
        assert_eq!(pass(&kv, START_MS + DAY).await.unwrap().deliveries as usize, MAX_PURGED_PER_PASS);
        assert_eq!(pass(&kv, START_MS + DAY).await.unwrap().deliveries, 5, "the rest on the next sweep");
    });
}

/// An audit entry lives `AGENT_ZERO_RETENTION_DAYS`: on a store that does
/// not expire keys itself, the pass removes it (and its schedule) when due,
/// and not a day before.
#[test]
fn audit_entries_are_removed_when_their_lifetime_ends() {
    let kv = MemoryKv::new();
    let settings = crate::Settings::from_pairs([("AGENT_ZERO_RETENTION_DAYS", "2")]);
    let entry = crate::audit_log::AuditEntry {
        at: String::new(),
        principal: "alice".into(),
        action: crate::audit_log::AuditAction::TasksCreate,
        target: None,
        detail: None,
        status: 201,
        outcome: "ok".into(),
        field: None,
        request_id: "req-1".into(),
    };
    block_on(crate::audit_log::append(&kv, &entry, START_MS, &settings)).unwrap();
    let audit_keys = || block_on(kv.list("audit/", None, 10)).unwrap().keys;
    assert_eq!(audit_keys().len(), 1);
    let report = block_on(pass(&kv, START_MS + 2 * DAY - 1)).unwrap();
    assert_eq!((report.audit, audit_keys().len()), (0, 1), "not before its time");
    let report = block_on(pass(&kv, START_MS + 2 * DAY)).unwrap();
    assert_eq!((report.audit, audit_keys().len()), (1, 0));
    assert!(block_on(kv.list(RETENTION_PREFIX, None, 10)).unwrap().keys.is_empty(), "its schedule is gone too");
}
