//! Signed, expiring dashboard sessions and the values bound to them.
//!
//! A session is a cookie `az_session=<payload>.<mac>` (both base64url):
//! the payload names the GitHub login and account id, the allowed
//! organisations it was a member of at sign-in, a session id, when it was
//! issued and when it expires; the mac is HMAC-SHA256 under
//! `AGENT_ZERO_DASHBOARD_SESSION_KEY`, verified in constant time. Grants
//! are not in the cookie: they are recomputed from the settings on every
//! request, so removing a user takes effect at once.
//!
//! A session that rests on organisation membership expires after
//! [`MEMBERSHIP_RECHECK_MS`], one without after [`SESSION_MS`]; the cookie
//! itself is kept [`SESSION_MS`], so an expired membership session is
//! still recognised ([`Session::lapsed`]) and the dashboard sends the
//! browser through GitHub again, which re-reads the memberships (and,
//! for an app the person already authorised, answers without a page).
//! The OAuth `state` and the page to return to are bound to their own
//! short cookie the same way, and a form's CSRF token is the mac of the
//! session id. Pure: time and the random ids are arguments.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The session cookie.
pub(crate) const SESSION_COOKIE: &str = "az_session";
/// The cookie binding an OAuth `state` to the browser that started sign-in.
pub(crate) const STATE_COOKIE: &str = "az_oauth_state";
/// How long a session lives, and the cookie that carries it.
pub(crate) const SESSION_MS: u64 = 8 * 60 * 60 * 1000;
/// How long a session that rests on organisation membership lives before
/// GitHub is asked again.
pub(crate) const MEMBERSHIP_RECHECK_MS: u64 = 30 * 60 * 1000;
/// How long a sign-in may take between the redirect and the callback.
pub(crate) const STATE_MS: u64 = 10 * 60 * 1000;

/// A verified session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Session {
    pub(crate) login: String,
    /// The account's numeric id, which a pinned grant matches.
    pub(crate) user_id: u64,
    /// Allowed organisations the login belonged to at sign-in.
    pub(crate) orgs: Vec<String>,
    /// Random, from the host (the sign-in's request id).
    pub(crate) id: String,
    /// When GitHub last vouched for it (a per-user revocation refuses the
    /// sessions issued up to it).
    pub(crate) issued_ms: u64,
    pub(crate) expires_ms: u64,
}

fn mac(key: &[u8], purpose: &str, payload: &[u8]) -> Vec<u8> {
    // Any key length is accepted by HMAC.
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(purpose.as_bytes());
    mac.update(b"\0");
    mac.update(payload);
    mac.finalize().into_bytes().to_vec()
}

/// `payload.mac`, both base64url.
fn sign(key: &[u8], purpose: &str, payload: &str) -> String {
    format!("{}.{}", URL_SAFE_NO_PAD.encode(payload), URL_SAFE_NO_PAD.encode(mac(key, purpose, payload.as_bytes())))
}

/// The payload of a value [`sign`] made, when its mac verifies.
fn open(key: &[u8], purpose: &str, value: &str) -> Option<String> {
    let (payload, tag) = value.split_once('.')?;
    let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
    let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
    let expected = mac(key, purpose, &payload);
    if !bool::from(expected.ct_eq(&tag)) {
        return None;
    }
    String::from_utf8(payload).ok()
}

impl Session {
    /// A session issued at `now_ms`: [`MEMBERSHIP_RECHECK_MS`] when it
    /// carries an organisation, [`SESSION_MS`] otherwise.
    pub(crate) fn issue(login: String, user_id: u64, orgs: Vec<String>, id: String, now_ms: u64) -> Self {
        let lifetime = if orgs.is_empty() { SESSION_MS } else { MEMBERSHIP_RECHECK_MS };
        Self { login, user_id, orgs, id, issued_ms: now_ms, expires_ms: now_ms + lifetime }
    }

    /// The cookie value.
    pub(crate) fn seal(&self, key: &[u8]) -> String {
        let payload = format!(
            "v3\n{}\n{}\n{}\n{}\n{}\n{}",
            self.login,
            self.user_id,
            self.orgs.join(","),
            self.id,
            self.issued_ms,
            self.expires_ms
        );
        sign(key, "session", &payload)
    }

