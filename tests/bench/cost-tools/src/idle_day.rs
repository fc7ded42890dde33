//! `idle-day [--sweeps-per-day N]`: what the sweep of an idle deployment
//! (no task, no lease, nothing to retain) costs each store, once and over a
//! day, through the app's own `agent_zero_app::sweep` (what the Cloudflare
//! cron runs, and `POST /api/v1/sweep` on Spin), counted at the key-value
//! and lease ports. Prints markdown.
//!
//! Cloudflare: the key-value port is Workers KV for every key the sweep
//! touches (the `pending/` and `retention/` indexes span tasks), leases are
//! the `LeaseCoordinator` Durable Object; sweeps a day from the front
//! worker's cron (`--sweeps-per-day`, tests/bench/cost.sh reads
//! wrangler.toml). Spin: one store, leases in it (`KvCoordinator`), swept
//! by a scheduler calling the route (every minute, as README advises on a
//! 30 s platform).

use std::cell::RefCell;

use agent_zero_app::{Host, Settings};
use agent_zero_engine::{Queue, QueueError, Tick};
use agent_zero_ports::{CountingKv, HttpClient, HttpError, ManualClock, block_on};
use agent_zero_runner::{Coordinator, CountingCoordinator, KvCoordinator};

/// What the sweep's operations count as on a bill: reads, writes (an
/// insert or a swap is a write), deletes and lists.
fn billed(kv: &CountingKv, kind: &str) -> u64 {
    fn as_billed(op: &'static str) -> &'static str {
        match op {
            "get" | "get_many" => "read",
            "put" | "insert" | "cas" => "write",
            other => other,
        }
    }
    kv.operations().iter().filter(|(_, op)| as_billed(op) == kind).count() as u64
}

/// Any outbound request would be a subrequest: an idle sweep makes none.
#[derive(Debug, Default)]
struct NoNetwork(RefCell<u64>);

impl HttpClient for NoNetwork {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        *self.0.borrow_mut() += 1;
        Err(HttpError::NotAllowed(request.uri().to_string()))
    }
}

#[derive(Debug, Default)]
struct NoQueue;

impl Queue for NoQueue {
    async fn enqueue(&self, _: &Tick, _: u64) -> Result<(), QueueError> {
        Ok(())
    }
}

#[derive(Debug)]
struct Idle<'a, L> {
    kv: &'a CountingKv,
    leases: L,
    http: NoNetwork,
    clock: ManualClock,
    queue: NoQueue,
    signer: agent_zero_github::RsaSigner,
}

impl<'a, L: Coordinator> Host for Idle<'a, L> {
    type Kv = &'a CountingKv;
    type Http = NoNetwork;
    type Clock = ManualClock;
    type Queue = NoQueue;
    type Leases = L;
    type Signer = agent_zero_github::RsaSigner;
    fn name(&self) -> &'static str {
        "bench"
    }
    fn kv(&self) -> &&'a CountingKv {
        &self.kv
    }
    fn http(&self) -> &NoNetwork {
        &self.http
    }
    fn clock(&self) -> &ManualClock {
        &self.clock
    }
    fn queue(&self) -> &NoQueue {
        &self.queue
    }
    fn leases(&self) -> &L {
        &self.leases
    }
    fn signer(&self) -> &agent_zero_github::RsaSigner {
        &self.signer
    }
}

const NOW: u64 = 1_800_000_000_000;

/// A deployment with a sandbox configured, so the lease sweep runs.
fn settings() -> Settings {
    Settings::from_pairs([
        ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
        ("AGENT_ZERO_SANDBOX_URL", "http://sandbox.invalid"),
        ("AGENT_ZERO_SANDBOX_TOKEN", "bench-unreached"),
        ("OPENAI_API_KEY", "sk-bench-unreached"),
    ])
}

fn sweep<L: Coordinator>(host: &Idle<'_, L>) {
    let outcome = block_on(agent_zero_app::sweep(host, &settings(), NOW, agent_zero_app::hosting::SWEEP_GRACE_MS));
    assert!(outcome.errors.is_empty(), "an idle sweep fails: {:?}", outcome.errors);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut per_day = 288;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--sweeps-per-day" => per_day = args.next().and_then(|n| n.parse().ok()).expect("--sweeps-per-day N"),
            other => panic!("unknown argument `{other}`"),
        }
    }
    let new_host = |kv| Idle {
        kv,
        leases: CountingCoordinator::new(),
        http: NoNetwork::default(),
        clock: ManualClock::new(NOW),
        queue: NoQueue,
        signer: agent_zero_github::RsaSigner,
    };
    let cloudflare = CountingKv::new();
    let host = new_host(&cloudflare);
    sweep(&host);
    let durable = host.leases.count() as u64;
    let subrequests = *host.http.0.borrow();

    // Spin's store has no multi-key transaction (so the sweep's layout is
    // the one Spin gets).
    let spin = CountingKv::without_transactions();
    let spin_host = Idle {
        kv: &spin,
        leases: KvCoordinator::new(&spin),
        http: NoNetwork::default(),
        clock: ManualClock::new(NOW),
        queue: NoQueue,
        signer: agent_zero_github::RsaSigner,
    };
    // The first sweep after an upgrade lists `pending/` once and records
    // that no marker is left (one write); an idle day is the sweeps after.
    sweep(&spin_host);
    spin.take();
    sweep(&spin_host);

    let n = billed;
    println!(
        "| idle sweep | reads | writes | deletes | lists | Durable Object requests | subrequests | sweeps a day | a day: KV lists | a day: KV writes |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| Cloudflare (Workers KV; cron, wrangler.toml) | {} | {} | {} | {} | {durable} | {subrequests} | {per_day} | {} | {} |",
        n(&cloudflare, "read"),
        n(&cloudflare, "write"),
        n(&cloudflare, "delete"),
        n(&cloudflare, "list"),
        n(&cloudflare, "list") * per_day,
        (n(&cloudflare, "write") + n(&cloudflare, "delete")) * per_day,
    );
    println!(
        "| Spin (its one store; a scheduler every minute) | {} | {} | {} | {} | — | {} | 1440 | {} | {} |",
        n(&spin, "read"),
        n(&spin, "write"),
        n(&spin, "delete"),
        n(&spin, "list"),
        *spin_host.http.0.borrow(),
        n(&spin, "list") * 1440,
        (n(&spin, "write") + n(&spin, "delete")) * 1440,
    );
}
