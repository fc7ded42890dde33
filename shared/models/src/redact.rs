//! Credentials stay out of errors, records and `Debug` output.
//!
//! [`Secret`] holds a key and never prints it. [`redact`] cleans text that
//! came from a provider (an error message may echo a key, or part of one)
//! and caps it, so an error carries a hint, never a response body.

use agent_zero_ports::{REDACTED, Secret};

/// Longest provider detail kept in an error, in characters.
pub(crate) const MAX_DETAIL_CHARS: usize = 200;

/// Shortest run of a known secret that marks a token as leaking it.
const WINDOW: usize = 8;

/// Shortest body after a credential prefix taken for a key in a
/// provider's error (shorter than stored text's: an error is cut short).
const MIN_BODY: usize = 8;

/// Names whose value is a credential in `name=value` and `name: value`, in
/// any casing, alone or as the last part of a longer name (`DB_PASSWORD`,
/// `access_token`, `x-api-key`, `aws_secret_access_key`).
const CREDENTIAL_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "api-key",
    "apikey",
    "secret_key",
    "access_key",
    "private_key",
];

/// What the previous token makes of the next one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    Word,
    /// After a credential key alone: `=` or `:` may follow.
    Separator,
    /// After `Bearer`, or after a key and its separator: the value.
    Value,
}

/// Removes `secrets` (and any token sharing an 8-character run with one),
/// tokens holding a well-known credential shape (prefixed keys, AWS access
/// key ids, JWTs), the word after `Bearer` and the value of a credential
/// key (`password=…`, `token: …`); folds whitespace and control characters;
/// caps the result.
pub fn redact(text: &str, secrets: &[&Secret]) -> String {
    redact_to(text, secrets, MAX_DETAIL_CHARS)
}

/// [`redact`] with its own cap, in characters.
pub(crate) fn redact_to(text: &str, secrets: &[&Secret], max_chars: usize) -> String {
    let mut out = String::new();
    let mut next = Next::Word;
    for token in text.split(|c: char| c.is_whitespace() || c.is_control()).filter(|t| !t.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        let this = next;
        // Where the value of a credential key starts in this token.
        let value_at =
            if this == Next::Separator && token.starts_with(['=', ':']) { Some(1) } else { key_value_at(token) };
        next = if token.eq_ignore_ascii_case("bearer") || value_at == Some(token.len()) {
            Next::Value
        } else if value_at.is_none() && is_key(token.trim_matches(|c: char| !is_name_char(c))) {
            Next::Separator
        } else {
            Next::Word
        };
        match value_at {
            _ if this == Next::Value => out.push_str(REDACTED),
            Some(at) if at < token.len() && !leaks(&token[..at], secrets) => {
                out.push_str(&token[..at]);
                out.push_str(REDACTED);
            }
            _ if leaks(token, secrets) => out.push_str(REDACTED),
            _ => out.push_str(token),
        }
    }
    cap(&out, max_chars)
}

/// Where the value starts after the first `name=` or `name:` in `token`
/// whose name (quotes aside) is a credential key; `token.len()` when the
/// value is the next token.
fn key_value_at(token: &str) -> Option<usize> {
    token.match_indices(['=', ':']).map(|(at, _)| at).find_map(|at| {
        let before = token[..at].trim_end_matches(['"', '\'']);
        let start = before.rfind(|c: char| !is_name_char(c)).map_or(0, |i| i + 1);
        is_key(&before[start..]).then_some(at + 1)
    })
}

const fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Whether `name` is a [`CREDENTIAL_KEYS`] key, or ends with one after
/// `_`, `-` or `.`, in any casing.
fn is_key(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    CREDENTIAL_KEYS
        .iter()
        .any(|key| name.strip_suffix(key).is_some_and(|rest| rest.is_empty() || rest.ends_with(['_', '-', '.'])))
}

fn leaks(token: &str, secrets: &[&Secret]) -> bool {
    if shaped(token) {
        return true;
    }
    secrets.iter().any(|secret| {
        let value = secret.expose();
        if value.is_empty() {
            return false;
        }
        if value.len() < WINDOW {
            return token.contains(value);
        }
        let bytes = value.as_bytes();
        bytes.windows(WINDOW).any(|w| std::str::from_utf8(w).is_ok_and(|w| token.contains(w)))
    })
}

/// Whether a word of `token` starts a credential shape
/// ([`agent_zero_ports::credential_at`]: a prefixed key, an AWS access key
/// id, a JWT).
fn shaped(token: &str) -> bool {
    let bytes = token.as_bytes();
    (0..bytes.len()).any(|i| {
        agent_zero_ports::starts_word(bytes, i) && agent_zero_ports::credential_at(bytes, i, MIN_BODY).is_some()
    })
}

