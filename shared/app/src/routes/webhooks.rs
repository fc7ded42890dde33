//! `POST /webhooks/github`: a signed GitHub delivery becomes a task, once.
//!
//! Order matters: configuration (503) → size (413, from `Content-Length`
//! before reading further) → signature over the raw bytes (401) → headers
//! and content type (400) → parse (400) → record the delivery (write-once
//! log entry 0 keyed by the delivery) → enqueue. Nothing is parsed before
//! the signature is verified; nothing is written for a rejected request.
//!
//! Intake never calls GitHub: GitHub does not retry a failed delivery, so
//! the answer is 2xx once the delivery is durably recorded, and the policy
//! gate (`.agent-zero.yml` from the default branch) is the task's first
//! tick, retried with backoff while GitHub cannot be reached. A delivery
//! the policy does not act on ends `ignored`, with its reason on the task.

use agent_zero_engine::{Received, TaskError};
use agent_zero_github::{
    Intake, IntakeOptions, ParsedDelivery, SignatureError, check_delivery_id, parse_delivery, signature,
};
use agent_zero_ports::KeyValue;
use http::StatusCode;
use serde_json::json;

use super::RouteContext;
use crate::Host;
use crate::error::{ApiError, ErrorCode};

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

pub(super) async fn github<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    match intake(context, request).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn intake<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> Result<http::Response<Vec<u8>>, ApiError> {
    let settings = context.settings;
    // Every setting intake needs, before anything is read.
    let secret = settings.webhook_secret()?;
    let limit = settings.webhook_max_bytes()?;
    let lifetimes = settings.run()?.lifetimes;
    let declared = header(request, "content-length").and_then(|v| v.trim().parse::<usize>().ok());
    let body = request.body();
    if declared.is_some_and(|n| n > limit) || body.len() > limit {
        return Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "webhook body is {} bytes; the limit is {limit} bytes",
                declared.unwrap_or(body.len()).max(body.len())
            ),
        )
        .with_field("body"));
    }

    let rejected = |e: SignatureError| {
        ApiError::new(ErrorCode::Unauthorized, format!("signature rejected: {e}")).with_field("X-Hub-Signature-256")
    };
    let key = secret.expose().as_bytes();
    let expected = signature::expected(key, header(request, "x-hub-signature-256"), header(request, "x-hub-signature"))
        .map_err(rejected)?;
    if !context.host.hmac_sha256_matches(key, body, &expected).await {
        return Err(rejected(SignatureError::Mismatch));
    }

    let content_type = header(request, "content-type").unwrap_or_default();
    if !content_type.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("application/json") {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!(
                "content type `{content_type}` is not supported; set the webhook's content type to application/json"
            ),
        )
        .with_field("Content-Type"));
    }
    let event = header(request, "x-github-event").filter(|e| !e.is_empty()).ok_or_else(|| {
        ApiError::new(ErrorCode::InvalidRequest, "missing X-GitHub-Event header").with_field("X-GitHub-Event")
    })?;
    let delivery = header(request, "x-github-delivery").filter(|d| !d.is_empty()).ok_or_else(|| {
        ApiError::new(ErrorCode::InvalidRequest, "missing X-GitHub-Delivery header").with_field("X-GitHub-Delivery")
    })?;
    // Validated as it arrived, before it keys anything: `abc/123` is a bad
    // id, never a duplicate of `abc123`.
    check_delivery_id(delivery)
        .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e.to_string()).with_field("X-GitHub-Delivery"))?;

    let now = context.invocation.now_ms;
    // A redelivery answers what the first delivery did, while its record lives.
    let kv = context.host.kv();
    if let Some(previous) = kv.get(&delivery_key(delivery)).await.ok().flatten() {
        let mut previous: serde_json::Value = serde_json::from_slice(&previous).unwrap_or_else(|_| json!({}));
        let expired = previous.get("expiresAtMs").and_then(serde_json::Value::as_u64).is_some_and(|at| at <= now);
        if !expired {
            if let Some(fields) = previous.as_object_mut() {
                fields.remove("expiresAtMs");
            }
            previous["duplicate"] = json!(true);
            return Ok(accepted(StatusCode::OK, previous));
        }
    }

    let options = IntakeOptions { allowlist: settings.allowlist().cloned() };
    let parsed = parse_delivery(event, delivery, body, &options).map_err(|e| {
        let error = ApiError::new(ErrorCode::InvalidRequest, format!("invalid {event} payload: {e}"));
        match e.path() {
            Some(path) => error.with_field(path),
            None => error,
        }
    })?;

    let (status, answer) = match parsed {
        Intake::Ping { hook_id } => (StatusCode::OK, json!({ "pong": true, "hookId": hook_id })),
        Intake::Ignored { reason } => {
            (StatusCode::ACCEPTED, json!({ "ignored": true, "reason": reason.code(), "message": reason.to_string() }))
        }
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
    remember(kv, delivery, &answer, now, &lifetimes).await;
    Ok(accepted(status, answer))
}

