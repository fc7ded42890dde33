//! `POST /webhooks/github`: a signed GitHub delivery becomes a task, once.
//!
//! Order matters: configuration (503) → size (413, from `Content-Length`
//! before reading further) → signature over the raw bytes (401) → headers
//! and content type (400) → parse (400) → policy from the default branch →
//! create the task (write-once log entry 0 keyed by the delivery) → enqueue.
//! Nothing is parsed before the signature is verified; nothing is written
//! for a rejected request.

use agent_zero_agent::Policy;
use agent_zero_contracts::{PullRequestRef, RunMode};
use agent_zero_github::{
    check_delivery_id, Intake, IntakeOptions, PolicySwitches, RepositoryAllowlist, Subject, TaskSeed,
    parse_delivery, verify_headers,
};
use agent_zero_ports::KeyValue;
use agent_zero_runtime::{Stimulus, TaskError, TaskInput};
use http::StatusCode;
use serde_json::json;

use super::Context;
use crate::error::{ApiError, ErrorCode};
use crate::{Host, repository_policy};

fn header<'r>(request: &'r http::Request<Vec<u8>>, name: &str) -> Option<&'r str> {
    request.headers().get(name).and_then(|v| v.to_str().ok())
}

fn accepted(status: StatusCode, body: serde_json::Value) -> http::Response<Vec<u8>> {
    crate::json_response(status, &body)
}

/// The task id of a delivery: deterministic, so a redelivery (or a
/// concurrent duplicate) addresses the same write-once task log. The id
/// was validated as it arrived ([`check_delivery_id`]: letters, digits and
/// `-`, at most 64 bytes), so this never maps two deliveries to one task.
pub(crate) fn task_id_for_delivery(delivery: &str) -> String {
    debug_assert!(check_delivery_id(delivery).is_ok(), "delivery ids are validated before use");
    format!("gh-{delivery}")
}

fn delivery_key(delivery: &str) -> String {
    format!("delivery/github/{}", task_id_for_delivery(delivery))
}

pub(super) async fn github<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
    match intake(context, request).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn intake<H: Host>(
    context: &Context<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> Result<http::Response<Vec<u8>>, ApiError> {
    let config = context.config;
    let secret = config.get("GITHUB_WEBHOOK_SECRET").ok_or_else(|| {
        ApiError::new(ErrorCode::NotConfigured, "webhook intake is not configured: GITHUB_WEBHOOK_SECRET is not set")
            .with_field("GITHUB_WEBHOOK_SECRET")
    })?;

    let limit = crate::body_limit::webhook_max_bytes(config)?;
    let declared = header(request, "content-length").and_then(|v| v.trim().parse::<usize>().ok());
    let body = request.body();
    if declared.is_some_and(|n| n > limit) || body.len() > limit {
        return Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("webhook body is {} bytes; the limit is {limit} bytes", declared.unwrap_or(body.len()).max(body.len())),
        )
        .with_field("body"));
    }

    verify_headers(
        secret.as_bytes(),
        header(request, "x-hub-signature-256"),
        header(request, "x-hub-signature"),
        body,
    )
    .map_err(|e| ApiError::new(ErrorCode::Unauthorized, format!("signature rejected: {e}")).with_field("X-Hub-Signature-256"))?;

    let content_type = header(request, "content-type").unwrap_or_default();
    if !content_type.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("application/json") {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!("content type `{content_type}` is not supported; set the webhook's content type to application/json"),
        )
        .with_field("Content-Type"));
    }
    let event = header(request, "x-github-event")
        .filter(|e| !e.is_empty())
        .ok_or_else(|| ApiError::new(ErrorCode::InvalidRequest, "missing X-GitHub-Event header").with_field("X-GitHub-Event"))?;
    let delivery = header(request, "x-github-delivery").filter(|d| !d.is_empty()).ok_or_else(|| {
        ApiError::new(ErrorCode::InvalidRequest, "missing X-GitHub-Delivery header").with_field("X-GitHub-Delivery")
    })?;
    // Validated as it arrived, before it keys anything: `abc/123` is a bad
    // id, never a duplicate of `abc123`.
    check_delivery_id(delivery)
        .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e.to_string()).with_field("X-GitHub-Delivery"))?;

    // A redelivery answers what the first delivery did.
    let kv = context.host.kv();
    if let Some(previous) = kv.get(&delivery_key(delivery)).await.ok().flatten() {
        let mut previous: serde_json::Value = serde_json::from_slice(&previous).unwrap_or_else(|_| json!({}));
        previous["duplicate"] = json!(true);
        return Ok(accepted(StatusCode::OK, previous));
    }

    let options = IntakeOptions {
        allowlist: config.get("AGENT_ZERO_GITHUB_REPOSITORIES").map(RepositoryAllowlist::parse),
    };
    let parsed = parse_delivery(event, delivery, body, &options).map_err(|e| {
        let error = ApiError::new(ErrorCode::InvalidRequest, format!("invalid {event} payload: {e}"));
        match e.path() {
            Some(path) => error.with_field(path),
            None => error,
        }
    })?;

    let (status, answer) = match parsed {
        Intake::Ping { hook_id } => (StatusCode::OK, json!({ "pong": true, "hookId": hook_id })),
        Intake::Ignored { reason } => (
            StatusCode::ACCEPTED,
            json!({ "ignored": true, "reason": reason.code(), "message": reason.to_string() }),
        ),
        Intake::Installation(change) => {
            let key = format!("installation/{}", change.installation_id);
            let record = serde_json::to_vec(&change).unwrap_or_default();
            kv.put(&key, &record).await.map_err(storage)?;
            (
                StatusCode::ACCEPTED,
                json!({ "recorded": "installation", "installationId": change.installation_id, "action": change.action }),
            )
        }
        Intake::Task(seed) => task(context, &seed).await?,
        _ => (StatusCode::ACCEPTED, json!({ "ignored": true, "reason": "unsupported" })),
    };
    remember(kv, delivery, &answer).await;
    Ok(accepted(status, answer))
}

