//! Who the app is on GitHub: the login its own comments carry.
//!
//! Learned from GitHub, never configured: with a `GITHUB_TOKEN`,
//! `GET /user` → `login`; with a GitHub App, `GET /app` (authenticated with
//! the App's JWT) → `slug`, whose bot account is `{slug}[bot]`. An
//! [`IdentityCache`] remembers the answer per API and credential for
//! [`IDENTITY_TTL_MS`], in memory only: the caller keeps one per isolate or
//! component instance, like installation tokens. Nothing here is written to
//! KV, and the credential itself is not kept (the cache key is a digest).

use std::cell::RefCell;

use agent_zero_ports::HttpClient;
use sha2::{Digest as _, Sha256};
use thiserror::Error;

use crate::client::{GitHubClient, GitHubError, capped};
use crate::credentials::Credentials;
use crate::signer::Rs256Signer;

/// How long a learned login is trusted before GitHub is asked again (an App
/// slug or a user login can be renamed).
pub const IDENTITY_TTL_MS: u64 = 60 * 60 * 1000;
/// Identities remembered at once (one per API and credential; a deployment
/// has one).
const MAX_CACHED_IDENTITIES: usize = 16;
/// GitHub logins are at most 39 characters; App slugs are longer at times.
const MAX_LOGIN_BYTES: usize = 100;

/// Why the app's own login is not known.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// GitHub could not be asked, or refused: an installation token given as
    /// `GITHUB_TOKEN` may not read `GET /user`, a JWT of an unknown App is
    /// refused by `GET /app`.
    #[error("the app's own GitHub login could not be learned: {0}")]
    Api(#[from] GitHubError),
    /// The App's JWT could not be signed.
    #[error("the app's own GitHub login could not be learned: {0}")]
    Credentials(#[from] crate::credentials_error::CredentialsError),
    /// GitHub answered with something that is not a login or slug.
    #[error(
        "the app's own GitHub login could not be learned: GitHub {operation} named `{value}`, which is not a GitHub {what}"
    )]
    NotALogin { operation: &'static str, what: &'static str, value: String },
}

impl Credentials {
    /// The login that comments written with these credentials carry:
    /// cached in `cache`, else asked of GitHub through `client`'s HTTP port
    /// and API (its own token, if any, is not used); an App's JWT is signed
    /// with `signer`.
    pub async fn own_login<H: HttpClient, S: Rs256Signer>(
        &self,
        client: &GitHubClient<'_, H>,
        signer: &S,
        cache: &IdentityCache,
        now_ms: u64,
    ) -> Result<String, IdentityError> {
        let (http, config) = client.parts();
        let key = cache_key(config.base_url(), self);
        if let Some(login) = cache.get(&key, now_ms) {
            return Ok(login);
        }
        let login = match self {
            Self::Token(token) => {
                const OP: &str = "get the authenticated user";
                let client = GitHubClient::new(http, config).with_token(token.clone());
                let login = field(&client, OP, "/user", "login").await?;
                check(OP, "login", &login, is_login)?;
                login
            }
            Self::App { key, .. } => {
                const OP: &str = "get the authenticated app";
                let client = GitHubClient::new(http, config).with_token(key.jwt(signer, now_ms).await?);
                let slug = field(&client, OP, "/app", "slug").await?;
                check(OP, "App slug", &slug, is_slug)?;
                format!("{slug}[bot]")
            }
        };
        cache.put(key, login.clone(), now_ms);
        Ok(login)
    }
}

/// The string `name` of the JSON object `GET {path}` answers (`login` of
/// `GET /user`, `slug` of `GET /app`).
async fn field<H: HttpClient>(
    client: &GitHubClient<'_, H>,
    operation: &'static str,
    path: &str,
    name: &'static str,
) -> Result<String, GitHubError> {
    let url = format!("{}{path}", client.parts().1.base_url());
    let response = client.send_authorized(operation, http::Method::GET, &url, None).await?;
    // `success` drops a message that would carry the client's token (here
    // the `GITHUB_TOKEN` or the JWT).
    let response = client.success(operation, response)?;
    let decode_error = |reason: String| GitHubError::Decode { operation, path: name.to_owned(), reason };
    let body: serde_json::Value =
        agent_zero_codecs::json::from_slice(response.body()).map_err(|e| decode_error(capped(&e.to_string())))?;
    match body.get(name) {
        Some(serde_json::Value::String(value)) => Ok(value.clone()),
        Some(_) => Err(decode_error("expected a string".into())),
        None => Err(decode_error(format!("missing field `{name}`"))),
    }
}

