//! Each of the reference's `needs-human` outcomes stops the run there, and
//! a person's decision settles it: an approval stands in for the stop it
//! was given at (and no other), accepts a conclusion nothing can lift, or
//! buys one more attempt after used-up repairs; a rejection ends the task
//! `failed` with nothing written.

mod harness;

use agent_zero_contracts::{ModelFinding, ProposedChange, RunMode, TaskState, TerminalState, Verdict};
use agent_zero_engine::{ApprovalDecision, ApprovalEffect, ModelOutcome, Resident, TaskError, TickOutcome};
use harness::*;

/// The code of the stop the task waits at, as its evidence records it.
fn stop(h: &Harness, id: &str) -> String {
    let r = h.load(id);
    assert_eq!(r.state, TaskState::NeedsHuman, "{id}: {:?}", r.events);
    let evidence = &r.conclusion.concluded.as_ref().expect("the stop is concluded").1;
    assert!(!evidence.verified, "{id}: a stop never reads as verified");
    let code = evidence.refusal.as_ref().expect("the stop says why").code.clone();
    let (waiting, _) = agent_zero_engine::awaiting(&r).expect("awaiting a person");
    assert_eq!(waiting.code, code, "the page and the evidence name one stop");
    code
}

/// What approving `id` does, as the approver is told.
fn effect(h: &Harness, id: &str) -> ApprovalEffect {
    agent_zero_engine::awaiting(&h.load(id)).expect("awaiting a person").1
}

fn decide(h: &Harness, id: &str, decision: ApprovalDecision, at: u64) -> Result<agent_zero_engine::Tick, TaskError> {
    block_on(agent_zero_engine::approve(&h.kv, &h.queue, id, "alice", decision, None, None, at))
}

fn result(r: &Resident) -> &agent_zero_contracts::TaskResult {
    &r.conclusion.concluded.as_ref().expect("concluded").0
}

/// Runs `id` to its stop, asserting the stop's code and that nothing was
/// written or run.
fn stopped(h: &Harness, id: &str, mode: RunMode, yaml: &str, finding: ModelFinding, code: &str) {
    h.decider.push(decision(finding));
    assert_eq!(h.run(stimulus(id, mode, policy(yaml))), Some(TickOutcome::Waiting), "{id}");
    assert_eq!(stop(h, id), code, "{id}");
    assert_eq!(
        (h.workspace.writes.get(), h.workspace.runs.get()),
        (0, 0),
        "{id}: nothing written before a person saw it"
    );
}

fn low_confidence() -> ModelFinding {
    ModelFinding { confidence: 0.7, ..claim() }
}

#[test]
fn an_inconclusive_finding_waits_and_an_approval_accepts_the_conclusion() {
    let h = Harness::new();
    let finding = ModelFinding { confidence: 0.4, ..claim() };
    stopped(&h, "t-inc", RunMode::Fix, FIX_POLICY, finding, "finding-inconclusive");
    assert_eq!(effect(&h, "t-inc"), ApprovalEffect::AcceptsConclusion);
    decide(&h, "t-inc", ApprovalDecision::Approve, START_MS + 60_000).expect("approved");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-inc");
    let result = result(&r);
    assert_eq!((result.verdict, result.verified), (Verdict::Inconclusive, false), "it never reads as a success");
    assert!(result.summary.contains("alice accepted the conclusion"), "{}", result.summary);
    assert_eq!((h.workspace.writes.get(), h.decider.calls()), (0, 1), "nothing written, no model asked again");
}

#[test]
fn an_inconclusive_finding_rejected_fails_without_writing() {
    let h = Harness::new();
    let finding = ModelFinding { confidence: 0.4, ..claim() };
    stopped(&h, "t-inc-no", RunMode::Fix, FIX_POLICY, finding, "finding-inconclusive");
    decide(&h, "t-inc-no", ApprovalDecision::Reject, START_MS + 60_000).expect("rejected");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Failed)));
    assert_eq!(h.load("t-inc-no").conclusion.failure.as_deref(), Some("rejected by alice"));
    assert_eq!(h.workspace.writes.get(), 0);
}

