//! The dashboard's markup: server-rendered, no script, forms that post to
//! this origin only. Every interpolated value goes through the evidence
//! pages' cleaning (secrets redacted, bidi and control characters
//! replaced, HTML-escaped).

use std::fmt::Write as _;

use agent_zero_contracts::{TaskState, rfc3339};
use agent_zero_engine::{Resident, Stimulus};
use agent_zero_evidence::Viewer;
use agent_zero_evidence::clean_html_line as clean;
use agent_zero_evidence::{Nav, RenderOptions, render_events_html, render_page, render_refreshing_page};
use http::StatusCode;

use crate::audit_log::AuditEntry;
use crate::task_counters::Counters;
use crate::task_index::TaskSummary;
use agent_zero_contracts::RunCost;

/// The Content-Security-Policy of dashboard pages: the evidence pages'
/// policy, except that forms may post to this origin.
pub(crate) const DASHBOARD_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Seconds between two loads of the task list by the browser (its
/// counters then are at most this old). Five minutes: each load costs four
/// list operations (`task_counters`), and the free Workers plan allows
/// 1,000 a day.
pub(crate) const REFRESH_SECS: u32 = 300;

/// A dashboard page around `body` (already escaped HTML), in the one shell.
fn shell(title: &str, viewer: Option<Viewer<'_>>, body: &str, o: &RenderOptions<'_>) -> String {
    render_page(o, title, Nav::Dashboard(viewer), body)
}

/// The rows every page of a task starts with (in a `<dl>`): repository,
/// trigger, mode, creation time and the issue it is about.
pub(crate) fn task_facts(resident: &Resident, stimulus: &Stimulus, o: &RenderOptions<'_>) -> String {
    let mut h = format!(
        "<dt>Repository</dt><dd><code>{}</code></dd>\n<dt>Trigger</dt><dd>{}</dd>\n<dt>Mode</dt><dd>{}</dd>\n\
<dt>Created</dt><dd><time>{}</time></dd>\n",
        clean(&stimulus.repository, o.secrets),
        stimulus.trigger,
        stimulus.mode,
        rfc3339(resident.created_ms),
    );
    let forge = stimulus.input.forge;
    if !forge.is_github() {
        let _ = writeln!(h, "<dt>Forge</dt><dd>{}</dd>", forge_name(forge));
    }
    if let Some(issue) = &stimulus.input.issue {
        // The issue's page on its forge, as the forge's API gave it; an
        // `https` address only (never `javascript:` or plain `http`).
        let number = match issue.url.as_deref().filter(|u| u.starts_with("https://")) {
            Some(url) => format!("<a href=\"{}\">#{}</a>", clean(url, o.secrets), issue.number),
            None => format!("#{}", issue.number),
        };
        let _ = writeln!(h, "<dt>Issue</dt><dd>{number} {}</dd>", clean(&issue.title.text, o.secrets));
    }
    if let Some(pr) = &stimulus.input.pull_request {
        let noun = if forge == agent_zero_contracts::ForgeKind::GitLab { "Merge request" } else { "Pull request" };
        let _ =
            writeln!(h, "<dt>{noun}</dt><dd>#{} at <code>{}</code></dd>", pr.number, clean(&pr.head_sha, o.secrets));
    }
    h
}

/// A forge as people spell it.
const fn forge_name(forge: agent_zero_contracts::ForgeKind) -> &'static str {
    match forge {
        agent_zero_contracts::ForgeKind::GitHub => "GitHub",
        agent_zero_contracts::ForgeKind::GitLab => "GitLab",
        agent_zero_contracts::ForgeKind::Gitea => "Gitea",
        agent_zero_contracts::ForgeKind::Forgejo => "Forgejo",
    }
}

/// The body of a page saying why there is nothing to show, with a link
/// back to `back` (a path under the base path) labelled `label`.
pub(crate) fn error_body(
    status: StatusCode,
    message: &str,
    (back, label): (&str, &str),
    o: &RenderOptions<'_>,
) -> String {
    format!(
        "<h1>{} {}</h1>\n<p class=\"refused\">{}</p>\n<p><a href=\"{}{back}\">{label}</a></p>\n",
        status.as_u16(),
        clean(status.canonical_reason().unwrap_or("Error"), &[]),
        clean(message, o.secrets),
        clean(o.base_path, &[]),
    )
}

