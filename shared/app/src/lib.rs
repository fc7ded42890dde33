//! The HTTP application of Agent Zero Edge.
//!
//! `http::Request<Vec<u8>>` in, `http::Response<Vec<u8>>` out. Sans-IO: the
//! host passes its [`Settings`] (parsed once per isolate or instance), the
//! clock, a request id and its ports ([`Host`]); everything that leaves the
//! process goes through those ports. Both host crates (`functions/cloudflare`,
//! `functions/spin`) only convert their own request type and call
//! [`handle`], [`run_tick`], [`sweep`] and [`hosting`]'s tick policy.

#![forbid(unsafe_code)]
#![allow(async_fn_in_trait)]

#[cfg(not(any(
    feature = "sandbox-custom",
    feature = "sandbox-e2b",
    feature = "sandbox-daytona",
    feature = "sandbox-vercel",
    feature = "sandbox-cloudflare"
)))]
compile_error!("agent-zero-app needs at least one sandbox provider: a `sandbox-*` feature");
#[cfg(not(any(feature = "model-openai", feature = "model-anthropic", feature = "model-google")))]
compile_error!("agent-zero-app needs at least one model adapter: a `model-*` feature");

mod access;
mod allowed_hosts;
mod audit_log;
mod auth;
mod body_limit;
mod config;
mod dashboard;
mod error;
mod forge_settings;
pub mod hosting;
mod intake_gate;
pub mod log_line;
pub mod metering;
pub mod platform;
mod public_links;
mod read_ahead;
mod receipt_keys;
mod repository_policy;
pub mod retention;
pub mod retention_pass;
mod router;
mod routes;
mod run_bounds;
mod services;
pub mod settings;
#[cfg(test)]
mod settings_tests;
pub mod task_counters;
pub mod task_index;
#[cfg(test)]
mod test_host;
mod ticks;

pub use audit_log::AuditEntry;
/// Webhook intake's synchronous steps, for a host that checks the
/// signature's MAC itself (`POST /webhooks/github`).
pub mod webhook {
    pub use crate::routes::webhooks::{
        Acted, Checked, HEADERS, Signature, SignatureCheck, answer_verified, mismatched, signature,
    };
}
pub use allowed_hosts::ORIGIN_VARIABLES;
pub use body_limit::{BoundedBody, NO_BODY_MAX_BYTES, body_limit, refuse};
pub(crate) use config::Config;
pub use config::{FRONT_ONLY_VARIABLES, KNOWN_VARIABLES, SECRET_VARIABLES};
pub use error::{ApiError, ErrorCode};
pub use receipt_keys::PKCS8_PREFIX as ED25519_PKCS8_PREFIX;
pub use router::{Matched, ROUTES, Route, RouteId, resolve};
pub use settings::Settings;
pub use ticks::{RunTickError, SweepOutcome, run_tick, sweep};

pub use agent_zero_engine::{Queue, QueueError, Tick, TickOutcome, TickReport};
pub use agent_zero_runner::{Coordinator, MemoryCoordinator};

use agent_zero_ports::{Clock, HttpClient, KeyValue};

/// Name and version reported by health and by every report.
pub const PRODUCT: &str = "agent-zero-edge";
/// The crate version, which is the product version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What a host provides to one invocation.
pub trait Host {
    /// The key-value store bound to the app (`KV` on Cloudflare, the
    /// `default` store on Spin).
    type Kv: KeyValue;
    /// Outbound HTTP.
    type Http: HttpClient;
    /// The host's wall clock.
    type Clock: Clock;
    /// Where ticks are enqueued (Cloudflare Queues; on Spin, the
    /// invocation's own driver plus the sweep).
    type Queue: Queue;
    /// Strongly consistent sandbox-lease bookkeeping (a Durable Object on
    /// Cloudflare, Spin's key-value store on Spin).
    type Leases: Coordinator;
    /// RS256 for the GitHub App JWT (WebCrypto on Cloudflare, pure Rust on
    /// Spin).
    type Signer: agent_zero_github::Rs256Signer;

