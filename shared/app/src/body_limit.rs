//! How many body bytes a request may carry, known from its method, path and
//! the operator's settings alone, so a host refuses a larger body before it
//! reads it.
//!
//! Sans-IO: hosts ask [`body_limit`] for the route's limit, start a
//! [`BoundedBody`] (413 at once when `Content-Length` declares more), push
//! each chunk they read from their own body stream into it (413 as soon as
//! the bytes pass the limit, nothing buffered past it), and answer a refusal
//! with [`refuse`]. The routes still check their own, possibly smaller,
//! limits on what was read.
//!
//! | route | limit |
//! |---|---|
//! | `POST /webhooks/github`, `/webhooks/gitlab`, `/webhooks/gitea` | `AGENT_ZERO_WEBHOOK_MAX_BYTES` (default 1 MiB) |
//! | `POST /api/v1/tasks`, `POST /api/v1/approvals/{id}` | 256 KiB (the task API's JSON bodies) |
//! | everything else (`GET`, `HEAD`, `OPTIONS`, the sweep, unknown paths) | 4 KiB |

use http::{HeaderMap, Method, header};

use crate::error::{ApiError, ErrorCode};
use crate::router::{self, RouteId};
use crate::{Settings, auth};

/// What a route without a body accepts: enough for a client that sends a
/// stray small body, far too little to matter.
pub const NO_BODY_MAX_BYTES: usize = 4 * 1024;

/// The most body bytes `method path` may carry (`path` as requested, under
/// the base path). 404 outside the base path; 503 naming
/// `AGENT_ZERO_WEBHOOK_MAX_BYTES` when the webhook route's limit is
/// malformed (never silently the default), or `AGENT_ZERO_BASE_PATH` when
/// that is.
pub fn body_limit(method: &Method, path: &str, settings: &Settings) -> Result<usize, ApiError> {
    // Outside the base path nothing is served: say so before any body.
    let path = router::app_path(settings.base_path()?, path)?;
    let Ok(route) = router::resolve(method, path) else { return Ok(NO_BODY_MAX_BYTES) };
    // Exhaustive on purpose: a new route decides what body it takes.
    match route.id {
        RouteId::GithubWebhook | RouteId::GitLabWebhook | RouteId::GiteaWebhook => settings.webhook_max_bytes(),
        RouteId::CreateTask | RouteId::DecideApproval => Ok(crate::routes::MAX_CREATE_BYTES),
        // Dashboard forms: a decision with its comment, a sign-out.
        RouteId::DashboardDecision | RouteId::SignOut => Ok(crate::routes::MAX_CREATE_BYTES),
        RouteId::Health
        | RouteId::ListTasks
        | RouteId::GetTask
        | RouteId::TaskEvidence
        | RouteId::TaskEvidenceMarkdown
        | RouteId::TaskEvidenceJson
        | RouteId::TaskEvidenceHtml
        | RouteId::TaskLog
        | RouteId::TaskReceipt
        | RouteId::ReceiptKeys
        | RouteId::Doctor
        | RouteId::Overview
        | RouteId::Audit
        | RouteId::OpenApi
        | RouteId::Docs
        | RouteId::Sweep
        | RouteId::TaskListPage
        | RouteId::TaskPage
        | RouteId::SignIn
        | RouteId::SignInCallback
        | RouteId::DashboardTasks
        | RouteId::DashboardTask
        | RouteId::DashboardAudit
        | RouteId::DashboardEvidence
        | RouteId::RevokeDashboardSessions => Ok(NO_BODY_MAX_BYTES),
    }
}

/// A request body read up to its route's limit.
#[derive(Debug)]
pub struct BoundedBody {
    limit: usize,
    declared: Option<u64>,
    bytes: Vec<u8>,
}

impl BoundedBody {
    /// Starts the body of a request with `headers`, before any byte is read:
    /// 413 naming `Content-Length` when it declares more than `limit`, 400
    /// naming it when it is not one number of bytes.
    pub fn start(limit: usize, headers: &HeaderMap) -> Result<Self, ApiError> {
        let declared = declared_length(headers)?;
        if let Some(declared) = declared.filter(|n| *n > limit as u64) {
            return Err(ApiError::new(
                ErrorCode::PayloadTooLarge,
                format!("Content-Length declares {declared} bytes; this route accepts at most {limit}"),
            )
            .with_field("Content-Length"));
        }
        Ok(Self { limit, declared, bytes: Vec::new() })
    }

