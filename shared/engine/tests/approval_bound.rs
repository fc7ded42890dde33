//! An approval covers the decision the person was shown, and no other: a
//! repair's new decision stops for a new approval, and an approval of a
//! decision since replaced is refused.

mod harness;

use agent_zero_contracts::{AgentDecision, ChangeRisk, ProposedChange, RunMode, TaskState, TerminalState};
use agent_zero_engine::{ApprovalDecision, ModelOutcome, TaskError, TickOutcome, decision_digest};
use harness::*;

fn high_impact(content: &str) -> ModelOutcome {
    let mut finding = claim();
    finding.change_risk = ChangeRisk::HighImpact;
    decided(AgentDecision {
        finding,
        plan: vec!["replace - with +".into()],
        acceptance_criteria: vec![],
        changes: vec![ProposedChange { path: "src/lib.rs".into(), content: content.into(), reason: "r".into() }],
        witness: vec![],
    })
}

fn pending_digest(h: &Harness, id: &str) -> String {
    let resident = h.load(id);
    assert_eq!(resident.state, TaskState::NeedsHuman);
    decision_digest(resident.attempt.decision.as_ref().expect("a decision waits"))
}

fn approve(h: &Harness, id: &str, shown: Option<&str>, at: u64) -> Result<agent_zero_engine::Tick, TaskError> {
    block_on(agent_zero_engine::approve(&h.kv, &h.queue, id, "alice", ApprovalDecision::Approve, None, shown, at))
}

#[test]
fn a_repairs_new_decision_stops_for_a_new_approval() {
    let h = Harness::new();
    h.decider.push(high_impact(FIXED));
    assert_eq!(h.run(stimulus("t-bound", RunMode::Fix, policy(FIX_POLICY))), Some(TickOutcome::Waiting));
    let first = pending_digest(&h, "t-bound");
    approve(&h, "t-bound", Some(&first), START_MS + 1_000).expect("approved as shown");
    assert_eq!(h.load("t-bound").approval.approved_digest.as_deref(), Some(first.as_str()));

    // The approved change fails its checks; the repair writes something else.
    h.workspace.exits.borrow_mut().push_back(1);
    let repaired = format!("{FIXED}// and something nobody approved\n");
    h.decider.push(high_impact(&repaired));
    assert_eq!(h.drive(), Some(TickOutcome::Waiting));
    let r = h.load("t-bound");
    assert_eq!(r.state, TaskState::NeedsHuman, "{:?}", r.events);
    assert_eq!(r.approval.approved_by, None, "the new decision cleared the approval");
    assert_eq!(h.workspace.runs.get(), 1, "the repair's change was not run before a person saw it");
    let second = pending_digest(&h, "t-bound");
    assert_ne!(second, first);

    // The page of the first decision, approved late, approves nothing.
    match approve(&h, "t-bound", Some(&first), START_MS + 2_000) {
        Err(TaskError::ShownChanged { shown, current, .. }) => {
            assert_eq!((shown, current), (first.clone(), second.clone()));
        }
        other => panic!("a stale approval was not refused: {other:?}"),
    }
    assert_eq!(h.load("t-bound").state, TaskState::NeedsHuman, "the refusal wrote nothing");

    approve(&h, "t-bound", Some(&second), START_MS + 3_000).expect("approved as shown");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-bound");
    assert!(r.conclusion.concluded.as_ref().expect("concluded").0.verified);
    assert_eq!(h.workspace.runs.get(), 2);
}

/// An API approval without the digest it was shown covers the decision
/// waiting when it was given, which it records.
#[test]
fn an_approval_without_a_digest_covers_the_decision_waiting_when_it_was_given() {
    let h = Harness::new();
    h.decider.push(high_impact(FIXED));
    assert_eq!(h.run(stimulus("t-unbound", RunMode::Fix, policy(FIX_POLICY))), Some(TickOutcome::Waiting));
    let waiting = pending_digest(&h, "t-unbound");
    approve(&h, "t-unbound", None, START_MS + 1_000).expect("approved");
    assert_eq!(h.load("t-unbound").approval.approved_digest.as_deref(), Some(waiting.as_str()));
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
}
