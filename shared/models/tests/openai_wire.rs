//! Chat Completions: `openai`, `ai-gateway` and `openai-compatible`.

mod support;

use agent_zero_contracts::ModelProvider;
use agent_zero_contracts::{ChangeRisk, Severity, Usage};
use agent_zero_models::{
    BASE_URL_VARIABLE, ModelError, ModelRef, Pricing, UnusableKind, decision_json_schema, select_models,
};
use agent_zero_ports::{ManualClock, RequestTimeout};
use serde_json::{Value, json};
use support::*;

/// A `chat.completion` object as OpenAI returns it.
fn completion(content: Option<&str>, refusal: Option<&str>, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1_741_570_283,
        "model": "gpt-5-2025-08-07",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": refusal, "annotations": []},
            "logprobs": null,
            "finish_reason": finish_reason
        }],
        "usage": {
            "prompt_tokens": 1117, "completion_tokens": 46, "total_tokens": 1163,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
        },
        "service_tier": "default",
        "system_fingerprint": "fp_fc9f1d7035"
    })
}

fn success() -> Value {
    completion(Some(&decision_json().to_string()), None, "stop")
}

#[test]
fn openai_sends_a_strict_json_schema_request_and_returns_decision_and_usage() {
    let clock = ManualClock::new(1_000);
    let http = FakeHttp::new(&clock, 250, vec![respond(200, &success())]);
    let mut config = config(ModelProvider::OpenAi, "gpt-5");
    config.pricing = Some(Pricing { input_per_million_tokens: 1.25, output_per_million_tokens: 10.0 });
    let decision = decide(&config, &http, &clock, &request()).unwrap();

    let sent = http.request(0);
    assert_eq!(sent.method(), http::Method::POST);
    assert_eq!(sent.uri(), "https://api.openai.com/v1/chat/completions");
    assert_eq!(header(&sent, "content-type"), Some("application/json"));
    assert_eq!(RequestTimeout::of(&sent), Some(120_000));
    assert_key_only_in(&sent, "authorization", "Bearer ");
    let body = http.body(0);
    assert_eq!(body["model"], "gpt-5");
    assert_eq!(body["messages"][0], json!({"role": "system", "content": "SYSTEM PROMPT"}));
    assert_eq!(body["messages"][1]["role"], "user");
    assert!(body["messages"][1]["content"].as_str().unwrap().contains("export const load = () => null;"));
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["name"], "agent_zero_understand");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(body["response_format"]["json_schema"]["schema"], decision_json_schema());
    assert_eq!(body["max_completion_tokens"], 16_384);
    assert!(body.get("max_tokens").is_none());

    assert_eq!(decision.decision.finding.severity, Severity::High);
    assert_eq!(decision.decision.finding.change_risk, ChangeRisk::Mechanical);
    assert_eq!(decision.decision.changes[0].path, "src/user.ts");
    let cost = (1117.0 * 1.25 + 46.0 * 10.0) / 1_000_000.0;
    assert_eq!(decision.usage, Usage { input_tokens: 1117, output_tokens: 46, latency_ms: 250, cost_usd: Some(cost) });
    assert_eq!(decision.answered_by, ModelRef { provider: ModelProvider::OpenAi, model: "gpt-5".into() });
}

#[test]
fn ai_gateway_uses_vercels_endpoint_and_provider_slash_model_names() {
    let clock = ManualClock::new(0);
    let http = FakeHttp::new(&clock, 10, vec![respond(200, &success())]);
    let selection = select_models(&policy("ai-gateway", "anthropic/claude-sonnet-4.5"), |name| {
        (name == "AI_GATEWAY_API_KEY").then(|| KEY.to_owned())
    })
    .unwrap();
    let decision = decide_selected(&selection, &http, &clock, &request()).unwrap();
    let sent = http.request(0);
    assert_eq!(sent.uri(), "https://ai-gateway.vercel.sh/v1/chat/completions");
    assert_key_only_in(&sent, "authorization", "Bearer ");
    assert_eq!(http.body(0)["model"], "anthropic/claude-sonnet-4.5");
    assert_eq!(decision.usage.cost_usd, None, "no prices in policy, no cost");
    assert_eq!(decision.answered_by.provider, ModelProvider::AiGateway);
}