    /// Short host name for health and evidence: `cloudflare`, `spin`, `test`.
    fn name(&self) -> &'static str;
    /// The key-value port. A missing binding still returns a store whose
    /// operations fail with `KvError::Unavailable`, so health can say so.
    fn kv(&self) -> &Self::Kv;
    /// The outbound HTTP port.
    fn http(&self) -> &Self::Http;
    /// The clock.
    fn clock(&self) -> &Self::Clock;
    /// The work queue.
    fn queue(&self) -> &Self::Queue;
    /// The lease coordinator.
    fn leases(&self) -> &Self::Leases;
    /// The JWT signer.
    fn signer(&self) -> &Self::Signer;
    /// Where the tick role may send requests, when the platform keeps an
    /// allow-list (Spin's `allowed_outbound_hosts` of the tick component);
    /// `None` where any host may be called.
    fn allowed_outbound_hosts(&self) -> Option<&[&'static str]> {
        None
    }
    /// Whether `mac` is HMAC-SHA256(`key`, `body`), compared in constant
    /// time: the webhook signature check. By default the `hmac` crate; a
    /// host with a faster native HMAC overrides it (WebCrypto in workerd).
    fn hmac_sha256_matches(&self, key: &[u8], body: &[u8], mac: &[u8; 32]) -> impl Future<Output = bool> {
        std::future::ready(agent_zero_github::signature::matches(key, body, mac))
    }
    /// Ed25519 (RFC 8032) for evidence receipts: the public key of the
    /// 32-byte private key `seed` and, given a `message`, its signature
    /// (WebCrypto on Cloudflare, `ed25519-dalek` on Spin and in the tests).
    /// The error says which step failed, never the key. By default there
    /// is none: receipts answer 503.
    fn ed25519(&self, seed: &[u8; 32], message: Option<&[u8]>) -> impl Future<Output = Result<Ed25519, String>> {
        let _ = (seed, message);
        std::future::ready(Err("this host has no Ed25519 signer".to_owned()))
    }
}

/// What [`Host::ed25519`] gives: the public key and, when a message was
/// given, its signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ed25519 {
    pub public_key: [u8; 32],
    pub signature: Option<[u8; 64]>,
}

/// Values the host supplies for one invocation: the core has no clock and no
/// randomness of its own.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// Milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// A unique id for this invocation (hex), from the host's randomness.
    pub request_id: String,
}

/// Handles one request. Every answer carries `X-Request-Id`
/// ([`log_line::stamp`]); the host prints [`log_line::request_line`].
pub async fn handle<H: Host>(
    host: &H,
    settings: &Settings,
    invocation: &Invocation,
    request: http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let mut response = answer(host, settings, invocation, request).await;
    log_line::stamp(&mut response, &invocation.request_id);
    response
}

/// The answer to a webhook delivery that [`webhook::answer_verified`]
/// verified and parsed and found acted on: intake's storage half, as
/// [`handle`] runs it after its own check and parse, so a host that checked
/// the MAC itself neither checks nor parses the delivery again.
pub async fn act_on<H: Host>(
    host: &H,
    settings: &Settings,
    invocation: &Invocation,
    acted: webhook::Acted,
) -> http::Response<Vec<u8>> {
    let context = routes::RouteContext { host, settings, invocation };
    let mut response = routes::webhooks::act(&context, acted).await;
    log_line::stamp(&mut response, &invocation.request_id);
    response
}

async fn answer<H: Host>(
    host: &H,
    settings: &Settings,
    invocation: &Invocation,
    request: http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let context = routes::RouteContext { host, settings, invocation };
    // Handlers read the query, never the path: routing is done here, on the
    // path under the operator's base path.
    let path = match settings.base_path().and_then(|base| router::app_path(base, request.uri().path())) {
        Ok(path) => path.to_owned(),
        Err(error) => return error.into_response(),
    };
    let origin = auth::allowed_origin(settings, &path, request.headers());
    let mut response = match router::resolve(request.method(), &path) {
        Ok(route) => routes::dispatch(&context, route, request).await,
        Err(error) if request.method() == http::Method::OPTIONS && error.code == ErrorCode::MethodNotAllowed => {
            let allow = error
                .headers
                .iter()
                .find(|(n, _)| n == http::header::ALLOW)
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let methods: Vec<&str> = allow.split(", ").collect();
            return auth::preflight(settings, &path, request.headers(), &methods);
        }
        Err(error) => error.into_response(),
    };
    if let Some(origin) = origin {
        auth::add_cors(&mut response, origin);
    }
    response
}

/// Builds a JSON response.
pub(crate) fn json_response(status: http::StatusCode, body: &serde_json::Value) -> http::Response<Vec<u8>> {
    let mut response = http::Response::new(serde_json::to_vec(body).unwrap_or_default());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json; charset=utf-8"));
    response.headers_mut().insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    response
}
