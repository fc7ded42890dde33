//! End-to-end suite: every case runs against the worker in workerd and the
//! Spin component in the Spin host. Own harness (no libtest): the hosts are
//! started once per configuration and stopped at the end.
//!
//! Runs only with `AGENT_ZERO_E2E=1` (tests/scripts/test.sh sets it after
//! building the artefacts); `cargo test` alone reports it as skipped.
//! Name filters may be passed as arguments: a case runs when its name
//! contains any of them.

mod cases;

use std::panic::AssertUnwindSafe;

use agent_zero_e2e::Runtime;

/// Cases a runtime cannot run, with why; reported as ignored, never as passed.
const UNSUPPORTED: &[(Runtime, &str, &str)] = &[(
    Runtime::Workerd,
    "on_spin_s_key_value_store_copies_and_racing_decisions_act_once",
    "the store is a choice on Spin only (agent_zero_store)",
)];

/// A case: a name and a function that panics on failure.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) run: fn(Runtime),
}

fn main() {
    if std::env::var("AGENT_ZERO_E2E").as_deref() != Ok("1") {
        println!("e2e: skipped (set AGENT_ZERO_E2E=1 after building; tests/scripts/test.sh does)");
        println!("test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
        return;
    }
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let only: Option<Runtime> = match std::env::var("AGENT_ZERO_E2E_RUNTIME").as_deref() {
        Ok("workerd") => Some(Runtime::Workerd),
        Ok("spin") => Some(Runtime::Spin),
        _ => None,
    };
    let (mut passed, mut failed, mut filtered, mut ignored) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for runtime in Runtime::ALL.into_iter().filter(|r| only.is_none_or(|o| o == *r)) {
        for case in cases::all() {
            let name = format!("{}::{}", runtime.name(), case.name);
            if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
                filtered += 1;
                continue;
            }
            if let Some((_, _, why)) = UNSUPPORTED.iter().find(|(r, n, _)| *r == runtime && *n == case.name) {
                ignored += 1;
                println!("test {name} ... ignored ({why})");
                continue;
            }
            let started = std::time::Instant::now();
            match std::panic::catch_unwind(AssertUnwindSafe(|| (case.run)(runtime))) {
                Ok(()) => {
                    passed += 1;
                    println!("test {name} ... ok ({:.1}s)", started.elapsed().as_secs_f64());
                }
                Err(panic) => {
                    failed += 1;
                    let message = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_default();
                    println!("test {name} ... FAILED");
                    failures.push((name, message));
                }
            }
        }
    }
    for (name, message) in &failures {
        println!("\n---- {name} ----\n{message}");
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {passed} passed; {failed} failed; {ignored} ignored; 0 measured; {filtered} filtered out"
    );
    if failed > 0 {
        std::process::exit(101);
    }
}
