use agent_zero_agent::Policy;
use agent_zero_contracts::{RunMode, TaskState, Trigger};
use agent_zero_engine::{Entry, Fact, Stimulus, TaskInput, log_key};
use agent_zero_ports::MemoryKv;

use super::*;
use crate::test_host::{RecordingQueue, START_MS, block_on};

fn stimulus(id: &str, repository: &str) -> Stimulus {
    Stimulus {
        task_id: id.into(),
        repository: repository.into(),
        trigger: Trigger::Feedback,
        mode: RunMode::Observe,
        source: Some("api:test".into()),
        input: TaskInput::default(),
        policy: Policy::default(),
    }
}

fn moves(seq: u64, path: &[TaskState]) -> Entry {
    let facts = path
        .windows(2)
        .map(|w| Fact::Transition { from: w[0], to: w[1], message: format!("to {}", w[1]), attempt: None })
        .collect();
    Entry { seq, at_ms: START_MS + seq, facts }
}

fn ids(page: &Page) -> Vec<&str> {
    page.items.iter().map(|s| s.id.as_str()).collect()
}

#[test]
fn keys_move_between_buckets_only_and_a_lost_move_is_redone() {
    let kv = MemoryKv::new();
    let queue = RecordingQueue::default();
    block_on(async {
        let s = stimulus("t1", "acme/widgets");
        agent_zero_engine::create(&kv, &queue, s.clone(), START_MS).await.unwrap();
        record_created(&kv, &s, START_MS).await.unwrap();
        let queued = Filter { state: Some(TaskState::Queued), ..Filter::default() };
        assert_eq!(ids(&list(&kv, &queued, None, 10).await.unwrap()), ["t1"]);
        let index_keys =
            |kv: &MemoryKv| kv.snapshot().keys().filter(|k| k.starts_with("index/")).cloned().collect::<Vec<_>>();

        // A tick commits entry 1 (queued -> discovering): the keys move to
        // the running bucket.
        let mut after = agent_zero_engine::load(&kv, "t1").await.unwrap().unwrap();
        let entry = moves(1, &[TaskState::Queued, TaskState::Discovering]);
        kv.put(&log_key("t1", 1), &serde_json::to_vec(&entry).unwrap()).await.unwrap();
        after.apply(&entry).unwrap();
        record_tick(&kv, &after, START_MS + 5).await.unwrap();
        assert!(list(&kv, &queued, None, 10).await.unwrap().items.is_empty());
        let discovering = Filter { state: Some(TaskState::Discovering), ..Filter::default() };
        let page = list(&kv, &discovering, None, 10).await.unwrap();
        assert_eq!(ids(&page), ["t1"]);
        assert_eq!(page.items[0].updated_at, rfc3339(START_MS + 5));
        assert!(!kv.snapshot().keys().any(|k| k.starts_with("index/state/queued/")), "old bucket's key deleted");
        assert!(kv.snapshot().keys().any(|k| k.starts_with("index/state/running/")));

        // Within the bucket only the summary changes; a filter on another
        // working state skips the task.
        let running_keys = index_keys(&kv);
        let entry = moves(2, &[TaskState::Discovering, TaskState::Understanding]);
        after.apply(&entry).unwrap();
        record_tick(&kv, &after, START_MS + 6).await.unwrap();
        assert_eq!(index_keys(&kv), running_keys, "no index key written or removed");
        let understanding = Filter { state: Some(TaskState::Understanding), ..Filter::default() };
        assert_eq!(ids(&list(&kv, &understanding, None, 10).await.unwrap()), ["t1"]);
        assert!(list(&kv, &discovering, None, 10).await.unwrap().items.is_empty(), "the summary says otherwise");

        // A commit carried the summary to `failed` but the host died
        // before moving the keys: listed nowhere by state, and the next
        // record (a tick, or this) redoes the move from the bucket the
        // summary says the keys are in.
        let index = TickIndex::read(&kv, "t1", START_MS + 7).await;
        let entry = moves(3, &[TaskState::Understanding, TaskState::Failed]);
        after.apply(&entry).unwrap();
        for (key, value) in index.view(&after) {
            kv.put(&key, &value).await.unwrap();
        }
        let failed = Filter { state: Some(TaskState::Failed), ..Filter::default() };
        assert!(list(&kv, &failed, None, 10).await.unwrap().items.is_empty(), "not moved yet");
        assert!(list(&kv, &understanding, None, 10).await.unwrap().items.is_empty(), "summary disagrees: skipped");
        let next = TickIndex::read(&kv, "t1", START_MS + 8).await;
        next.after(&kv, &after).await.unwrap();
        assert_eq!(ids(&list(&kv, &failed, None, 10).await.unwrap()), ["t1"]);
        assert!(!kv.snapshot().keys().any(|k| k.starts_with("index/state/running/")));
        assert!(kv.snapshot().keys().any(|k| k.starts_with("index/failed/")), "the failure is filed");
        assert_eq!(read_summary(&kv, "t1").await.unwrap().unwrap().indexed.as_deref(), Some("failed"));
    });
}

