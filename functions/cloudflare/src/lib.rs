//! Cloudflare Workers entry points for Agent Zero Edge.
//!
//! This crate only converts between workers-rs types and the core's
//! `http::Request<Vec<u8>>`/`http::Response<Vec<u8>>`, reads operator
//! configuration from the worker's vars and secrets, and implements the
//! ports over Cloudflare bindings (KV namespace `KV`, the `TaskStore`
//! Durable Objects `TASKS` for task keys, `Fetch`, WebCrypto for the App
//! JWT). All behaviour lives in `agent-zero-app`.
//!
//! The worker's entry module is `functions/cloudflare/entry.mjs`: it calls
//! the `fetch`, `queue` and `scheduled` exports, and answers most webhook
//! deliveries through [`intake`]'s one synchronous call after reading and
//! signing the body natively.
//!
//! Each role is one module, behind one `cfg`: `front` (`front.rs`: the
//! routes, the cron sweep, the Durable Object classes and intake) and
//! `ticks` (`ticks.rs`: the queue consumer). What both use is here.

#![forbid(unsafe_code)]

#[cfg(not(any(feature = "front", feature = "ticks")))]
compile_error!("the worker takes a role: build agent-zero-cloudflare with the `front` or the `ticks` feature, or both");

#[cfg(feature = "front")]
mod front;
mod hmac;
mod http_client;
mod kv;
mod ports;
mod signer;
mod task_store;
#[cfg(feature = "ticks")]
mod ticks;

use std::cell::OnceCell;

use agent_zero_app::{Host, Settings};
use agent_zero_runner::RemoteCoordinator;
use worker::Env;

#[cfg(feature = "front")]
pub use front::{LeaseCoordinator, TaskStore, intake};

/// The KV namespace binding name in `wrangler.toml`.
pub const KV_BINDING: &str = "KV";
/// The Queues producer binding for ticks.
pub const QUEUE_BINDING: &str = "TICKS";
/// The Durable Object namespace of the task stores (one object per task,
/// holding its `task/{id}/` keys).
pub const TASKS_BINDING: &str = "TASKS";
/// The Durable Object namespace of the lease coordinator.
pub const LEASES_BINDING: &str = "LEASES";

/// The ports of one invocation, over this worker's bindings. Each binding
/// is looked up on its first use: a webhook touches only Workers KV, so it
/// never binds the queue or a Durable Object (a lease stub is an I/O
/// object of its request, so nothing here outlives the invocation).
struct CloudflareHost {
    env: Env,
    kv: kv::HostKv,
    http: http_client::FetchClient,
    clock: ports::WorkerClock,
    queue: OnceCell<ports::TickQueue>,
    leases: OnceCell<RemoteCoordinator<ports::DurableObjectTransport>>,
    signer: signer::WebCryptoSigner,
}

impl CloudflareHost {
    fn new(env: &Env) -> Self {
        Self {
            env: env.clone(),
            kv: kv::HostKv::bind(env, KV_BINDING, TASKS_BINDING),
            http: http_client::FetchClient,
            clock: ports::WorkerClock,
            queue: OnceCell::new(),
            leases: OnceCell::new(),
            signer: signer::WebCryptoSigner,
        }
    }
}

impl Host for CloudflareHost {
    type Kv = kv::HostKv;
    type Http = http_client::FetchClient;
    type Clock = ports::WorkerClock;
    type Queue = ports::TickQueue;
    type Leases = RemoteCoordinator<ports::DurableObjectTransport>;
    type Signer = signer::WebCryptoSigner;

    fn name(&self) -> &'static str {
        "cloudflare"
    }

    fn kv(&self) -> &Self::Kv {
        &self.kv
    }

    fn http(&self) -> &Self::Http {
        &self.http
    }

    fn clock(&self) -> &Self::Clock {
        &self.clock
    }

    fn queue(&self) -> &Self::Queue {
        self.queue.get_or_init(|| ports::TickQueue::bind(&self.env, QUEUE_BINDING))
    }

    fn leases(&self) -> &Self::Leases {
        self.leases.get_or_init(|| ports::DurableObjectTransport::bind(&self.env, LEASES_BINDING))
    }

    fn signer(&self) -> &Self::Signer {
        &self.signer
    }

    async fn hmac_sha256_matches(&self, key: &[u8], body: &[u8], mac: &[u8; 32]) -> bool {
        hmac::matches(key, body, mac).await
    }

    async fn ed25519(&self, seed: &[u8; 32], message: Option<&[u8]>) -> Result<agent_zero_app::Ed25519, String> {
        signer::ed25519(seed, message).await
    }
}

thread_local! {
    /// Secrets and vars are fixed for an isolate's life (changing them
    /// deploys new isolates), so they are read and parsed into typed
    /// settings once per isolate (with the installation-token cache they
    /// hold) rather than with ~60 binding lookups per request.
    static SETTINGS: std::cell::OnceCell<std::rc::Rc<Settings>> = const { std::cell::OnceCell::new() };
}

pub(crate) fn settings_of(env: &Env) -> std::rc::Rc<Settings> {
    SETTINGS.with(|cell| {
        cell.get_or_init(|| {
            std::rc::Rc::new(Settings::from_lookup(|name| {
                env.secret(name).map(|s| s.to_string()).or_else(|_| env.var(name).map(|v| v.to_string())).ok()
            }))
        })
        .clone()
    })
}
