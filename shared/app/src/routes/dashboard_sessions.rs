//! `DELETE /api/v1/dashboard/users/{id}/sessions`: an operator ends every
//! dashboard session of the GitHub account with numeric id `{id}` (the id
//! a grant pins, from `GET /users/{login}`), wherever it is signed in.
//! Control-plane token holders only, like every other mutation
//! (`crate::auth`); every authenticated attempt is audited as
//! `dashboard.revoke-sessions`. The account may sign in again at once
//! while a grant allows it: to keep someone out, remove the grant too
//! (that takes effect on the next request). The record lives until the
//! sessions it refuses have expired (`crate::dashboard::revocation`).

use agent_zero_contracts::rfc3339;
use http::StatusCode;
use serde_json::json;

use super::super::RouteContext;
use super::super::input::invalid;
use super::gate::settings_of;
use crate::audit_log::{self, AuditAction, AuditEntry};
use crate::dashboard::revocation;
use crate::error::{ApiError, ErrorCode};
use crate::{Host, auth};

pub(in crate::routes) async fn revoke<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    let principal = match auth::principal(context.settings, request.headers()) {
        Ok(principal) => principal,
        Err(e) => return e.into_response(),
    };
    let now_ms = context.invocation.now_ms;
    let result = match (settings_of(context.settings), id.parse::<u64>()) {
        (Err(e), _) => Err(e),
        (Ok(_), Ok(user_id)) if user_id > 0 && !id.starts_with('+') => {
            revocation::revoke_user(context.host.kv(), user_id, now_ms).await.map(|until| (user_id, until)).map_err(
                |e| ApiError::new(ErrorCode::StorageUnavailable, format!("the revocation cannot be stored: {e}")),
            )
        }
        (Ok(_), _) => Err(invalid("id", "the account's numeric id (`GET /users/{login}` answers it as `id`)")),
    };
    let status = result.as_ref().map_or_else(|e| e.code.status(), |_| StatusCode::OK);
    let audit = AuditEntry {
        at: String::new(),
        principal: principal.name.clone(),
        action: AuditAction::DashboardRevokeSessions,
        target: Some(format!("github-user:{}", id.chars().take(32).collect::<String>())),
        detail: None,
        status: status.as_u16(),
        outcome: result.as_ref().map_or_else(|e| e.code.as_str().to_owned(), |_| "ok".to_owned()),
        field: result.as_ref().err().and_then(|e| e.field.clone()),
        request_id: context.invocation.request_id.clone(),
    };
    let _ = audit_log::append(context.host.kv(), &audit, now_ms, context.settings).await;
    match result {
        Ok((user_id, until)) => crate::json_response(
            status,
            &json!({ "userId": user_id, "revokedAt": rfc3339(now_ms), "recordExpiresAt": rfc3339(until) }),
        ),
        Err(e) => e.into_response(),
    }
}