    /// The length the request declared (within the limit), if it did.
    pub fn declared(&self) -> Option<u64> {
        self.declared
    }

    /// Adds the next chunk read from the host: 413 naming `body` as soon as
    /// the body passes the limit, without keeping the chunk. The host stops
    /// reading then.
    pub fn push(&mut self, chunk: Vec<u8>) -> Result<(), ApiError> {
        self.admit(chunk.len())?;
        if self.bytes.is_empty() {
            // Most bodies arrive in one chunk: keep it rather than copy it.
            self.bytes = chunk;
        } else {
            self.bytes.extend_from_slice(&chunk);
        }
        Ok(())
    }

    /// Whether a next chunk of `length` bytes fits: what [`Self::push`]
    /// refuses, for a host that holds the bytes elsewhere until it needs
    /// them.
    pub fn admit(&self, length: usize) -> Result<(), ApiError> {
        if length > self.limit - self.bytes.len() {
            return Err(ApiError::new(
                ErrorCode::PayloadTooLarge,
                format!("the body is over this route's limit of {} bytes", self.limit),
            )
            .with_field("body"));
        }
        Ok(())
    }

    /// The body read so far (all of it once the host's stream ended).
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// The declared `Content-Length`: every value must be the same number of
/// bytes (digits only; a number too large to hold is over any limit).
fn declared_length(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let mut declared = None;
    for value in headers.get_all(header::CONTENT_LENGTH) {
        let text = value.to_str().unwrap_or_default().trim();
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed_length("expected a number of bytes"));
        }
        let length = text.parse::<u64>().unwrap_or(u64::MAX);
        if declared.is_some_and(|d| d != length) {
            return Err(malformed_length("the request declares two different lengths"));
        }
        declared = Some(length);
    }
    Ok(declared)
}

fn malformed_length(why: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, format!("Content-Length: {why}")).with_field("Content-Length")
}

