//! Anthropic Messages API; structured output through one forced tool
//! (`tool_choice: {type: "tool", name}`) whose `input_schema` is ours.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::prompt::render_user_message;
use crate::schema::decision_json_schema;
use crate::wire::{Answer, Reply, json_request};
use crate::{DecisionRequest, ProviderConfig};

/// The Messages API version this adapter speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `POST {base}/messages` with `x-api-key` and `anthropic-version`.
pub(crate) fn build(
    config: &ProviderConfig,
    request: &DecisionRequest,
) -> Result<http::Request<Vec<u8>>, &'static str> {
    let tool = request.schema.wire_name();
    let body = json!({
        "model": config.model,
        "max_tokens": config.max_output_tokens,
        "system": request.system,
        "messages": [{"role": "user", "content": render_user_message(request)}],
        "tools": [{
            "name": tool,
            "description": request.schema.purpose(),
            "input_schema": decision_json_schema(),
        }],
        "tool_choice": {"type": "tool", "name": tool},
    });
    let key = config.api_key.as_ref().map(|k| k.expose()).unwrap_or_default();
    let headers = [("x-api-key", key, true), ("anthropic-version", ANTHROPIC_VERSION, false)];
    json_request(&format!("{}/messages", config.base_url), &headers, &body)
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Vec<Block>,
    stop_reason: Option<String>,
    usage: Option<Tokens>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    name: Option<String>,
    input: Option<Value>,
    text: Option<String>,
}

#[derive(Deserialize)]
struct Tokens {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: u64,
}

/// Reads a `message` object; the answer is the named tool's input.
pub(crate) fn parse(body: &[u8], tool: &str) -> Result<Reply, String> {
    let message: Message = agent_zero_codecs::json::from_slice(body).map_err(|e| format!("not a message: {e}"))?;
    let (input_tokens, output_tokens) = message.usage.map_or((0, 0), |u| {
        let cached = u.cache_creation_input_tokens.unwrap_or(0) + u.cache_read_input_tokens.unwrap_or(0);
        (u.input_tokens + cached, u.output_tokens)
    });
    let text = || message.content.iter().filter_map(|b| b.text.as_deref()).collect::<Vec<_>>().join(" ");
    let answer = match message.stop_reason.as_deref() {
        Some("refusal") => Answer::Refusal(text()),
        Some("max_tokens") => Answer::Truncated,
        _ => message
            .content
            .iter()
            .find(|b| b.kind == "tool_use" && b.name.as_deref() == Some(tool))
            .and_then(|b| b.input.clone())
            .map_or(Answer::Missing("the message has no call of the decision tool"), Answer::Structured),
    };
    Ok(Reply { answer, input_tokens, output_tokens })
}
