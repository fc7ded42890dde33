//! A fake outbound HTTP client: answers from a script, records every
//! request, and moves a manual clock to simulate latency.

#![allow(dead_code, unreachable_pub)]

use std::cell::RefCell;
use std::collections::VecDeque;

use agent_zero_contracts::ModelPolicy;
use agent_zero_contracts::ModelProvider;
use agent_zero_models::{DecisionRequest, HttpProvider, ModelClient, ModelSelection, ProviderConfig, SchemaName};
use agent_zero_ports::Secret;
use agent_zero_ports::{HttpClient, HttpError, ManualClock};
use serde_json::{Value, json};

pub const KEY: &str = "test-secret-key-5f3a9c1e7b2d";

pub type Scripted = Result<http::Response<Vec<u8>>, HttpError>;

pub struct FakeHttp<'a> {
    clock: &'a ManualClock,
    latency_ms: u64,
    script: RefCell<VecDeque<Scripted>>,
    pub requests: RefCell<Vec<http::Request<Vec<u8>>>>,
}

impl<'a> FakeHttp<'a> {
    pub fn new(clock: &'a ManualClock, latency_ms: u64, script: Vec<Scripted>) -> Self {
        Self { clock, latency_ms, script: RefCell::new(script.into()), requests: RefCell::new(Vec::new()) }
    }

    pub fn request(&self, i: usize) -> http::Request<Vec<u8>> {
        self.requests.borrow()[i].clone()
    }

    pub fn body(&self, i: usize) -> Value {
        serde_json::from_slice(self.requests.borrow()[i].body()).unwrap()
    }

    pub fn sent(&self) -> usize {
        self.requests.borrow().len()
    }
}

impl HttpClient for FakeHttp<'_> {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        self.requests.borrow_mut().push(request);
        self.clock.advance(self.latency_ms);
        self.script.borrow_mut().pop_front().expect("the fake ran out of scripted responses")
    }
}

pub fn respond(status: u16, body: &Value) -> Scripted {
    respond_with(status, body, &[])
}

pub fn respond_with(status: u16, body: &Value, headers: &[(&str, &str)]) -> Scripted {
    let mut builder = http::Response::builder().status(status).header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    Ok(builder.body(serde_json::to_vec(body).unwrap()).unwrap())
}

pub use agent_zero_ports::block_on;

pub fn request() -> DecisionRequest {
    DecisionRequest::new(
        "SYSTEM PROMPT",
        "=== file: src/user.ts ===\nexport const load = () => null;\n",
        SchemaName::Understand,
    )
}

/// A decision as a model would write it.
pub fn decision_json() -> Value {
    json!({
        "finding": {
            "title": "Null return",
            "explanation": "load() returns null.",
            "severity": "high",
            "confidence": 0.9,
            "valid": true,
            "evidence": ["`return null;`"],
            "files": ["src/user.ts"],
            "changeRisk": "mechanical"
        },
        "plan": ["Guard the null return"],
        "acceptanceCriteria": ["load() never returns null"],
        "changes": [{"path": "src/user.ts", "content": "export const load = () => ({});\n", "reason": "guard"}]
    })
}

/// The same decision with a schema violation (severity outside the enum).
pub fn violating_json() -> Value {
    let mut v = decision_json();
    v["finding"]["severity"] = json!("catastrophic");
    v
}

pub fn config(kind: ModelProvider, model: &str) -> ProviderConfig {
    let key = (!kind.needs_subprocess()).then(|| Secret::new(KEY));
    ProviderConfig::new(kind, model, key)
}

pub fn decide(
    config: &ProviderConfig,
    http: &FakeHttp<'_>,
    clock: &ManualClock,
    request: &DecisionRequest,
) -> Result<agent_zero_models::ModelAnswer, agent_zero_models::ModelError> {
    block_on(HttpProvider::new(config, http, clock).decide(request))
}

pub fn decide_selected(
    selection: &ModelSelection,
    http: &FakeHttp<'_>,
    clock: &ManualClock,
    request: &DecisionRequest,
) -> Result<agent_zero_models::ModelAnswer, agent_zero_models::ModelError> {
    block_on(selection.provider(http, clock).decide(request))
}

pub fn policy(provider: &str, name: &str) -> ModelPolicy {
    ModelPolicy { provider: ModelProvider::parse(provider).unwrap(), name: Some(name.into()), ..ModelPolicy::default() }
}

pub fn header<'r>(request: &'r http::Request<Vec<u8>>, name: &str) -> Option<&'r str> {
    request.headers().get(name).map(|v| v.to_str().unwrap())
}

/// Asserts the key travels only in `auth_header` (with `prefix`), never in
/// the URL, the body or any other header.
pub fn assert_key_only_in(request: &http::Request<Vec<u8>>, auth_header: &str, prefix: &str) {
    assert_eq!(header(request, auth_header), Some(format!("{prefix}{KEY}").as_str()));
    assert!(request.headers().get(auth_header).unwrap().is_sensitive());
    assert!(!request.uri().to_string().contains(KEY));
    assert!(!String::from_utf8_lossy(request.body()).contains(KEY));
    for (name, value) in request.headers() {
        if name.as_str() != auth_header {
            assert!(!value.to_str().unwrap_or("").contains(KEY), "{name}");
        }
    }
    assert!(!format!("{request:?}").contains(KEY), "Debug of the request shows the key");
}

/// Asserts neither `Display` nor `Debug` of `error` leaks the key.
pub fn assert_redacted(error: &dyn std::fmt::Debug, display: &str) {
    assert!(!display.contains(KEY) && !display.contains(&KEY[..12]), "{display}");
    let debug = format!("{error:?}");
    assert!(!debug.contains(KEY) && !debug.contains(&KEY[..12]), "{debug}");
}