/// A tick's index work: the summary rides in its commit only when
/// something listed changed, and keys move only when the bucket does; the
/// move is recorded by a compare-and-swap that never overwrites a summary
/// a later tick wrote.
#[test]
fn a_tick_writes_its_summary_with_the_commit_and_moves_keys_only_between_buckets() {
    let kv = agent_zero_ports::CountingKv::new();
    let queue = RecordingQueue::default();
    block_on(async {
        let s = stimulus("t2", "acme/widgets");
        agent_zero_engine::create(&kv, &queue, s.clone(), START_MS).await.unwrap();
        record_created(&kv, &s, START_MS).await.unwrap();
        let mut after = agent_zero_engine::load(&kv, "t2").await.unwrap().unwrap();
        kv.take();

        // Nothing listed changed: no view, and nothing after.
        let index = TickIndex::read(&kv, "t2", START_MS + 1).await;
        assert!(index.view(&after).is_empty());
        index.after(&kv, &after).await.unwrap();
        let kinds = |kv: &agent_zero_ports::CountingKv| kv.take().iter().map(|(_, kind)| *kind).collect::<Vec<_>>();
        assert_eq!(kinds(&kv), ["get"], "the summary's read (read ahead on Cloudflare)");

        // Queued -> discovering: the view carries the new state and the old
        // bucket; after the commit, two puts, two deletes and the swap.
        let entry = moves(1, &[TaskState::Queued, TaskState::Discovering]);
        after.apply(&entry).unwrap();
        kv.take();
        let index = TickIndex::read(&kv, "t2", START_MS + 3).await;
        let views = index.view(&after);
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].0, summary_key("t2"));
        let carried = summary_of(&views[0].1).unwrap();
        assert_eq!((carried.state, carried.indexed.as_deref()), (TaskState::Discovering, Some("queued")));
        kv.put(&views[0].0, &views[0].1).await.unwrap();
        kv.take();
        index.after(&kv, &after).await.unwrap();
        assert_eq!(kinds(&kv), ["put", "put", "delete", "delete", "cas"]);
        assert_eq!(read_summary(&kv, "t2").await.unwrap().unwrap().indexed.as_deref(), Some("running"));

        // A later tick's summary is never overwritten by an earlier tick's
        // record of its move.
        let stale = TickIndex::read(&kv, "t2", START_MS + 4).await;
        let entry = moves(2, &[TaskState::Discovering, TaskState::Failed]);
        after.apply(&entry).unwrap();
        let views = stale.view(&after);
        let later = br#"{"later":true}"#;
        kv.put(&views[0].0, later).await.unwrap();
        stale.after(&kv, &after).await.unwrap();
        assert_eq!(kv.inner().snapshot()[&summary_key("t2")], later);
        // Its failed keys were written with the move.
        assert!(kv.inner().snapshot().keys().any(|k| k.starts_with("index/failed/")));
    });
}

#[test]
fn filters_combine_and_cursors_are_tied_to_their_filter() {
    let kv = MemoryKv::new();
    block_on(async {
        for (i, repo) in ["acme/a", "acme/b", "acme/a", "ACME/A"].iter().enumerate() {
            let s = stimulus(&format!("t{i}"), repo);
            record_created(&kv, &s, START_MS + i as u64).await.unwrap();
        }
        let repo_a = Filter { repository: Some("acme/a".into()), ..Filter::default() };
        assert_eq!(ids(&list(&kv, &repo_a, None, 10).await.unwrap()), ["t3", "t2", "t0"]);
        let both = Filter { repository: Some("acme/b".into()), state: Some(TaskState::Queued) };
        assert_eq!(ids(&list(&kv, &both, None, 10).await.unwrap()), ["t1"]);
        let none = Filter { repository: Some("acme/b".into()), state: Some(TaskState::Failed) };
        assert!(list(&kv, &none, None, 10).await.unwrap().items.is_empty());

        let first = list(&kv, &Filter::default(), None, 2).await.unwrap();
        assert_eq!(ids(&first), ["t3", "t2"]);
        let cursor = first.next_cursor.unwrap();
        let second = list(&kv, &Filter::default(), Some(&cursor), 2).await.unwrap();
        assert_eq!(ids(&second), ["t1", "t0"]);
        assert_eq!(second.next_cursor, None);
        assert!(matches!(list(&kv, &repo_a, Some(&cursor), 2).await, Err(IndexError::InvalidCursor(_))));
        assert!(matches!(list(&kv, &Filter::default(), Some("%%%"), 2).await, Err(IndexError::InvalidCursor(_))));
    });
}

