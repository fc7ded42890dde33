//! `POST /webhooks/gitlab` and `POST /webhooks/gitea` (Gitea and Forgejo):
//! a verified issue (opened, labelled), a merge or pull request (opened,
//! given new commits: a proactive review), a GitLab diff note or a Gitea or
//! Forgejo review (review feedback) becomes a task, as a GitHub delivery
//! does (`gl-{delivery}` or `gt-{delivery}`, its policy gate the first
//! tick). Never a silent 200 that looks like work started.
//!
//! Order, as `POST /webhooks/github`: configuration (503 naming the
//! variable) → size (413) → the forge's proof over the raw bytes (401
//! naming the header: token, signature, signed timestamp) → content type,
//! event and delivery headers (400) → parse (400) → an event or action not
//! acted on is answered 202 `ignored` with its reason, nothing read or
//! written → the repository's recorded policy (the switches and labels the
//! arrival shows, `triggers.maxRunsPerHour` of its issue or change
//! request: 202 `ignored` with the reason, nothing written) → the task,
//! recorded once (a redelivery: 200 and the task's id). Nothing is parsed
//! before the proof is checked; nothing is written for a refusal.

use agent_zero_forges::{Arrival, ArrivalKind, AuthError, Parsed, PayloadError, gitea, gitlab};
use agent_zero_ports::KeyValue;
use http::StatusCode;
use serde_json::json;

use super::RouteContext;
use crate::error::{ApiError, ErrorCode};
use crate::forge_settings::not_configured;
use crate::intake_gate::{Hour, Verdict};
use crate::{Host, Settings};

/// Which intake route.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Route {
    GitLab,
    Gitea,
}

impl Route {
    /// The prefix of its tasks' ids.
    const fn task_prefix(self) -> &'static str {
        match self {
            Self::GitLab => "gl-",
            Self::Gitea => "gt-",
        }
    }
}

pub(super) async fn post<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    route: Route,
) -> http::Response<Vec<u8>> {
    match intake(context, request, route).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

fn rejected(e: &AuthError) -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, format!("delivery rejected: {e}")).with_field(e.header())
}

fn bad_request(e: &PayloadError) -> ApiError {
    let field = match e {
        PayloadError::MissingHeader { header } | PayloadError::InvalidDeliveryId { header, .. } => Some(*header),
        _ => None,
    };
    let error = ApiError::new(ErrorCode::InvalidRequest, e.to_string());
    match field {
        Some(field) => error.with_field(field),
        None => error.with_field("body"),
    }
}

/// Configuration, size and the forge's proof: what is checked before any
/// byte of the body is read as JSON.
fn verify(settings: &Settings, route: Route, request: &http::Request<Vec<u8>>, now_ms: u64) -> Result<(), ApiError> {
    let (headers, body) = (request.headers(), request.body());
    let verify: Box<dyn FnOnce() -> Result<(), AuthError> + '_> = match route {
        Route::GitLab => {
            let secrets = settings
                .gitlab()?
                .and_then(|g| g.secrets.as_ref())
                .ok_or_else(|| not_configured("GitLab", "GITLAB_WEBHOOK_SECRET or GITLAB_WEBHOOK_SIGNING_TOKEN"))?;
            Box::new(move || gitlab::verify(secrets, headers, body, now_ms / 1_000))
        }
        Route::Gitea => {
            let secret = settings
                .gitea()?
                .and_then(|g| g.secret.as_deref())
                .ok_or_else(|| not_configured("Gitea/Forgejo", "GITEA_WEBHOOK_SECRET"))?;
            Box::new(move || gitea::verify(secret, headers, body))
        }
    };
    let limit = settings.webhook_max_bytes()?;
    if let Some(size) = super::webhooks::oversized(headers, body.len(), limit) {
        let message = format!("{size} (AGENT_ZERO_WEBHOOK_MAX_BYTES)");
        return Err(ApiError::new(ErrorCode::PayloadTooLarge, message).with_field("body"));
    }
    verify().map_err(|e| rejected(&e))
}

/// The headers and body of a verified delivery: its id and what it parsed to.
fn parse(route: Route, request: &http::Request<Vec<u8>>) -> Result<(String, Parsed), ApiError> {
    let headers = request.headers();
    super::webhooks::json_content(headers)?;
    let parsed = match route {
        Route::GitLab => {
            let event = headers
                .get(gitlab::EVENT_HEADER)
                .and_then(|v| v.to_str().ok())
                .filter(|e| !e.trim().is_empty())
                .ok_or(PayloadError::MissingHeader { header: "X-Gitlab-Event" })
                .map_err(|e| bad_request(&e))?;
            let delivery = gitlab::delivery_id(headers).map_err(|e| bad_request(&e))?;
            (delivery.to_owned(), gitlab::parse(event, delivery, request.body()))
        }
        Route::Gitea => {
            let event = gitea::event_type(headers).map_err(|e| bad_request(&e))?;
            let delivery = gitea::delivery_id(headers).map_err(|e| bad_request(&e))?;
            let forge = gitea::forge_of(headers);
            (delivery.to_owned(), gitea::parse(forge, event, delivery, request.body()))
        }
    };
    let (delivery, parsed) = parsed;
    Ok((delivery, parsed.map_err(|e| bad_request(&e))?))
}

