//! Shared request/response plumbing for the adapters.

// A build with some adapters left out leaves the others' helpers unused.
#![cfg_attr(
    not(all(feature = "custom", feature = "e2b", feature = "daytona", feature = "vercel", feature = "cloudflare")),
    allow(dead_code)
)]

use agent_zero_ports::{HttpClient, RequestTimeout, ResponseLimit};
use serde::de::DeserializeOwned;

use crate::checkout::{ArchiveAuth, CheckoutSource};
use crate::provider::ProviderError;
use agent_zero_ports::Secret;

/// The most bytes any provider answer may carry unless the call sets its
/// own bound: well over a file read ([`MAX_READ_BYTES`](crate::MAX_READ_BYTES),
/// base64 in a JSON envelope) and a command's capped output with its
/// envelope, so a vendor answering without end is cut off at the HTTP port
/// (the hosts stop reading) instead of being held whole.
pub(crate) const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// One outbound call: builds the request, sends it, maps failures to
/// scrubbed [`ProviderError`]s.
pub(crate) struct Call<'a> {
    pub provider: &'static str,
    pub operation: &'static str,
    pub secret: &'a Secret,
}

impl Call<'_> {
    pub(crate) fn request(&self, method: http::Method, url: &str) -> http::request::Builder {
        http::Request::builder().method(method).uri(url)
    }

    /// Sends and returns status + body; non-2xx becomes an error (404 as `NotFound`).
    pub(crate) async fn send<C: HttpClient>(
        &self,
        client: &C,
        builder: http::request::Builder,
        body: Vec<u8>,
        timeout_ms: u64,
        what: &str,
    ) -> Result<(u16, Vec<u8>), ProviderError> {
        let response = self.send_response(client, builder, body, timeout_ms, what).await?;
        Ok((response.status().as_u16(), response.into_body()))
    }

    /// [`Call::send`], keeping the response headers.
    pub(crate) async fn send_response<C: HttpClient>(
        &self,
        client: &C,
        builder: http::request::Builder,
        body: Vec<u8>,
        timeout_ms: u64,
        what: &str,
    ) -> Result<http::Response<Vec<u8>>, ProviderError> {
        self.send_limited(client, builder, body, timeout_ms, MAX_RESPONSE_BYTES, what).await
    }

    /// [`Call::send_response`] accepting at most `limit` body bytes; a longer
    /// answer fails as [`HttpError::TooLarge`](agent_zero_ports::HttpError::TooLarge)
    /// naming the limit.
    pub(crate) async fn send_limited<C: HttpClient>(
        &self,
        client: &C,
        builder: http::request::Builder,
        body: Vec<u8>,
        timeout_ms: u64,
        limit: u64,
        what: &str,
    ) -> Result<http::Response<Vec<u8>>, ProviderError> {
        let mut request = builder.body(body).map_err(|e| self.protocol(format!("cannot build request: {e}")))?;
        request.extensions_mut().insert(RequestTimeout(timeout_ms));
        ResponseLimit::set(&mut request, limit);
        let response = client.send(request).await.map_err(|source| ProviderError::Http {
            provider: self.provider,
            operation: self.operation,
            source: scrub_http(self.secret, source),
        })?;
        let status = response.status().as_u16();
        if status == 404 {
            return Err(ProviderError::NotFound {
                provider: self.provider,
                operation: self.operation,
                what: what.to_owned(),
            });
        }
        if !(200..300).contains(&status) {
            let text = String::from_utf8_lossy(response.body());
            let message = self.secret.scrub(&text.chars().take(500).collect::<String>());
            return Err(ProviderError::Status { provider: self.provider, operation: self.operation, status, message });
        }
        Ok(response)
    }

    pub(crate) fn json<T: DeserializeOwned>(&self, body: &[u8]) -> Result<T, ProviderError> {
        agent_zero_codecs::json::from_slice(body).map_err(|e| self.protocol(e.to_string()))
    }

    pub(crate) fn protocol(&self, reason: String) -> ProviderError {
        ProviderError::Protocol {
            provider: self.provider,
            operation: self.operation,
            reason: self.secret.scrub(&reason),
        }
    }
}