/// The signed-out page: one link that starts the GitHub sign-in.
pub(crate) fn sign_in(message: Option<&str>, o: &RenderOptions<'_>) -> String {
    let mut body = String::from("<h1>Dashboard</h1>\n");
    if let Some(message) = message {
        let _ = writeln!(body, "<p class=\"refused\">{}</p>", clean(message, o.secrets));
    }
    let _ = writeln!(
        body,
        "<p>Sign in to see tasks, approve or reject the ones waiting for a person, and read the audit log.</p>\n\
<p><a class=\"signin\" href=\"{}/login\">Sign in with GitHub</a></p>",
        clean(o.base_path, &[])
    );
    shell("Sign in · Agent Zero Edge", None, &body, o)
}

/// A page saying why there is nothing to show.
pub(crate) fn error(status: StatusCode, message: &str, viewer: Option<Viewer<'_>>, o: &RenderOptions<'_>) -> String {
    let body = error_body(status, message, ("/dashboard", "Dashboard"), o);
    shell(status.canonical_reason().unwrap_or("Error"), viewer, &body, o)
}

/// What the task list counts: over which repositories, and the counts
/// (`None`: not counted for this session, see `counters_section`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counted<'a> {
    /// `None`: every repository.
    pub(crate) repository: Option<&'a str>,
    pub(crate) counters: Option<Counters>,
}

/// The counters above the task list, each `id`'d for tests and linked to
/// its filter where one state is counted.
fn counters_section(counted: Counted<'_>, o: &RenderOptions<'_>) -> String {
    let (base, secrets) = (clean(o.base_path, &[]), o.secrets);
    let Some(c) = counted.counters else {
        return "<p class=\"muted\" id=\"counters\">Counters: filter by one repository to see its counts.</p>\n"
            .to_owned();
    };
    let scope = match counted.repository {
        Some(r) => format!("in <code>{}</code>", clean(r, secrets)),
        None => "in every repository".to_owned(),
    };
    let link = |state: TaskState, count: String| {
        let mut query = format!("state={state}");
        if let Some(r) = counted.repository {
            let _ = write!(query, "&repository={}", agent_zero_contracts::encode_component(r));
        }
        format!("<a href=\"{base}/dashboard?{}\">{count}</a>", clean(&query, &[]))
    };
    format!(
        "<table class=\"counters\" id=\"counters\">\n<tr><th>Running</th><th>Queued</th><th>Waiting for a person</th>\
<th>Failed in the last day</th></tr>\n<tr><td id=\"count-running\">{}</td><td id=\"count-queued\">{}</td>\
<td id=\"count-waiting\">{}</td><td id=\"count-failed\">{}</td></tr>\n</table>\n\
<p class=\"muted\">Tasks {scope}, counted at each load; this page reloads every {REFRESH_SECS} s.</p>\n",
        c.running,
        link(TaskState::Queued, c.queued.to_string()),
        link(TaskState::NeedsHuman, c.waiting.to_string()),
        link(TaskState::Failed, c.failed_last_day.to_string()),
    )
}

