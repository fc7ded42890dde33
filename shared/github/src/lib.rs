//! The GitHub side of Agent Zero Edge, host-neutral: webhook signature
//! checks, delivery intake, a small REST client, GitHub App credentials (JWTs
//! signed through the host's [`Rs256Signer`] port; the `rsa` feature adds
//! `RsaSigner`, RustCrypto's `rsa` crate, for hosts without WebCrypto), the
//! app's own identity (its login) and the `.agent-zero.yml` policy source.
//!
//! I/O boundary: signature checks and intake are pure functions of bytes.
//! The REST client, credentials, identity and policy source reach GitHub only through
//! the [`agent_zero_ports::HttpClient`] port and the cache only through
//! [`agent_zero_ports::KeyValue`]; time comes in as milliseconds. No clock,
//! no RNG, no network of its own.

#![forbid(unsafe_code)]
#![allow(async_fn_in_trait)]

mod admit;
mod client;
mod command;
mod credentials;
mod credentials_error;
mod event;
mod identity;
mod installation;
mod intake;
mod intake_de;
mod issue_read;
mod json_path;
mod jwt;
mod payload;
mod policy_source;
pub mod publish;
#[cfg(feature = "rsa")]
mod rsa_signer;
pub mod signature;
mod signer;
mod timestamp;
mod token_cache;

pub use admit::PolicySwitches;
pub use client::{
    API_VERSION, ApiConfig, Caller, Comparison, DEFAULT_API_URL, DEFAULT_TIMEOUT_MS, FileContents, GitHubClient,
    GitHubError, InstallationToken, PullRequestFile, PullRequestFiles, PullRequestInfo, RepositoryInfo,
};
pub use command::{ReviewCommand, SLASH_PREFIX, addresses as command_addresses};
pub use credentials::Credentials;
pub use credentials_error::CredentialsError;
pub use event::{IntakeError, check_delivery_id, parse_delivery};
pub use identity::{IDENTITY_TTL_MS, IdentityCache, IdentityError};
pub use intake::{
    Author, IgnoreReason, InstallationChange, Intake, IntakeOptions, MAX_BODY_BYTES, MAX_INSTALLATION_REPOSITORIES,
    MAX_LABEL_BYTES, MAX_LABELS, MAX_TITLE_BYTES, ParsedDelivery, PolicyGate, Repository, RepositoryAllowlist, Subject,
};
pub use issue_read::IssueInfo;
pub use json_path::json_path_at;
pub use jwt::{AppKey, JWT_BACKDATE_SECS, JWT_LIFETIME_SECS};
pub use policy_source::{
    CacheOutcome, MAX_POLICY_BYTES, POLICY_PATH, PolicySource, PolicySourceError, load_policy_text, policy_cache_key,
};
#[cfg(feature = "rsa")]
pub use rsa_signer::RsaSigner;
pub use signature::{SignatureError, verify, verify_headers};
pub use signer::{PrivateKeyDer, Rs256Signer};
pub use token_cache::{TOKEN_REFRESH_MARGIN_MS, TokenCache};
