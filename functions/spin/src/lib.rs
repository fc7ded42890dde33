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

use agent_zero_app::{Config, Host, Invocation};
use spin_sdk::http_component;

struct SpinHost {
    kv: kv::SpinKv,
    http: http_client::SpinHttp,
}

impl Host for SpinHost {
    type Kv = kv::SpinKv;
    type Http = http_client::SpinHttp;

    fn name(&self) -> &'static str {
        "spin"
    }

    fn kv(&self) -> &Self::Kv {
        &self.kv
    }

    fn http(&self) -> &Self::Http {
        &self.http
    }
}

/// Spin variable names are lowercase (`[a-z0-9_]`).
fn config() -> Config {
    Config::from_lookup(|name| spin_sdk::variables::get(&name.to_ascii_lowercase()).ok())
}

fn invocation() -> Invocation {
    let mut id = [0u8; 16];
    let _ = getrandom::fill(&mut id);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    Invocation { now_ms, request_id: id.iter().map(|b| format!("{b:02x}")).collect() }
}

/// The component's `wasi:http/incoming-handler` export. The only place
/// unsafe code is allowed: the glue spin-sdk's macro generates.
#[allow(unsafe_code)]
mod entry {
    use super::*;

    #[http_component]
    async fn handle(request: http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
        let host = SpinHost { kv: kv::SpinKv::open_default(), http: http_client::SpinHttp };
        agent_zero_app::handle(&host, &config(), &invocation(), request).await
    }
}
