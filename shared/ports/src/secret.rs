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
/// every secret replaced by [`REDACTED`], then every GitHub-token-shaped run
/// ([`scrub_token_shapes`]: a minted installation token is in no configured
/// list). `secrets` must be in [`order_secrets`]'s order (longest first, so
/// a secret containing another is replaced whole); empty ones are skipped.
pub fn redact<'t, S: AsRef<str>>(text: &'t str, secrets: &[S]) -> std::borrow::Cow<'t, str> {
    use std::borrow::Cow;
    let mut out = Cow::Borrowed(text);
    for secret in secrets.iter().map(AsRef::as_ref).filter(|s| !s.is_empty()) {
        if out.contains(secret) {
            out = Cow::Owned(out.replace(secret, REDACTED));
        }
    }
    match scrub_token_shapes(&out) {
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

/// Prefixes of GitHub's token formats: personal (`ghp_`), OAuth (`gho_`),
/// user-to-server (`ghu_`), installation (`ghs_`, what the app mints for
/// itself at run time), refresh (`ghr_`) and fine-grained (`github_pat_`).
pub const GITHUB_TOKEN_PREFIXES: &[&str] = &["github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"];

/// Shortest body after a prefix that is taken for a token (GitHub's are
/// 36 characters and more; `ghs_` ids in prose are shorter).
const MIN_TOKEN_BODY: usize = 16;

/// `text` with every GitHub-token-shaped run replaced by [`REDACTED`]:
/// a prefix of [`GITHUB_TOKEN_PREFIXES`] and at least 16 characters of
/// `[A-Za-z0-9_]`. Catches tokens no configured secret names, such as the
/// installation tokens minted per hour.
pub fn scrub_token_shapes(text: &str) -> std::borrow::Cow<'_, str> {
    if !GITHUB_TOKEN_PREFIXES.iter().any(|p| text.contains(p)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let token_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let starts_word = at == 0 || !token_char(bytes[at - 1]);
        let prefix = if starts_word {
            GITHUB_TOKEN_PREFIXES.iter().find(|p| bytes[at..].starts_with(p.as_bytes()))
        } else {
            None
        };
        if let Some(prefix) = prefix {
            let body = bytes[at + prefix.len()..].iter().take_while(|b| token_char(**b)).count();
            if body >= MIN_TOKEN_BODY {
                out.push_str(&text[copied..at]);
                out.push_str(REDACTED);
                at += prefix.len() + body;
                copied = at;
                continue;
            }
        }
        at += 1;
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
    fn github_token_shapes_are_scrubbed_without_a_configured_secret() {
        let minted = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
        let text = format!("POST failed: token {minted} rejected (ghp_abcdefghijklmnopqrstuvwxyz0123456789 too)");
        let clean = scrub_token_shapes(&text);
        assert_eq!(clean, "POST failed: token [redacted] rejected ([redacted] too)");
        let fine_grained = "x=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz";
        assert_eq!(scrub_token_shapes(fine_grained), "x=[redacted]");
        // Short look-alikes and words that merely contain a prefix stay.
        for text in ["ghs_short", "the ghp_ prefix", "aghs_16C7e42F292c6912E7710c838347Ae178B4a", "no tokens é here"] {
            assert_eq!(scrub_token_shapes(text), text);
        }
        // Multi-byte text around a token is kept intact.
        assert_eq!(scrub_token_shapes(&format!("é{minted}é")), "é[redacted]é");
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
