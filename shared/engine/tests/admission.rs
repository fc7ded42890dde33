//! The policy gate as a task's first tick: a webhook delivery is recorded
//! before anything reads GitHub, then admitted (the run proceeds with the
//! policy snapshot), declined (`ignored`, with its reason) or retried with
//! backoff while the policy cannot be read, and failed only after
//! `Limits::admission_ms`.

mod harness;

use agent_zero_contracts::{RunMode, TaskState, TerminalState};
use agent_zero_engine::{Admission, AdmitError, Fact, Start, TaskError, TickOutcome};
use harness::{FIX_POLICY, Harness, block_on, claim, decision, policy, received, stimulus};

fn admitted(id: &str) -> Result<Admission, AdmitError> {
    Ok(Admission::Admitted(Box::new(stimulus(id, RunMode::Fix, policy(FIX_POLICY)))))
}

#[test]
fn an_admitted_delivery_runs_with_the_policy_it_was_admitted_with() {
    let h = Harness::new();
    h.publisher.admissions.borrow_mut().push_back(admitted("gh-1"));
    h.decider.push(decision(claim()));
    h.receive(received("gh-1"));
    // Before the gate: queued, no stimulus, the delivery is all there is.
    let waiting = h.load("gh-1");
    assert_eq!(waiting.state, TaskState::Queued);
    assert!(waiting.stimulus.is_none());
    assert_eq!(
        block_on(agent_zero_engine::start(&h.kv, "gh-1")).unwrap(),
        Some(Start::Awaiting(Box::new(received("gh-1"))))
    );

    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let done = h.load("gh-1");
    assert!(done.conclusion.concluded.as_ref().unwrap().0.verified, "the fix was verified");
    assert_eq!(h.publisher.admitted.borrow().as_slice(), ["gh-1"], "the gate was asked once");
    assert_eq!(done.intake.admitted_seq, 1);
    // A host reads the admitted stimulus (entry 0, then the admission).
    match block_on(agent_zero_engine::start(&h.kv, "gh-1")).unwrap() {
        Some(Start::Run(s)) => assert_eq!(s.mode, RunMode::Fix),
        other => panic!("{other:?}"),
    }
    let first = done.events.first().unwrap();
    assert_eq!(first.state, TaskState::Discovering, "admission itself is no lifecycle move");
}

#[test]
fn a_declined_delivery_ends_ignored_with_its_reason_and_nothing_else() {
    let h = Harness::new();
    let declined = Admission::Declined { reason: "issues-disabled".into(), message: "issues.enabled is false".into() };
    h.publisher.admissions.borrow_mut().push_back(Ok(declined));
    h.receive(received("gh-2"));
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Ignored)));
    let r = h.load("gh-2");
    assert_eq!(r.state, TaskState::Ignored);
    assert_eq!(r.intake.declined, Some(("issues-disabled".into(), "issues.enabled is false".into())));
    assert!(r.conclusion.concluded.is_none() && r.sandbox.lease.is_none(), "nothing ran, nothing is concluded");
    assert_eq!(h.workspace.leases.get(), 0);
    assert!(h.publisher.published.borrow().is_empty(), "an ignored delivery publishes nothing");
    assert_eq!(h.decider.calls(), 0);
    assert!(r.ended_ms.is_some(), "its retention counts from the decline");
    assert_eq!(h.keys("task/gh-2/log/").len(), 2, "a cheap record: the delivery and the decline");
}

#[test]
fn an_unreadable_policy_is_retried_with_backoff_and_then_proceeds() {
    let h = Harness::new();
    for _ in 0..5 {
        h.publisher.admissions.borrow_mut().push_back(Err(AdmitError::Unavailable("GitHub: 503".into())));
    }
    h.publisher.admissions.borrow_mut().push_back(admitted("gh-3"));
    h.decider.push(decision(claim()));
    h.receive(received("gh-3"));
    // The retries wait longer each time, bounded by max_admission_backoff_ms.
    let mut delays = Vec::new();
    for _ in 0..5 {
        let (tick, delay) = h.queue.messages.borrow_mut().pop_front().unwrap();
        h.clock.advance(delay);
        match h.tick(&tick).unwrap().outcome {
            TickOutcome::Continue { delay_ms, .. } => delays.push(delay_ms),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(delays, [1_000, 2_000, 4_000, 8_000, 16_000]);
    let r = h.load("gh-3");
    assert_eq!((r.intake.errors, r.intake.last_error.as_deref()), (5, Some("GitHub: 503")));
    assert_eq!(r.state, TaskState::Queued);
    // GitHub is back: the same task proceeds to a verified fix.
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("gh-3");
    assert_eq!(r.intake.errors, 0);
    assert!(r.conclusion.concluded.as_ref().unwrap().0.verified);
    // The waiting ticks count against neither the runaway guard nor the run's timeout.
    assert_eq!(r.intake.admitted_seq, 6);
    assert!(r.started_ms > r.created_ms);
}

#[test]
fn a_policy_unreadable_past_the_admission_bound_fails_the_task_with_the_cause() {
    let mut h = Harness::new();
    h.limits.admission_ms = 60_000;
    h.receive(received("gh-4"));
    // No admissions scripted: every read fails.
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Failed)));
    let r = h.load("gh-4");
    let failure = r.conclusion.failure.as_deref().unwrap();
    assert!(failure.contains("could not be read") && failure.contains("connection refused"), "{failure}");
    assert!(r.conclusion.concluded.is_none(), "nothing ran: no evidence to conclude");
    assert_eq!(h.workspace.leases.get(), 0);
}

