//! The settings are parsed once, and a malformed variable disables only
//! what needs it.

use std::cell::RefCell;

use agent_zero_ports::{HttpClient, HttpError, block_on};
use serde_json::{Value, json};

use crate::Settings;
use crate::error::ErrorCode;
use crate::test_host::{RUNNABLE, TestHost};

const APP_KEY: &str = include_str!("../../../tests/fakes/src/data/test-app-key.pkcs1.pem");
const HOUR_MS: u64 = 3_600_000;

/// GitHub's token endpoint (`POST /app/installations/{id}/access_tokens`,
/// 201 with `token` and `expires_at` an hour on), counting what it mints.
struct TokenEndpoint {
    now_ms: RefCell<u64>,
    minted: RefCell<Vec<String>>,
}

impl HttpClient for TokenEndpoint {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let path = request.uri().path().to_owned();
        if request.method() != http::Method::POST || !path.ends_with("/access_tokens") {
            return Err(HttpError::NotAllowed(path));
        }
        let mut minted = self.minted.borrow_mut();
        minted.push(path);
        let expires = agent_zero_contracts::rfc3339(*self.now_ms.borrow() + HOUR_MS);
        let body = json!({ "token": format!("ghs_{:036}", minted.len()), "expires_at": expires });
        let mut response = http::Response::new(serde_json::to_vec(&body).unwrap());
        *response.status_mut() = http::StatusCode::CREATED;
        Ok(response)
    }
}

/// Signs with a fixed value: the endpoint above does not verify the JWT.
struct FixedSigner;

impl agent_zero_github::Rs256Signer for FixedSigner {
    async fn sign_rs256(
        &self,
        _key: &agent_zero_github::PrivateKeyDer,
        _message: &[u8],
    ) -> Result<Vec<u8>, agent_zero_github::CredentialsError> {
        Ok(vec![7; 256])
    }
}

#[test]
fn one_installation_token_is_minted_per_hour_per_installation_not_per_call() {
    let settings = Settings::from_pairs([("GITHUB_APP_ID", "123456"), ("GITHUB_APP_PRIVATE_KEY", APP_KEY)]);
    let start = crate::test_host::START_MS;
    let http = TokenEndpoint { now_ms: RefCell::new(start), minted: RefCell::new(Vec::new()) };
    let github = settings.github().unwrap();
    let call = |installation: u64, at: u64| {
        *http.now_ms.borrow_mut() = at;
        block_on(github.client(&http, &FixedSigner, Some(installation), at)).unwrap();
    };
    // Many calls (deliveries, publications, checkouts) within the hour.
    for minute in 0..50 {
        call(42, start + minute * 60_000);
    }
    assert_eq!(http.minted.borrow().len(), 1, "{:?}", http.minted.borrow());
    // Another installation has its own token.
    call(7, start + 60_000);
    assert_eq!(http.minted.borrow().len(), 2);
    // Within 5 minutes of expiry, a fresh one.
    call(42, start + HOUR_MS - 4 * 60_000);
    let minted = http.minted.borrow();
    assert_eq!(
        minted.as_slice(),
        [
            "/app/installations/42/access_tokens",
            "/app/installations/7/access_tokens",
            "/app/installations/42/access_tokens"
        ]
    );
}

fn send(host: &TestHost, settings: &Settings, method: &str, uri: &str, token: Option<&str>) -> (u16, Value) {
    let mut request = http::Request::builder().method(method).uri(uri).header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let body = if method == "POST" {
        br#"{"repository":"acme/widgets","mode":"observe","trigger":"feedback","feedback":[{"body":"`limit` of 0 divides by zero","path":"src/limit.rs","line":3}]}"#.to_vec()
    } else {
        Vec::new()
    };
    let response = host.send(settings, request.body(body).unwrap());
    (response.status().as_u16(), serde_json::from_slice(response.body()).unwrap_or(Value::Null))
}

