//! What a host decides about running ticks, in one tested place: the host
//! crates only convert their types and call these.
//!
//! - Cloudflare Queues: how long a failed tick waits before its redelivery
//!   ([`retry_delay_seconds`]), how a tick's delay becomes a message delay
//!   ([`queue_delay_seconds`]), and how overdue a pending tick may be before
//!   the cron sweep re-sends it ([`SWEEP_GRACE_MS`]).
//! - Spin has no queue: ticks enqueued while handling a request wait in the
//!   invocation's [`InvocationQueue`] and [`drive`] runs them after the
//!   response, within a budget. Whatever remains (a long delay, a spent
//!   budget, a crash) is already a due time in the task's checkpoint, and the
//!   sweep re-drives it. The HTTP component does not run them itself: it
//!   hands them to the private tick component by Spin's service chaining
//!   ([`InvocationQueue::hand_off`], read there by
//!   [`InvocationQueue::take_hand_off`]), which answers at once and drives
//!   them, so each component links only its own role's code.

use std::cell::RefCell;

use agent_zero_engine::{Queue, QueueError, Tick, TickReport};
use agent_zero_ports::Clock;

use crate::RunTickError;

/// How overdue a pending tick may be before the sweep re-sends it: queue
/// latency plus KV's propagation, so a tick on its way is not sent twice
/// (a second one would be a no-op, but it costs reads).
pub const SWEEP_GRACE_MS: u64 = 90_000;

/// The longest delay Cloudflare Queues accepts on a message (12 hours).
pub const MAX_QUEUE_DELAY_SECONDS: u32 = 43_200;

/// A tick's delay as a Queues message delay: whole seconds, rounded up (a
/// tick never runs before it is due), at most 12 hours (a later tick runs
/// early, finds itself not yet due and is enqueued again).
pub fn queue_delay_seconds(delay_ms: u64) -> u32 {
    u32::try_from(delay_ms.div_ceil(1000)).unwrap_or(u32::MAX).min(MAX_QUEUE_DELAY_SECONDS)
}

/// How long a failed tick waits before its redelivery: as long as the
/// message has already existed, between 1 s and 60 s. Each retry roughly
/// doubles the message's age, so this backs off exponentially without the
/// attempt count (which workers-rs does not expose): a store or provider
/// outage costs a handful of retries, not `max_retries` in a burst. When the
/// retries run out, the cron sweep re-drives the task.
pub fn retry_delay_seconds(now_ms: u64, sent_ms: u64) -> u32 {
    let age = now_ms.saturating_sub(sent_ms) / 1_000;
    u32::try_from(age.clamp(1, 60)).unwrap_or(60)
}

/// Delays up to this long are waited out in the invocation (a backoff after
/// a sandbox or model error); longer ones are left to the sweep.
pub const INLINE_DELAY_MS: u64 = 15_000;
/// Most ticks one invocation runs after its response.
pub const MAX_TICKS_PER_INVOCATION: usize = 64;
/// Wall-clock budget for those ticks where the platform sets none: a tick
/// due later than this after the driver started is left to the sweep.
pub const TICK_BUDGET_MS: u64 = 120_000;

/// When one invocation stops starting ticks, so that the last one it starts
/// still ends inside the platform's wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriveBudget {
    /// A tick due later than this after the driver started is not started
    /// here: it is handed to a fresh invocation (or left to the sweep).
    pub start_within_ms: u64,
    /// Delays up to this long are waited out in the invocation; longer
    /// ones are left to the sweep.
    pub inline_delay_ms: u64,
}

impl DriveBudget {
    /// A platform without a wall clock per invocation (`spin up` on one's
    /// own machine): two minutes of ticks, 15 s delays waited out.
    pub const UNLIMITED: Self = Self { start_within_ms: TICK_BUDGET_MS, inline_delay_ms: INLINE_DELAY_MS };

    /// Inside a wall clock of `wall_clock_ms` where one tick may take up to
    /// `tick_ms`: a tick is started only while it would still end in time,
    /// and only delays that short are waited out.
    pub fn within(wall_clock_ms: u64, tick_ms: u64) -> Self {
        let start_within_ms = wall_clock_ms.saturating_sub(tick_ms).min(TICK_BUDGET_MS);
        Self { start_within_ms, inline_delay_ms: INLINE_DELAY_MS.min(start_within_ms) }
    }
}

