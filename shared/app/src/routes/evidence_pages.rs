//! The small pages the evidence renderers do not cover: a task still in
//! progress (its state and events so far) and an error page. Every
//! interpolated value is scrubbed of secrets, stripped of bidi and control
//! characters, and HTML-escaped here.

use std::fmt::Write as _;

use agent_zero_contracts::rfc3339;
// Every interpolated value goes through the evidence pages' own cleaning.
use agent_zero_evidence::clean_html_line as clean;
use agent_zero_runtime::Resident;
use http::StatusCode;

/// Inline stylesheet: system fonts, light and dark, readable on a phone.
const CSS: &str = "\
:root{color-scheme:light dark}
body{margin:0;font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;overflow-wrap:anywhere}
header,main{max-width:62rem;margin:0 auto;padding:.75rem 1rem}
header{border-bottom:1px solid #8884}
h1{font-size:1.4rem;margin:.5rem 0}
code{font:.875rem ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#8882;padding:.05rem .3rem;border-radius:4px}
.badge{display:inline-block;padding:.05rem .55rem;border-radius:1rem;font-size:.8rem;font-weight:600;border:1px solid currentColor}
.muted{opacity:.75}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{font-weight:600}dd{margin:0}
ol.events{padding-left:1.25rem}ol.events li{margin:.35rem 0}
";

/// A complete page around `body` (already escaped HTML).
fn shell(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; base-uri 'none'\">\n\
<meta name=\"referrer\" content=\"no-referrer\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
<header><a href=\"/\">Agent Zero Edge</a></header>\n<main>\n{body}</main>\n</body>\n</html>\n",
        clean(title, &[])
    )
}

/// The page of a task that has not concluded: what it is, where it stands,
/// and every event so far. Refreshing shows progress (no script polls).
pub(super) fn in_progress_page(resident: &Resident, secrets: &[&str]) -> String {
    let mut h = String::new();
    let Some(stimulus) = resident.stimulus.as_deref() else {
        return error_page(StatusCode::NOT_FOUND, "This task has no record yet.");
    };
    let id = clean(&stimulus.task_id, secrets);
    let _ = write!(
        h,
        "<h1>Task <code>{id}</code></h1>\n<p><span class=\"badge\">in progress · {}</span></p>\n\
<p class=\"muted\">The evidence appears on this page when the task ends. Reload to see progress.</p>\n<dl>\n\
<dt>Repository</dt><dd><code>{}</code></dd>\n<dt>Trigger</dt><dd>{}</dd>\n<dt>Mode</dt><dd>{}</dd>\n\
<dt>Created</dt><dd><time>{}</time></dd>\n",
        resident.state,
        clean(&stimulus.repository, secrets),
        stimulus.trigger,
        stimulus.mode,
        rfc3339(resident.created_ms),
    );
    if let Some(issue) = &stimulus.input.issue {
        let _ = writeln!(h, "<dt>Issue</dt><dd>#{} {}</dd>", issue.number, clean(&issue.title.text, secrets));
    }
    h.push_str("</dl>\n<h2>Events</h2>\n");
    if resident.events.is_empty() {
        h.push_str("<p class=\"muted\">No event yet: the task is queued.</p>\n");
    } else {
        h.push_str("<ol class=\"events\">\n");
        for event in &resident.events {
            let attempt = event.attempt.map(|a| format!(" · attempt {a}")).unwrap_or_default();
            let _ = writeln!(
                h,
                "<li><time>{}</time> <span class=\"badge\">{}</span>{attempt} {}</li>",
                clean(&event.timestamp, secrets),
                event.state,
                clean(&event.message, secrets)
            );
        }
        h.push_str("</ol>\n");
    }
    shell(&format!("In progress · task {}", stimulus.task_id), &h)
}

/// A page saying why there is nothing to show.
pub(super) fn error_page(status: StatusCode, message: &str) -> String {
    let reason = status.canonical_reason().unwrap_or("Error");
    let body = format!(
        "<h1>{} {}</h1>\n<p>{}</p>\n<p><a href=\"/\">All tasks</a></p>\n",
        status.as_u16(),
        clean(reason, &[]),
        clean(message, &[])
    );
    shell(reason, &body)
}
