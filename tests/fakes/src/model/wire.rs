//! The four provider wire formats: which one a request speaks, and how an
//! answer, a refusal, a truncation or an error looks in it.

use serde_json::{Value, json};

use crate::record::RecordedCall;
use crate::server::Reply;
use crate::time::now_secs;

/// A provider wire format, told from the request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireFormat {
    /// OpenAI Chat Completions (`.../chat/completions`): OpenAI, AI Gateway,
    /// OpenAI-compatible servers.
    ChatCompletions,
    /// OpenAI Responses (`.../responses`).
    Responses,
    /// Anthropic Messages (`.../messages`).
    AnthropicMessages,
    /// Google Gemini (`.../models/{model}:generateContent`).
    GeminiGenerateContent,
}

impl WireFormat {
    /// The format a request path speaks, whatever prefix (`/v1`, `/v1beta`,
    /// a gateway path) comes before it.
    pub fn of_path(path: &str) -> Option<Self> {
        let path = path.trim_end_matches('/');
        if path.ends_with("/chat/completions") {
            Some(Self::ChatCompletions)
        } else if path.ends_with("/responses") {
            Some(Self::Responses)
        } else if path.ends_with("/messages") {
            Some(Self::AnthropicMessages)
        } else if path.ends_with(":generateContent") {
            Some(Self::GeminiGenerateContent)
        } else {
            None
        }
    }
}

/// What the model "said".
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Said {
    /// Structured output.
    Decision(Value),
    /// Free text where structured output was expected.
    Text(String),
    /// A refusal in the format's own terms.
    Refusal(String),
    /// Cut off at the output token limit.
    Truncated,
}

/// Renders an answer in `format` for the request `call`; `serial` makes ids.
pub(crate) fn render(format: WireFormat, call: &RecordedCall, said: &Said, serial: u64) -> Reply {
    let request = call.json().unwrap_or(Value::Null);
    let model = request["model"].as_str().map_or_else(|| gemini_model(&call.decoded_path()), str::to_owned);
    let input_tokens = (call.body.len() as u64 / 4).max(1);
    let text = match said {
        Said::Decision(value) => value.to_string(),
        Said::Text(text) | Said::Refusal(text) => text.clone(),
        Said::Truncated => "{\"summary\": \"The change".to_owned(),
    };
    let output_tokens = (text.len() as u64 / 4).max(1);
    let created = now_secs();
    let body = match format {
        WireFormat::ChatCompletions => {
            let (content, refusal, finish) = match said {
                Said::Refusal(words) => (Value::Null, Value::from(words.as_str()), "stop"),
                Said::Truncated => (Value::from(text), Value::Null, "length"),
                _ => (Value::from(text), Value::Null, "stop"),
            };
            json!({
                "id": format!("chatcmpl-fake{serial:06}"),
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal, "annotations": []},
                    "logprobs": null,
                    "finish_reason": finish,
                }],
                "usage": {
                    "prompt_tokens": input_tokens,
                    "completion_tokens": output_tokens,
                    "total_tokens": input_tokens + output_tokens,
                    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                        "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
                },
                "service_tier": "default",
                "system_fingerprint": null,
            })
        }
        WireFormat::Responses => {
            let part = match said {
                Said::Refusal(words) => json!({"type": "refusal", "refusal": words}),
                _ => {
                    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
                }
            };
            let (status, incomplete) = match said {
                Said::Truncated => ("incomplete", json!({"reason": "max_output_tokens"})),
                _ => ("completed", Value::Null),
            };
            json!({
                "id": format!("resp_fake{serial:06}"),
                "object": "response",
                "created_at": created,
                "status": status,
                "error": null,
                "incomplete_details": incomplete,
                "model": model,
                "output": [{
                    "type": "message",
                    "id": format!("msg_fake{serial:06}"),
                    "status": status,
                    "role": "assistant",
                    "content": [part],
                }],
                "usage": {
                    "input_tokens": input_tokens,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": output_tokens,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": input_tokens + output_tokens,
                },
            })
        }
        WireFormat::AnthropicMessages => {
            let tool = request["tool_choice"]["name"]
                .as_str()
                .or_else(|| request["tools"][0]["name"].as_str())
                .unwrap_or("decision");
            let (content, stop) = match said {
                Said::Decision(value) => (
                    json!([{"type": "tool_use", "id": format!("toolu_fake{serial:06}"), "name": tool, "input": value}]),
                    "tool_use",
                ),
                Said::Text(text) => (json!([{"type": "text", "text": text}]), "end_turn"),
                Said::Refusal(words) => (json!([{"type": "text", "text": words}]), "refusal"),
                Said::Truncated => (
                    json!([{"type": "tool_use", "id": format!("toolu_fake{serial:06}"), "name": tool, "input": {}}]),
                    "max_tokens",
                ),
            };
            json!({
                "id": format!("msg_fake{serial:06}"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": output_tokens,
                    "service_tier": "standard",
                },
            })
        }
        WireFormat::GeminiGenerateContent => {
            let candidate = match said {
                Said::Refusal(_) => json!({"finishReason": "SAFETY", "index": 0, "safetyRatings": [
                    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}]}),
                Said::Truncated => json!({"content": {"parts": [{"text": text}], "role": "model"},
                                          "finishReason": "MAX_TOKENS", "index": 0}),
                _ => {
                    json!({"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0})
                }
            };
            json!({
                "candidates": [candidate],
                "usageMetadata": {
                    "promptTokenCount": input_tokens,
                    "candidatesTokenCount": output_tokens,
                    "totalTokenCount": input_tokens + output_tokens,
                    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": input_tokens}],
                },
                "modelVersion": model,
                "responseId": format!("fake{serial:06}"),
            })
        }
    };
    with_provider_headers(format, Reply::json(200, &body), serial)
}

