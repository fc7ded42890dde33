//! The `front` role: the worker of the routes (`fetch`), of the cron
//! sweep (`scheduled`) and of the Durable Object classes (`TaskStore`,
//! `LeaseCoordinator`), with the synchronous webhook intake `entry.mjs`
//! calls ([`intake`]). Everything the role needs and the `ticks` role does
//! not lives under this module, so the role boundary is this one
//! `#[cfg(feature = "front")]` in `lib.rs`.

mod body;
pub mod intake;
mod leases;
mod task_object;

use agent_zero_app::{Invocation, Settings};
use worker::js_sys::{self, Uint8Array};
use worker::wasm_bindgen::JsCast as _;
use worker::{Context, Date, Env, ScheduleContext, ScheduledEvent, event, web_sys};

use crate::{CloudflareHost, settings_of};

pub use leases::LeaseCoordinator;
pub use task_object::TaskStore;

pub(crate) fn invocation() -> Invocation {
    let mut id = [0u8; 16];
    // A failing RNG leaves a zero id: health probes still work, ids repeat.
    let _ = getrandom::fill(&mut id);
    Invocation { now_ms: Date::now().as_millis(), request_id: hex(&id) }
}

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
pub(crate) fn log_request(
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

/// The cron trigger: re-send overdue ticks and stop expired sandbox leases.
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
fn path_and_query(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    url[after_scheme..].find('/').map_or("/", |i| &url[after_scheme + i..])
}

fn conversion(what: &str, error: impl std::fmt::Debug) -> worker::Error {
    worker::Error::RustError(format!("{what} conversion: {error:?}"))
}

/// The core's request, or the answer to a body refused before it was read
/// (over the route's limit, see `agent_zero_app::body_limit`).
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
fn head_of(request: &web_sys::Request) -> worker::Result<http::request::Parts> {
    let url = request.url();
    let path_and_query = path_and_query(&url).split('#').next().unwrap_or("/").to_owned();
    let mut builder = http::Request::builder().method(request.method().as_str()).uri(path_and_query);
    // `Array.from(headers)` is `[[name, value], ...]`, lower-cased and
    // combined as `Headers` iterates them: one string across the boundary.
    let headers = js_sys::JSON::stringify(&js_sys::Array::from(&request.headers()))
        .map_err(|e| conversion("request headers", e))?;
    let headers: Vec<(String, String)> =
        agent_zero_codecs::json::from_str(&String::from(headers)).map_err(|e| conversion("request headers", e))?;
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    let head = builder.body(()).map_err(|e| conversion("request", e))?;
    Ok(head.into_parts().0)
}

pub(crate) fn from_http(response: http::Response<Vec<u8>>) -> worker::Result<web_sys::Response> {
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
