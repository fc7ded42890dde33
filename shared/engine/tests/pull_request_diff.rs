//! The pull request's diff the model is shown: the policy's budget (the
//! reference's 100,000 bytes by default) holds a 60 KB pull request whole;
//! a smaller one lists every file it cut in the ledger, and the check run
//! then reads as partial; review feedback on a pull request sees the diff
//! too, within the same budget.

mod harness;

use agent_zero_contracts::{FileReview, PullRequestRef, RunMode, SkipReason, TerminalState, Trigger};
use agent_zero_engine::{ChangedFile, ChangedFiles, Stimulus, TickOutcome};
use agent_zero_evidence::{CheckConclusion, RenderOptions, render_check_run};
use harness::{Harness, claim, decision, policy, stimulus};

/// `lines` added lines of 100 bytes each, in hunks of 50 lines.
fn patch(tag: &str, lines: usize) -> String {
    let mut out = String::new();
    for hunk in 0..lines.div_ceil(50) {
        let count = 50.min(lines - hunk * 50);
        let start = 1 + hunk * 60;
        out.push_str(&format!("@@ -{start},0 +{start},{count} @@\n"));
        for i in 0..count {
            let line = format!("+{tag} {hunk:02}.{i:02} ");
            out.push_str(&format!("{line}{}\n", "x".repeat(99 - line.len())));
        }
    }
    out
}

fn changed(path: &str, patch: &str) -> ChangedFile {
    let additions = patch.lines().filter(|l| l.starts_with('+')).count() as u64;
    ChangedFile { path: path.into(), status: "modified".into(), patch: Some(patch.into()), additions, deletions: 0 }
}

fn on_pull_request(id: &str, trigger: Trigger, policy_text: &str) -> Stimulus {
    let mut s = stimulus(id, RunMode::Observe, policy(policy_text));
    s.trigger = trigger;
    s.input.pull_request = Some(PullRequestRef {
        owner: "acme".into(),
        repo: "demo".into(),
        number: 7,
        head_sha: "0123456789abcdef0123456789abcdef01234567".into(),
        base_sha: None,
    });
    s
}

/// A pull request of ~60 KB: `src/lib.rs` (the claim's file) and three
/// 20 KB files.
fn sixty_kb() -> ChangedFiles {
    let files = vec![
        changed("src/lib.rs", "@@ -1,3 +1,3 @@\n pub fn add(a: i32, b: i32) -> i32 {\n-    a + b\n+    a - b\n }\n"),
        changed("src/a.rs", &patch("a", 200)),
        changed("src/b.rs", &patch("b", 200)),
        changed("src/c.rs", &patch("c", 200)),
    ];
    ChangedFiles { files, ..ChangedFiles::default() }
}

fn check_run(h: &Harness, id: &str) -> agent_zero_evidence::CheckRunOutput {
    let evidence = h.load(id).conclusion.concluded.expect("concluded").1;
    render_check_run(&evidence, &RenderOptions::default())
}

