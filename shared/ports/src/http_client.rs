//! The outbound HTTP port: one request in, one response out.

use thiserror::Error;

/// Why an outbound request produced no response.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The host refused the destination (not in `allowed_outbound_hosts`).
    #[error("outbound request to `{0}` is not allowed by the host")]
    NotAllowed(String),
    /// Connection, TLS or protocol failure.
    #[error("transport error: {0}")]
    Transport(String),
    /// No response within the deadline.
    #[error("timed out after {0} ms")]
    Timeout(u64),
}

/// Sends requests through the host's outbound HTTP.
pub trait HttpClient {
    /// Sends `request` and returns the whole response.
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError>;
}

/// A deadline for one outbound request, carried in the request's
/// extensions; host adapters enforce it and answer [`HttpError::Timeout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTimeout(pub u64);

impl RequestTimeout {
    /// The timeout a request carries, if any.
    pub fn of<B>(request: &http::Request<B>) -> Option<u64> {
        request.extensions().get::<Self>().map(|t| t.0)
    }
}

impl<T: HttpClient + ?Sized> HttpClient for &T {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        (**self).send(request).await
    }
}
