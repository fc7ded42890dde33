//! Property: for arbitrary bundles and limits, rendering never panics,
//! GitHub-bound output never exceeds the limit and keeps its marker, and no
//! output carries NUL, bidi controls or a given secret.

use agent_zero_contracts::{
    ChangeRisk, CheckResult, Coverage, EvidenceBundle, Finding, IssueRef, ModelFinding, NetworkPolicy, OmittedItem,
    Refusal, RunMode, RunnerDescription, Severity, TaskEvent, TaskState, TerminalState, Trigger, UntrustedText, Usage,
    Verdict,
};
use agent_zero_evidence::{
    ISSUE_VALIDATION_MARKER, PULL_REQUEST_MARKER, RenderOptions, TITLE_MAX_BYTES, outcome, render_check_run,
    render_evidence_html, render_issue_comment, render_json, render_markdown_document, render_pull_request_body,
};
use proptest::prelude::*;

const SECRET: &str = "s3cr3t-v4lue";

/// Text built from the characters that matter: backticks, markup, mentions,
/// references, controls, bidi, multibyte, line breaks, and the secret.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("`".to_owned()),
        Just("```".to_owned()),
        Just("<".to_owned()),
        Just(">".to_owned()),
        Just("&".to_owned()),
        Just("@user".to_owned()),
        Just("#12".to_owned()),
        Just("GH-3".to_owned()),
        Just("\n".to_owned()),
        Just("\r".to_owned()),
        Just("\0".to_owned()),
        Just("\u{202E}".to_owned()),
        Just("é".to_owned()),
        Just("🦀".to_owned()),
        Just("|".to_owned()),
        Just("# ".to_owned()),
        Just("<details>".to_owned()),
        Just("</details>".to_owned()),
        Just(SECRET.to_owned()),
        Just("word ".to_owned()),
        Just("1. ".to_owned()),
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

fn long_text() -> impl Strategy<Value = String> {
    // Up to ~20 KB: past every block cap and, summed over fields, past GitHub's limit.
    (text(), 0usize..2_000).prop_map(|(t, n)| t.repeat(n.min(if t.is_empty() { 0 } else { 20_000 / t.len() })))
}

fn check() -> impl Strategy<Value = CheckResult> {
    (prop::collection::vec(text(), 0..4), any::<i32>(), long_text(), text(), any::<u64>(), any::<u64>(), any::<bool>())
        .prop_map(|(command, exit_code, stdout, stderr, duration_ms, truncated_bytes, timed_out)| CheckResult {
            command,
            exit_code,
            stdout,
            stderr,
            duration_ms,
            truncated_bytes,
            timed_out,
        })
}

fn finding() -> impl Strategy<Value = Finding> {
    (text(), long_text(), any::<f64>(), prop::collection::vec(text(), 0..3), prop::collection::vec(text(), 0..10))
        .prop_map(|(title, explanation, confidence, evidence, reasons)| Finding {
            id: "f".into(),
            claim: ModelFinding {
                title,
                explanation,
                severity: Severity::High,
                confidence,
                valid: true,
                evidence,
                files: vec!["a.rs".into()],
                change_risk: ChangeRisk::Behavioral,
            },
            verdict: Verdict::Rejected,
            rejection_reasons: reasons,
            quote_check: None,
        })
}

prop_compose! {
    fn bundle()(
        state in prop::sample::select(TerminalState::ALL),
        verdict in prop::sample::select(Verdict::ALL),
        verified in any::<bool>(),
        strings in prop::collection::vec(text(), 8),
        finding in prop::option::of(finding()),
        checks in prop::collection::vec(check(), 0..6),
        files in prop::collection::vec(text(), 0..10),
        omitted in prop::collection::vec((text(), text(), text()), 0..60),
        events in prop::collection::vec(text(), 0..20),
        refused in any::<bool>(),
        cost in prop::option::of(any::<f64>()),
        summary in long_text(),
    ) -> EvidenceBundle {
        EvidenceBundle {
            task_id: strings[0].clone(),
            repository: strings[1].clone(),
            state,
            verdict,
            verified,
            mode: RunMode::Fix,
            trigger: Trigger::Issue,
            source: Some(strings[2].clone()),
            issue: Some(IssueRef {
                owner: strings[3].clone(),
                repo: strings[4].clone(),
                number: 7,
                title: UntrustedText::capped(&strings[5], 64),
                url: Some(strings[6].clone()),
            }),
            pull_request: None,
            runner: RunnerDescription { provider: strings[7].clone(), isolated: false, writable: true, network: NetworkPolicy::Full },
            finding,
            plan: files.clone(),
            acceptance_criteria: files.clone(),
            changed_files: files,
            checks,
            attempts: 2,
            transitions: events
                .into_iter()
                .map(|message| TaskEvent { state: TaskState::Executing, message, timestamp: "t".into(), attempt: Some(1) })
                .collect(),
            usage: Usage { input_tokens: 1, output_tokens: 2, latency_ms: 3, cost_usd: cost },
            refusal: refused.then(|| Refusal { code: strings[0].clone(), message: strings[1].clone() }),
            coverage: Coverage {
                omitted: omitted.into_iter().map(|(kind, subject, reason)| OmittedItem { kind, subject, reason }).collect(),
            },
            summary,
            review: None,
        tree: Vec::new(),
        cost: None,
        witness: None,
        }
    }
}

fn clean(what: &str, out: &str) -> Result<(), TestCaseError> {
    prop_assert!(!out.contains('\0'), "{} has NUL", what);
    prop_assert!(!out.contains('\u{202E}'), "{} has a bidi control", what);
    prop_assert!(!out.contains(SECRET), "{} has the secret", what);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn rendering_holds_its_limits(b in bundle(), max in prop_oneof![Just(65_535usize), 200usize..20_000], block in 1usize..6_000) {
        let opts = RenderOptions {
            secrets: &[SECRET],
            evidence_url: Some("https://x.test/t/1"),
            max_bytes: max,
            max_block_bytes: block,
            max_page_block_bytes: block * 4,
            ..RenderOptions::default()
        };
        let check = render_check_run(&b, &opts);
        prop_assert_eq!(check.conclusion, outcome(&b).github_conclusion());
        prop_assert!(check.title.len() <= TITLE_MAX_BYTES);
        prop_assert!(!check.title.contains('\n'));
        let comment = render_issue_comment(&b, &opts);
        let pr = render_pull_request_body(&b, &opts);
        for (what, out) in [("summary", &check.summary), ("comment", &comment), ("pr", &pr)] {
            prop_assert!(out.len() <= max, "{} is {} bytes > {}", what, out.len(), max);
            clean(what, out)?;
        }
        prop_assert!(comment.starts_with(ISSUE_VALIDATION_MARKER));
        prop_assert!(pr.starts_with(PULL_REQUEST_MARKER));
        prop_assert_eq!(comment.matches(ISSUE_VALIDATION_MARKER).count(), 1);
        clean("title", &check.title)?;
        clean("document", &render_markdown_document(&b, &opts))?;
        let html = render_evidence_html(&b, &opts);
        clean("html", &html)?;
        prop_assert!(!html.contains("<script") && !html.contains("\n<details>\n"), "untrusted markup in html");
        prop_assert!(!render_json(&b, &opts).contains(SECRET));
    }
}