/// Keeps at most `max` characters, marking the cut.
pub(crate) fn cap(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_keys_echoes_and_bearer_tokens() {
        let key = Secret::new("test-key-0123456789abcdef");
        let text = "Incorrect API key provided: test-key-0123****cdef. auth: Bearer abc.def\nsee sk-proj-AAAAAAAAAAAAAAAA and AIzaSyD-0123456789";
        let out = redact(text, &[&key]);
        assert!(!out.contains("0123456789abcdef"), "{out}");
        assert!(!out.contains("test-key-0123"), "{out}");
        assert!(!out.contains("abc.def"), "{out}");
        assert!(!out.contains("sk-proj"), "{out}");
        assert!(!out.contains("AIzaSy"), "{out}");
        assert!(out.starts_with("Incorrect API key provided: [redacted]"), "{out}");
        assert!(!out.contains('\n'));
    }

    #[test]
    fn keeps_ordinary_text_and_caps_it() {
        let key = Secret::new("zzzzzzzzzzzzzzzz");
        let text = "model `claude-sonnet-4-5-20250929` not found";
        assert_eq!(redact(text, &[&key]), text);
        let long = "word ".repeat(100);
        let out = redact(&long, &[]);
        assert_eq!(out.chars().count(), MAX_DETAIL_CHARS + 1);
        assert!(out.ends_with('…'));
        assert_eq!(format!("{key:?}"), "Secret([redacted])");
    }

    /// `text` redacted with no configured secret: what a shape rule alone
    /// catches.
    fn shapes(text: &str) -> String {
        redact(text, &[])
    }

    #[test]
    fn openai_and_anthropic_keys() {
        for key in ["sk-proj-Ab12Cd34Ef56Gh78Ij90", "sk-ant-api03-Ab12Cd34Ef56-Gh78Ij90", "sk-Ab12Cd34Ef56Gh78Ij90"] {
            let out = shapes(&format!("Incorrect API key provided: {key}."));
            assert_eq!(out, "Incorrect API key provided: [redacted]", "{key}");
        }
        let out = shapes(r#"{"error":{"api_key":"sk-ant-api03-Ab12Cd34Ef56Gh78"}}"#);
        assert!(!out.contains("Ab12Cd34"), "a key inside a JSON token: {out}");
    }

    #[test]
    fn aws_access_keys() {
        for key in ["AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A"] {
            let out = shapes(&format!("The security token included in the request is invalid: {key}"));
            assert!(!out.contains(&key[4..]), "{out}");
            let out = shapes(&format!("credential={key}/20240101/us-east-1/bedrock/aws4_request,"));
            assert!(!out.contains(&key[4..]), "{out}");
        }
        assert_eq!(shapes("AKIA is a prefix"), "AKIA is a prefix");
    }

    #[test]
    fn json_web_tokens() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let out = shapes(&format!("token expired: {jwt}"));
        assert!(!out.contains("eyJzdWIi") && !out.contains("dBjftJeZ"), "{out}");
        let out = shapes(&format!("session=\"{jwt}\""));
        assert!(!out.contains("eyJzdWIi"), "{out}");
    }

    #[test]
    fn slack_tokens_of_every_kind() {
        for prefix in ["xoxa-2", "xoxb", "xoxp", "xoxr", "xoxs", "xoxe.xoxp-1", "xapp-1"] {
            let token = format!("{prefix}-1234567890-AbCdEfGhIjKl");
            let out = shapes(&format!("invalid_auth for {token}"));
            assert_eq!(out, "invalid_auth for [redacted]", "{prefix}");
        }
    }

    #[test]
    fn github_tokens() {
        let out = shapes("Bad credentials ghp_16C7e42F292c6912E7710c838347Ae178B4a github_pat_11ABCDEFG0123456789_abc");
        assert_eq!(out, "Bad credentials [redacted] [redacted]");
    }

    #[test]
    fn values_of_credential_keys() {
        let cases = [
            ("connect: password=hunter2x&user=me", "connect: password=[redacted]"),
            ("PASSWD: hunter2x", "PASSWD: [redacted]"),
            ("client secret=abc123xyz", "client secret=[redacted]"),
            ("url ?token=abc123&x=1 failed", "url ?token=[redacted] failed"),
            ("Api_Key = abc123 rejected", "Api_Key = [redacted] rejected"),
            (r#"{"apikey": "abc123"}"#, r#"{"apikey": [redacted]"#),
            ("x-api-key:abc123", "x-api-key:[redacted]"),
            ("DB_PASSWORD=hunter2x", "DB_PASSWORD=[redacted]"),
            ("access_token: abc", "access_token: [redacted]"),
        ];
        for (text, want) in cases {
            assert_eq!(shapes(text), want, "{text}");
        }
    }

    #[test]
    fn ordinary_words_near_credential_keys_stay() {
        for text in [
            "max_tokens: 4096 exceeds the limit",
            "`token`: missing",
            "the token expired; sign in again",
            "a secret santa and a password manager",
            "task_list_identifier disk-usage-high",
        ] {
            assert_eq!(shapes(text), text);
        }
    }
}
