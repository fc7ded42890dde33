//! Evidence bundles shared by the golden, safety and property tests: each
//! verdict, each terminal state, refusals, repairs, failing checks, huge
//! output, hostile text and empty fields.

#![allow(dead_code, unreachable_pub)]

use agent_zero_contracts::{
    ChangeRisk, CheckResult, Coverage, DiffAnchor, EvidenceBundle, FileCoverage, FileReview, Finding, IssueRef,
    ModelFinding, NetworkPolicy, OmittedItem, PullRequestRef, Refusal, ReviewLedger, RunCost, RunMode,
    RunnerDescription, Severity, SkipReason, TaskEvent, TaskState, TerminalState, Trigger, UntrustedText, Usage,
    Verdict, WitnessOutcome, WitnessRun,
};

/// A secret that appears in some bundles and must never be rendered.
pub const SECRET: &str = "ghp_T0pS3cretTokenValue";

pub fn check(command: &[&str], exit_code: i32, stdout: &str, stderr: &str, duration_ms: u64) -> CheckResult {
    CheckResult {
        command: command.iter().map(|s| (*s).to_owned()).collect(),
        exit_code,
        stdout: stdout.into(),
        stderr: stderr.into(),
        duration_ms,
        truncated_bytes: 0,
        timed_out: false,
    }
}

