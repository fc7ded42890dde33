//! The clock of the Spin component.
//!
//! Spin has no queue. Ticks enqueued while handling a request are kept in
//! this invocation (`agent_zero_app::hosting::InvocationQueue`) and run
//! after the response has been sent (the component keeps running until its
//! handler returns), within a budget. Whatever remains — delayed ticks, an
//! exhausted budget, a crash — is already recorded as a due time in the
//! task's checkpoint (the task named under `active/`), and the sweep (`POST /api/v1/sweep`, called by a
//! scheduler) re-drives it.

use agent_zero_ports::Clock;

/// The wall clock (`wasi:clocks/wall-clock`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }
}