/// Records the answer for redeliveries. Best effort: the task log itself is
/// the de-duplication point, this only saves work and answers consistently.
async fn remember<K: KeyValue>(kv: &K, delivery: &str, answer: &serde_json::Value) {
    let bytes = serde_json::to_vec(answer).unwrap_or_default();
    let _ = kv.put(&delivery_key(delivery), &bytes).await;
}

fn storage(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::StorageUnavailable, format!("storage failed; nothing was created: {e}"))
}

async fn task<H: Host>(
    context: &Context<'_, H>,
    seed: &TaskSeed,
) -> Result<(StatusCode, serde_json::Value), ApiError> {
    let policy = load_policy(context, seed).await?;
    let switches = PolicySwitches {
        proactive_enabled: policy.proactive.enabled,
        issues_enabled: policy.issues.enabled,
        issues_require_label: &policy.issues.require_label,
        author_associations: &policy.triggers.author_associations,
        allowed_bots: &policy.triggers.allowed_bots,
    };
    if let Err(reason) = seed.admit(&switches) {
        return Ok((StatusCode::ACCEPTED, json!({ "ignored": true, "reason": reason.code(), "message": reason.to_string() })));
    }

    let task_id = task_id_for_delivery(&seed.delivery_id);
    // Webhooks never raise the mode: the policy's own mode is the ceiling.
    let mode: RunMode = policy.restrict_mode(None);
    let mut input = TaskInput {
        feedback: seed.feedback.clone(),
        installation_id: seed.installation_id,
        ..TaskInput::default()
    };
    match &seed.subject {
        Subject::PullRequest(pr) => input.pull_request = Some(PullRequestRef { ..pr.clone() }),
        Subject::Issue(issue) => {
            input.issue = Some(issue.clone());
            input.issue_body = seed.body.clone();
        }
        #[allow(unreachable_patterns)]
        _ => {}
    }
    let stimulus = Stimulus {
        task_id: task_id.clone(),
        repository: seed.repository.full_name(),
        trigger: seed.trigger,
        mode,
        source: Some(format!("github:{}", seed.delivery_id)),
        input,
        policy,
    };
    let now = context.invocation.now_ms;
    let listed = stimulus.clone();
    match agent_zero_runtime::create(context.host.kv(), context.host.queue(), stimulus, now).await {
        Ok(_) => {
            // Best effort: a missing index entry is rebuilt by the first tick.
            let _ = crate::task_index::record_created(context.host.kv(), &listed, now).await;
            Ok((
            StatusCode::ACCEPTED,
            json!({ "taskId": task_id, "state": "queued", "trigger": seed.trigger, "mode": mode }),
        ))
        }
        Err(TaskError::Exists(id)) => Ok((StatusCode::OK, json!({ "taskId": id, "duplicate": true }))),
        Err(e) => Err(storage(e)),
    }
}

/// The repository policy from its default branch (never a pull request's
/// head, which an outsider controls); the safe defaults when absent.
async fn load_policy<H: Host>(context: &Context<'_, H>, seed: &TaskSeed) -> Result<Policy, ApiError> {
    let config = context.config;
    let api = repository_policy::github_api(config)?;
    let credentials = crate::github_access::credentials(config)
        .map_err(|e| ApiError::new(ErrorCode::NotConfigured, format!("GitHub credentials: {e}")))?;
    // Public repositories are readable without credentials.
    let client = crate::github_access::client(
        context.host.http(),
        &api,
        credentials.as_ref(),
        seed.installation_id,
        context.invocation.now_ms,
    )
    .await
    .map_err(|e| ApiError::new(ErrorCode::UpstreamFailed, format!("GitHub credentials: {e}")))?;
    repository_policy::read(&client, context.host.kv(), &seed.repository.owner, &seed.repository.repo, |e| {
        format!(".agent-zero.yml{}", e.field().map(|f| format!(":{f}")).unwrap_or_default())
    })
    .await
}
