//! A bug claim's witness in an issue run: written into the sandbox and run
//! with the policy's command once before the fix is written (at the
//! issue's commit) and once on the verified fix, each in its own tick, the
//! witness removed after each; never in the change or what is published.
//! The scripted sandbox's `check-add` fails while `src/lib.rs` subtracts,
//! and the run's fix makes it add, so "reproduced" is what the trees showed.

mod harness;

use agent_zero_contracts::{
    AgentDecision, ChangeRisk, EvidenceBundle, RunMode, TerminalState, Trigger, Witness, WitnessOutcome,
};
use agent_zero_engine::{Stimulus, TickOutcome};
use agent_zero_evidence::{RenderOptions, render_evidence_html, render_pull_request_body};
use harness::{FIXED, Harness, LIB, claim, decided, policy, stimulus};

const WITNESS_PATH: &str = "tests/witness_add.rs";

fn policy_text(program: &str, require: bool) -> String {
    format!(
        "mode: fix\nchecks:\n  - [cargo, test]\nautofix:\n  enabled: true\n  allowedChangeRisks: [mechanical, behavioral]\n\
         review:\n  requireWitness: {require}\n  witness:\n    command: [{program}]\n    timeoutMs: 5000\n"
    )
}

fn a_witness() -> Option<Witness> {
    Some(Witness { path: WITNESS_PATH.into(), content: "assert_eq!(add(1, 1), 2);\n".into() })
}

fn issue(h: &Harness, id: &str, policy_text: &str, witness: Option<Witness>) -> Stimulus {
    let mut finding = claim();
    finding.change_risk = ChangeRisk::Behavioral;
    let fix = agent_zero_contracts::ProposedChange {
        path: "src/lib.rs".into(),
        content: FIXED.into(),
        reason: "add must add".into(),
    };
    h.decider.push(decided(AgentDecision {
        finding,
        plan: vec!["replace - with +".into()],
        acceptance_criteria: vec![],
        changes: vec![fix],
        witness: witness.into_iter().collect(),
    }));
    let mut s: Stimulus = stimulus(id, RunMode::Fix, policy(policy_text));
    s.trigger = Trigger::Issue;
    s
}

fn fix(h: &Harness, id: &str, policy_text: &str, witness: Option<Witness>, ends: TerminalState) -> EvidenceBundle {
    let outcome = h.run(issue(h, id, policy_text, witness));
    let summary = h.load(id).events.last().map(|e| format!("{e:?}")).unwrap_or_default();
    let expected = if ends == TerminalState::NeedsHuman { TickOutcome::Waiting } else { TickOutcome::Terminal(ends) };
    assert_eq!(outcome, Some(expected), "{summary}");
    h.load(id).conclusion.concluded.expect("concluded").1
}

#[test]
fn a_witness_that_fails_before_the_fix_and_passes_after_it_reproduces_the_bug() {
    let h = Harness::new();
    let evidence = fix(&h, "i-repro", &policy_text("check-add", true), a_witness(), TerminalState::Completed);
    assert!(evidence.verified);
    let witness = evidence.witness.as_ref().expect("a witness record");
    assert_eq!(witness.outcome, WitnessOutcome::Reproduced, "{witness:?}");
    assert!(!witness.withheld && witness.of_a_fix());
    let (before, after) = (witness.before.as_ref().unwrap(), witness.after.as_ref().unwrap());
    assert_eq!((before.exit_code, after.exit_code), (1, 0));
    assert_eq!(before.command, ["check-add", WITNESS_PATH], "the policy's argv, then the path");
    assert!(witness.head.is_none() && witness.base.is_none());
    assert_eq!(witness.reason, "the witness failed before the fix (exit 1) and passed after it");
    // It ran on the issue's tree, then on the verified fix, with the witness in each.
    let runs = h.workspace.witness_runs.borrow();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["src/lib.rs"], LIB);
    assert_eq!(runs[1]["src/lib.rs"], FIXED);
    assert!(runs.iter().all(|t| t.contains_key(WITNESS_PATH)));
    // Removed after each run: not in the change, the diff or what is published.
    assert!(!h.workspace.tree.borrow().contains_key(WITNESS_PATH));
    assert_eq!(evidence.changed_files, ["src/lib.rs"]);
    assert!(evidence.tree.iter().all(|f| f.path != WITNESS_PATH));
    let published = h.publisher.files.borrow();
    assert!(published.iter().flatten().all(|p| p.path != WITNESS_PATH), "{published:?}");
    assert!(published.iter().flatten().any(|p| p.path == "src/lib.rs"), "the fix is published: {published:?}");
    // Its sandbox time is in the run's cost, as every tick's is.
    assert_eq!(witness.sandbox_ms(), 10);
    // The pull request body and the page say so.
    let body = render_pull_request_body(&evidence, &RenderOptions::default());
    assert!(body.contains("Witness: Reproduced"), "{body}");
    assert!(body.contains("Before the fix") && body.contains("After the fix"), "{body}");
    let page = render_evidence_html(&evidence, &RenderOptions::default());
    assert!(page.contains("reproduced") && page.contains("Before the fix"), "{page}");
}

