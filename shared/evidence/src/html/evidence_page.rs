//! The evidence page of one task (`GET /tasks/{id}`).

use std::fmt::Write as _;

use agent_zero_contracts::{EvidenceBundle, TaskEvent};

use crate::RenderOptions;
use crate::coverage::gaps;
use crate::format::{argv, confidence, count, duration, thousands, usd};
use crate::html::layout::{Nav, page};
use agent_zero_contracts::encode_component;

use crate::html::{escape, pre, prose, text};
use crate::outcome::{change_status, outcome};
use crate::text::{Ctx, Keep, line};

const PROSE_MAX: usize = 2_000;

/// Renders the full evidence of one task as an HTML page.
pub fn render_evidence_html(bundle: &EvidenceBundle, options: &RenderOptions<'_>) -> String {
    let ctx = Ctx::new(options);
    let b = bundle;
    let o = outcome(b);
    let max = options.max_page_block_bytes;
    let mut h = String::new();
    let _ = write!(
        h,
        "<h1>Task <code>{}</code></h1>\n<p><span class=\"badge {}\">{}</span></p>\n",
        text(&ctx, &b.task_id),
        o.github_conclusion().as_str(),
        o.headline()
    );
    facts(&ctx, b, &mut h);
    if !b.summary.trim().is_empty() {
        let _ = write!(h, "<h2>Summary</h2>\n<p class=\"untrusted\">{}</p>\n", prose(&ctx, &b.summary, max));
    }
    finding(&ctx, b, max, &mut h);
    if let Some(r) = &b.refusal {
        let _ = write!(
            h,
            "<h2>{}</h2>\n<p><code>{}</code>: {}</p>\n",
            crate::markdown::sections::refusal_heading(b),
            text(&ctx, &r.code),
            prose(&ctx, &r.message, PROSE_MAX)
        );
    }
    h.push_str("<h2>Plan</h2>\n");
    list(&mut h, "ol", &b.plan, |s| prose(&ctx, s, PROSE_MAX), "No plan was recorded.");
    h.push_str("<h2>Acceptance criteria</h2>\n");
    list(&mut h, "ul", &b.acceptance_criteria, |s| prose(&ctx, s, PROSE_MAX), "None were recorded.");
    h.push_str("<h2>Changed files</h2>\n");
    list(&mut h, "ul", &b.changed_files, |p| format!("<code>{}</code>", text(&ctx, p)), "No file was changed.");
    checks(&ctx, b, max, &mut h);
    coverage(&ctx, b, &mut h);
    runner_and_usage(&ctx, b, &mut h);
    timeline(&ctx, &b.transitions, &mut h);
    let id = encode_component(&line(&ctx, &b.task_id));
    let base = escape(options.base_path);
    let _ = writeln!(
        h,
        "<footer>Also as <a href=\"{base}/api/v1/tasks/{id}/evidence.json\">JSON</a> · \
<a href=\"{base}/api/v1/tasks/{id}/evidence.md\">Markdown</a></footer>"
    );
    page(&ctx, &format!("{} · task {}", o.headline(), line(&ctx, &b.task_id)), Nav::Public, &h)
}

fn facts(ctx: &Ctx<'_>, b: &EvidenceBundle, h: &mut String) {
    h.push_str("<dl>\n");
    let mut fact = |name: &str, value: String| {
        let _ = writeln!(h, "<dt>{name}</dt><dd>{value}</dd>");
    };
    fact("Change", escape(&change_status(b)));
    fact("Verdict", b.verdict.to_string());
    fact("State", b.state.to_string());
    fact("Mode", b.mode.to_string());
    fact("Trigger", b.trigger.to_string());
    fact("Attempts", b.attempts.to_string());
    fact("Repository", format!("<code>{}</code>", text(ctx, &b.repository)));
    if let Some(source) = &b.source {
        fact("Source", format!("<code>{}</code>", text(ctx, source)));
    }
    if let Some(i) = &b.issue {
        let label = format!("{}/{}#{}", text(ctx, &i.owner), text(ctx, &i.repo), i.number);
        let label = match i.url.as_deref().filter(|u| u.starts_with("https://")) {
            Some(url) => format!("<a href=\"{}\">{label}</a>", text(ctx, url)),
            None => label,
        };
        fact("Issue", format!("{label} {}", text(ctx, &i.title.text)));
    }
    if let Some(pr) = &b.pull_request {
        fact(
            "Pull request",
            format!(
                "{}/{}#{} at <code>{}</code>",
                text(ctx, &pr.owner),
                text(ctx, &pr.repo),
                pr.number,
                text(ctx, &pr.head_sha)
            ),
        );
    }
    if let Some(url) = ctx.opts.receipt_url {
        fact("Receipt", format!("<a href=\"{}\">signed receipt</a> (<code>agent-zero verify</code>)", text(ctx, url)));
    }
    h.push_str("</dl>\n");
}

