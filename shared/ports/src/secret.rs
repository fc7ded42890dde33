//! Credentials that do not print themselves, shared by every adapter that
//! holds one (GitHub, model providers, sandbox providers).

/// Written in place of a credential.
pub const REDACTED: &str = "[redacted]";

/// A token, key or other credential. `Debug` prints `Secret([redacted])`;
/// there is no `Display` and no `Serialize`, so it cannot end up in a
/// record or a log by accident. Read it with [`Secret::expose`] only where
/// it is sent.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps an operator-provided credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself, for the one header or body that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `text` contains this credential (to keep it out of errors).
    pub fn appears_in(&self, text: &str) -> bool {
        !self.0.is_empty() && text.contains(&self.0)
    }

    /// `text` with every occurrence of the credential replaced by [`REDACTED`].
    pub fn scrub(&self, text: &str) -> String {
        if self.0.is_empty() { text.to_owned() } else { text.replace(&self.0, REDACTED) }
    }
}

/// The one redaction of stored and rendered text: every occurrence of
/// every secret replaced by [`REDACTED`], then every credential-shaped run
/// ([`scrub_credential_shapes`]: a minted installation token, or a key a
/// check printed, is in no configured list). `secrets` must be in [`order_secrets`]'s order (longest first, so
/// a secret containing another is replaced whole); empty ones are skipped.
pub fn redact<'t, S: AsRef<str>>(text: &'t str, secrets: &[S]) -> std::borrow::Cow<'t, str> {
    use std::borrow::Cow;
    let mut out = Cow::Borrowed(text);
    for secret in secrets.iter().map(AsRef::as_ref).filter(|s| !s.is_empty()) {
        if out.contains(secret) {
            out = Cow::Owned(out.replace(secret, REDACTED));
        }
    }
    match scrub_credential_shapes(&out) {
        Cow::Borrowed(_) => out,
        Cow::Owned(scrubbed) => Cow::Owned(scrubbed),
    }
}

/// Puts secrets in the order [`redact`] needs: longest first, without
/// empties or duplicates.
pub fn order_secrets<S: AsRef<str> + Ord>(secrets: &mut Vec<S>) {
    secrets.retain(|s| !s.as_ref().is_empty());
    secrets.sort_by(|a, b| b.as_ref().len().cmp(&a.as_ref().len()).then_with(|| a.cmp(b)));
    secrets.dedup();
}

/// Prefixes of well-known credential formats, each taken for a key at
/// the start of a word and followed by a long enough body: GitHub's
/// personal (`ghp_`), OAuth (`gho_`), user-to-server (`ghu_`),
/// installation (`ghs_`, what the app mints for itself at run time),
/// refresh (`ghr_`) and fine-grained (`github_pat_`) tokens; OpenAI and
/// Anthropic `sk-` (`sk-proj-`, `sk-ant-`) and `sk_`; Google `AIza`;
/// Vercel AI Gateway `vck_`; every Slack kind (`xox[a-s]-`, refresh
/// `xoxe.`/`xoxe-`, app `xapp-`); GitLab `glpat-`.
pub const CREDENTIAL_PREFIXES: &[&str] = &[
    "github_pat_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "sk-",
    "sk_",
    "AIza",
    "vck_",
    "xoxa-",
    "xoxb-",
    "xoxc-",
    "xoxd-",
    "xoxe-",
    "xoxe.",
    "xoxo-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "xapp-",
    "glpat-",
];

/// AWS access key ids (long-term `AKIA`, temporary `ASIA`): the prefix and
/// exactly 16 upper-case letters or digits.
const AWS_KEY_PREFIXES: &[&str] = &["AKIA", "ASIA"];

/// Shortest body after a prefix that stored and rendered text takes for a
/// credential (GitHub's tokens have 36 characters and more; `ghs_` ids and
/// `sk-learn` in prose are shorter).
pub const MIN_STORED_BODY: usize = 16;

const fn body_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')
}

/// Whether byte `at` of `bytes` starts a word (nothing of a name before it).
pub fn starts_word(bytes: &[u8], at: usize) -> bool {
    at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_')
}

/// The length of the credential-shaped run that starts at byte `at` of
/// `bytes`, if one does: a [`CREDENTIAL_PREFIXES`] prefix and at least
/// `min_body` characters of `[A-Za-z0-9_-]` (`.` too), an AWS access key
/// id, or a JSON Web Token (a base64url header starting `eyJ`, a payload
/// and a possibly empty signature, joined by dots). Reads a bounded run
/// for the prefixes, so scanning a long text is linear.
pub fn credential_at(bytes: &[u8], at: usize, min_body: usize) -> Option<usize> {
    let rest = &bytes[at..];
    let run = |from: &[u8], allowed: fn(u8) -> bool| from.iter().take_while(|b| allowed(**b)).count();
    for prefix in CREDENTIAL_PREFIXES {
        if rest.starts_with(prefix.as_bytes()) {
            let body = run(&rest[prefix.len()..], |b| body_byte(b) || b == b'.');
            if body >= min_body {
                return Some(prefix.len() + body);
            }
        }
    }
    for prefix in AWS_KEY_PREFIXES {
        let id = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit();
        if rest.starts_with(prefix.as_bytes()) && run(&rest[prefix.len()..], id) >= 16 {
            return Some(prefix.len() + 16);
        }
    }
    jwt_at(rest)
}

