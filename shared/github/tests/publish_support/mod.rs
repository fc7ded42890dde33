//! Harness for the publication tests: a blocking `ureq` adapter for the
//! [`HttpClient`] port that talks to the loopback [`FakeGitHub`], logs every
//! request the product sends, and answers the two listing routes the fake
//! does not serve yet from the fake's own state:
//!
//! - `GET /repos/{o}/{r}/commits/{sha}/check-runs?check_name=`
//! - `GET /repos/{o}/{r}/pulls?head={owner}:{branch}&state=open`
//!
//! (GitHub's documented shapes: `{"total_count", "check_runs": [...]}` and
//! an array of pull requests.) With `serve_lists: false` they go to the
//! fake, which answers 422/404, to exercise the adapter's fallbacks.

#![allow(dead_code, unreachable_pub)]

use std::cell::RefCell;

use agent_zero_contracts::{EvidenceBundle, TaskResult, is_verified};
use agent_zero_fakes::FakeGitHub;
use agent_zero_ports::{HttpClient, HttpError};
use serde_json::{Value, json};

/// The product's view of the wire: what it sent, in order.
#[derive(Debug)]
pub struct Loopback<'g> {
    agent: ureq::Agent,
    gh: &'g FakeGitHub,
    pub serve_lists: bool,
    log: RefCell<Vec<String>>,
}

impl<'g> Loopback<'g> {
    pub fn new(gh: &'g FakeGitHub) -> Self {
        let agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        Self { agent, gh, serve_lists: true, log: RefCell::new(Vec::new()) }
    }

    /// `METHOD /path?query` of every request since the last call.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.borrow_mut())
    }

    fn listed(&self, method: &str, path: &str, query: &str) -> Option<http::Response<Vec<u8>>> {
        if !self.serve_lists || method != "GET" {
            return None;
        }
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let param = |name: &str| query.split('&').find_map(|p| p.strip_prefix(&format!("{name}=")).map(decode));
        let body = match parts.as_slice() {
            ["repos", owner, repo, "commits", sha, "check-runs"] => {
                let name = param("check_name");
                let runs: Vec<Value> = self
                    .gh
                    .check_runs(owner, repo)
                    .into_iter()
                    .filter(|r| r["head_sha"] == *sha && name.as_deref().is_none_or(|n| r["name"] == n))
                    .collect();
                json!({"total_count": runs.len(), "check_runs": runs})
            }
            ["repos", owner, repo, "pulls"] => {
                let head = param("head")?;
                let (_, branch) = head.split_once(':')?;
                let open = param("state").as_deref() == Some("open");
                let pulls: Vec<Value> = self
                    .gh
                    .pulls(owner, repo)
                    .into_iter()
                    .filter(|p| p["head"]["ref"] == branch && (!open || p["state"] == "open"))
                    .collect();
                Value::Array(pulls)
            }
            _ => return None,
        };
        Some(http::Response::builder().status(200).body(body.to_string().into_bytes()).unwrap())
    }
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

impl HttpClient for Loopback<'_> {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let method = request.method().to_string();
        let path = request.uri().path().to_owned();
        let query = request.uri().query().unwrap_or_default().to_owned();
        let target = if query.is_empty() { path.clone() } else { format!("{path}?{query}") };
        self.log.borrow_mut().push(format!("{method} {target}"));
        if let Some(response) = self.listed(&method, &path, &query) {
            return Ok(response);
        }
        let mut response = self.agent.run(request).map_err(|e| HttpError::Transport(e.to_string()))?;
        let mut out = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            out = out.header(name, value);
        }
        let body = response.body_mut().read_to_vec().map_err(|e| HttpError::Transport(e.to_string()))?;
        out.body(body).map_err(|e| HttpError::Transport(e.to_string()))
    }
}

pub use agent_zero_ports::block_on;

/// A golden bundle of the evidence crate (real records, rendered there).
pub fn golden(name: &str) -> EvidenceBundle {
    let path = format!("{}/../evidence/tests/golden/{name}/bundle.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The task result the runtime would hold next to `bundle`.
pub fn result_of(bundle: &EvidenceBundle) -> TaskResult {
    TaskResult {
        id: bundle.task_id.clone(),
        state: bundle.state,
        verdict: bundle.verdict,
        verified: is_verified(bundle.state, &bundle.changed_files, &bundle.checks) && bundle.verified,
        finding: bundle.finding.clone(),
        plan: bundle.plan.clone(),
        acceptance_criteria: bundle.acceptance_criteria.clone(),
        checks: bundle.checks.clone(),
        changed_files: bundle.changed_files.clone(),
        attempts: bundle.attempts,
        events: bundle.transitions.clone(),
        runner: bundle.runner.clone(),
        usage: bundle.usage.clone(),
        summary: bundle.summary.clone(),
    }
}
