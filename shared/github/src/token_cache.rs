//! Installation tokens in memory, by installation, each used until
//! [`TOKEN_REFRESH_MARGIN_MS`] before it expires and forgotten as soon as
//! GitHub refuses it. Below both the credentials (which fill it) and the
//! client (which empties an entry on a 401), so neither imports the other
//! for it.

use std::cell::RefCell;
use std::collections::BTreeMap;

use agent_zero_ports::Secret;

/// A cached token is used until this long before it expires.
pub const TOKEN_REFRESH_MARGIN_MS: u64 = 5 * 60 * 1000;
/// Installations remembered at once; past it, expired entries go first.
const MAX_CACHED_INSTALLATIONS: usize = 1024;

/// Installation tokens by installation id, each with its expiry.
#[derive(Debug, Default)]
pub struct TokenCache {
    entries: RefCell<BTreeMap<u64, (Secret, u64)>>,
}

impl TokenCache {
    /// The cached token for `installation`, unless within the refresh margin.
    pub fn get(&self, installation: u64, now_ms: u64) -> Option<Secret> {
        let entries = self.entries.borrow();
        let (token, expires_ms) = entries.get(&installation)?;
        (now_ms.saturating_add(TOKEN_REFRESH_MARGIN_MS) < *expires_ms).then(|| token.clone())
    }

    /// Forgets `installation`'s token: GitHub refused it (401), so the
    /// next call mints a fresh one instead of sending it again until its
    /// expiry (a clock behind GitHub's, a key or installation changed).
    /// Only `token` itself goes: a fresher one another call minted
    /// meanwhile stays.
    pub fn forget(&self, installation: u64, token: &Secret) {
        let mut entries = self.entries.borrow_mut();
        if entries.get(&installation).is_some_and(|(cached, _)| cached == token) {
            entries.remove(&installation);
        }
    }

    /// Remembers a token expiring at `expires_ms`.
    pub fn put(&self, installation: u64, token: Secret, expires_ms: u64, now_ms: u64) {
        let mut entries = self.entries.borrow_mut();
        if entries.len() >= MAX_CACHED_INSTALLATIONS {
            entries.retain(|_, (_, expires)| now_ms < *expires);
            if entries.len() >= MAX_CACHED_INSTALLATIONS {
                entries.clear();
            }
        }
        entries.insert(installation, (token, expires_ms));
    }

    /// Installations currently cached.
    pub fn len(&self) -> usize {
        self.entries.borrow().len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.borrow().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_honours_the_refresh_margin_and_bound() {
        let cache = TokenCache::default();
        let expires = 3_600_000;
        cache.put(7, Secret::new("t"), expires, 0);
        assert_eq!(cache.get(7, 0), Some(Secret::new("t")));
        assert_eq!(cache.get(7, expires - TOKEN_REFRESH_MARGIN_MS - 1), Some(Secret::new("t")));
        assert_eq!(cache.get(7, expires - TOKEN_REFRESH_MARGIN_MS), None);
        assert_eq!(cache.get(8, 0), None);
        for id in 0..(MAX_CACHED_INSTALLATIONS as u64 + 10) {
            cache.put(id, Secret::new("x"), expires, 0);
        }
        assert!(cache.len() <= MAX_CACHED_INSTALLATIONS);
    }

    #[test]
    fn a_forgotten_token_is_gone_and_the_others_stay() {
        let cache = TokenCache::default();
        cache.put(3, Secret::new("three"), 3_600_000, 0);
        cache.put(4, Secret::new("four"), 3_600_000, 0);
        cache.forget(4, &Secret::new("an older four"));
        assert_eq!(cache.get(4, 0), Some(Secret::new("four")), "a fresher token than the refused one stays");
        cache.forget(3, &Secret::new("three"));
        assert_eq!(cache.get(3, 0), None, "a forgotten token is minted again");
        assert_eq!(cache.get(4, 0), Some(Secret::new("four")), "others stay");
    }
}
