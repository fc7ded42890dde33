//! `POST /webhooks/github`: a signed GitHub delivery becomes a task, once.
//!
//! Order matters: configuration (503) → size (413, from `Content-Length`
//! before reading further) → signature over the raw bytes (401) → headers
//! and content type (400) → parse (400) → for a delivery that is acted on,
//! the redelivery check (by `X-GitHub-Delivery`: 200 and the first answer)
//! → the checks that answer 202 with `stored: false` and write nothing: the
//! payload's date against the replay window, the repository's recorded
//! policy (`crate::intake_gate`), the body's digest against those already
//! accepted ([`replay`]), the runs of the pull request or issue in the last
//! hour (`triggers.maxRunsPerHour`) → the record (write-once log entry 0
//! keyed by the delivery) → enqueue → what later deliveries are checked
//! against (the answer, the body's digest, the run's start). Nothing is
//! parsed before the signature is verified; nothing is written for a
//! rejected request.
//!
//! Intake stores only what it acts on. A ping, or an event or action no
//! trigger handles, is answered without reading or writing storage: its
//! answer is a function of the body and the settings alone, so a redelivery
//! gets the same answer, and GitHub's own delivery log keeps what was sent
//! and answered. (Most deliveries an installation receives are of that kind,
//! and Workers KV writes are the scarce resource: 1,000 a day on the free
//! plan, one a second per key.) A task or installation delivery is recorded,
//! and a redelivery of it answers what the first one did.
//!
//! Intake never calls GitHub: GitHub does not retry a failed delivery, so
//! the answer is 2xx once the delivery is durably recorded, and the policy
//! gate (`.agent-zero.yml` from the default branch) is the task's first
//! tick, retried with backoff while GitHub cannot be reached. A delivery
//! the policy does not act on ends `ignored`, with its reason on the task.
//!
//! The steps before and after the signature check are synchronous and
//! public ([`signature`], [`answer_verified`]), so a host that checks the
//! MAC with its own native primitive answers most deliveries without
//! entering the async handler; a delivery that is acted on comes out of
//! them verified and parsed ([`Acted`]) and goes on to [`crate::act_on`]
//! for storage, so every delivery is checked and parsed once, whichever
//! path it takes. Both paths are this module's functions.

use agent_zero_engine::{Received, TaskError};
use agent_zero_github::{
    Intake, IntakeOptions, ParsedDelivery, SignatureError, check_delivery_id, parse_delivery, signature as sig,
};
use agent_zero_ports::KeyValue;
use http::StatusCode;
use serde_json::json;

use super::RouteContext;
use crate::error::{ApiError, ErrorCode};
use crate::intake_gate::Verdict;
use crate::{Host, Settings};

mod replay;

fn header<'h>(headers: &'h http::HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
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
    request: http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    match intake(context, request).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// The storage half of intake for a delivery [`answer_verified`] found
/// acted on (see [`crate::act_on`]).
pub(crate) async fn act<H: Host>(context: &RouteContext<'_, H>, acted: Acted) -> http::Response<Vec<u8>> {
    match store(context, acted).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// What a delivery's signature must match: HMAC-SHA256 of the body under
/// `key` (the webhook secret) equal to `mac`, compared in constant time.
#[derive(Clone, Copy)]
pub struct Signature<'s> {
    /// The webhook secret's bytes.
    pub key: &'s [u8],
    /// The MAC the delivery's signature header names.
    pub mac: [u8; 32],
}

impl std::fmt::Debug for Signature<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signature").field("key", &"[redacted]").finish_non_exhaustive()
    }
}

/// Intake up to the signature check: the signature to verify, or the
/// answer without it.
#[derive(Debug)]
pub enum SignatureCheck<'s> {
    /// Verify this, then call [`answer_verified`].
    Verify(Signature<'s>),
    /// The refusal, as the async handler answers it.
    Refused(http::Response<Vec<u8>>),
}

