//! Plain-text formatting of numbers, durations and argv, shared by formats.
//! Results are raw text: callers still escape them for their format.

/// `1234567` -> `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// `850 ms`, `1.2 s`, `3 min 05 s`.
pub(crate) fn duration(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{}.{} s", ms / 1_000, (ms % 1_000) / 100)
    } else {
        let secs = ms / 1_000;
        format!("{} min {:02} s", secs / 60, secs % 60)
    }
}

/// `1 file`, `2 files`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n as u64), if n == 1 { one } else { many })
}

/// An argv as a reader would type it: arguments with spaces or quotes are
/// single-quoted. Display only; commands are never run from this string.
pub(crate) fn argv(command: &[String]) -> String {
    if command.is_empty() {
        return "(empty command)".to_owned();
    }
    let mut out = String::new();
    for (i, arg) in command.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"') {
            out.push('\'');
            out.push_str(&arg.replace('\'', "'\\''"));
            out.push('\'');
        } else {
            out.push_str(arg);
        }
    }
    out
}

/// Cost in US dollars, written without a `$` (Markdown math on GitHub).
pub(crate) fn usd(cost: f64) -> String {
    if cost.is_finite() { format!("{cost:.4} USD") } else { "unknown".to_owned() }
}

/// Confidence in `[0, 1]` as two decimals; out-of-range values shown as given.
pub(crate) fn confidence(c: f64) -> String {
    if c.is_finite() { format!("{c:.2}") } else { "unknown".to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_durations() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(1_250), "1.2 s");
        assert_eq!(duration(185_000), "3 min 05 s");
        assert_eq!(count(1, "file", "files"), "1 file");
        assert_eq!(count(2, "file", "files"), "2 files");
        assert_eq!(usd(0.01234), "0.0123 USD");
        assert_eq!(usd(f64::NAN), "unknown");
    }

    #[test]
    fn argv_quotes_only_when_needed() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(argv(&args(&["cargo", "test"])), "cargo test");
        assert_eq!(argv(&args(&["sh", "-c", "a b"])), "sh -c 'a b'");
        assert_eq!(argv(&args(&["it's", ""])), "'it'\\''s' ''");
        assert_eq!(argv(&[]), "(empty command)");
    }
}
