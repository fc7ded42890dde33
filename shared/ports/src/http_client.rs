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
    /// The response body (declared or read so far) passed the request's
    /// [`ResponseLimit`]; the rest was not read.
    #[error("response body is larger than the {limit}-byte limit")]
    TooLarge {
        /// The limit the request carried, in bytes.
        limit: u64,
    },
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

/// The most response-body bytes a request accepts, carried in the request's
/// extensions; host adapters read the body chunk by chunk and answer
/// [`HttpError::TooLarge`] as soon as it passes the limit (or before reading
/// when `Content-Length` already declares more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseLimit(pub u64);

impl ResponseLimit {
    /// The limit a request carries, if any.
    pub fn of<B>(request: &http::Request<B>) -> Option<u64> {
        request.extensions().get::<Self>().map(|l| l.0)
    }

    /// Sets the limit on `request`, replacing any earlier one.
    pub fn set<B>(request: &mut http::Request<B>, limit: u64) {
        request.extensions_mut().insert(Self(limit));
    }
}

/// A response body being read under an optional [`ResponseLimit`]: host
/// adapters push each chunk as it arrives and stop at the first error, so no
/// more than `limit` bytes are ever held.
#[derive(Debug)]
pub struct BoundedResponseBody {
    limit: Option<u64>,
    bytes: Vec<u8>,
}

impl BoundedResponseBody {
    /// Starts a body; fails at once when the response's `Content-Length`
    /// declares more than `limit`.
    pub fn new(limit: Option<u64>, headers: &http::HeaderMap) -> Result<Self, HttpError> {
        if let Some(limit) = limit {
            let declared = headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            if declared.is_some_and(|declared| declared > limit) {
                return Err(HttpError::TooLarge { limit });
            }
        }
        Ok(Self { limit, bytes: Vec::new() })
    }

    /// Appends one chunk; fails (keeping nothing of it) when the body would
    /// pass the limit.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), HttpError> {
        if let Some(limit) = self.limit {
            let total = (self.bytes.len() as u64).saturating_add(chunk.len() as u64);
            if total > limit {
                return Err(HttpError::TooLarge { limit });
            }
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    /// The whole body.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Applies `limit` to a response already held whole (in-memory and test
/// clients), so they answer as the hosts do.
pub fn enforce_limit(
    limit: Option<u64>,
    response: http::Response<Vec<u8>>,
) -> Result<http::Response<Vec<u8>>, HttpError> {
    let mut body = BoundedResponseBody::new(limit, response.headers())?;
    let (parts, bytes) = response.into_parts();
    body.push(&bytes)?;
    Ok(http::Response::from_parts(parts, body.into_bytes()))
}

impl<T: HttpClient + ?Sized> HttpClient for &T {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        (**self).send(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(content_length: Option<&str>) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        if let Some(length) = content_length {
            headers.insert(http::header::CONTENT_LENGTH, length.parse().unwrap());
        }
        headers
    }

    #[test]
    fn the_limit_rides_in_the_request_extensions() {
        let mut request = http::Request::new(Vec::<u8>::new());
        assert_eq!(ResponseLimit::of(&request), None);
        ResponseLimit::set(&mut request, 10);
        ResponseLimit::set(&mut request, 64);
        assert_eq!(ResponseLimit::of(&request), Some(64));
        assert_eq!(RequestTimeout::of(&request), None);
    }

    #[test]
    fn a_declared_length_over_the_limit_fails_before_reading() {
        let error = BoundedResponseBody::new(Some(100), &headers(Some("101"))).unwrap_err();
        assert_eq!(error, HttpError::TooLarge { limit: 100 });
        assert!(error.to_string().contains("100-byte limit"), "{error}");
        assert!(BoundedResponseBody::new(Some(100), &headers(Some("100"))).is_ok());
        assert!(BoundedResponseBody::new(None, &headers(Some("999999999"))).is_ok());
    }

    #[test]
    fn chunks_stop_at_the_first_one_past_the_limit() {
        // No Content-Length (chunked): the stream itself is counted.
        let mut body = BoundedResponseBody::new(Some(10), &headers(None)).unwrap();
        body.push(b"12345").unwrap();
        body.push(b"67890").unwrap();
        assert_eq!(body.push(b"x"), Err(HttpError::TooLarge { limit: 10 }));
        assert_eq!(body.bytes.len(), 10, "the refused chunk is not kept");
        // A lying Content-Length under the limit does not let more through.
        let mut body = BoundedResponseBody::new(Some(4), &headers(Some("2"))).unwrap();
        assert_eq!(body.push(b"abcde"), Err(HttpError::TooLarge { limit: 4 }));
    }

    #[test]
    fn without_a_limit_the_whole_body_is_kept() {
        let mut body = BoundedResponseBody::new(None, &headers(None)).unwrap();
        body.push(&[7; 1000]).unwrap();
        body.push(&[8; 24]).unwrap();
        assert_eq!(body.into_bytes().len(), 1024);
    }

    #[test]
    fn held_responses_are_checked_like_streamed_ones() {
        let response = || http::Response::new(vec![0u8; 11]);
        assert_eq!(enforce_limit(Some(10), response()).unwrap_err(), HttpError::TooLarge { limit: 10 });
        assert_eq!(enforce_limit(Some(11), response()).unwrap().body().len(), 11);
        assert_eq!(enforce_limit(None, response()).unwrap().body().len(), 11);
    }
}
