//! When an event happened, by the payload's own word: the ISO 8601 times
//! GitHub writes on the objects intake reads (`2019-05-15T15:20:33Z`). A
//! signed body cannot be re-dated, so this bounds how old a delivery may
//! be whoever sends it (the app's replay window). Pure: text in, value out.
//!
//! Our own few lines rather than a date crate: one format, no time zones
//! beyond a fixed offset, and nothing else in the wasm needs a calendar.

/// Milliseconds since the epoch of `2019-05-15T15:20:33Z`, with optional
/// fractional seconds and a `Z` or `±HH:MM` offset; `None` for anything
/// else (and for instants before 1970).
pub(crate) fn parse_ms(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction.bytes().position(|c| !c.is_ascii_digit()).unwrap_or(fraction.len());
        if end == 0 {
            return None;
        }
        let first3: String = fraction[..end.min(3)].chars().chain("00".chars()).take(3).collect();
        millis = first3.parse::<i64>().ok()?;
        rest = &fraction[end..];
    }
    let offset_secs = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (digits_of(&rest[1..3])?, digits_of(&rest[4..6])?);
            if h > 23 || m > 59 {
                return None;
            }
            let secs = h * 3600 + m * 60;
            if *sign == b'+' { secs } else { -secs }
        }
        _ => return None,
    };
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    u64::try_from(secs * 1000 + millis).ok()
}

fn digits_of(text: &str) -> Option<i64> {
    text.bytes().all(|c| c.is_ascii_digit()).then(|| text.parse().ok())?
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`, the inverse of `agent_zero_contracts::rfc3339`'s).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::parse_ms;

    #[test]
    fn github_times_parse_and_everything_else_is_refused() {
        // The vendored payloads' forms: `Z`, and an offset with milliseconds
        // (`installation` `suspend`).
        assert_eq!(parse_ms("2019-05-15T15:20:33Z"), Some(1_557_933_633_000));
        assert_eq!(parse_ms("2021-04-28T22:32:50.000-04:00"), parse_ms("2021-04-29T02:32:50Z"));
        assert_eq!(parse_ms("2021-04-29T02:32:50.1234Z"), Some(parse_ms("2021-04-29T02:32:50Z").unwrap() + 123));
        assert_eq!(parse_ms("2019-05-15T17:20:33+02:00"), parse_ms("2019-05-15T15:20:33Z"));
        for ms in [0, 951_782_400_000, 1_557_933_633_000, 1_795_983_333_123] {
            assert_eq!(parse_ms(&agent_zero_contracts::rfc3339(ms)), Some(ms), "{ms}");
        }
        for bad in [
            "",
            "yesterday",
            "2019-05-15",
            "2019-05-15 15:20:33Z",
            "2019-05-15T15:20:33",
            "2019-13-15T15:20:33Z",
            "2019-05-15T25:20:33Z",
            "2019-05-15T15:20:33.Z",
            "2019-05-15T15:20:33+0200",
            "+019-05-15T15:20:33Z",
            "1969-12-31T23:59:59Z",
            "2019-05-15T15:20:33Zjunk",
        ] {
            assert_eq!(parse_ms(bad), None, "{bad}");
        }
    }
}
