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
//! these `fetch`, `queue` and `scheduled` exports, and answers most
//! webhook deliveries through [`intake`]'s one synchronous call after
//! reading and signing the body natively.

#![forbid(unsafe_code)]

#[cfg(not(any(feature = "front", feature = "ticks")))]
compile_error!("the worker takes a role: build agent-zero-cloudflare with the `front` or the `ticks` feature, or both");

#[cfg(feature = "front")]
mod body;
mod hmac;
mod http_client;
#[cfg(feature = "front")]
pub mod intake;
mod kv;
#[cfg(feature = "front")]
mod leases;
mod ports;
mod signer;
mod task_store;

use std::cell::OnceCell;

use agent_zero_app::{Host, Settings};
use agent_zero_runner::RemoteCoordinator;
use worker::{Context, Date, Env, event};
#[cfg(feature = "front")]
use {
    agent_zero_app::Invocation,
    worker::js_sys::{self, Uint8Array},
    worker::wasm_bindgen::JsCast as _,
    worker::web_sys,
    worker::{ScheduleContext, ScheduledEvent},
};
#[cfg(feature = "ticks")]
use {
    agent_zero_app::Tick,
    worker::{MessageBatch, MessageExt, QueueRetryOptionsBuilder},
};

#[cfg(feature = "front")]
pub use leases::LeaseCoordinator;
#[cfg(feature = "front")]
pub use task_store::TaskStore;

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

fn settings_of(env: &Env) -> std::rc::Rc<Settings> {
    SETTINGS.with(|cell| {
        cell.get_or_init(|| {
            std::rc::Rc::new(Settings::from_lookup(|name| {
                env.secret(name).map(|s| s.to_string()).or_else(|_| env.var(name).map(|v| v.to_string())).ok()
            }))
        })
        .clone()
    })
}

#[cfg(feature = "front")]
fn invocation() -> Invocation {
    let mut id = [0u8; 16];
    // A failing RNG leaves a zero id: health probes still work, ids repeat.
    let _ = getrandom::fill(&mut id);
    Invocation { now_ms: Date::now().as_millis(), request_id: hex(&id) }
}

#[cfg(feature = "front")]
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Takes and gives the runtime's own `Request` and `Response`, converted
/// in as few calls across the JS boundary as it takes: the URL, the method,
/// all headers as one JSON string, the body as one `ArrayBuffer` copy; the
/// answer's status and headers as one JSON string, its body as one copy.
#[cfg(feature = "front")]
#[event(fetch)]
async fn fetch(request: web_sys::Request, env: Env, _ctx: Context) -> worker::Result<web_sys::Response> {
    let settings = settings_of(&env);
    let invocation = invocation();
    let (method, path) = (request.method(), request.url());
    let mut response = match to_http(&settings, &request).await? {
        Ok(request) => agent_zero_app::handle(&CloudflareHost::new(&env), &settings, &invocation, request).await,
        Err(refusal) => refusal,
    };
    log_request(&settings, &invocation, &method, path_and_query(&path), &mut response);
    from_http(response)
}

/// Stamps `X-Request-Id` on `response` (a refusal before the app ran has
/// none yet) and writes the request's JSON line to the console (Workers
/// Logs). `path` may carry a query: the line names the route, not it.
#[cfg(feature = "front")]
fn log_request(
    settings: &Settings,
    invocation: &Invocation,
    method: &str,
    path: &str,
    response: &mut http::Response<Vec<u8>>,
) {
    use agent_zero_app::log_line;
    log_line::stamp(response, &invocation.request_id);
    let method = http::Method::from_bytes(method.as_bytes()).unwrap_or(http::Method::GET);
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let duration = Date::now().as_millis().saturating_sub(invocation.now_ms);
    worker::console_log!("{}", log_line::request_line(settings, invocation, &method, path, response, duration));
}