#[test]
fn a_policy_that_does_not_validate_fails_the_task_at_once() {
    let h = Harness::new();
    let invalid = AdmitError::Invalid(".agent-zero.yml at abc: unknown field `moed` (.agent-zero.yml:moed)".into());
    h.publisher.admissions.borrow_mut().push_back(Err(invalid));
    h.receive(received("gh-5"));
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Failed)));
    let r = h.load("gh-5");
    assert!(r.conclusion.failure.as_deref().unwrap().contains("moed"));
    assert_eq!(h.publisher.admitted.borrow().len(), 1, "no retry for a policy that cannot parse");
}

#[test]
fn copies_of_one_delivery_record_one_task() {
    let h = Harness::new();
    h.receive(received("gh-6"));
    let again = block_on(agent_zero_engine::receive(&h.kv, &h.queue, received("gh-6"), 7));
    assert!(matches!(again, Err(TaskError::Exists(id)) if id == "gh-6"));
    assert_eq!(h.keys("task/gh-6/log/").len(), 1);
}

#[test]
fn the_fold_refuses_admissions_this_engine_never_writes() {
    use agent_zero_engine::{Entry, FoldError, fold};
    let zero = Entry { seq: 0, at_ms: 1, facts: vec![Fact::Received { received: Box::new(received("gh-7")) }] };
    let admit = |seq, id: &str| Entry {
        seq,
        at_ms: 2,
        facts: vec![Fact::Admitted { stimulus: Box::new(stimulus(id, RunMode::Fix, policy(FIX_POLICY))) }],
    };
    assert!(fold(&[zero.clone(), admit(1, "gh-7")]).is_ok());
    let other = fold(&[zero.clone(), admit(1, "gh-8")]);
    assert!(matches!(other, Err(FoldError::Malformed { seq: 1, .. })), "{other:?}");
    let twice = fold(&[zero.clone(), admit(1, "gh-7"), admit(2, "gh-7")]);
    assert!(matches!(twice, Err(FoldError::Malformed { seq: 2, .. })), "{twice:?}");
    let created = Entry {
        seq: 0,
        at_ms: 1,
        facts: vec![Fact::Created { stimulus: Box::new(stimulus("t", RunMode::Fix, policy(FIX_POLICY))) }],
    };
    let unasked = fold(&[created, admit(1, "t")]);
    assert!(matches!(unasked, Err(FoldError::Malformed { seq: 1, .. })), "{unasked:?}");
    // A received delivery is entry 0 only.
    let late = fold(&[zero.clone(), Entry { seq: 1, ..zero }]);
    assert!(matches!(late, Err(FoldError::Malformed { seq: 1, .. })), "{late:?}");
}

#[test]
fn a_webhook_task_costs_one_admission_tick_more_and_an_ignored_one_little() {
    // A fix with one repair, from a delivery: the admission tick, then the run.
    let h = Harness::new();
    h.publisher.admissions.borrow_mut().push_back(admitted("gh-cost"));
    h.workspace.exits.borrow_mut().extend([1, 0]);
    h.decider.push(decision(claim()));
    h.decider.push(decision(claim()));
    h.receive(received("gh-cost"));
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let reports = h.reports.borrow();
    for report in reports.iter() {
        assert!(report.stats.kv_operations() <= 9, "{:?}", report.stats);
    }
    let admission = reports[0].stats;
    assert_eq!(admission.publications, 1, "the gate's read is the forge call");
    let kv: u32 = reports.iter().map(|r| r.stats.kv_operations()).sum();
    eprintln!("webhook fix with one repair: {} ticks, {kv} storage operations", reports.len());
    drop(reports);

    // A declined delivery: one tick after the record.
    let h = Harness::new();
    let declined = Admission::Declined { reason: "proactive-disabled".into(), message: "off".into() };
    h.publisher.admissions.borrow_mut().push_back(Ok(declined));
    h.receive(received("gh-cheap"));
    h.drive();
    let reports = h.reports.borrow();
    let kv: u32 = reports.iter().map(|r| r.stats.kv_operations()).sum();
    assert_eq!(reports.len(), 1, "one tick: admit and end");
    assert!(kv <= 9, "an ignored delivery costs one tick's storage: {kv}");
    eprintln!("ignored delivery: {} tick, {kv} storage operations", reports.len());
}
