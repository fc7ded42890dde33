//! `POST /api/v1/sweep`: re-sends overdue ticks and stops expired sandbox
//! leases. Cloudflare runs the same sweep from its cron trigger; on Spin a
//! scheduler (Fermyon Cloud cron jobs, any external cron, or the test host's
//! `--schedule`) calls this route. Each sweep also runs the retention pass
//! (`crate::retention`): expired delivery records and finished tasks past
//! `AGENT_ZERO_RETENTION_DAYS` are removed. Control-plane token holders only; every
//! sweep that acts (re-drives a tick, stops a lease), is held off by a live
//! claim or fails is audited (`sweep`); an idle one writes nothing, so a
//! scheduler calling it every minute costs no storage writes. No `graceMs` re-drives a seq whose claim is
//! live: `ticksClaimed` counts the overdue markers left to their holders.

use serde_json::json;

use super::RouteContext;
use crate::audit_log::{AuditAction, AuditEntry};
use crate::{Host, auth};

/// How long a pending tick may be overdue before it is re-sent.
const DEFAULT_GRACE_MS: u64 = 30_000;

pub(super) async fn post<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let principal = match auth::principal(context.settings, request.headers()) {
        Ok(principal) => principal,
        Err(error) => return error.into_response(),
    };
    let grace_ms = request
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|p| p.strip_prefix("graceMs=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_GRACE_MS);
    let outcome = crate::sweep(context.host, context.settings, context.invocation.now_ms, grace_ms).await;
    let ticks = outcome.ticks.as_ref().map_or(0, |r| r.enqueued.len());
    let claimed = outcome.ticks.as_ref().map_or(0, |r| r.claimed);
    let leases = outcome.leases.as_ref().map_or(0, |r| r.stopped.len());
    let retention = outcome.retention.clone().unwrap_or_default();
    let removed = retention.deliveries + retention.tasks + retention.audit + retention.revocations;
    let status = if outcome.errors.is_empty() { http::StatusCode::OK } else { http::StatusCode::SERVICE_UNAVAILABLE };
    let audit = AuditEntry {
        at: String::new(),
        principal: principal.name.clone(),
        action: AuditAction::Sweep,
        target: None,
        detail: Some(format!(
            "graceMs={grace_ms}; {ticks} tick(s) enqueued, {claimed} left to live claims, {leases} lease(s) stopped, {} delivery record(s), {} finished task(s), {} audit entr(ies) and {} dashboard revocation(s) removed",
            retention.deliveries, retention.tasks, retention.audit, retention.revocations
        )),
        status: status.as_u16(),
        outcome: if outcome.errors.is_empty() { "ok".into() } else { "storage_unavailable".into() },
        field: None,
        request_id: context.invocation.request_id.clone(),
    };
    // An idle sweep (a scheduler's every minute) changed nothing and costs
    // no write; any sweep that acted, was held off by a claim, or failed is
    // recorded.
    let idle = ticks == 0 && claimed == 0 && leases == 0 && removed == 0 && outcome.errors.is_empty();
    if !idle {
        let _ = crate::audit_log::append(context.host.kv(), &audit, context.invocation.now_ms, context.settings).await;
    }
    let body = json!({
        "ticksEnqueued": ticks,
        "ticksClaimed": claimed,
        "leasesStopped": leases,
        "deliveriesRemoved": retention.deliveries,
        "tasksRemoved": retention.tasks,
        "auditRemoved": retention.audit,
        "revocationsRemoved": retention.revocations,
        "errors": outcome.errors,
    });
    crate::json_response(status, &body)
}
