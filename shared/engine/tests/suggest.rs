//! `suggest` mode on a pull-request review: the change is proven in a
//! writable sandbox under the fix chain (and published as a suggestion
//! only, by the forge adapter); feedback runs in `suggest` still never write.

mod harness;

use agent_zero_contracts::{RunMode, TerminalState, Trigger};
use agent_zero_engine::TickOutcome;
use harness::{FIX_POLICY, FIXED, Harness, claim, decided, decision, policy, stimulus};
use sha2::Digest as _;

fn suggest_policy() -> agent_zero_agent::Policy {
    policy(&FIX_POLICY.replace("mode: fix", "mode: suggest"))
}

#[test]
fn a_review_in_suggest_mode_proves_its_change_in_a_writable_sandbox() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    let mut review = stimulus("t-suggest", RunMode::Suggest, suggest_policy());
    review.trigger = Trigger::Proactive;
    assert_eq!(h.run(review), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-suggest");
    let evidence = &r.conclusion.concluded.as_ref().unwrap().1;
    assert!(evidence.verified, "{evidence:?}");
    assert_eq!(evidence.mode, RunMode::Suggest, "the run's mode stays suggest");
    assert!(evidence.runner.writable, "the sandbox was leased writable");
    let digest: String = sha2::Sha256::digest(FIXED.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(evidence.tree[0].sha256, digest, "the verified content's digest is what a suggestion is matched to");
    assert_eq!(h.workspace.writes.get(), 1);
}

#[test]
fn a_review_in_suggest_mode_without_a_change_reports_why_there_is_no_suggestion() {
    let h = Harness::new();
    let mut bare = match decision(claim()) {
        agent_zero_engine::ModelOutcome::Decided { decision, .. } => decision,
        other => panic!("{other:?}"),
    };
    bare.changes.clear();
    h.decider.push(decided(bare));
    let mut review = stimulus("t-bare", RunMode::Suggest, suggest_policy());
    review.trigger = Trigger::Proactive;
    assert_eq!(h.run(review), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let evidence = h.load("t-bare").conclusion.concluded.unwrap().1;
    assert_eq!(evidence.refusal.as_ref().map(|r| r.code.as_str()), Some("no-change"), "{evidence:?}");
    assert_eq!(h.workspace.writes.get(), 0);
}

#[test]
fn feedback_in_suggest_mode_still_never_writes() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    assert_eq!(
        h.run(stimulus("t-feedback", RunMode::Suggest, suggest_policy())),
        Some(TickOutcome::Terminal(TerminalState::Completed))
    );
    let evidence = h.load("t-feedback").conclusion.concluded.unwrap().1;
    assert_eq!(evidence.refusal.as_ref().map(|r| r.code.as_str()), Some("mode-read-only"), "{evidence:?}");
    assert!(!evidence.runner.writable);
    assert_eq!(h.workspace.writes.get(), 0);
}
