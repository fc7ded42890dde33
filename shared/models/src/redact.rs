//! Credentials stay out of errors, records and `Debug` output.
//!
//! [`Secret`] holds a key and never prints it. [`redact`] cleans text that
//! came from a provider (an error message may echo a key, or part of one)
//! and caps it, so an error carries a hint, never a response body.

pub use agent_zero_ports::{REDACTED, Secret};

/// Longest provider detail kept in an error, in characters.
pub(crate) const MAX_DETAIL_CHARS: usize = 200;

/// Shortest run of a known secret that marks a token as leaking it.
const WINDOW: usize = 8;

/// Prefixes of well-known credential formats (OpenAI `sk-`, Google `AIza`,
/// GitHub tokens, Vercel AI Gateway `vck_`, Slack `xox`).
const CREDENTIAL_PREFIXES: &[&str] =
    &["sk-", "sk_", "AIza", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "vck_", "xoxb-", "xoxp-"];

/// Removes `secrets` (and any token sharing an 8-character run with one),
/// tokens shaped like well-known credentials and the word after `Bearer`;
/// folds whitespace and control characters; caps the result.
pub fn redact(text: &str, secrets: &[&Secret]) -> String {
    redact_to(text, secrets, MAX_DETAIL_CHARS)
}

/// [`redact`] with its own cap, in characters.
pub(crate) fn redact_to(text: &str, secrets: &[&Secret], max_chars: usize) -> String {
    let mut out = String::new();
    let mut after_bearer = false;
    for token in text.split(|c: char| c.is_whitespace() || c.is_control()).filter(|t| !t.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        if after_bearer || leaks(token, secrets) {
            out.push_str(REDACTED);
        } else {
            out.push_str(token);
        }
        after_bearer = token.eq_ignore_ascii_case("bearer");
    }
    cap(&out, max_chars)
}

fn leaks(token: &str, secrets: &[&Secret]) -> bool {
    let bare = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '_');
    if CREDENTIAL_PREFIXES.iter().any(|p| bare.starts_with(p) && bare.len() >= p.len() + 8) {
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
}