/// The request headers intake's synchronous steps read ([`signature`],
/// [`answer_verified`]), lower-case. A host may hand them only these: the
/// answers are the same.
pub const HEADERS: [&str; 6] =
    ["content-length", "content-type", "x-github-delivery", "x-github-event", "x-hub-signature", "x-hub-signature-256"];

/// Intake up to the signature check, for `POST /webhooks/github` (see
/// [`crate::resolve`]): every setting intake needs (503), the size (413)
/// and the signature header's form (401). It needs the request's
/// [`HEADERS`] and the body's length, not its bytes.
pub fn signature<'s>(settings: &'s Settings, headers: &http::HeaderMap, body_length: usize) -> SignatureCheck<'s> {
    match signed(settings, headers, body_length) {
        Ok(signature) => SignatureCheck::Verify(signature),
        Err(error) => SignatureCheck::Refused(error.into_response()),
    }
}

/// The answer to a delivery whose MAC does not match its signature: what
/// [`answer_verified`] answers when not `matched`, without the body.
#[must_use]
pub fn mismatched() -> http::Response<Vec<u8>> {
    rejected(SignatureError::Mismatch).into_response()
}

/// Intake after the signature check, for a host that checked the MAC
/// itself (`matched`: whether HMAC-SHA256(key, body) equals the
/// [`Signature`]'s `mac`): the answer, exactly what the async handler
/// answers, or the delivery verified and parsed, to be acted on (a task,
/// an installation change) through [`crate::act_on`], which stores it.
#[must_use]
pub fn answer_verified(settings: &Settings, request: http::Request<Vec<u8>>, matched: bool) -> Checked {
    match verified(settings, request, matched) {
        Err(error) => Checked::Answered(error.into_response()),
        Ok(Verified::Answered(status, answer)) => Checked::Answered(accepted(status, answer)),
        Ok(Verified::Acted(acted)) => Checked::Acted(acted),
    }
}

/// What [`answer_verified`] made of a delivery.
#[derive(Debug)]
pub enum Checked {
    /// The answer; nothing is stored.
    Answered(http::Response<Vec<u8>>),
    /// A verified, parsed delivery that changes something: give it to
    /// [`crate::act_on`].
    Acted(Acted),
}

fn signed<'s>(
    settings: &'s Settings,
    headers: &http::HeaderMap,
    body_length: usize,
) -> Result<Signature<'s>, ApiError> {
    // Every setting intake needs, before anything is read.
    let secret = settings.webhook_secret()?;
    let limit = settings.webhook_max_bytes()?;
    settings.run()?;
    if let Some(size) = oversized(headers, body_length, limit) {
        return Err(ApiError::new(ErrorCode::PayloadTooLarge, size).with_field("body"));
    }
    let key = secret.expose().as_bytes();
    let mac = sig::expected(key, header(headers, "x-hub-signature-256"), header(headers, "x-hub-signature"))
        .map_err(rejected)?;
    Ok(Signature { key, mac })
}

/// The answer to a redelivery: the first answer, from its `record`, marked
/// `duplicate`; `None` once the record's `expiresAtMs` has passed at
/// `now_ms` (a store may remove it later than asked).
pub(super) fn duplicate(record: &[u8], now_ms: u64) -> Option<serde_json::Value> {
    let mut previous: serde_json::Value = agent_zero_codecs::json::from_slice(record).unwrap_or_else(|_| json!({}));
    if previous.get("expiresAtMs").and_then(serde_json::Value::as_u64).is_some_and(|at| at <= now_ms) {
        return None;
    }
    if let Some(fields) = previous.as_object_mut() {
        fields.remove("expiresAtMs");
    }
    previous["duplicate"] = json!(true);
    Some(previous)
}

/// What is wrong with a webhook body over `limit` bytes, declared
/// (`Content-Length`) or read (`body_length`); `None` within it. Every
/// forge's intake refuses it 413 before the body is checked or parsed.
pub(super) fn oversized(headers: &http::HeaderMap, body_length: usize, limit: usize) -> Option<String> {
    let declared = header(headers, "content-length").and_then(|v| v.trim().parse::<usize>().ok());
    (declared.is_some_and(|n| n > limit) || body_length > limit).then(|| {
        format!(
            "webhook body is {} bytes; the limit is {limit} bytes",
            declared.unwrap_or(body_length).max(body_length)
        )
    })
}

