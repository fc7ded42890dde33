//! A task's raw log replays to the conclusion it recorded: every field of
//! the result and the evidence is rebuilt from the facts before the
//! conclusion, so an edited fact shows up as a difference.

mod harness;

use agent_zero_contracts::{ChangeRisk, RunMode, TerminalState};
use agent_zero_engine::log::{read_log, replay};
use agent_zero_engine::{ApprovalDecision, Fact, TickOutcome};
use harness::*;

fn log(h: &Harness, id: &str) -> Vec<agent_zero_engine::Entry> {
    block_on(read_log(&h.kv, id)).expect("read").expect("exists")
}

#[test]
fn a_completed_run_rebuilds_its_recorded_conclusion() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    assert_eq!(
        h.run(stimulus("t-replay", RunMode::Fix, policy(FIX_POLICY))),
        Some(TickOutcome::Terminal(TerminalState::Completed))
    );
    let entries = log(&h, "t-replay");
    assert_eq!(entries.iter().map(|e| e.seq).collect::<Vec<_>>(), (0..entries.len() as u64).collect::<Vec<_>>());
    let replayed = replay(&entries).expect("folds");
    assert_eq!(replayed.resident, h.load("t-replay"));
    let rebuilt = replayed.rebuilt.expect("concluded");
    assert!(rebuilt.1.verified);
    assert_eq!(Some(rebuilt), replayed.recorded);
    assert_eq!(block_on(read_log(&h.kv, "t-none")).unwrap(), None);
    assert!(block_on(read_log(&h.kv, "a/b")).is_err());
}

#[test]
fn a_rejection_and_a_second_ending_replay_too() {
    let h = Harness::new();
    let mut finding = claim();
    finding.change_risk = ChangeRisk::HighImpact;
    h.decider.push(decision(finding));
    assert_eq!(h.run(stimulus("t-rej", RunMode::Fix, policy(FIX_POLICY))), Some(TickOutcome::Waiting));
    block_on(agent_zero_engine::approve(
        &h.kv,
        &h.queue,
        "t-rej",
        "alice",
        ApprovalDecision::Reject,
        None,
        None,
        START_MS + 5_000,
    ))
    .unwrap();
    h.drive();
    let replayed = replay(&log(&h, "t-rej")).expect("folds");
    let rebuilt = replayed.rebuilt.expect("concluded");
    assert_eq!(rebuilt.1.state, TerminalState::Failed);
    assert_eq!(Some(rebuilt), replayed.recorded);
}

#[test]
fn an_edited_check_result_no_longer_rebuilds_the_record() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.run(stimulus("t-edit", RunMode::Fix, policy(FIX_POLICY)));
    let mut entries = log(&h, "t-edit");
    let edited = entries
        .iter_mut()
        .flat_map(|e| e.facts.iter_mut())
        .find_map(|f| match f {
            Fact::Checked { results, .. } => results.first_mut(),
            _ => None,
        })
        .expect("a check ran");
    edited.stdout = "test result: ok. 99 passed".into();
    let replayed = replay(&entries).expect("still folds");
    let (rebuilt, recorded) = (replayed.rebuilt.unwrap(), replayed.recorded.unwrap());
    assert_ne!(rebuilt.1.checks, recorded.1.checks);
    assert_eq!(rebuilt.1.checks[0].stdout, "test result: ok. 99 passed");
}

#[test]
fn reference_settings_without_an_edge_meaning_are_recorded_in_the_evidence() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    let yaml = format!("{FIX_POLICY}runner:\n  isolation: local\n  engine: docker\n  workdir: /workspace\n");
    h.run(stimulus("t-ref", RunMode::Fix, policy(&yaml)));
    let r = h.load("t-ref");
    let evidence = &r.conclusion.concluded.as_ref().expect("concluded").1;
    let policy_items: Vec<(&str, &str)> = evidence
        .coverage
        .omitted
        .iter()
        .filter(|o| o.kind == "policy")
        .map(|o| (o.subject.as_str(), o.reason.as_str()))
        .collect();
    let fields: Vec<&str> = policy_items.iter().map(|(s, _)| *s).collect();
    assert_eq!(fields, ["runner.isolation", "runner.engine", "runner.workdir"]);
    assert!(policy_items.iter().all(|(_, reason)| reason.contains("hosted sandbox")), "{policy_items:?}");
    // And the replay rebuilds them from the policy snapshot in entry 0.
    let replayed = replay(&log(&h, "t-ref")).unwrap();
    assert_eq!(replayed.rebuilt, replayed.recorded);
}

#[test]
fn a_conclusion_of_a_delivery_never_admitted_is_refused_not_a_panic() {
    use agent_zero_contracts::TaskState;
    use agent_zero_engine::{Entry, FoldError};
    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.run(stimulus("t-donor", RunMode::Fix, policy(FIX_POLICY)));
    let concluded = log(&h, "t-donor")
        .into_iter()
        .flat_map(|e| e.facts)
        .find(|f| matches!(f, Fact::Concluded { .. }))
        .expect("the donor run concluded");
    // An edited log: a delivery ignored before its admission, with a conclusion.
    let entries = [
        Entry { seq: 0, at_ms: START_MS, facts: vec![Fact::Received { received: Box::new(received("gh-edited")) }] },
        Entry {
            seq: 1,
            at_ms: START_MS + 1,
            facts: vec![
                Fact::Transition {
                    from: TaskState::Queued,
                    to: TaskState::Ignored,
                    message: "x".into(),
                    attempt: None,
                },
                concluded,
            ],
        },
    ];
    let refused = replay(&entries);
    assert!(
        matches!(&refused, Err(FoldError::Malformed { seq: 1, reason }) if reason.contains("before the delivery was admitted")),
        "{refused:?}"
    );
}
