//! The claim rules of the commit point, in the deterministic harness: a
//! tick claims its seq before any external effect; a duplicate leaves a
//! live claim alone; after its deadline a claim is superseded; a superseded
//! tick's commit is refused; the sweep never re-drives a live claim; and
//! of any number of writers racing for one seq, one commits.

mod harness;

use agent_zero_contracts::{RunMode, TaskState, TerminalState};
use agent_zero_engine::{
    ApprovalDecision, Claim, Decider, Engine, ModelOutcome, ModelRequest, Ports, SweepOptions, TaskError, Tick,
    TickOutcome, claim_key, log_key,
};
use agent_zero_ports::{Clock, KeyValue, MemoryKv};
use harness::{FIX_POLICY, Harness, block_on, claim, decision, policy, stimulus};

/// Delivers queued ticks until the next one would run `seq`; that tick.
fn advance_to(h: &Harness, seq: u64) -> Tick {
    loop {
        let (tick, _) = h.queue.messages.borrow_mut().pop_front().expect("a queued tick");
        if tick.expected_seq == seq {
            return tick;
        }
        h.tick(&tick).expect("tick");
    }
}

/// The seq of the understand step of a fresh fix task: lease (1), discover (2), understand (3).
const UNDERSTAND: u64 = 3;

fn stored_claim(h: &Harness, id: &str, seq: u64) -> Option<Claim> {
    h.kv.snapshot().get(&claim_key(id, seq)).map(|b| serde_json::from_slice(b).expect("a claim"))
}

#[test]
fn a_tick_claims_its_seq_before_acting_and_a_duplicate_leaves_it_alone() {
    for h in Harness::both() {
        h.decider.push(decision(claim()));
        h.create(stimulus("t-dup", RunMode::Fix, policy(FIX_POLICY)));
        let tick = advance_to(&h, UNDERSTAND);
        // Another delivery of this tick is mid-step: its claim is live.
        let now = h.clock.now_ms();
        let live = Claim { at_ms: now, deadline_ms: now + 60_000, supersedes_ms: None, committing: false };
        block_on(h.kv.put(&claim_key("t-dup", UNDERSTAND), &serde_json::to_vec(&live).unwrap())).unwrap();
        let report = h.tick(&tick).unwrap();
        assert_eq!(report.outcome, TickOutcome::Busy { until_ms: now + 60_000 });
        assert_eq!(h.decider.calls(), 0, "the duplicate paid for no model call");
        assert!(!h.kv.snapshot().contains_key(&log_key("t-dup", UNDERSTAND)), "and committed nothing");
        assert_eq!(stored_claim(&h, "t-dup", UNDERSTAND), Some(live), "the live claim is untouched");

        // After the deadline (the holder died) a new delivery supersedes it.
        h.clock.advance(60_000);
        let report = h.tick(&tick).unwrap();
        assert!(matches!(report.outcome, TickOutcome::Continue { .. }), "{:?}", report.outcome);
        assert_eq!(h.decider.calls(), 1);
        let taken = stored_claim(&h, "t-dup", UNDERSTAND).unwrap();
        assert_eq!(taken.supersedes_ms, Some(now), "the new claim names the one it superseded");
        assert!(taken.committing);
        assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
        assert_eq!(h.decider.calls(), 1, "one model call for the step, the duplicate included");
    }
}

#[test]
fn a_claim_lasts_the_steps_own_bound() {
    for h in Harness::both() {
        h.decider.push(decision(claim()));
        h.create(stimulus("t-bound", RunMode::Fix, policy(FIX_POLICY)));
        let tick = advance_to(&h, UNDERSTAND);
        h.tick(&tick).unwrap();
        let c = stored_claim(&h, "t-bound", UNDERSTAND).unwrap();
        // Two model calls (primary, then fallback) plus the margin.
        assert_eq!(c.deadline_ms - c.at_ms, 2 * h.limits.model_call_ms + h.limits.claim_margin_ms);
        // The checks' claim lasts what is left of agent.timeoutMs, plus the margin.
        let verify = loop {
            let (tick, _) = h.queue.messages.borrow_mut().pop_front().expect("a queued tick");
            if h.load("t-bound").state == TaskState::Verifying {
                break tick;
            }
            h.tick(&tick).unwrap();
        };
        h.tick(&verify).unwrap();
        let c = stored_claim(&h, "t-bound", verify.expected_seq).unwrap();
        // The run's time starts when it leaves `queued`.
        let started = h.load("t-bound").started_ms;
        let remaining = 1_800_000 - (c.at_ms - started);
        let bound = remaining + h.limits.claim_margin_ms;
        if h.transacts() {
            // Claimed ahead, with the bound the enqueuing tick computed:
            // longer only by the time the message waited past its due time.
            let late = c.deadline_ms - c.at_ms - bound;
            assert!(c.deadline_ms - c.at_ms >= bound && late <= h.tick_cost_ms, "{c:?}");
        } else {
            assert_eq!(c.deadline_ms - c.at_ms, bound, "{c:?}");
        }
    }
}