fn scrub_http(secret: &Secret, error: agent_zero_ports::HttpError) -> agent_zero_ports::HttpError {
    use agent_zero_ports::HttpError as E;
    match error {
        E::NotAllowed(s) => E::NotAllowed(secret.scrub(&s)),
        E::Transport(s) => E::Transport(secret.scrub(&s)),
        other => other,
    }
}

/// Downloads a checkout archive through the edge for adapters that take
/// files, not links: bounded by `timeout_ms` and [`MAX_ARCHIVE_BYTES`],
/// with no credential header but `authorization` (the forge's token, for
/// archive endpoints without a self-authorising link), sent as a sensitive
/// header value. Errors show neither the link nor that value. The hosts
/// follow no redirect, so the header reaches only the link's own origin.
///
/// [`MAX_ARCHIVE_BYTES`]: crate::MAX_ARCHIVE_BYTES
pub(crate) async fn fetch_archive<C: HttpClient>(
    client: &C,
    provider: &'static str,
    url: &Secret,
    authorization: Option<&ArchiveAuth>,
    timeout_ms: u64,
) -> Result<Vec<u8>, ProviderError> {
    let call = Call { provider, operation: "download checkout", secret: url };
    let mut builder = call.request(http::Method::GET, url.expose());
    if let Some(auth) = authorization {
        let mut value = http::HeaderValue::from_str(auth.value.expose())
            .map_err(|_| call.protocol(format!("the `{}` header value is not a valid header value", auth.name)))?;
        value.set_sensitive(true);
        builder = builder.header(auth.name, value);
    }
    let limit = crate::MAX_ARCHIVE_BYTES as u64;
    let sent = call.send_limited(client, builder, Vec::new(), timeout_ms, limit, "the checkout archive").await;
    let sent = match authorization {
        Some(auth) => sent.map_err(|e| scrub_error(&auth.value, e)),
        None => sent,
    };
    let body = match sent {
        Ok(response) => response.into_body(),
        Err(ProviderError::Http { source: agent_zero_ports::HttpError::TooLarge { .. }, .. }) => {
            return Err(ProviderError::Refused {
                provider,
                operation: "download checkout",
                reason: format!("the archive is over the {limit}-byte limit"),
            });
        }
        Err(other) => return Err(other),
    };
    if body.len() > crate::MAX_ARCHIVE_BYTES {
        return Err(ProviderError::Refused {
            provider,
            operation: "download checkout",
            reason: format!("the archive is {} bytes, over the {}-byte limit", body.len(), crate::MAX_ARCHIVE_BYTES),
        });
    }
    Ok(body)
}

/// `error` with the checkout's credentials (its link, its header value)
/// scrubbed from every text it carries: for an answer of a server that
/// was given them and echoed one.
pub(crate) fn scrub_source(source: &CheckoutSource, error: ProviderError) -> ProviderError {
    match source {
        CheckoutSource::Archive { url, authorization, .. } => {
            let error = scrub_error(url, error);
            match authorization {
                Some(auth) => scrub_error(&auth.value, error),
                None => error,
            }
        }
        CheckoutSource::PublicClone => error,
    }
}

/// `error` with a second credential scrubbed from every text it carries.
fn scrub_error(secret: &Secret, error: ProviderError) -> ProviderError {
    use ProviderError as E;
    match error {
        E::Http { provider, operation, source } => E::Http { provider, operation, source: scrub_http(secret, source) },
        E::Status { provider, operation, status, message } => {
            E::Status { provider, operation, status, message: secret.scrub(&message) }
        }
        E::Protocol { provider, operation, reason } => {
            E::Protocol { provider, operation, reason: secret.scrub(&reason) }
        }
        E::NotFound { provider, operation, what } => E::NotFound { provider, operation, what: secret.scrub(&what) },
        E::Refused { provider, operation, reason } => E::Refused { provider, operation, reason: secret.scrub(&reason) },
        E::CheckoutLost { provider, operation, reason } => {
            E::CheckoutLost { provider, operation, reason: secret.scrub(&reason) }
        }
    }
}

