//! A step whose record would not fit the smallest store's value limit ends
//! the run, naming the size: the record is never cut, and nothing over the
//! limit is ever written.

mod harness;

use agent_zero_contracts::{AgentDecision, ProposedChange, RunMode, TerminalState};
use agent_zero_engine::{MAX_VALUE_BYTES, TickOutcome};
use harness::*;

#[test]
fn a_model_answer_too_large_to_store_fails_the_run_naming_its_size() {
    let h = Harness::new();
    let huge = "x".repeat(MAX_VALUE_BYTES + 1);
    h.decider.push(decided(AgentDecision {
        finding: claim(),
        plan: vec!["rewrite".into()],
        acceptance_criteria: vec!["it fits".into()],
        changes: vec![ProposedChange { path: "src/lib.rs".into(), content: huge, reason: "too large".into() }],
        witness: vec![],
    }));
    let outcome = h.run(stimulus("t-huge", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Failed)));
    let failure = h.load("t-huge").conclusion.failure.clone().unwrap();
    assert!(failure.contains("over the 1000000-byte value limit"), "{failure}");
    assert_eq!(h.workspace.writes.get(), 0, "nothing was written to the checkout");
    let largest = h.kv.snapshot().values().map(Vec::len).max().unwrap();
    assert!(largest <= MAX_VALUE_BYTES, "a stored value of {largest} bytes");
    assert_eq!(h.publisher.published.borrow().len(), 1, "the failure is still published");
}
