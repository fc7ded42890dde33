//! The requests of the publication adapter: one place that turns a
//! response into "go on", "stop and retry later" (rate limits) or "this
//! step failed, here is why", and reads GitHub's `Link` pagination.

use std::ops::ControlFlow;

use agent_zero_ports::HttpClient;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::client::{GitHubClient, GitHubError, capped, decode};

/// Wait when GitHub signals a secondary rate limit without saying how long
/// (its documentation: "wait at least one minute").
pub(crate) const DEFAULT_RETRY_MS: u64 = 60_000;

/// Why a step stopped early.
#[derive(Debug)]
pub(crate) enum Halt {
    /// A primary or secondary rate limit: the whole publication stops and
    /// the caller re-enqueues after this many milliseconds.
    RetryAfter(u64),
    /// This step failed; the reason is safe to record (no token, no body).
    Failed(String),
}

impl From<GitHubError> for Halt {
    fn from(error: GitHubError) -> Self {
        Self::Failed(error.to_string())
    }
}

/// The client plus the current time, for rate-limit arithmetic.
pub(crate) struct Rest<'c, 'a, H> {
    pub(crate) client: &'c GitHubClient<'a, H>,
    pub(crate) now_ms: u64,
}

impl<H> std::fmt::Debug for Rest<'_, '_, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rest").field("now_ms", &self.now_ms).finish_non_exhaustive()
    }
}

impl<H: HttpClient> Rest<'_, '_, H> {
    /// `{base}{path}`; `path` starts with `/`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.client.parts().1.base_url())
    }

    /// Sends a request. Any status comes back as `Ok` except a rate limit
    /// ([`Halt::RetryAfter`]); transport failures are [`Halt::Failed`].
    pub(crate) async fn call(
        &self,
        operation: &'static str,
        method: http::Method,
        url: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<http::Response<Vec<u8>>, Halt> {
        let body = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
        let response = self.client.send_authorized(operation, method, url, body).await?;
        match retry_after_ms(&response, self.now_ms) {
            Some(ms) => Err(Halt::RetryAfter(ms)),
            None => Ok(response),
        }
    }

    /// [`call`](Self::call), then a success status decoded as `T`.
    pub(crate) async fn json<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        method: http::Method,
        url: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, Halt> {
        let response = self.call(operation, method, url, body).await?;
        self.decode(operation, response)
    }

    /// A success status decoded as `T`; otherwise the status and GitHub's
    /// short message as the failure.
    pub(crate) fn decode<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        response: http::Response<Vec<u8>>,
    ) -> Result<T, Halt> {
        let response = self.client.success(operation, response)?;
        Ok(decode(operation, response.body())?)
    }

    /// The status error of a non-success response, as a recordable reason.
    pub(crate) fn failure(&self, operation: &'static str, response: http::Response<Vec<u8>>) -> Halt {
        match self.client.success(operation, response) {
            Err(error) => error.into(),
            Ok(response) => Halt::Failed(format!("GitHub {operation} answered {}", response.status().as_u16())),
        }
    }
}

/// How reading a paged list ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paged {
    /// The last page was read.
    Done,
    /// The visitor stopped early.
    Stopped,
    /// The page limit was reached with pages left unread.
    PagesLeft,
}

impl<H: HttpClient> Rest<'_, '_, H> {
    /// Lists `first` and the pages its `Link: rel="next"` headers name (only
    /// under the API's base URL), at most `max_pages` of them, handing each
    /// item to `visit` until it breaks. Any failure to read a page is the
    /// step's failure.
    pub(crate) async fn pages<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        first: String,
        max_pages: usize,
        mut visit: impl FnMut(T) -> ControlFlow<()>,
    ) -> Result<Paged, Halt> {
        let mut url = first;
        for _ in 0..max_pages {
            let response = self.call(operation, http::Method::GET, &url, None).await?;
            let next = crate::client::next_link(&response, self.client.parts().1.base_url());
            let page: Vec<T> = self.decode(operation, response)?;
            if page.into_iter().any(|item| visit(item).is_break()) {
                return Ok(Paged::Stopped);
            }
            match next {
                Some(next) => url = next,
                None => return Ok(Paged::Done),
            }
        }
        Ok(Paged::PagesLeft)
    }
}

/// The author of a comment or review, as GitHub lists it.
#[derive(Debug, Deserialize)]
pub(crate) struct User {
    pub(crate) login: String,
}

