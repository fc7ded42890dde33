//! A log whose state lacks what that state needs (written by hand, or
//! edited: the engine never writes one) fails its task with a reason that
//! says what is missing, instead of panicking in the middle of a step. The
//! failed run is then concluded, released and published like any other.

mod harness;

use agent_zero_contracts::{RunMode, RunnerDescription, TaskState, TerminalState};
use agent_zero_engine::{Entry, Fact, LeaseRecord, ModelOutcome, ModelPurpose, Tick, TickOutcome, log_key};
use agent_zero_ports::{Clock as _, KeyValue as _};
use harness::*;

fn moved(from: TaskState, to: TaskState) -> Fact {
    Fact::Transition { from, to, message: format!("{from} -> {to}"), attempt: None }
}

/// A log that leased, discovered and reached `validating`, plus `then`
/// (each its own entry); written as committed ticks would be.
fn crafted(h: &Harness, id: &str, then: Vec<Vec<Fact>>) -> Tick {
    let lease = LeaseRecord { id: "lease-crafted".into(), runner: RunnerDescription::none(), sandbox: None };
    let stimulus = Box::new(stimulus(id, RunMode::Fix, policy(FIX_POLICY)));
    let files = vec!["Cargo.toml".to_owned(), "src/lib.rs".to_owned()];
    let mut facts = vec![
        vec![Fact::Created { stimulus }],
        vec![Fact::Leased { lease }, moved(TaskState::Queued, TaskState::Discovering)],
        vec![
            Fact::Discovered {
                files,
                checks: vec![vec!["cargo".into(), "test".into()]],
                diff: None,
                omitted: Vec::new(),
                review: None,
            },
            moved(TaskState::Discovering, TaskState::Understanding),
        ],
    ];
    facts.extend(then);
    let at_ms = h.clock.now_ms();
    for (seq, facts) in facts.into_iter().enumerate() {
        let entry = Entry { seq: seq as u64, at_ms, facts };
        block_on(h.kv.put(&log_key(id, entry.seq), &serde_json::to_vec(&entry).unwrap())).unwrap();
    }
    let expected_seq = h.keys(&format!("task/{id}/log/")).len() as u64;
    Tick::new(id, expected_seq)
}

/// Ticks `tick` once, then drives the task; its failure reason.
fn fails_with(h: &Harness, id: &str, tick: &Tick) -> String {
    let report = h.tick(tick).expect("the tick commits a failure instead of panicking");
    let failed = report.resident.expect("committed");
    assert_eq!(failed.state, TaskState::Failed, "{:?}", failed.events);
    assert!(failed.conclusion.concluded.is_some(), "the failed run is concluded");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Failed)));
    let r = h.load(id);
    assert!(r.sandbox.released && r.sandbox.lease.is_none(), "the crafted lease is released");
    assert_eq!(*h.publisher.published.borrow(), [(id.to_owned(), TerminalState::Failed, false)]);
    r.conclusion.failure.expect("a failure reason")
}

#[test]
fn validating_without_a_decision_fails_the_task_naming_what_is_missing() {
    let h = Harness::new();
    let tick = crafted(&h, "t-no-decision", vec![vec![moved(TaskState::Understanding, TaskState::Validating)]]);
    let reason = fails_with(&h, "t-no-decision", &tick);
    assert_eq!(reason, "the task log is inconsistent: the task is validating without a model decision");
    assert_eq!(h.decider.calls(), 0, "no model call was made for a log that cannot proceed");
}

#[test]
fn planning_without_a_finding_or_a_decision_fails_the_task_naming_what_is_missing() {
    let h = Harness::new();
    let ModelOutcome::Decided { decision, usage } = decision(claim()) else { unreachable!("a decision") };
    let call =
        Fact::ModelCall { purpose: ModelPurpose::Understand, outcome: ModelOutcome::Decided { decision, usage } };
    let tick = crafted(
        &h,
        "t-no-finding",
        vec![
            vec![call, moved(TaskState::Understanding, TaskState::Validating)],
            vec![moved(TaskState::Validating, TaskState::Planning)],
        ],
    );
    let reason = fails_with(&h, "t-no-finding", &tick);
    assert_eq!(reason, "the task log is inconsistent: the task is planning without a validated finding");

    let h = Harness::new();
    let tick = crafted(
        &h,
        "t-no-plan",
        vec![
            vec![moved(TaskState::Understanding, TaskState::Validating)],
            vec![moved(TaskState::Validating, TaskState::Planning)],
        ],
    );
    let reason = fails_with(&h, "t-no-plan", &tick);
    assert_eq!(reason, "the task log is inconsistent: the task is planning without a model decision");
    assert_eq!(h.workspace.writes.get(), 0, "nothing was written");
}