/// A model port that, while it answers, lets another delivery supersede
/// the running tick's claim (its deadline passed: a stall, not a crash).
struct SupersededWhileAsking<'a> {
    kv: &'a MemoryKv,
    inner: &'a harness::ScriptedDecider,
    key: String,
}

impl Decider for SupersededWhileAsking<'_> {
    async fn decide(&self, request: &ModelRequest) -> ModelOutcome {
        let current: Claim = serde_json::from_slice(&self.kv.get(&self.key).await.unwrap().unwrap()).unwrap();
        let newer = Claim {
            at_ms: current.deadline_ms,
            deadline_ms: current.deadline_ms + 60_000,
            supersedes_ms: Some(current.at_ms),
            committing: false,
        };
        let old = serde_json::to_vec(&current).unwrap();
        assert!(self.kv.compare_and_swap(&self.key, Some(&old), &serde_json::to_vec(&newer).unwrap()).await.unwrap());
        self.inner.decide(request).await
    }
}

#[test]
fn a_superseded_ticks_commit_is_refused() {
    for h in Harness::both() {
        h.decider.push(decision(claim()));
        h.create(stimulus("t-sup", RunMode::Fix, policy(FIX_POLICY)));
        let tick = advance_to(&h, UNDERSTAND);
        let decider = SupersededWhileAsking { kv: &h.kv, inner: &h.decider, key: claim_key("t-sup", UNDERSTAND) };
        let engine = Engine {
            kv: &h.kv,
            ports: Ports { decider: &decider, workspace: &h.workspace, publisher: &h.publisher },
            queue: &h.queue,
            limits: h.limits,
        };
        let report = block_on(engine.tick(&tick, h.clock.now_ms())).unwrap();
        assert_eq!(report.outcome, TickOutcome::Stale, "the stalled tick's answer is not committed");
        assert!(!h.kv.snapshot().contains_key(&log_key("t-sup", UNDERSTAND)));
        assert!(!stored_claim(&h, "t-sup", UNDERSTAND).unwrap().committing, "the superseding claim stands");
        // The log folds as it was; the task is still at understanding.
        assert_eq!(h.load("t-sup").state, TaskState::Understanding);
    }
}

#[test]
fn a_log_with_a_superseded_claim_folds_to_the_same_task() {
    for h in Harness::both() {
        h.decider.push(decision(claim()));
        h.create(stimulus("t-fold", RunMode::Fix, policy(FIX_POLICY)));
        let tick = advance_to(&h, UNDERSTAND);
        let now = h.clock.now_ms();
        let stale = Claim { at_ms: now - 10, deadline_ms: now - 1, supersedes_ms: None, committing: false };
        block_on(h.kv.put(&claim_key("t-fold", UNDERSTAND), &serde_json::to_vec(&stale).unwrap())).unwrap();
        h.tick(&tick).unwrap();
        assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
        let checkpoint = h.load("t-fold");
        // Cold: no checkpoint, every entry folded from 0, claims beside the log.
        block_on(h.kv.delete(&agent_zero_engine::meta_key("t-fold"))).unwrap();
        let cold = h.load("t-fold");
        assert_eq!(cold, checkpoint);
        assert!(h.keys("task/t-fold/claim/").len() >= 5, "every acting step left its claim beside the log");
    }
}

#[test]
fn the_sweep_never_re_drives_a_live_claim_whatever_the_grace() {
    for h in Harness::both() {
        h.decider.push(decision(claim()));
        h.create(stimulus("t-sweep", RunMode::Fix, policy(FIX_POLICY)));
        let _tick = advance_to(&h, UNDERSTAND);
        // The tick for UNDERSTAND is running: its claim is live, its marker overdue.
        let now = h.clock.now_ms();
        let live = Claim { at_ms: now, deadline_ms: now + 240_000, supersedes_ms: None, committing: false };
        block_on(h.kv.put(&claim_key("t-sweep", UNDERSTAND), &serde_json::to_vec(&live).unwrap())).unwrap();
        h.clock.advance(100_000);
        let zero = SweepOptions { grace_ms: 0, ..SweepOptions::default() };
        let report = block_on(agent_zero_engine::sweep(&h.kv, &h.queue, h.clock.now_ms(), zero)).unwrap();
        assert!(report.enqueued.is_empty(), "{report:?}");
        assert_eq!(report.claimed, 1);
        // Past the deadline the seq is re-driven.
        h.clock.advance(140_000);
        let report = block_on(agent_zero_engine::sweep(&h.kv, &h.queue, h.clock.now_ms(), zero)).unwrap();
        assert_eq!(report.enqueued, [Tick::new("t-sweep", UNDERSTAND)]);
    }
}

