//! FakeModel over real HTTP: each provider's shape, scripted faults,
//! delays, the empty-script failure and request recording.

mod support;

use std::time::{Duration, Instant};

use agent_zero_fakes::{DELAYED_STATUS, FakeModel, WireFormat};
use serde_json::{Value, json};
use support::{send, try_send};

fn decision() -> Value {
    json!({"summary": "average divides by n + 1", "verdict": "fix", "findings": [{"path": "calc.py", "line": 11}]})
}

fn chat_request() -> Value {
    json!({"model": "gpt-5", "messages": [{"role": "system", "content": "You review code."}, {"role": "user", "content": "PROMPT-MARKER"}]})
}

#[test]
fn chat_completions_carry_the_decision_as_content() {
    let model = FakeModel::start();
    model.push_decision(decision());
    model.push_decision(json!({"second": true}));
    let answer = send(
        "POST",
        &format!("{}/chat/completions", model.base_url()),
        &[("authorization", "Bearer sk-test")],
        Some(&chat_request()),
    );
    assert_eq!(answer.status, 200);
    let body = answer.json();
    assert_eq!(body["object"], "chat.completion");
    let content = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(content).unwrap(), decision());
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    let usage = &body["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 10);
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap())
    );
    // Without the /v1 prefix too (OpenAI-compatible servers).
    let bare = send("POST", &format!("{}/chat/completions", model.url()), &[], Some(&chat_request()));
    assert_eq!(bare.json()["choices"][0]["message"]["content"], r#"{"second":true}"#);

    let calls = model.calls_in(WireFormat::ChatCompletions);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].header("authorization"), Some("Bearer sk-test"));
    assert!(calls[0].contains("PROMPT-MARKER") && !calls[1].contains("sk-test"));
    assert_eq!(model.pending(), 0);
}

#[test]
fn anthropic_gets_a_tool_use_block_named_after_the_forced_tool() {
    let model = FakeModel::start();
    model.push_decision(decision());
    let request = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": "x"}],
        "tools": [{"name": "record_review", "input_schema": {"type": "object"}}], "tool_choice": {"type": "tool", "name": "record_review"}});
    let answer = send(
        "POST",
        &format!("{}/messages", model.base_url()),
        &[("x-api-key", "sk-ant"), ("anthropic-version", "2023-06-01")],
        Some(&request),
    );
    assert_eq!(answer.status, 200);
    let body = answer.json();
    assert_eq!((body["type"].as_str(), body["stop_reason"].as_str()), (Some("message"), Some("tool_use")));
    let block = &body["content"][0];
    assert_eq!((block["type"].as_str(), block["name"].as_str()), (Some("tool_use"), Some("record_review")));
    assert_eq!(block["input"], decision());
    assert!(
        body["usage"]["input_tokens"].as_u64().unwrap() > 0 && body["usage"]["output_tokens"].as_u64().unwrap() > 0
    );
    assert_eq!(answer.header("request-id").map(|id| id.starts_with("req_")), Some(true));
    assert_eq!(model.calls()[0].header("anthropic-version"), Some("2023-06-01"));
}

