//! The one error shape every route answers with:
//! `{"error": {"code", "message", "field"?}}`, mapped to a status here only.

use http::StatusCode;
use serde_json::json;

/// Stable, machine-readable error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// No route matches the path.
    NotFound,
    /// The path exists but not with this method.
    MethodNotAllowed,
    /// The request body or a parameter is invalid.
    InvalidRequest,
    /// Operator configuration needed by this route is missing.
    NotConfigured,
    /// The key-value store failed.
    StorageUnavailable,
    /// No credential, or one that matches no configured principal.
    Unauthorized,
    /// The principal is known but not allowed this (repository, mode, origin).
    Forbidden,
    /// The resource is not in a state that allows this (a task not waiting
    /// for a person, a concurrent decision).
    Conflict,
    /// The request body is larger than the route accepts.
    PayloadTooLarge,
    /// The request body is not in a media type the route accepts.
    UnsupportedMediaType,
    /// A stored record could not be read back (not written by this version).
    Internal,
    /// A service the request depends on (GitHub) failed; nothing was written.
    UpstreamFailed,
    /// The repository's `.agent-zero.yml` does not parse or validate.
    InvalidPolicy,
    /// The deployment acts as a GitHub App, and the App is not installed on
    /// the repository a task names: nothing could read or check it out.
    AppNotInstalled,
    /// As many tasks are `queued` as `AGENT_ZERO_MAX_QUEUED` allows: the
    /// new one was not stored (`Retry-After` says when to try again).
    QueueFull,
}

impl ErrorCode {
    /// The wire name of the code.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::InvalidRequest => "invalid_request",
            Self::NotConfigured => "not_configured",
            Self::StorageUnavailable => "storage_unavailable",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::Conflict => "conflict",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::Internal => "internal_error",
            Self::UpstreamFailed => "upstream_failed",
            Self::InvalidPolicy => "invalid_policy",
            Self::AppNotInstalled => "app_not_installed",
            Self::QueueFull => "queue_full",
        }
    }

    /// The HTTP status of the code.
    pub const fn status(self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::InvalidRequest => StatusCode::BAD_REQUEST,
            Self::NotConfigured | Self::StorageUnavailable | Self::QueueFull => StatusCode::SERVICE_UNAVAILABLE,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::Conflict => StatusCode::CONFLICT,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::UpstreamFailed => StatusCode::BAD_GATEWAY,
            Self::InvalidPolicy | Self::AppNotInstalled => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }
}

/// An error answer: a code, a sentence for humans, and the field (JSON
/// path, header or variable name) it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub field: Option<String>,
    /// Extra headers (`Allow` on 405).
    pub headers: Vec<(http::HeaderName, String)>,
}

impl ApiError {
    /// An error without a field.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), field: None, headers: Vec::new() }
    }

    /// Names the field the error is about.
    #[must_use]
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The JSON body of this error.
    pub fn body(&self) -> serde_json::Value {
        let mut error = json!({ "code": self.code.as_str(), "message": self.message });
        if let Some(field) = &self.field {
            error["field"] = json!(field);
        }
        json!({ "error": error })
    }

    /// The response for this error.
    pub fn into_response(self) -> http::Response<Vec<u8>> {
        let mut response = crate::json_response(self.code.status(), &self.body());
        for (name, value) in self.headers {
            if let Ok(value) = http::HeaderValue::from_str(&value) {
                response.headers_mut().insert(name, value);
            }
        }
        response
    }
}

/// The engine's task errors in the one error shape.
impl From<agent_zero_engine::TaskError> for ApiError {
    fn from(error: agent_zero_engine::TaskError) -> Self {
        use agent_zero_engine::TaskError;
        let message = error.to_string();
        match error {
            TaskError::InvalidTaskId(_) | TaskError::NotFound(_) => {
                Self::new(ErrorCode::NotFound, message).with_field("id")
            }
            TaskError::Exists(_)
            | TaskError::NotAwaitingHuman { .. }
            | TaskError::Conflict(_)
            | TaskError::AlreadyDecided { .. } => Self::new(ErrorCode::Conflict, message),
            TaskError::ShownChanged { .. } => Self::new(ErrorCode::Conflict, message).with_field("decisionDigest"),
            TaskError::Store(_) => Self::new(ErrorCode::StorageUnavailable, message),
            _ => Self::new(ErrorCode::Internal, message),
        }
    }
}

/// The task index's errors: a bad cursor is the caller's (400 naming it),
/// anything else the store's.
impl From<crate::task_index::IndexError> for ApiError {
    fn from(error: crate::task_index::IndexError) -> Self {
        match error {
            crate::task_index::IndexError::InvalidCursor(why) => {
                Self::new(ErrorCode::InvalidRequest, format!("cursor: {why}")).with_field("cursor")
            }
            other => Self::new(ErrorCode::StorageUnavailable, other.to_string()),
        }
    }
}