/// The budget of one invocation's ticks on `host` (`cloudflare`, `spin`)
/// under `settings`' platform (`AGENT_ZERO_PLATFORM`).
pub fn drive_budget(settings: &crate::Settings, host: &str) -> DriveBudget {
    match settings.run().ok().and_then(|run| run.wall_clock_on(host)) {
        Some((wall, tick)) => DriveBudget::within(wall, tick),
        None => DriveBudget::UNLIMITED,
    }
}

/// Ticks enqueued during one invocation, each with when it is due.
#[derive(Debug)]
pub struct InvocationQueue<K> {
    clock: K,
    budget: DriveBudget,
    ready: RefCell<Vec<(u64, Tick)>>,
    deferred: RefCell<usize>,
}

impl<K: Clock> InvocationQueue<K> {
    /// An empty queue reading `clock` for due times, without a wall clock.
    pub fn new(clock: K) -> Self {
        Self::within(clock, DriveBudget::UNLIMITED)
    }

    /// An empty queue whose driver keeps inside `budget`.
    pub fn within(clock: K, budget: DriveBudget) -> Self {
        Self { clock, budget, ready: RefCell::default(), deferred: RefCell::default() }
    }

    /// The budget its driver keeps inside.
    pub fn budget(&self) -> DriveBudget {
        self.budget
    }

    /// The tick due first and when it is due, if any (the first enqueued
    /// among equals).
    fn pop(&self) -> Option<(u64, Tick)> {
        let mut ready = self.ready.borrow_mut();
        let next = ready.iter().enumerate().min_by_key(|(i, (due, _))| (*due, *i)).map(|(i, _)| i)?;
        Some(ready.remove(next))
    }

    /// Ticks left for the sweep because their delay was too long to wait.
    pub fn deferred(&self) -> usize {
        *self.deferred.borrow()
    }

    /// Takes every waiting tick, as the body of a hand-off to another
    /// invocation (JSON: `[{"taskId", "expectedSeq", "delayMs", "claimMs"}]`,
    /// each delay counted from now; `claimMs`, the tick's hint for taking
    /// its claim in its first request, when it has one), or `None` when
    /// none waits. A hand-off that fails
    /// loses nothing: each tick's due time is already in its task's
    /// checkpoint, which the sweep re-drives.
    pub fn hand_off(&self) -> Option<Vec<u8>> {
        let now = self.clock.now_ms();
        let ready = std::mem::take(&mut *self.ready.borrow_mut());
        if ready.is_empty() {
            return None;
        }
        let handed: Vec<HandedTick> = ready
            .into_iter()
            .map(|(due, tick)| HandedTick {
                task_id: tick.task_id,
                expected_seq: tick.expected_seq,
                delay_ms: due.saturating_sub(now),
                claim_ms: tick.claim_ms,
            })
            .collect();
        serde_json::to_vec(&handed).ok()
    }

    /// Enqueues the ticks of a hand-off body ([`Self::hand_off`]); how many.
    /// Refuses, enqueuing nothing, a body over [`MAX_HAND_OFF_BYTES`], or
    /// one that is not that JSON, with what was wrong.
    pub async fn take_hand_off(&self, body: &[u8]) -> Result<usize, String> {
        if body.len() > MAX_HAND_OFF_BYTES {
            return Err(format!("a hand-off of {} bytes is over its limit of {MAX_HAND_OFF_BYTES}", body.len()));
        }
        let handed: Vec<HandedTick> =
            agent_zero_codecs::json::from_slice(body).map_err(|e| format!("a hand-off is not its JSON: {e}"))?;
        for one in &handed {
            let tick = Tick { claim_ms: one.claim_ms, ..Tick::new(one.task_id.clone(), one.expected_seq) };
            // This queue's `enqueue` cannot fail.
            let _ = self.enqueue(&tick, one.delay_ms).await;
        }
        Ok(handed.len())
    }
}

/// The largest hand-off body taken: far more ticks than one invocation
/// runs ([`MAX_TICKS_PER_INVOCATION`]) at their longest ids.
pub const MAX_HAND_OFF_BYTES: usize = 64 * 1024;

/// One tick of a hand-off body.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HandedTick {
    task_id: String,
    expected_seq: u64,
    delay_ms: u64,
    /// The tick's claim hint ([`Tick::claim_ms`]): without it the tick
    /// reads, then claims, in two requests instead of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    claim_ms: Option<u64>,
}

impl<K: Clock> Queue for InvocationQueue<K> {
    async fn enqueue(&self, tick: &Tick, delay_ms: u64) -> Result<(), QueueError> {
        if delay_ms <= self.budget.inline_delay_ms {
            let due = self.clock.now_ms().saturating_add(delay_ms);
            self.ready.borrow_mut().push((due, tick.clone()));
        } else {
            *self.deferred.borrow_mut() += 1;
        }
        Ok(())
    }
}