#[test]
fn of_an_approve_and_a_reject_exactly_one_commits_and_the_loser_learns_the_winner() {
    use agent_zero_contracts::ChangeRisk;
    let h = Harness::new();
    let mut finding = claim();
    finding.change_risk = ChangeRisk::HighImpact;
    h.decider.push(decision(finding));
    assert_eq!(h.run(stimulus("t-race", RunMode::Fix, policy(FIX_POLICY))), Some(TickOutcome::Waiting));
    // Both read the task as needs-human; the approval commits first.
    let resident = h.load("t-race");
    assert_eq!(resident.state, TaskState::NeedsHuman);
    let now = h.clock.now_ms();
    block_on(agent_zero_engine::approve(
        &h.kv,
        &h.queue,
        "t-race",
        "alice",
        ApprovalDecision::Approve,
        None,
        None,
        now,
    ))
    .unwrap();
    // The reject was decided on the same state; it races for the same seq.
    let seq = resident.seq.unwrap() + 1;
    assert!(h.kv.snapshot().contains_key(&log_key("t-race", seq)));
    let lost = block_on(agent_zero_engine::approve(
        &h.kv,
        &h.queue,
        "t-race",
        "bob",
        ApprovalDecision::Reject,
        None,
        None,
        now,
    ));
    match lost {
        Err(TaskError::AlreadyDecided { principal, decision, .. }) => {
            assert_eq!((principal.as_str(), decision), ("alice", ApprovalDecision::Approve));
        }
        other => panic!("the loser must learn the winner: {other:?}"),
    }
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)), "the winner's decision stands");
}

/// A store whose next insert of a log entry fails, as a transient backend
/// error would, whether single (`put_if_absent`) or in a transaction;
/// everything else goes through.
struct FailsOneCommit<'a> {
    kv: &'a MemoryKv,
    armed: std::cell::Cell<bool>,
}