pub fn event(state: TaskState, second: u64, message: &str, attempt: Option<u32>) -> TaskEvent {
    TaskEvent {
        state,
        message: message.into(),
        timestamp: agent_zero_contracts::rfc3339(1_795_983_300_000 + second * 1_000),
        attempt,
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

pub fn finding(verdict: Verdict, reasons: &[&str]) -> Finding {
    Finding {
        id: "f-1".into(),
        claim: ModelFinding {
            title: "Off-by-one in pagination cursor".into(),
            explanation: "`next_page` returns the last item of the current page again:\nthe cursor is inclusive."
                .into(),
            severity: Severity::Medium,
            confidence: 0.91,
            valid: true,
            evidence: strings(&["let start = cursor;\nitems[start..start + limit]"]),
            files: strings(&["src/page.rs"]),
            change_risk: ChangeRisk::Mechanical,
        },
        verdict,
        rejection_reasons: strings(reasons),
        quote_check: None,
    }
}

fn lifecycle(end: TaskState, message: &str) -> Vec<TaskEvent> {
    vec![
        event(TaskState::Queued, 0, "accepted delivery", None),
        event(TaskState::Discovering, 1, "loaded .agent-zero.yml", None),
        event(TaskState::Understanding, 3, "model decision received", Some(1)),
        event(TaskState::Validating, 4, "claim checked against 1 file", Some(1)),
        event(end, 9, message, Some(1)),
    ]
}

/// A verified issue-to-PR run: the baseline other bundles vary.
pub fn verified() -> EvidenceBundle {
    EvidenceBundle {
        task_id: "task-0001".into(),
        repository: "acme/widgets".into(),
        state: TerminalState::Completed,
        verdict: Verdict::Accepted,
        verified: true,
        mode: RunMode::Fix,
        trigger: Trigger::Issue,
        source: Some("github:72d3162e-cc78-11e3-81ab-4c9367dc0958".into()),
        issue: Some(IssueRef {
            owner: "acme".into(),
            repo: "widgets".into(),
            number: 42,
            title: UntrustedText::capped("Pagination repeats the last item", 256),
            url: Some("https://github.com/acme/widgets/issues/42".into()),
        }),
        pull_request: Some(PullRequestRef {
            owner: "acme".into(),
            repo: "widgets".into(),
            number: 43,
            head_sha: "9f2c1e7a5b3d4c6e8f0a1b2c3d4e5f6a7b8c9d0e".into(),
            base_sha: None,
        }),
        runner: RunnerDescription {
            provider: "e2b".into(),
            isolated: true,
            writable: true,
            network: NetworkPolicy::Restricted,
        },
        finding: Some(finding(Verdict::Accepted, &[])),
        plan: strings(&["Make the cursor exclusive in `next_page`.", "Add a test for the page boundary."]),
        acceptance_criteria: strings(&["No item appears on two pages.", "`cargo test` passes."]),
        changed_files: strings(&["src/page.rs", "tests/page.rs"]),
        checks: vec![
            check(&["cargo", "fmt", "--check"], 0, "", "", 820),
            check(&["cargo", "clippy", "--", "-D", "warnings"], 0, "", "    Finished dev profile\n", 14_300),
            check(&["cargo", "test"], 0, "test result: ok. 12 passed; 0 failed\n", "", 31_250),
        ],
        attempts: 1,
        transitions: {
            let mut t = lifecycle(TaskState::Planning, "plan with 2 steps");
            t.push(event(TaskState::Executing, 12, "wrote 2 files", Some(1)));
            t.push(event(TaskState::Verifying, 60, "3 checks passed", Some(1)));
            t.push(event(TaskState::Reviewing, 61, "diff within limits", Some(1)));
            t.push(event(TaskState::Completed, 62, "pull request opened", Some(1)));
            t
        },
        usage: Usage { input_tokens: 18_240, output_tokens: 2_113, latency_ms: 9_870, cost_usd: Some(0.0871) },
        refusal: None,
        coverage: Coverage::default(),
        summary: "Made the pagination cursor exclusive and added a boundary test.".into(),
        review: None,
        tree: Vec::new(),
        cost: Some(RunCost {
            ticks: 12,
            kv_reads: 96,
            kv_writes: 41,
            kv_lists: 1,
            kv_deletes: 11,
            kv_atomic: 24,
            lease_ops: 4,
            subrequests: 31,
            github_requests: 19,
            model_requests: 2,
            sandbox_requests: 10,
            sandbox_ms: 1_436,
            model_input_tokens: 18_240,
            model_output_tokens: 2_113,
            model_cost_usd: Some(0.0871),
        }),
        witness: None,
    }
}

/// Feedback confirmed in observe mode: nothing written, no check ran.
pub fn confirmed_observe() -> EvidenceBundle {
    EvidenceBundle {
        task_id: "task-0002".into(),
        verified: false,
        mode: RunMode::Observe,
        trigger: Trigger::Feedback,
        issue: None,
        runner: RunnerDescription::none(),
        plan: vec![],
        acceptance_criteria: vec![],
        changed_files: vec![],
        checks: vec![],
        transitions: lifecycle(TaskState::Completed, "feedback confirmed; observe mode writes nothing"),
        usage: Usage { cost_usd: None, ..verified().usage },
        summary: "The reviewer's comment is supported by src/page.rs.".into(),
        ..verified()
    }
}

/// Feedback rejected with every reason.
pub fn rejected() -> EvidenceBundle {
    let mut f = finding(
        Verdict::Rejected,
        &[
            "No evidence was quoted.",
            "The claim names `src/pager.rs`, which does not exist.",
            "Quoted text \"items[start..]\" is not in src/page.rs.",
        ],
    );
    f.claim.valid = false;
    f.claim.evidence = vec![];
    f.claim.files = strings(&["src/pager.rs"]);
    EvidenceBundle {
        task_id: "task-0003".into(),
        verdict: Verdict::Rejected,
        finding: Some(f),
        summary: "The review comment was not supported by the repository.".into(),
        ..confirmed_observe()
    }
}

/// A supported claim below `validation.minConfidence`.
pub fn inconclusive() -> EvidenceBundle {
    let mut f = finding(Verdict::Inconclusive, &[]);
    f.claim.confidence = 0.42;
    EvidenceBundle {
        task_id: "task-0004".into(),
        verdict: Verdict::Inconclusive,
        trigger: Trigger::Issue,
        finding: Some(f),
        issue: verified().issue,
        summary: "Confidence 0.42 is below validation.minConfidence 0.6.".into(),
        ..confirmed_observe()
    }
}

/// Confirmed in fix mode, but the write was refused by policy.
pub fn refused() -> EvidenceBundle {
    EvidenceBundle {
        task_id: "task-0005".into(),
        mode: RunMode::Fix,
        trigger: Trigger::Issue,
        issue: verified().issue,
        refusal: Some(Refusal {
            code: "autofix-disabled".into(),
            message: "autofix.enabled is false in .agent-zero.yml.".into(),
        }),
        transitions: lifecycle(TaskState::Completed, "write refused: autofix-disabled"),
        ..confirmed_observe()
    }
}

/// A high-impact change waiting for a human.
pub fn needs_human() -> EvidenceBundle {
    let mut f = finding(Verdict::Accepted, &[]);
    f.claim.change_risk = ChangeRisk::HighImpact;
    EvidenceBundle {
        task_id: "task-0006".into(),
        state: TerminalState::NeedsHuman,
        verified: false,
        finding: Some(f),
        pull_request: None,
        changed_files: vec![],
        checks: vec![],
        refusal: Some(Refusal {
            code: "change-risk-not-allowed".into(),
            message: "Risk high-impact is never written without a human approval.".into(),
        }),
        transitions: lifecycle(TaskState::NeedsHuman, "waiting for approval"),
        summary: "A high-impact change needs a human decision.".into(),
        ..verified()
    }
}

/// Three repair attempts; checks still fail (one timed out, one cut).
pub fn failed_after_repairs() -> EvidenceBundle {
    let mut timed_out = check(&["cargo", "test", "--", "--include-ignored"], 137, "running 40 tests\n", "", 600_000);
    timed_out.timed_out = true;
    let mut failing = check(
        &["cargo", "test"],
        101,
        "running 12 tests\ntest page::boundary ... FAILED\n",
        "thread 'page::boundary' panicked at src/page.rs:31:9:\nassertion `left == right` failed\n  left: 3\n right: 2\n",
        28_400,
    );
    failing.truncated_bytes = 48_213;
    let mut transitions = lifecycle(TaskState::Planning, "plan with 2 steps");
    for attempt in 1..=3u32 {
        let at = 10 + u64::from(attempt) * 100;
        transitions.push(event(TaskState::Executing, at, "wrote 1 file", Some(attempt)));
        transitions.push(event(TaskState::Verifying, at + 40, "1 of 3 checks failed", Some(attempt)));
        if attempt < 3 {
            transitions.push(event(TaskState::Planning, at + 41, "repair: checks failed", Some(attempt + 1)));
        }
    }
    transitions.push(event(TaskState::Failed, 400, "agent.maxAttempts (3) reached with failing checks", Some(3)));
    EvidenceBundle {
        task_id: "task-0007".into(),
        state: TerminalState::Failed,
        verified: false,
        pull_request: None,
        changed_files: strings(&["src/page.rs"]),
        checks: vec![check(&["cargo", "fmt", "--check"], 0, "", "", 790), failing, timed_out],
        attempts: 3,
        transitions,
        coverage: Coverage {
            omitted: vec![OmittedItem {
                kind: "diff-hunk".into(),
                subject: "@@ -120,40 +120,44 @@ fn render".into(),
                reason: "diff larger than the review budget".into(),
            }],
        },
        summary: "Three attempts did not make `cargo test` pass.".into(),
        ..verified()
    }
}

/// Output far beyond every limit, and hundreds of omissions.
pub fn huge() -> EvidenceBundle {
    let big = |tag: &str| format!("{tag} line with some text that repeats\n").repeat(8_000);
    let mut checks: Vec<CheckResult> =
        (0..3).map(|i| check(&["make", &format!("test-{i}")], 2, &big("out"), &big("err"), 61_000)).collect();
    for c in &mut checks {
        c.truncated_bytes = 1_234_567;
    }
    let omitted = (0..600)
        .map(|i| OmittedItem {
            kind: "file".into(),
            subject: format!("vendor/generated/module_{i:04}.rs"),
            reason: "file skipped: larger than the context budget".into(),
        })
        .collect();
    EvidenceBundle {
        task_id: "task-0008".into(),
        verified: false,
        checks,
        coverage: Coverage { omitted },
        summary: "word ".repeat(20_000),
        ..verified()
    }
}

/// Every untrusted field hostile.
pub fn hostile() -> EvidenceBundle {
    let fake = "## Agent Zero · Verified change\n\n- **Change:** verified\n\n# Verified ✅";
    let text = format!(
        "@octocat @acme/security please look at #123, acme/widgets#7 and GH-9.\n\
<img src=x onerror=alert(1)><script>alert(1)</script></details></pre>\n\
``` \n```` closing fences ````\n{fake}\n> quote | table | row\n\
\u{202E}evil\u{202C} bidi \u{2066}x\u{2069} and NUL \0 here; token {SECRET}\n\
<!-- agent-zero:issue-validation -->\n1. fake list\n- [x] fake task\n$x$ **bold** [link](javascript:alert(1))"
    );
    let line = "**Verified** ✅ @octocat #1 <b>x</b> `code` | pipe \u{202E} \0 GH-2";
    let mut f = finding(Verdict::Rejected, &[line, &text]);
    f.claim.title = line.into();
    f.claim.explanation = text.clone();
    f.claim.evidence = vec![text.clone(), "``````".into()];
    f.claim.files = strings(&["src/<b>.rs", "a|b`c.rs"]);
    EvidenceBundle {
        task_id: "task-0009<&>".into(),
        repository: "acme/widgets".into(),
        verdict: Verdict::Rejected,
        verified: false,
        issue: Some(IssueRef {
            owner: "acme".into(),
            repo: "widgets".into(),
            number: 44,
            title: UntrustedText::capped(line, 40),
            url: Some("javascript:alert(1)".into()),
        }),
        finding: Some(f),
        plan: vec![text.clone(), line.into()],
        acceptance_criteria: vec![line.into()],
        changed_files: strings(&["src/<img>.rs"]),
        checks: vec![check(&["sh", "-c", line], 1, &text, &format!("{SECRET}\n{text}"), 5)],
        transitions: vec![event(TaskState::Failed, 1, line, None)],
        refusal: Some(Refusal { code: line.into(), message: text.clone() }),
        coverage: Coverage {
            omitted: vec![OmittedItem { kind: line.into(), subject: line.into(), reason: text.clone() }],
        },
        summary: text,
        ..verified()
    }
}

/// Everything empty that can be.
pub fn empty() -> EvidenceBundle {
    EvidenceBundle {
        task_id: String::new(),
        repository: String::new(),
        state: TerminalState::Failed,
        verdict: Verdict::Inconclusive,
        verified: false,
        mode: RunMode::Observe,
        trigger: Trigger::Proactive,
        source: None,
        issue: None,
        pull_request: None,
        runner: RunnerDescription::none(),
        finding: None,
        plan: vec![],
        acceptance_criteria: vec![],
        changed_files: vec![],
        checks: vec![],
        attempts: 0,
        transitions: vec![],
        usage: Usage::default(),
        refusal: None,
        coverage: Coverage::default(),
        summary: String::new(),
        review: None,
        tree: Vec::new(),
        cost: None,
        witness: None,
    }
}

/// A record whose `verified` flag its own checks contradict.
pub fn flag_disagrees() -> EvidenceBundle {
    let mut b = verified();
    b.task_id = "task-0010".into();
    b.checks[2] = check(&["cargo", "test"], 101, "test result: FAILED. 11 passed; 1 failed\n", "", 30_000);
    b
}

/// Every named bundle, in golden order.
/// A review-feedback run whose change verified in the sandbox: the pull
/// request's head does not contain it.
pub fn verified_feedback() -> EvidenceBundle {
    EvidenceBundle { trigger: Trigger::Feedback, issue: None, task_id: "task-0013".into(), ..verified() }
}

/// The ledger of a review of `acme/widgets#7` whose diff the budget cut:
/// one file read whole, one in part, three skipped.
pub fn ledger(complete: bool) -> ReviewLedger {
    let file = |path: &str, review, reason| FileCoverage {
        path: path.into(),
        review,
        hunks: vec![],
        skipped_hunks: vec![],
        reason,
    };
    let mut files = vec![file("src/page.rs", FileReview::Reviewed, None)];
    if !complete {
        files.push(FileCoverage {
            hunks: vec!["@@ -1,40 +1,52 @@".into()],
            skipped_hunks: vec!["@@ -200,7 +212,90 @@ fn render".into()],
            ..file("src/render.rs", FileReview::Partial, Some(SkipReason::TooLarge))
        });
        files.push(file("assets/logo.png", FileReview::Skipped, Some(SkipReason::Binary)));
        files.push(file("Cargo.lock", FileReview::Skipped, Some(SkipReason::Generated)));
        files.push(file("src/big_table.rs", FileReview::Skipped, Some(SkipReason::Budget)));
    }
    ReviewLedger {
        head_sha: Some("9f3c2a1b7e6d5c4b3a291807f6e5d4c3b2a19080".into()),
        files,
        unlisted: None,
        anchors: vec![DiffAnchor {
            finding_id: "finding-0001".into(),
            path: "src/page.rs".into(),
            line: 42,
            start_line: Some(41),
            quote: None,
        }],
        ..ReviewLedger::default()
    }
}

/// A proactive review in observe mode that found a supported bug, with a
/// diff the budget cut: a line comment, the ledger first, `neutral`.
pub fn review_partial() -> EvidenceBundle {
    let mut finding = finding(Verdict::Accepted, &[]);
    finding.id = "finding-0001".into();
    EvidenceBundle {
        task_id: "task-0014".into(),
        trigger: Trigger::Proactive,
        issue: None,
        review: Some(ledger(false)),
        ..confirmed_observe()
    }
    .with_finding(finding)
}

/// The same review with every changed file read whole.
pub fn review_whole() -> EvidenceBundle {
    EvidenceBundle { task_id: "task-0015".into(), review: Some(ledger(true)), ..review_partial() }
}

/// A re-review after a push: only the file changed since the head an
/// earlier review read is shown, two are unchanged since; the comment
/// carries the quote it is anchored on.
pub fn review_since() -> EvidenceBundle {
    let mut ledger = ledger(true);
    ledger.since = Some("1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d".into());
    ledger.unchanged = vec!["README.md".into(), "src/lib.rs".into()];
    ledger.anchors[0].quote = Some("let start = cursor; items[start..start + limit]".into());
    EvidenceBundle { task_id: "task-0016".into(), review: Some(ledger), ..review_partial() }
}

/// A witness's run at one commit, as the sandbox returned it.
fn witness_run(exit_code: i32, stdout: &str, stderr: &str) -> CheckResult {
    CheckResult {
        command: vec!["python3".into(), "-m".into(), "pytest".into(), "-q".into(), "tests/test_witness_page.py".into()],
        exit_code,
        stdout: stdout.into(),
        stderr: stderr.into(),
        duration_ms: 812,
        truncated_bytes: 0,
        timed_out: false,
    }
}

/// The whole review whose bug claim a witness reproduced: it failed on the
/// head and passed on the base; the line comment is marked so.
pub fn review_reproduced() -> EvidenceBundle {
    let witness = WitnessRun {
        finding_id: "finding-0001".into(),
        outcome: WitnessOutcome::Reproduced,
        reason: "the witness failed on the head (exit 1) and passed on the base".into(),
        path: Some("tests/test_witness_page.py".into()),
        sha256: Some("5f2b0c9d4e7a61b83c0d2e9f4a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7".into()),
        head: Some(witness_run(1, "F\n1 failed in 0.04s\n", "AssertionError: page(2) skipped item 20\n")),
        base: Some(witness_run(0, ".\n1 passed in 0.03s\n", "")),
        head_sha: Some("9f3c2a1b7e6d5c4b3a291807f6e5d4c3b2a19080".into()),
        base_sha: Some("0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3".into()),
        before: None,
        after: None,
        withheld: false,
    };
    EvidenceBundle { task_id: "task-0017".into(), witness: Some(witness), ..review_whole() }
}

/// The whole review under `review.requireWitness` whose witness passed on
/// the head: kept off the lines, and the review says why.
pub fn review_withheld() -> EvidenceBundle {
    let mut bundle = review_reproduced();
    bundle.task_id = "task-0018".into();
    if let Some(ledger) = bundle.review.as_mut() {
        ledger.anchors.clear();
    }
    if let Some(w) = bundle.witness.as_mut() {
        w.outcome = WitnessOutcome::PassedOnHead;
        w.reason = "the witness passed on the head: the claimed bug did not show".into();
        w.head = Some(witness_run(0, ".\n1 passed in 0.03s\n", ""));
        w.withheld = true;
    }
    bundle
}

/// A verified issue fix whose witness failed before the fix and passed on
/// it: reproduced, in the pull request body.
pub fn fix_reproduced() -> EvidenceBundle {
    let witness = WitnessRun {
        finding_id: "f-1".into(),
        outcome: WitnessOutcome::Reproduced,
        reason: "the witness failed before the fix (exit 1) and passed after it".into(),
        path: Some("tests/test_witness_page.py".into()),
        sha256: Some("5f2b0c9d4e7a61b83c0d2e9f4a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7".into()),
        head: None,
        base: None,
        head_sha: None,
        base_sha: None,
        before: Some(witness_run(1, "F\n1 failed in 0.04s\n", "AssertionError: page(2) repeats item 20\n")),
        after: Some(witness_run(0, ".\n1 passed in 0.03s\n", "")),
        withheld: false,
    };
    EvidenceBundle { task_id: "task-0019".into(), witness: Some(witness), ..verified() }
}

/// A verified fix under `review.requireWitness` whose witness passed before
/// the fix: stopped for a person, not verified, and the evidence says why.
pub fn fix_withheld() -> EvidenceBundle {
    let mut bundle = fix_reproduced();
    bundle.task_id = "task-0020".into();
    bundle.state = TerminalState::NeedsHuman;
    bundle.verified = false;
    bundle.refusal = Some(Refusal {
        code: "witness-not-reproduced".into(),
        message: "the fix passed its checks, but review.requireWitness is on and its witness did not reproduce the \
                  bug: the witness passed before the fix: the claimed bug did not show"
            .into(),
    });
    bundle.transitions = lifecycle(TaskState::NeedsHuman, "the witness did not reproduce the bug");
    if let Some(w) = bundle.witness.as_mut() {
        w.outcome = WitnessOutcome::PassedBeforeFix;
        w.reason = "the witness passed before the fix: the claimed bug did not show".into();
        w.before = Some(witness_run(0, ".\n1 passed in 0.03s\n", ""));
        w.after = None;
        w.withheld = true;
    }
    bundle
}

trait WithFinding {
    fn with_finding(self, finding: Finding) -> Self;
}

impl WithFinding for EvidenceBundle {
    fn with_finding(mut self, finding: Finding) -> Self {
        self.finding = Some(finding);
        self
    }
}

pub fn all() -> Vec<(&'static str, EvidenceBundle)> {
    vec![
        ("verified", verified()),
        ("confirmed-observe", confirmed_observe()),
        ("rejected", rejected()),
        ("inconclusive", inconclusive()),
        ("refused", refused()),
        ("needs-human", needs_human()),
        ("failed-after-repairs", failed_after_repairs()),
        ("huge", huge()),
        ("hostile", hostile()),
        ("empty", empty()),
        ("flag-disagrees", flag_disagrees()),
        ("verified-feedback", verified_feedback()),
        ("review-partial", review_partial()),
        ("review-whole", review_whole()),
        ("review-since", review_since()),
        ("review-reproduced", review_reproduced()),
        ("review-withheld", review_withheld()),
        ("fix-reproduced", fix_reproduced()),
        ("fix-withheld", fix_withheld()),
    ]
}
