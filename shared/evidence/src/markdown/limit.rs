//! Holding GitHub-bound Markdown to a byte limit without breaking it.
//!
//! The cut is made at the end of a line outside any code fence (so untrusted
//! text can never end up outside its fence), open `<details>` elements are
//! closed, and a visible note says how much was cut and which sections.

use crate::format::thousands;
use crate::markdown::escape::link_target;
use crate::text::{Ctx, head};

/// A place the text may be cut: the byte offset just after a line, and how
/// many `<details>` elements are open there.
#[derive(Debug, Clone, Copy)]
struct CutPoint {
    at: usize,
    open_details: usize,
}

/// Walks our own Markdown line by line. Untrusted text cannot start a line
/// with `<` or `#` outside a fence (it is escaped), and cannot close a fence
/// (fences outrun its backtick runs), so this view of the structure is exact.
fn cut_points(text: &str) -> (Vec<CutPoint>, Vec<(usize, String)>) {
    let mut points = Vec::new();
    let mut headings = Vec::new();
    let mut fence: Option<usize> = None;
    let mut open_details = 0usize;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let content = line.trim_end();
        let ticks = content.chars().take_while(|&c| c == '`').count();
        match fence {
            Some(n) if ticks >= n && ticks == content.len() => fence = None,
            Some(_) => continue,
            None if ticks >= 3 => {
                fence = Some(ticks);
                continue;
            }
            None => {}
        }
        if content.starts_with("<details") {
            open_details += 1;
        } else if content.starts_with("</details>") {
            open_details = open_details.saturating_sub(1);
        } else if let Some(name) = content.strip_prefix("### ").or_else(|| content.strip_prefix("## ")) {
            headings.push((start, name.to_owned()));
        }
        if line.ends_with('\n') {
            points.push(CutPoint { at: offset, open_details });
        }
    }
    (points, headings)
}

fn note(ctx: &Ctx<'_>, max: usize, cut_bytes: usize, partial: Option<&str>, sections: &[&str]) -> String {
    let mut out = format!(
        "\n---\n\n**This report was cut to fit GitHub's limit of {} characters:** the last {} bytes are not shown",
        thousands(max as u64),
        thousands(cut_bytes as u64)
    );
    let mut parts = Vec::new();
    if let Some(name) = partial {
        parts.push(format!("the rest of \"{name}\""));
    }
    if !sections.is_empty() {
        let shown: Vec<&str> = sections.iter().copied().take(8).collect();
        let more = sections.len() - shown.len();
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        parts.push(format!("the sections {}{more}", shown.join(", ")));
    }
    if !parts.is_empty() {
        out.push_str(&format!(" ({})", parts.join("; ")));
    }
    out.push('.');
    if let Some(url) = ctx.opts.evidence_url {
        out.push_str(&format!(" See [the full evidence]({}).", link_target(ctx, url)));
    }
    out.push('\n');
    out
}

/// `text` if it fits in `max` bytes, else its longest safe prefix plus the note.
pub(crate) fn fit(ctx: &Ctx<'_>, text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let (points, headings) = cut_points(&text);
    // Keep at least the first line (our marker) when the limit is tiny, with
    // a shorter note; below that, whatever fits.
    let first_line = points.first().map_or(0, |p| p.at);
    for short in [false, true] {
        let min_cut = if short { 0 } else { first_line };
        if let Some(out) = fit_with(ctx, &text, max, &points, &headings, short, min_cut) {
            return out;
        }
    }
    head(&text, max).0.to_owned()
}

fn fit_with(
    ctx: &Ctx<'_>,
    text: &str,
    max: usize,
    points: &[CutPoint],
    headings: &[(usize, String)],
    short: bool,
    min_cut: usize,
) -> Option<String> {
    let mut reserve = 0;
    loop {
        let budget = max.saturating_sub(reserve);
        let point =
            points.iter().rev().find(|p| p.at <= budget).copied().unwrap_or(CutPoint { at: 0, open_details: 0 });
        let sections: Vec<&str> =
            headings.iter().filter(|(start, _)| *start >= point.at).map(|(_, name)| name.as_str()).collect();
        // The section the cut falls in, when some of its text is lost.
        let next_heading = headings.iter().map(|(s, _)| *s).find(|s| *s >= point.at).unwrap_or(text.len());
        let partial = headings
            .iter()
            .rev()
            .find(|(start, _)| *start < point.at)
            .filter(|_| !text[point.at..next_heading].trim().is_empty())
            .map(|(_, name)| name.as_str());
        let closers = "</details>\n".repeat(point.open_details);
        let note = if short {
            format!("\n**Cut to fit {} bytes.**\n", thousands(max as u64))
        } else {
            note(ctx, max, text.len() - point.at, partial, &sections)
        };
        let total = point.at + closers.len() + note.len();
        if total <= max && (point.at >= min_cut) {
            let mut out = String::with_capacity(total);
            out.push_str(&text[..point.at]);
            out.push_str(&closers);
            out.push_str(&note);
            return Some(out);
        }
        if point.at <= min_cut {
            return None;
        }
        reserve += total - max;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RenderOptions;

    #[test]
    fn short_text_is_untouched() {
        let ctx = Ctx::new(&RenderOptions::default());
        assert_eq!(fit(&ctx, "abc\n".into(), 10), "abc\n");
    }

    #[test]
    fn tiny_limits_keep_the_first_line() {
        let ctx = Ctx::new(&RenderOptions::default());
        let text = format!("<!-- marker -->\n{}", "word\n".repeat(100));
        let out = fit(&ctx, text.clone(), 60);
        assert!(out.starts_with("<!-- marker -->\n") && out.ends_with("**Cut to fit 60 bytes.**\n"), "{out}");
        assert!(out.len() <= 60);
        assert_eq!(fit(&ctx, text, 10), "<!-- marke");
    }

    #[test]
    fn cuts_outside_fences_and_closes_details() {
        let ctx = Ctx::new(&RenderOptions { evidence_url: Some("https://x.test/t/1"), ..RenderOptions::default() });
        let mut text = String::from("<!-- m -->\n## Head\n\n<details><summary>s</summary>\n\n```text\n");
        text.push_str(&"line\n".repeat(400));
        text.push_str("```\n</details>\n\n### Checks\n\nrow\n");
        let out = fit(&ctx, text.clone(), 600);
        assert!(out.len() <= 600, "{}", out.len());
        assert!(out.starts_with("<!-- m -->\n## Head\n\n<details><summary>s</summary>\n\n</details>\n"), "{out}");
        assert!(out.contains("(the rest of \"Head\"; the sections Checks)"), "{out}");
        assert!(out.contains("[the full evidence](https://x.test/t/1)"), "{out}");
        assert!(!out.contains("```"), "no half fence: {out}");
    }
}
