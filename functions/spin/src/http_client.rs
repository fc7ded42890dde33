//! The outbound HTTP port over `spin_sdk::http::send` (`wasi:http`).
//! Destinations must be listed in `allowed_outbound_hosts` in `spin.toml`.

use agent_zero_ports::{HttpClient, HttpError};

/// Outbound HTTP through the Spin host.
pub(crate) struct SpinHttp;

impl HttpClient for SpinHttp {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let host = request.uri().host().unwrap_or_default().to_owned();
        spin_sdk::http::send::<_, http::Response<Vec<u8>>>(request).await.map_err(|e| {
            let message = e.to_string();
            if message.contains("HttpRequestDenied") || message.contains("not allowed") {
                HttpError::NotAllowed(host)
            } else {
                HttpError::Transport(message)
            }
        })
    }
}
