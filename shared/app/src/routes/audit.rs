//! `GET /api/v1/audit`: the audit log, newest first, for token holders
//! only (whatever `AGENT_ZERO_CONTROL_PLANE_READS` says).

use http::StatusCode;
use serde_json::json;

use super::RouteContext;
use super::input::{invalid, limit, param, query};
use crate::Host;
use crate::audit_log::{self, ListError};
use crate::auth;
use crate::error::{ApiError, ErrorCode};

pub(super) async fn list<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let result = async {
        auth::principal(context.settings, request.headers())?;
        let pairs = query(request, &["limit", "cursor"])?;
        let limit = limit(&pairs, 50, 100)?;
        audit_log::list(context.host.kv(), param(&pairs, "cursor"), limit).await.map_err(|e| match e {
            ListError::InvalidCursor => invalid("cursor", "not a cursor this API handed out"),
            other => ApiError::new(ErrorCode::StorageUnavailable, other.to_string()),
        })
    };
    match result.await {
        Ok((items, next)) => crate::json_response(StatusCode::OK, &json!({ "items": items, "nextCursor": next })),
        Err(e) => e.into_response(),
    }
}
