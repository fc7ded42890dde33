//! Reading requests at the boundary: query strings and JSON bodies, with
//! errors that name the field.

use serde::de::DeserializeOwned;

use crate::error::{ApiError, ErrorCode};

/// Most bytes of a short text field of a request (an author, a title).
pub(crate) const MAX_SHORT: usize = 256;

/// The query parameters of `request`, percent-decoded, refusing names not
/// in `known` and repeated names.
pub(crate) fn query(request: &http::Request<Vec<u8>>, known: &[&str]) -> Result<Vec<(String, String)>, ApiError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for part in request.uri().query().unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
        let (name, value) = part.split_once('=').unwrap_or((part, ""));
        let name =
            decode(name).ok_or_else(|| invalid("query", "the query string is not valid percent-encoded UTF-8"))?;
        let value = decode(value).ok_or_else(|| invalid(&name, "not valid percent-encoded UTF-8"))?;
        if !known.contains(&name.as_str()) {
            return Err(invalid(&name, &format!("unknown query parameter; known: {}", known.join(", "))));
        }
        if pairs.iter().any(|(n, _)| *n == name) {
            return Err(invalid(&name, "given more than once"));
        }
        pairs.push((name, value));
    }
    Ok(pairs)
}

/// The value of `name` among decoded query pairs.
pub(crate) fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// `limit`: 1..=`max`, `default` when absent.
pub(crate) fn limit(pairs: &[(String, String)], default: usize, max: usize) -> Result<usize, ApiError> {
    match param(pairs, "limit") {
        None => Ok(default),
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| invalid("limit", &format!("an integer from 1 to {max}"))),
    }
}

fn decode(text: &str) -> Option<String> {
    agent_zero_contracts::decode_component(text)
}

/// A 400 naming `field`.
pub(crate) fn invalid(field: &str, message: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, format!("{field}: {message}")).with_field(field)
}

/// Parses a JSON body of at most `max_bytes` into `T`: 415 unless the
/// content type is JSON, 413 when too large, 400 naming the field that
/// failed (unknown fields, wrong types, missing fields).
pub(crate) fn json_body<T: DeserializeOwned>(
    request: &http::Request<Vec<u8>>,
    max_bytes: usize,
) -> Result<T, ApiError> {
    let content_type =
        request.headers().get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(ApiError::new(ErrorCode::UnsupportedMediaType, "the body must be `application/json`")
            .with_field("Content-Type"));
    }
    if request.body().len() > max_bytes {
        return Err(ApiError::new(ErrorCode::PayloadTooLarge, format!("the body is over {max_bytes} bytes")));
    }
    let body = request.body();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = T::deserialize(agent_zero_codecs::json::Objects(&mut deserializer)).map_err(|e| {
        // The path from serde_json's error position: each body type compiles once.
        let mut path = agent_zero_github::json_path_at(body, e.line(), e.column());
        let message = e.to_string();
        // Unknown and missing fields are reported at their parent: name the field itself.
        let named = ["unknown field `", "missing field `"]
            .iter()
            .find_map(|p| message.strip_prefix(p))
            .and_then(|rest| rest.split('`').next());
        if let Some(name) = named
            && path != name
            && !path.ends_with(&format!(".{name}"))
        {
            path = if path == "." { name.to_owned() } else { format!("{path}.{name}") };
        }
        let field = if path == "." { "body".to_owned() } else { path };
        invalid(&field, &message)
    })?;
    deserializer.end().map_err(|e| invalid("body", &e.to_string()))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(uri: &str) -> http::Request<Vec<u8>> {
        http::Request::builder().uri(uri).body(Vec::new()).unwrap()
    }

    #[test]
    fn query_decodes_and_refuses_unknown_or_repeated_names() {
        let pairs =
            query(&get("/x?repository=acme%2Fw&state=needs-human&limit=5"), &["repository", "state", "limit"]).unwrap();
        assert_eq!(param(&pairs, "repository"), Some("acme/w"));
        assert_eq!(limit(&pairs, 20, 100).unwrap(), 5);
        assert_eq!(query(&get("/x?nope=1"), &["limit"]).unwrap_err().field.as_deref(), Some("nope"));
        assert_eq!(query(&get("/x?limit=1&limit=2"), &["limit"]).unwrap_err().field.as_deref(), Some("limit"));
        assert_eq!(query(&get("/x?limit=%FF"), &["limit"]).unwrap_err().field.as_deref(), Some("limit"));
        for bad in ["0", "101", "-1", "x"] {
            let pairs = vec![("limit".to_owned(), bad.to_owned())];
            assert_eq!(limit(&pairs, 20, 100).unwrap_err().field.as_deref(), Some("limit"), "{bad}");
        }
    }
}
