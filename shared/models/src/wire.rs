//! What every wire format shares: the normalised reply, error-envelope
//! details and rate-limit hints.

use agent_zero_codecs::decimal;
use agent_zero_contracts::Usage;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::Value;

/// What the provider's envelope said about the answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// Text to parse as the decision JSON.
    #[cfg_attr(not(any(feature = "openai", feature = "google")), expect(dead_code, reason = "read by those adapters"))]
    Text(String),
    /// An already-structured answer (Anthropic tool input).
    #[cfg_attr(not(feature = "anthropic"), expect(dead_code, reason = "read by that adapter"))]
    Structured(Value),
    /// The model or a filter declined; the provider's words, if any.
    Refusal(String),
    /// Stopped at the output token limit.
    Truncated,
    /// The envelope carried no answer at all.
    Missing(&'static str),
}

/// A provider reply reduced to the answer and its token counts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    pub(crate) answer: Answer,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
}

impl Reply {
    pub(crate) fn usage(&self, latency_ms: u64, pricing: Option<crate::Pricing>) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            latency_ms,
            cost_usd: pricing.map(|p| p.cost_usd(self.input_tokens, self.output_tokens)),
        }
    }
}

/// `error.type|status|code: error.message` from any of the three error
/// envelopes (OpenAI `{error:{message,type,code}}`, Anthropic
/// `{type:"error",error:{type,message}}`, Gemini `{error:{code,message,status}}`);
/// never the raw body. Unredacted: the caller redacts.
pub(crate) fn error_detail(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Envelope {
        error: Option<Inner>,
    }
    #[derive(Deserialize)]
    struct Inner {
        message: Option<String>,
        #[serde(rename = "type")]
        kind: Option<String>,
        status: Option<String>,
    }
    match agent_zero_codecs::json::from_slice::<Envelope>(body) {
        Ok(Envelope { error: Some(inner) }) => {
            let label = inner.kind.or(inner.status);
            match (label, inner.message) {
                (Some(l), Some(m)) => format!("{l}: {m}"),
                (Some(l), None) => l,
                (None, Some(m)) => m,
                (None, None) => "no error message".into(),
            }
        }
        _ => format!("non-JSON error body ({} bytes)", body.len()),
    }
}

/// The delay a 429 asks for, in ms: `retry-after-ms` (OpenAI), `retry-after`
/// in seconds (every provider), or Gemini's `RetryInfo.retryDelay` (`"17s"`).
/// An HTTP-date `retry-after` counts as no hint.
pub(crate) fn retry_after_ms(headers: &HeaderMap, body: &[u8]) -> Option<u64> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(decimal::parse) {
        return to_ms(ms);
    }
    if let Some(s) = header("retry-after").and_then(decimal::parse) {
        return to_ms(s * 1000.0);
    }
    let body: Value = agent_zero_codecs::json::from_slice(body).ok()?;
    body["error"]["details"].as_array()?.iter().find_map(|detail| {
        let delay = detail["retryDelay"].as_str()?.strip_suffix('s')?;
        to_ms(decimal::parse(delay)? * 1000.0)
    })
}

fn to_ms(ms: f64) -> Option<u64> {
    (ms.is_finite() && ms >= 0.0).then(|| ms.ceil() as u64)
}

/// Builds the JSON request every adapter sends.
pub(crate) fn json_request(
    url: &str,
    headers: &[(&'static str, &str, bool)],
    body: &Value,
) -> Result<http::Request<Vec<u8>>, &'static str> {
    let mut builder = http::Request::post(url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json");
    for (name, value, sensitive) in headers {
        let mut value = http::HeaderValue::from_str(value).map_err(|_| "a header value is not valid")?;
        value.set_sensitive(*sensitive);
        builder = builder.header(*name, value);
    }
    builder.body(serde_json::to_vec(body).unwrap_or_default()).map_err(|_| "the endpoint URL is not valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_details_from_each_envelope() {
        let openai = br#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
        assert_eq!(error_detail(openai), "requests: Rate limit reached");
        let anthropic = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(error_detail(anthropic), "overloaded_error: Overloaded");
        let gemini = br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}"#;
        assert_eq!(error_detail(gemini), "RESOURCE_EXHAUSTED: Quota exceeded");
        assert_eq!(error_detail(b"<html>Bad gateway</html>"), "non-JSON error body (24 bytes)");
    }

    #[test]
    fn retry_hints() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after_ms(&headers, b""), None);
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after_ms(&headers, b""), Some(2000));
        headers.insert("retry-after-ms", "150.5".parse().unwrap());
        assert_eq!(retry_after_ms(&headers, b""), Some(151));
        let mut dated = HeaderMap::new();
        dated.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after_ms(&dated, b"{}"), None);
        let gemini = br#"{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}"#;
        assert_eq!(retry_after_ms(&HeaderMap::new(), gemini), Some(17_000));
    }
}
