//! Anthropic Messages API: structured output through one forced tool.

mod support;

use agent_zero_contracts::ModelProvider;
use agent_zero_contracts::{Severity, Usage};
use agent_zero_models::{ANTHROPIC_VERSION, ModelError, SchemaName, UnusableKind, decision_json_schema};
use agent_zero_ports::{ManualClock, RequestTimeout};
use serde_json::{Value, json};
use support::*;

/// A `message` object as the Messages API returns it.
fn message(content: Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {
            "input_tokens": 2095,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 5,
            "output_tokens": 503,
            "service_tier": "standard"
        }
    })
}

fn tool_use(name: &str, input: Value) -> Value {
    json!([{"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": name, "input": input}])
}

#[test]
fn sends_one_forced_tool_and_reads_its_input() {
    let clock = ManualClock::new(5_000);
    let body = message(tool_use("agent_zero_plan", decision_json()), "tool_use");
    let http = FakeHttp::new(&clock, 1_234, vec![respond(200, &body)]);
    let mut config = config(ModelProvider::Anthropic, "claude-sonnet-4-5");
    config.timeout_ms = 30_000;
    let mut plan = request();
    plan.schema = SchemaName::Plan;
    let decision = decide(&config, &http, &clock, &plan).unwrap();

    let sent = http.request(0);
    assert_eq!(sent.method(), http::Method::POST);
    assert_eq!(sent.uri(), "https://api.anthropic.com/v1/messages");
    assert_eq!(header(&sent, "anthropic-version"), Some(ANTHROPIC_VERSION));
    assert_eq!(header(&sent, "authorization"), None);
    assert_eq!(RequestTimeout::of(&sent), Some(30_000));
    assert_key_only_in(&sent, "x-api-key", "");
    let body = http.body(0);
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["max_tokens"], 16_384);
    assert_eq!(body["system"], "SYSTEM PROMPT");
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["tools"].as_array().unwrap().len(), 1);
    assert_eq!(body["tools"][0]["name"], "agent_zero_plan");
    assert_eq!(body["tools"][0]["input_schema"], decision_json_schema());
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "agent_zero_plan"}));

    assert_eq!(decision.decision.finding.severity, Severity::High);
    assert_eq!(decision.decision.plan, ["Guard the null return"]);
    assert_eq!(
        decision.usage,
        Usage { input_tokens: 2_200, output_tokens: 503, latency_ms: 1_234, cost_usd: None },
        "cache writes and reads count as input"
    );
}

#[test]
fn unusable_answers() {
    let clock = ManualClock::new(0);
    let config = config(ModelProvider::Anthropic, "claude-sonnet-4-5");
    let cases = [
        (
            message(json!([{"type": "text", "text": "I can't assist with this request."}]), "refusal"),
            UnusableKind::Refusal,
            "the model declined to answer: I can't assist with this request.",
        ),
        (
            message(tool_use("agent_zero_understand", json!({"finding": {"title": "Nu"}})), "max_tokens"),
            UnusableKind::Truncated,
            "the answer was cut at the 16384-token output limit; answer more briefly",
        ),
        (
            message(json!([{"type": "text", "text": "Here is my analysis: the code is fine."}]), "end_turn"),
            UnusableKind::MalformedJson,
            "no answer: the message has no call of the decision tool",
        ),
        (
            message(tool_use("agent_zero_understand", violating_json()), "tool_use"),
            UnusableKind::SchemaViolation,
            "`finding.severity`: expected one of critical, high, medium, low, got \"catastrophic\"",
        ),
        (
            message(tool_use("some_other_tool", decision_json()), "tool_use"),
            UnusableKind::MalformedJson,
            "no answer: the message has no call of the decision tool",
        ),
    ];
    for (body, kind, violation) in cases {
        let http = FakeHttp::new(&clock, 7, vec![respond(200, &body)]);
        match decide(&config, &http, &clock, &request()) {
            Err(ModelError::Unusable { kind: k, violation: v, usage, .. }) => {
                assert_eq!((k, v.as_str()), (kind, violation));
                assert_eq!((usage.input_tokens, usage.output_tokens, usage.latency_ms), (2_200, 503, 7));
            }
            other => panic!("expected unusable, got {other:?}"),
        }
    }
}

#[test]
fn overloaded_is_unavailable_and_rate_limits_follow_retry_after() {
    let clock = ManualClock::new(0);
    let config = config(ModelProvider::Anthropic, "claude-sonnet-4-5");
    let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"});
    let http = FakeHttp::new(&clock, 3, vec![respond(529, &overloaded)]);
    let e = decide(&config, &http, &clock, &request()).unwrap_err();
    assert_eq!(
        e,
        ModelError::ServerError {
            provider: ModelProvider::Anthropic,
            status: 529,
            detail: "overloaded_error: Overloaded".into()
        }
    );
    assert!(e.is_unavailable());

    let limited = json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}});
    let http = FakeHttp::new(&clock, 3, vec![respond_with(429, &limited, &[("retry-after", "12")])]);
    let mut req = request();
    req.retry_budget_ms = 15_000;
    let e = decide(&config, &http, &clock, &req).unwrap_err();
    assert_eq!(e, ModelError::RetryAfter { provider: ModelProvider::Anthropic, retry_after_ms: 12_000 });
}
