//! Cleaning shared by every format, applied to text before any escaping:
//! secrets out, control and bidi characters replaced, length capped on a
//! UTF-8 boundary.

use std::borrow::Cow;

use crate::RenderOptions;

/// Per-render state: the options plus the secrets sorted longest first, so a
/// secret that contains another is replaced whole.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub(crate) opts: RenderOptions<'a>,
    secrets: Vec<&'a str>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(opts: &RenderOptions<'a>) -> Self {
        let mut secrets: Vec<&str> = opts.secrets.to_vec();
        agent_zero_ports::order_secrets(&mut secrets);
        Self { opts: *opts, secrets }
    }

    /// Replaces every secret value with [`REDACTED`]; a redacting render
    /// (one given secrets) also replaces every GitHub-token-shaped run, since
    /// a minted installation token is in no configured list.
    pub(crate) fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.secrets.is_empty() {
            return Cow::Borrowed(text);
        }
        agent_zero_ports::redact(text, &self.secrets)
    }
}

/// The replacement for characters that must not reach a reader.
pub(crate) const REPLACEMENT: char = '\u{FFFD}';

/// Bidirectional formatting characters (Trojan Source, CVE-2021-42574) and
/// marks: they make text display differently from what it is.
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Scrubs secrets and replaces NUL, other control characters and bidi
/// controls with U+FFFD. With `multiline`, newlines and tabs are kept (CR LF
/// and lone CR become LF); without, every line break and tab becomes a space.
pub(crate) fn clean(ctx: &Ctx<'_>, text: &str, multiline: bool) -> String {
    let text = ctx.scrub(text);
    // Fast path: printable ASCII (plus LF and tab when multiline) needs nothing.
    if text.bytes().all(|b| (0x20..0x7F).contains(&b) || (multiline && (b == b'\n' || b == b'\t'))) {
        return text.into_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push(if multiline { '\n' } else { ' ' });
            }
            '\n' | '\u{2028}' | '\u{2029}' => out.push(if multiline { '\n' } else { ' ' }),
            '\t' => out.push(if multiline { '\t' } else { ' ' }),
            c if c.is_control() || is_bidi_control(c) => out.push(REPLACEMENT),
            c => out.push(c),
        }
    }
    out
}

/// The longest prefix of `text` of at most `max` bytes, on a char boundary,
/// and how many bytes were left out.
pub(crate) fn head(text: &str, max: usize) -> (&str, usize) {
    if text.len() <= max {
        return (text, 0);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], text.len() - end)
}

/// The longest suffix of `text` of at most `max` bytes, on a char boundary,
/// and how many bytes were left out.
pub(crate) fn tail(text: &str, max: usize) -> (&str, usize) {
    if text.len() <= max {
        return (text, 0);
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    (&text[start..], start)
}

/// Which end of a long block to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Prose: the beginning matters.
    Head,
    /// Command output: the end (the error) matters.
    Tail,
}

/// Cleans multi-line text and caps it, returning the kept text and the
/// number of bytes left out.
pub(crate) fn block(ctx: &Ctx<'_>, text: &str, max: usize, keep: Keep) -> (String, usize) {
    let cleaned = clean(ctx, text, true);
    let (mut kept, mut cut) = match keep {
        Keep::Head => head(&cleaned, max),
        Keep::Tail => tail(&cleaned, max),
    };
    // Cut on a line boundary when that loses less than half of what is kept.
    if cut > 0 {
        match keep {
            Keep::Head => {
                if let Some(i) = kept.rfind('\n').filter(|&i| i >= kept.len() / 2) {
                    cut += kept.len() - i;
                    kept = &kept[..i];
                }
            }
            Keep::Tail => {
                if let Some(i) = kept.find('\n').filter(|&i| i < kept.len() / 2) {
                    cut += i + 1;
                    kept = &kept[i + 1..];
                }
            }
        }
    }
    (kept.to_owned(), cut)
}

/// Longest inline value (a title, a path, an argv) before it is cut with "…".
pub(crate) const INLINE_MAX_BYTES: usize = 500;

/// Cleans single-line text and caps it at [`INLINE_MAX_BYTES`], marking a cut with "…".
pub(crate) fn line(ctx: &Ctx<'_>, text: &str) -> String {
    let cleaned = clean(ctx, text, false);
    let (kept, cut) = head(&cleaned, INLINE_MAX_BYTES);
    if cut == 0 { cleaned } else { format!("{kept}…") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx<'a>(secrets: &'a [&'a str]) -> Ctx<'a> {
        Ctx::new(&RenderOptions { secrets, ..RenderOptions::default() })
    }

    #[test]
    fn secrets_are_replaced_longest_first() {
        let c = ctx(&["abc", "abcdef", ""]);
        assert_eq!(c.scrub("x abcdef y abc"), "x [redacted] y [redacted]");
        assert_eq!(c.scrub("nothing"), "nothing");
    }

    #[test]
    fn controls_and_bidi_are_replaced() {
        let c = ctx(&[]);
        assert_eq!(clean(&c, "a\0b\u{202E}c\u{2066}d\u{7}", true), "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\u{FFFD}");
        assert_eq!(clean(&c, "a\r\nb\rc\td", true), "a\nb\nc\td");
        assert_eq!(clean(&c, "a\r\nb\rc\td", false), "a b c d");
    }

    #[test]
    fn caps_respect_char_boundaries() {
        assert_eq!(head("héllo", 2), ("h", 5));
        assert_eq!(tail("héllo", 4), ("llo", 3));
        assert_eq!(tail("ok", 4), ("ok", 0));
        let long = "é".repeat(400);
        let l = line(&ctx(&[]), &long);
        assert!(l.ends_with('…') && l.len() <= INLINE_MAX_BYTES + 3);
    }
}
