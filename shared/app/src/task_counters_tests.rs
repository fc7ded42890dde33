use agent_zero_agent::Policy;
use agent_zero_contracts::{RunMode, Trigger, rfc3339};
use agent_zero_engine::{Stimulus, TaskInput};
use agent_zero_ports::{CountingKv, MemoryKv};

use super::*;
use crate::task_index::{TaskSummary, record};
use crate::test_host::{START_MS, block_on};

const HOUR_MS: u64 = 60 * 60 * 1000;

fn stimulus(id: &str, repository: &str) -> Stimulus {
    Stimulus {
        task_id: id.into(),
        repository: repository.into(),
        trigger: Trigger::Feedback,
        mode: RunMode::Fix,
        source: Some("api:test".into()),
        input: TaskInput::default(),
        policy: Policy::default(),
    }
}

/// Task `id` of `repository`, created at `created_ms` and indexed, then
/// moved to `state` at `moved_ms` as a tick records it.
async fn task<K: KeyValue>(kv: &K, id: &str, repository: &str, created_ms: u64, state: TaskState, moved_ms: u64) {
    let created = TaskSummary::of_stimulus(&stimulus(id, repository), created_ms);
    record(kv, &created).await.unwrap();
    if state != TaskState::Queued {
        record(kv, &moved(&created, state, moved_ms)).await.unwrap();
    }
}

/// `summary` in `state` since `at_ms`.
fn moved(summary: &TaskSummary, state: TaskState, at_ms: u64) -> TaskSummary {
    let mut moved = summary.clone();
    moved.state = state;
    moved.updated_at = rfc3339(at_ms);
    moved
}

fn count_of(n: u64) -> Count {
    Count { n, more: false }
}

/// Tasks in every state, over two repositories: each counter counts its
/// own states only, a failure counts by when it failed (not when the task
/// was created), and one older than a day is not counted.
#[test]
fn each_counter_counts_its_states_and_failures_of_the_last_day() {
    let kv = MemoryKv::new();
    let now = START_MS + 10 * 24 * HOUR_MS;
    block_on(async {
        let a = "acme/widgets";
        let b = "beta/api";
        task(&kv, "q1", a, now - HOUR_MS, TaskState::Queued, 0).await;
        task(&kv, "q2", b, now - 2 * HOUR_MS, TaskState::Queued, 0).await;
        task(&kv, "r1", a, now - HOUR_MS, TaskState::Discovering, now - 50).await;
        task(&kv, "r2", a, now - HOUR_MS, TaskState::Executing, now - 40).await;
        task(&kv, "r3", b, now - HOUR_MS, TaskState::Reviewing, now - 30).await;
        task(&kv, "r4", a, now - HOUR_MS, TaskState::Verifying, now - 20).await;
        task(&kv, "w1", a, now - 3 * HOUR_MS, TaskState::NeedsHuman, now - 2 * HOUR_MS).await;
        task(&kv, "w2", b, now - 5 * 24 * HOUR_MS, TaskState::NeedsHuman, now - 4 * 24 * HOUR_MS).await;
        task(&kv, "c1", a, now - HOUR_MS, TaskState::Completed, now - 10).await;
        task(&kv, "i1", b, now - HOUR_MS, TaskState::Ignored, now - 10).await;
        // Failed an hour ago; created three days ago, failed a minute ago;
        // failed a day and a minute ago (not counted); failed at the edge.
        task(&kv, "f1", a, now - 2 * HOUR_MS, TaskState::Failed, now - HOUR_MS).await;
        task(&kv, "f2", b, now - 3 * 24 * HOUR_MS, TaskState::Failed, now - 60_000).await;
        task(&kv, "f3", a, now - 2 * DAY_MS, TaskState::Failed, now - DAY_MS - 60_000).await;
        task(&kv, "f4", a, now - 2 * DAY_MS, TaskState::Failed, now - DAY_MS).await;

        let all = count(&kv, None, now).await.unwrap();
        assert_eq!(
            all,
            Counters { running: count_of(4), queued: count_of(2), waiting: count_of(2), failed_last_day: count_of(3) }
        );
        let only_a = count(&kv, Some("ACME/Widgets"), now).await.unwrap();
        assert_eq!(
            only_a,
            Counters { running: count_of(3), queued: count_of(1), waiting: count_of(1), failed_last_day: count_of(2) }
        );
        let only_b = count(&kv, Some(b), now).await.unwrap();
        assert_eq!(
            only_b,
            Counters { running: count_of(1), queued: count_of(1), waiting: count_of(1), failed_last_day: count_of(1) }
        );
        // Almost a day later, only the failure a minute before `now` is
        // still within the day.
        let later = count(&kv, None, now + DAY_MS - 90_000).await.unwrap();
        assert_eq!(later.failed_last_day, count_of(1));
        assert_eq!(count(&kv, None, now + 2 * DAY_MS).await.unwrap().failed_last_day, count_of(0));
        assert_eq!(count(&kv, Some("acme/none"), now).await.unwrap(), Counters::default());
    });
}

