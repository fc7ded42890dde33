//! The dashboard's sign-in: GitHub OAuth (`oauth`), signed sessions
//! (`session`) and their revocation (`revocation`), who may sign in with
//! which grants (`settings`) over which repositories (`scope`). The routes
//! are in `routes/dashboard.rs`, the markup in `pages`.

pub(crate) mod oauth;
pub(crate) mod pages;
pub(crate) mod revocation;
pub(crate) mod scope;
pub(crate) mod session;
pub(crate) mod settings;

pub(crate) use settings::DashboardSettings;

/// What a session may do now: the grants the settings give its account;
/// `None` when they no longer allow it.
pub(crate) fn access_of<'s>(settings: &'s DashboardSettings, session: &session::Session) -> Option<scope::Access<'s>> {
    settings.access_of(&session.login, session.user_id, &session.orgs)
}

/// Milliseconds since the epoch of an RFC 3339 UTC timestamp as
/// [`agent_zero_contracts::rfc3339`] writes it (`2026-11-29T20:15:33.123Z`).
pub(crate) fn parse_rfc3339_ms(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let millis = match text.get(19..)? {
        "Z" => 0,
        rest => rest.strip_prefix('.')?.strip_suffix('Z')?.get(..3)?.parse::<i64>().ok()?,
    };
    // Howard Hinnant's days-from-civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000) + millis).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_back() {
        for ms in [0, 951_782_400_000, 1_795_983_333_123] {
            assert_eq!(parse_rfc3339_ms(&agent_zero_contracts::rfc3339(ms)), Some(ms));
        }
        assert_eq!(parse_rfc3339_ms("2026-11-29T20:15:33Z"), Some(1_795_983_333_000));
        assert_eq!(parse_rfc3339_ms("yesterday"), None);
    }
}