/// What one [`drive`] did, for the host to log.
#[derive(Debug, Default)]
pub struct DriveReport {
    /// Ticks run.
    pub ran: usize,
    /// The task whose tick was left when the budget ran out, or whose
    /// tick rebuilt a long log's checkpoint (one bounded chunk a tick,
    /// [`agent_zero_engine::MAX_FOLD_PER_TICK`]): what is left goes on in a
    /// fresh invocation.
    pub budget_spent: Option<String>,
    /// Ticks that failed (the sweep retries them), with why.
    pub failed: Vec<(String, String)>,
    /// Warnings of the ticks that ran, by task.
    pub warnings: Vec<(String, String)>,
    /// Ticks left to the sweep because their delay was too long to wait.
    pub deferred: usize,
}

/// Runs the queue's ticks in due order with `run`, waiting for each with
/// `sleep` (ms), until it is empty or the budget ([`MAX_TICKS_PER_INVOCATION`],
/// the queue's [`DriveBudget`]) is spent, or a tick rebuilt a long log's
/// checkpoint. A tick `run` enqueues joins the queue. What is left then
/// stays in the queue, for the host to hand to a fresh invocation
/// ([`InvocationQueue::hand_off`]).
pub async fn drive<K: Clock>(
    queue: &InvocationQueue<K>,
    mut sleep: impl FnMut(u64),
    mut run: impl AsyncFnMut(&Tick, u64) -> Result<TickReport, RunTickError>,
) -> DriveReport {
    let mut report = DriveReport::default();
    let started = queue.clock.now_ms();
    while let Some((due, tick)) = queue.pop() {
        if report.ran >= MAX_TICKS_PER_INVOCATION || due.saturating_sub(started) > queue.budget.start_within_ms {
            report.budget_spent = Some(tick.task_id.clone());
            queue.ready.borrow_mut().push((due, tick));
            break;
        }
        let now = queue.clock.now_ms();
        if due > now {
            sleep(due - now);
        }
        report.ran += 1;
        match run(&tick, queue.clock.now_ms()).await {
            Ok(ran) => {
                report.warnings.extend(ran.warnings.into_iter().map(|w| (tick.task_id.clone(), w)));
                // A tick that rebuilt a long log's checkpoint (a bounded
                // chunk of it) spent this invocation's share: the rest goes
                // on in a fresh one.
                if u64::from(ran.stats.entries_folded) >= agent_zero_engine::MAX_FOLD_PER_TICK {
                    report.budget_spent = Some(tick.task_id.clone());
                    break;
                }
            }
            Err(error) => report.failed.push((tick.task_id.clone(), error.to_string())),
        }
    }
    report.deferred = queue.deferred();
    report
}

#[cfg(test)]
mod tests {
    use agent_zero_engine::{TickError, TickOutcome};
    use agent_zero_ports::{ManualClock, block_on};

    use super::*;

    #[test]
    fn queue_delays_round_up_to_seconds_and_stop_at_twelve_hours() {
        assert_eq!(queue_delay_seconds(0), 0);
        assert_eq!(queue_delay_seconds(1), 1, "never before it is due");
        assert_eq!(queue_delay_seconds(1_000), 1);
        assert_eq!(queue_delay_seconds(1_001), 2);
        assert_eq!(queue_delay_seconds(43_200_000), 43_200);
        assert_eq!(queue_delay_seconds(43_200_001), 43_200);
        assert_eq!(queue_delay_seconds(u64::MAX), 43_200);
    }

    #[test]
    fn retries_back_off_with_the_messages_age_from_one_to_sixty_seconds() {
        let sent = 1_000_000;
        assert_eq!(retry_delay_seconds(sent, sent), 1);
        assert_eq!(retry_delay_seconds(sent - 5, sent), 1, "a clock behind the message still waits");
        // Each retry waits as long as the message has existed: 1, 2, 4, ...
        let mut now = sent;
        let mut waits = Vec::new();
        for _ in 0..8 {
            let wait = retry_delay_seconds(now, sent);
            waits.push(wait);
            now += u64::from(wait) * 1_000;
        }
        assert_eq!(waits, [1, 1, 2, 4, 8, 16, 32, 60]);
        assert_eq!(retry_delay_seconds(sent + 86_400_000, sent), 60);
    }

    fn tick(task: &str) -> Tick {
        Tick::new(task, 0)
    }

    fn done() -> Result<TickReport, RunTickError> {
        Ok(TickReport { outcome: TickOutcome::Stale, stats: Default::default(), resident: None, warnings: Vec::new() })
    }