/// Every forge's deliveries are JSON: 400 naming `Content-Type` otherwise.
pub(super) fn json_content(headers: &http::HeaderMap) -> Result<(), ApiError> {
    let content_type = header(headers, "content-type").unwrap_or_default();
    if content_type.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("application/json") {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::InvalidRequest,
        format!("content type `{content_type}` is not supported; set the webhook's content type to application/json"),
    )
    .with_field("Content-Type"))
}

fn rejected(e: SignatureError) -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, format!("signature rejected: {e}")).with_field("X-Hub-Signature-256")
}

/// A verified delivery: answered as it is, or acted on.
enum Verified {
    Answered(StatusCode, serde_json::Value),
    Acted(Acted),
}

/// A delivery whose signature matched and whose payload parsed, that
/// changes something: recorded, and answered once. Only intake makes one.
pub struct Acted {
    /// Its `X-GitHub-Delivery`, validated.
    delivery: String,
    intake: Intake,
    /// The body as signed, for the replay check's digest.
    body: Vec<u8>,
}

impl std::fmt::Debug for Acted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acted").field("delivery", &self.delivery).finish_non_exhaustive()
    }
}

fn verified(settings: &Settings, request: http::Request<Vec<u8>>, matched: bool) -> Result<Verified, ApiError> {
    if !matched {
        return Err(rejected(SignatureError::Mismatch));
    }
    json_content(request.headers())?;
    let event = header(request.headers(), "x-github-event").filter(|e| !e.is_empty()).ok_or_else(|| {
        ApiError::new(ErrorCode::InvalidRequest, "missing X-GitHub-Event header").with_field("X-GitHub-Event")
    })?;
    let delivery = header(request.headers(), "x-github-delivery").filter(|d| !d.is_empty()).ok_or_else(|| {
        ApiError::new(ErrorCode::InvalidRequest, "missing X-GitHub-Delivery header").with_field("X-GitHub-Delivery")
    })?;
    // Validated as it arrived, before it keys anything: `abc/123` is a bad
    // id, never a duplicate of `abc123`.
    check_delivery_id(delivery)
        .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e.to_string()).with_field("X-GitHub-Delivery"))?;

    let options = IntakeOptions { allowlist: settings.allowlist().cloned() };
    let parsed = parse_delivery(event, delivery, request.body(), &options).map_err(|e| {
        let error = ApiError::new(ErrorCode::InvalidRequest, format!("invalid {event} payload: {e}"));
        match e.path() {
            Some(path) => error.with_field(path),
            None => error,
        }
    })?;
    Ok(match parsed {
        Intake::Ping { hook_id } => Verified::Answered(StatusCode::OK, json!({ "pong": true, "hookId": hook_id })),
        Intake::Ignored { reason } => Verified::Answered(
            StatusCode::ACCEPTED,
            json!({ "ignored": true, "reason": reason.code(), "message": reason.to_string() }),
        ),
        intake @ (Intake::Installation(_) | Intake::Task(_)) => {
            Verified::Acted(Acted { delivery: delivery.to_owned(), intake, body: request.into_body() })
        }
        _ => Verified::Answered(StatusCode::ACCEPTED, json!({ "ignored": true, "reason": "unsupported" })),
    })
}

async fn intake<H: Host>(
    context: &RouteContext<'_, H>,
    request: http::Request<Vec<u8>>,
) -> Result<http::Response<Vec<u8>>, ApiError> {
    let settings = context.settings;
    let signature = signed(settings, request.headers(), request.body().len())?;
    let matched = context.host.hmac_sha256_matches(signature.key, request.body(), &signature.mac).await;
    match verified(settings, request, matched)? {
        Verified::Answered(status, answer) => Ok(accepted(status, answer)),
        Verified::Acted(acted) => store(context, acted).await,
    }
}

