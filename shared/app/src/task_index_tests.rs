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
fn record_tick_moves_the_state_keys_and_heals_a_lost_move() {
    let kv = MemoryKv::new();
    let queue = RecordingQueue::default();
    block_on(async {
        let s = stimulus("t1", "acme/widgets");
        agent_zero_engine::create(&kv, &queue, s.clone(), START_MS).await.unwrap();
        record_created(&kv, &s, START_MS).await.unwrap();
        let queued = Filter { state: Some(TaskState::Queued), ..Filter::default() };
        assert_eq!(ids(&list(&kv, &queued, None, 10).await.unwrap()), ["t1"]);

        // A tick commits entry 1 (queued -> discovering).
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
        assert!(!kv.snapshot().keys().any(|k| k.starts_with("index/state/queued/")), "old state key deleted");

        // A move whose summary write was lost: the next sync redoes it.
        let summary = read_summary(&kv, "t1").await.unwrap().unwrap();
        let mut moved = summary.clone();
        moved.state = TaskState::Understanding;
        for key in &state_keys(&moved, TaskState::Understanding) {
            kv.put(key, b"").await.unwrap();
        }
        // (crash before deleting the old keys and writing the summary)
        let understanding = Filter { state: Some(TaskState::Understanding), ..Filter::default() };
        assert!(list(&kv, &understanding, None, 10).await.unwrap().items.is_empty(), "summary disagrees: skipped");
        record(&kv, &moved).await.unwrap();
        assert_eq!(ids(&list(&kv, &understanding, None, 10).await.unwrap()), ["t1"]);
        assert!(list(&kv, &discovering, None, 10).await.unwrap().items.is_empty());
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
    for key in fixed_keys(&s).iter().chain(&state_keys(&s, s.state)).chain([&summary_key(&s.id)]) {
        assert!(agent_zero_ports::check_key(key).is_ok(), "{key}");
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
        kv.put(&summary_key("t9"), stored).await.unwrap();
        let summary = read_summary(&kv, "t9").await.unwrap().unwrap();
        assert_eq!((summary.id.as_str(), summary.created_ms), ("t9", 1_767_225_600_000));
        assert_eq!(summary.source.as_deref(), Some("api:test"));
        let wire = serde_json::to_value(&summary).unwrap();
        assert!(wire.get("createdMs").is_none(), "{wire}");
        kv.put(&summary_key("t9"), wire.to_string().as_bytes()).await.unwrap();
        assert_eq!(read_summary(&kv, "t9").await.unwrap(), None);
        write_summary(&kv, &summary).await.unwrap();
        assert_eq!(kv.get(&summary_key("t9")).await.unwrap().as_deref(), Some(&stored[..]));
    });
}