#[test]
fn keys_fit_the_smallest_backend_limit() {
    let mut s = TaskSummary::of_stimulus(
        &stimulus(&"i".repeat(128), &format!("{}/{}", "o".repeat(39), "r".repeat(100))),
        u64::MAX,
    );
    s.state = TaskState::Understanding;
    let legacy = state_keys(&s, s.state.as_str());
    let keys = fixed_keys(&s).into_iter().chain(state_keys(&s, bucket(s.state))).chain(legacy);
    for key in keys.chain([summary_key(&s.id), legacy_summary_key(&s.id)]) {
        assert!(agent_zero_ports::check_key(&key).is_ok(), "{key}");
    }
    // Newer sorts first.
    assert!(when(START_MS + 1) < when(START_MS));
}

/// A summary as the older code stored it (its flattened `Stored`) reads
/// back with its creation time; the wire form, without it, is not a
/// stored summary.
#[test]
fn stored_summaries_written_before_read_back() {
    let kv = MemoryKv::new();
    let stored = br#"{"id":"t9","repository":"acme/widgets","state":"queued","trigger":"feedback","mode":"observe","source":"api:test","verified":false,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:05Z","createdMs":1767225600000}"#;
    block_on(async {
        // Where summaries lived before they moved to the task's keys.
        kv.put(&legacy_summary_key("t9"), stored).await.unwrap();
        let summary = read_summary(&kv, "t9").await.unwrap().unwrap();
        assert_eq!((summary.id.as_str(), summary.created_ms), ("t9", 1_767_225_600_000));
        assert_eq!(summary.source.as_deref(), Some("api:test"));
        assert_eq!(summary.indexed, None, "filed under its state");
        let wire = serde_json::to_value(&summary).unwrap();
        assert!(wire.get("createdMs").is_none(), "{wire}");
        kv.put(&summary_key("t9"), wire.to_string().as_bytes()).await.unwrap();
        assert_eq!(read_summary(&kv, "t9").await.unwrap(), None);
        assert_eq!(stored_bytes(&summary), stored);
        // Recording it again files it under its bucket, at the task's key.
        kv.delete(&summary_key("t9")).await.unwrap();
        for key in state_keys(&summary, "queued") {
            kv.put(&key, b"").await.unwrap();
        }
        let mut moved = summary.clone();
        moved.state = TaskState::Discovering;
        record(&kv, &moved).await.unwrap();
        assert_eq!(read_summary(&kv, "t9").await.unwrap().unwrap().indexed.as_deref(), Some("running"));
        assert_eq!(kv.get(&legacy_summary_key("t9")).await.unwrap(), None);
        assert!(!kv.snapshot().keys().any(|k| k.starts_with("index/state/queued/")));

        // One filed before buckets under a state that names its bucket
        // keeps its keys when it is filed again.
        kv.delete(&summary_key("t9")).await.unwrap();
        kv.put(&legacy_summary_key("t9"), stored).await.unwrap();
        let legacy = read_summary(&kv, "t9").await.unwrap().unwrap();
        let mut done = legacy.clone();
        done.state = TaskState::Completed;
        for key in state_keys(&legacy, "completed") {
            kv.put(&key, b"").await.unwrap();
        }
        let mut legacy_done = legacy;
        legacy_done.state = TaskState::Completed;
        kv.put(&legacy_summary_key("t9"), &stored_bytes(&legacy_done)).await.unwrap();
        record(&kv, &done).await.unwrap();
        let completed = Filter { state: Some(TaskState::Completed), ..Filter::default() };
        assert_eq!(ids(&list(&kv, &completed, None, 10).await.unwrap()), ["t9"]);
    });
}
