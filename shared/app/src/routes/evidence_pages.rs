//! The small pages the evidence renderers do not cover: a task still in
//! progress (its state and events so far) and an error page, in the one
//! page shell of `agent-zero-evidence`. Every interpolated value is scrubbed
//! of secrets, stripped of bidi and control characters, and HTML-escaped.

use agent_zero_engine::Resident;
use agent_zero_evidence::clean_html_line as clean;
use agent_zero_evidence::{Nav, RenderOptions, render_events_html, render_page};
use http::StatusCode;

use crate::dashboard::pages::{error_body, task_facts};

/// The page of a task that has not concluded: what it is, where it stands,
/// and every event so far. Refreshing shows progress (no script polls).
pub(super) fn in_progress_page(resident: &Resident, o: &RenderOptions<'_>) -> String {
    let Some(stimulus) = resident.stimulus.as_deref() else {
        return error_page(StatusCode::NOT_FOUND, "This task has no record yet.", o);
    };
    let body = format!(
        "<h1>Task <code>{}</code></h1>\n<p><span class=\"badge\">in progress · {}</span></p>\n\
<p class=\"muted\">The evidence appears on this page when the task ends. Reload to see progress.</p>\n<dl>\n{}</dl>\n{}",
        clean(&stimulus.task_id, o.secrets),
        resident.state,
        task_facts(resident, stimulus, o),
        render_events_html(&resident.events, o)
    );
    render_page(o, &format!("In progress · task {}", stimulus.task_id), Nav::Public, &body)
}

/// A page saying why there is nothing to show.
pub(super) fn error_page(status: StatusCode, message: &str, o: &RenderOptions<'_>) -> String {
    let body = error_body(status, message, ("/", "All tasks"), o);
    render_page(o, status.canonical_reason().unwrap_or("Error"), Nav::Public, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_page_is_in_the_shell_under_the_base_path() {
        let o = RenderOptions { base_path: "/az", secrets: &["s3cr3t"], ..RenderOptions::default() };
        let html = error_page(StatusCode::NOT_FOUND, "task `<s3cr3t>` does not exist", &o);
        assert!(html.contains("<header><a href=\"/az/\">Agent Zero Edge</a></header>"), "{html}");
        assert!(html.contains("<h1>404 Not Found</h1>") && html.contains("<a href=\"/az/\">All tasks</a>"), "{html}");
        assert!(html.contains("task `&lt;[redacted]&gt;` does not exist") && !html.contains("s3cr3t"), "{html}");
        assert!(html.contains("form-action 'none'"), "{html}");
    }
}
