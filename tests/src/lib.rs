//! End-to-end harness: starts the built artefacts on real runtimes and talks
//! to them over loopback HTTP.
//!
//! - [`Runtime::Workerd`]: the worker (`functions/cloudflare/build`) in
//!   workerd through `wrangler dev --local`, KV persisted in a temp dir.
//! - [`Runtime::Spin`]: the Spin component in `agent-zero-spin-host`
//!   (wasmtime with Spin's key-value and variables), reading a copy of
//!   `spin.toml` that points at the built component and allows loopback
//!   outbound hosts.
//!
//! Every started process is killed (with its process group) when its
//! [`Server`] is dropped.

#![forbid(unsafe_code)]

pub mod browser;
pub mod server;

pub use server::{Runtime, Server, ServerOptions, StorageFault, repo_root};

use std::time::Duration;

/// A response: status, headers (lowercase names) and body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Reads a `ureq` response whole: status, headers and body.
    ///
    /// # Errors
    /// The body could not be read.
    pub fn read(response: http::Response<ureq::Body>) -> Result<Self, String> {
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let body = response.into_body().read_to_vec().map_err(|e| e.to_string())?;
        Ok(Self { status, headers, body })
    }
}

/// Sends one request and returns the reply whatever its status.
pub fn request(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<Reply, String> {
    request_within(Duration::from_secs(60), method, url, headers, body)
}

/// [`request`], given up after `timeout`.
pub fn request_within(
    timeout: Duration,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Reply, String> {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(timeout)).build().into();
    let mut builder = http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(body.to_vec()).map_err(|e| e.to_string())?;
    let response = agent.run(request).map_err(|e| format!("{method} {url}: {e}"))?;
    Reply::read(response)
}

/// Registers our GitHub App on `github` (its id and public key) with the
/// permissions `github-app.json` asks for, as GitHub grants an App's
/// installations what its manifest's `default_permissions` name: a route
/// the product calls that the manifest does not open fails the case (403
/// "Resource not accessible by integration"), as it would on GitHub.
///
/// # Panics
/// When `github-app.json` cannot be read or names no permissions.
pub fn register_our_app(github: &agent_zero_fakes::FakeGitHub, app_id: &str, public_key_pem: &str) {
    let manifest = std::fs::read_to_string(repo_root().join("github-app.json")).expect("github-app.json");
    let manifest: serde_json::Value = serde_json::from_str(&manifest).expect("github-app.json is JSON");
    let permissions: Vec<(String, String)> = manifest["default_permissions"]
        .as_object()
        .expect("github-app.json names default_permissions")
        .iter()
        .map(|(name, level)| (name.clone(), level.as_str().unwrap_or_default().to_owned()))
        .collect();
    let permissions: Vec<(&str, &str)> = permissions.iter().map(|(p, l)| (p.as_str(), l.as_str())).collect();
    github.register_app(app_id, Some(public_key_pem));
    github.grant_app_permissions(&permissions);
}