fn list<T>(h: &mut String, tag: &str, items: &[T], item: impl Fn(&T) -> String, empty: &str) {
    if items.is_empty() {
        let _ = writeln!(h, "<p class=\"muted\">{empty}</p>");
        return;
    }
    let _ = writeln!(h, "<{tag}>");
    for i in items {
        let _ = writeln!(h, "<li>{}</li>", item(i));
    }
    let _ = writeln!(h, "</{tag}>");
}

fn finding(ctx: &Ctx<'_>, b: &EvidenceBundle, max: usize, h: &mut String) {
    h.push_str("<h2>Finding</h2>\n");
    let Some(f) = &b.finding else {
        h.push_str("<p class=\"muted\">No finding was recorded.</p>\n");
        return;
    };
    let c = &f.claim;
    let _ = write!(
        h,
        "<p><strong class=\"untrusted\">{}</strong></p>\n<p>Severity {} · confidence {} · risk {} · model's own judgement: {} · verdict {}</p>\n",
        text(ctx, &c.title),
        c.severity,
        confidence(c.confidence),
        c.change_risk,
        if c.valid { "valid" } else { "not valid" },
        f.verdict
    );
    list(h, "ul", &c.files, |p| format!("<code>{}</code>", text(ctx, p)), "No file was named.");
    let _ = write!(h, "<h3>Explanation (untrusted model output)</h3>\n{}\n", pre(ctx, &c.explanation, max, Keep::Head));
    for (i, quote) in c.evidence.iter().enumerate() {
        let _ = write!(
            h,
            "<h3>Quoted evidence {} of {}</h3>\n{}\n",
            i + 1,
            c.evidence.len(),
            pre(ctx, quote, max, Keep::Head)
        );
    }
    if c.evidence.is_empty() {
        h.push_str("<p class=\"muted\">No evidence was quoted.</p>\n");
    }
    if let Some(q) = &f.quote_check {
        let _ = writeln!(
            h,
            "<h3>Quote check (<code>validation.quotes: {}</code>): {} of {} found</h3>",
            q.rule,
            q.found.len(),
            q.found.len() + q.not_found.len()
        );
        list(h, "ul", &q.not_found, |q| format!("Not found: <code>{}</code>", text(ctx, q)), "");
    }
    if !f.rejection_reasons.is_empty() {
        h.push_str("<h3>Why it was not accepted</h3>\n");
        list(h, "ul", &f.rejection_reasons, |r| prose(ctx, r, PROSE_MAX), "");
    }
    if let Some(w) = b.witness.as_ref().filter(|w| w.finding_id == f.id) {
        witness(ctx, w, max, h);
    }
}

/// What the claim's witness showed at the head and the base (docs/witness.md).
fn witness(ctx: &Ctx<'_>, w: &agent_zero_contracts::WitnessRun, max: usize, h: &mut String) {
    let (class, label) = if w.reproduced() { ("success", "reproduced") } else { ("failure", "not reproduced") };
    let _ = writeln!(
        h,
        "<h3>Witness <span class=\"badge {class}\">{label}</span> <code>{}</code></h3>\n<p>{}.</p>",
        w.outcome,
        prose(ctx, &crate::markdown::sections::sentence(&w.reason), PROSE_MAX)
    );
    if let Some(path) = &w.path {
        let _ = writeln!(
            h,
            "<p>The model's test <code>{}</code> (untrusted), run with the repository's <code>review.witness.command</code> in the sandbox without credentials; never pushed.</p>",
            text(ctx, path)
        );
    }
    if w.withheld && w.of_a_fix() {
        h.push_str("<p class=\"warning\">Not completed: <code>review.requireWitness</code> is on and this bug was not reproduced, so a person decides.</p>\n");
    } else if w.withheld {
        h.push_str("<p class=\"warning\">Kept off the diff's lines: <code>review.requireWitness</code> is on and this bug claim was not reproduced.</p>\n");
    }
    for (at, _, run) in crate::markdown::sections::witness_runs(w) {
        let Some(run) = run else { continue };
        let output = format!("{}{}", run.stdout, run.stderr);
        let _ = write!(
            h,
            "<details><summary>{at}: <code>{}</code> exited {}{} in {}</summary>\n{}\n</details>\n",
            text(ctx, &argv(&run.command)),
            run.exit_code,
            if run.timed_out { " (timed out)" } else { "" },
            duration(run.duration_ms),
            pre(ctx, &output, max, Keep::Tail)
        );
    }
}

