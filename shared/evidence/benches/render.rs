//! Renders a bundle with 1,000 events and 50 checks with every renderer and
//! prints the median of many runs. `cargo bench -p agent-zero-evidence`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use agent_zero_contracts::{
    ChangeRisk, CheckResult, Coverage, EvidenceBundle, Finding, ModelFinding, NetworkPolicy, RunMode,
    RunnerDescription, Severity, TaskEvent, TaskState, TerminalState, Trigger, Usage, Verdict, rfc3339,
};
use agent_zero_evidence::{
    RenderOptions, TaskListItem, render_check_run, render_evidence_html, render_issue_comment, render_json,
    render_markdown_document, render_pull_request_body, render_task_list_html,
};

fn bundle() -> EvidenceBundle {
    let output = "test module::case ... ok @someone #12 <tag> `tick`\n".repeat(60);
    let checks = (0..50)
        .map(|i| CheckResult {
            command: vec!["cargo".into(), "test".into(), format!("--package=crate-{i}")],
            exit_code: if i % 10 == 9 { 101 } else { 0 },
            stdout: output.clone(),
            stderr: output.clone(),
            duration_ms: 1_000 + i * 37,
            truncated_bytes: if i % 7 == 0 { 4_096 } else { 0 },
            timed_out: false,
        })
        .collect();
    let transitions = (0..1_000u64)
        .map(|i| TaskEvent {
            state: TaskState::ALL[(i % 8) as usize],
            message: format!("step {i}: ran a bounded action for @user on #{i}"),
            timestamp: rfc3339(1_795_983_300_000 + i * 1_000),
            attempt: Some((i / 400) as u32 + 1),
        })
        .collect();
    EvidenceBundle {
        task_id: "bench-task".into(),
        repository: "acme/widgets".into(),
        state: TerminalState::Completed,
        verdict: Verdict::Accepted,
        verified: false,
        mode: RunMode::Fix,
        trigger: Trigger::Issue,
        source: Some("github:bench".into()),
        issue: None,
        pull_request: None,
        runner: RunnerDescription {
            provider: "custom".into(),
            isolated: true,
            writable: true,
            network: NetworkPolicy::Restricted,
        },
        finding: Some(Finding {
            id: "f".into(),
            claim: ModelFinding {
                title: "A finding".into(),
                explanation: "Because.\n".repeat(50),
                severity: Severity::Medium,
                confidence: 0.9,
                valid: true,
                evidence: vec!["quoted line\n".repeat(20)],
                files: vec!["src/lib.rs".into()],
                change_risk: ChangeRisk::Mechanical,
            },
            verdict: Verdict::Accepted,
            rejection_reasons: vec![],
            quote_check: None,
        }),
        plan: (0..10).map(|i| format!("Step {i}")).collect(),
        acceptance_criteria: vec!["Tests pass.".into()],
        changed_files: (0..10).map(|i| format!("src/file_{i}.rs")).collect(),
        checks,
        attempts: 3,
        transitions,
        usage: Usage { input_tokens: 100_000, output_tokens: 10_000, latency_ms: 60_000, cost_usd: Some(1.25) },
        refusal: None,
        coverage: Coverage::default(),
        summary: "Summary of the run.".into(),
        review: None,
        tree: Vec::new(),
        cost: None,
        witness: None,
    }
}

fn median(runs: usize, mut f: impl FnMut() -> usize) -> (Duration, usize) {
    let mut times = Vec::with_capacity(runs);
    let mut bytes = 0;
    for _ in 0..runs {
        let start = Instant::now();
        bytes = black_box(f());
        times.push(start.elapsed());
    }
    times.sort();
    (times[runs / 2], bytes)
}

fn main() {
    let b = bundle();
    let secrets: &[&str] = &["ghp_notarealtoken0000000000"];
    let opts = RenderOptions {
        secrets,
        evidence_url: Some("https://example.test/tasks/bench-task"),
        ..RenderOptions::default()
    };
    let items: Vec<TaskListItem> = (0..50).map(|i| TaskListItem::from_bundle(&b, &rfc3339(i * 1_000))).collect();
    let runs = 101;
    println!("bundle: {} events, {} checks; median of {runs} runs", b.transitions.len(), b.checks.len());
    type Case<'a> = (&'a str, Box<dyn Fn() -> usize + 'a>);
    let cases: Vec<Case<'_>> = vec![
        ("check run", Box::new(|| render_check_run(&b, &opts).summary.len())),
        ("issue comment", Box::new(|| render_issue_comment(&b, &opts).len())),
        ("pull request body", Box::new(|| render_pull_request_body(&b, &opts).len())),
        ("markdown document", Box::new(|| render_markdown_document(&b, &opts).len())),
        ("evidence html", Box::new(|| render_evidence_html(&b, &opts).len())),
        ("json", Box::new(|| render_json(&b, &opts).len())),
        ("task list html (50)", Box::new(|| render_task_list_html(&items, Some("next"), &opts).len())),
    ];
    for (name, f) in cases {
        let (t, bytes) = median(runs, f);
        println!("{name:<22} {:>10.3} ms  {bytes:>9} bytes", t.as_secs_f64() * 1_000.0);
    }
}
