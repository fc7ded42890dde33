//! The `ticks` role: the private tick component (`agent-zero-ticks`,
//! reachable only by Spin's service chaining). It takes a hand-off,
//! answers `202` at once, then runs the ticks
//! (`agent_zero_app::hosting::drive`). The role boundary is this module's
//! one `#[cfg(feature = "ticks")]` in `lib.rs`.

use agent_zero_app::{ApiError, BoundedBody, ErrorCode, Settings};

use crate::{SpinHost, hand_off_ticks, invocation, ports, read_settings, read_to, respond};

/// Runs the ticks of a hand-off, after answering it
/// (`agent_zero_app::hosting::drive`: due order, within its budget; the
/// sweep continues what is left).
async fn drive_ticks(host: &SpinHost, settings: &Settings, request_id: &str) {
    use agent_zero_ports::Clock as _;
    // One JSON line per tick (its warnings or error in it), to stdout.
    let report = agent_zero_app::hosting::drive(
        &host.queue,
        // wasi:clocks sleep; the response has already been sent.
        |ms| std::thread::sleep(std::time::Duration::from_millis(ms)),
        async |tick, now| {
            let result = agent_zero_app::run_tick(host, settings, tick, now).await;
            let duration = ports::SystemClock.now_ms().saturating_sub(now);
            println!("{}", agent_zero_app::log_line::tick_line(settings, request_id, tick, &result, duration));
            result
        },
    )
    .await;
    if report.deferred > 0 {
        let message = format!("{} delayed tick(s) left to the sweep", report.deferred);
        println!("{}", agent_zero_app::log_line::host_line(settings, request_id, "drive", "deferred", &message));
    }
    // What the invocation's time was too short for goes on in a fresh one.
    if report.budget_spent.is_some() {
        hand_off_ticks(host, settings, request_id).await;
    }
}

/// The tick component's `wasi:http/incoming-handler` export, reached only
/// by service chaining (its route is private): `POST` with a hand-off body
/// is answered `202` before its ticks run; anything else is refused.
#[allow(unsafe_code)]
mod entry {
    use super::*;

    #[spin_sdk::http_component]
    async fn handle(request: spin_sdk::http::IncomingRequest, out: spin_sdk::http::ResponseOutparam) {
        let settings = read_settings();
        let host = SpinHost::new(&settings);
        let id = invocation().request_id;
        let taken = match take(&host, request).await {
            Ok(count) => count,
            Err(refusal) => return respond(&settings, &id, refusal.into_response(), out).await,
        };
        let accepted = http::Response::builder()
            .status(http::StatusCode::ACCEPTED)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(format!("{{\"accepted\":{taken}}}").into_bytes())
            .unwrap_or_default();
        respond(&settings, &id, accepted, out).await;
        drive_ticks(&host, &settings, &id).await;
    }

    /// Reads a hand-off into the host's queue.
    async fn take(host: &SpinHost, request: spin_sdk::http::IncomingRequest) -> Result<usize, ApiError> {
        if request.method() != spin_sdk::http::Method::Post {
            return Err(ApiError::new(ErrorCode::MethodNotAllowed, "the tick component takes POST only"));
        }
        let limit = agent_zero_app::hosting::MAX_HAND_OFF_BYTES;
        let body = read_to(BoundedBody::start(limit, &http::HeaderMap::new())?, request).await?;
        host.queue
            .take_hand_off(&body)
            .await
            .map_err(|why| ApiError::new(ErrorCode::InvalidRequest, why).with_field("body"))
    }
}