async fn intake<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    route: Route,
) -> Result<http::Response<Vec<u8>>, ApiError> {
    let settings = context.settings;
    let now = context.invocation.now_ms;
    verify(settings, route, request, now)?;
    let (delivery, parsed) = parse(route, request)?;
    let arrival = match parsed {
        Parsed::Arrival(arrival) => arrival,
        Parsed::Ignored(reason) => {
            let answer = json!({ "ignored": true, "reason": reason.code(), "message": reason.to_string() });
            return Ok(crate::json_response(StatusCode::ACCEPTED, &answer));
        }
        _ => {
            let answer = json!({ "ignored": true, "reason": "unsupported" });
            return Ok(crate::json_response(StatusCode::ACCEPTED, &answer));
        }
    };

    // Every arrival is a task: an issue, a Gitea or Forgejo review or a
    // GitLab diff note (review feedback), a merge or pull request opened or
    // given new commits (a proactive review). Its policy gate is the
    // task's first tick, as a GitHub delivery's.
    task(context, &arrival, &delivery, route).await
}

/// The task of an issue arrival (`gl-{delivery}` on GitLab, `gt-{delivery}`
/// on Gitea and Forgejo), of a Gitea or Forgejo review or a GitLab diff
/// note (review feedback), or of a merge or pull request (a proactive review): recorded once,
/// answered 202 with its id, its policy gate the first tick; the same
/// delivery again is answered 200 with the task's id.
async fn task<H: Host>(
    context: &RouteContext<'_, H>,
    arrival: &Arrival,
    delivery: &str,
    route: Route,
) -> Result<http::Response<Vec<u8>>, ApiError> {
    let task_id = format!("{}{delivery}", route.task_prefix());
    let (kv, now) = (context.host.kv(), context.invocation.now_ms);
    // The repository's recorded policy screens what the arrival shows, and
    // its runs in the last hour, before anything is stored; a delivery it
    // refuses is answered 202 with the reason, or, when it is a retry of
    // one already taken, as the duplicate it is.
    let repository = crate::intake_gate::forge_repository(arrival.forge.as_str(), &arrival.repository);
    let hour = match crate::intake_gate::forge_verdict(kv, &repository, arrival, now).await {
        Verdict::Declined(reason) => return refused(kv, &task_id, &reason).await,
        Verdict::Admitted { max_runs_per_hour } => {
            let hour = Hour::of_subject(kv, &repository, arrival.number, now).await;
            if let Some(reason) = hour.refusal(max_runs_per_hour) {
                return refused(kv, &task_id, &reason).await;
            }
            Some(hour)
        }
        Verdict::Unknown => None,
    };
    let trigger = match arrival.kind {
        ArrivalKind::ReviewComment { .. } => agent_zero_contracts::Trigger::Feedback,
        ArrivalKind::ChangeRequestOpened | ArrivalKind::ChangeRequestUpdated { .. } => {
            agent_zero_contracts::Trigger::Proactive
        }
        _ => agent_zero_contracts::Trigger::Issue,
    };
    let received = agent_zero_engine::Received {
        task_id: task_id.clone(),
        repository: arrival.repository.clone(),
        trigger,
        source: Some(format!("{}:{delivery}", arrival.forge.as_str())),
        // The title is untrusted and not in the arrival: the gate reads it.
        title: None,
        delivery: arrival.to_json(),
    };
    let answer = match super::webhooks::receive_task(context, received).await? {
        None => {
            // A run started: counted against its issue's or change request's hour.
            if let Some(hour) = hour {
                hour.record_start(kv, now).await;
            }
            (
                StatusCode::ACCEPTED,
                json!({
                    "taskId": task_id, "state": "queued", "trigger": trigger.as_str(),
                    "forge": arrival.forge.as_str(), "arrival": arrival.to_json(),
                }),
            )
        }
        Some(id) => (StatusCode::OK, json!({ "taskId": id, "duplicate": true })),
    };
    Ok(crate::json_response(answer.0, &answer.1))
}

/// The answer to an arrival the recorded policy refuses: 202 with the
/// reason, nothing stored; 200 with the task when this delivery was taken
/// before (a retry after the policy or the hour changed).
async fn refused<K: KeyValue>(
    kv: &K,
    task_id: &str,
    reason: &agent_zero_github::IgnoreReason,
) -> Result<http::Response<Vec<u8>>, ApiError> {
    if kv.get(&agent_zero_engine::log_key(task_id, 0)).await.map_err(storage)?.is_some() {
        return Ok(crate::json_response(StatusCode::OK, &json!({ "taskId": task_id, "duplicate": true })));
    }
    let answer = json!({ "ignored": true, "reason": reason.code(), "message": reason.to_string() });
    Ok(crate::json_response(StatusCode::ACCEPTED, &answer))
}

fn storage(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::StorageUnavailable, format!("storage failed; the delivery was not recorded: {e}"))
}

#[cfg(test)]
#[path = "forge_webhooks_tests.rs"]
mod tests;