/// A task that moves on is counted in its new state only; a failed task
/// stays counted at its first failure time while its summary changes, and
/// leaves the count when retention forgets it.
#[test]
fn moves_recount_and_a_forgotten_failure_leaves_the_count() {
    let kv = MemoryKv::new();
    let now = START_MS + 10 * DAY_MS;
    block_on(async {
        let created = TaskSummary::of_stimulus(&stimulus("t1", "acme/widgets"), now - 3 * HOUR_MS);
        record(&kv, &created).await.unwrap();
        assert_eq!(count(&kv, None, now).await.unwrap().queued, count_of(1));
        let planning = moved(&created, TaskState::Planning, now - 2 * HOUR_MS);
        record(&kv, &planning).await.unwrap();
        let c = count(&kv, None, now).await.unwrap();
        assert_eq!((c.queued, c.running), (count_of(0), count_of(1)));
        let failed = moved(&planning, TaskState::Failed, now - DAY_MS + 1000);
        record(&kv, &failed).await.unwrap();
        // Its verdict recorded later does not move the failure time.
        let mut later = failed.clone();
        later.updated_at = rfc3339(now);
        later.title = Some("a later change".into());
        record(&kv, &later).await.unwrap();
        let c = count(&kv, None, now).await.unwrap();
        assert_eq!((c.running, c.failed_last_day), (count_of(0), count_of(1)));
        assert_eq!(
            count(&kv, None, now + 2000).await.unwrap().failed_last_day,
            count_of(0),
            "failed at its first time"
        );
        crate::task_index::forget_task(&kv, "t1").await.unwrap();
        assert_eq!(count(&kv, None, now).await.unwrap(), Counters::default());
        assert!(kv.snapshot().keys().all(|k| !k.starts_with("index/")), "{:?}", kv.snapshot().keys());
    });
}

/// A view costs four list operations (running, queued, waiting, failed)
/// and nothing else, however many tasks there are; past a page the
/// counter says so (`1000+`).
#[test]
fn a_view_is_four_lists_and_a_full_page_is_a_lower_bound() {
    let kv = CountingKv::new();
    let now = START_MS + DAY_MS;
    block_on(async {
        for i in 0..=COUNT_LIMIT {
            let key = format!("{}{:013}-t{i}", task_index::state_prefix(None, TaskState::Queued), i);
            kv.inner().put(&key, b"").await.unwrap();
        }
        task(&kv, "f1", "acme/widgets", now - HOUR_MS, TaskState::Failed, now - 10).await;
        kv.take();
        let c = count(&kv, None, now).await.unwrap();
        assert_eq!(c.queued, Count { n: COUNT_LIMIT as u64, more: true });
        assert_eq!((c.queued.to_string().as_str(), c.failed_last_day.to_string().as_str()), ("1000+", "1"));
        let operations = kv.take();
        assert_eq!(operations.len(), 4, "{operations:?}");
        assert!(operations.iter().all(|(_, kind)| *kind == "list"), "{operations:?}");
        count(&kv, Some("acme/widgets"), now).await.unwrap();
        assert_eq!(kv.take().len(), 4);
    });
}

#[test]
fn failed_keys_fit_the_smallest_backend_limit_and_sort_newest_first() {
    let repository = format!("{}/{}", "o".repeat(39), "r".repeat(100));
    for prefix in [task_index::failed_prefix(None), task_index::failed_prefix(Some(&repository))] {
        let key = format!("{prefix}{:013}-{}", 0, "i".repeat(128));
        assert!(agent_zero_ports::check_key(&key).is_ok(), "{key}");
    }
    let key = |ms: u64| format!("{:013}", 9_999_999_999_999 - ms);
    assert!(key(START_MS + 1) < key(START_MS));
    assert_eq!(task_index::failed_at(&format!("{}-t1", key(START_MS))), Some(START_MS));
    assert_eq!(task_index::failed_at("nonsense"), None);
}