impl KeyValue for FailsOneCommit<'_> {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, agent_zero_ports::KvError> {
        self.kv.get(key).await
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), agent_zero_ports::KvError> {
        self.kv.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), agent_zero_ports::KvError> {
        self.kv.delete(key).await
    }
    async fn list(
        &self,
        prefix: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<agent_zero_ports::KeyPage, agent_zero_ports::KvError> {
        self.kv.list(prefix, cursor, limit).await
    }
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, agent_zero_ports::KvError> {
        if key.contains("/log/") && self.armed.replace(false) {
            return Err(agent_zero_ports::KvError::Backend("injected commit failure".into()));
        }
        self.kv.put_if_absent(key, value).await
    }
    async fn compare_and_swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<bool, agent_zero_ports::KvError> {
        self.kv.compare_and_swap(key, expected, value).await
    }
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, agent_zero_ports::KvError> {
        self.kv.get_many(keys).await
    }
    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        self.kv.reads_in_one_request(keys)
    }
    fn transacts(&self, keys: &[&str]) -> bool {
        self.kv.transacts(keys)
    }
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[agent_zero_ports::Expect<'_>],
        writes: &[agent_zero_ports::Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), agent_zero_ports::KvError> {
        self.kv.read_and_transact(read, expect, writes).await
    }
    async fn transact(
        &self,
        expect: &[agent_zero_ports::Expect<'_>],
        writes: &[agent_zero_ports::Write<'_>],
    ) -> Result<bool, agent_zero_ports::KvError> {
        // Fails before any write, where the store has transactions at all.
        let supported = !matches!(self.kv.transact(&[], &[]).await, Err(agent_zero_ports::KvError::Unsupported(_)));
        if supported && writes.iter().any(|(key, _)| key.contains("/log/")) && self.armed.replace(false) {
            return Err(agent_zero_ports::KvError::Backend("injected commit failure".into()));
        }
        self.kv.transact(expect, writes).await
    }
}

#[test]
fn a_failed_commit_gives_its_claim_up_so_the_retry_runs_at_once() {
    for h in Harness::both() {
        h.decider.push(decision(claim()));
        h.decider.push(decision(claim()));
        h.create(stimulus("t-retry", RunMode::Fix, policy(FIX_POLICY)));
        let tick = advance_to(&h, UNDERSTAND);
        let flaky = FailsOneCommit { kv: &h.kv, armed: std::cell::Cell::new(true) };
        let engine = Engine {
            kv: &flaky,
            ports: Ports { decider: &h.decider, workspace: &h.workspace, publisher: &h.publisher },
            queue: &h.queue,
            limits: h.limits,
        };
        let failed = block_on(engine.tick(&tick, h.clock.now_ms()));
        assert!(matches!(failed, Err(agent_zero_engine::TickError::Store(_))), "{failed:?}");
        let released = stored_claim(&h, "t-retry", UNDERSTAND).unwrap();
        assert!(released.deadline_ms <= h.clock.now_ms() && !released.committing, "{released:?}");
        // The redelivery (a moment later) runs the step again instead of waiting out its bound.
        let report = h.tick(&tick).unwrap();
        assert!(matches!(report.outcome, TickOutcome::Continue { .. }), "{:?}", report.outcome);
        assert_eq!(h.decider.calls(), 2, "the lost answer is asked for again, once");
        assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    }
}

/// A tick's message carries its step's bound (`claim_ms`), from the tick
/// that enqueued it; on a store with transactions the tick claims its seq
/// in the request that reads it. These are the cases where the hint and
/// the step disagree, or the message is not to be trusted that far.
#[test]
fn a_claim_taken_ahead_is_kept_moved_on_or_given_back() {
    let understand =
        2 * agent_zero_engine::Limits::default().model_call_ms + agent_zero_engine::Limits::default().claim_margin_ms;
    // The hint is short of the step's bound: the claim is moved to it
    // before the step acts.
    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.create(stimulus("t-short", RunMode::Fix, policy(FIX_POLICY)));
    let tick = advance_to(&h, UNDERSTAND);
    assert_eq!(tick.claim_ms, Some(understand), "the enqueuing tick computed the step's bound");
    let report = h.tick(&Tick { claim_ms: Some(1), ..tick.clone() }).unwrap();
    assert!(matches!(report.outcome, TickOutcome::Continue { .. }), "{:?}", report.outcome);
    let c = stored_claim(&h, "t-short", UNDERSTAND).unwrap();
    assert_eq!((c.deadline_ms - c.at_ms, c.committing), (understand, true), "{c:?}");
    // Read and claim, the claim moved on, the commit.
    assert_eq!(report.stats.kv_operations(), 3, "{:?}", report.stats);

    // A hint past any step is clamped: a message cannot hold a seq for long.
    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.create(stimulus("t-long", RunMode::Fix, policy(FIX_POLICY)));
    let tick = advance_to(&h, UNDERSTAND);
    let now = h.clock.now_ms() + h.tick_cost_ms;
    let blocker = Tick { claim_ms: Some(u64::MAX), ..tick.clone() };
    let ahead = agent_zero_engine::ClaimAhead::of(&blocker, now).unwrap();
    assert_eq!(ahead.deadline_ms(), now + agent_zero_engine::MAX_CLAIM_AHEAD_MS);

    // A tick whose task has nothing left to do gives the claim it took
    // ahead back, so the seq is free for whatever commits it next.
    let h = Harness::new();
    h.decider.push(decision(claim()));
    let done = h.run(stimulus("t-quiet", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(done, Some(TickOutcome::Terminal(TerminalState::Completed)));
    let next = h.load("t-quiet").seq.unwrap() + 1;
    let late = Tick { claim_ms: Some(understand), ..Tick::new("t-quiet", next) };
    let report = h.tick(&late).unwrap();
    assert!(matches!(report.outcome, TickOutcome::Terminal(_)), "{:?}", report.outcome);
    assert_eq!(stored_claim(&h, "t-quiet", next), None, "the claim taken ahead is gone");
    assert!(!h.kv.snapshot().contains_key(&log_key("t-quiet", next)), "nothing committed");

    // Spin's store has no transaction: the hint changes nothing there.
    let h = Harness::one_key_per_request();
    h.decider.push(decision(claim()));
    h.create(stimulus("t-spin", RunMode::Fix, policy(FIX_POLICY)));
    let tick = advance_to(&h, UNDERSTAND);
    assert!(tick.claim_ms.is_some());
    let report = h.tick(&tick).unwrap();
    assert!(matches!(report.outcome, TickOutcome::Continue { .. }), "{:?}", report.outcome);
    let c = stored_claim(&h, "t-spin", UNDERSTAND).unwrap();
    assert_eq!(c.deadline_ms - c.at_ms, understand);
}
