//! `POST /api/v1/approvals/{id}`: a person approves or rejects a task
//! waiting in `needs-human`.
//!
//! The decision is recorded under the authenticated principal's name; the
//! body has no actor field (an unknown field is a 400). Approving lets the
//! task write, so it needs the task's mode granted to the principal;
//! rejecting needs only a valid token. A task that is not waiting → 409.
//! Of an approve and a reject racing on one task exactly one commits (the
//! task log's atomic insert decides); the other is 409 naming the winner,
//! and the audit records both answers as given.

use agent_zero_contracts::TaskState;
use agent_zero_engine::ApprovalDecision;
use http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use super::RouteContext;
use super::input::{invalid, json_body};
use super::tasks::load;
use crate::Host;
use crate::access::{self, Principal};
use crate::audit_log::{AuditAction, AuditEntry};
use crate::auth::{self, redact};
use crate::error::{ApiError, ErrorCode};
use crate::task_index::{self, TaskSummary};

/// Largest accepted body.
const MAX_BODY_BYTES: usize = 16 * 1024;
/// Most bytes of a comment.
const MAX_COMMENT_BYTES: usize = 4 * 1024;

/// The body of a decision.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Decide {
    decision: ApprovalDecision,
    #[serde(default)]
    comment: Option<String>,
    /// The digest of the decision the approver was shown (the task's
    /// `pendingDecision.decisionDigest`).
    #[serde(default)]
    decision_digest: Option<String>,
}

pub(super) async fn decide<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    let principal = match auth::principal(context.settings, request.headers()) {
        Ok(principal) => principal,
        Err(e) => return e.into_response(),
    };
    let body = json_body::<Decide>(request, MAX_BODY_BYTES).map(|b| Decision {
        decision: b.decision,
        comment: b.comment,
        shown: b.decision_digest,
    });
    match record(context, &principal, id, body).await {
        Ok(body) => crate::json_response(StatusCode::OK, &body),
        Err(e) => e.into_response(),
    }
}

/// A decision as the API body or the dashboard's form gives it.
#[derive(Debug)]
pub(super) struct Decision {
    pub(super) decision: ApprovalDecision,
    pub(super) comment: Option<String>,
    /// The digest of the decision the person was shown: an approval of
    /// another is refused (409). Without it, an approval covers the
    /// decision waiting now.
    pub(super) shown: Option<String>,
}

/// The one path every decision takes, from the API or the dashboard: the
/// rules, the commit, and the audit entry of the answer as given.
pub(super) async fn record<H: Host>(
    context: &RouteContext<'_, H>,
    principal: &Principal,
    id: &str,
    body: Result<Decision, ApiError>,
) -> Result<serde_json::Value, ApiError> {
    let mut audit = AuditEntry {
        at: String::new(),
        principal: principal.name.clone(),
        action: AuditAction::ApprovalsDecide,
        target: Some(id.chars().take(128).collect()),
        detail: None,
        status: 0,
        outcome: "ok".into(),
        field: None,
        request_id: context.invocation.request_id.clone(),
    };
    let result = match body {
        Ok(body) => decide_as(context, body, id, principal, &mut audit).await,
        Err(e) => Err(e),
    };
    audit.status = StatusCode::OK.as_u16();
    if let Err(e) = &result {
        audit.outcome = e.code.as_str().to_owned();
        audit.field.clone_from(&e.field);
        audit.status = e.code.status().as_u16();
    }
    let _ = crate::audit_log::append(context.host.kv(), &audit, context.invocation.now_ms, context.settings).await;
    result
}

async fn decide_as<H: Host>(
    context: &RouteContext<'_, H>,
    body: Decision,
    id: &str,
    principal: &Principal,
    audit: &mut AuditEntry,
) -> Result<serde_json::Value, ApiError> {
    let verb = match body.decision {
        ApprovalDecision::Approve => "approve",
        ApprovalDecision::Reject => "reject",
    };
    audit.detail = Some(verb.to_owned());
    if body.comment.as_ref().is_some_and(|c| c.len() > MAX_COMMENT_BYTES) {
        return Err(invalid("comment", &format!("at most {MAX_COMMENT_BYTES} bytes")));
    }
    let resident = load(context, id).await?;
    // A delivery still awaiting its policy gate has no mode yet; it is not
    // `needs-human` either, which the next check answers.
    if let Some(mode) = resident.stimulus.as_deref().map(|s| s.mode)
        && body.decision == ApprovalDecision::Approve
        && !principal.may_use(mode)
    {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "approving a `{mode}` task needs mode `{mode}` granted to `{}` ({})",
                principal.name,
                access::MODES
            ),
        )
        .with_field("decision"));
    }
    if resident.state != TaskState::NeedsHuman {
        let message = match &resident.approval.decided {
            Some((winner, decision)) => {
                let verb = if *decision == ApprovalDecision::Approve { "approved" } else { "rejected" };
                format!("task `{id}` was already {verb} by {winner}; it is {}", resident.state)
            }
            None => format!("task `{id}` is {}, not needs-human", resident.state),
        };
        return Err(ApiError::new(ErrorCode::Conflict, message));
    }
    let secrets = auth::secrets(context.settings);
    let comment = body.comment.as_deref().map(|c| redact(c, secrets));
    let now_ms = context.invocation.now_ms;
    let kv = context.host.kv();
    let shown = body.shown.as_deref().map(str::trim);
    agent_zero_engine::approve(kv, context.host.queue(), id, &principal.name, body.decision, comment, shown, now_ms)
        .await?;
    let state = match body.decision {
        ApprovalDecision::Approve => TaskState::Planning,
        ApprovalDecision::Reject => TaskState::Failed,
    };
    if let Some(mut summary) = TaskSummary::of_resident(&resident, now_ms) {
        summary.state = state;
        let _ = task_index::record(kv, &summary).await;
    }
    Ok(json!({ "id": id, "decision": verb, "principal": principal.name, "state": state }))
}
