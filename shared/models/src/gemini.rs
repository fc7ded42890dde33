//! Google Gemini `generateContent` with `responseMimeType:
//! application/json` and a `responseSchema`.

use serde::Deserialize;
use serde_json::json;

use crate::prompt::render_user_message;
use crate::schema::decision_gemini_schema;
use crate::wire::{Answer, Reply, json_request};
use crate::{DecisionRequest, ProviderConfig};

/// Finish reasons that mean the answer was withheld.
const BLOCKED: &[&str] =
    &["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE"];

/// `POST {base}/models/{model}:generateContent` with `x-goog-api-key`.
pub(crate) fn build(
    config: &ProviderConfig,
    request: &DecisionRequest,
) -> Result<http::Request<Vec<u8>>, &'static str> {
    let body = json!({
        "systemInstruction": {"parts": [{"text": request.system}]},
        "contents": [{"role": "user", "parts": [{"text": render_user_message(request)}]}],
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseSchema": decision_gemini_schema(),
            "maxOutputTokens": config.max_output_tokens,
        },
    });
    let key = config.api_key.as_ref().map(|k| k.expose()).unwrap_or_default();
    let url = format!("{}/models/{}:generateContent", config.base_url, config.model);
    json_request(&url, &[("x-goog-api-key", key, true)], &body)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    #[serde(default)]
    candidates: Vec<Candidate>,
    prompt_feedback: Option<Feedback>,
    usage_metadata: Option<Tokens>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    content: Option<Content>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
struct Part {
    text: Option<String>,
    #[serde(default)]
    thought: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Feedback {
    block_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tokens {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    /// Thinking is billed as output.
    #[serde(default)]
    thoughts_token_count: u64,
}

/// Reads a `GenerateContentResponse`.
pub(crate) fn parse(body: &[u8]) -> Result<Reply, String> {
    let response: Response =
        agent_zero_codecs::json::from_slice(body).map_err(|e| format!("not a GenerateContentResponse: {e}"))?;
    let (input_tokens, output_tokens) = response
        .usage_metadata
        .map_or((0, 0), |u| (u.prompt_token_count, u.candidates_token_count + u.thoughts_token_count));
    let blocked = response.prompt_feedback.and_then(|f| f.block_reason);
    let answer = match (response.candidates.into_iter().next(), blocked) {
        (_, Some(reason)) => Answer::Refusal(format!("the prompt was blocked ({reason})")),
        (None, None) => Answer::Missing("the response has no candidates"),
        (Some(candidate), None) => {
            let reason = candidate.finish_reason.unwrap_or_default();
            let text: String = candidate
                .content
                .map(|c| c.parts.into_iter().filter(|p| !p.thought).filter_map(|p| p.text).collect())
                .unwrap_or_default();
            if reason == "MAX_TOKENS" {
                Answer::Truncated
            } else if BLOCKED.contains(&reason.as_str()) {
                Answer::Refusal(format!("the answer was withheld ({reason})"))
            } else if text.is_empty() {
                Answer::Missing("the candidate has no text")
            } else {
                Answer::Text(text)
            }
        }
    };
    Ok(Reply { answer, input_tokens, output_tokens })
}
