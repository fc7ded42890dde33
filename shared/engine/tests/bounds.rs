//! The run bounds in the deterministic harness, over both stores: a queued
//! task whose lease the pool refuses as full (the lease coordinator's
//! active leases are the run bounds) waits in `queued` (its tick runs
//! again, nothing committed, no sandbox leased) until a running task gives
//! its lease back; a wait is not the run's time.

mod harness;

use agent_zero_contracts::{RunMode, TaskState, TerminalState};
use agent_zero_engine::{Tick, TickOutcome};
use harness::*;

fn bounded(max_running: u32, per_repository: u32) -> [Harness; 2] {
    let both = Harness::both();
    for h in &both {
        h.workspace.pool.set(Some((max_running, per_repository)));
    }
    both
}

/// Leases still active (a task that is quiet holds none).
fn held(h: &Harness) -> Vec<String> {
    h.workspace.active.borrow().keys().cloned().collect()
}

/// Delivers queued ticks until none is left, checking that `waiting` never
/// leaves `queued` while `first` is not quiet; the ticks `waiting` waited.
fn drive_checking(h: &Harness, first: &str, waiting: &str) -> usize {
    let mut waits = 0;
    for _ in 0..500 {
        let Some((tick, delay)) = h.queue.messages.borrow_mut().pop_front() else { return waits };
        h.clock.advance(delay);
        let first_running =
            !matches!(h.load(first).state, TaskState::Completed | TaskState::Failed | TaskState::NeedsHuman);
        let seq = h.load(waiting).seq;
        let report = h.tick(&tick).expect("tick");
        if tick.task_id == waiting && first_running {
            let same = Tick::new(waiting.to_owned(), tick.expected_seq);
            assert!(matches!(&report.outcome, TickOutcome::Continue { next, .. } if *next == same), "{report:?}");
            assert_eq!(h.load(waiting).state, TaskState::Queued, "waits in queued while {first} runs");
            assert_eq!(h.load(waiting).seq, seq, "a wait commits nothing");
            assert!(report.warnings.iter().any(|w| w.contains("AGENT_ZERO_MAX_RUNNING")), "{:?}", report.warnings);
            waits += 1;
        }
    }
    panic!("not quiet in 500 deliveries");
}

#[test]
fn a_second_task_of_a_repository_waits_in_queued_until_the_first_ends_then_runs() {
    for h in bounded(4, 1) {
        h.decider.push(decision(claim()));
        h.decider.push(decision(claim()));
        h.create(stimulus("t-first", RunMode::Fix, policy(FIX_POLICY)));
        h.create(stimulus("t-second", RunMode::Fix, policy(FIX_POLICY)));
        let waits = drive_checking(&h, "t-first", "t-second");
        assert!(waits >= 1, "the second task waited");
        for id in ["t-first", "t-second"] {
            assert_eq!(h.load(id).state, TaskState::Completed, "{id}: {:?}", h.load(id).conclusion.failure);
        }
        assert_eq!(h.workspace.leases.get(), 2, "one lease each: a wait leased nothing");
        assert_eq!(held(&h), Vec::<String>::new(), "both gave their leases back");
    }
}

#[test]
fn the_deployments_bound_holds_across_repositories() {
    for h in bounded(1, 1) {
        h.decider.push(decision(claim()));
        h.decider.push(decision(claim()));
        h.create(stimulus("t-one", RunMode::Fix, policy(FIX_POLICY)));
        let mut other = stimulus("t-other", RunMode::Fix, policy(FIX_POLICY));
        other.repository = "acme/other".into();
        h.create(other);
        assert!(drive_checking(&h, "t-one", "t-other") >= 1);
        assert_eq!(h.load("t-other").state, TaskState::Completed);
    }
}

#[test]
fn a_wait_longer_than_the_runs_timeout_is_not_counted_against_it() {
    for h in bounded(1, 1) {
        h.decider.push(decision(claim()));
        h.create(stimulus("t-late", RunMode::Fix, policy(FIX_POLICY)));
        // Another task holds the only lease for longer than agent.timeoutMs.
        let timeout_ms = policy(FIX_POLICY).agent.timeout_ms;
        h.workspace.active.borrow_mut().insert("lease-blocker".into(), "acme/other".into());
        let (tick, _) = h.queue.messages.borrow_mut().pop_front().unwrap();
        assert!(matches!(h.tick(&tick).unwrap().outcome, TickOutcome::Continue { .. }));
        assert_eq!(h.load("t-late").state, TaskState::Queued);
        assert_eq!(h.workspace.leases.get(), 0, "nothing leased");
        // The blocker ends (its lease released) after twice the timeout.
        h.clock.advance(2 * timeout_ms);
        h.workspace.active.borrow_mut().clear();
        assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
        let r = h.load("t-late");
        assert!(r.conclusion.failure.is_none(), "{:?}", r.conclusion.failure);
    }
}

#[test]
fn a_task_that_fails_or_stops_for_a_person_gives_its_lease_back() {
    for mut h in bounded(4, 1) {
        // Fails: the runaway guard ends it a few ticks after its lease.
        h.limits.max_ticks = 4;
        h.decider.push(decision(claim()));
        assert_eq!(
            h.run(stimulus("t-fails", RunMode::Fix, policy(FIX_POLICY))),
            Some(TickOutcome::Terminal(TerminalState::Failed))
        );
        assert_eq!(h.workspace.leases.get(), 1, "it ran");
        assert_eq!(held(&h), Vec::<String>::new(), "a failed task holds nothing");
    }
    for h in bounded(4, 1) {
        // Stops for a person: a high-impact change waits for an approval.
        let mut finding = claim();
        finding.change_risk = agent_zero_contracts::ChangeRisk::HighImpact;
        h.decider.push(decision(finding));
        assert_eq!(h.run(stimulus("t-person", RunMode::Fix, policy(FIX_POLICY))), Some(TickOutcome::Waiting));
        assert_eq!(h.load("t-person").state, TaskState::NeedsHuman);
        assert_eq!(held(&h), Vec::<String>::new(), "a task waiting for a person holds nothing");
    }
}