/// The task list with its filters, under its counters; the browser loads
/// it again every [`REFRESH_SECS`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn task_list(
    viewer: Viewer<'_>,
    items: &[TaskSummary],
    repository: Option<&str>,
    state: Option<TaskState>,
    next: Option<&str>,
    totals: &[RepositoryTotal],
    counted: Counted<'_>,
    o: &RenderOptions<'_>,
) -> String {
    let (base, secrets) = (clean(o.base_path, &[]), o.secrets);
    let mut h = String::from("<h1>Tasks</h1>\n");
    h.push_str(&counters_section(counted, o));
    let _ = writeln!(h, "<form class=\"filters\" method=\"get\" action=\"{base}/dashboard\">");
    let _ = writeln!(
        h,
        "<label>Repository<input name=\"repository\" placeholder=\"owner/name\" value=\"{}\"></label>",
        clean(repository.unwrap_or_default(), secrets)
    );
    h.push_str("<label>State<select name=\"state\"><option value=\"\">any</option>");
    for s in TaskState::ALL {
        let selected = if Some(*s) == state { " selected" } else { "" };
        let _ = write!(h, "<option{selected}>{s}</option>");
    }
    h.push_str("</select></label>\n<button type=\"submit\">Filter</button>\n</form>\n");
    if items.is_empty() {
        h.push_str("<p class=\"muted\">No task matches.</p>\n");
    } else {
        h.push_str("<table>\n<tr><th>Task</th><th>Repository</th><th>State</th><th>Mode</th><th>Updated</th></tr>\n");
        for t in items {
            let title = t.title.as_deref().map(|s| format!("<br><span class=\"muted\">{}</span>", clean(s, secrets)));
            let _ = writeln!(
                h,
                "<tr><td><a href=\"{base}/dashboard/tasks/{id}\"><code>{id}</code></a>{}</td><td><code>{}</code></td>\
<td><span class=\"badge\">{}</span></td><td>{}</td><td><time>{}</time></td></tr>",
                title.unwrap_or_default(),
                clean(&t.repository, secrets),
                t.state,
                t.mode,
                clean(&t.updated_at, secrets),
                id = clean(&t.id, secrets),
            );
        }
        h.push_str("</table>\n");
    }
    if let Some(next) = next {
        let mut query = format!("cursor={}", agent_zero_contracts::encode_component(next));
        if let Some(r) = repository {
            let _ = write!(query, "&repository={}", agent_zero_contracts::encode_component(r));
        }
        if let Some(s) = state {
            let _ = write!(query, "&state={s}");
        }
        let _ = writeln!(h, "<p><a href=\"{base}/dashboard?{}\">Next page</a></p>", clean(&query, &[]));
    }
    h.push_str(&totals_table(totals, secrets));
    render_refreshing_page(o, "Tasks · Agent Zero Edge", Nav::Dashboard(Some(viewer)), &h, REFRESH_SECS)
}

/// A cost as table cells: ticks, storage operations (of which atomic and
/// lease operations), subrequests (GitHub, model, sandbox), sandbox time,
/// model tokens and dollars when priced.
fn cost_cells(cost: &RunCost) -> String {
    let dollars = cost.model_cost_usd.map_or_else(|| "not priced".to_owned(), |d| format!("${d:.4}"));
    format!(
        "<td>{}</td><td>{} ({} atomic, {} lease)</td><td>{} ({} GitHub, {} model, {} sandbox)</td><td>{}</td>\
<td>{} in / {} out</td><td>{dollars}</td>",
        cost.ticks,
        cost.storage_ops(),
        cost.kv_atomic,
        cost.lease_ops,
        cost.subrequests,
        cost.github_requests,
        cost.model_requests,
        cost.sandbox_requests,
        duration(cost.sandbox_ms),
        cost.model_input_tokens,
        cost.model_output_tokens,
    )
}

const COST_HEAD: &str =
    "<th>Ticks</th><th>Storage ops</th><th>Subrequests</th><th>Sandbox</th><th>Model tokens</th><th>Model $</th>";

/// One run's cost, or that nothing ran yet.
fn cost_table(cost: Option<&RunCost>) -> String {
    match cost {
        None => "<p class=\"muted\">No tick has run yet.</p>\n".to_owned(),
        Some(cost) => {
            format!("<table class=\"cost\">\n<tr>{COST_HEAD}</tr>\n<tr>{}</tr>\n</table>\n", cost_cells(cost))
        }
    }
}

/// Per repository: its tasks on the page and their costs added up.
#[derive(Debug, Clone, Default)]
pub(crate) struct RepositoryTotal {
    pub(crate) repository: String,
    pub(crate) tasks: u64,
    pub(crate) cost: RunCost,
}

fn totals_table(totals: &[RepositoryTotal], secrets: &[&str]) -> String {
    if totals.is_empty() {
        return String::new();
    }
    let mut h = format!(
        "<h2>Cost by repository</h2>\n<p class=\"muted\">The tasks on this page, added up.</p>\n<table class=\"cost\">\n\
<tr><th>Repository</th><th>Tasks</th>{COST_HEAD}</tr>\n"
    );
    for t in totals {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td>{}</tr>",
            clean(&t.repository, secrets),
            t.tasks,
            cost_cells(&t.cost)
        );
    }
    h.push_str("</table>\n");
    h
}