    /// The session a cookie value holds when it is ours, expired or not.
    pub(crate) fn open(key: &[u8], value: &str) -> Option<Self> {
        let payload = open(key, "session", value)?;
        let mut lines = payload.split('\n');
        // A `v2` session (no issue time, 8 hours whatever rests on an
        // organisation) or `v1` (no account id) signs in again.
        if lines.next()? != "v3" {
            return None;
        }
        let login = lines.next()?.to_owned();
        let user_id = lines.next()?.parse().ok()?;
        let orgs = lines.next()?.split(',').filter(|o| !o.is_empty()).map(str::to_owned).collect();
        let id = lines.next()?.to_owned();
        let issued_ms = lines.next()?.parse().ok()?;
        let expires_ms = lines.next()?.parse().ok()?;
        lines.next().is_none().then_some(Self { login, user_id, orgs, id, issued_ms, expires_ms })
    }

    /// The session a cookie value holds, when it is ours and not expired.
    #[cfg(test)]
    pub(crate) fn unseal(key: &[u8], value: &str, now_ms: u64) -> Option<Self> {
        Self::open(key, value).filter(|s| now_ms < s.expires_ms)
    }

    /// Whether this session expired while its cookie lives on: a
    /// membership session past its re-check, which GitHub may renew.
    pub(crate) fn lapsed(&self, now_ms: u64) -> bool {
        !self.orgs.is_empty() && self.expires_ms <= now_ms && now_ms < self.issued_ms.saturating_add(SESSION_MS)
    }

    /// The CSRF token of this session's forms.
    pub(crate) fn csrf_token(&self, key: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(mac(key, "csrf", self.id.as_bytes()))
    }

    /// Whether `presented` is this session's CSRF token (constant time).
    pub(crate) fn csrf_matches(&self, key: &[u8], presented: &str) -> bool {
        bool::from(self.csrf_token(key).as_bytes().ct_eq(presented.as_bytes()))
    }
}

/// The cookie value binding `state` until `expires_ms`, and the page
/// (an app path, [`is_return_path`]) to land on after sign-in.
pub(crate) fn seal_state(key: &[u8], state: &str, expires_ms: u64, next: &str) -> String {
    sign(key, "state", &format!("{state}\n{expires_ms}\n{next}"))
}

/// The page bound with the callback's `state` when that `state` is the one
/// bound to this browser's cookie, unexpired (constant-time comparison);
/// `None` otherwise.
pub(crate) fn state_matches(key: &[u8], cookie: &str, state: &str, now_ms: u64) -> Option<String> {
    let payload = open(key, "state", cookie)?;
    let mut parts = payload.splitn(3, '\n');
    let (bound, expires, next) = (parts.next()?, parts.next()?, parts.next()?);
    let fresh = expires.parse::<u64>().is_ok_and(|e| now_ms < e);
    (fresh && !bound.is_empty() && bool::from(bound.as_bytes().ct_eq(state.as_bytes()))).then(|| next.to_owned())
}

/// Whether `path` may be returned to after sign-in: a dashboard page of
/// this app (`/dashboard`, `/dashboard/...`, with a query), nothing that a
/// browser could read as another origin.
pub(crate) fn is_return_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/dashboard") else { return false };
    (rest.is_empty() || rest.starts_with(['/', '?']))
        && path.len() <= 512
        && !path.contains("//")
        && path.bytes().all(|b| b.is_ascii_alphanumeric() || b"/-._~%?=&+".contains(&b))
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub(crate) fn cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find_map(|(n, v)| (n == name).then_some(v))
}

