//! Fermyon Spin HTTP component for Agent Zero Edge.
//!
//! Converts nothing but types: the component receives `http::Request<Vec<u8>>`
//! from spin-sdk, reads operator configuration from Spin variables (the
//! lowercase form of each name in `agent_zero_app::KNOWN_VARIABLES`),
//! implements the ports over Spin's key-value store and outbound HTTP, and
//! calls `agent_zero_app::handle`.

#![deny(unsafe_code)]

mod http_client;
mod kv;
mod ports;

use agent_zero_app::{ApiError, BoundedBody, ErrorCode, Host, Invocation, Settings};
use agent_zero_ports::Clock;
use agent_zero_runner::KvCoordinator;
use futures::StreamExt;

struct SpinHost {
    kv: kv::SpinKv,
    http: http_client::SpinHttp,
    clock: ports::SystemClock,
    queue: agent_zero_app::hosting::InvocationQueue<ports::SystemClock>,
    leases: KvCoordinator<kv::SpinKv>,
    signer: agent_zero_github::RsaSigner,
}

impl SpinHost {
    fn new() -> Self {
        Self {
            kv: kv::SpinKv::open_default(),
            http: http_client::SpinHttp,
            clock: ports::SystemClock,
            queue: agent_zero_app::hosting::InvocationQueue::new(ports::SystemClock),
            leases: KvCoordinator::new(kv::SpinKv::open_default()),
            signer: agent_zero_github::RsaSigner,
        }
    }
}

impl Host for SpinHost {
    type Kv = kv::SpinKv;
    type Http = http_client::SpinHttp;
    type Clock = ports::SystemClock;
    type Queue = agent_zero_app::hosting::InvocationQueue<ports::SystemClock>;
    type Leases = KvCoordinator<kv::SpinKv>;
    type Signer = agent_zero_github::RsaSigner;

    fn name(&self) -> &'static str {
        "spin"
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
        &self.queue
    }

    fn leases(&self) -> &Self::Leases {
        &self.leases
    }

    fn signer(&self) -> &Self::Signer {
        &self.signer
    }
}

/// Spin variable names are lowercase (`[a-z0-9_]`).
fn read_settings() -> Settings {
    Settings::from_lookup(|name| spin_sdk::variables::get(&name.to_ascii_lowercase()).ok())
}

fn invocation() -> Invocation {
    let mut id = [0u8; 16];
    let _ = getrandom::fill(&mut id);
    Invocation { now_ms: ports::SystemClock.now_ms(), request_id: id.iter().map(|b| format!("{b:02x}")).collect() }
}

/// Runs the ticks this invocation enqueued, after its response was sent
/// (`agent_zero_app::hosting::drive`: due order, within its budget; the
/// sweep continues what is left).
async fn drive_ticks(host: &SpinHost, settings: &Settings) {
    let report = agent_zero_app::hosting::drive(
        &host.queue,
        // wasi:clocks sleep; the response has already been sent.
        |ms| std::thread::sleep(std::time::Duration::from_millis(ms)),
        async |tick, now| agent_zero_app::run_tick(host, settings, tick, now).await,
    )
    .await;
    for (task, warning) in &report.warnings {
        eprintln!("agent-zero: tick {task}: {warning}");
    }
    for (task, error) in &report.failed {
        eprintln!("agent-zero: tick {task} failed (the sweep retries it): {error}");
    }
    if let Some(task) = &report.budget_spent {
        eprintln!("agent-zero: tick budget spent; the sweep continues task {task}");
    }
    if report.deferred > 0 {
        eprintln!("agent-zero: {} delayed tick(s) left to the sweep", report.deferred);
    }
}

/// Converts spin-sdk's incoming request into the core's request, or into
/// the answer to a request refused before its body was read (over the
/// route's limit, see `agent_zero_app::body_limit`).
async fn to_http(
    settings: &Settings,
    request: spin_sdk::http::IncomingRequest,
) -> Result<http::Request<Vec<u8>>, http::Response<Vec<u8>>> {
    let mut builder = http::Request::builder()
        .method(request.method().to_string().as_str())
        .uri(request.path_with_query().unwrap_or_else(|| "/".into()));
    for (name, value) in request.headers().entries() {
        builder = builder.header(name, value);
    }
    let (head, ()) = builder
        .body(())
        .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, format!("request conversion: {e}")).into_response())?
        .into_parts();
    match read_body(settings, &head, request).await {
        Ok(body) => Ok(http::Request::from_parts(head, body)),
        Err(error) => Err(agent_zero_app::refuse(settings, &head, error)),
    }
}

/// Reads the `wasi:http` body stream chunk by chunk up to the route's
/// limit: a declared `Content-Length` over it is refused before anything is
/// read, and the stream is dropped as soon as it passes the limit.
async fn read_body(
    settings: &Settings,
    head: &http::request::Parts,
    request: spin_sdk::http::IncomingRequest,
) -> Result<Vec<u8>, ApiError> {
    let limit = agent_zero_app::body_limit(&head.method, head.uri.path(), settings)?;
    let mut body = BoundedBody::start(limit, &head.headers)?;
    let mut stream = request.into_body_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(ErrorCode::InvalidRequest, format!("reading the request body: {e}")).with_field("body")
        })?;
        body.push(chunk)?;
    }
    Ok(body.into_bytes())
}

/// Sends the core's response through the response outparam.
async fn respond(response: http::Response<Vec<u8>>, out: spin_sdk::http::ResponseOutparam) {
    use spin_sdk::http::{Fields, OutgoingResponse};
    let (parts, body) = response.into_parts();
    let headers: Vec<(String, Vec<u8>)> =
        parts.headers.iter().map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec())).collect();
    let fields = Fields::from_list(&headers).unwrap_or_else(|_| Fields::new());
    let outgoing = OutgoingResponse::new(fields);
    let _ = outgoing.set_status_code(parts.status.as_u16());
    if let Err(e) = out.set_with_body(outgoing, body).await {
        eprintln!("agent-zero: writing the response body failed: {e:?}");
    }
}

/// The component's `wasi:http/incoming-handler` export. The only place
/// unsafe code is allowed: the glue spin-sdk's macro generates.
#[allow(unsafe_code)]
mod entry {
    use super::*;

    /// Answers the request, then runs the ticks it enqueued.
    #[spin_sdk::http_component]
    async fn handle(request: spin_sdk::http::IncomingRequest, out: spin_sdk::http::ResponseOutparam) {
        let host = SpinHost::new();
        let settings = read_settings();
        let response = match to_http(&settings, request).await {
            Ok(request) => agent_zero_app::handle(&host, &settings, &invocation(), request).await,
            Err(refusal) => refusal,
        };
        respond(response, out).await;
        drive_ticks(&host, &settings).await;
    }
}