    #[test]
    fn the_driver_runs_due_ticks_in_order_waits_short_delays_and_leaves_long_ones() {
        let clock = ManualClock::new(10_000);
        let queue = InvocationQueue::new(&clock);
        block_on(queue.enqueue(&tick("b"), 2_000)).unwrap();
        block_on(queue.enqueue(&tick("a"), 0)).unwrap();
        block_on(queue.enqueue(&tick("late"), INLINE_DELAY_MS + 1)).unwrap();
        let slept = RefCell::new(Vec::new());
        let ran = RefCell::new(Vec::new());
        let report = block_on(drive(
            &queue,
            |ms| {
                slept.borrow_mut().push(ms);
                clock.advance(ms);
            },
            async |tick: &Tick, now: u64| {
                ran.borrow_mut().push((tick.task_id.clone(), now));
                if tick.task_id == "a" {
                    // A tick enqueues its successor, which joins the queue.
                    queue.enqueue(&Tick::new("a2", 1), 500).await.unwrap();
                }
                if tick.task_id == "b" {
                    return Err(RunTickError::Tick(TickError::UnknownTask("b".into())));
                }
                done()
            },
        ));
        assert_eq!(
            ran.into_inner(),
            [("a".to_owned(), 10_000), ("a2".to_owned(), 10_500), ("b".to_owned(), 12_000)],
            "due order; each at its due time"
        );
        assert_eq!(slept.into_inner(), [500, 1_500]);
        assert_eq!((report.ran, report.deferred, report.budget_spent), (3, 1, None));
        assert_eq!(report.failed.len(), 1);
        assert_eq!(report.failed[0].0, "b");
    }

    #[test]
    fn a_hand_off_carries_the_waiting_ticks_with_their_delays_to_another_queue() {
        let clock = ManualClock::new(50_000);
        let front = InvocationQueue::new(&clock);
        assert_eq!(front.hand_off(), None, "nothing waits: nothing to hand off");
        block_on(front.enqueue(&Tick::new("t1", 4), 0)).unwrap();
        let hinted = Tick { claim_ms: Some(90_000), ..Tick::new("t2", 9) };
        block_on(front.enqueue(&hinted, 3_000)).unwrap();
        block_on(front.enqueue(&tick("later"), INLINE_DELAY_MS + 1)).unwrap();
        clock.advance(1_000);
        let body = front.hand_off().expect("two ticks wait");
        assert_eq!(
            String::from_utf8(body.clone()).unwrap(),
            r#"[{"taskId":"t1","expectedSeq":4,"delayMs":0},{"taskId":"t2","expectedSeq":9,"delayMs":2000,"claimMs":90000}]"#,
            "a delay counts from the hand-off; the long one stays with the sweep; a claim hint goes along"
        );
        assert_eq!(front.hand_off(), None, "handed off once");

        let ticks = InvocationQueue::new(&clock);
        assert_eq!(block_on(ticks.take_hand_off(&body)), Ok(2));
        assert_eq!(ticks.pop(), Some((51_000, Tick::new("t1", 4))));
        assert_eq!(ticks.pop(), Some((53_000, hinted)), "with its claim hint");
        assert_eq!(ticks.pop(), None);
    }

