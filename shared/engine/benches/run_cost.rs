//! What each run shape costs at the engine's port, by operation and by the
//! store it lands in on Cloudflare, with the ratio to the floor:
//! `cargo bench -p agent-zero-engine --bench run_cost` (markdown on stdout;
//! tests/bench/cost.sh puts it in its report, docs/cost.md explains it).
//!
//! The runs are the harness's (tests/harness, as admission.rs and
//! lifecycle.rs drive them): scripted model and sandbox, in-memory store.
//! Each tick's operations are the engine's own count ([`TickStats`], which
//! `per_tick_cost_is_bounded` asserts); the store each key goes to is read
//! from the key as the worker's port routes it (`task/{id}/...` to the
//! task's Durable Object, anything else to Workers KV:
//! functions/cloudflare/src/kv.rs); on Spin both are its one key-value
//! store. Not counted here: what the app adds around each tick (the listing
//! index, the cost record, retention, sandbox leases, intake's delivery
//! record): see the end-to-end figure in docs/cost.md.
//!
//! The floor is one write per log entry appended plus the claim of each
//! acting tick: what exactly-once needs at the least.

#[path = "../tests/harness/mod.rs"]
mod harness;

use agent_zero_contracts::RunMode;
use agent_zero_engine::{Admission, AdmitError, Engine, Ports, TickOutcome, TickStats};
use agent_zero_ports::CountingKv;
use harness::*;

/// The two stores a Cloudflare deployment splits keys between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Backend {
    DurableObject,
    WorkersKv,
}

/// As `task_of` in functions/cloudflare/src/kv.rs: `task/{id}/...`.
fn backend(key: &str) -> Backend {
    let task = key.strip_prefix("task/").and_then(|rest| rest.split_once('/')).is_some_and(|(id, _)| !id.is_empty());
    if task { Backend::DurableObject } else { Backend::WorkersKv }
}

/// Each operation by kind and store, over a [`CountingKv`].
struct ByStore(CountingKv);

impl ByStore {
    fn new(spin: bool) -> Self {
        Self(if spin { CountingKv::without_transactions() } else { CountingKv::new() })
    }
    fn of(&self, store: Backend, kinds: &[&str]) -> u32 {
        let operations = self.0.operations();
        operations.iter().filter(|(key, kind)| backend(key) == store && kinds.contains(kind)).count() as u32
    }
    fn keys(&self, prefix: &str) -> usize {
        self.0.inner().snapshot().keys().filter(|k| k.starts_with(prefix)).count()
    }
}

/// One run, from its delivery (or creation) until the queue is quiet.
struct Shape {
    name: &'static str,
    ticks: u32,
    stats: TickStats,
    store: ByStore,
    id: String,
    outcome: Option<TickOutcome>,
}

fn admitted(id: &str, mode: RunMode) -> Result<Admission, AdmitError> {
    Ok(Admission::Admitted(Box::new(stimulus(id, mode, policy(FIX_POLICY)))))
}

/// Runs a delivery through the gate (`gate`) and the run it starts, with
/// `script` setting the model's answers and the checks' exit codes.
fn run(spin: bool, name: &'static str, gate: Result<Admission, AdmitError>, script: impl FnOnce(&Harness)) -> Shape {
    let h = Harness::new();
    let id = format!("gh-{}", name.replace(' ', "-").replace(',', ""));
    let gate = match gate {
        Ok(Admission::Admitted(mut s)) => {
            s.task_id = id.clone();
            Ok(Admission::Admitted(s))
        }
        other => other,
    };
    h.publisher.admissions.borrow_mut().push_back(gate);
    script(&h);
    let store = ByStore::new(spin);
    let engine = Engine {
        kv: &store.0,
        ports: Ports { decider: &h.decider, workspace: &h.workspace, publisher: &h.publisher },
        queue: &h.queue,
        limits: h.limits,
    };
    block_on(agent_zero_engine::receive(&store.0, &h.queue, received(&id), START_MS)).expect("receive");
    let (mut ticks, mut stats, mut outcome) = (0, TickStats::default(), None);
    while let Some((tick, delay)) = { h.queue.messages.borrow_mut().pop_front() } {
        h.clock.advance(delay + h.tick_cost_ms);
        let report = block_on(engine.tick(&tick, agent_zero_ports::Clock::now_ms(&h.clock))).expect("tick");
        ticks += 1;
        for (sum, add) in [
            (&mut stats.kv_reads, report.stats.kv_reads),
            (&mut stats.kv_writes, report.stats.kv_writes),
            (&mut stats.kv_deletes, report.stats.kv_deletes),
            (&mut stats.kv_lists, report.stats.kv_lists),
            (&mut stats.model_calls, report.stats.model_calls),
            (&mut stats.sandbox_calls, report.stats.sandbox_calls),
            (&mut stats.publications, report.stats.publications),
            (&mut stats.enqueues, report.stats.enqueues),
        ] {
            *sum += add;
        }
        outcome = Some(report.outcome);
        assert!(ticks < 500, "{name}: the run did not go quiet");
    }
    Shape { name, ticks, stats, store, id, outcome }
}

