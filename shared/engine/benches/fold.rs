//! Folds and renders a 1,000-entry task log, as a tick and the task API do,
//! and prints medians: `cargo bench -p agent-zero-engine --bench fold`.
//!
//! The log is a real one, written by the engine through the test harness: a
//! webhook delivery whose policy gate could not reach GitHub 960 times (an
//! outage of days, each retry one entry), then admitted, and a fix run to a
//! verified conclusion. Each round decodes the stored entries (the JSON the
//! store holds), folds them with the engine's fold, rebuilds the conclusion
//! (`replay`, as the CLI does) and renders the evidence as JSON, Markdown and
//! HTML.

#[path = "../tests/harness/mod.rs"]
mod harness;

use std::hint::black_box;
use std::time::{Duration, Instant};

use agent_zero_contracts::RunMode;
use agent_zero_engine::log::{read_log, replay};
use agent_zero_engine::{Admission, AdmitError, Entry, fold};
use agent_zero_evidence::{RenderOptions, render_evidence_html, render_json, render_markdown_document};
use harness::*;

/// Admission retries before the gate admits the delivery.
const OUTAGE_RETRIES: usize = 960;
const ROUNDS: usize = 200;

fn log() -> Vec<Entry> {
    let mut h = Harness::new();
    // The outage lasts longer than the default 24 h admission bound.
    h.limits.admission_ms = u64::MAX / 4;
    let id = "gh-bench-1000";
    for _ in 0..OUTAGE_RETRIES {
        h.publisher.admissions.borrow_mut().push_back(Err(AdmitError::Unavailable("GitHub: 503".into())));
    }
    let admitted = stimulus(id, RunMode::Fix, policy(FIX_POLICY));
    h.publisher.admissions.borrow_mut().push_back(Ok(Admission::Admitted(Box::new(admitted))));
    h.decider.push(decision(claim()));
    h.receive(received(id));
    // `Harness::drive` stops at 500 deliveries; this log needs more.
    while let Some((tick, delay)) = { h.queue.messages.borrow_mut().pop_front() } {
        h.clock.advance(delay);
        h.tick(&tick).expect("tick");
    }
    block_on(read_log(&h.kv, id)).expect("read").expect("exists")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time(rounds: usize, mut f: impl FnMut()) -> Duration {
    let samples = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    median(samples)
}

fn main() {
    let entries = log();
    let stored: Vec<Vec<u8>> = entries.iter().map(|e| serde_json::to_vec(e).expect("serialises")).collect();
    let bytes: usize = stored.iter().map(Vec::len).sum();
    let concluded = replay(&entries).expect("folds").recorded.expect("the run concluded");
    assert!(concluded.1.verified, "the benchmark's run ends verified");
    let options = RenderOptions::default();

    let decode = time(ROUNDS, || {
        let decoded: Vec<Entry> = stored.iter().map(|b| serde_json::from_slice(b).expect("decodes")).collect();
        black_box(decoded);
    });
    let folded = time(ROUNDS, || {
        black_box(fold(black_box(&entries)).expect("folds"));
    });
    let replayed = time(ROUNDS, || {
        black_box(replay(black_box(&entries)).expect("folds"));
    });
    let bundle = &concluded.1;
    let render = time(ROUNDS, || {
        black_box(render_json(bundle, &options));
        black_box(render_markdown_document(bundle, &options));
        black_box(render_evidence_html(bundle, &options));
    });
    let total = time(ROUNDS, || {
        let decoded: Vec<Entry> = stored.iter().map(|b| serde_json::from_slice(b).expect("decodes")).collect();
        let replayed = replay(&decoded).expect("folds");
        let bundle = &replayed.recorded.expect("concluded").1;
        black_box((
            render_json(bundle, &options),
            render_markdown_document(bundle, &options),
            render_evidence_html(bundle, &options),
        ));
    });
    println!("task log: {} entries, {bytes} bytes stored; medians of {ROUNDS} rounds", entries.len());
    println!("  decode entries        {decode:>10.3?}");
    println!("  fold                  {folded:>10.3?}");
    println!("  replay (fold+rebuild) {replayed:>10.3?}");
    println!("  render json+md+html   {render:>10.3?}");
    println!("  decode+replay+render  {total:>10.3?}");
}