/// Intake's storage half: the redelivery check, [`screen`], the record.
async fn store<H: Host>(context: &RouteContext<'_, H>, acted: Acted) -> Result<http::Response<Vec<u8>>, ApiError> {
    let settings = context.settings;
    let Acted { delivery, intake, body } = acted;
    let delivery = delivery.as_str();

    let now = context.invocation.now_ms;
    // A redelivery answers what the first delivery did, while its record lives.
    let kv = context.host.kv();
    if let Some(previous) = kv.get(&delivery_key(delivery)).await.ok().flatten().and_then(|r| duplicate(&r, now)) {
        return Ok(accepted(StatusCode::OK, previous));
    }

    let lifetimes = settings.run()?.lifetimes;
    let digest = replay::digest(&body);
    let counted = match screen(kv, &intake, &digest, delivery, now, lifetimes.delivery_ms).await {
        Ok(counted) => counted,
        Err(reason) => {
            let answer =
                json!({ "ignored": true, "reason": reason.code(), "message": reason.to_string(), "stored": false });
            return Ok(accepted(StatusCode::ACCEPTED, answer));
        }
    };
    let (status, answer) = match &intake {
        Intake::Installation(change) => {
            // One record an installation, the latest change; removed with the
            // installation, so the records are as many as live installations.
            let key = format!("installation/{}", change.installation_id);
            if change.event == "installation" && change.action == "deleted" {
                kv.delete(&key).await.map_err(storage)?;
            } else {
                let record = serde_json::to_vec(&change).unwrap_or_default();
                kv.put(&key, &record).await.map_err(storage)?;
            }
            (
                StatusCode::ACCEPTED,
                json!({ "recorded": "installation", "installationId": change.installation_id, "action": change.action }),
            )
        }
        Intake::Task(parsed) => task(context, parsed).await?,
        _ => (StatusCode::ACCEPTED, json!({ "ignored": true, "reason": "unsupported" })),
    };
    remember(kv, delivery, &answer, now, &lifetimes).await;
    replay::remember(kv, &digest, delivery, now, lifetimes.delivery_ms).await;
    // A run started: counted against its pull request's or issue's hour.
    if let (Some(hour), StatusCode::ACCEPTED) = (counted, status) {
        hour.record_start(kv, now).await;
    }
    Ok(accepted(status, answer))
}

/// The checks between the redelivery check and the record, each answered
/// 202 with its reason and nothing stored: the payload's date against the
/// replay window (`window_ms`), the repository's recorded policy, the
/// body's digest, the runs of the pull request or issue in the last hour.
/// `Ok(Some)`: a run that counts against that hour (only under a recorded
/// policy, which alone says what the cap is and that the delivery is no
/// outsider's, whose refused comments must not use a pull request's hour).
async fn screen<K: KeyValue>(
    kv: &K,
    intake: &Intake,
    digest: &str,
    delivery: &str,
    now: u64,
    window_ms: u64,
) -> Result<Option<crate::intake_gate::Hour>, agent_zero_github::IgnoreReason> {
    let mut max_runs_per_hour = None;
    if let Intake::Task(parsed) = intake {
        if let Some(reason) = replay::stale(parsed, now, window_ms) {
            return Err(reason);
        }
        match crate::intake_gate::verdict(kv, parsed, now).await {
            Verdict::Declined(reason) => return Err(reason),
            Verdict::Admitted { max_runs_per_hour: max } => max_runs_per_hour = Some(max),
            Verdict::Unknown => {}
        }
    }
    if replay::replayed(kv, digest, delivery, now).await {
        return Err(agent_zero_github::IgnoreReason::ReplayedBody);
    }
    let (Intake::Task(parsed), Some(max)) = (intake, max_runs_per_hour) else { return Ok(None) };
    let Some(hour) = crate::intake_gate::Hour::of(kv, parsed, now).await else { return Ok(None) };
    match hour.refusal(max) {
        Some(reason) => Err(reason),
        None => Ok(Some(hour)),
    }
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
    crate::intake_gate::keep_until(kv, &task_id_for_delivery(delivery), &bytes, now_ms, expires).await;
}

