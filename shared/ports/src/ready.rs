//! Driving a future that never suspends.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// Runs `future` to completion with a single poll, for code whose every
/// await completes at once: the in-memory ports here, and blocking HTTP
/// adapters in tests and native tools. Panics if the future suspends —
/// that means a port that needs a real executor (the hosts have theirs).
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => {
            panic!("block_on: the future suspended; only ports that answer at once can be driven this way")
        }
    }
}