#[test]
fn a_60_kb_pull_request_is_shown_whole_with_the_default_budget() {
    let h = Harness::new();
    let listed = sixty_kb();
    let total: usize = listed.files.iter().map(|f| f.patch.as_ref().unwrap().len()).sum();
    assert!((60_000..70_000).contains(&total), "{total}");
    *h.publisher.changed.borrow_mut() = Some(listed.clone());
    h.decider.push(decision(claim()));
    let review = on_pull_request("t-60kb", Trigger::Proactive, "mode: observe\n");
    assert_eq!(h.run(review), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let context = h.decider.requests.borrow()[0].context.clone();
    for file in &listed.files {
        assert!(context.contains(file.patch.as_deref().unwrap()), "{} is in the prompt whole", file.path);
    }
    let ledger = h.load("t-60kb").discovery.review.expect("a ledger");
    assert!(ledger.is_complete(), "{ledger:?}");
    assert_eq!(ledger.counts(), (4, 0, 0));
    let check = check_run(&h, "t-60kb");
    assert!(check.title.starts_with("Reviewed 4 of 4 changed files ·"), "{}", check.title);
    assert!(!check.summary.contains("did not read the whole diff"), "{}", check.summary);
}

#[test]
fn a_budget_that_cuts_lists_every_cut_file_and_the_check_reads_partial() {
    let h = Harness::new();
    *h.publisher.changed.borrow_mut() = Some(sixty_kb());
    h.decider.push(decision(claim()));
    let review = on_pull_request(
        "t-cut",
        Trigger::Proactive,
        "mode: observe\nreview:\n  diffBudgetBytes: 12000\n  fileBudgetBytes: 8000\n",
    );
    assert_eq!(h.run(review), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let context = h.decider.requests.borrow()[0].context.clone();
    assert!(context.contains("+    a - b"), "the claim's file fits: {context}");
    assert!(!context.contains("+c 00.00"), "a file past the budget is not shown");
    let ledger = h.load("t-cut").discovery.review.expect("a ledger");
    let rows: Vec<(&str, FileReview, Option<SkipReason>)> =
        ledger.files.iter().map(|f| (f.path.as_str(), f.review, f.reason)).collect();
    assert_eq!(
        rows,
        [
            ("src/lib.rs", FileReview::Reviewed, None),
            ("src/a.rs", FileReview::Partial, Some(SkipReason::TooLarge)),
            ("src/b.rs", FileReview::Partial, Some(SkipReason::Budget)),
            ("src/c.rs", FileReview::Skipped, Some(SkipReason::Budget)),
        ]
    );
    // What was left out is named to the model, and in the check run first.
    assert!(context.contains("changed files not shown in full"), "{context}");
    let check = check_run(&h, "t-cut");
    assert!(check.title.starts_with("Reviewed 3 of 4 changed files (2 in part, 1 skipped) ·"), "{}", check.title);
    assert!(check.summary.contains("**This review did not read the whole diff**"), "{}", check.summary);
    assert!(check.summary.contains("**skipped** (diff budget spent): <code>src/c.rs</code>"), "{}", check.summary);
    assert!(check.summary.contains("**reviewed in part** (too large): <code>src/a.rs</code>"), "{}", check.summary);
    assert_ne!(check.conclusion, CheckConclusion::Success, "a partial review never passes");
}

#[test]
fn review_feedback_on_a_pull_request_shows_the_model_its_diff() {
    let h = Harness::new();
    let listed = sixty_kb();
    *h.publisher.changed.borrow_mut() = Some(listed.clone());
    h.decider.push(decision(claim()));
    let feedback = on_pull_request("t-feedback", Trigger::Feedback, "mode: observe\n");
    assert_eq!(h.run(feedback), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let context = h.decider.requests.borrow()[0].context.clone();
    assert!(context.contains("<untrusted source=\"diff under review (base...head)\">"), "{context}");
    for file in &listed.files {
        assert!(context.contains(file.patch.as_deref().unwrap()), "{} is in the prompt", file.path);
    }
    // Its check run says what it read, not that it reviewed the pull request.
    let check = check_run(&h, "t-feedback");
    assert!(check.title.starts_with("Read 4 of 4 changed files ·"), "{}", check.title);
}

#[test]
fn review_feedback_may_cite_a_file_the_pull_request_did_not_change() {
    // The pull request changes only src/a.rs; the reviewer's claim is about
    // src/lib.rs, which a review's finding could not cite.
    let h = Harness::new();
    let listed = ChangedFiles { files: vec![changed("src/a.rs", &patch("a", 5))], ..ChangedFiles::default() };
    *h.publisher.changed.borrow_mut() = Some(listed);
    h.decider.push(decision(claim()));
    let feedback = on_pull_request("t-other-file", Trigger::Feedback, "mode: observe\n");
    assert_eq!(h.run(feedback), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let evidence = h.load("t-other-file").conclusion.concluded.unwrap().1;
    let verdict = evidence.finding.as_ref().map(|f| f.verdict);
    assert_eq!(verdict, Some(agent_zero_contracts::Verdict::Accepted), "{evidence:?}");
}

#[test]
fn feedback_without_a_pull_request_reads_no_diff() {
    let h = Harness::new();
    *h.publisher.changed.borrow_mut() = Some(sixty_kb());
    h.decider.push(decision(claim()));
    let feedback = stimulus("t-api", RunMode::Observe, policy("mode: observe\n"));
    assert_eq!(h.run(feedback), Some(TickOutcome::Terminal(TerminalState::Completed)));
    assert!(!h.decider.requests.borrow()[0].context.contains("diff under review"));
    assert_eq!(h.load("t-api").discovery.review, None);
}

#[test]
fn a_diff_that_would_not_fit_beside_a_large_file_list_is_cut_in_the_ledger_not_failed() {
    // 10,500 paths of ~80 bytes: the log entry holding the diff holds this
    // list too, so only some 14 KB of the 200,000-byte budget is left (a
    // whole diff of ~140 KB beside it would be over the value limit).
    let mut h = Harness::new();
    for i in 0..10_500 {
        h.workspace.original.insert(format!("src/generated/module_{i:05}/{}.rs", "n".repeat(50)), String::new());
    }
    let mut listed = sixty_kb();
    listed.files.extend(["d", "e", "f", "g"].map(|tag| changed(&format!("src/{tag}.rs"), &patch(tag, 200))));
    *h.publisher.changed.borrow_mut() = Some(listed);
    h.decider.push(decision(claim()));
    let review = on_pull_request(
        "t-big-repo",
        Trigger::Proactive,
        "mode: observe\nreview:\n  diffBudgetBytes: 200000\n  fileBudgetBytes: 200000\n",
    );
    assert_eq!(h.run(review), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let ledger = h.load("t-big-repo").discovery.review.expect("a ledger");
    assert!(!ledger.is_complete(), "{ledger:?}");
    let cut: Vec<&str> =
        ledger.files.iter().filter(|f| f.reason == Some(SkipReason::Budget)).map(|f| f.path.as_str()).collect();
    assert!(cut.contains(&"src/g.rs"), "{cut:?}");
    let largest = h.kv.snapshot().values().map(Vec::len).max().unwrap();
    assert!(largest <= agent_zero_engine::MAX_VALUE_BYTES, "{largest}");
}

#[test]
fn review_feedback_over_the_budget_never_reads_as_having_seen_the_whole_diff() {
    let h = Harness::new();
    *h.publisher.changed.borrow_mut() = Some(sixty_kb());
    h.decider.push(decision(claim()));
    let feedback =
        on_pull_request("t-feedback-cut", Trigger::Feedback, "mode: observe\nreview: {diffBudgetBytes: 30000}\n");
    assert_eq!(h.run(feedback), Some(TickOutcome::Terminal(TerminalState::Completed)));
    let check = check_run(&h, "t-feedback-cut");
    assert!(check.title.starts_with("Read 3 of 4 changed files (1 in part, 1 skipped) ·"), "{}", check.title);
    assert!(check.summary.contains("**This run did not read the whole diff**"), "{}", check.summary);
    assert!(check.summary.contains("**skipped** (diff budget spent): <code>src/c.rs</code>"), "{}", check.summary);
    assert_ne!(check.conclusion, CheckConclusion::Success);
}