/// Percent-encodes a query or path component (RFC 3986 unreserved kept).
pub(crate) fn encode(text: &str) -> String {
    agent_zero_contracts::encode_component(text)
}

/// Percent-encodes a path, keeping its `/` separators.
pub(crate) fn encode_path(path: &str) -> String {
    path.split('/').map(encode).collect::<Vec<_>>().join("/")
}

/// POSIX single-quoting of an argv, for providers whose exec endpoint takes
/// one command string (Daytona): each argument becomes one literal word, so
/// no shell syntax in an argument is ever interpreted.
pub fn shell_quote(argv: &[String]) -> String {
    argv.iter()
        .map(|arg| {
            if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./-_".contains(&b)) {
                arg.clone()
            } else {
                format!("'{}'", arg.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A multipart/form-data body with one file field named `file`.
pub(crate) fn multipart_file(boundary: &str, filename: &str, content: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(content.len() + 256);
    body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
    body.extend_from_slice(
        format!("Content-Disposition: form-data; name=\"file\"; filename=\"{}\"\r\n", filename.replace('"', "_"))
            .as_bytes(),
    );
    body.extend_from_slice(b"Content-Type: application/octet-stream\r\n\r\n");
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    body
}

/// One output stream folded from a vendor's chunks, holding at most `max`
/// bytes (its tail: the end of a failing check says why) for vendors that
/// take no output cap. What it drops is counted, never silently lost.
pub(crate) struct Tail {
    bytes: Vec<u8>,
    max: usize,
    dropped: u64,
}

impl Tail {
    pub(crate) fn new(max: u64) -> Self {
        Self { bytes: Vec::new(), max: usize::try_from(max).unwrap_or(usize::MAX), dropped: 0 }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        // Trim in batches: at most twice the cap is ever held.
        if self.bytes.len() > self.max.saturating_mul(2).max(4096) {
            self.trim();
        }
    }

    fn trim(&mut self) {
        if self.bytes.len() > self.max {
            let cut = self.bytes.len() - self.max;
            self.bytes.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    /// The kept tail (lossy UTF-8) and the bytes dropped.
    pub(crate) fn finish(mut self) -> (String, u64) {
        self.trim();
        (String::from_utf8_lossy(&self.bytes).into_owned(), self.dropped)
    }
}

/// Milliseconds of HTTP deadline for a command running `timeout_ms`.
pub(crate) fn exec_deadline(timeout_ms: u64) -> u64 {
    timeout_ms.saturating_add(30_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_each_argument_one_literal_word() {
        let argv: Vec<String> = ["git", "commit", "-m", "it's $(rm -rf /) ; x", ""].map(String::from).into();
        assert_eq!(shell_quote(&argv), r#"git commit -m 'it'\''s $(rm -rf /) ; x' ''"#);
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
        assert_eq!(encode_path("src/a b.rs"), "src/a%20b.rs");
    }

    /// Answers `size` bytes under the request's limit, as the hosts do;
    /// records the limit it saw.
    struct Sized {
        size: usize,
        seen: std::cell::Cell<Option<u64>>,
    }

    impl HttpClient for Sized {
        async fn send(
            &self,
            request: http::Request<Vec<u8>>,
        ) -> Result<http::Response<Vec<u8>>, agent_zero_ports::HttpError> {
            let limit = ResponseLimit::of(&request);
            self.seen.set(limit);
            let mut headers = http::HeaderMap::new();
            headers.insert(http::header::CONTENT_LENGTH, self.size.into());
            // The declared length is checked before any body exists.
            let mut body = agent_zero_ports::BoundedResponseBody::new(limit, &headers)?;
            body.push(&vec![b'x'; self.size])?;
            Ok(http::Response::new(body.into_bytes()))
        }
    }

    #[test]
    fn every_call_is_bounded_and_an_oversized_answer_names_the_limit() {
        let secret = Secret::new("tok-123");
        let call = Call { provider: "p", operation: "list files", secret: &secret };
        let client = Sized { size: 10, seen: Default::default() };
        let (status, body) = agent_zero_ports::block_on(call.send(
            &client,
            call.request(http::Method::GET, "http://x/"),
            Vec::new(),
            1_000,
            "x",
        ))
        .unwrap();
        assert_eq!((status, body.len()), (200, 10));
        assert_eq!(client.seen.get(), Some(MAX_RESPONSE_BYTES));

        let client = Sized { size: 11, seen: Default::default() };
        let builder = call.request(http::Method::GET, "http://x/");
        let e =
            agent_zero_ports::block_on(call.send_limited(&client, builder, Vec::new(), 1_000, 10, "x")).unwrap_err();
        assert!(e.to_string().contains("larger than the 10-byte limit"), "{e}");
    }

    #[test]
    fn an_archive_over_its_limit_is_refused_unread() {
        let url = Secret::new("http://x/archive?token=t");
        let client = Sized { size: crate::MAX_ARCHIVE_BYTES + 1, seen: Default::default() };
        let e = agent_zero_ports::block_on(fetch_archive(&client, "p", &url, None, 1_000)).unwrap_err();
        assert_eq!(client.seen.get(), Some(crate::MAX_ARCHIVE_BYTES as u64));
        let ProviderError::Refused { reason, .. } = &e else { panic!("{e:?}") };
        assert!(reason.contains(&format!("over the {}-byte limit", crate::MAX_ARCHIVE_BYTES)), "{reason}");
        assert!(!e.to_string().contains("token=t"), "{e}");
    }

    /// Keeps the one request it was sent and answers 200.
    #[derive(Default)]
    struct Keep(std::cell::RefCell<Option<http::Request<Vec<u8>>>>);

    impl HttpClient for Keep {
        async fn send(
            &self,
            request: http::Request<Vec<u8>>,
        ) -> Result<http::Response<Vec<u8>>, agent_zero_ports::HttpError> {
            *self.0.borrow_mut() = Some(request);
            Ok(http::Response::new(b"archive".to_vec()))
        }
    }

    #[test]
    fn an_archive_header_is_sent_sensitive_and_a_bad_one_is_not_shown() {
        let url = Secret::new("https://gitea.example/api/v1/repos/a/b/archive/abc.tar.gz");
        let auth = ArchiveAuth { name: "authorization", value: Secret::new("token T-123") };
        let client = Keep::default();
        let body = agent_zero_ports::block_on(fetch_archive(&client, "p", &url, Some(&auth), 1_000)).unwrap();
        assert_eq!(body, b"archive");
        let sent = client.0.take().unwrap();
        let value = &sent.headers()["authorization"];
        assert_eq!(value, "token T-123");
        assert!(value.is_sensitive() && !format!("{sent:?}").contains("T-123"), "{sent:?}");

        let split = ArchiveAuth { name: "private-token", value: Secret::new("T-456\r\nx-evil: 1") };
        let client = Keep::default();
        let e = agent_zero_ports::block_on(fetch_archive(&client, "p", &url, Some(&split), 1_000)).unwrap_err();
        assert!(client.0.take().is_none(), "nothing sent");
        assert!(e.to_string().contains("`private-token` header value is not a valid"), "{e}");
        assert!(!e.to_string().contains("T-456") && !format!("{e:?}").contains("T-456"), "{e:?}");
    }

    #[test]
    fn tail_keeps_the_end_and_counts_the_rest() {
        let mut tail = Tail::new(5);
        for _ in 0..2000 {
            tail.push(b"abc");
            assert!(tail.bytes.len() <= 4096 + 3);
        }
        tail.push(b"-end!");
        assert_eq!(tail.finish(), ("-end!".to_owned(), 6000));
        let mut small = Tail::new(100);
        small.push(b"ok");
        assert_eq!(small.finish(), ("ok".to_owned(), 0));
    }
}
