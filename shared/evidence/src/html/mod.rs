//! Server-rendered HTML pages: no script, no external asset, inline CSS,
//! a restrictive Content-Security-Policy, readable on a phone. Every
//! interpolated value is cleaned and escaped here.

mod evidence_page;
mod layout;
mod task_list;

pub use evidence_page::render_evidence_html;
pub use layout::{Nav, Viewer, render_page, render_refreshing_page};
pub use task_list::{TaskListItem, render_task_list_html};

use agent_zero_contracts::TaskEvent;

use crate::RenderOptions;
use crate::text::{Ctx, Keep, block, clean, head, line};

/// A task's events as the evidence page shows its timeline: a heading
/// with the count, then one row per event (state, time, attempt, message),
/// every value cleaned and escaped. For pages of a task still running.
pub fn render_events_html(events: &[TaskEvent], options: &RenderOptions<'_>) -> String {
    let mut h = String::new();
    evidence_page::timeline(&Ctx::new(options), events, &mut h);
    h
}

/// Escapes `& < > " '` in already-cleaned text.
pub(crate) fn escape(text: &str) -> String {
    if !text.contains(['&', '<', '>', '"', '\'']) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Untrusted single-line text, cleaned, capped and escaped.
pub(crate) fn text(ctx: &Ctx<'_>, value: &str) -> String {
    escape(&line(ctx, value))
}

/// Untrusted prose, one paragraph, at most `max` bytes.
pub(crate) fn prose(ctx: &Ctx<'_>, value: &str, max: usize) -> String {
    let cleaned = clean(ctx, value, false);
    let (kept, cut) = head(&cleaned, max);
    let mut out = escape(kept.trim());
    if cut > 0 {
        out.push_str(&format!(
            " … <span class=\"muted\">({} more bytes not shown)</span>",
            crate::format::thousands(cut as u64)
        ));
    }
    out
}

/// Untrusted multi-line text in `<pre>`, at most `max` bytes, with a note
/// when some was left out.
pub(crate) fn pre(ctx: &Ctx<'_>, value: &str, max: usize, keep: Keep) -> String {
    let (kept, cut) = block(ctx, value, max, keep);
    if kept.trim().is_empty() && cut == 0 {
        return "<p class=\"muted\">(empty)</p>".to_owned();
    }
    let mut out = format!("<pre class=\"untrusted\">{}</pre>", escape(kept.trim_end_matches('\n')));
    if cut > 0 {
        let which = if keep == Keep::Head { "last" } else { "first" };
        out.push_str(&format!(
            "<p class=\"muted\">The {which} {} bytes are not shown here.</p>",
            crate::format::thousands(cut as u64)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_that_could_be_markup() {
        assert_eq!(escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
        let ctx = Ctx::new(&RenderOptions { secrets: &["s3cr3t"], ..RenderOptions::default() });
        assert_eq!(text(&ctx, "a\u{202E}b\0 s3cr3t"), "a\u{FFFD}b\u{FFFD} [redacted]");
        assert_eq!(
            pre(&ctx, "</pre><script>", 100, Keep::Head),
            "<pre class=\"untrusted\">&lt;/pre&gt;&lt;script&gt;</pre>"
        );
        assert_eq!(agent_zero_contracts::encode_component("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
    }

    #[test]
    fn events_are_the_evidence_timeline_cleaned_and_escaped() {
        let event = |message: &str, attempt| TaskEvent {
            state: agent_zero_contracts::TaskState::Executing,
            message: message.into(),
            timestamp: "2026-01-01T00:00:00.000Z".into(),
            attempt,
        };
        let opts = RenderOptions { secrets: &["s3cr3t"], ..RenderOptions::default() };
        let html = render_events_html(&[event("<b>run</b> s3cr3t", Some(2)), event("b", None)], &opts);
        assert!(html.starts_with("<h2>Timeline (2 events)</h2>"), "{html}");
        assert!(html.contains("<td>executing</td>") && html.contains("<td class=\"num\">2</td>"), "{html}");
        assert!(html.contains("&lt;b&gt;run&lt;/b&gt; [redacted]") && !html.contains("s3cr3t"), "{html}");
        assert!(render_events_html(&[], &opts).contains("No transition was recorded."));
    }
}