/// Milliseconds as a short duration (`3 s`, `4 min 5 s`, `2 h 10 min`).
pub(crate) fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// What the task page may offer the viewer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Offer<'a> {
    pub(crate) viewer: Viewer<'a>,
    /// The viewer's grants include the task's mode (approving needs it).
    pub(crate) may_approve: bool,
    /// What the last action did (after a redirect).
    pub(crate) notice: Option<&'a str>,
}

/// One task: its state, its progress (states so far, the current step and
/// how long it has waited), and the decision forms when it waits for a person.
pub(crate) fn task(
    resident: &Resident,
    cost: Option<&RunCost>,
    offer: Offer<'_>,
    now_ms: u64,
    o: &RenderOptions<'_>,
) -> String {
    let (base, secrets) = (clean(o.base_path, &[]), o.secrets);
    let mut h = String::new();
    let Some(stimulus) = resident.stimulus.as_deref() else {
        return error(StatusCode::NOT_FOUND, "This task has no record yet.", Some(offer.viewer), o);
    };
    let id = clean(&stimulus.task_id, secrets);
    let _ = writeln!(h, "<h1>Task <code>{id}</code></h1>");
    if let Some(notice) = offer.notice {
        let _ = writeln!(h, "<p class=\"notice\">{}</p>", clean(notice, secrets));
    }
    let last = resident.events.last();
    let since = last.and_then(|e| super::parse_rfc3339_ms(&e.timestamp)).unwrap_or(resident.created_ms);
    let _ = write!(
        h,
        "<dl>\n<dt>State</dt><dd><span class=\"badge\" id=\"state\">{}</span></dd>\n{}",
        resident.state,
        task_facts(resident, stimulus, o)
    );
    let path: Vec<String> = resident.path.iter().map(ToString::to_string).collect();
    let _ = writeln!(h, "<dt>States so far</dt><dd>{}</dd>", clean(&path.join(" → "), secrets));
    if let Some(event) = last {
        let _ = writeln!(h, "<dt>Current step</dt><dd>{}</dd>", clean(&event.message, secrets));
    }
    let waiting = if resident.state == TaskState::NeedsHuman { "Waiting for a person" } else { "In this step" };
    let _ = writeln!(h, "<dt>{waiting}</dt><dd>{}</dd>", duration(now_ms.saturating_sub(since)));
    if let Some((who, decision)) = &resident.approval.decided {
        let verb = if *decision == agent_zero_engine::ApprovalDecision::Approve { "approved" } else { "rejected" };
        let _ = writeln!(h, "<dt>Decided</dt><dd>{verb} by {}</dd>", clean(who, secrets));
    }
    h.push_str("</dl>\n");
    if resident.state == TaskState::NeedsHuman {
        // What an approval covers, shown before the buttons: every file the
        // decision writes, whole. The form carries its digest, so an
        // approval of a page a repair has since replaced is refused.
        let pending = resident.attempt.decision.as_ref();
        let shown = pending.map(agent_zero_engine::decision_digest).unwrap_or_default();
        let awaiting = agent_zero_engine::awaiting(resident);
        if let Some((stop, effect)) = &awaiting {
            // Why it waits, and what approving does at this stop.
            let _ = writeln!(
                h,
                "<h2>Why it waits</h2>\n<p><code>{}</code>: {}</p>\n<p class=\"approving\">{}</p>",
                clean(&stop.code, secrets),
                clean(&stop.message, secrets),
                effect.describe()
            );
        }
        let writes = awaiting.as_ref().is_none_or(|(_, e)| *e == agent_zero_engine::ApprovalEffect::Writes);
        if let Some(decision) = pending {
            h.push_str(&pending_changes(decision, writes, secrets));
        }
        h.push_str("<h2>Decide</h2>\n<div class=\"decide\">\n");
        let form = |verb: &str, label: &str| {
            format!(
                "<form method=\"post\" action=\"{base}/dashboard/tasks/{id}/decision\">\n\
<input type=\"hidden\" name=\"csrf\" value=\"{}\">\n<input type=\"hidden\" name=\"decision\" value=\"{verb}\">\n\
<input type=\"hidden\" name=\"shown\" value=\"{}\">\n\
<label>Comment<textarea name=\"comment\" rows=\"2\" maxlength=\"4096\"></textarea></label>\n\
<button class=\"{verb}\" type=\"submit\">{label}</button>\n</form>\n",
                clean(offer.viewer.csrf, &[]),
                clean(&shown, &[])
            )
        };
        if offer.may_approve {
            h.push_str(&form("approve", "Approve"));
        } else {
            let _ = writeln!(
                h,
                "<p class=\"muted\">Approving a <code>{}</code> task needs mode <code>{}</code> granted to you.</p>",
                stimulus.mode, stimulus.mode
            );
        }
        h.push_str(&form("reject", "Reject"));
        h.push_str("</div>\n");
    }
    let _ = writeln!(
        h,
        "<p><a href=\"{base}/dashboard/tasks/{id}/evidence\">Evidence</a> · <a href=\"{base}/dashboard/tasks/{id}\">Reload</a></p>"
    );
    h.push_str("<h2>Cost so far</h2>\n");
    h.push_str(&cost_table(cost));
    h.push_str(&render_events_html(&resident.events, o));
    shell(&format!("Task {}", stimulus.task_id), Some(offer.viewer), &h, o)
}

