//! The names every crate validates the same way: a repository's
//! `owner/name`, a commit SHA, and percent-encoding for URL components.
//! One validator each, so a name one crate accepts no other refuses.

use std::fmt;

/// A GitHub repository's `owner/name`: the owner 1 to 39 letters, digits
/// or `-` (not first); the name 1 to 100 letters, digits, `-`, `_` or `.`,
/// never `.` or `..`. Case is kept (GitHub compares without it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepoName(String);

impl RepoName {
    /// Validates `text`; the error says which rule it breaks.
    pub fn parse(text: &str) -> Result<Self, &'static str> {
        let (owner, name) = text.split_once('/').ok_or("expected `owner/name`")?;
        if !(1..=39).contains(&owner.len())
            || owner.starts_with('-')
            || !owner.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err("the owner is 1 to 39 letters, digits or `-` (not first)");
        }
        if !(1..=100).contains(&name.len())
            || name == "."
            || name == ".."
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err("the name is 1 to 100 letters, digits, `-`, `_` or `.`, and not `.` or `..`");
        }
        Ok(Self(text.to_owned()))
    }

    /// Whether `text` is a valid `owner/name`.
    pub fn is_valid(text: &str) -> bool {
        Self::parse(text).is_ok()
    }

    /// The owner.
    pub fn owner(&self) -> &str {
        self.0.split_once('/').map_or("", |(owner, _)| owner)
    }

    /// The repository's name.
    pub fn name(&self) -> &str {
        self.0.split_once('/').map_or("", |(_, name)| name)
    }

    /// `owner/name`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RepoName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A full commit SHA: 40 (SHA-1) or 64 (SHA-256) hexadecimal digits, kept
/// lower-case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha(String);

impl Sha {
    /// Validates `text` (either case).
    pub fn parse(text: &str) -> Option<Self> {
        Self::is_valid(text).then(|| Self(text.to_ascii_lowercase()))
    }

    /// Whether `text` is a full commit SHA.
    pub fn is_valid(text: &str) -> bool {
        matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
    }

    /// The lower-case hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Sha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`): one URL path segment or query value.
pub fn encode_component(value: &str) -> String {
    encode(value, false)
}

/// As [`encode_component`], keeping `/` (a path of several segments, such
/// as a file path in a contents URL).
pub fn encode_path(value: &str) -> String {
    encode(value, true)
}

/// Decodes one query-string or form value (`application/x-www-form-urlencoded`:
/// `+` is a space, `%XX` a byte); `None` for a malformed escape or bytes
/// that are not UTF-8.
pub fn decode_component(text: &str) -> Option<String> {
    fn hex(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            b'A'..=b'F' => Some(b - b'A' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let (high, low) = (hex(*bytes.get(i + 1)?)?, hex(*bytes.get(i + 2)?)?);
                out.push(high << 4 | low);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

fn encode(value: &str, keep_slash: bool) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') || (keep_slash && byte == b'/') {
            out.push(byte as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(byte >> 4)] as char);
            out.push(HEX[usize::from(byte & 0x0f)] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_names_follow_githubs_rules() {
        for ok in ["acme/widgets", "Codertocat/Hello-World", "a/b", "octo-org/.github", "x/a_b.c-d"] {
            assert!(RepoName::is_valid(ok), "{ok}");
        }
        let long_owner = format!("{}/r", "o".repeat(40));
        let long_name = format!("o/{}", "r".repeat(101));
        for bad in [
            "",
            "acme",
            "acme/",
            "/widgets",
            "acme/widgets/x",
            "-acme/w",
            "ac_me/w",
            "acme/..",
            "acme/.",
            "acme/w w",
            "acme/w%2F",
            &long_owner,
            &long_name,
        ] {
            assert!(!RepoName::is_valid(bad), "{bad}");
        }
        let name = RepoName::parse("Acme/Widgets").unwrap();
        assert_eq!((name.owner(), name.name(), name.as_str()), ("Acme", "Widgets", "Acme/Widgets"));
    }

    #[test]
    fn shas_are_full_hex_commits() {
        let sha1 = "0F1E2D3C4B5A69788796A5B4C3D2E1F00F1E2D3C";
        assert_eq!(Sha::parse(sha1).unwrap().as_str(), sha1.to_ascii_lowercase());
        assert!(Sha::is_valid(&"a".repeat(64)));
        for bad in ["", "abc", &"a".repeat(39), &"a".repeat(41), &"g".repeat(40), "HEAD", "main"] {
            assert!(!Sha::is_valid(bad), "{bad}");
        }
    }

    #[test]
    fn encoding_keeps_only_unreserved_characters() {
        assert_eq!(encode_component("a b/c?d=é~"), "a%20b%2Fc%3Fd%3D%C3%A9~");
        assert_eq!(encode_path("src/a b.rs"), "src/a%20b.rs");
        assert_eq!(encode_component("Az09-._~"), "Az09-._~");
    }

    #[test]
    fn decoding_is_the_inverse_and_refuses_malformed_escapes() {
        for text in ["a b/c?d=é~", "", "100% sure", "+plus+"] {
            assert_eq!(decode_component(&encode_component(text)).as_deref(), Some(text));
        }
        assert_eq!(decode_component("a+b%2Fc").as_deref(), Some("a b/c"));
        for bad in ["%", "%4", "%+1", "%zz", "%C3"] {
            assert_eq!(decode_component(bad), None, "{bad}");
        }
    }
}