/// Records the answer for redeliveries, for the delivery retention
/// (GitHub redelivers for 3 days). Best effort: the task log itself is the
/// de-duplication point, this only saves work and answers consistently.
///
/// One write where the store expires the record itself (Workers KV); a
/// retention schedule key besides it everywhere else. Either way the
/// record's `expiresAtMs` is honoured on read, so a store that removes it
/// later than asked (Workers KV's floor is 60 s) changes no answer.
async fn remember<K: KeyValue>(
    kv: &K,
    delivery: &str,
    answer: &serde_json::Value,
    now_ms: u64,
    lifetimes: &crate::retention::Lifetimes,
) {
    let expires = now_ms.saturating_add(lifetimes.delivery_ms);
    let mut record = answer.clone();
    record["expiresAtMs"] = json!(expires);
    let bytes = serde_json::to_vec(&record).unwrap_or_default();
    let ttl_secs = lifetimes.delivery_ms.div_ceil(1_000);
    let key = delivery_key(delivery);
    if kv.put_expiring(&key, &bytes, ttl_secs).await.is_ok() && !kv.expires_on_its_own(&key) {
        let id = task_id_for_delivery(delivery);
        let _ = crate::retention::schedule(kv, expires, crate::retention::Kind::Delivery, &id).await;
    }
}

fn storage(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::StorageUnavailable, format!("storage failed; nothing was created: {e}"))
}

async fn task<H: Host>(
    context: &RouteContext<'_, H>,
    seed: &ParsedDelivery,
) -> Result<(StatusCode, serde_json::Value), ApiError> {
    let task_id = task_id_for_delivery(&seed.delivery_id);
    let received = Received {
        task_id: task_id.clone(),
        repository: seed.repository.full_name(),
        trigger: seed.trigger,
        source: Some(format!("github:{}", seed.delivery_id)),
        title: seed.title.as_ref().map(|t| t.text.clone()),
        seed: serde_json::to_value(seed)
            .map_err(|e| ApiError::new(ErrorCode::Internal, format!("the delivery could not be recorded: {e}")))?,
    };
    let now = context.invocation.now_ms;
    let kv = context.host.kv();
    match agent_zero_engine::receive(kv, context.host.queue(), received.clone(), now).await {
        Ok(_) => {
            // Best effort: a missing index entry is rebuilt by the first tick.
            let mut resident = agent_zero_engine::Resident::default();
            let entry = agent_zero_engine::Entry {
                seq: 0,
                at_ms: now,
                facts: vec![agent_zero_engine::Fact::Received { received: Box::new(received) }],
            };
            if resident.apply(&entry).is_ok() {
                let _ = crate::task_index::record_received(kv, &resident, now).await;
            }
            // The policy gate runs in the task's first tick: `state` may
            // still become `ignored`, with its reason on the task.
            Ok((StatusCode::ACCEPTED, json!({ "taskId": task_id, "state": "queued", "trigger": seed.trigger })))
        }
        Err(TaskError::Exists(id)) => Ok((StatusCode::OK, json!({ "taskId": id, "duplicate": true }))),
        Err(e) => Err(storage(e)),
    }
}

#[cfg(test)]
mod tests {
    use agent_zero_ports::{KeyPage, KvError, MemoryKv, block_on};

    use super::*;

    /// A store that removes expiring keys by itself, as Workers KV does.
    struct SelfExpiring(MemoryKv);

    impl KeyValue for SelfExpiring {
        async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
            self.0.get(key).await
        }
        async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
            self.0.put(key, value).await
        }
        async fn delete(&self, key: &str) -> Result<(), KvError> {
            self.0.delete(key).await
        }
        async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
            self.0.list(prefix, cursor, limit).await
        }
        async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
            self.0.put_if_absent(key, value).await
        }
        async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
            self.0.compare_and_swap(key, expected, value).await
        }
        fn expires_on_its_own(&self, _key: &str) -> bool {
            true
        }
    }

    /// Where the store expires the record itself, remembering an answer is
    /// one write; elsewhere the retention pass is told when to remove it.
    #[test]
    fn a_delivery_is_remembered_in_one_write_where_the_store_expires_it() {
        let lifetimes = crate::retention::Lifetimes { delivery_ms: 5_000, task_ms: 1 };
        let answer = json!({ "ignored": true, "reason": "unsupported-action" });
        let plain = MemoryKv::new();
        block_on(remember(&plain, "d-1", &answer, 1_000, &lifetimes));
        let keys: Vec<String> = plain.snapshot().into_keys().collect();
        let schedule = crate::retention::schedule_key(6_000, crate::retention::Kind::Delivery, "gh-d-1");
        assert_eq!(keys, ["delivery/github/gh-d-1".to_owned(), schedule]);

        let expiring = SelfExpiring(MemoryKv::new());
        block_on(remember(&expiring, "d-1", &answer, 1_000, &lifetimes));
        assert_eq!(expiring.0.operations(), 1, "one write, no schedule key");
        let record: serde_json::Value =
            serde_json::from_slice(&expiring.0.snapshot()["delivery/github/gh-d-1"]).unwrap();
        assert_eq!(record["expiresAtMs"], 6_000, "the lifetime is still in the record: {record}");
    }
}