#[test]
fn openai_compatible_goes_to_the_operator_base_url_without_a_key_when_none_is_set() {
    let clock = ManualClock::new(0);
    let http = FakeHttp::new(&clock, 10, vec![respond(200, &success())]);
    let selection = select_models(&policy("openai-compatible", "llama3.1:8b"), |name| {
        (name == BASE_URL_VARIABLE).then(|| "http://127.0.0.1:11434/v1".to_owned())
    })
    .unwrap();
    decide_selected(&selection, &http, &clock, &request()).unwrap();
    let sent = http.request(0);
    assert_eq!(sent.uri(), "http://127.0.0.1:11434/v1/chat/completions");
    assert_eq!(header(&sent, "authorization"), None);
    let body = http.body(0);
    assert_eq!(body["model"], "llama3.1:8b");
    assert_eq!(body["max_tokens"], 16_384, "local servers know max_tokens");
    assert!(body.get("max_completion_tokens").is_none());

    // With a key (Cloudflare AI Gateway, vLLM with --api-key) it is a bearer token.
    let http = FakeHttp::new(&clock, 10, vec![respond(200, &success())]);
    let cf = "https://gateway.ai.cloudflare.com/v1/acct/gw/compat";
    let selection =
        select_models(&policy("openai-compatible", "workers-ai/@cf/meta/llama-3.1-8b-instruct"), |name| match name {
            BASE_URL_VARIABLE => Some(cf.to_owned()),
            "OPENAI_COMPATIBLE_API_KEY" => Some(KEY.to_owned()),
            _ => None,
        })
        .unwrap();
    decide_selected(&selection, &http, &clock, &request()).unwrap();
    assert_eq!(http.request(0).uri(), "https://gateway.ai.cloudflare.com/v1/acct/gw/compat/chat/completions");
    assert_key_only_in(&http.request(0), "authorization", "Bearer ");
}

fn unusable(result: Result<agent_zero_models::ModelAnswer, ModelError>) -> (UnusableKind, String, Usage) {
    match result {
        Err(ModelError::Unusable { kind, violation, usage, provider }) => {
            assert_eq!(provider, ModelProvider::OpenAi);
            (kind, violation, usage)
        }
        other => panic!("expected an unusable answer, got {other:?}"),
    }
}

#[test]
fn refusal_truncation_invalid_json_and_schema_violations_are_unusable_answers() {
    let clock = ManualClock::new(0);
    let config = config(ModelProvider::OpenAi, "gpt-5");
    let cases = [
        (
            completion(None, Some("I'm sorry, I can't help with that."), "stop"),
            UnusableKind::Refusal,
            "the model declined to answer: I'm sorry, I can't help with that.",
        ),
        (
            completion(Some("{\"finding\": {\"title\": \"Nu"), None, "length"),
            UnusableKind::Truncated,
            "the answer was cut at the 16384-token output limit; answer more briefly",
        ),
        (
            completion(Some("Sure! Here is the JSON you asked for"), None, "stop"),
            UnusableKind::MalformedJson,
            "the answer is not JSON: expected value at line 1 column 1",
        ),
        (
            completion(Some(&violating_json().to_string()), None, "stop"),
            UnusableKind::SchemaViolation,
            "`finding.severity`: expected one of critical, high, medium, low, got \"catastrophic\"",
        ),
        (
            completion(None, None, "content_filter"),
            UnusableKind::Refusal,
            "the model declined to answer: the provider's content filter withheld the answer",
        ),
    ];
    for (body, kind, violation) in cases {
        let http = FakeHttp::new(&clock, 40, vec![respond(200, &body)]);
        let (got_kind, got_violation, usage) = unusable(decide(&config, &http, &clock, &request()));
        assert_eq!((got_kind, got_violation.as_str()), (kind, violation));
        assert_eq!(
            usage,
            Usage { input_tokens: 1117, output_tokens: 46, latency_ms: 40, cost_usd: None },
            "tokens were spent"
        );
    }
}

#[test]
fn the_previous_violation_is_shown_to_the_model() {
    let clock = ManualClock::new(0);
    let http = FakeHttp::new(&clock, 1, vec![respond(200, &success())]);
    let mut repair = request();
    repair.previous_violation = Some("`finding.severity`: expected one of critical, high, medium, low".into());
    decide(&config(ModelProvider::OpenAi, "gpt-5"), &http, &clock, &repair).unwrap();
    let user = http.body(0)["messages"][1]["content"].as_str().unwrap().to_owned();
    assert!(user.contains("Your previous answer could not be used: `finding.severity`: expected one of"), "{user}");
}
