//! Decimal numbers read from text without core's float parser.
//!
//! `str::parse::<f64>` (and `f32`) links core's correctly rounded parser
//! with its table of 128-bit powers of five: 20,832 bytes that compress to
//! 17 KB, about 2.5 % of the worker. serde_json's own number parser is in
//! every build anyway (each JSON number we read goes through it), so the
//! few decimals read from other text (settings, response headers, request
//! headers, the policy's YAML scalars) are checked against Rust's grammar
//! and handed to it as a JSON number.
//!
//! serde_json reads a number as an integer significand and a decimal
//! exponent and makes the double with one multiplication or division by a
//! power of ten. Up to 15 significant digits and exponents within ±22 both
//! operands are exact, so the result is the nearest double, as core's
//! parser gives (Clinger's fast path); beyond that it may be one unit in
//! the last place away. Every value read this way (days, seconds, quality
//! values, ratios, prices) is inside that range.

/// `text` as a number, in Rust's grammar for `f64::from_str` without the
/// words (`inf`, `nan`): `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`,
/// nothing around it. `None` for any other text, and for a magnitude
/// beyond `f64`'s range (`1e400`, which core reads as infinity); a value
/// below its smallest reads as zero, as in core.
pub fn parse(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    let (negative, rest) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let (mantissa, exponent) = match rest.iter().position(|b| matches!(b, b'e' | b'E')) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let (whole, fraction) = match mantissa.iter().position(|&b| b == b'.') {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, &[][..]),
    };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
        return None;
    }
    if let Some(exponent) = exponent {
        let unsigned = exponent.strip_prefix(b"-").or_else(|| exponent.strip_prefix(b"+")).unwrap_or(exponent);
        if unsigned.is_empty() || !digits(unsigned) {
            return None;
        }
    }
    // JSON's form: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`.
    let mut json = Vec::with_capacity(bytes.len() + 2);
    if negative {
        json.push(b'-');
    }
    match whole.iter().position(|&b| b != b'0') {
        Some(first) => json.extend_from_slice(&whole[first..]),
        None => json.push(b'0'),
    }
    if !fraction.is_empty() {
        json.push(b'.');
        json.extend_from_slice(fraction);
    }
    if let Some(exponent) = exponent {
        json.push(b'e');
        json.extend_from_slice(exponent);
    }
    crate::json::from_slice::<f64>(&json).ok()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::parse;

    /// Bit for bit what core reads, or `None` where core reads a word or
    /// refuses.
    fn as_core(text: &str) -> Option<u64> {
        text.parse::<f64>().ok().map(f64::to_bits)
    }

    #[test]
    fn reads_rusts_spellings() {
        for text in [
            "0",
            "-0",
            "+0",
            "1",
            "+1.5",
            "-2.25",
            "1.",
            ".5",
            "-.5",
            "007",
            "00.10",
            "1e5",
            "1E5",
            "1e+5",
            "1e-5",
            "2.5e-3",
            "0.1",
            "0.7",
            "0.07",
            "36500",
            "86400000",
            "123456789012345",
            "1e22",
            "1e-22",
            "4.9e-300",
        ] {
            assert_eq!(parse(text).map(f64::to_bits), as_core(text), "{text}");
        }
        assert!(parse("-0").unwrap().is_sign_negative());
    }

    #[test]
    fn refuses_what_is_not_a_number() {
        for text in [
            "", "+", "-", ".", "+.", "e5", ".e5", "1e", "1e+", "1e-", "--1", "+-1", "1.2.3", " 1", "1 ", "1,5", "0x10",
            "1_000", "1e5.5", "inf", "-inf", "infinity", "NaN", "nan", "1.5s", "٣",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
    }

    /// The rule in docs/decisions.md ("Decimals are read without core's
    /// float parser"): shipped code reads no float with std's parser,
    /// which links 17 KB gzip into each artefact and measurably slows the
    /// log's decode in wasmtime. A textual check: it sees the turbofish
    /// and path spellings, not a `.parse()` whose type is inferred.
    #[test]
    fn shipped_code_reads_no_float_with_std() {
        fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() {
                    if name != "tests" && name != "benches" && name != "target" && name != "node_modules" {
                        walk(&path, found);
                    }
                } else if name.ends_with(".rs") && !name.ends_with("_tests.rs") && name != "decimal.rs" {
                    let text = std::fs::read_to_string(&path).unwrap();
                    // Unit tests sit at the end of a file, after `#[cfg(test)]`.
                    let shipped = text.split("#[cfg(test)]").next().unwrap_or_default();
                    for spelling in ["parse::<f64>", "parse::<f32>", "f64::from_str", "f32::from_str"] {
                        if shipped.contains(spelling) {
                            found.push(format!("{}: {spelling}", path.display()));
                        }
                    }
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut found = Vec::new();
        for dir in ["shared", "functions"] {
            walk(&root.join(dir), &mut found);
        }
        assert!(found.is_empty(), "use agent_zero_codecs::decimal::parse (docs/decisions.md): {found:?}");
    }

    #[test]
    fn beyond_the_range() {
        assert_eq!(parse("1e400"), None);
        assert_eq!(parse("-1e400"), None);
        assert_eq!(parse("1e-400"), Some(0.0));
        assert_eq!(parse("0e999999999999999999"), Some(0.0));
    }

    proptest! {
        /// Within the fast path (15 digits, exponent within ±22), every
        /// spelling reads as core reads it.
        #[test]
        fn agrees_with_core_in_the_fast_path(
            significand in 0u64..1_000_000_000_000_000,
            point in 0usize..16,
            exponent in -7i32..=7,
            sign in prop::sample::select(vec!["", "+", "-"]),
            upper in any::<bool>(),
        ) {
            let digits = significand.to_string();
            let point = point.min(digits.len());
            let (whole, fraction) = digits.split_at(digits.len() - point);
            let mantissa = if point == 0 { whole.to_owned() } else { format!("{whole}.{fraction}") };
            let e = if upper { 'E' } else { 'e' };
            for text in [format!("{sign}{mantissa}"), format!("{sign}{mantissa}{e}{exponent}")] {
                prop_assert_eq!(parse(&text).map(f64::to_bits), as_core(&text), "{}", text);
            }
        }

        /// Any text at all: a number where core reads one (the same one
        /// within a unit in the last place), nothing where core refuses.
        #[test]
        fn never_reads_what_core_refuses(text in "[-+0-9.eE]{0,12}") {
            match (parse(&text), text.parse::<f64>()) {
                // Subnormals have fewer digits to agree on.
                (Some(ours), Ok(core)) => prop_assert!(
                    (ours - core).abs() <= (core.abs() * 2.0 * f64::EPSILON).max(f64::MIN_POSITIVE),
                    "{} {} {}", text, ours, core
                ),
                (Some(ours), Err(_)) => prop_assert!(false, "{} read as {}", text, ours),
                (None, Ok(core)) => prop_assert!(core.is_infinite(), "{} refused, core reads {}", text, core),
                (None, Err(_)) => {}
            }
        }
    }
}
