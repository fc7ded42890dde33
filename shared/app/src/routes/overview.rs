//! `GET /api/v1/overview`: the dashboard's counters as JSON (tasks
//! running, queued, waiting for a person, failed in the last day), over
//! every repository or `?repository=owner/name`, counted by
//! [`crate::task_counters`] from the task index: four listings of at most
//! [`crate::task_counters::COUNT_LIMIT`] keys, no read, no write. A counter
//! that reached the limit says so (`more: true`): its count is a lower
//! bound. Access is the task listing's ([`auth::authorize_read`]).

use http::StatusCode;
use serde_json::{Value, json};

use super::RouteContext;
use super::input::{invalid, param, query};
use super::tasks::is_repository;
use crate::error::{ApiError, ErrorCode};
use crate::task_counters::{self, Count, DAY_MS};
use crate::{Host, auth};

pub(super) async fn get<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    match overview(context, request).await {
        Ok(body) => crate::json_response(StatusCode::OK, &body),
        Err(e) => e.into_response(),
    }
}

async fn overview<H: Host>(context: &RouteContext<'_, H>, request: &http::Request<Vec<u8>>) -> Result<Value, ApiError> {
    auth::authorize_read(context.settings, request.headers())?;
    let pairs = query(request, &["repository"])?;
    let repository = param(&pairs, "repository");
    if repository.is_some_and(|r| !is_repository(r)) {
        return Err(invalid("repository", "expected `owner/name`"));
    }
    let now_ms = context.invocation.now_ms;
    let counters = task_counters::count(context.host.kv(), repository, now_ms)
        .await
        .map_err(|e| ApiError::new(ErrorCode::StorageUnavailable, format!("the task counters cannot be read: {e}")))?;
    let count = |c: Count| json!({ "count": c.n, "more": c.more });
    Ok(json!({
        "repository": repository,
        "running": count(counters.running),
        "queued": count(counters.queued),
        "needsHuman": count(counters.waiting),
        "failedLastDay": count(counters.failed_last_day),
        "failedSince": agent_zero_contracts::rfc3339(now_ms.saturating_sub(DAY_MS)),
    }))
}
