//! OpenAI Chat Completions with `response_format: json_schema` (strict).
//! Spoken by `openai`, `ai-gateway` (Vercel's OpenAI-compatible endpoint)
//! and `openai-compatible` servers (Ollama, llama.cpp, vLLM, Cloudflare AI
//! Gateway); only the URL, the key and the token-limit field differ.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::prompt::render_user_message;
use crate::schema::decision_json_schema;
use crate::wire::{Answer, Reply, json_request};
use crate::{DecisionRequest, ProviderConfig};
use agent_zero_contracts::ModelProvider;

/// `POST {base}/chat/completions` with `Authorization: Bearer <key>`.
pub(crate) fn build(
    config: &ProviderConfig,
    request: &DecisionRequest,
) -> Result<http::Request<Vec<u8>>, &'static str> {
    // OpenAI deprecated `max_tokens` (reasoning models reject it); local
    // servers still only know `max_tokens`.
    let limit_field = match config.kind {
        ModelProvider::OpenAiCompatible => "max_tokens",
        _ => "max_completion_tokens",
    };
    let mut body = json!({
        "model": config.model,
        "messages": [
            {"role": "system", "content": request.system},
            {"role": "user", "content": render_user_message(request)},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": request.schema.wire_name(),
                "description": request.schema.purpose(),
                "schema": decision_json_schema(),
                "strict": true,
            },
        },
    });
    body[limit_field] = Value::from(config.max_output_tokens);
    let bearer = config.api_key.as_ref().map(|key| format!("Bearer {}", key.expose()));
    let headers: Vec<_> = bearer.iter().map(|b| ("authorization", b.as_str(), true)).collect();
    json_request(&format!("{}/chat/completions", config.base_url), &headers, &body)
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<Tokens>,
}

#[derive(Deserialize)]
struct Choice {
    message: Option<Message>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct Tokens {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// Reads a `chat.completion` object.
pub(crate) fn parse(body: &[u8]) -> Result<Reply, String> {
    let completion: Completion =
        agent_zero_codecs::json::from_slice(body).map_err(|e| format!("not a chat completion: {e}"))?;
    let (input_tokens, output_tokens) = completion.usage.map_or((0, 0), |u| (u.prompt_tokens, u.completion_tokens));
    let answer = match completion.choices.into_iter().next() {
        None => Answer::Missing("the completion has no choices"),
        Some(choice) => {
            let (content, refusal) = choice.message.map_or((None, None), |m| (m.content, m.refusal));
            match (refusal.filter(|r| !r.is_empty()), choice.finish_reason.as_deref()) {
                (Some(words), _) => Answer::Refusal(words),
                (None, Some("length")) => Answer::Truncated,
                (None, Some("content_filter")) => {
                    Answer::Refusal("the provider's content filter withheld the answer".into())
                }
                (None, _) => content.map_or(Answer::Missing("the message has no content"), Answer::Text),
            }
        }
    };
    Ok(Reply { answer, input_tokens, output_tokens })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_finish_reason() {
        let ok = br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"{}","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}"#;
        assert_eq!(parse(ok).unwrap(), Reply { answer: Answer::Text("{}".into()), input_tokens: 9, output_tokens: 3 });
        let refused = br#"{"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}"#;
        assert_eq!(parse(refused).unwrap().answer, Answer::Refusal("I can't help with that.".into()));
        let cut = br#"{"choices":[{"message":{"content":"{\"fin"},"finish_reason":"length"}]}"#;
        assert_eq!(parse(cut).unwrap().answer, Answer::Truncated);
        assert!(matches!(parse(br#"{"choices":[]}"#).unwrap().answer, Answer::Missing(_)));
        assert!(parse(b"<html>").is_err());
    }
}