fn check(
    operation: &'static str,
    what: &'static str,
    value: &str,
    valid: fn(&str) -> bool,
) -> Result<(), IdentityError> {
    if valid(value) { Ok(()) } else { Err(IdentityError::NotALogin { operation, what, value: capped(value) }) }
}

/// A user login as GitHub (and GitHub Enterprise, whose managed users carry
/// `_shortcode`) spells them: ASCII letters, digits, `-` and `_`, or a bot
/// account's `{slug}[bot]`.
fn is_login(login: &str) -> bool {
    is_slug(login.strip_suffix("[bot]").unwrap_or(login).replace('_', "-").as_str())
}

/// An App slug: ASCII letters, digits and `-`, not starting with `-`.
fn is_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.len() <= MAX_LOGIN_BYTES
        && !slug.starts_with('-')
        && slug.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A digest naming the API and credential: a token deployment by its token,
/// an App by its id (its key signs fresh JWTs, which would never match).
fn cache_key(base_url: &str, credentials: &Credentials) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest.update(base_url.as_bytes());
    match credentials {
        Credentials::Token(token) => {
            digest.update(b"\0token\0");
            digest.update(token.expose().as_bytes());
        }
        Credentials::App { key, .. } => {
            digest.update(b"\0app\0");
            digest.update(key.issuer().as_bytes());
        }
    }
    digest.finalize().into()
}

/// Learned logins by API and credential, each with when it was learned.
/// Keep one for the life of the isolate or component instance.
#[derive(Default)]
pub struct IdentityCache {
    /// `(key, login, learned at)`; a handful at most, so a list.
    entries: RefCell<Vec<([u8; 32], String, u64)>>,
}

impl std::fmt::Debug for IdentityCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityCache").field("entries", &self.len()).finish()
    }
}

impl IdentityCache {
    fn get(&self, key: &[u8; 32], now_ms: u64) -> Option<String> {
        let entries = self.entries.borrow();
        let (_, login, learned_ms) = entries.iter().find(|(k, _, _)| k == key)?;
        fresh(*learned_ms, now_ms).then(|| login.clone())
    }

    fn put(&self, key: [u8; 32], login: String, now_ms: u64) {
        let mut entries = self.entries.borrow_mut();
        entries.retain(|(k, _, learned)| *k != key && fresh(*learned, now_ms));
        if entries.len() >= MAX_CACHED_IDENTITIES {
            entries.clear();
        }
        entries.push((key, login, now_ms));
    }

    /// Identities currently remembered.
    pub fn len(&self) -> usize {
        self.entries.borrow().len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.borrow().is_empty()
    }
}

/// Whether a login learned at `learned_ms` may still be used at `now_ms`
/// (a clock that went back asks again).
fn fresh(learned_ms: u64, now_ms: u64) -> bool {
    now_ms >= learned_ms && now_ms - learned_ms < IDENTITY_TTL_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logins_and_slugs() {
        for good in ["octocat", "agent-zero-edge[bot]", "Mona-Lisa", "octo_acme", "a1"] {
            assert!(is_login(good), "{good}");
        }
        for bad in ["", "-x", "a b", "x[bot][bot]", "x\n", "<!--", "x]", "ü"] {
            assert!(!is_login(bad), "{bad:?}");
        }
        assert!(is_slug("agent-zero-edge") && !is_slug("a_b") && !is_slug(&"a".repeat(101)));
    }

    #[test]
    fn the_cache_keeps_a_login_for_its_ttl_and_stays_bounded() {
        let cache = IdentityCache::default();
        let token = Credentials::Token(agent_zero_ports::Secret::new("ghp_a"));
        let other = Credentials::Token(agent_zero_ports::Secret::new("ghp_b"));
        let key = cache_key("https://api.github.com", &token);
        assert_ne!(key, cache_key("https://api.github.com", &other));
        assert_ne!(key, cache_key("https://ghe.example/api/v3", &token));
        cache.put(key, "octocat".into(), 1_000);
        assert_eq!(cache.get(&key, 1_000).as_deref(), Some("octocat"));
        assert_eq!(cache.get(&key, 1_000 + IDENTITY_TTL_MS - 1).as_deref(), Some("octocat"));
        assert_eq!(cache.get(&key, 1_000 + IDENTITY_TTL_MS), None);
        assert_eq!(cache.get(&key, 999), None, "a clock that went back asks again");
        for i in 0..(MAX_CACHED_IDENTITIES as u8 + 4) {
            cache.put([i; 32], "x".into(), 1_000);
        }
        assert!(cache.len() <= MAX_CACHED_IDENTITIES);
        assert!(!format!("{cache:?}").contains("octocat"));
    }
}
