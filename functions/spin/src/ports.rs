//! The clock, the tick driver and the lease coordinator of the Spin
//! component.
//!
//! Spin has no queue. Ticks enqueued while handling a request are kept in
//! this invocation ([`InvocationQueue`]) and run after the response has been
//! sent (the component keeps running until its handler returns), within a
//! budget. Whatever remains — delayed ticks, an exhausted budget, a crash —
//! is already recorded as a pending marker in the task log, and the sweep
//! (`POST /api/v1/sweep`, called by a scheduler) re-drives it.

use std::cell::RefCell;
use std::collections::VecDeque;

use agent_zero_app::{Queue, QueueError, Tick};
use agent_zero_ports::Clock;

/// The wall clock (`wasi:clocks/wall-clock`).
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }
}

/// Ticks enqueued during this invocation, run after the response, each
/// when it is due.
#[derive(Default)]
pub(crate) struct InvocationQueue {
    ready: RefCell<VecDeque<(u64, Tick)>>,
    deferred: RefCell<usize>,
}

/// Delays up to this long are waited out in the invocation (a backoff after
/// a sandbox or model error); longer ones are left to the sweep.
const INLINE_DELAY_MS: u64 = 15_000;

impl InvocationQueue {
    /// The next tick and when it is due (ms since the epoch), if any.
    pub(crate) fn pop(&self) -> Option<(u64, Tick)> {
        let mut ready = self.ready.borrow_mut();
        let next = ready.iter().enumerate().min_by_key(|(_, (due, _))| *due).map(|(i, _)| i)?;
        ready.remove(next)
    }

    /// Ticks left for the sweep (delayed too long).
    pub(crate) fn deferred(&self) -> usize {
        *self.deferred.borrow()
    }
}

impl Queue for InvocationQueue {
    async fn enqueue(&self, tick: &Tick, delay_ms: u64) -> Result<(), QueueError> {
        if delay_ms <= INLINE_DELAY_MS {
            let due = SystemClock.now_ms() + delay_ms;
            self.ready.borrow_mut().push_back((due, tick.clone()));
        } else {
            *self.deferred.borrow_mut() += 1;
        }
        Ok(())
    }
}
