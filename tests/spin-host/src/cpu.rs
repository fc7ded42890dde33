//! CPU time of an invocation, for the benchmarks (`--report-cpu`): the
//! thread CPU time (`CLOCK_THREAD_CPUTIME_ID`, user and system) spent inside
//! each poll of a future, added up whichever runtime thread polls it. Time
//! spent waiting (outbound requests, sleeps) is not counted; the guest's own
//! code and the host calls it makes synchronously (key-value, WASI) are.
//! Of that, the store's own work (what `kv` does holding its lock: the
//! files of each key) is counted apart, so the guest's share can be told
//! from this host's store, which a platform replaces with its own.
//! SQLite statements run on tokio's blocking pool (`sqlite`): their thread's
//! CPU time is counted too, as store work, in the poll that takes their
//! answer ([`store_work_elsewhere`]).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

thread_local! {
    /// Store work done on this thread so far (ns) and how many operations.
    static STORE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    /// CPU time spent on other threads for what ran on this one (ns).
    static ELSEWHERE: Cell<u64> = const { Cell::new(0) };
}

/// Counts one store operation that started at `started` (thread CPU ns).
pub(crate) fn store_work(started: u64) {
    let spent = thread_cpu_ns().saturating_sub(started);
    STORE.with(|s| {
        let (ns, ops) = s.get();
        s.set((ns + spent, ops + 1));
    });
}

/// Counts one store operation run on another thread, which spent `spent`
/// ns of its CPU time on it, as if this thread had.
pub(crate) fn store_work_elsewhere(spent: u64) {
    STORE.with(|s| {
        let (ns, ops) = s.get();
        s.set((ns + spent, ops + 1));
    });
    ELSEWHERE.with(|e| e.set(e.get() + spent));
}

/// CPU time counted so far (ns): all of it, and the store's work in it
/// with its operations.
#[derive(Debug, Default)]
pub(crate) struct Spent {
    all: AtomicU64,
    store: AtomicU64,
    store_ops: AtomicU64,
}

impl Spent {
    pub(crate) fn micros(&self) -> u64 {
        self.all.load(Ordering::Relaxed) / 1_000
    }

    pub(crate) fn store_micros(&self) -> u64 {
        self.store.load(Ordering::Relaxed) / 1_000
    }

    pub(crate) fn store_ops(&self) -> u64 {
        self.store_ops.load(Ordering::Relaxed)
    }
}

/// The calling thread's CPU time in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec for the call's duration.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } == 0;
    if !ok {
        return 0;
    }
    u64::try_from(now.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(now.tv_nsec).unwrap_or(0)
}

/// Runs `fut`, adding the CPU time of each of its polls to `spent`.
pub(crate) async fn timed<F: Future>(spent: &Spent, fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        let (store_ns, store_ops) = STORE.with(Cell::get);
        let elsewhere = ELSEWHERE.with(Cell::get);
        let started = thread_cpu_ns();
        let polled = fut.as_mut().poll(cx);
        let here = thread_cpu_ns().saturating_sub(started);
        spent.all.fetch_add(here + (ELSEWHERE.with(Cell::get) - elsewhere), Ordering::Relaxed);
        let (ns, ops) = STORE.with(Cell::get);
        spent.store.fetch_add(ns - store_ns, Ordering::Relaxed);
        spent.store_ops.fetch_add(ops - store_ops, Ordering::Relaxed);
        polled
    })
    .await
}
