//! How a sandbox gets the code under test without ever holding a
//! credential of the edge.
//!
//! The edge asks GitHub, with its own credentials, for the tarball of the
//! exact commit (`GET /repos/{o}/{r}/tarball/{sha}`); GitHub answers with a
//! short-lived link that carries its own token, scoped to that one archive.
//! That link travels to the provider as [`CheckoutSource::Archive`], a
//! separate argument of [`SandboxProvider::provision`](crate::SandboxProvider::provision):
//! never in the [`SandboxRequest`](crate::SandboxRequest) (which is
//! recorded), never on a command line, never in a sandbox's environment.
//! The provider (or the edge, for vendors that only take files) downloads
//! it before any command runs, so a `none` network lease works too.
//!
//! Forges whose archive endpoint has no such link (Gitea and Forgejo's
//! `/repos/{o}/{r}/archive/{sha}.tar.gz`, GitLab's
//! `/projects/{id}/repository/archive.tar.gz?sha=`) want the forge token in a
//! header instead: [`ArchiveAuth`] travels beside the link, the same way,
//! to whoever downloads the archive and no further.

use agent_zero_ports::Secret;

/// How long fetching and unpacking a checkout may take, at most; a lease
/// shorter than this bounds it instead.
pub const CHECKOUT_TIMEOUT_MS: u64 = 300_000;

/// The largest archive an adapter downloads through the edge (vendors that
/// take files, not links).
pub const MAX_ARCHIVE_BYTES: usize = 64 * 1024 * 1024;

/// Where the sandbox's checkout comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckoutSource {
    /// An anonymous clone of a public `github.com` repository: only when
    /// the operator configured no GitHub credentials.
    PublicClone,
    /// The tarball of `commit`, behind a link (a short-lived token inside
    /// for GitHub's, hence a [`Secret`]), downloaded with `authorization`
    /// when the forge's archive endpoint needs its token in a header
    /// (`None` for GitHub's self-authorising link).
    Archive { url: Secret, commit: String, authorization: Option<ArchiveAuth> },
}

/// The one header an archive download carries: the forge's token for an
/// archive endpoint that takes no self-authorising link (Gitea and Forgejo:
/// `authorization: token <t>`; GitLab: `private-token: <t>` or
/// `authorization: Bearer <t>`). Only the downloader sees it (the edge, or
/// the `custom` server, which never records or echoes it): never a
/// recorded request, an argv or a sandbox's environment. `Debug` shows the
/// name, never the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveAuth {
    /// The header name, lower-case as HTTP/2 sends it: `authorization`,
    /// `private-token`.
    pub name: &'static str,
    /// The whole header value, scheme included: `token <t>`, `Bearer <t>`.
    pub value: Secret,
}

/// What provisioning needs beyond the recorded request. Never serialised.
#[derive(Debug, Clone, Copy)]
pub struct Provision<'a> {
    /// The lease this sandbox is for: the provider's idempotency key and
    /// the tag a leaked sandbox is found by.
    pub lease_id: &'a str,
    /// Write access after policy.
    pub writable: bool,
    pub source: &'a CheckoutSource,
    /// The bound on fetching and unpacking the checkout.
    pub checkout_timeout_ms: u64,
}

impl Provision<'_> {
    /// The checkout bound for a lease of `lease_ms`: within the lease.
    pub fn checkout_bound(lease_ms: u64) -> u64 {
        CHECKOUT_TIMEOUT_MS.min(lease_ms)
    }
}
