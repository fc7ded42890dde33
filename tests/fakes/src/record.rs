//! What a fake saw: every request, as it arrived on the wire.

use serde_json::Value;

/// One request received by a fake, recorded before it was answered
/// (faulted and refused requests included).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedCall {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path as sent, still percent-encoded, without the query.
    pub path: String,
    /// Query parameters, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    /// Headers with lower-case names, in order.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Vec<u8>,
}

impl RecordedCall {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The first query parameter named `name`.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy UTF-8).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON, `None` when it is not JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// Whether `needle` occurs anywhere in the path, query, header values or
    /// body: for scanning requests for leaked secrets.
    pub fn contains(&self, needle: &str) -> bool {
        !needle.is_empty()
            && (self.path.contains(needle)
                || self.query.iter().any(|(n, v)| n.contains(needle) || v.contains(needle))
                || self.headers.iter().any(|(_, v)| v.contains(needle))
                || self.body_text().contains(needle))
    }

    /// The path, percent-decoded.
    pub fn decoded_path(&self) -> String {
        percent_decode(&self.path, false)
    }
}

/// Splits `a=1&b=x%20y` into decoded pairs (`+` is a space).
pub(crate) fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            (percent_decode(name, true), percent_decode(value, true))
        })
        .collect()
}

/// Decodes `%XX` escapes (and `+` as a space when `plus` is set); invalid
/// escapes are kept as they are.
pub(crate) fn percent_decode(text: &str, plus: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() && bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit() => {
                let hex = [bytes[i + 1], bytes[i + 2]];
                let hex = std::str::from_utf8(&hex).unwrap_or("00");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                i += 3;
                continue;
            }
            b'+' if plus => out.push(b' '),
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes a query value.
pub(crate) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_queries_and_keeps_bad_escapes() {
        assert_eq!(
            parse_query("ref=agent-zero%2Fissue-1&q=a+b&flag"),
            [
                ("ref".to_owned(), "agent-zero/issue-1".to_owned()),
                ("q".to_owned(), "a b".to_owned()),
                ("flag".to_owned(), String::new())
            ]
        );
        assert_eq!(percent_decode("100%", false), "100%");
        assert_eq!(percent_decode("%zz%41", false), "%zzA");
        assert_eq!(percent_encode("a/b c"), "a%2Fb%20c");
    }
}