fn checks(ctx: &Ctx<'_>, b: &EvidenceBundle, max: usize, h: &mut String) {
    if b.checks.is_empty() {
        h.push_str("<h2>Checks</h2>\n<p class=\"warning\">No check ran.</p>\n");
        return;
    }
    let passed = b.checks.iter().filter(|c| c.passed()).count();
    let _ = write!(
        h,
        "<h2>Checks ({passed} of {} passed)</h2>\n<div class=\"scroll\"><table class=\"stack\">\n\
<thead><tr><th>Result</th><th>Command</th><th class=\"num\">Exit</th><th class=\"num\">Duration</th></tr></thead>\n<tbody>\n",
        b.checks.len()
    );
    for c in &b.checks {
        let (class, result) = match (c.timed_out, c.passed()) {
            (true, _) => ("failure", "timed out"),
            (false, true) => ("success", "passed"),
            (false, false) => ("failure", "failed"),
        };
        let _ = writeln!(
            h,
            "<tr><td><span class=\"badge {class}\">{result}</span></td><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            text(ctx, &argv(&c.command)),
            c.exit_code,
            duration(c.duration_ms)
        );
    }
    h.push_str("</tbody>\n</table></div>\n");
    for c in &b.checks {
        let open = if c.passed() { "" } else { " open" };
        let _ = write!(
            h,
            "<details{open}><summary>Output of <code>{}</code> (exit {})</summary>\n<p>stdout</p>\n{}\n<p>stderr</p>\n{}\n",
            text(ctx, &argv(&c.command)),
            c.exit_code,
            pre(ctx, &c.stdout, max, Keep::Tail),
            pre(ctx, &c.stderr, max, Keep::Tail)
        );
        if c.truncated_bytes > 0 {
            let _ = writeln!(
                h,
                "<p class=\"warning\">The runner dropped {} bytes of this output at runner.maxOutputBytes.</p>",
                thousands(c.truncated_bytes)
            );
        }
        h.push_str("</details>\n");
    }
}

fn coverage(ctx: &Ctx<'_>, b: &EvidenceBundle, h: &mut String) {
    h.push_str("<h2>Not covered</h2>\n");
    let gaps = gaps(b);
    list(
        h,
        "ul",
        &gaps,
        |g| {
            let subject =
                if g.subject.is_empty() { String::new() } else { format!(" <code>{}</code>", text(ctx, &g.subject)) };
            format!("<strong>{}</strong>{subject}: {}", text(ctx, &g.kind), prose(ctx, &g.reason, PROSE_MAX))
        },
        "Nothing is recorded as left out.",
    );
}

fn runner_and_usage(ctx: &Ctx<'_>, b: &EvidenceBundle, h: &mut String) {
    let r = &b.runner;
    let yes_no = |v: bool| if v { "yes" } else { "no" };
    let _ = writeln!(
        h,
        "<h2>Runner</h2>\n<p>Provider <code>{}</code> · isolated: {} · writable: {} · network: {}</p>",
        text(ctx, &r.provider),
        yes_no(r.isolated),
        yes_no(r.writable),
        r.network
    );
    if r.provider == "none" {
        h.push_str("<p>No sandbox was leased.</p>\n");
    } else if !r.isolated {
        h.push_str("<p class=\"warning\">Commands did not run in an isolated sandbox.</p>\n");
    }
    let u = &b.usage;
    let cost = u
        .cost_usd
        .map_or_else(|| "cost not priced (no model prices configured)".to_owned(), |c| format!("cost {}", usd(c)));
    let _ = writeln!(
        h,
        "<h2>Usage</h2>\n<p>{} input tokens · {} output tokens · model time {} · {cost}</p>",
        thousands(u.input_tokens),
        thousands(u.output_tokens),
        duration(u.latency_ms)
    );
    // Numbers only: nothing recorded from outside reaches these lines.
    if let Some(c) = &b.cost {
        let _ = writeln!(
            h,
            "<p id=\"run-cost\">Run cost: {}</p>\n<p class=\"muted\">{}</p>",
            crate::cost::figures(c),
            crate::cost::COVERED
        );
    }
}

pub(super) fn timeline(ctx: &Ctx<'_>, events: &[TaskEvent], h: &mut String) {
    let _ = writeln!(h, "<h2>Timeline ({})</h2>", count(events.len(), "event", "events"));
    if events.is_empty() {
        h.push_str("<p class=\"muted\">No transition was recorded.</p>\n");
        return;
    }
    h.push_str(
        "<div class=\"scroll\"><table class=\"stack\">\n<thead><tr><th class=\"num\">#</th><th>State</th><th>Time</th><th class=\"num\">Attempt</th><th>Message</th></tr></thead>\n<tbody>\n",
    );
    for (i, e) in events.iter().enumerate() {
        let _ = writeln!(
            h,
            "<tr><td class=\"num\">{}</td><td>{}</td><td><time>{}</time></td><td class=\"num\">{}</td><td>{}</td></tr>",
            i + 1,
            e.state,
            text(ctx, &e.timestamp),
            e.attempt.map(|a| a.to_string()).unwrap_or_default(),
            prose(ctx, &e.message, 1_000)
        );
    }
    h.push_str("</tbody>\n</table></div>\n");
}
