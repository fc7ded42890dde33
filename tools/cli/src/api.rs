//! The deployment's HTTP API as the CLI calls it: one request, the answer
//! whatever its status, and the API's own error shape turned into a line.

use std::time::Duration;

use serde_json::Value;

/// Most bytes read from one answer (evidence pages and logs of long runs
/// stay far below it).
const MAX_ANSWER_BYTES: u64 = 32 * 1024 * 1024;

/// An answer: status, content type and body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON, or why it is not.
    pub fn json(&self) -> Result<Value, String> {
        serde_json::from_slice(&self.body).map_err(|e| format!("the answer ({}) is not JSON: {e}", self.status))
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The API's error as one line: `404 not_found (id): no task `x``, or
    /// the status and the start of the body when it is not the API's shape.
    pub fn error_line(&self) -> String {
        let parsed = serde_json::from_slice::<Value>(&self.body).ok();
        match parsed.as_ref().and_then(|v| v.get("error")) {
            Some(error) => {
                let code = error["code"].as_str().unwrap_or("error");
                let message = crate::text::printable(error["message"].as_str().unwrap_or_default());
                match error["field"].as_str() {
                    Some(field) => format!("{} {code} ({}): {message}", self.status, crate::text::printable(field)),
                    None => format!("{} {code}: {message}", self.status),
                }
            }
            None => {
                let text = String::from_utf8_lossy(&self.body);
                let start: String = text.chars().take(200).collect();
                format!("{} {}", self.status, crate::text::printable(start.trim()))
            }
        }
    }
}

/// A deployment at `base` (no trailing slash), with an optional bearer token.
#[derive(Clone)]
pub struct Api {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Api {
    // Never the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").field("base", &self.base).field("token", &self.token.as_ref().map(|_| "<set>")).finish()
    }
}

impl Api {
    /// The API at `url`: `http://` or `https://`, no query or fragment.
    pub fn new(url: &str, token: Option<&str>) -> Result<Self, String> {
        let url = url.trim();
        let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")).ok_or_else(|| {
            format!("--url: expected an http:// or https:// URL, got `{}`", crate::text::printable(url))
        })?;
        if rest.is_empty() || url.contains(['?', '#']) || url.chars().any(char::is_whitespace) {
            return Err("--url: expected a plain base URL (scheme and host, optionally a path)".into());
        }
        if rest.split('/').next().is_some_and(|authority| authority.contains('@')) {
            return Err("--url: must not carry credentials; give the token with --token".into());
        }
        let token = token.map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
        if token.as_ref().is_some_and(|t| !t.bytes().all(|b| b.is_ascii_graphic())) {
            return Err("--token: a token is printable ASCII without spaces".into());
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .user_agent(concat!("agent-zero-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(Self { base: url.trim_end_matches('/').to_owned(), token, agent })
    }

    /// Whether a token was given.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `GET path` (with the token, when there is one).
    pub fn get(&self, path: &str, accept: &str) -> Result<Answer, String> {
        self.send("GET", path, &[("accept", accept)], Vec::new(), true)
    }

    /// `GET path` without the token, as an anonymous caller.
    pub fn get_anonymous(&self, path: &str) -> Result<Answer, String> {
        self.send("GET", path, &[("accept", "application/json")], Vec::new(), false)
    }

    /// `POST path` with a JSON body.
    pub fn post_json(&self, path: &str, body: &Value) -> Result<Answer, String> {
        let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        self.send("POST", path, &[("content-type", "application/json"), ("accept", "application/json")], bytes, true)
    }

    /// `POST path` with `body` as given and extra headers, without the token.
    pub fn post_raw(&self, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Result<Answer, String> {
        self.send("POST", path, headers, body, false)
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
        with_token: bool,
    ) -> Result<Answer, String> {
        let url = format!("{}{path}", self.base);
        let mut builder = http::Request::builder().method(method).uri(&url);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        if let (true, Some(token)) = (with_token, &self.token) {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        let request = builder.body(body).map_err(|e| format!("{method} {url}: {e}"))?;
        let response = self.agent.run(request).map_err(|e| format!("{method} {url}: {e}"))?;
        let status = response.status().as_u16();
        let content_type =
            response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let body = response
            .into_body()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_vec()
            .map_err(|e| format!("{method} {url}: reading the answer: {e}"))?;
        Ok(Answer { status, content_type, body })
    }
}
