//! Failures every wire format shares: rate limits, server errors, rejected
//! requests, timeouts, transport errors, and that no error leaks the key.

mod support;

use agent_zero_contracts::ModelProvider;
use agent_zero_models::{ErrorClass, ModelError, select_models};
use agent_zero_ports::{HttpError, ManualClock};
use serde_json::{Value, json};
use support::*;

const HTTP_PROVIDERS: [ModelProvider; 5] = [
    ModelProvider::OpenAi,
    ModelProvider::Anthropic,
    ModelProvider::Google,
    ModelProvider::AiGateway,
    ModelProvider::OpenAiCompatible,
];

/// Each provider's error envelope, with `message`.
fn error_body(kind: ModelProvider, status: u16, message: &str) -> Value {
    match kind {
        ModelProvider::Anthropic => {
            json!({"type": "error", "error": {"type": "api_error", "message": message}})
        }
        ModelProvider::Google => {
            json!({"error": {"code": status, "message": message, "status": "INTERNAL"}})
        }
        _ => {
            json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}})
        }
    }
}

fn run(kind: ModelProvider, scripted: Scripted, budget_ms: u64) -> ModelError {
    let clock = ManualClock::new(0);
    let http = FakeHttp::new(&clock, 5, vec![scripted]);
    let mut req = request();
    req.retry_budget_ms = budget_ms;
    let e = decide(&config(kind, "m-1"), &http, &clock, &req).unwrap_err();
    assert_eq!(http.sent(), 1, "one outbound call, no hidden retries");
    assert_redacted(&e, &e.to_string());
    e
}

#[test]
fn rate_limits_within_and_beyond_the_budget() {
    for kind in HTTP_PROVIDERS {
        let body = error_body(kind, 429, "Rate limit reached");
        let within = run(kind, respond_with(429, &body, &[("retry-after", "3")]), 5_000);
        assert_eq!(within, ModelError::RetryAfter { provider: kind, retry_after_ms: 3_000 }, "{kind}");
        assert_eq!(within.class(), ErrorClass::RetryAfter(3_000));
        let beyond = run(kind, respond_with(429, &body, &[("retry-after", "30")]), 5_000);
        assert_eq!(beyond, ModelError::RateLimited { provider: kind, retry_after_ms: Some(30_000) }, "{kind}");
        assert!(beyond.is_unavailable());
        let no_hint = run(kind, respond(429, &body), 5_000);
        assert_eq!(no_hint, ModelError::RateLimited { provider: kind, retry_after_ms: None }, "{kind}");
    }
    // OpenAI's millisecond header wins over the seconds one.
    let body = error_body(ModelProvider::OpenAi, 429, "Rate limit reached");
    let e =
        run(ModelProvider::OpenAi, respond_with(429, &body, &[("retry-after-ms", "250"), ("retry-after", "1")]), 1_000);
    assert_eq!(e, ModelError::RetryAfter { provider: ModelProvider::OpenAi, retry_after_ms: 250 });
}

#[test]
fn server_errors_and_timeouts_are_unavailable() {
    for kind in HTTP_PROVIDERS {
        let e = run(kind, respond(500, &error_body(kind, 500, "The server had an error")), 0);
        assert!(
            matches!(&e, ModelError::ServerError { status: 500, detail, .. } if detail.ends_with("The server had an error")),
            "{e:?}"
        );
        assert!(e.is_unavailable());
        let e = run(kind, respond(503, &json!("<html>upstream</html>")), 0);
        assert!(
            matches!(&e, ModelError::ServerError { status: 503, detail, .. } if detail.starts_with("non-JSON error body")),
            "{e:?}"
        );
        let e = run(kind, Err(HttpError::Timeout(120_000)), 0);
        assert_eq!(e, ModelError::Timeout { provider: kind, timeout_ms: 120_000 });
        assert!(e.is_unavailable());
        let e = run(
            kind,
            Ok(http::Response::builder().status(200).body(b"<html>captive portal</html>".to_vec()).unwrap()),
            0,
        );
        assert!(matches!(e, ModelError::BadResponse { .. }), "{e:?}");
        assert!(e.is_unavailable());
    }
}

#[test]
fn rejected_requests_and_transport_errors_never_leak_the_key() {
    for kind in HTTP_PROVIDERS {
        let echo = format!("Incorrect API key provided: {}****. Authorization: Bearer {KEY}", &KEY[..8]);
        let e = run(kind, respond(401, &error_body(kind, 401, &echo)), 0);
        assert_eq!(e.class(), ErrorClass::Rejected, "{e:?}");
        let ModelError::Rejected { status: 401, detail, .. } = &e else { panic!("{e:?}") };
        assert!(detail.contains("Incorrect API key provided: [redacted]"), "{detail}");

        let e = run(kind, Err(HttpError::Transport(format!("connection reset; x-api-key: {KEY}"))), 0);
        assert!(matches!(e, ModelError::Transport { .. }), "{e:?}");
        assert!(e.is_unavailable());

        let e = run(kind, Err(HttpError::NotAllowed("api.example.com".into())), 0);
        assert!(e.to_string().contains("api.example.com"), "{e}");

        // A long provider message is capped, not copied whole.
        let e = run(kind, respond(400, &error_body(kind, 400, &"bad request ".repeat(500))), 0);
        assert!(e.to_string().len() < 400, "{}", e.to_string().len());
    }
}

#[test]
fn cli_providers_are_refused_without_any_outbound_call() {
    for kind in [ModelProvider::ClaudeCode, ModelProvider::CodexCli] {
        let clock = ManualClock::new(0);
        let http = FakeHttp::new(&clock, 5, vec![]);
        let e = decide(&config(kind, "sonnet"), &http, &clock, &request()).unwrap_err();
        assert_eq!(http.sent(), 0);
        assert!(e.is_unavailable());
        assert_eq!(
            e.to_string(),
            format!(
                "model provider `{kind}` is refused at the edge: it drives a local CLI subprocess, which the edge cannot run"
            )
        );
    }
}

#[test]
fn debug_output_of_configuration_and_providers_shows_no_key() {
    let clock = ManualClock::new(0);
    let http = FakeHttp::new(&clock, 5, vec![]);
    for (provider, variable) in [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("google", "GOOGLE_GENERATIVE_AI_API_KEY"),
        ("ai-gateway", "AI_GATEWAY_API_KEY"),
        ("openai-compatible", "OPENAI_COMPATIBLE_API_KEY"),
    ] {
        let selection =
            select_models(&policy(provider, "m-1"), |name| (name == variable).then(|| KEY.to_owned())).unwrap();
        let shown = format!("{selection:?} {:?}", selection.provider(&http, &clock));
        assert!(!shown.contains(KEY) && !shown.contains(&KEY[..12]), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }
}

#[test]
fn answers_are_bounded_and_an_oversized_one_is_unavailable_naming_the_limit() {
    const LIMIT: u64 = 4 * 1024 * 1024;
    for kind in HTTP_PROVIDERS {
        let clock = ManualClock::new(0);
        let http = FakeHttp::new(&clock, 5, vec![Err(HttpError::TooLarge { limit: LIMIT })]);
        let e = decide(&config(kind, "m-1"), &http, &clock, &request()).unwrap_err();
        assert_eq!(agent_zero_ports::ResponseLimit::of(&http.request(0)), Some(LIMIT), "{kind}");
        assert!(matches!(e, ModelError::BadResponse { .. }), "{e:?}");
        assert!(e.is_unavailable());
        assert!(e.to_string().contains("4194304-byte response limit"), "{e}");
    }
}
