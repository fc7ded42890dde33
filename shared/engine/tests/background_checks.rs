//! Checks started as a background job and polled by later ticks
//! (`Limits::checks_in_background`), for hosts whose invocations are
//! shorter than a check run.

mod harness;

use agent_zero_contracts::{RunMode, TerminalState};
use agent_zero_engine::{Fact, Tick, TickOutcome};
use agent_zero_ports::{Clock, KeyValue as _};
use harness::*;

fn background() -> Harness {
    let mut h = Harness::new();
    h.limits.checks_in_background = true;
    h
}

/// Every fact of the task's log, in order.
fn facts(h: &Harness, id: &str) -> Vec<Fact> {
    let mut all = Vec::new();
    for seq in 0.. {
        let Some(bytes) = block_on(h.kv.get(&agent_zero_engine::log_key(id, seq))).unwrap() else { break };
        let entry: agent_zero_engine::Entry = serde_json::from_slice(&bytes).unwrap();
        all.extend(entry.facts);
    }
    all
}

fn started(facts: &[Fact]) -> Vec<String> {
    facts
        .iter()
        .filter_map(|f| match f {
            Fact::ChecksStarted { job, .. } => Some(job.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_polled_fix_completes_verified_and_each_poll_commits_nothing() {
    let sync = Harness::new();
    sync.decider.push(decision(claim()));
    sync.run(stimulus("t-sync", RunMode::Fix, policy(FIX_POLICY)));
    let sync_entries = sync.load("t-sync").seq.unwrap();

    let h = background();
    h.workspace.polls_before_done.set(3);
    h.decider.push(decision(claim()));
    let outcome = h.run(stimulus("t-bg", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-bg");
    let (result, _) = &**r.conclusion.concluded.as_ref().unwrap();
    assert!(result.verified, "{result:?}");
    assert_eq!(r.sandbox.checks_job, None, "the job is forgotten once its results are in");
    // One entry more than the synchronous run (the start), however many polls.
    assert_eq!(r.seq.unwrap(), sync_entries + 1);
    assert_eq!(h.workspace.polls.get(), 4, "three polls found it running, the fourth done");
    let log = facts(&h, "t-bg");
    assert_eq!(started(&log).len(), 1, "{log:?}");
    assert_eq!(h.workspace.runs.get(), 1, "the checks ran once");
    // Each running poll re-enqueued its own seq after the poll interval,
    // and wrote nothing: not the meta, not a pending marker.
    assert_eq!(*h.again.borrow(), [h.limits.check_poll_ms; 3]);
}

#[test]
fn a_duplicate_of_a_poll_finds_the_seq_busy_until_the_next_poll_is_due() {
    let h = background();
    h.workspace.polls_before_done.set(5);
    h.decider.push(decision(claim()));
    h.create(stimulus("t-dup", RunMode::Fix, policy(FIX_POLICY)));
    // Drive until the first poll found the checks running.
    let poll_seq = loop {
        let (tick, delay) = h.queue.messages.borrow_mut().pop_front().expect("a tick");
        h.clock.advance(delay);
        let report = h.tick(&tick).unwrap();
        if let TickOutcome::Continue { next, .. } = &report.outcome
            && next.expected_seq == tick.expected_seq
        {
            break tick.expected_seq;
        }
    };
    let duplicate = Tick::new("t-dup", poll_seq);
    let polls = h.workspace.polls.get();
    let report = h.tick(&duplicate).unwrap();
    assert!(matches!(report.outcome, TickOutcome::Busy { .. }), "{:?}", report.outcome);
    assert_eq!(h.workspace.polls.get(), polls, "a busy duplicate polls nothing");
    // The queued poll, once due, runs and the task still completes.
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    assert_eq!(started(&facts(&h, "t-dup")).len(), 1);
}

#[test]
fn a_lost_job_is_recorded_and_the_checks_start_again() {
    let h = background();
    h.workspace.lose_jobs.set(1);
    h.decider.push(decision(claim()));
    let outcome = h.run(stimulus("t-lost", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Completed)));
    let log = facts(&h, "t-lost");
    let lost: Vec<_> = log
        .iter()
        .filter_map(|f| match f {
            Fact::SandboxError { operation, reason } if operation == "checks-lost" => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(lost.len(), 1, "{log:?}");
    assert!(lost[0].contains("its process is gone"), "{lost:?}");
    let jobs = started(&log);
    assert_eq!(jobs.len(), 2, "started again under a new name: {jobs:?}");
    assert_ne!(jobs[0], jobs[1]);
    assert!(h.load("t-lost").conclusion.concluded.as_ref().unwrap().0.verified);
}

#[test]
fn jobs_lost_again_and_again_fail_the_run_naming_the_loss() {
    let h = background();
    h.workspace.lose_jobs.set(u32::MAX);
    h.decider.push(decision(claim()));
    let outcome = h.run(stimulus("t-gone", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Failed)));
    let r = h.load("t-gone");
    let failure = r.conclusion.failure.clone().unwrap();
    assert!(failure.contains("the sandbox failed 3 times in a row while verifying"), "{failure}");
    assert_eq!(started(&facts(&h, "t-gone")).len(), 3);
    assert_eq!(h.workspace.releases.get(), 1, "the lease is released");
}

#[test]
fn a_job_still_running_when_the_run_times_out_ends_with_the_run() {
    let h = background();
    // Never done; each poll moves the clock a minute.
    h.workspace.polls_before_done.set(u32::MAX);
    h.decider.push(decision(claim()));
    h.create(stimulus("t-late", RunMode::Fix, policy(FIX_POLICY)));
    let mut last = None;
    for _ in 0..200 {
        let Some((tick, delay)) = h.queue.messages.borrow_mut().pop_front() else { break };
        h.clock.advance(delay.max(60_000));
        last = Some(h.tick(&tick).unwrap().outcome);
    }
    assert_eq!(last, Some(TickOutcome::Terminal(TerminalState::Failed)));
    let r = h.load("t-late");
    let failure = r.conclusion.failure.clone().unwrap();
    assert!(failure.starts_with("timed out"), "{failure}");
    assert!(h.workspace.polls.get() > 10, "polled all along: {}", h.workspace.polls.get());
    assert_eq!(started(&facts(&h, "t-late")).len(), 1, "never restarted");
    assert_eq!(h.workspace.releases.get(), 1, "the lease, and with it the job, is released");
    assert!(h.clock.now_ms() > START_MS);
}