/// Whether `user` is `login`: logins are case-insensitive on GitHub, and a
/// deleted author (`user: null`, shown as "ghost") is nobody.
pub(crate) fn written_by(user: Option<&User>, login: &str) -> bool {
    user.is_some_and(|u| u.login.eq_ignore_ascii_case(login))
}

/// GitHub's short error `message`, capped (for matching known 422s).
pub(crate) fn error_message(response: &http::Response<Vec<u8>>) -> String {
    #[derive(Deserialize)]
    struct Body {
        #[serde(default)]
        message: Option<String>,
        /// GitHub sends details as objects (`{"message": ...}`) and, for
        /// review comments, as plain strings (`"Line could not be
        /// resolved"`). Read as JSON values, not an untagged enum, whose
        /// reader buffers each detail and reads it once per variant.
        #[serde(default)]
        errors: Vec<serde_json::Value>,
    }
    let Ok(body) = agent_zero_codecs::json::from_slice::<Body>(response.body()) else {
        return String::new();
    };
    let mut text = body.message.unwrap_or_default();
    let details = body.errors.iter().filter_map(|d| d.as_str().or_else(|| d.get("message")?.as_str()));
    for detail in details {
        text.push_str(": ");
        text.push_str(detail);
    }
    capped(&text)
}

/// How long to wait when `response` is a rate limit, else `None`.
///
/// - `retry-after` (seconds) on a 403 or 429: a secondary limit.
/// - 403/429 with `x-ratelimit-remaining: 0`: the primary limit, until
///   `x-ratelimit-reset` (epoch seconds); at least one second.
/// - 429, or 403 whose message names a rate limit, without either header:
///   [`DEFAULT_RETRY_MS`].
pub(crate) fn retry_after_ms(response: &http::Response<Vec<u8>>, now_ms: u64) -> Option<u64> {
    let status = response.status().as_u16();
    if status != 403 && status != 429 {
        return None;
    }
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(seconds) = header("retry-after").and_then(|v| v.parse::<u64>().ok()) {
        return Some(seconds.saturating_mul(1000));
    }
    if header("x-ratelimit-remaining") == Some("0") {
        let reset_ms = header("x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok()).map(|s| s.saturating_mul(1000));
        return Some(reset_ms.map_or(DEFAULT_RETRY_MS, |reset| reset.saturating_sub(now_ms).max(1000)));
    }
    if status == 429 || error_message(response).to_ascii_lowercase().contains("rate limit") {
        return Some(DEFAULT_RETRY_MS);
    }
    None
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::client::{ApiConfig, next_link};

    const BASE: &str = "http://github.test";

    /// A list of `pages` pages of two numbers each; page 2 links off-host
    /// when `stray` is set. Logs the page of every request.
    struct Pages {
        pages: u64,
        stray: bool,
        log: RefCell<Vec<u64>>,
    }

    impl HttpClient for Pages {
        async fn send(
            &self,
            request: http::Request<Vec<u8>>,
        ) -> Result<http::Response<Vec<u8>>, agent_zero_ports::HttpError> {
            let query = request.uri().query().unwrap_or_default();
            let page: u64 = query.split('&').find_map(|p| p.strip_prefix("page=")).map_or(1, |p| p.parse().unwrap());
            self.log.borrow_mut().push(page);
            let host = if self.stray && page == 2 { "http://elsewhere.test" } else { BASE };
            let mut builder = http::Response::builder().status(200);
            if page < self.pages {
                builder = builder.header("link", format!("<{host}/items?page={}>; rel=\"next\"", page + 1));
            }
            Ok(builder.body(format!("[{}, {}]", page * 2, page * 2 + 1).into_bytes()).unwrap())
        }
    }

    /// Every item `pages` hands over, how it ended, and the pages requested.
    fn read(pages: u64, stray: bool, max: usize, stop_at: Option<u64>) -> (Vec<u64>, Paged, Vec<u64>) {
        let http = Pages { pages, stray, log: RefCell::new(Vec::new()) };
        let config = ApiConfig::new(Some(BASE), "test").unwrap();
        let client = GitHubClient::new(&http, &config).with_token(agent_zero_ports::Secret::new("t"));
        let rest = Rest { client: &client, now_ms: 0 };
        let mut seen = Vec::new();
        let paged = agent_zero_ports::block_on(rest.pages("list items", format!("{BASE}/items"), max, |n: u64| {
            seen.push(n);
            if Some(n) == stop_at { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        }))
        .unwrap();
        (seen, paged, http.log.into_inner())
    }

    #[test]
    fn pages_are_followed_until_the_last_the_visitor_or_the_limit() {
        assert_eq!(read(3, false, 10, None), (vec![2, 3, 4, 5, 6, 7], Paged::Done, vec![1, 2, 3]));
        // Stopping reads no further page.
        assert_eq!(read(3, false, 10, Some(4)), (vec![2, 3, 4], Paged::Stopped, vec![1, 2]));
        // At the limit with pages left, the caller learns it.
        assert_eq!(read(5, false, 2, None), (vec![2, 3, 4, 5], Paged::PagesLeft, vec![1, 2]));
        // A next link off the API's host is never followed.
        assert_eq!(read(5, true, 10, None), (vec![2, 3, 4, 5], Paged::Done, vec![1, 2]));
    }

    fn response(status: u16, headers: &[(&str, &str)], body: &str) -> http::Response<Vec<u8>> {
        let mut builder = http::Response::builder().status(status);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(body.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn rate_limits_are_recognised() {
        let now_ms = 1_700_000_000_000;
        let primary = [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1700000042")];
        assert_eq!(retry_after_ms(&response(403, &primary, "{}"), now_ms), Some(42_000));
        assert_eq!(retry_after_ms(&response(429, &[("retry-after", "7")], "{}"), now_ms), Some(7_000));
        assert_eq!(retry_after_ms(&response(403, &[("retry-after", "3")], "{}"), now_ms), Some(3_000));
        // A reset already past still waits a second, never zero.
        let past = [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1600000000")];
        assert_eq!(retry_after_ms(&response(403, &past, "{}"), now_ms), Some(1_000));
        let secondary = r#"{"message":"You have exceeded a secondary rate limit."}"#;
        assert_eq!(retry_after_ms(&response(403, &[], secondary), now_ms), Some(DEFAULT_RETRY_MS));
        assert_eq!(retry_after_ms(&response(429, &[], "{}"), now_ms), Some(DEFAULT_RETRY_MS));
        // A plain permission 403, or remaining quota, is not a rate limit.
        let forbidden = r#"{"message":"Resource not accessible by integration"}"#;
        assert_eq!(retry_after_ms(&response(403, &[("x-ratelimit-remaining", "12")], forbidden), now_ms), None);
        assert_eq!(retry_after_ms(&response(422, &[("retry-after", "1")], "{}"), now_ms), None);
    }

    #[test]
    fn next_links_stay_on_the_api_host() {
        let base = "http://127.0.0.1:9";
        let link = format!(
            "<{base}/repos/o/r/issues/1/comments?page=1>; rel=\"prev\", <{base}/repos/o/r/issues/1/comments?page=3>; rel=\"next\""
        );
        let page = response(200, &[("link", &link)], "[]");
        assert_eq!(next_link(&page, base).as_deref(), Some(&*format!("{base}/repos/o/r/issues/1/comments?page=3")));
        let elsewhere = response(200, &[("link", "<http://127.0.0.1:99/x?page=2>; rel=\"next\"")], "[]");
        assert_eq!(next_link(&elsewhere, base), None);
        let lookalike = response(200, &[("link", "<http://127.0.0.1:90/x>; rel=\"next\"")], "[]");
        assert_eq!(next_link(&lookalike, base), None);
        assert_eq!(next_link(&response(200, &[], "[]"), base), None);
    }

    #[test]
    fn error_messages_join_details() {
        let body = r#"{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for o:b."}]}"#;
        assert_eq!(
            error_message(&response(422, &[], body)),
            "Validation Failed: A pull request already exists for o:b."
        );
        assert_eq!(error_message(&response(422, &[], "not json")), "");
        // A review comment outside the diff (GitHub's answer to a bad line).
        let line = r#"{"message":"Unprocessable Entity","errors":["Line could not be resolved"],"documentation_url":"https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request","status":"422"}"#;
        assert_eq!(error_message(&response(422, &[], line)), "Unprocessable Entity: Line could not be resolved");
        // A detail with no text of its own adds nothing.
        let bare = r#"{"message":"Validation Failed","errors":[{"code":"missing"},{"message":null},3,"x"]}"#;
        assert_eq!(error_message(&response(422, &[], bare)), "Validation Failed: x");
    }
}