/// Low confidence, a risk the policy does not allow, a runner that is not
/// isolated: each stops, and its approval lets the shown change be written,
/// verified and completed.
#[test]
fn a_policy_stop_approved_writes_the_change_it_showed() {
    let cases: [(&str, ModelFinding, &str, bool, &str); 3] = [
        ("t-conf", low_confidence(), FIX_POLICY, true, "confidence-below-threshold"),
        (
            "t-risk",
            claim(),
            "mode: fix\nchecks: [[cargo, test]]\nautofix: {enabled: true}\n",
            true,
            "change-risk-not-allowed",
        ),
        ("t-iso", claim(), FIX_POLICY, false, "runner-not-isolated"),
    ];
    for (id, finding, yaml, isolated, code) in cases {
        let mut h = Harness::new();
        h.workspace.isolated = isolated;
        stopped(&h, id, RunMode::Fix, yaml, finding, code);
        assert_eq!(effect(&h, id), ApprovalEffect::Writes, "{id}");
        decide(&h, id, ApprovalDecision::Approve, START_MS + 60_000).expect("approved");
        assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)), "{id}");
        let r = h.load(id);
        assert!(result(&r).verified, "{id}: {:?}", r.events);
        assert_eq!(h.workspace.tree.borrow()["src/lib.rs"], FIXED, "{id}");
        assert_eq!(h.decider.calls(), 1, "{id}: the change shown is the change written");
    }
}

#[test]
fn a_policy_stop_rejected_fails_without_writing() {
    let h = Harness::new();
    stopped(&h, "t-conf-no", RunMode::Fix, FIX_POLICY, low_confidence(), "confidence-below-threshold");
    decide(&h, "t-conf-no", ApprovalDecision::Reject, START_MS + 60_000).expect("rejected");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Failed)));
    assert_eq!(h.workspace.writes.get(), 0);
}

/// Too many files, then (the approval covering only that stop) the
/// manifest it writes is high-impact: a second stop, a second approval.
#[test]
fn each_approval_covers_its_own_stop_and_no_other() {
    let h = Harness::new();
    let mut finding = claim();
    finding.files.push("Cargo.toml".into());
    finding.evidence.push("`name = \"demo\"`".into());
    let ModelOutcome::Decided { mut decision, usage } = decision(finding) else { unreachable!() };
    let manifest = "[package]\nname = \"demo\"\nversion = \"0.1.1\"\n";
    decision.changes.push(ProposedChange { path: "Cargo.toml".into(), content: manifest.into(), reason: "r".into() });
    h.decider.push(ModelOutcome::Decided { decision, usage });
    let yaml = format!("{FIX_POLICY}agent: {{maxChangedFiles: 1}}\n");
    assert_eq!(h.run(stimulus("t-two", RunMode::Fix, policy(&yaml))), Some(TickOutcome::Waiting));
    assert_eq!(stop(&h, "t-two"), "too-many-changed-files");
    decide(&h, "t-two", ApprovalDecision::Approve, START_MS + 60_000).expect("approved");
    assert_eq!(h.drive(), Some(TickOutcome::Waiting));
    assert_eq!(stop(&h, "t-two"), "high-impact-change", "the first approval lifted its own stop only");
    assert_eq!(h.workspace.writes.get(), 0);
    decide(&h, "t-two", ApprovalDecision::Approve, START_MS + 120_000).expect("approved again");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    assert_eq!(h.load("t-two").approval.lifted, ["too-many-changed-files", "high-impact-change"]);
    assert_eq!(h.workspace.tree.borrow()["Cargo.toml"], manifest);
}

/// No checks to verify with: nothing can lift that, so an approval
/// accepts the report as it stands.
#[test]
fn no_checks_approved_accepts_the_conclusion_without_writing() {
    let mut h = Harness::new();
    h.workspace.original.remove("Cargo.toml");
    let yaml = "mode: fix\nautofix: {enabled: true, allowedChangeRisks: [mechanical, behavioral]}\n";
    stopped(&h, "t-nochecks", RunMode::Fix, yaml, claim(), "no-checks");
    assert_eq!(effect(&h, "t-nochecks"), ApprovalEffect::AcceptsConclusion);
    decide(&h, "t-nochecks", ApprovalDecision::Approve, START_MS + 60_000).expect("approved");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-nochecks");
    assert!(!result(&r).verified);
    assert!(result(&r).summary.contains("accepted the conclusion"), "{}", result(&r).summary);
    assert_eq!(h.workspace.writes.get(), 0);
}

