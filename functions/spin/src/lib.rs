//! Fermyon Spin components for Agent Zero Edge, one per role (a cargo
//! feature, exactly one per build):
//!
//! - `front`: the HTTP component (`agent-zero` in `spin.toml`). It converts
//!   nothing but types: it receives `http::Request<Vec<u8>>` from spin-sdk,
//!   calls `agent_zero_app::handle`, answers, then hands the ticks the
//!   request enqueued to the tick component ([`TICKS_URL`]).
//! - `ticks`: the private tick component (`agent-zero-ticks`, reachable only
//!   by Spin's service chaining): it takes a hand-off, answers `202` at once,
//!   then runs the ticks (`agent_zero_app::hosting::drive`).
//!
//! Each role is one module behind one `cfg` (`front.rs`, `ticks.rs`); what
//! both use is here. Both read operator configuration from Spin variables (the lowercase form
//! of each name in `agent_zero_app::KNOWN_VARIABLES`) and implement the ports
//! over Spin's key-value store and outbound HTTP. Split, each component
//! links only its own role's code (sizes in docs/size.md).

#![deny(unsafe_code)]

#[cfg(all(feature = "front", feature = "ticks"))]
compile_error!("a Spin component takes one role: build agent-zero-spin with the `front` or the `ticks` feature");
#[cfg(not(any(feature = "front", feature = "ticks")))]
compile_error!("a Spin component takes a role: build agent-zero-spin with the `front` or the `ticks` feature");

#[cfg(feature = "front")]
mod front;
mod http_client;
mod kv;
mod ports;
mod sql;
mod store;
#[cfg(feature = "ticks")]
mod ticks;

use agent_zero_app::{ApiError, BoundedBody, ErrorCode, Host, Settings};
use agent_zero_runner::KvCoordinator;
use futures::StreamExt;

/// Where the HTTP component hands its ticks: the tick component's id in
/// `spin.toml` under Spin's service-chaining domain (the HTTP component's
/// `allowed_outbound_hosts` lists it).
pub const TICKS_URL: &str = "http://agent-zero-ticks.spin.internal/ticks";

struct SpinHost {
    kv: store::SpinStore,
    http: http_client::SpinHttp,
    clock: ports::SystemClock,
    queue: agent_zero_app::hosting::InvocationQueue<ports::SystemClock>,
    leases: KvCoordinator<store::SpinStore>,
    signer: agent_zero_github::RsaSigner,
}

impl SpinHost {
    /// The host of one invocation, whose ticks keep inside the wall clock
    /// of the platform `settings` name (`AGENT_ZERO_PLATFORM`).
    fn new(settings: &Settings) -> Self {
        let budget = agent_zero_app::hosting::drive_budget(settings, "spin");
        Self {
            kv: store::SpinStore::chosen(),
            http: http_client::SpinHttp,
            clock: ports::SystemClock,
            queue: agent_zero_app::hosting::InvocationQueue::within(ports::SystemClock, budget),
            leases: KvCoordinator::new(store::SpinStore::chosen()),
            signer: agent_zero_github::RsaSigner,
        }
    }
}

impl Host for SpinHost {
    type Kv = store::SpinStore;
    type Http = http_client::SpinHttp;
    type Clock = ports::SystemClock;
    type Queue = agent_zero_app::hosting::InvocationQueue<ports::SystemClock>;
    type Leases = KvCoordinator<store::SpinStore>;
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

    fn allowed_outbound_hosts(&self) -> Option<&[&'static str]> {
        Some(ticks_allowed_hosts())
    }

    /// Spin has no WebCrypto: `ed25519-dalek` (docs/receipts.md).
    async fn ed25519(&self, seed: &[u8; 32], message: Option<&[u8]>) -> Result<agent_zero_app::Ed25519, String> {
        use ed25519_dalek::Signer as _;
        let key = ed25519_dalek::SigningKey::from_bytes(seed);
        Ok(agent_zero_app::Ed25519 {
            public_key: key.verifying_key().to_bytes(),
            signature: message.map(|m| key.sign(m).to_bytes()),
        })
    }
}

/// The tick component's `allowed_outbound_hosts`, as the `spin.toml` this
/// component was built beside lists them (`build.rs`; `spin build`
/// rebuilds it when the manifest changes): what health and task creation
/// check the configured URLs against, so a missing host is named before a
/// run needs it.
fn ticks_allowed_hosts() -> &'static [&'static str] {
    allowed_hosts::TICKS_ALLOWED_HOSTS
}

