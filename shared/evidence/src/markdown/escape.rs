//! Untrusted text in GitHub-flavoured Markdown.
//!
//! Single-line text is cleaned ([`crate::text::line`]) and escaped so it is
//! read as literal characters: Markdown punctuation is backslash-escaped,
//! `<`, `>` and `&` become entities (no raw HTML), and a WORD JOINER (U+2060)
//! is put after `@` before a name, after `#` before a number and after `GH-`,
//! so nothing mentions a user or links an issue. Multi-line text goes in a
//! fenced block whose fence is longer than any backtick run inside it.

use crate::text::{Ctx, Keep, block, line};

/// Invisible character that breaks GitHub's mention and reference patterns.
pub(crate) const WORD_JOINER: char = '\u{2060}';

/// Escapes already-cleaned single-line text (see module docs).
pub(crate) fn escape_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    // A leading ordered-list marker (`1.` / `1)`) would start a list.
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let list_marker_at = (digits > 0 && matches!(text.as_bytes().get(digits), Some(b'.' | b')'))).then_some(digits);
    let (mut prev2, mut prev1) = ('\0', '\0');
    for (i, c) in text.char_indices() {
        let next = text[i + c.len_utf8()..].chars().next();
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '!' | '$' | '#' => {
                out.push('\\');
                out.push(c);
                if c == '#' && next.is_some_and(|n| n.is_ascii_digit()) {
                    out.push(WORD_JOINER);
                }
            }
            '-' | '+' | '=' if i == 0 => {
                out.push('\\');
                out.push(c);
            }
            '.' | ')' if list_marker_at == Some(i) => {
                out.push('\\');
                out.push(c);
            }
            '@' => {
                out.push('@');
                if next.is_some_and(|n| n.is_alphanumeric() || n == '-' || n == '_') {
                    out.push(WORD_JOINER);
                }
            }
            '-' if prev2.eq_ignore_ascii_case(&'g')
                && prev1.eq_ignore_ascii_case(&'h')
                && next.is_some_and(|n| n.is_ascii_digit()) =>
            {
                out.push('-');
                out.push(WORD_JOINER);
            }
            c => out.push(c),
        }
        (prev2, prev1) = (prev1, c);
    }
    out
}

/// Untrusted single-line text, cleaned, capped and escaped.
pub(crate) fn inline(ctx: &Ctx<'_>, text: &str) -> String {
    escape_inline(&line(ctx, text))
}

/// Untrusted code-like text (a path, an argv) in `<code>`. The content is
/// escaped like [`inline`], so it is safe inside table cells too.
pub(crate) fn code(ctx: &Ctx<'_>, text: &str) -> String {
    if text.trim().is_empty() {
        return "_(empty)_".to_owned();
    }
    format!("<code>{}</code>", inline(ctx, text))
}

/// Untrusted prose (a plan step, a reason, a summary): one paragraph,
/// escaped like [`inline`], at most `max` bytes with "…" marking a cut.
pub(crate) fn prose(ctx: &Ctx<'_>, text: &str, max: usize) -> String {
    let cleaned = crate::text::clean(ctx, text, false);
    let (kept, cut) = crate::text::head(&cleaned, max);
    let mut out = escape_inline(kept.trim());
    if cut > 0 {
        out.push_str(&format!(" … _({} more bytes not shown)_", crate::format::thousands(cut as u64)));
    }
    out
}

/// Untrusted single-line text inside a raw HTML block (such as `<summary>`),
/// where Markdown escapes are not processed: entities only, plus the word
/// joiners that break mentions and references.
pub(crate) fn in_html(ctx: &Ctx<'_>, text: &str) -> String {
    let escaped = escape_inline(&line(ctx, text));
    let mut out = String::with_capacity(escaped.len());
    let mut chars = escaped.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => out.push(n),
                None => out.push('\\'),
            },
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// A link target (the operator's evidence URL): characters that could end
/// the link or start markup are percent-encoded.
pub(crate) fn link_target(ctx: &Ctx<'_>, url: &str) -> String {
    let mut out = String::new();
    for c in line(ctx, url).chars() {
        if c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&*+,;=%".contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A fence of backticks longer than any run in `text` (at least three).
pub(crate) fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

/// Untrusted multi-line text as a fenced `text` block, at most `max` bytes
/// of it, with a visible note when some was left out. Empty text is shown
/// as `_(empty)_`.
pub(crate) fn fenced(ctx: &Ctx<'_>, text: &str, max: usize, keep: Keep) -> String {
    let (kept, cut) = block(ctx, text, max, keep);
    // Our own markers (`<!-- agent-zero:... -->`) must stay unique: break
    // any comment opener in untrusted text, even inside a fence.
    let kept = kept.replace("<!--", "<!\u{2060}--");
    let body = kept.trim_end_matches('\n');
    if body.trim().is_empty() && cut == 0 {
        return "_(empty)_".to_owned();
    }
    let fence = fence_for(body);
    let mut out = format!("{fence}text\n{body}\n{fence}");
    if cut > 0 {
        let which = match keep {
            Keep::Head => "last",
            Keep::Tail => "first",
        };
        out.push_str(&format!("\n\n_The {which} {} bytes are not shown here._", crate::format::thousands(cut as u64)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RenderOptions;

    #[test]
    fn mentions_and_references_are_broken() {
        let e = escape_inline("ping @octocat and @org/team about #12, o/r#3 and GH-4 or gh-5");
        assert!(!e.contains("@octocat") && !e.contains("@org"), "{e}");
        assert!(!e.contains("#12") && !e.contains("#3"), "{e}");
        assert!(!e.contains("GH-4") && !e.contains("gh-5"), "{e}");
        assert_eq!(e.replace(WORD_JOINER, ""), "ping @octocat and @org/team about \\#12, o/r\\#3 and GH-4 or gh-5");
        // An e-mail-like `a@b` is broken too; a lone `@` is left alone.
        assert_eq!(escape_inline("@ x"), "@ x");
    }

    #[test]
    fn html_and_markdown_are_literal() {
        assert_eq!(escape_inline("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)&gt;");
        assert_eq!(escape_inline("a & b"), "a &amp; b");
        assert_eq!(
            escape_inline("**bold** [x](y) `c` | ~s~ $m$"),
            "\\*\\*bold\\*\\* \\[x\\](y) \\`c\\` \\| \\~s\\~ \\$m\\$"
        );
        assert_eq!(escape_inline("# Verified"), "\\# Verified");
        assert_eq!(escape_inline("- item"), "\\- item");
        assert_eq!(escape_inline("12. item"), "12\\. item");
        assert_eq!(escape_inline("v1.2"), "v1.2");
        let ctx = Ctx::new(&RenderOptions::default());
        assert_eq!(in_html(&ctx, "a|b\\c <i> \"q\" @x"), format!("a|b\\c &lt;i&gt; &quot;q&quot; @{WORD_JOINER}x"));
        assert_eq!(link_target(&ctx, "https://x.test/a b)<\"é"), "https://x.test/a%20b%29%3C%22%C3%A9");
    }

    #[test]
    fn fences_outrun_backticks() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a ```` b ` c"), "`````");
        let ctx = Ctx::new(&RenderOptions::default());
        let f = fenced(&ctx, "```\n# Verified\n```", 100, Keep::Head);
        assert_eq!(f, "````text\n```\n# Verified\n```\n````");
        assert_eq!(fenced(&ctx, "\n", 100, Keep::Head), "_(empty)_");
        let cut = fenced(&ctx, "0123456789", 4, Keep::Tail);
        assert_eq!(cut, "```text\n6789\n```\n\n_The first 6 bytes are not shown here._");
    }
}