fn exhausting(h: &Harness, id: &str) {
    h.workspace.exits.borrow_mut().extend([1, 1]);
    h.decider.push(decision(claim()));
    h.decider.push(decision(claim()));
    let yaml = format!("{FIX_POLICY}agent: {{maxAttempts: 2}}\n");
    assert_eq!(h.run(stimulus(id, RunMode::Fix, policy(&yaml))), Some(TickOutcome::Waiting));
    assert_eq!(stop(h, id), "repairs-exhausted");
    assert_eq!(effect(h, id), ApprovalEffect::Retries);
    assert_eq!((h.workspace.runs.get(), h.decider.calls()), (2, 2));
}

/// Used-up repairs: an approval buys exactly one more attempt, a repair
/// from the failing output, which may stop again.
#[test]
fn used_up_repairs_approved_get_one_more_attempt() {
    let h = Harness::new();
    exhausting(&h, "t-more");
    // Approved hours later: the resumed run has its own agent.timeoutMs.
    let later = START_MS + 3 * 3_600_000;
    h.clock.advance(3 * 3_600_000);
    h.workspace.exits.borrow_mut().push_back(1);
    h.decider.push(decision(claim()));
    decide(&h, "t-more", ApprovalDecision::Approve, later).expect("approved");
    assert_eq!(h.drive(), Some(TickOutcome::Waiting));
    assert_eq!(stop(&h, "t-more"), "repairs-exhausted", "one attempt, no more");
    assert_eq!((h.workspace.runs.get(), h.decider.calls()), (3, 3), "a repair: the model was asked again");
    let replan = h.decider.requests.borrow()[2].context.clone();
    assert!(replan.contains("assertion failed"), "the repair sees the failing output");
    // Approved again, and this time the repair passes.
    h.workspace.exits.borrow_mut().push_back(0);
    h.decider.push(decision(claim()));
    decide(&h, "t-more", ApprovalDecision::Approve, later + 60_000).expect("approved again");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-more");
    assert!(result(&r).verified);
    assert_eq!(result(&r).attempts, 4);
}

#[test]
fn used_up_repairs_rejected_fail_and_a_second_decision_is_refused() {
    let h = Harness::new();
    exhausting(&h, "t-done");
    decide(&h, "t-done", ApprovalDecision::Reject, START_MS + 60_000).expect("rejected");
    // A retried or raced decision acts once: the one that won is named.
    match decide(&h, "t-done", ApprovalDecision::Approve, START_MS + 60_001) {
        Err(TaskError::AlreadyDecided { decision: ApprovalDecision::Reject, .. }) => {}
        other => panic!("a second decision was not refused: {other:?}"),
    }
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Failed)));
    assert_eq!(h.load("t-done").conclusion.failure.as_deref(), Some("rejected by alice"));
    assert_eq!(h.workspace.runs.get(), 2, "nothing ran after the rejection");
}

#[test]
fn a_stop_is_published_as_waiting_never_as_a_success() {
    let h = Harness::new();
    exhausting(&h, "t-shown");
    let published = h.publisher.published.borrow();
    assert_eq!(published.as_slice(), [("t-shown".to_owned(), TerminalState::NeedsHuman, false)]);
}

/// The runaway guard counts a resumed run's ticks from the approval: a
/// task a person keeps answering is not a loop.
#[test]
fn the_runaway_guard_counts_each_leg_from_its_approval() {
    let mut h = Harness::new();
    exhausting(&h, "t-legs");
    let first_leg = h.load("t-legs").seq.expect("folded");
    // Enough for a leg as long as the first, not for both together.
    h.limits.max_ticks = first_leg + 1;
    h.workspace.exits.borrow_mut().push_back(0);
    h.decider.push(decision(claim()));
    decide(&h, "t-legs", ApprovalDecision::Approve, START_MS + 60_000).expect("approved");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-legs");
    assert!(r.seq.expect("folded") > first_leg + 1, "both legs together are past the guard");
    assert!(result(&r).verified, "{:?}", r.events);
}
