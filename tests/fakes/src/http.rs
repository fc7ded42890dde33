//! The product's outbound HTTP port ([`agent_zero_ports::HttpClient`]) over
//! a blocking `ureq` agent, for tests that drive the product's own clients
//! against the loopback servers: every status is an answer (never an
//! error), redirects are not followed (the product's hosts answer a
//! redirect as it is), and a transport failure is `HttpError::Transport`.

use agent_zero_ports::{HttpClient, HttpError};

/// Outbound HTTP to the loopback stand-ins.
#[derive(Debug, Clone)]
pub struct LoopbackHttp(pub ureq::Agent);

impl LoopbackHttp {
    /// A fresh agent: statuses are answers, redirects are not followed.
    pub fn new() -> Self {
        Self(Self::agent())
    }

    /// A bare agent configured as [`LoopbackHttp`]'s, for a test's own
    /// requests beside the product's.
    pub fn agent() -> ureq::Agent {
        ureq::Agent::config_builder().http_status_as_error(false).max_redirects(0).build().into()
    }
}

impl Default for LoopbackHttp {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpClient for LoopbackHttp {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let mut response = self.0.run(request).map_err(|e| HttpError::Transport(e.to_string()))?;
        let mut out = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            out = out.header(name, value);
        }
        let body = response.body_mut().read_to_vec().map_err(|e| HttpError::Transport(e.to_string()))?;
        out.body(body).map_err(|e| HttpError::Transport(e.to_string()))
    }
}