    #[test]
    fn a_hand_off_that_is_not_its_json_or_too_large_enqueues_nothing() {
        let clock = ManualClock::new(0);
        let queue = InvocationQueue::new(&clock);
        for (body, says) in [
            (&b"{}"[..], "not its JSON"),
            (br#"[{"taskId":"a","expectedSeq":1,"delayMs":0},{"taskId":"b"}]"#, "expectedSeq"),
            (br#"[{"taskId":"a","expectedSeq":1,"delayMs":0,"run":"rm -rf /"}]"#, "unknown field `run`"),
            (br#"[{"taskId":"a","expectedSeq":-1,"delayMs":0}]"#, "not its JSON"),
        ] {
            let error = block_on(queue.take_hand_off(body)).unwrap_err();
            assert!(error.contains(says), "{error:?} should say {says:?}");
            assert_eq!(queue.pop(), None, "nothing enqueued from {body:?}");
        }
        let large = vec![b' '; MAX_HAND_OFF_BYTES + 1];
        let error = block_on(queue.take_hand_off(&large)).unwrap_err();
        assert!(error.contains("over its limit of 65536"), "{error}");
    }

    #[test]
    fn the_driver_stops_at_its_tick_and_time_budgets() {
        let clock = ManualClock::new(0);
        let queue = InvocationQueue::new(&clock);
        block_on(queue.enqueue(&tick("loop"), 0)).unwrap();
        let report = block_on(drive(
            &queue,
            |ms| clock.advance(ms),
            async |tick: &Tick, _| {
                // A runaway task re-enqueues itself at once.
                queue.enqueue(tick, 0).await.unwrap();
                done()
            },
        ));
        assert_eq!((report.ran, report.budget_spent.as_deref()), (MAX_TICKS_PER_INVOCATION, Some("loop")));

        let clock = ManualClock::new(0);
        let queue = InvocationQueue::new(&clock);
        block_on(queue.enqueue(&tick("slow"), 0)).unwrap();
        let report = block_on(drive(
            &queue,
            |ms| clock.advance(ms),
            async |tick: &Tick, _| {
                // Each tick backs off 10 s: past 120 s the sweep takes over.
                queue.enqueue(tick, 10_000).await.unwrap();
                done()
            },
        ));
        assert_eq!(report.ran, 13, "ticks due at 0, 10 s, ..., 120 s");
        assert_eq!(report.budget_spent.as_deref(), Some("slow"));
        assert!(queue.hand_off().is_some(), "the tick it did not start is left to hand off");
    }

    /// A tick that rebuilt one chunk of a long log's checkpoint ends the
    /// invocation's driving: the rest of the rebuild, and every other tick
    /// waiting, goes on in a fresh invocation, so no invocation folds a
    /// whole long log.
    #[test]
    fn a_chunk_of_a_checkpoints_rebuild_ends_the_invocation() {
        let clock = ManualClock::new(0);
        let queue = InvocationQueue::new(&clock);
        block_on(queue.enqueue(&tick("cold"), 0)).unwrap();
        block_on(queue.enqueue(&tick("other"), 0)).unwrap();
        let report = block_on(drive(
            &queue,
            |ms| clock.advance(ms),
            async |tick: &Tick, _| {
                queue.enqueue(tick, 0).await.unwrap();
                let folded = u32::try_from(agent_zero_engine::MAX_FOLD_PER_TICK).unwrap();
                let stats = agent_zero_engine::TickStats { entries_folded: folded, ..Default::default() };
                let outcome = TickOutcome::Continue { next: tick.clone(), delay_ms: 0 };
                Ok(TickReport { outcome, stats, resident: None, warnings: Vec::new() })
            },
        ));
        assert_eq!((report.ran, report.budget_spent.as_deref()), (1, Some("cold")));
        let body = String::from_utf8(queue.hand_off().expect("the rest is handed off")).unwrap();
        assert!(body.contains(r#""taskId":"cold""#) && body.contains(r#""taskId":"other""#), "{body}");
    }

    /// Inside a 30 s wall clock where a tick may take 25 s, ticks start only
    /// in the first 5 s and only 5 s delays are waited out: the last tick
    /// started ends by 30 s, and what is left is handed off.
    #[test]
    fn inside_a_wall_clock_no_tick_starts_that_could_end_past_it() {
        let budget = DriveBudget::within(30_000, 25_000);
        assert_eq!(budget, DriveBudget { start_within_ms: 5_000, inline_delay_ms: 5_000 });
        assert_eq!(DriveBudget::within(900_000, 750_000).start_within_ms, TICK_BUDGET_MS);
        assert_eq!(DriveBudget::within(10_000, 25_000).start_within_ms, 0, "a tick longer than the wall clock");

        let clock = ManualClock::new(0);
        let queue = InvocationQueue::within(&clock, budget);
        block_on(queue.enqueue(&tick("backoff"), 5_001)).unwrap();
        assert_eq!(queue.deferred(), 1, "a delay longer than the start window goes to the sweep");
        block_on(queue.enqueue(&tick("poll"), 0)).unwrap();
        let mut ends = Vec::new();
        let report = block_on(drive(
            &queue,
            |ms| clock.advance(ms),
            async |tick: &Tick, now: u64| {
                // Each tick takes 2 s (and may take up to 25 s), then polls again in 2 s.
                clock.advance(2_000);
                ends.push(now + 25_000);
                queue.enqueue(tick, 2_000).await.unwrap();
                done()
            },
        ));
        assert_eq!(report.ran, 2, "started at 0 s and 4 s; the one due at 8 s is not");
        assert!(ends.iter().all(|end| *end <= 30_000), "{ends:?}");
        assert_eq!(report.budget_spent.as_deref(), Some("poll"));
        let body = String::from_utf8(queue.hand_off().expect("the poll is handed off")).unwrap();
        assert!(body.contains(r#""taskId":"poll""#), "{body}");
    }
}