/// The length of the JSON Web Token at the start of `rest`, if one is.
fn jwt_at(rest: &[u8]) -> Option<usize> {
    if !rest.starts_with(b"eyJ") {
        return None;
    }
    let header = rest.iter().take_while(|b| body_byte(**b)).count();
    if header < 8 || rest.get(header) != Some(&b'.') {
        return None;
    }
    let payload = rest[header + 1..].iter().take_while(|b| body_byte(**b)).count();
    if payload == 0 || rest.get(header + 1 + payload) != Some(&b'.') {
        return None;
    }
    let signature = rest[header + payload + 2..].iter().take_while(|b| body_byte(**b)).count();
    Some(header + payload + 2 + signature)
}

/// `text` with every credential-shaped run ([`credential_at`], with a
/// body of at least [`MIN_STORED_BODY`]) at the start of a word replaced
/// by [`REDACTED`]. Catches credentials no configured secret names, such
/// as the installation tokens minted per hour or a key a check printed.
pub fn scrub_credential_shapes(text: &str) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if starts_word(bytes, at)
            && let Some(len) = credential_at(bytes, at, MIN_STORED_BODY)
        {
            out.push_str(&text[copied..at]);
            out.push_str(REDACTED);
            at += len;
            copied = at;
            continue;
        }
        at += 1;
    }
    if copied == 0 {
        return std::borrow::Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    std::borrow::Cow::Owned(out)
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_replaces_the_longest_secret_whole_and_every_token_shape() {
        let mut secrets = vec!["tok-one", "", "tok-one-longer", "tok-one", "ab"];
        order_secrets(&mut secrets);
        assert_eq!(secrets, ["tok-one-longer", "tok-one", "ab"]);
        let text = "tok-one-longer, tok-one; ghs_16C7e42F292c6912E7710c838347Ae178B4a ok";
        assert_eq!(redact(text, &secrets), "[redacted], [redacted]; [redacted] ok");
        assert!(matches!(redact("nothing here", &secrets), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn credential_shapes_are_scrubbed_without_a_configured_secret() {
        let minted = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
        let text = format!("POST failed: token {minted} rejected (ghp_abcdefghijklmnopqrstuvwxyz0123456789 too)");
        let clean = scrub_credential_shapes(&text);
        assert_eq!(clean, "POST failed: token [redacted] rejected ([redacted] too)");
        let fine_grained = "x=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz";
        assert_eq!(scrub_credential_shapes(fine_grained), "x=[redacted]");
        // Short look-alikes and words that merely contain a prefix stay.
        for text in ["ghs_short", "the ghp_ prefix", "aghs_16C7e42F292c6912E7710c838347Ae178B4a", "no tokens é here"] {
            assert_eq!(scrub_credential_shapes(text), text);
        }
        // Multi-byte text around a token is kept intact.
        assert_eq!(scrub_credential_shapes(&format!("é{minted}é")), "é[redacted]é");
        // The shapes the reference scrubs beyond GitHub's.
        let others = [
            "sk-proj-Ab3dEf6hIj9kLm2nOp5q",
            "sk-ant-api03-abcdefghijklmnopqrst",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-123456789012-abcdefghijkl",
            "glpat-abcdefghij0123456789",
            "AIzaSyA1b2C3d4E5f6G7h8I9j0",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        ];
        for key in others {
            assert_eq!(
                scrub_credential_shapes(&format!("check printed {key}, then failed")),
                "check printed [redacted], then failed"
            );
        }
        // Words of prose and code that begin like one are not keys.
        for text in ["uses sk-learn and AKIA_NOT_AN_ID", "xoxb- alone", "eyJ.not.a.token", "risk-assessment"] {
            assert_eq!(scrub_credential_shapes(text), text);
        }
    }

    #[test]
    fn never_prints_and_scrubs_itself() {
        let secret = Secret::new("ghs_supersecret");
        assert_eq!(format!("{secret:?}"), "Secret([redacted])");
        assert_eq!(format!("{:?}", Some(&secret)), "Some(Secret([redacted]))");
        assert_eq!(secret.expose(), "ghs_supersecret");
        assert!(secret.appears_in("x ghs_supersecret y") && !Secret::new("").appears_in("x"));
        assert_eq!(secret.scrub("bad ghs_supersecret here"), "bad [redacted] here");
        assert_eq!(Secret::new("").scrub("as is"), "as is");
    }
}
