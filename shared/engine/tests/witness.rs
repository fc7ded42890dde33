//! A bug claim's witness in a review: written into the sandbox, run with
//! the policy's command at the pull request's head and at its base (the
//! head's files with the diff undone), the checkout put back, and the
//! outcome in the evidence; `review.requireWitness` keeps an unreproduced
//! claim off the diff's lines. The scripted sandbox's `check-add` fails
//! while `src/lib.rs` subtracts, so "reproduced" is what the trees showed.

mod harness;

use agent_zero_contracts::{
    AgentDecision, ChangeRisk, EvidenceBundle, PullRequestRef, RunMode, TerminalState, Trigger, Witness, WitnessOutcome,
};
use agent_zero_engine::{ChangedFile, ChangedFiles, Stimulus, TickOutcome};
use agent_zero_evidence::{RenderOptions, render_check_run, render_evidence_html, render_review};
use harness::{FIXED, Harness, LIB, claim, decided, policy, stimulus};

/// The pull request: `src/lib.rs` went from adding to subtracting.
const PATCH: &str = "@@ -1,3 +1,3 @@\n pub fn add(a: i32, b: i32) -> i32 {\n-    a + b\n+    a - b\n }\n";
const WITNESS_PATH: &str = "tests/witness_add.rs";

fn policy_text(program: &str, require: bool) -> String {
    format!(
        "mode: observe\nreview:\n  requireWitness: {require}\n  witness:\n    command: [{program}]\n    timeoutMs: 5000\n"
    )
}

fn review(h: &Harness, id: &str, policy_text: &str, witness: Option<Witness>) -> EvidenceBundle {
    *h.publisher.changed.borrow_mut() = Some(ChangedFiles {
        files: vec![ChangedFile {
            path: "src/lib.rs".into(),
            status: "modified".into(),
            patch: Some(PATCH.into()),
            additions: 1,
            deletions: 1,
        }],
        ..ChangedFiles::default()
    });
    let mut finding = claim();
    finding.change_risk = ChangeRisk::Behavioral;
    h.decider.push(decided(AgentDecision {
        finding,
        plan: vec![],
        acceptance_criteria: vec![],
        changes: vec![],
        witness: witness.into_iter().collect(),
    }));
    let mut s: Stimulus = stimulus(id, RunMode::Observe, policy(policy_text));
    s.trigger = Trigger::Proactive;
    s.input.pull_request = review_pull_request();
    let outcome = h.run(s);
    let summary = h.load(id).events.last().map(|e| format!("{e:?}")).unwrap_or_default();
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Completed)), "{summary}");
    h.load(id).conclusion.concluded.expect("concluded").1
}

fn review_pull_request() -> Option<PullRequestRef> {
    Some(PullRequestRef {
        owner: "acme".into(),
        repo: "demo".into(),
        number: 7,
        head_sha: "0123456789abcdef0123456789abcdef01234567".into(),
        base_sha: Some("89abcdef0123456789abcdef0123456789abcdef".into()),
    })
}

fn a_witness() -> Option<Witness> {
    Some(Witness { path: WITNESS_PATH.into(), content: "assert_eq!(add(1, 1), 2);\n".into() })
}

#[test]
fn a_witness_that_fails_on_head_and_passes_on_base_reproduces_the_claim() {
    let h = Harness::new();
    let evidence = review(&h, "t-repro", &policy_text("check-add", true), a_witness());
    let witness = evidence.witness.as_ref().expect("a witness record");
    assert_eq!(witness.outcome, WitnessOutcome::Reproduced, "{witness:?}");
    assert!(!witness.withheld);
    assert_eq!((witness.head.as_ref().unwrap().exit_code, witness.base.as_ref().unwrap().exit_code), (1, 0));
    assert_eq!(witness.head.as_ref().unwrap().command, ["check-add", WITNESS_PATH], "the policy's argv, then the path");
    assert_eq!(witness.base_sha.as_deref(), Some("89abcdef0123456789abcdef0123456789abcdef"));
    // It ran on the head's tree, then on the base's, each with the witness in it.
    let runs = h.workspace.witness_runs.borrow();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["src/lib.rs"], LIB);
    assert_eq!(runs[1]["src/lib.rs"], FIXED, "the base rebuilt from the diff");
    assert!(runs.iter().all(|t| t.contains_key(WITNESS_PATH)));
    // The checkout is the head's again, without the witness; nothing is published from it.
    let tree = h.workspace.tree.borrow();
    assert_eq!(tree["src/lib.rs"], LIB);
    assert!(!tree.contains_key(WITNESS_PATH));
    assert!(h.publisher.files.borrow().iter().all(Vec::is_empty), "no file is published");
    // Reproduced: on its line, marked so, with the witness's output.
    assert_eq!(evidence.review.as_ref().unwrap().anchors.len(), 1);
    let posted = render_review(&evidence, &RenderOptions::default()).expect("a review");
    assert_eq!(posted.comments.len(), 1);
    let comment = &posted.comments[0].body;
    assert!(comment.contains("Reproduced"), "{comment}");
    assert!(comment.contains("check-add exited 1"), "the head's output: {comment}");
}

