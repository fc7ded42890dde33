//! Google Gemini `generateContent` with a response schema.

mod support;

use agent_zero_contracts::ModelProvider;
use agent_zero_contracts::{ChangeRisk, Usage};
use agent_zero_models::{ModelError, Pricing, UnusableKind, decision_gemini_schema, select_models};
use agent_zero_ports::ManualClock;
use serde_json::{Value, json};
use support::*;

/// A `GenerateContentResponse` as the Gemini API returns it.
fn generated(parts: Value, finish_reason: &str) -> Value {
    json!({
        "candidates": [{
            "content": {"parts": parts, "role": "model"},
            "finishReason": finish_reason,
            "index": 0
        }],
        "usageMetadata": {
            "promptTokenCount": 812,
            "candidatesTokenCount": 120,
            "totalTokenCount": 1032,
            "thoughtsTokenCount": 100,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 812}]
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "mTnAaP3eNLvWz7IPq5yd4A0"
    })
}

fn text(t: &str) -> Value {
    json!([{"text": t}])
}

#[test]
fn sends_generate_content_with_a_response_schema() {
    let clock = ManualClock::new(0);
    let mut decision = decision_json();
    decision["finding"]["changeRisk"] = json!("high-impact");
    let answer = json!([{"text": "thinking about it", "thought": true}, {"text": decision.to_string()}]);
    let http = FakeHttp::new(&clock, 900, vec![respond(200, &generated(answer, "STOP"))]);
    let mut policy = policy("google", "gemini-2.5-flash");
    policy.input_cost_per_million_tokens = Some(0.3);
    policy.output_cost_per_million_tokens = Some(2.5);
    let selection =
        select_models(&policy, |name| (name == "GOOGLE_GENERATIVE_AI_API_KEY").then(|| KEY.to_owned())).unwrap();
    let got = decide_selected(&selection, &http, &clock, &request()).unwrap();

    let sent = http.request(0);
    assert_eq!(sent.uri(), "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent");
    assert_eq!(header(&sent, "authorization"), None);
    assert_key_only_in(&sent, "x-goog-api-key", "");
    let body = http.body(0);
    assert_eq!(body["systemInstruction"], json!({"parts": [{"text": "SYSTEM PROMPT"}]}));
    assert_eq!(body["contents"][0]["role"], "user");
    assert!(body["contents"][0]["parts"][0]["text"].as_str().unwrap().contains("<repository-context>"));
    assert_eq!(body["generationConfig"]["responseMimeType"], "application/json");
    assert_eq!(body["generationConfig"]["responseSchema"], decision_gemini_schema());
    assert_eq!(body["generationConfig"]["maxOutputTokens"], 16_384);

    assert_eq!(got.decision.finding.change_risk, ChangeRisk::HighImpact);
    let cost = Pricing { input_per_million_tokens: 0.3, output_per_million_tokens: 2.5 }.cost_usd(812, 220);
    assert_eq!(
        got.usage,
        Usage { input_tokens: 812, output_tokens: 220, latency_ms: 900, cost_usd: Some(cost) },
        "thinking is output"
    );
}

#[test]
fn unusable_answers() {
    let clock = ManualClock::new(0);
    let config = config(ModelProvider::Google, "gemini-2.5-pro");
    let blocked = json!({
        "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]},
        "usageMetadata": {"promptTokenCount": 812, "totalTokenCount": 812},
        "modelVersion": "gemini-2.5-pro"
    });
    let cases = [
        (
            generated(text("{\"finding\": {\"ti"), "MAX_TOKENS"),
            UnusableKind::Truncated,
            "the answer was cut at the 16384-token output limit; answer more briefly",
            220,
        ),
        (
            generated(text(""), "SAFETY"),
            UnusableKind::Refusal,
            "the model declined to answer: the answer was withheld (SAFETY)",
            220,
        ),
        (blocked, UnusableKind::Refusal, "the model declined to answer: the prompt was blocked (SAFETY)", 0),
        (
            generated(text("{not json"), "STOP"),
            UnusableKind::MalformedJson,
            "the answer is not JSON: key must be a string at line 1 column 2",
            220,
        ),
        (
            generated(text(&violating_json().to_string()), "STOP"),
            UnusableKind::SchemaViolation,
            "`finding.severity`: expected one of critical, high, medium, low, got \"catastrophic\"",
            220,
        ),
    ];
    for (body, kind, violation, output_tokens) in cases {
        let http = FakeHttp::new(&clock, 5, vec![respond(200, &body)]);
        match decide(&config, &http, &clock, &request()) {
            Err(ModelError::Unusable { kind: k, violation: v, usage, provider }) => {
                assert_eq!(provider, ModelProvider::Google);
                assert_eq!((k, v.as_str()), (kind, violation));
                assert_eq!((usage.input_tokens, usage.output_tokens), (812, output_tokens));
            }
            other => panic!("expected unusable, got {other:?}"),
        }
    }
}

#[test]
fn resource_exhausted_reads_retry_info_from_the_body() {
    let clock = ManualClock::new(0);
    let config = config(ModelProvider::Google, "gemini-2.5-pro");
    let exhausted = json!({"error": {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}
        ]
    }});
    let mut req = request();
    req.retry_budget_ms = 10_000;
    let http = FakeHttp::new(&clock, 5, vec![respond(429, &exhausted)]);
    let e = decide(&config, &http, &clock, &req).unwrap_err();
    assert_eq!(e, ModelError::RateLimited { provider: ModelProvider::Google, retry_after_ms: Some(17_000) });
    assert!(e.is_unavailable(), "17 s is beyond the 10 s budget");
    req.retry_budget_ms = 20_000;
    let http = FakeHttp::new(&clock, 5, vec![respond(429, &exhausted)]);
    assert_eq!(
        decide(&config, &http, &clock, &req).unwrap_err().class(),
        agent_zero_models::ErrorClass::RetryAfter(17_000)
    );
}