#[test]
fn gemini_and_responses_carry_the_decision_as_text() {
    let model = FakeModel::start();
    model.push_decision(decision());
    model.push_decision(decision());
    let gemini = send(
        "POST",
        &format!("{}/v1beta/models/gemini-2.5-flash:generateContent", model.url()),
        &[("x-goog-api-key", "g")],
        Some(&json!({"contents": [{"role": "user", "parts": [{"text": "x"}]}]})),
    );
    assert_eq!(gemini.status, 200);
    let body = gemini.json();
    let text = body["candidates"][0]["content"]["parts"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), decision());
    assert_eq!(
        (body["candidates"][0]["finishReason"].as_str(), body["modelVersion"].as_str()),
        (Some("STOP"), Some("gemini-2.5-flash"))
    );
    assert!(body["usageMetadata"]["promptTokenCount"].as_u64().unwrap() > 0);

    let responses =
        send("POST", &format!("{}/responses", model.base_url()), &[], Some(&json!({"model": "gpt-5", "input": "x"})));
    let body = responses.json();
    assert_eq!((body["object"].as_str(), body["status"].as_str()), (Some("response"), Some("completed")));
    let text = body["output"][0]["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), decision());
    assert_eq!(body["output"][0]["content"][0]["type"], "output_text");
    assert!(body["usage"]["input_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn scripted_faults_truncations_and_refusals() {
    let model = FakeModel::start();
    model.push_raw(429, &[("retry-after", "2")], r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#);
    model.push_raw(200, &[("content-type", "application/json")], "{not json");
    model.push_truncated();
    model.push_truncated();
    model.push_refusal("I can't help with that.");
    model.push_text("plain words, no JSON");
    let chat = |path: &str| send("POST", &format!("{}{path}", model.base_url()), &[], Some(&chat_request()));

    let limited = chat("/chat/completions");
    assert_eq!((limited.status, limited.header("retry-after")), (429, Some("2")));
    let garbage = chat("/chat/completions");
    assert_eq!((garbage.status, garbage.body.as_str()), (200, "{not json"));
    assert_eq!(chat("/chat/completions").json()["choices"][0]["finish_reason"], "length");
    assert_eq!(chat("/messages").json()["stop_reason"], "max_tokens");
    let refused = chat("/chat/completions").json();
    assert_eq!(refused["choices"][0]["message"]["refusal"], "I can't help with that.");
    assert!(refused["choices"][0]["message"]["content"].is_null());
    let text = chat("/messages").json();
    assert_eq!((text["content"][0]["type"].as_str(), text["stop_reason"].as_str()), (Some("text"), Some("end_turn")));
}

#[test]
fn a_delay_outlasts_the_client_and_the_retry_gets_the_next_answer() {
    let model = FakeModel::start();
    model.push_delay(3_000);
    model.push_decision(decision());
    let url = format!("{}/chat/completions", model.base_url());
    let started = Instant::now();
    let timed_out = try_send("POST", &url, &[], Some(&chat_request()), Some(Duration::from_millis(300)));
    assert!(timed_out.is_err(), "the client should have timed out: {timed_out:?}");
    let retry = send("POST", &url, &[], Some(&chat_request()));
    assert_eq!(retry.status, 200);
    assert!(started.elapsed() < Duration::from_millis(2_500), "the retry waited for the delayed answer");
    // A patient client sees the delayed answer's status.
    model.push_delay(50);
    assert_eq!(send("POST", &url, &[], Some(&chat_request())).status, DELAYED_STATUS);
}

#[test]
fn an_empty_script_or_unknown_path_fails_loudly() {
    let model = FakeModel::start();
    let empty = send("POST", &format!("{}/messages", model.base_url()), &[], Some(&json!({})));
    assert_eq!(empty.status, 500);
    assert_eq!(empty.json()["type"], "error");
    assert!(empty.json()["error"]["message"].as_str().unwrap().contains("FakeModel: no scripted answer left"));
    let gemini = send("POST", &format!("{}/v1beta/models/m:generateContent", model.url()), &[], Some(&json!({})));
    assert_eq!((gemini.status, gemini.json()["error"]["status"].as_str()), (500, Some("INTERNAL")));
    model.push_decision(decision());
    let unknown = send("POST", &format!("{}/v1/embeddings", model.url()), &[], Some(&json!({})));
    assert_eq!(unknown.status, 404);
    assert!(unknown.json()["error"]["message"].as_str().unwrap().contains("FakeModel"));
    assert_eq!(send("GET", &format!("{}/chat/completions", model.base_url()), &[], None).status, 405);
    assert_eq!(model.pending(), 1, "refused requests do not consume the script");
}