/// `value` with every configured secret (the front's own included: the
/// webhook secret, the control-plane tokens, which the tick role never
/// holds) and every GitHub-token-shaped run removed from its untrusted text
/// (each `UntrustedText`'s `text`: titles, bodies, feedback) before it is
/// stored: a comment quoting a secret stores none. References (logins,
/// shas, paths) are left as they are, so a short secret cannot corrupt one.
fn redacted(value: serde_json::Value, secrets: &[String]) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(|v| redacted(v, secrets)).collect()),
        Value::Object(fields) => {
            let untrusted = fields.get("untrusted") == Some(&Value::Bool(true));
            Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| match v {
                        Value::String(text) if untrusted && k == "text" => {
                            (k, Value::String(crate::auth::redact(&text, secrets)))
                        }
                        v => (k, redacted(v, secrets)),
                    })
                    .collect(),
            )
        }
        other => other,
    }
}

fn storage(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::StorageUnavailable, format!("storage failed; nothing was created: {e}"))
}

async fn task<H: Host>(
    context: &RouteContext<'_, H>,
    parsed: &ParsedDelivery,
) -> Result<(StatusCode, serde_json::Value), ApiError> {
    let task_id = task_id_for_delivery(&parsed.delivery_id);
    let received = Received {
        task_id: task_id.clone(),
        repository: parsed.repository.full_name(),
        trigger: parsed.trigger,
        source: Some(format!("github:{}", parsed.delivery_id)),
        title: parsed.title.as_ref().map(|t| t.text.clone()),
        delivery: redacted(
            serde_json::to_value(parsed)
                .map_err(|e| ApiError::new(ErrorCode::Internal, format!("the delivery could not be recorded: {e}")))?,
            crate::auth::secrets(context.settings),
        ),
    };
    match receive_task(context, received).await? {
        // The policy gate runs in the task's first tick: `state` may
        // still become `ignored`, with its reason on the task.
        None => Ok((StatusCode::ACCEPTED, json!({ "taskId": task_id, "state": "queued", "trigger": parsed.trigger }))),
        Some(id) => Ok((StatusCode::OK, json!({ "taskId": id, "duplicate": true }))),
    }
}

/// Records `received` as a new task (entry 0, its listing row, its first
/// tick), within the queue's bound: `None`, or the task's id when it
/// exists already (the same delivery again). Over the bound: 503 naming
/// it, nothing stored and the delivery not remembered, so the forge shows
/// it failed and a redelivery is taken as new.
pub(super) async fn receive_task<H: Host>(
    context: &RouteContext<'_, H>,
    received: Received,
) -> Result<Option<String>, ApiError> {
    let now = context.invocation.now_ms;
    let kv = context.host.kv();
    crate::run_bounds::check_queue(kv, context.settings.run()?.max_queued).await?;
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
            Ok(None)
        }
        Err(TaskError::Exists(id)) => Ok(Some(id)),
        Err(e) => Err(storage(e)),
    }
}

#[cfg(test)]
mod intake_tests;

#[cfg(test)]
mod redaction_tests {
    use super::redacted;