#[test]
fn a_malformed_variable_answers_503_naming_it_where_needed_and_the_rest_keeps_serving() {
    let host = TestHost::new();
    let access = [
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "ops:tok-settings-77a1"),
        ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets"),
        ("GITHUB_WEBHOOK_SECRET", "whsec-settings"),
    ];
    // (variable, malformed value, the route that needs it)
    let cases = [
        ("AGENT_ZERO_WEBHOOK_MAX_BYTES", "25MB", "/webhooks/github"),
        ("AGENT_ZERO_MODEL_TIMEOUT_MS", "2m", "/api/v1/tasks"),
        ("AGENT_ZERO_CLAIM_MARGIN_MS", "-77", "/api/v1/tasks"),
        ("AGENT_ZERO_DELIVERY_RETENTION_DAYS", "three", "/webhooks/github"),
        ("AGENT_ZERO_SANDBOX_MAX_ACTIVE", "0x10", "/api/v1/tasks"),
        ("AGENT_ZERO_MAX_RUNNING", "none", "/api/v1/tasks"),
        ("GITHUB_API_URL", "ftp://github.invalid", "/api/v1/doctor"),
        ("GITHUB_APP_ID", "not-an-id!", "/api/v1/doctor"),
        ("VERCEL_PROJECT_ID", "prj with spaces", "/api/v1/tasks"),
        ("GITLAB_WEBHOOK_SIGNING_TOKEN", "not-whsec", "/webhooks/gitlab"),
        ("GITEA_URL", "ftp://gitea.invalid", "/webhooks/gitea"),
    ];
    for (variable, value, route) in cases {
        let mut pairs = access.to_vec();
        pairs.extend_from_slice(&RUNNABLE);
        pairs.push((variable, value));
        if variable == "VERCEL_PROJECT_ID" {
            pairs.extend([("AGENT_ZERO_SANDBOX_PROVIDER", "vercel"), ("VERCEL_TOKEN", "vercel-unit-unreached")]);
        }
        if variable == "GITHUB_APP_ID" {
            pairs.push(("GITHUB_APP_PRIVATE_KEY", APP_KEY));
            // Reads need a token once the app has credentials.
        }
        let settings = Settings::from_pairs(pairs);
        let token = Some("tok-settings-77a1");

        let (status, body) = send(&host, &settings, "GET", "/api/v1/health", None);
        assert_eq!(status, 200, "{variable}: health keeps serving: {body}");
        let problems = body["settings"]["problems"].as_array().unwrap();
        assert!(problems.iter().any(|p| p["variable"] == variable), "{variable}: {body}");
        assert!(!body.to_string().contains(value), "{variable}: the value is never shown: {body}");

        let (status, body) = match route {
            "/api/v1/doctor" => send(&host, &settings, "GET", route, token),
            _ => send(&host, &settings, "POST", route, token),
        };
        if route == "/api/v1/doctor" {
            // Doctor reports the fault as a failed check naming the variable.
            assert_eq!(status, 200, "{variable}: {body}");
            let github = body["checks"].as_array().unwrap().iter().find(|c| c["name"] == "github-identity").unwrap();
            assert_eq!(github["status"], "fail", "{variable}: {body}");
            assert!(github.to_string().contains(variable), "{variable}: {github}");
        } else {
            assert_eq!(status, 503, "{variable} on {route}: {body}");
            assert_eq!(body["error"]["code"], ErrorCode::NotConfigured.as_str(), "{variable}: {body}");
            assert_eq!(body["error"]["field"], variable, "{variable} on {route}: {body}");
        }
        assert!(!body.to_string().contains(value), "{variable}: the value is never shown: {body}");

        // A route that does not need the section still answers.
        let (status, body) = send(&host, &settings, "GET", "/api/v1/tasks", token);
        assert_eq!(status, 200, "{variable}: listing tasks does not need it: {body}");
    }
}
