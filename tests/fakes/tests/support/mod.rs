//! A plain-HTTP client for the tests: real requests over loopback.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use serde_json::Value;

/// One answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

fn agent(timeout: Option<Duration>) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout.unwrap_or(Duration::from_secs(20))))
        .build()
        .into()
}

/// Sends `method url` with headers and an optional JSON body.
pub fn send(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&Value>) -> Answer {
    try_send(method, url, headers, body, None).unwrap_or_else(|e| panic!("{method} {url}: {e}"))
}

/// Like [`send`], with a client timeout, returning transport errors.
pub fn try_send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
    timeout: Option<Duration>,
) -> Result<Answer, ureq::Error> {
    let mut request = ureq::http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let request = request.body(bytes).expect("a valid request");
    let mut response = agent(timeout).run(request)?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
        .collect();
    let body = response.body_mut().read_to_string()?;
    Ok(Answer { status, headers, body })
}

/// The product's HTTP port over blocking ureq, for the product-against-fake
/// tests: its futures never pend, so `agent_zero_ports::block_on` drives
/// them.
pub struct Ureq(ureq::Agent);

impl agent_zero_ports::HttpClient for Ureq {
    async fn send(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<http::Response<Vec<u8>>, agent_zero_ports::HttpError> {
        use agent_zero_ports::HttpError;
        let mut response = self.0.run(request).map_err(|e| HttpError::Transport(e.to_string()))?;
        let mut out = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            out = out.header(name, value);
        }
        let body = response.body_mut().read_to_vec().map_err(|e| HttpError::Transport(e.to_string()))?;
        out.body(body).map_err(|e| HttpError::Transport(e.to_string()))
    }
}

/// The adapter, answering every status (the product judges them).
pub fn http() -> Ureq {
    Ureq(agent(None))
}
