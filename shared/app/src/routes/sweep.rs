//! `POST /api/v1/sweep`: re-sends overdue ticks and stops expired sandbox
//! leases. Cloudflare runs the same sweep from its cron trigger; on Spin a
//! scheduler (Fermyon Cloud cron jobs, any external cron, or the test host's
//! `--schedule`) calls this route. Control-plane token holders only.

use serde_json::json;

use super::Context;
use crate::{Host, auth};

/// How long a pending tick may be overdue before it is re-sent.
const DEFAULT_GRACE_MS: u64 = 30_000;

pub(super) async fn post<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
    if let Err(error) = auth::principal(context.config, request.headers()) {
        return error.into_response();
    }
    let grace_ms = request
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|p| p.strip_prefix("graceMs=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_GRACE_MS);
    let outcome = crate::sweep(context.host, context.config, context.invocation.now_ms, grace_ms).await;
    let ticks = outcome.ticks.as_ref().map_or(0, |r| r.enqueued.len());
    let leases = outcome.leases.as_ref().map_or(0, |r| r.stopped.len());
    let status = if outcome.errors.is_empty() { http::StatusCode::OK } else { http::StatusCode::SERVICE_UNAVAILABLE };
    crate::json_response(status, &json!({ "ticksEnqueued": ticks, "leasesStopped": leases, "errors": outcome.errors }))
}