/// The model named in a Gemini path (`.../models/{model}:generateContent`).
fn gemini_model(path: &str) -> String {
    path.rsplit('/').next().and_then(|last| last.split(':').next()).unwrap_or_default().to_owned()
}

/// An error in the format's own envelope.
pub(crate) fn error(format: Option<WireFormat>, status: u16, message: &str, serial: u64) -> Reply {
    let body = match format {
        Some(WireFormat::AnthropicMessages) => {
            let kind = if status >= 500 { "api_error" } else { "not_found_error" };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Some(WireFormat::GeminiGenerateContent) => {
            let kind = match status {
                404 => "NOT_FOUND",
                504 => "DEADLINE_EXCEEDED",
                _ => "INTERNAL",
            };
            json!({"error": {"code": status, "message": message, "status": kind}})
        }
        _ => {
            let kind = if status >= 500 { "server_error" } else { "invalid_request_error" };
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
    };
    let reply = Reply::json(status, &body);
    match format {
        Some(format) => with_provider_headers(format, reply, serial),
        None => reply,
    }
}

fn with_provider_headers(format: WireFormat, reply: Reply, serial: u64) -> Reply {
    match format {
        WireFormat::ChatCompletions | WireFormat::Responses => reply
            .with_header("x-request-id", &format!("req_fake{serial:06}"))
            .with_header("openai-processing-ms", "12")
            .with_header("x-ratelimit-remaining-requests", "9999"),
        WireFormat::AnthropicMessages => reply
            .with_header("request-id", &format!("req_fake{serial:06}"))
            .with_header("anthropic-ratelimit-requests-remaining", "999"),
        WireFormat::GeminiGenerateContent => reply.with_header("server-timing", "gfet4t7; dur=12"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_formats_from_paths() {
        assert_eq!(WireFormat::of_path("/v1/chat/completions"), Some(WireFormat::ChatCompletions));
        assert_eq!(WireFormat::of_path("/chat/completions"), Some(WireFormat::ChatCompletions));
        assert_eq!(WireFormat::of_path("/v1/responses"), Some(WireFormat::Responses));
        assert_eq!(WireFormat::of_path("/v1/messages"), Some(WireFormat::AnthropicMessages));
        assert_eq!(
            WireFormat::of_path("/v1beta/models/gemini-2.5-pro:generateContent"),
            Some(WireFormat::GeminiGenerateContent)
        );
        assert_eq!(WireFormat::of_path("/v1/embeddings"), None);
        assert_eq!(gemini_model("/v1beta/models/gemini-2.5-pro:generateContent"), "gemini-2.5-pro");
    }
}
