//! The fallback is used only when the primary is unavailable.

mod support;

use agent_zero_contracts::ModelProvider;
use agent_zero_models::{
    ErrorClass, FALLBACK_MODEL_VARIABLE, FALLBACK_PROVIDER_VARIABLE, ModelClient, ModelError, ModelRef, ModelSelection,
    select_models,
};
use agent_zero_ports::{HttpError, ManualClock};
use serde_json::{Value, json};
use support::*;

fn selection(primary: &str) -> ModelSelection {
    select_models(&policy(primary, "primary-model"), |name| match name {
        "OPENAI_API_KEY" => Some(KEY.to_owned()),
        "ANTHROPIC_API_KEY" => Some(format!("{KEY}-anthropic")),
        FALLBACK_PROVIDER_VARIABLE => Some("anthropic".into()),
        FALLBACK_MODEL_VARIABLE => Some("claude-sonnet-4-5".into()),
        _ => None,
    })
    .unwrap()
}

fn chat(content: &str) -> Value {
    json!({"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

fn anthropic_ok() -> Value {
    json!({"type": "message", "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "agent_zero_understand", "input": decision_json()}], "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 8}})
}

fn server_error() -> Scripted {
    respond(
        500,
        &json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}),
    )
}

#[test]
fn unavailable_primary_hands_over_to_the_fallback() {
    let unavailable: Vec<(&str, Scripted)> = vec![
        ("500", server_error()),
        ("timeout", Err(HttpError::Timeout(120_000))),
        ("transport", Err(HttpError::Transport("connection refused".into()))),
        ("429 without hint", respond(429, &json!({"error": {"message": "Rate limit reached", "type": "requests"}}))),
    ];
    for (case, primary) in unavailable {
        let clock = ManualClock::new(0);
        let http = FakeHttp::new(&clock, 100, vec![primary, respond(200, &anthropic_ok())]);
        let selection = selection("openai");
        let decision = decide_selected(&selection, &http, &clock, &request()).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(http.sent(), 2, "{case}");
        assert_eq!(http.request(0).uri(), "https://api.openai.com/v1/chat/completions");
        assert_eq!(http.request(1).uri(), "https://api.anthropic.com/v1/messages");
        assert_eq!(
            decision.answered_by,
            ModelRef { provider: ModelProvider::Anthropic, model: "claude-sonnet-4-5".into() }
        );
        assert_eq!((decision.usage.input_tokens, decision.usage.latency_ms), (20, 100), "{case}");
        assert_eq!(selection.provider(&http, &clock).model().provider, ModelProvider::OpenAi);
    }
}

#[test]
fn refused_cli_primary_hands_over_without_calling_out() {
    let clock = ManualClock::new(0);
    let http = FakeHttp::new(&clock, 1, vec![respond(200, &anthropic_ok())]);
    let decision = decide_selected(&selection("claude-code"), &http, &clock, &request()).unwrap();
    assert_eq!(http.sent(), 1);
    assert_eq!(decision.answered_by.provider, ModelProvider::Anthropic);
    let sent = http.request(0);
    assert_eq!(header(&sent, "x-api-key"), Some(format!("{KEY}-anthropic").as_str()), "the fallback's own key");
    assert_eq!(header(&sent, "authorization"), None);
    assert!(!String::from_utf8_lossy(sent.body()).contains(KEY));
}

#[test]
fn unusable_answers_retries_and_rejections_never_fall_back() {
    let cases: Vec<(&str, Scripted, ErrorClass)> = vec![
        ("malformed", respond(200, &chat("not json")), ErrorClass::Unusable),
        ("violation", respond(200, &chat(&violating_json().to_string())), ErrorClass::Unusable),
        (
            "refusal",
            respond(
                200,
                &json!({"choices": [{"message": {"content": null, "refusal": "No."}, "finish_reason": "stop"}]}),
            ),
            ErrorClass::Unusable,
        ),
        (
            "retry within budget",
            respond_with(429, &json!({"error": {"message": "slow down"}}), &[("retry-after", "1")]),
            ErrorClass::RetryAfter(1_000),
        ),
        (
            "bad key",
            respond(401, &json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})),
            ErrorClass::Rejected,
        ),
    ];
    for (case, primary, class) in cases {
        let clock = ManualClock::new(0);
        let http = FakeHttp::new(&clock, 1, vec![primary, respond(200, &anthropic_ok())]);
        let mut req = request();
        req.retry_budget_ms = 2_000;
        let e = decide_selected(&selection("openai"), &http, &clock, &req).unwrap_err();
        assert_eq!(http.sent(), 1, "{case}: the fallback must not be called");
        assert_eq!(e.class(), class, "{case}");
        assert_redacted(&e, &e.to_string());
    }
}

#[test]
fn both_failing_reports_both() {
    let clock = ManualClock::new(0);
    let overloaded =
        respond(529, &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    let http = FakeHttp::new(&clock, 1, vec![server_error(), overloaded]);
    let e = decide_selected(&selection("openai"), &http, &clock, &request()).unwrap_err();
    assert!(e.is_unavailable());
    let ModelError::FallbackFailed { primary, fallback } = &e else { panic!("{e:?}") };
    assert!(matches!(**primary, ModelError::ServerError { provider: ModelProvider::OpenAi, status: 500, .. }));
    assert!(matches!(**fallback, ModelError::ServerError { provider: ModelProvider::Anthropic, status: 529, .. }));
    let text = e.to_string();
    assert!(
        text.contains("`openai` failed with HTTP 500") && text.contains("`anthropic` failed with HTTP 529"),
        "{text}"
    );

    // An unusable fallback answer is still an unusable answer, shown to the model next tick.
    let http = FakeHttp::new(
        &clock,
        1,
        vec![
            Err(HttpError::Timeout(5)),
            respond(
                200,
                &json!({"content": [{"type": "tool_use", "name": "agent_zero_understand", "input": violating_json()}], "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 4}}),
            ),
        ],
    );
    let e = decide_selected(&selection("openai"), &http, &clock, &request()).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Unusable);
    assert!(e.violation().unwrap().contains("finding.severity"));
    assert_eq!(e.usage().unwrap().output_tokens, 4);
}

#[test]
fn without_a_fallback_the_primary_error_stands() {
    let clock = ManualClock::new(0);
    let http = FakeHttp::new(&clock, 1, vec![server_error()]);
    let selection =
        select_models(&policy("openai", "gpt-5"), |n| (n == "OPENAI_API_KEY").then(|| KEY.to_owned())).unwrap();
    let e = decide_selected(&selection, &http, &clock, &request()).unwrap_err();
    assert!(matches!(e, ModelError::ServerError { status: 500, .. }));
}