/// The Queues consumer: one tick per message. A message whose tick did
/// nothing durable is retried (redelivery resumes from the task log); the
/// engine makes a redelivered tick a no-op once it was committed.
#[cfg(feature = "ticks")]
#[event(queue)]
async fn queue(batch: MessageBatch<Tick>, env: Env, _ctx: Context) -> worker::Result<()> {
    let host = CloudflareHost::new(&env);
    let settings = settings_of(&env);
    for message in batch.messages()? {
        let now = Date::now().as_millis();
        let result = agent_zero_app::run_tick(&host, &settings, message.body(), now).await;
        // The message's id is the request id of a tick's line.
        let line = agent_zero_app::log_line::tick_line(
            &settings,
            &message.id(),
            message.body(),
            &result,
            Date::now().as_millis().saturating_sub(now),
        );
        worker::console_log!("{line}");
        match result {
            Ok(_) => message.ack(),
            Err(_) => {
                let delay = agent_zero_app::hosting::retry_delay_seconds(now, message.timestamp().as_millis());
                message.retry_with_options(&QueueRetryOptionsBuilder::new().with_delay_seconds(delay).build());
            }
        }
    }
    Ok(())
}

/// The cron trigger: re-send overdue ticks and stop expired sandbox leases.
#[cfg(feature = "front")]
#[event(scheduled)]
async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    let host = CloudflareHost::new(&env);
    let settings = settings_of(&env);
    let invocation = invocation();
    let outcome =
        agent_zero_app::sweep(&host, &settings, invocation.now_ms, agent_zero_app::hosting::SWEEP_GRACE_MS).await;
    let outcome_text = if outcome.errors.is_empty() { "ok" } else { "errors" };
    let line = agent_zero_app::log_line::LogLine {
        kind: "sweep",
        request_id: &invocation.request_id,
        step: "sweep",
        outcome: outcome_text,
        duration_ms: Date::now().as_millis().saturating_sub(invocation.now_ms),
        message: Some(&outcome.errors.join("; ")),
        ..Default::default()
    };
    worker::console_log!("{}", line.render(&settings));
}

/// `/path?query` of an absolute URL, without a URL parser (which would
/// link IDNA tables into the worker for nothing).
#[cfg(feature = "front")]
fn path_and_query(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    url[after_scheme..].find('/').map_or("/", |i| &url[after_scheme + i..])
}

#[cfg(feature = "front")]
fn conversion(what: &str, error: impl std::fmt::Debug) -> worker::Error {
    worker::Error::RustError(format!("{what} conversion: {error:?}"))
}

/// The core's request, or the answer to a body refused before it was read
/// (over the route's limit, see `agent_zero_app::body_limit`).
#[cfg(feature = "front")]
async fn to_http(
    settings: &Settings,
    request: &web_sys::Request,
) -> worker::Result<Result<http::Request<Vec<u8>>, http::Response<Vec<u8>>>> {
    let head = head_of(request)?;
    Ok(match body::read(settings, &head, request).await {
        Ok(body) => Ok(http::Request::from_parts(head, body)),
        Err(error) => Err(agent_zero_app::refuse(settings, &head, error)),
    })
}

/// The method, path and headers of `request`.
#[cfg(feature = "front")]
fn head_of(request: &web_sys::Request) -> worker::Result<http::request::Parts> {
    let url = request.url();
    let path_and_query = path_and_query(&url).split('#').next().unwrap_or("/").to_owned();
    let mut builder = http::Request::builder().method(request.method().as_str()).uri(path_and_query);
    // `Array.from(headers)` is `[[name, value], ...]`, lower-cased and
    // combined as `Headers` iterates them: one string across the boundary.
    let headers = js_sys::JSON::stringify(&js_sys::Array::from(&request.headers()))
        .map_err(|e| conversion("request headers", e))?;
    let headers: Vec<(String, String)> =
        agent_zero_contracts::json::from_str(&String::from(headers)).map_err(|e| conversion("request headers", e))?;
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    let head = builder.body(()).map_err(|e| conversion("request", e))?;
    Ok(head.into_parts().0)
}

#[cfg(feature = "front")]
fn from_http(response: http::Response<Vec<u8>>) -> worker::Result<web_sys::Response> {
    let (parts, body) = response.into_parts();
    let headers: Vec<[&str; 2]> =
        parts.headers.iter().filter_map(|(name, value)| Some([name.as_str(), value.to_str().ok()?])).collect();
    let init = serde_json::json!({ "status": parts.status.as_u16(), "headers": headers }).to_string();
    let init: web_sys::ResponseInit =
        js_sys::JSON::parse(&init).map_err(|e| conversion("response", e))?.unchecked_into();
    let body = (!body.is_empty()).then(|| Uint8Array::from(body.as_slice()));
    web_sys::Response::new_with_opt_buffer_source_and_init(body.as_deref(), &init)
        .map_err(|e| conversion("response", e))
}