    #[test]
    fn a_delivery_quoting_a_secret_stores_none_of_it() {
        let secrets = vec!["whsec-front-only-0123456789".to_owned()];
        let parsed = serde_json::json!({
            "body": { "text": "leaked: whsec-front-only-0123456789 and ghp_0123456789abcdefghijABCDEFGHIJ012345", "untrusted": true },
            "feedback": [{ "body": { "text": "again whsec-front-only-0123456789", "untrusted": true } }],
            "subject": { "number": 7, "headSha": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c" },
            "sender": "whsec-front-only-0123456789",
        });
        let stored = redacted(parsed, &secrets);
        let texts = format!("{}{}", stored["body"], stored["feedback"]);
        let stored = stored.to_string();
        assert!(!texts.contains("whsec-front-only"), "{stored}");
        assert!(!stored.contains("ghp_0123456789"), "{stored}");
        assert!(stored.contains("0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"), "a commit sha is no secret: {stored}");
        assert!(stored.contains("\"number\":7"), "{stored}");
        assert!(
            stored.contains("\"sender\":\"whsec-front-only-0123456789\""),
            "a reference is left as it is: {stored}"
        );
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

    const SECRET: &str = "whsec-unit-3f9a";

    fn fixture(event: &str, name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/github-webhooks")
            .join(event)
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn delivery(event: &str, id: &str, body: &[u8], signature: Option<&str>) -> http::Request<Vec<u8>> {
        let signed = agent_zero_github::signature::sign(SECRET.as_bytes(), body);
        http::Request::builder()
            .method("POST")
            .uri("/webhooks/github")
            .header("content-type", "application/json")
            .header("content-length", body.len().to_string())
            .header("x-github-event", event)
            .header("x-github-delivery", id)
            .header("x-hub-signature-256", signature.unwrap_or(&signed))
            // Read by no step: a host that leaves them out answers alike.
            .header("user-agent", "GitHub-Hookshot/044aadd")
            .header("origin", "https://github.com")
            .header("x-github-hook-id", "292430182")
            .body(body.to_vec())
            .unwrap()
    }

    fn settings() -> Settings {
        let mut pairs = vec![("GITHUB_WEBHOOK_SECRET", SECRET)];
        pairs.extend_from_slice(&crate::test_host::RUNNABLE);
        Settings::from_pairs(pairs)
    }

    /// The synchronous steps a host drives itself, as the worker does: only
    /// [`HEADERS`] and the body's length until the MAC (checked here by the
    /// `hmac` crate) matched, then the body.
    fn answered_sync(settings: &Settings, request: &http::Request<Vec<u8>>) -> Checked {
        let mut headers = http::HeaderMap::new();
        for name in HEADERS {
            for value in request.headers().get_all(name) {
                headers.append(name, value.clone());
            }
        }
        match signature(settings, &headers, request.body().len()) {
            SignatureCheck::Refused(refusal) => Checked::Answered(refusal),
            SignatureCheck::Verify(signature) => {
                if !agent_zero_github::signature::matches(signature.key, request.body(), &signature.mac) {
                    return Checked::Answered(mismatched());
                }
                let mut trimmed = http::Request::new(request.body().clone());
                *trimmed.headers_mut() = headers;
                answer_verified(settings, trimmed, true)
            }
        }
    }

    fn parts(response: &http::Response<Vec<u8>>) -> (u16, Vec<(String, String)>, String) {
        let headers = response
            .headers()
            .iter()
            // Each invocation's own id (the host stamps it on the synchronous path).
            .filter(|(n, _)| n.as_str() != crate::log_line::REQUEST_ID_HEADER)
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        (response.status().as_u16(), headers, String::from_utf8_lossy(response.body()).into_owned())
    }

    /// A ping and an action no trigger handles are answered from the body
    /// and the settings alone: no storage read or write, and a redelivery
    /// gets the same answer.
    #[test]
    fn a_delivery_that_is_not_acted_on_touches_no_storage() {
        let host = crate::test_host::TestHost::new();
        let settings = settings();
        let closed = fixture("pull_request", "closed.payload.json");
        for (event, body, status) in
            [("ping", fixture("ping", "payload.json"), 200), ("pull_request", closed.clone(), 202)]
        {
            let first = host.send(&settings, delivery(event, "d-same", &body, None));
            let again = host.send(&settings, delivery(event, "d-same", &body, None));
            assert_eq!(first.status().as_u16(), status, "{event}: {}", String::from_utf8_lossy(first.body()));
            assert_eq!(parts(&first), parts(&again), "{event}: a redelivery is answered the same");
        }
        let ignored: serde_json::Value =
            serde_json::from_slice(host.send(&settings, delivery("pull_request", "d-2", &closed, None)).body())
                .unwrap();
        assert_eq!(ignored["ignored"], true, "{ignored}");
        assert_eq!(host.kv.operations(), 0, "no storage operation: {:?}", host.kv.snapshot().keys());
    }

    /// What a host answers through the synchronous steps, handing them only
    /// [`HEADERS`], is byte for byte what the async handler answers with all
    /// of them, for every refusal and every answer without storage; a
    /// delivery that is acted on comes out verified and parsed, and
    /// [`crate::act_on`] stores it as the handler would have.
    #[test]
    fn the_synchronous_steps_answer_as_the_handler_does() {
        let host = crate::test_host::TestHost::new();
        let settings = settings();
        let ping = fixture("ping", "payload.json");
        let closed = fixture("pull_request", "closed.payload.json");
        let wrong = agent_zero_github::signature::sign(b"not-the-secret", &closed);
        let mut cases = vec![
            ("ping", delivery("ping", "s-1", &ping, None)),
            ("ignored action", delivery("pull_request", "s-2", &closed, None)),
            ("wrong signature", delivery("pull_request", "s-3", &closed, Some(&wrong))),
            ("malformed signature", delivery("pull_request", "s-4", &closed, Some("sha256=zz"))),
            ("bad delivery id", delivery("ping", "s/5", &ping, None)),
            ("not JSON", delivery("pull_request", "s-6", b"{not json", None)),
        ];
        let mut text = delivery("ping", "s-7", &ping, None);
        text.headers_mut().insert("content-type", http::HeaderValue::from_static("text/plain"));
        cases.push(("content type", text));
        let mut large = delivery("ping", "s-8", &ping, None);
        large.headers_mut().insert("content-length", http::HeaderValue::from_static("999999999"));
        cases.push(("declared too large", large));
        let mut unnamed = delivery("ping", "s-9", &ping, None);
        unnamed.headers_mut().remove("x-github-event");
        cases.push(("no event header", unnamed));
        let mut legacy = delivery("ping", "s-12", &ping, None);
        legacy.headers_mut().remove("x-hub-signature-256");
        legacy.headers_mut().insert("x-hub-signature", http::HeaderValue::from_static("sha1=0123"));
        cases.push(("legacy signature header only", legacy));
        let answered = |settings: &Settings, request: &http::Request<Vec<u8>>, what: &str| match answered_sync(
            settings, request,
        ) {
            Checked::Answered(answer) => answer,
            Checked::Acted(acted) => panic!("{what}: acted on: {acted:?}"),
        };
        for (what, request) in cases {
            let sync = answered(&settings, &request, what);
            assert_eq!(parts(&sync), parts(&host.send(&settings, request)), "{what}");
        }
        let unconfigured = Settings::from_pairs(crate::test_host::RUNNABLE.to_vec());
        let request = delivery("ping", "s-10", &ping, None);
        let sync = answered(&unconfigured, &request, "not configured");
        assert_eq!(sync.status(), 503);
        assert_eq!(parts(&sync), parts(&host.send(&unconfigured, request)), "not configured");
        assert_eq!(host.kv.operations(), 0, "nothing stored for any of them");

        let installation = delivery("installation", "s-11", &fixture("installation", "created.payload.json"), None);
        let Checked::Acted(acted) = answered_sync(&settings, &installation) else {
            panic!("an installation change is acted on")
        };
        let invocation =
            crate::Invocation { now_ms: agent_zero_ports::Clock::now_ms(&host.clock), request_id: "1".into() };
        let stored = block_on(crate::act_on(&host, &settings, &invocation, acted));
        assert_eq!(stored.status(), 202, "{}", String::from_utf8_lossy(stored.body()));
        assert!(host.kv.operations() > 0, "act_on recorded it");
        // The handler reads that record as its own: a redelivery is a duplicate.
        let again = host.send(&settings, installation);
        assert_eq!(again.status(), 200, "{}", String::from_utf8_lossy(again.body()));
        let (first, again): (serde_json::Value, serde_json::Value) =
            (serde_json::from_slice(stored.body()).unwrap(), serde_json::from_slice(again.body()).unwrap());
        assert_eq!(again["duplicate"], true, "{again}");
        assert_eq!(again["installationId"], first["installationId"], "{again}");
    }

    /// The octokit `issues` `labeled` capture, labelled `agent-zero` and
    /// dated at `host`'s now (inside the replay window), and that now.
    fn labelled_issue(host: &crate::test_host::TestHost) -> (Vec<u8>, u64) {
        let mut payload: serde_json::Value =
            serde_json::from_slice(&fixture("issues", "labeled.payload.json")).unwrap();
        payload["label"]["name"] = json!("agent-zero");
        let now_ms = agent_zero_ports::Clock::now_ms(&host.clock);
        payload["issue"]["updated_at"] = json!(agent_zero_contracts::rfc3339(now_ms));
        (serde_json::to_vec(&payload).unwrap(), now_ms)
    }

    /// A labelled issue, the path `tests/bench/intake-path.sh` follows
    /// (the worker's: the synchronous check and parse, then
    /// [`crate::act_on`]): recorded once as a queued task whose log holds
    /// the delivery, with the tick that admits it enqueued; its redelivery
    /// is a duplicate and records nothing more.
    #[test]
    fn a_labelled_issue_is_recorded_once_as_a_queued_task() {
        let host = crate::test_host::TestHost::new();
        let settings = settings();
        let (body, now_ms) = labelled_issue(&host);
        let request = delivery("issues", "d-labelled-1", &body, None);
        let Checked::Acted(acted) = answered_sync(&settings, &request) else { panic!("a labelled issue is acted on") };
        let invocation = crate::Invocation { now_ms, request_id: "1".into() };
        let stored = block_on(crate::act_on(&host, &settings, &invocation, acted));
        assert_eq!(stored.status(), 202, "{}", String::from_utf8_lossy(stored.body()));
        let answer: serde_json::Value = serde_json::from_slice(stored.body()).unwrap();
        assert_eq!((answer["state"].as_str(), answer["trigger"].as_str()), (Some("queued"), Some("issue")), "{answer}");
        let id = answer["taskId"].as_str().expect("a task id").to_owned();
        let log = block_on(host.kv.get(&agent_zero_engine::log_key(&id, 0))).unwrap().expect("the task's first entry");
        assert!(String::from_utf8_lossy(&log).contains("d-labelled-1"), "the entry holds the delivery");
        assert_eq!(host.queue.ticks.borrow().len(), 1, "the admitting tick is enqueued");
        let operations = host.kv.operations();
        let again = host.send(&settings, request);
        assert_eq!(again.status(), 200, "{}", String::from_utf8_lossy(again.body()));
        let again: serde_json::Value = serde_json::from_slice(again.body()).unwrap();
        assert_eq!((again["duplicate"].as_bool(), again["taskId"].as_str()), (Some(true), Some(id.as_str())));
        assert_eq!(host.queue.ticks.borrow().len(), 1, "a redelivery enqueues nothing");
        assert!(host.kv.operations() - operations <= 1, "a redelivery only reads its record");
    }

    /// The same delivery through the handler (Spin's path, and the
    /// worker's when its synchronous step cannot verify): the same answer.
    #[test]
    fn a_labelled_issue_through_the_handler_is_queued() {
        let host = crate::test_host::TestHost::new();
        let settings = settings();
        let (body, _) = labelled_issue(&host);
        let answer = host.send(&settings, delivery("issues", "d-labelled-1", &body, None));
        assert_eq!(answer.status(), 202, "{}", String::from_utf8_lossy(answer.body()));
        let answer: serde_json::Value = serde_json::from_slice(answer.body()).unwrap();
        assert_eq!((answer["state"].as_str(), answer["trigger"].as_str()), (Some("queued"), Some("issue")), "{answer}");
        assert_eq!(host.queue.ticks.borrow().len(), 1, "the admitting tick is enqueued");
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