/// A `Set-Cookie` value: `HttpOnly; Secure; SameSite=Lax`, `max_age_s`
/// seconds (0 removes it).
pub(crate) fn set_cookie(name: &str, value: &str, path: &str, max_age_s: u64) -> String {
    format!("{name}={value}; Path={path}; Max-Age={max_age_s}; HttpOnly; Secure; SameSite=Lax")
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn session() -> Session {
        Session {
            login: "octocat".into(),
            user_id: 583_231,
            orgs: vec!["acme".into()],
            id: "9f8e7d6c5b4a39281706".into(),
            issued_ms: 1_000,
            expires_ms: 5_000,
        }
    }

    #[test]
    fn a_session_round_trips_until_it_expires() {
        let sealed = session().seal(KEY);
        assert_eq!(Session::unseal(KEY, &sealed, 4_999), Some(session()));
        assert_eq!(Session::unseal(KEY, &sealed, 5_000), None);
        assert_eq!(Session::unseal(b"another key of thirty-two bytes!", &sealed, 1), None);
    }

    /// A session resting on an organisation lives until the membership
    /// re-check, then lapses (GitHub may renew it) while its cookie lives;
    /// one without lives the whole cookie.
    #[test]
    fn a_membership_session_lapses_at_its_recheck() {
        let member = Session::issue("octocat".into(), 1, vec!["acme".into()], "id-0123456789abcdef".into(), 0);
        assert_eq!(member.expires_ms, MEMBERSHIP_RECHECK_MS);
        let sealed = member.seal(KEY);
        assert!(Session::unseal(KEY, &sealed, MEMBERSHIP_RECHECK_MS - 1).is_some());
        assert_eq!(Session::unseal(KEY, &sealed, MEMBERSHIP_RECHECK_MS), None);
        let opened = Session::open(KEY, &sealed).unwrap();
        assert!(!opened.lapsed(MEMBERSHIP_RECHECK_MS - 1) && opened.lapsed(MEMBERSHIP_RECHECK_MS));
        assert!(opened.lapsed(SESSION_MS - 1) && !opened.lapsed(SESSION_MS));
        let named = Session::issue("octocat".into(), 1, vec![], "id-0123456789abcdef".into(), 0);
        assert_eq!(named.expires_ms, SESSION_MS);
        assert!(!named.lapsed(SESSION_MS - 1) && !named.lapsed(SESSION_MS));
    }

    #[test]
    fn a_tampered_session_is_refused() {
        let sealed = session().seal(KEY);
        let (payload, tag) = sealed.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode("v3\nmallory\n1\nacme\n9f8e7d6c5b4a39281706\n1000\n5000");
        assert_eq!(Session::unseal(KEY, &format!("{forged}.{tag}"), 1), None);
        let mut bad_tag = URL_SAFE_NO_PAD.decode(tag).unwrap();
        bad_tag[0] ^= 1;
        assert_eq!(Session::unseal(KEY, &format!("{payload}.{}", URL_SAFE_NO_PAD.encode(bad_tag)), 1), None);
        for junk in ["", ".", "abc", "a.b.c", &format!("{payload}.")] {
            assert_eq!(Session::unseal(KEY, junk, 1), None, "{junk:?}");
        }
        // A state cookie is not a session, though both are signed by one key.
        assert_eq!(Session::unseal(KEY, &seal_state(KEY, "s", 9_000, ""), 1), None);
        // An 8-hour `v2` session of the previous release signs in again.
        let v2 = sign(KEY, "session", "v2\noctocat\n583231\nacme\n9f8e7d6c5b4a39281706\n5000");
        assert_eq!(Session::open(KEY, &v2), None);
    }

    #[test]
    fn csrf_tokens_belong_to_their_session() {
        let s = session();
        let token = s.csrf_token(KEY);
        assert!(s.csrf_matches(KEY, &token));
        assert!(!s.csrf_matches(KEY, &token[1..]) && !s.csrf_matches(KEY, ""));
        let other = Session { id: "another-session-id".into(), ..session() };
        assert!(!other.csrf_matches(KEY, &token));
    }

    #[test]
    fn the_state_is_bound_and_expires() {
        let cookie = seal_state(KEY, "abc123", 1_000, "/dashboard/tasks/t-1?x=1");
        assert_eq!(state_matches(KEY, &cookie, "abc123", 999).as_deref(), Some("/dashboard/tasks/t-1?x=1"));
        assert_eq!(state_matches(KEY, &cookie, "abc123", 1_000), None);
        assert_eq!(state_matches(KEY, &cookie, "abc124", 1), None);
        assert_eq!(state_matches(KEY, &session().seal(KEY), "abc123", 1), None);
    }

    #[test]
    fn only_dashboard_pages_are_returned_to() {
        for ok in ["/dashboard", "/dashboard?state=failed&cursor=a%2Bb", "/dashboard/tasks/gh-1/evidence"] {
            assert!(is_return_path(ok), "{ok}");
        }
        for bad in [
            "",
            "/",
            "https://evil.example/dashboard",
            "//evil.example/dashboard",
            "/dashboard//evil.example",
            "/dashboardx",
            "/api/v1/tasks",
            "/dashboard\\evil",
            "/dashboard/\r\nSet-Cookie:x",
            "/dashboard/\"><script>",
        ] {
            assert!(!is_return_path(bad), "{bad:?}");
        }
    }

    #[test]
    fn cookies_are_read_from_every_header() {
        let mut headers = http::HeaderMap::new();
        headers.append(http::header::COOKIE, "a=1; az_session=xyz".parse().unwrap());
        headers.append(http::header::COOKIE, "b=2".parse().unwrap());
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("xyz"));
        assert_eq!(cookie(&headers, "b"), Some("2"));
        assert_eq!(cookie(&headers, "c"), None);
        let set = set_cookie(SESSION_COOKIE, "v", "/", 60);
        assert!(set.contains("HttpOnly") && set.contains("Secure") && set.contains("SameSite=Lax"), "{set}");
    }
}
