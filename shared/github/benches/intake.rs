//! The native physical floor of webhook intake: what the worker's handler
//! must do for a signed ~25 KB `pull_request` delivery (HMAC-SHA256 over the
//! raw body, then `parse_delivery`), on the host CPU, with no runtime around
//! it. `tests/bench/run.sh` prints it beside the workers' CPU per request.
//!
//! Run: `cargo bench -p agent-zero-github --bench intake`. The payload is
//! the file named by `AGENT_ZERO_BENCH_PAYLOAD` (run.sh passes the exact
//! bytes it sends the workers); without it, the `closed` fixture padded to
//! 25,600 bytes the same way. Each figure is the median over many samples,
//! each sample timing a batch of iterations. Built with the bench profile,
//! which inherits `release` (opt-level "z", sha2/hmac at 3), like the wasm.

use std::hint::black_box;
use std::time::{Duration, Instant};

use agent_zero_github::signature::sign;
use agent_zero_github::{Intake, IntakeOptions, parse_delivery, verify};

const SECRET: &[u8] = b"bench-webhook-secret";
const TARGET_BYTES: usize = 25 * 1024;
const SAMPLES: usize = 201;
const SAMPLE_TIME: Duration = Duration::from_millis(10);

fn main() {
    let body = payload();
    let signature = sign(SECRET, &body);
    let options = IntakeOptions::default();
    let delivery = "bench-00000000-0000-0000-0000-000000000000";

    // The handler's outcome for this delivery, checked once, so the figures
    // are for the path the workers take (verified, then ignored).
    verify(SECRET, Some(&signature), &body).expect("the bench signature verifies");
    let outcome = parse_delivery("pull_request", delivery, &body, &options).expect("the payload parses");
    assert!(matches!(outcome, Intake::Ignored { .. }), "a `closed` delivery is ignored, got {outcome:?}");
    // `cargo test --all-targets` runs this without `--bench`: the check above is the test.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("intake bench: payload checked; run `cargo bench` to measure");
        return;
    }

    println!("native intake floor, {} byte body, median of {SAMPLES} samples:", body.len());
    let verify_ns =
        measure("verify (HMAC-SHA256)", || verify(SECRET, Some(black_box(&signature)), black_box(&body)).is_ok());
    let parse_ns =
        measure("parse_delivery", || parse_delivery("pull_request", delivery, black_box(&body), &options).is_ok());
    let floor_ns = measure("verify + parse_delivery", || {
        verify(SECRET, Some(black_box(&signature)), black_box(&body)).is_ok()
            && parse_delivery("pull_request", delivery, black_box(&body), &options).is_ok()
    });
    let value_ns = measure("serde_json::Value parse (like JSON.parse)", || {
        serde_json::from_slice::<serde_json::Value>(black_box(&body)).is_ok()
    });
    let throughput = body.len() as f64 / verify_ns;
    println!("HMAC-SHA256 throughput: {throughput:.2} bytes/ns ({:.0} MB/s)", throughput * 1e3);
    println!(
        "BENCH native verify_ns={verify_ns:.0} parse_ns={parse_ns:.0} floor_ns={floor_ns:.0} value_parse_ns={value_ns:.0} bytes={}",
        body.len()
    );
}

/// Median time of one call of `f`, in nanoseconds.
fn measure(name: &str, mut f: impl FnMut() -> bool) -> f64 {
    // Warm up and size a batch so one sample takes about SAMPLE_TIME.
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < Duration::from_millis(200) {
        assert!(black_box(f()), "{name}: the measured call failed");
        calls += 1;
    }
    let per_call = start.elapsed().as_secs_f64() / calls as f64;
    let batch = ((SAMPLE_TIME.as_secs_f64() / per_call) as u64).max(1);

    let mut samples: Vec<f64> = (0..SAMPLES)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                black_box(f());
            }
            start.elapsed().as_nanos() as f64 / batch as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    let median = samples[SAMPLES / 2];
    let (low, high) = (samples[SAMPLES / 10], samples[SAMPLES * 9 / 10]);
    println!("  {name:<44} {:>10.2} µs   (p10 {:.2}, p90 {:.2})", median / 1e3, low / 1e3, high / 1e3);
    median
}

/// The delivery body: `AGENT_ZERO_BENCH_PAYLOAD`, or the padded fixture.
fn payload() -> Vec<u8> {
    if let Some(path) = std::env::var_os("AGENT_ZERO_BENCH_PAYLOAD") {
        return std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.to_string_lossy()));
    }
    let fixture =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/github-webhooks/pull_request/closed.payload.json");
    let text = std::fs::read(fixture).unwrap_or_else(|e| panic!("reading {fixture}: {e}"));
    let mut value: serde_json::Value = serde_json::from_slice(&text).expect("the fixture is JSON");
    let compact = serde_json::to_vec(&value).expect("serializable").len();
    let missing = TARGET_BYTES.checked_sub(compact).expect("the fixture is under the target size");
    let body = value["pull_request"]["body"].as_str().unwrap_or_default().to_owned();
    let sentence = "This change needs a careful look at the intake path and its tests. ";
    let padding: String = sentence.chars().cycle().take(missing.saturating_sub(1)).collect();
    value["pull_request"]["body"] = format!("{body} {padding}").into();
    serde_json::to_vec(&value).expect("serializable")
}
