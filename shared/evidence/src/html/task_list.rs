//! The task list page (`GET /`), one page of tasks with a plain "next" link.

use std::fmt::Write as _;

use agent_zero_contracts::{EvidenceBundle, RunMode, TaskState, Trigger, Verdict};
use serde::{Deserialize, Serialize};

use agent_zero_contracts::encode_component;

use crate::RenderOptions;
use crate::html::layout::{Nav, page};
use crate::html::{escape, text};
use crate::outcome::shown_verified;
use crate::text::{Ctx, line};

/// One row of the task list: what the app keeps in its task index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskListItem {
    pub id: String,
    /// `owner/name`.
    pub repository: String,
    /// Current state; running tasks are listed too.
    pub state: TaskState,
    pub trigger: Trigger,
    pub mode: RunMode,
    /// Known once validation decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Shown as "verified" only together with state `completed`.
    #[serde(default)]
    pub verified: bool,
    /// RFC 3339 UTC.
    pub updated_at: String,
    /// Untrusted: an issue or finding title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl TaskListItem {
    /// The row of a finished task, titled by its issue or else its finding.
    pub fn from_bundle(bundle: &EvidenceBundle, updated_at: &str) -> Self {
        let title = bundle
            .issue
            .as_ref()
            .map(|i| i.title.text.clone())
            .or_else(|| bundle.finding.as_ref().map(|f| f.claim.title.clone()));
        Self {
            id: bundle.task_id.clone(),
            repository: bundle.repository.clone(),
            state: bundle.state.into(),
            trigger: bundle.trigger,
            mode: bundle.mode,
            verdict: Some(bundle.verdict),
            verified: shown_verified(bundle),
            updated_at: updated_at.to_owned(),
            title,
        }
    }
}

/// The badge of a row: the outcome for finished tasks, the state otherwise.
fn badge(item: &TaskListItem) -> (&'static str, String) {
    let verified = item.verified && item.state == TaskState::Completed;
    match (item.state, item.verdict) {
        (TaskState::Completed, _) if verified => ("success", "verified".to_owned()),
        (TaskState::Completed, Some(v)) => ("neutral", format!("completed · {v}")),
        (TaskState::NeedsHuman, _) => ("action_required", "needs human".to_owned()),
        (TaskState::Failed, _) => ("failure", "failed".to_owned()),
        (state, _) => ("neutral", state.to_string()),
    }
}

/// Renders one page of the task list. `next_cursor`, when given, becomes a
/// plain link to `{base_path}/?cursor=...`.
pub fn render_task_list_html(items: &[TaskListItem], next_cursor: Option<&str>, options: &RenderOptions<'_>) -> String {
    let ctx = Ctx::new(options);
    let base = escape(options.base_path);
    let mut h = String::from("<h1>Tasks</h1>\n");
    if items.is_empty() {
        h.push_str("<p class=\"muted\">No tasks on this page.</p>\n");
    } else {
        h.push_str(
            "<div class=\"scroll\"><table class=\"stack\">\n<thead><tr><th>Task</th><th>Status</th><th>Repository</th>\
<th>Trigger</th><th>Mode</th><th>Updated</th></tr></thead>\n<tbody>\n",
        );
        for item in items {
            let (class, label) = badge(item);
            let title = item
                .title
                .as_deref()
                .filter(|t| !t.trim().is_empty())
                .map(|t| format!("<br><span class=\"untrusted\">{}</span>", text(&ctx, t)))
                .unwrap_or_default();
            let _ = writeln!(
                h,
                "<tr><td><a href=\"{base}/tasks/{}\"><code>{}</code></a>{title}</td><td><span class=\"badge {class}\">{}</span></td>\
<td><code>{}</code></td><td>{}</td><td>{}</td><td><time>{}</time></td></tr>",
                encode_component(&line(&ctx, &item.id)),
                text(&ctx, &item.id),
                escape(&label),
                text(&ctx, &item.repository),
                item.trigger,
                item.mode,
                text(&ctx, &item.updated_at)
            );
        }
        h.push_str("</tbody>\n</table></div>\n");
    }
    if let Some(cursor) = next_cursor {
        let _ = writeln!(
            h,
            "<nav class=\"pages\"><a rel=\"next\" href=\"{base}/?cursor={}\">Next page</a></nav>",
            encode_component(&line(&ctx, cursor))
        );
    }
    page(&ctx, "Tasks", Nav::Public, &h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(state: TaskState, verified: bool) -> TaskListItem {
        TaskListItem {
            id: "t 1".into(),
            repository: "o/r".into(),
            state,
            trigger: Trigger::Issue,
            mode: RunMode::Fix,
            verdict: Some(Verdict::Accepted),
            verified,
            updated_at: "2026-01-01T00:00:00.000Z".into(),
            title: Some("<b>@x</b>".into()),
        }
    }

    #[test]
    fn verified_only_when_completed_and_flagged() {
        let opts = RenderOptions::default();
        let yes = render_task_list_html(&[item(TaskState::Completed, true)], None, &opts);
        assert!(yes.contains(">verified<"));
        for (state, flag) in [(TaskState::Completed, false), (TaskState::Failed, true), (TaskState::Executing, true)] {
            let html = render_task_list_html(&[item(state, flag)], None, &opts);
            assert!(!html.to_lowercase().contains("verified"), "{state} {flag}");
        }
    }

    #[test]
    fn links_are_encoded_and_titles_escaped() {
        let opts = RenderOptions { base_path: "/az", ..RenderOptions::default() };
        let html = render_task_list_html(&[item(TaskState::Queued, false)], Some("c/1&x=\"y"), &opts);
        assert!(html.contains("href=\"/az/tasks/t%201\""), "{html}");
        assert!(html.contains("href=\"/az/?cursor=c%2F1%26x%3D%22y\""), "{html}");
        assert!(html.contains("&lt;b&gt;@x&lt;/b&gt;") && !html.contains("<b>"), "{html}");
        assert!(!html.contains("<script"));
    }
}
