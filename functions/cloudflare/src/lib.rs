//! Cloudflare Workers entry points for Agent Zero Edge.
//!
//! This crate only converts between workers-rs types and the core's
//! `http::Request<Vec<u8>>`/`http::Response<Vec<u8>>`, reads operator
//! configuration from the worker's vars and secrets, and implements the
//! ports over Cloudflare bindings (KV namespace `KV`, `Fetch`). All
//! behaviour lives in `agent-zero-app`.

#![forbid(unsafe_code)]

mod http_client;
mod kv;

use agent_zero_app::{Config, Host, Invocation};
use worker::{Context, Date, Env, Request, Response, event};

/// The KV namespace binding name in `wrangler.toml`.
pub const KV_BINDING: &str = "KV";

/// The ports of one invocation, over this worker's bindings.
struct CloudflareHost {
    kv: kv::CloudflareKv,
    http: http_client::FetchClient,
}

impl Host for CloudflareHost {
    type Kv = kv::CloudflareKv;
    type Http = http_client::FetchClient;

    fn name(&self) -> &'static str {
        "cloudflare"
    }

    fn kv(&self) -> &Self::Kv {
        &self.kv
    }

    fn http(&self) -> &Self::Http {
        &self.http
    }
}

fn config(env: &Env) -> Config {
    Config::from_lookup(|name| {
        env.secret(name)
            .map(|s| s.to_string())
            .or_else(|_| env.var(name).map(|v| v.to_string()))
            .ok()
    })
}

fn invocation() -> Invocation {
    let mut id = [0u8; 16];
    // A failing RNG leaves a zero id: health probes still work, ids repeat.
    let _ = getrandom::fill(&mut id);
    Invocation { now_ms: Date::now().as_millis(), request_id: hex(&id) }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[event(fetch)]
async fn fetch(request: Request, env: Env, _ctx: Context) -> worker::Result<Response> {
    let request = to_http(request).await?;
    let host = CloudflareHost { kv: kv::CloudflareKv::bind(&env, KV_BINDING), http: http_client::FetchClient };
    let response = agent_zero_app::handle(&host, &config(&env), &invocation(), request).await;
    from_http(response)
}

async fn to_http(mut request: Request) -> worker::Result<http::Request<Vec<u8>>> {
    let url = request.url()?;
    let path_and_query = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let mut builder = http::Request::builder()
        .method(request.method().as_ref())
        .uri(path_and_query);
    for (name, value) in request.headers().entries() {
        builder = builder.header(name, value);
    }
    let body = request.bytes().await?;
    builder.body(body).map_err(|e| worker::Error::RustError(format!("request conversion: {e}")))
}

fn from_http(response: http::Response<Vec<u8>>) -> worker::Result<Response> {
    let (parts, body) = response.into_parts();
    let headers = worker::Headers::new();
    for (name, value) in &parts.headers {
        if let Ok(value) = value.to_str() {
            headers.append(name.as_str(), value)?;
        }
    }
    let response = if body.is_empty() { Response::empty()? } else { Response::from_bytes(body)? };
    Ok(response.with_status(parts.status.as_u16()).with_headers(headers))
}