fn shapes(spin: bool) -> [Shape; 4] {
    [
        run(
            spin,
            "ignored delivery",
            Ok(Admission::Declined { reason: "issues-disabled".into(), message: "issues.enabled is false".into() }),
            |_| {},
        ),
        // A review: the finding is validated and reported, nothing is written.
        run(spin, "review", admitted("", RunMode::Observe), |h| h.decider.push(decision(claim()))),
        run(spin, "fix", admitted("", RunMode::Fix), |h| h.decider.push(decision(claim()))),
        run(spin, "fix, one repair", admitted("", RunMode::Fix), |h| {
            h.workspace.exits.borrow_mut().extend([1, 0]);
            h.decider.push(decision(claim()));
            h.decider.push(decision(claim()));
        }),
    ]
}

fn main() {
    // Batches (`get_many`) and transactions (`transact`, and
    // `read_and_transact`: a tick's read with its claim) are one request each.
    let kinds = ["get", "get_many", "put", "delete", "list", "insert", "cas", "transact", "read_and_transact"];
    println!(
        "Cloudflare (a task's Durable Object answers a tick's read with its claim, and its commit, in one request each):\n"
    );
    println!(
        "| run (engine port) | ends | ticks | entries | claims | Durable Object get/get_many/put/delete/list/insert/cas/transact/read+claim | Workers KV get/put/delete/list | storage ops (intake + ticks) | subrequests | ops per entry | × floor |"
    );
    println!("|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|");
    for s in &shapes(false) {
        row(s, &kinds, |b: Backend| {
            let per = kinds.iter().map(|k| s.store.of(b, &[k]).to_string()).collect::<Vec<_>>();
            match b {
                Backend::DurableObject => per.join("/"),
                Backend::WorkersKv => [0, 2, 3, 4].map(|i| per[i].clone()).join("/"),
            }
        });
    }
    println!(
        "\nSpin's SQLite store (the default) runs the Durable Object's protocol above: a read with its claim, and a commit, one statement each. Spin's key-value store (`agent_zero_store = key-value`: reads in one `get-many`, conditional writes key by key, no multi-key transaction; the checkpoint written after the entry):\n"
    );
    println!(
        "| run (engine port) | ends | ticks | entries | claims | get/get_many/put/delete/list/insert/cas | storage ops (intake + ticks) | subrequests | ops per entry | × floor |"
    );
    println!("|---|---|---:|---:|---:|---|---:|---:|---:|---:|");
    for s in &shapes(true) {
        row(s, &kinds, |_| {
            ["get", "get_many", "put", "delete", "list", "insert", "cas"]
                .map(|k| (s.store.of(Backend::DurableObject, &[k]) + s.store.of(Backend::WorkersKv, &[k])).to_string())
                .join("/")
        });
    }
}

/// One table row of `s`; `columns` renders the per-kind counts for a store
/// (the Spin table asks once, for its one store).
fn row(s: &Shape, kinds: &[&str], columns: impl Fn(Backend) -> String) {
    let entries = s.store.keys(&format!("task/{}/log/", s.id));
    let claims = s.store.keys(&format!("task/{}/claim/", s.id));
    let total: u32 = [Backend::DurableObject, Backend::WorkersKv].iter().map(|b| s.store.of(*b, kinds)).sum();
    // The engine's own count of its ticks; the rest is the delivery's record.
    let intake = total.checked_sub(s.stats.kv_operations()).expect("the ticks' count is within the store's");
    let floor = entries + claims;
    let ends = match &s.outcome {
        Some(TickOutcome::Terminal(state)) => state.to_string(),
        other => format!("{other:?}"),
    };
    let (first, second) = (columns(Backend::DurableObject), columns(Backend::WorkersKv));
    let stores = if first == second { first } else { format!("{first} | {second}") };
    println!(
        "| {} | {ends} | {} | {entries} | {claims} | {stores} | {total} ({intake} + {}) | {} | {:.1} | {:.1} |",
        s.name,
        s.ticks,
        s.stats.kv_operations(),
        s.stats.subrequests(),
        f64::from(total) / entries as f64,
        f64::from(total) / floor as f64,
    );
}
