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

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