#[test]
fn require_witness_keeps_a_claim_whose_witness_passed_on_head_off_the_lines() {
    let h = Harness::new();
    let evidence = review(&h, "t-pass", &policy_text("pass", true), a_witness());
    let witness = evidence.witness.as_ref().expect("a witness record");
    assert_eq!(witness.outcome, WitnessOutcome::PassedOnHead);
    assert!(witness.withheld);
    assert!(witness.base.is_none(), "not run at the base: it already did not behave as claimed");
    assert_eq!(h.workspace.witness_runs.borrow().len(), 1);
    assert!(evidence.review.as_ref().unwrap().anchors.is_empty(), "not on a line");
    let posted = render_review(&evidence, &RenderOptions::default()).expect("the review body still reports");
    assert!(posted.comments.is_empty());
    assert!(posted.body.contains("review.requireWitness"), "{}", posted.body);
    assert!(posted.body.contains("passed on the head"), "the evidence says why: {}", posted.body);
    let check = render_check_run(&evidence, &RenderOptions::default());
    assert!(check.summary.contains("Kept off the diff's lines"), "{}", check.summary);
    let page = render_evidence_html(&evidence, &RenderOptions::default());
    assert!(page.contains("not reproduced") && page.contains("review.requireWitness"), "{page}");
}

#[test]
fn without_require_witness_an_unreproduced_claim_is_posted_marked_not_reproduced() {
    let h = Harness::new();
    let evidence = review(&h, "t-base-fails", &policy_text("fail", false), a_witness());
    let witness = evidence.witness.as_ref().unwrap();
    assert_eq!(witness.outcome, WitnessOutcome::FailedOnBase);
    assert!(!witness.withheld);
    let posted = render_review(&evidence, &RenderOptions::default()).unwrap();
    assert_eq!(posted.comments.len(), 1);
    assert!(posted.comments[0].body.contains("Not reproduced"), "{}", posted.comments[0].body);
    assert!(posted.comments[0].body.contains("failed on the base too"), "{}", posted.comments[0].body);
}

#[test]
fn a_witness_that_hangs_times_out_and_one_out_of_bounds_never_runs() {
    let h = Harness::new();
    let evidence = review(&h, "t-hang", &policy_text("hang", true), a_witness());
    let witness = evidence.witness.unwrap();
    assert_eq!(witness.outcome, WitnessOutcome::TimedOut);
    assert!(witness.reason.contains("review.witness.timeoutMs (5000 ms)"), "{}", witness.reason);

    for (id, bad, why) in [
        ("t-path", Witness { path: "../escape.rs".into(), content: "x".into() }, "is not a repository-relative"),
        ("t-over", Witness { path: "src/lib.rs".into(), content: "x".into() }, "the pull request changes"),
        ("t-existing", Witness { path: "Cargo.toml".into(), content: "x".into() }, "is an existing file"),
        ("t-big", Witness { path: "w.rs".into(), content: "x".repeat(20_000) }, "16384-byte limit"),
    ] {
        let h = Harness::new();
        let evidence = review(&h, id, &policy_text("check-add", true), Some(bad));
        let witness = evidence.witness.unwrap();
        assert_eq!(witness.outcome, WitnessOutcome::Rejected, "{id}");
        assert!(witness.reason.contains(why), "{id}: {}", witness.reason);
        assert!(witness.withheld, "{id}");
        assert!(h.workspace.witness_runs.borrow().is_empty(), "{id}: nothing ran");
        assert_eq!(h.workspace.writes.get(), 0, "{id}: nothing was written");
    }
}