mod allowed_hosts {
    include!(concat!(env!("OUT_DIR"), "/allowed_hosts.rs"));
}

/// Spin variable names are lowercase (`[a-z0-9_]`).
fn read_settings() -> Settings {
    Settings::from_lookup(|name| spin_sdk::variables::get(&name.to_ascii_lowercase()).ok())
}

fn invocation() -> agent_zero_app::Invocation {
    use agent_zero_ports::Clock as _;
    let mut id = [0u8; 16];
    let _ = getrandom::fill(&mut id);
    agent_zero_app::Invocation {
        now_ms: ports::SystemClock.now_ms(),
        request_id: id.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// Hands the ticks this invocation enqueued (or, in the tick component,
/// those its time was too short for) to a fresh invocation of the tick
/// component, after the response was sent. The tick component answers
/// before it runs them, so this invocation ends then. A failed hand-off
/// loses nothing: each tick's due time is in its task's checkpoint, with
/// the task named under `active/`, which the sweep re-drives.
async fn hand_off_ticks(host: &SpinHost, settings: &Settings, request_id: &str) {
    use agent_zero_ports::HttpClient as _;
    let log = |outcome: &str, message: &str| {
        println!("{}", agent_zero_app::log_line::host_line(settings, request_id, "hand-off", outcome, message));
    };
    if host.queue.deferred() > 0 {
        log("deferred", &format!("{} delayed tick(s) left to the sweep", host.queue.deferred()));
    }
    let Some(body) = host.queue.hand_off() else { return };
    let request = http::Request::post(TICKS_URL).header(http::header::CONTENT_TYPE, "application/json").body(body);
    let answer = match request {
        Ok(request) => host.http.send(request).await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match answer {
        Ok(response) if response.status() == http::StatusCode::ACCEPTED => {}
        Ok(response) => log(
            "refused",
            &format!(
                "the tick component answered {} to a hand-off (the sweep re-drives its ticks): {}",
                response.status(),
                String::from_utf8_lossy(response.body())
            ),
        ),
        Err(error) => {
            log("failed", &format!("handing ticks to {TICKS_URL} failed (the sweep re-drives them): {error}"))
        }
    }
}

/// Reads the `wasi:http` body stream into `body` chunk by chunk: a declared
/// `Content-Length` over its limit was refused before anything was read
/// (`BoundedBody::start`), and the stream is dropped as soon as it passes it.
async fn read_to(mut body: BoundedBody, request: spin_sdk::http::IncomingRequest) -> Result<Vec<u8>, ApiError> {
    let mut stream = request.into_body_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(ErrorCode::InvalidRequest, format!("reading the request body: {e}")).with_field("body")
        })?;
        body.push(chunk)?;
    }
    Ok(body.into_bytes())
}

/// Sends the core's response through the response outparam, with the
/// invocation's `X-Request-Id`.
async fn respond(
    settings: &Settings,
    request_id: &str,
    mut response: http::Response<Vec<u8>>,
    out: spin_sdk::http::ResponseOutparam,
) {
    agent_zero_app::log_line::stamp(&mut response, request_id);
    use spin_sdk::http::{Fields, OutgoingResponse};
    let (parts, body) = response.into_parts();
    let headers: Vec<(String, Vec<u8>)> =
        parts.headers.iter().map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec())).collect();
    let fields = Fields::from_list(&headers).unwrap_or_else(|_| Fields::new());
    let outgoing = OutgoingResponse::new(fields);
    let _ = outgoing.set_status_code(parts.status.as_u16());
    if let Err(e) = out.set_with_body(outgoing, body).await {
        let message = format!("writing the response body failed: {e:?}");
        println!("{}", agent_zero_app::log_line::host_line(settings, request_id, "respond", "failed", &message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tick component's list as `spin.toml` has it, every vendor host
    /// a configuration can name included, and nothing of another table.
    #[test]
    fn the_tick_components_allowed_hosts_are_read_from_spin_toml() {
        let hosts = ticks_allowed_hosts();
        for host in [
            "http://agent-zero-ticks.spin.internal",
            "https://api.github.com",
            "https://codeload.github.com",
            "https://api.openai.com",
            "https://api.e2b.app",
            "https://*.e2b.app",
            "https://app.daytona.io",
            "https://vercel.com",
        ] {
            assert!(hosts.contains(&host), "{host} missing from {hosts:?}");
        }
        assert!(!hosts.contains(&"https://github.com"), "the sign-in host is the HTTP component's only: {hosts:?}");
    }
}