#[test]
fn require_witness_stops_a_verified_fix_whose_witness_passed_before_it() {
    let h = Harness::new();
    let evidence = fix(&h, "i-pass", &policy_text("pass", true), a_witness(), TerminalState::NeedsHuman);
    assert!(!evidence.verified, "not verified: a person decides");
    let witness = evidence.witness.as_ref().unwrap();
    assert_eq!(witness.outcome, WitnessOutcome::PassedBeforeFix);
    assert!(witness.withheld);
    assert!(witness.after.is_none(), "not run again after the fix");
    assert_eq!(h.workspace.witness_runs.borrow().len(), 1);
    let refusal = evidence.refusal.as_ref().expect("why it waits");
    assert_eq!(refusal.code, "witness-not-reproduced");
    assert!(refusal.message.contains("passed before the fix"), "{}", refusal.message);
    // Publication opens a pull request only for a completed, verified change.
    assert_eq!(evidence.state, TerminalState::NeedsHuman);
}

#[test]
fn without_require_witness_an_unreproduced_witness_is_advisory() {
    let h = Harness::new();
    let evidence = fix(&h, "i-fail", &policy_text("fail", false), a_witness(), TerminalState::Completed);
    assert!(evidence.verified);
    let witness = evidence.witness.as_ref().unwrap();
    assert_eq!(witness.outcome, WitnessOutcome::FailedAfterFix);
    assert!(witness.reason.contains("still failed after the verified fix"), "{}", witness.reason);
    assert!(!witness.withheld);
    let body = render_pull_request_body(&evidence, &RenderOptions::default());
    assert!(body.contains("Not reproduced (failed-after-fix)"), "{body}");
}

#[test]
fn a_witness_over_the_fixed_file_never_runs_and_none_is_recorded_without_a_command() {
    let h = Harness::new();
    let over = Witness { path: "src/lib.rs".into(), content: "x".into() };
    let evidence = fix(&h, "i-over", &policy_text("check-add", false), Some(over), TerminalState::Completed);
    let witness = evidence.witness.unwrap();
    assert_eq!(witness.outcome, WitnessOutcome::Rejected);
    assert!(witness.reason.contains("is a file the fix changes"), "{}", witness.reason);
    assert!(h.workspace.witness_runs.borrow().is_empty());

    let h = Harness::new();
    let plain = "mode: fix\nchecks:\n  - [cargo, test]\nautofix:\n  enabled: true\n  allowedChangeRisks: [mechanical, behavioral]\n";
    let evidence = fix(&h, "i-off", plain, a_witness(), TerminalState::Completed);
    assert!(evidence.witness.is_none());
    assert!(h.workspace.witness_runs.borrow().is_empty());

    // What a witness adds to a fix: two ticks (entries), one run each.
    let h = Harness::new();
    fix(&h, "i-on", &policy_text("check-add", false), a_witness(), TerminalState::Completed);
    let plain_run = Harness::new();
    fix(&plain_run, "i-plain", plain, a_witness(), TerminalState::Completed);
    let entries = |h: &Harness, id: &str| h.load(id).seq.unwrap_or_default();
    assert_eq!(entries(&h, "i-on"), entries(&plain_run, "i-plain") + 2);
}

#[test]
fn a_redelivered_witness_tick_runs_nothing_again() {
    let h = Harness::new();
    h.create(issue(&h, "i-dup", &policy_text("check-add", false), a_witness()));
    let mut redelivered = 0;
    loop {
        let Some((tick, delay)) = h.queue.messages.borrow_mut().pop_front() else { break };
        h.clock.advance(delay);
        let ran = h.workspace.witness_runs.borrow().len();
        h.tick(&tick).unwrap();
        if h.workspace.witness_runs.borrow().len() > ran {
            // The same tick again (a queue's redelivery): its seq is committed.
            let writes = h.workspace.writes.get();
            h.tick(&tick).unwrap();
            assert_eq!(h.workspace.witness_runs.borrow().len(), ran + 1, "not run again");
            assert_eq!(h.workspace.writes.get(), writes, "nothing written again");
            redelivered += 1;
        }
    }
    assert_eq!(h.load("i-dup").state, agent_zero_contracts::TaskState::Completed);
    assert_eq!(redelivered, 2, "one tick before the fix, one after");
    let evidence = h.load("i-dup").conclusion.concluded.expect("concluded").1;
    assert_eq!(evidence.witness.expect("one record").outcome, WitnessOutcome::Reproduced);
}

#[test]
fn a_persons_approval_of_the_witness_stop_completes_the_verified_fix() {
    let h = Harness::new();
    fix(&h, "i-approve", &policy_text("pass", true), a_witness(), TerminalState::NeedsHuman);
    let resident = h.load("i-approve");
    let shown = agent_zero_engine::decision_digest(resident.attempt.decision.as_ref().expect("a decision"));
    let approved = agent_zero_engine::approve(
        &h.kv,
        &h.queue,
        "i-approve",
        "alice",
        agent_zero_engine::ApprovalDecision::Approve,
        None,
        Some(&shown),
        harness::START_MS + 60_000,
    );
    harness::block_on(approved).expect("approved as shown");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let evidence = h.load("i-approve").conclusion.concluded.expect("concluded").1;
    assert!(evidence.verified);
    let witness = evidence.witness.unwrap();
    assert_eq!(witness.outcome, WitnessOutcome::PassedBeforeFix, "still marked not reproduced");
    assert!(!witness.withheld, "the person lifted the stop");
    assert_eq!(h.workspace.witness_runs.borrow().len(), 1, "the witness is not run again");
}