#[test]
fn a_bug_claim_without_a_witness_is_withheld_only_when_one_is_required() {
    let h = Harness::new();
    let evidence = review(&h, "t-none", &policy_text("check-add", true), None);
    let witness = evidence.witness.unwrap();
    assert_eq!((witness.outcome, witness.withheld), (WitnessOutcome::Absent, true));
    assert!(evidence.review.unwrap().anchors.is_empty());

    let h = Harness::new();
    let evidence = review(&h, "t-none-off", &policy_text("check-add", false), None);
    assert_eq!(evidence.witness.as_ref().unwrap().outcome, WitnessOutcome::Absent);
    assert_eq!(evidence.review.unwrap().anchors.len(), 1, "posted as before");

    // No witness command: no step, no record, as before witnesses existed.
    let h = Harness::new();
    let evidence = review(&h, "t-off", "mode: observe\n", a_witness());
    assert!(evidence.witness.is_none());
    assert!(h.workspace.witness_runs.borrow().is_empty());
}

#[test]
fn a_redelivered_witness_tick_runs_nothing_again() {
    let h = Harness::new();
    *h.publisher.changed.borrow_mut() = Some(ChangedFiles {
        files: vec![ChangedFile {
            path: "src/lib.rs".into(),
            status: "modified".into(),
            patch: Some(PATCH.into()),
            additions: 1,
            deletions: 1,
        }],
        ..ChangedFiles::default()
    });
    let mut finding = claim();
    finding.change_risk = ChangeRisk::Behavioral;
    h.decider.push(decided(AgentDecision {
        finding,
        plan: vec![],
        acceptance_criteria: vec![],
        changes: vec![],
        witness: a_witness().into_iter().collect(),
    }));
    let mut s: Stimulus = stimulus("t-dup", RunMode::Observe, policy(&policy_text("check-add", false)));
    s.trigger = Trigger::Proactive;
    s.input.pull_request = review_pull_request();
    h.create(s);
    // Each witness tick (at the head, then at the base) delivered twice.
    let mut redelivered = 0;
    loop {
        let next = h.queue.messages.borrow_mut().pop_front();
        let Some((tick, delay)) = next else { break };
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
    assert_eq!(redelivered, 2, "one tick at the head, one at the base");
    assert_eq!(h.load("t-dup").state, agent_zero_contracts::TaskState::Completed);
    assert_eq!(h.workspace.witness_runs.borrow().len(), 2);
    let evidence = h.load("t-dup").conclusion.concluded.expect("concluded").1;
    assert_eq!(evidence.witness.expect("one record").outcome, WitnessOutcome::Reproduced);
}

#[test]
fn the_witness_runs_once_and_logs_without_it_still_fold() {
    let h = Harness::new();
    let evidence = review(&h, "t-once", &policy_text("check-add", false), a_witness());
    assert_eq!(evidence.witness.unwrap().outcome, WitnessOutcome::Reproduced);
    assert_eq!(h.workspace.witness_runs.borrow().len(), 2);
    // Driving the finished task again runs nothing more.
    h.drive();
    assert_eq!(h.workspace.witness_runs.borrow().len(), 2, "no second run");
    // A decision, an evidence bundle and a checkpoint written before witnesses read as having none.
    let old: AgentDecision = serde_json::from_value(serde_json::json!({
        "finding": {"title": "t", "explanation": "e", "severity": "low", "confidence": 0.9, "valid": true,
                    "evidence": [], "files": [], "changeRisk": "behavioral"},
        "plan": [], "acceptanceCriteria": [], "changes": []
    }))
    .unwrap();
    assert!(old.witness.is_empty());
    let mut bundle = serde_json::to_value(h.load("t-once").conclusion.concluded.unwrap().1).unwrap();
    bundle.as_object_mut().unwrap().remove("witness");
    assert!(serde_json::from_value::<EvidenceBundle>(bundle).unwrap().witness.is_none());
    let mut resident = serde_json::to_value(h.load("t-once")).unwrap();
    resident.as_object_mut().unwrap().remove("witness");
    let folded: agent_zero_engine::Resident = serde_json::from_value(resident).unwrap();
    assert!(folded.attempt.witness.is_none());
}
