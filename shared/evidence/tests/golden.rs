//! Golden files: every renderer over every bundle in `common`. Run with
//! `BLESS=1` to rewrite them; otherwise a mismatch fails with a diff.
//! Review a golden diff like code: the rendered report is the product.

mod common;

use std::path::{Path, PathBuf};

use agent_zero_contracts::{RunMode, TaskState, Trigger, Verdict};
use agent_zero_evidence::{
    RenderOptions, TaskListItem, render_check_run, render_evidence_html, render_issue_comment, render_json,
    render_markdown_document, render_pull_request_body, render_review, render_task_list_html,
};

const SECRETS: &[&str] = &[common::SECRET];

fn options() -> RenderOptions<'static> {
    RenderOptions {
        secrets: SECRETS,
        evidence_url: Some("https://agent-zero.example.workers.dev/tasks/task-0001"),
        ..RenderOptions::default()
    }
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares (or with `BLESS=1` writes) one golden; returns a failure message.
fn compare(path: &Path, actual: &str) -> Option<String> {
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, actual).unwrap();
        return None;
    }
    let expected = match std::fs::read_to_string(path) {
        Ok(e) => e,
        Err(e) => return Some(format!("{}: {e} (run with BLESS=1 to create it)", path.display())),
    };
    (expected != actual).then(|| format!("{}:\n{}", path.display(), diff(&expected, actual)))
}

/// The first differing line with three lines of context on each side.
fn diff(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let first = e.iter().zip(&a).position(|(x, y)| x != y).unwrap_or(e.len().min(a.len()));
    let from = first.saturating_sub(3);
    let mut out = format!("first difference at line {} ({} vs {} lines)\n", first + 1, e.len(), a.len());
    for (i, line) in e.iter().enumerate().skip(from).take(7) {
        out.push_str(&format!("- {:>5} {line}\n", i + 1));
    }
    for (i, line) in a.iter().enumerate().skip(from).take(7) {
        out.push_str(&format!("+ {:>5} {line}\n", i + 1));
    }
    out
}

#[test]
fn every_renderer_matches_its_golden() {
    let opts = options();
    let mut failures = Vec::new();
    for (name, bundle) in common::all() {
        let dir = golden_dir().join(name);
        let check = render_check_run(&bundle, &opts);
        let check_text =
            format!("title: {}\nconclusion: {}\n\n{}", check.title, check.conclusion.as_str(), check.summary);
        let mut outputs = vec![
            ("check-run.md", check_text),
            ("issue-comment.md", render_issue_comment(&bundle, &opts)),
            ("pull-request.md", render_pull_request_body(&bundle, &opts)),
        ];
        // The huge bundle's JSON, full document and page are hundreds of KiB
        // of repeated output; their cuts are asserted in tests/safety.rs.
        if name != "huge" {
            outputs.push(("bundle.json", render_json(&bundle, &opts)));
            outputs.push(("document.md", render_markdown_document(&bundle, &opts)));
            outputs.push(("page.html", render_evidence_html(&bundle, &opts)));
        }
        if let Some(review) = render_review(&bundle, &opts) {
            let mut text = format!("{}\n", review.body);
            for c in &review.comments {
                let range = c.start_line.map(|s| format!("start_line: {s} (RIGHT)\n")).unwrap_or_default();
                let quote = c.quote.as_deref().map(|q| format!("quote: {q}\n")).unwrap_or_default();
                text.push_str(&format!(
                    "\n---- comment\npath: {}\n{range}line: {} (RIGHT)\n{quote}\n{}\n",
                    c.path, c.line, c.body
                ));
            }
            outputs.push(("review.md", text));
        }
        for (file, text) in outputs {
            failures.extend(compare(&dir.join(file), &text));
        }
    }
    let items = task_list_items();
    failures.extend(compare(
        &golden_dir().join("task-list.html"),
        &render_task_list_html(&items, Some("task-0011/next&page"), &opts),
    ));
    failures.extend(compare(&golden_dir().join("task-list-empty.html"), &render_task_list_html(&[], None, &opts)));
    assert!(failures.is_empty(), "{} golden(s) differ:\n\n{}", failures.len(), failures.join("\n"));
}

fn task_list_items() -> Vec<TaskListItem> {
    let mut items: Vec<TaskListItem> = common::all()
        .iter()
        .filter(|(name, _)| *name != "huge")
        .enumerate()
        .map(|(i, (_, b))| {
            TaskListItem::from_bundle(b, &agent_zero_contracts::rfc3339(1_795_983_400_000 + i as u64 * 60_000))
        })
        .collect();
    items.push(TaskListItem {
        id: "task-0012".into(),
        repository: "acme/widgets".into(),
        state: TaskState::Executing,
        trigger: Trigger::Proactive,
        mode: RunMode::Suggest,
        verdict: Some(Verdict::Accepted),
        verified: false,
        updated_at: "2026-11-29T20:40:00.000Z".into(),
        title: None,
    });
    items
}
