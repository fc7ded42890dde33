//! Why no GitHub token could be produced: the one error of the
//! credentials, the App JWT ([`crate::jwt`]) and its RS256 signer
//! ([`crate::signer`]), kept apart so each of them can name it without
//! importing the others.

use thiserror::Error;

use crate::client::GitHubError;

/// Why no token could be produced.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// `GITHUB_APP_ID` is empty or not an App id / client id.
    #[error("GITHUB_APP_ID is not a GitHub App id or client id")]
    InvalidAppId,
    /// The private key could not be read (the key itself is never shown).
    #[error("invalid GitHub App private key: {reason}")]
    InvalidPrivateKey { reason: &'static str },
    /// Half of the App configuration is present.
    #[error("GitHub App configuration is incomplete: {missing} is not set")]
    Incomplete { missing: &'static str },
    /// App credentials act per installation, and the delivery named none.
    #[error("GitHub App credentials need an installation id, and none was given")]
    InstallationRequired,
    /// `GET /repos/{owner}/{repo}/installation` answered 404: the App is
    /// not installed on that repository (or cannot see it).
    #[error(
        "the GitHub App is not installed on {repository} (GitHub answered 404 to GET /repos/{repository}/installation)"
    )]
    NotInstalled { repository: String },
    /// The host's RS256 signer failed (the key itself is never shown).
    #[error("signing the GitHub App JWT failed: {reason}")]
    Signing { reason: String },
    /// Minting the installation token failed.
    #[error(transparent)]
    Api(#[from] GitHubError),
}