/// The files a waiting decision writes, each whole (an approval covers
/// exactly these); where approving writes nothing (`writes` false), the
/// change as proposed, under a heading that says so.
fn pending_changes(decision: &agent_zero_contracts::AgentDecision, writes: bool, secrets: &[&str]) -> String {
    let mut h = String::from(if writes {
        "<h2>What approving writes</h2>\n"
    } else {
        "<h2>The change as proposed (approving does not write it)</h2>\n"
    });
    if decision.changes.is_empty() {
        h.push_str("<p class=\"muted\">No file: the decision proposes no change.</p>\n");
    }
    for change in &decision.changes {
        let _ = writeln!(
            h,
            "<h3><code>{}</code></h3>\n<p class=\"muted\">{}</p>\n<pre class=\"change\">{}</pre>",
            clean(&change.path, secrets),
            clean(&change.reason, secrets),
            clean(&change.content, secrets)
        );
    }
    h
}

/// The audit log, newest first.
pub(crate) fn audit(viewer: Viewer<'_>, entries: &[AuditEntry], next: Option<&str>, o: &RenderOptions<'_>) -> String {
    let secrets = o.secrets;
    let mut h = String::from("<h1>Audit log</h1>\n");
    if entries.is_empty() {
        h.push_str("<p class=\"muted\">Nothing recorded yet.</p>\n");
    } else {
        h.push_str("<table>\n<tr><th>When</th><th>Who</th><th>Action</th><th>Target</th><th>Answer</th></tr>\n");
        for e in entries {
            let detail = e.detail.as_deref().map(|d| format!(" · {}", clean(d, secrets))).unwrap_or_default();
            let field = e.field.as_deref().map(|f| format!(" ({})", clean(f, secrets))).unwrap_or_default();
            let _ = writeln!(
                h,
                "<tr><td><time>{}</time></td><td>{}</td><td>{}{detail}</td><td><code>{}</code></td><td>{} {}{field}</td></tr>",
                clean(&e.at, secrets),
                clean(&e.principal, secrets),
                clean(e.action.as_str(), secrets),
                clean(e.target.as_deref().unwrap_or("—"), secrets),
                e.status,
                clean(&e.outcome, secrets),
            );
        }
        h.push_str("</table>\n");
    }
    if let Some(next) = next {
        let _ = writeln!(
            h,
            "<p><a href=\"{}/dashboard/audit?cursor={}\">Older</a></p>",
            clean(o.base_path, &[]),
            clean(&agent_zero_contracts::encode_component(next), &[])
        );
    }
    shell("Audit log · Agent Zero Edge", Some(viewer), &h, o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `href` and form `action` of `html`.
    fn links(html: &str) -> Vec<&str> {
        ["href=\"", "action=\""]
            .iter()
            .flat_map(|attr| html.split(attr).skip(1).map(|rest| rest.split('"').next().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn every_link_honours_the_base_path_and_secrets_stay_out() {
        let o = RenderOptions { base_path: "/az", secrets: &["s3cr3t"], ..RenderOptions::default() };
        let viewer = Viewer { name: "github:octocat", csrf: "token" };
        let counters = Counters::default();
        let counted = Counted { repository: Some("o/r"), counters: Some(counters) };
        let pages = [
            sign_in(Some("no s3cr3t here"), &o),
            error(StatusCode::NOT_FOUND, "task `s3cr3t` does not exist", Some(viewer), &o),
            task_list(viewer, &[], Some("o/r"), Some(TaskState::NeedsHuman), Some("c 1"), &[], counted, &o),
            audit(viewer, &[], Some("c/2"), &o),
        ];
        for html in &pages {
            assert!(html.starts_with("<!doctype html>") && html.contains("name=\"viewport\""), "{html}");
            assert!(!html.contains("s3cr3t") && !html.contains("<script"), "{html}");
            let links = links(html);
            assert!(links.len() >= 2, "{html}");
            for link in links {
                assert!(link.starts_with("/az/"), "{link} ignores the base path: {html}");
            }
        }
        assert!(pages[2].contains("href=\"/az/dashboard?cursor=c%201&amp;repository=o%2Fr&amp;state=needs-human\""));
        assert!(pages[1].contains("Signed in as <strong>github:octocat</strong>"), "{}", pages[1]);
        assert!(pages[2].contains("href=\"/az/dashboard?state=needs-human&amp;repository=o%2Fr\">0</a>"));
    }

    /// A task waiting at `stop` (reached from `from`), its decision writing `calc.py`.
    fn waiting(from: TaskState, write: Option<agent_zero_engine::WriteOutcome>) -> Resident {
        let decision: agent_zero_contracts::AgentDecision = serde_json::from_value(serde_json::json!({
            "finding": {
                "title": "t", "explanation": "e", "severity": "low", "confidence": 0.9, "valid": true,
                "evidence": [], "files": ["calc.py"], "changeRisk": "mechanical"
            },
            "plan": ["p"],
            "changes": [{ "path": "calc.py", "content": "x = 1\n", "reason": "r" }],
        }))
        .expect("a decision");
        let mut r = Resident {
            stimulus: Some(Box::new(Stimulus {
                task_id: "t-1".into(),
                repository: "o/r".into(),
                trigger: agent_zero_contracts::Trigger::Issue,
                mode: agent_zero_contracts::RunMode::Fix,
                source: None,
                input: agent_zero_engine::TaskInput::default(),
                policy: agent_zero_agent::Policy::default(),
            })),
            state: TaskState::NeedsHuman,
            path: vec![from, TaskState::NeedsHuman],
            ..Resident::default()
        };
        r.attempt.decision = Some(decision);
        r.attempt.write = write;
        r
    }

    #[test]
    fn a_waiting_task_says_why_and_what_approving_does_before_the_buttons() {
        let o = RenderOptions::default();
        let offer = Offer { viewer: Viewer { name: "github:octocat", csrf: "token" }, may_approve: true, notice: None };
        let refusal = agent_zero_contracts::Refusal { code: "high-impact-change".into(), message: "m".into() };
        let writes = task(
            &waiting(TaskState::Planning, Some(agent_zero_engine::WriteOutcome::NeedsHuman { refusal })),
            None,
            offer,
            0,
            &o,
        );
        for text in [
            "Why it waits",
            "<code>high-impact-change</code>",
            "Approving writes the change below",
            "What approving writes",
        ] {
            assert!(writes.contains(text), "{text}: {writes}");
        }
        let accepts = task(&waiting(TaskState::Validating, None), None, offer, 0, &o);
        for text in
            ["<code>finding-inconclusive</code>", "Approving accepts this conclusion", "approving does not write it"]
        {
            assert!(accepts.contains(text), "{text}: {accepts}");
        }
        assert!(!accepts.contains("What approving writes"), "{accepts}");
        let retries = task(&waiting(TaskState::Verifying, None), None, offer, 0, &o);
        assert!(
            retries.contains("<code>repairs-exhausted</code>") && retries.contains("one more attempt"),
            "{retries}"
        );
        for html in [&writes, &accepts, &retries] {
            assert!(html.find("Why it waits") < html.find("value=\"approve\""), "{html}");
        }
    }

    #[test]
    fn a_task_names_its_forge_and_links_its_issue_there_over_https_only() {
        let o = RenderOptions { secrets: &["s3cr3t"], ..RenderOptions::default() };
        let mut resident = waiting(TaskState::Planning, None);
        let stimulus = resident.stimulus.as_mut().expect("a stimulus");
        stimulus.input.forge = agent_zero_contracts::ForgeKind::GitLab;
        let issue = |url: &str| agent_zero_contracts::IssueRef {
            owner: "acme/tools".into(),
            repo: "widgets".into(),
            number: 7,
            title: agent_zero_contracts::UntrustedText::capped("<b>x</b>", 100),
            url: Some(url.into()),
        };
        stimulus.input.issue = Some(issue("https://gitlab.example.com/acme/tools/widgets/-/issues/7"));
        let stimulus = resident.stimulus.as_deref().expect("a stimulus");
        let html = task_facts(&resident, stimulus, &o);
        assert!(html.contains("<dt>Forge</dt><dd>GitLab</dd>"), "{html}");
        assert!(
            html.contains("<a href=\"https://gitlab.example.com/acme/tools/widgets/-/issues/7\">#7</a> &lt;b&gt;x"),
            "{html}"
        );
        for url in ["javascript:alert(1)", "http://gitlab.example.com/i/7"] {
            resident.stimulus.as_mut().expect("a stimulus").input.issue = Some(issue(url));
            let html = task_facts(&resident, resident.stimulus.as_deref().expect("a stimulus"), &o);
            assert!(!html.contains("<a ") && html.contains("<dd>#7 "), "{html}");
        }
        // A review names its change request as the forge does; GitHub, the
        // default, is not named.
        let stimulus = resident.stimulus.as_mut().expect("a stimulus");
        stimulus.input.issue = None;
        stimulus.input.pull_request = Some(agent_zero_contracts::PullRequestRef {
            owner: "acme/tools".into(),
            repo: "widgets".into(),
            number: 9,
            head_sha: "0123456789abcdef0123456789abcdef01234567".into(),
            base_sha: None,
        });
        let html = task_facts(&resident, resident.stimulus.as_deref().expect("a stimulus"), &o);
        assert!(html.contains("<dt>Merge request</dt><dd>#9 at <code>0123456789abcdef"), "{html}");
        resident.stimulus.as_mut().expect("a stimulus").input.forge = agent_zero_contracts::ForgeKind::GitHub;
        let html = task_facts(&resident, resident.stimulus.as_deref().expect("a stimulus"), &o);
        assert!(!html.contains("Forge") && html.contains("<dt>Pull request</dt>"), "{html}");
    }

    #[test]
    fn the_task_list_shows_its_counters_and_reloads_itself() {
        use crate::task_counters::Count;
        let o = RenderOptions::default();
        let viewer = Viewer { name: "github:octocat", csrf: "token" };
        let counters = Counters {
            running: Count { n: 3, more: false },
            queued: Count { n: 1000, more: true },
            waiting: Count { n: 2, more: false },
            failed_last_day: Count { n: 1, more: false },
        };
        let html =
            task_list(viewer, &[], None, None, None, &[], Counted { repository: None, counters: Some(counters) }, &o);
        for cell in [
            "<td id=\"count-running\">3</td>",
            "<td id=\"count-queued\"><a href=\"/dashboard?state=queued\">1000+</a></td>",
            "<td id=\"count-waiting\"><a href=\"/dashboard?state=needs-human\">2</a></td>",
            "<td id=\"count-failed\"><a href=\"/dashboard?state=failed\">1</a></td>",
            "Tasks in every repository",
            "<meta http-equiv=\"refresh\" content=\"300\">",
        ] {
            assert!(html.contains(cell), "{cell}: {html}");
        }
        assert!(html.contains("form-action 'self'") && !html.contains("<script"), "{html}");
        let uncounted = task_list(viewer, &[], None, None, None, &[], Counted { repository: None, counters: None }, &o);
        assert!(uncounted.contains("filter by one repository") && !uncounted.contains("count-running"), "{uncounted}");
    }
}