/// The answer to a request refused before its body was read: `error`, with
/// the CORS headers [`crate::handle`] would have added.
pub fn refuse(settings: &Settings, head: &http::request::Parts, error: ApiError) -> http::Response<Vec<u8>> {
    let mut response = error.into_response();
    if let Some(origin) = auth::allowed_origin(settings, head.uri.path(), &head.headers) {
        auth::add_cors(&mut response, origin);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::WEBHOOK_MAX_BYTES;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    fn limit(method: Method, path: &str, settings: &Settings) -> usize {
        body_limit(&method, path, settings).unwrap()
    }

    #[test]
    fn each_route_has_its_limit() {
        let default = Settings::default();
        assert_eq!(limit(Method::POST, "/webhooks/github", &default), 1024 * 1024);
        assert_eq!(limit(Method::POST, "/api/v1/tasks", &default), 256 * 1024);
        assert_eq!(limit(Method::POST, "/api/v1/approvals/gh-1", &default), 256 * 1024);
        for (method, path) in [
            (Method::GET, "/"),
            (Method::HEAD, "/"),
            (Method::GET, "/api/v1/tasks"),
            (Method::GET, "/api/v1/health"),
            (Method::GET, "/tasks/gh-1"),
            (Method::POST, "/api/v1/sweep"),
            (Method::OPTIONS, "/api/v1/tasks"),
            (Method::GET, "/webhooks/github"),
            (Method::POST, "/"),
            (Method::PUT, "/nowhere"),
        ] {
            assert_eq!(limit(method.clone(), path, &default), NO_BODY_MAX_BYTES, "{method} {path}");
        }
        let configured = Settings::from_pairs([(WEBHOOK_MAX_BYTES, " 100000 ")]);
        assert_eq!(limit(Method::POST, "/webhooks/github", &configured), 100_000);
    }

    #[test]
    fn a_malformed_webhook_limit_is_503_naming_the_variable() {
        for value in ["25MiB", "-1", "0", "1e6", "99999999999999999999999"] {
            let config = Settings::from_pairs([(WEBHOOK_MAX_BYTES, value)]);
            let error = body_limit(&Method::POST, "/webhooks/github", &config).unwrap_err();
            assert_eq!(
                (error.code, error.field.as_deref()),
                (ErrorCode::NotConfigured, Some(WEBHOOK_MAX_BYTES)),
                "{value}"
            );
            assert_eq!(error.code.status(), 503);
            assert!(error.message.contains(WEBHOOK_MAX_BYTES), "{}", error.message);
            // Other routes do not depend on it.
            assert_eq!(limit(Method::POST, "/api/v1/tasks", &config), 256 * 1024);
        }
    }

    #[test]
    fn a_declared_length_over_the_limit_is_refused_before_reading() {
        let error = BoundedBody::start(100, &headers(&[("content-length", "94371840")])).unwrap_err();
        assert_eq!((error.code, error.field.as_deref()), (ErrorCode::PayloadTooLarge, Some("Content-Length")));
        assert!(error.message.contains("94371840") && error.message.contains("100"), "{}", error.message);
        let huge = BoundedBody::start(100, &headers(&[("content-length", "99999999999999999999999")])).unwrap_err();
        assert_eq!(huge.code, ErrorCode::PayloadTooLarge);
        let exact = BoundedBody::start(100, &headers(&[("content-length", "100")])).unwrap();
        assert_eq!(exact.declared(), Some(100));
        assert_eq!(BoundedBody::start(0, &HeaderMap::new()).unwrap().declared(), None);
        assert!(BoundedBody::start(0, &headers(&[("content-length", "0")])).is_ok());
    }

    #[test]
    fn a_malformed_declared_length_is_400_naming_the_header() {
        for pairs in [
            &[("content-length", "12x")][..],
            &[("content-length", "")],
            &[("content-length", "-1")],
            &[("content-length", "10"), ("content-length", "11")],
        ] {
            let error = BoundedBody::start(100, &headers(pairs)).unwrap_err();
            let got = (error.code, error.field.as_deref());
            assert_eq!(got, (ErrorCode::InvalidRequest, Some("Content-Length")), "{pairs:?}");
        }
        assert!(BoundedBody::start(100, &headers(&[("content-length", "10"), ("content-length", "10")])).is_ok());
    }

    #[test]
    fn chunks_are_kept_up_to_the_limit_and_refused_past_it() {
        let mut body = BoundedBody::start(10, &HeaderMap::new()).unwrap();
        body.push(b"hello".to_vec()).unwrap();
        body.push(Vec::new()).unwrap();
        body.push(b"world".to_vec()).unwrap();
        let error = body.push(b"!".to_vec()).unwrap_err();
        assert_eq!((error.code, error.field.as_deref()), (ErrorCode::PayloadTooLarge, Some("body")));
        assert!(error.message.contains("10 bytes"), "{}", error.message);
        assert_eq!(body.into_bytes(), b"helloworld", "nothing past the limit is kept");

        let mut one_big_chunk = BoundedBody::start(10, &HeaderMap::new()).unwrap();
        assert!(one_big_chunk.push(vec![b'x'; 11]).is_err());
        assert!(one_big_chunk.into_bytes().is_empty());
    }

    #[test]
    fn a_refusal_carries_cors_for_an_allowed_origin() {
        let config = Settings::from_pairs([("AGENT_ZERO_CONTROL_PLANE_ORIGINS", "https://ops.example")]);
        let request = http::Request::post("/api/v1/tasks").header("origin", "https://ops.example");
        let (head, ()) = request.body(()).unwrap().into_parts();
        let error = BoundedBody::start(10, &headers(&[("content-length", "11")])).unwrap_err();
        let response = refuse(&config, &head, error);
        assert_eq!(response.status(), 413);
        assert_eq!(response.headers()["access-control-allow-origin"], "https://ops.example");
        let body: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
        assert_eq!(body["error"]["code"], "payload_too_large");
        assert_eq!(body["error"]["field"], "Content-Length");
    }
}
