//! A credential value that does not print itself.

/// A token, JWT or key material. `Debug` prints `[redacted]`; there is no
/// `Display` and no `Serialize`, so it cannot end up in a record or a log by
/// accident. Read it with [`Secret::expose`] where it is sent.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself, for the one place it is sent.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `text` contains this secret (to keep it out of error text).
    pub(crate) fn appears_in(&self, text: &str) -> bool {
        !self.0.is_empty() && text.contains(&self.0)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::new("ghs_supersecret");
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(format!("{:?}", Some(&secret)), "Some([redacted])");
        assert_eq!(secret.expose(), "ghs_supersecret");
        assert!(secret.appears_in("x ghs_supersecret y") && !Secret::new("").appears_in("x"));
    }
}
