//! GitHub credentials: a GitHub App (JWT → installation token, cached in
//! memory until 5 minutes before it expires) or a plain `GITHUB_TOKEN`.
//!
//! The cache is a [`TokenCache`] the caller shares
//! ([`Credentials::with_cache`]): the app keeps one per isolate (Workers)
//! or component instance (Spin), so an installation token is minted once
//! per hour per installation, not per call. Tokens are never written to KV.

use std::rc::Rc;

use agent_zero_ports::HttpClient;

use crate::client::GitHubClient;
use crate::credentials_error::CredentialsError;
use crate::jwt::AppKey;
use crate::signer::Rs256Signer;
use crate::token_cache::TokenCache;
use agent_zero_ports::Secret;

/// How this deployment authenticates to GitHub.
#[derive(Debug)]
// Built once per isolate and never moved around: the size gap is irrelevant.
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum Credentials {
    /// `GITHUB_TOKEN`: used for every repository.
    Token(Secret),
    /// A GitHub App: a token per installation.
    App { key: AppKey, cache: Rc<TokenCache> },
}

impl Credentials {
    /// From the operator's environment. An App (both `GITHUB_APP_ID` and
    /// its private key) wins over `GITHUB_TOKEN`; `Ok(None)` when nothing is
    /// configured, so the caller can answer 503 naming what is missing.
    pub fn from_env(
        github_token: Option<&str>,
        app_id: Option<&str>,
        private_key: Option<&str>,
    ) -> Result<Option<Self>, CredentialsError> {
        fn set(v: Option<&str>) -> Option<&str> {
            v.map(str::trim).filter(|v| !v.is_empty())
        }
        match (set(app_id), set(private_key), set(github_token)) {
            (Some(id), Some(pem), _) => Ok(Some(Self::App { key: AppKey::from_pem(id, pem)?, cache: Rc::default() })),
            (Some(_), None, None) => Err(CredentialsError::Incomplete { missing: "the GitHub App private key" }),
            (None, Some(_), None) => Err(CredentialsError::Incomplete { missing: "GITHUB_APP_ID" }),
            (_, _, Some(token)) => Ok(Some(Self::Token(Secret::new(token)))),
            (None, None, None) => Ok(None),
        }
    }

    /// These credentials with installation tokens kept in `cache`, which
    /// outlives them (one per isolate or instance).
    #[must_use]
    pub fn with_cache(self, shared: Rc<TokenCache>) -> Self {
        match self {
            Self::App { key, .. } => Self::App { key, cache: shared },
            token => token,
        }
    }

    /// `anonymous` calling as this deployment with `token` (from
    /// [`Credentials::token_for`] for `installation`): an App's
    /// installation token is forgotten in the cache it came from when
    /// GitHub refuses it, so the next call mints a fresh one.
    pub fn authorize<'a, H: HttpClient>(
        &self,
        anonymous: GitHubClient<'a, H>,
        token: Secret,
        installation: Option<u64>,
    ) -> GitHubClient<'a, H> {
        match (self, installation) {
            (Self::App { cache, .. }, Some(id)) => {
                anonymous.with_installation_token(token).forgetting_in(Rc::clone(cache), id)
            }
            (Self::App { .. }, None) => anonymous.with_installation_token(token),
            (Self::Token(_), _) => anonymous.with_token(token),
        }
    }

    /// The token to call the API with for `installation` (the delivery's
    /// `installation.id`) at `now_ms`; an App's JWT is signed with `signer`.
    pub async fn token_for<H: HttpClient, S: Rs256Signer>(
        &self,
        installation: Option<u64>,
        client: &GitHubClient<'_, H>,
        signer: &S,
        now_ms: u64,
    ) -> Result<Secret, CredentialsError> {
        match self {
            Self::Token(token) => Ok(token.clone()),
            Self::App { key, cache } => {
                let id = installation.ok_or(CredentialsError::InstallationRequired)?;
                if let Some(token) = cache.get(id, now_ms) {
                    return Ok(token);
                }
                let minted = client.create_installation_token(&key.jwt(signer, now_ms).await?, id).await?;
                if let Some(expires_ms) = parse_rfc3339_ms(&minted.expires_at) {
                    cache.put(id, minted.token.clone(), expires_ms, now_ms);
                }
                Ok(minted.token)
            }
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fff](Z|+00:00)` to milliseconds since the epoch;
/// `None` for anything else (the token is then used once, not cached).
pub(crate) fn parse_rfc3339_ms(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u64> {
        let s = text.get(range)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &fraction[..digits.min(3)]);
        millis = padded.parse::<u64>().ok()?;
        rest = &fraction[digits..];
    }
    if !matches!(rest, "Z" | "z" | "+00:00" | "-00:00") {
        return None;
    }
    let days = days_from_civil(year as i64, month as u32, day as u32);
    let secs = u64::try_from(days).ok()? * 86_400 + hour * 3600 + minute * 60 + second;
    Some(secs * 1000 + millis)
}

/// Howard Hinnant's civil-to-days algorithm.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_with_the_contracts_formatter() {
        for ms in [0, 951_782_400_000, 1_795_983_333_123, 1_468_275_250_000] {
            let text = agent_zero_contracts::rfc3339(ms);
            assert_eq!(parse_rfc3339_ms(&text), Some(ms), "{text}");
        }
        assert_eq!(parse_rfc3339_ms("2016-07-11T22:14:10Z"), Some(1_468_275_250_000));
        assert_eq!(parse_rfc3339_ms("2016-07-11T22:14:10+00:00"), Some(1_468_275_250_000));
        assert_eq!(parse_rfc3339_ms("2016-07-11T22:14:10.5Z"), Some(1_468_275_250_500));
        for bad in [
            "",
            "2016-07-11",
            "2016-07-11T22:14:10",
            "2016-13-11T22:14:10Z",
            "2016-07-11T22:14:10+02:00",
            "2016-07-11T22:14:10.Z",
            "２016-07-11T22:14:10Z",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn configuration_from_env() {
        assert!(Credentials::from_env(None, None, Some(" ")).unwrap().is_none());
        let token = Credentials::from_env(Some("ghp_x"), None, None).unwrap().unwrap();
        assert!(matches!(token, Credentials::Token(ref t) if t.expose() == "ghp_x"));
        assert!(!format!("{token:?}").contains("ghp_x"));
        assert_eq!(
            Credentials::from_env(None, Some("1"), None).unwrap_err(),
            CredentialsError::Incomplete { missing: "the GitHub App private key" }
        );
        assert_eq!(
            Credentials::from_env(None, None, Some("-----BEGIN")).unwrap_err(),
            CredentialsError::Incomplete { missing: "GITHUB_APP_ID" }
        );
        assert!(matches!(
            Credentials::from_env(None, Some("1"), Some("not a key")),
            Err(CredentialsError::InvalidPrivateKey { .. })
        ));
        assert_eq!(
            Credentials::from_env(None, Some("1 2"), Some("-----BEGIN PRIVATE KEY-----")).unwrap_err(),
            CredentialsError::InvalidAppId
        );
    }
}
