use agent_zero_contracts::{ChangeRisk, ModelFinding, Severity};

use super::*;

/// The patch GitHub sends for `calc.py` when a pull request turns the
/// correct denominator into an off-by-one (the e2e fixture's change).
const CALC_PATCH: &str = "@@ -8,4 +8,4 @@ def add(a, b):\n \n def average(values):\n     \"\"\"Return the arithmetic mean of a non-empty list of numbers.\"\"\"\n-    return sum(values) / len(values)\n+    return sum(values) / (len(values) + 1)";

/// The budgets before the policy set them: 16,000 bytes, 8,000 a file.
const SMALL: Budget = Budget { total: 16_000, file: 8_000 };

fn file(path: &str, patch: Option<&str>, additions: u64, deletions: u64) -> ChangedFile {
    ChangedFile { path: path.into(), status: "modified".into(), patch: patch.map(str::to_owned), additions, deletions }
}

fn finding(evidence: &str, files: &[&str], verdict: Verdict) -> Finding {
    Finding {
        id: "finding-1".into(),
        claim: ModelFinding {
            title: "off by one".into(),
            explanation: "the denominator adds one".into(),
            severity: Severity::High,
            confidence: 0.9,
            valid: true,
            evidence: vec![evidence.into()],
            files: files.iter().map(|f| (*f).to_owned()).collect(),
            change_risk: ChangeRisk::Behavioral,
        },
        verdict,
        rejection_reasons: Vec::new(),
        quote_check: None,
    }
}

/// `n` hunks of `lines` added lines each, 10 lines apart.
fn big_patch(n: usize, lines: usize) -> String {
    (0..n)
        .map(|h| {
            let start = 1 + h * (lines + 10);
            let body: String = (0..lines).map(|i| format!("+line {h}.{i} {}\n", "x".repeat(60))).collect();
            format!("@@ -{start},0 +{start},{lines} @@\n{body}")
        })
        .collect()
}

#[test]
fn a_small_pull_request_is_read_whole() {
    let listed =
        ChangedFiles { files: vec![file("calc.py", Some(CALC_PATCH), 1, 1)], cut: None, ..ChangedFiles::default() };
    let (text, ledger) = read(&listed, Some("abc"), Budget::of(&Default::default()));
    assert!(ledger.is_complete(), "{ledger:?}");
    assert_eq!(ledger.counts(), (1, 0, 0));
    assert!(text.starts_with("diff --git a/calc.py b/calc.py\n@@ -8,4 +8,4 @@"), "{text}");
    assert!(text.contains("+    return sum(values) / (len(values) + 1)\n"), "{text}");
}

#[test]
fn what_is_not_read_is_in_the_ledger_with_its_reason() {
    let listed = ChangedFiles {
        files: vec![
            file("calc.py", Some(CALC_PATCH), 1, 1),
            file("logo.png", None, 0, 0),
            file("data/huge.csv", None, 40_000, 0),
            file("Cargo.lock", Some("@@ -1 +1 @@\n-a\n+b"), 1, 1),
            file("vendor/lib/x.go", Some("@@ -1 +1 @@\n-a\n+b"), 1, 1),
            file("web/app.min.js", Some("@@ -1 +1 @@\n-a\n+b"), 1, 1),
            file("src/one_big_hunk.rs", Some(&big_patch(1, 200)), 200, 0),
        ],
        cut: None,
        ..ChangedFiles::default()
    };
    let (text, ledger) = read(&listed, None, SMALL);
    let reasons: Vec<(&str, FileReview, Option<SkipReason>)> =
        ledger.files.iter().map(|f| (f.path.as_str(), f.review, f.reason)).collect();
    assert_eq!(
        reasons,
        [
            ("calc.py", FileReview::Reviewed, None),
            ("logo.png", FileReview::Skipped, Some(SkipReason::Binary)),
            ("data/huge.csv", FileReview::Skipped, Some(SkipReason::TooLarge)),
            ("Cargo.lock", FileReview::Skipped, Some(SkipReason::Generated)),
            ("vendor/lib/x.go", FileReview::Skipped, Some(SkipReason::Vendored)),
            ("web/app.min.js", FileReview::Skipped, Some(SkipReason::Generated)),
            ("src/one_big_hunk.rs", FileReview::Skipped, Some(SkipReason::TooLarge)),
        ]
    );
    assert!(!ledger.is_complete());
    assert_eq!(ledger.counts(), (1, 0, 6));
    assert!(!text.contains("Cargo.lock") && !text.contains("one_big_hunk"), "{text}");
}

#[test]
fn budgets_cut_whole_hunks_and_name_them() {
    // Three hunks of ~3.6 KB each: two fit the per-file budget, the third is left out.
    let patch = big_patch(3, 50);
    let listed = ChangedFiles {
        files: vec![
            file("src/a.rs", Some(&patch), 150, 0),
            file("src/small.rs", Some(&big_patch(1, 40)), 40, 0),
            file("src/b.rs", Some(&patch), 150, 0),
            file("src/c.rs", Some(&patch), 150, 0),
        ],
        cut: Some("GitHub lists at most 3000 files".into()),
        ..ChangedFiles::default()
    };
    let (text, ledger) = read(&listed, None, SMALL);
    assert!(text.len() <= SMALL.total, "{}", text.len());
    let a = &ledger.files[0];
    assert_eq!((a.review, a.reason), (FileReview::Partial, Some(SkipReason::TooLarge)));
    assert_eq!(a.hunks, ["@@ -1,0 +1,50 @@", "@@ -61,0 +61,50 @@"]);
    assert_eq!(a.skipped_hunks, ["@@ -121,0 +121,50 @@"]);
    assert_eq!(ledger.files[1].review, FileReview::Reviewed);
    // What is left of the total is under the per-file budget: the total cuts.
    let b = &ledger.files[2];
    assert_eq!((b.review, b.reason), (FileReview::Partial, Some(SkipReason::Budget)), "{b:?}");
    assert_eq!(b.hunks.len(), 1, "{b:?}");
    let c = &ledger.files[3];
    assert_eq!((c.review, c.reason), (FileReview::Skipped, Some(SkipReason::Budget)), "{c:?}");
    assert_eq!(ledger.unlisted.as_deref(), Some("GitHub lists at most 3000 files"));
    // Every hunk the ledger says was read is in the text, and none it says was not.
    for f in &ledger.files {
        assert!(
            f.hunks.iter().all(|h| text.contains(h.as_str()))
                && f.skipped_hunks.iter().all(|h| !text.contains(&format!("{h}\n+line 2")))
        );
    }
}

#[test]
fn the_default_budget_reads_a_60_kb_pull_request_whole() {
    // Six files of ~10 KB (140 lines of ~70 bytes, three hunks each).
    let patch = big_patch(3, 47);
    let files: Vec<ChangedFile> = (0..6).map(|i| file(&format!("src/m{i}.rs"), Some(&patch), 141, 0)).collect();
    let listed = ChangedFiles { files, ..ChangedFiles::default() };
    let (text, ledger) = read(&listed, None, Budget::of(&Default::default()));
    assert!((60_000..70_000).contains(&text.len()), "{}", text.len());
    assert!(ledger.is_complete(), "{ledger:?}");
    assert_eq!(ledger.counts(), (6, 0, 0));
    assert_eq!(text.matches(patch.as_str()).count(), 6, "every file whole");
    // The old budgets would have cut it: the ledger said so, file by file.
    let (_, cut) = read(&listed, None, SMALL);
    assert_eq!(cut.counts(), (0, 2, 4), "{cut:?}");
}

#[test]
fn a_finding_is_anchored_on_the_added_line() {
    let listed = ChangedFiles {
        files: vec![
            file("README.md", Some("@@ -1 +1,2 @@\n # calc\n+See calc.py"), 1, 0),
            file("calc.py", Some(CALC_PATCH), 1, 1),
        ],
        cut: None,
        ..ChangedFiles::default()
    };
    let (text, ledger) = read(&listed, None, Budget::of(&Default::default()));
    let quote = "`return sum(values) / (len(values) + 1)`";
    let at = anchor(&ledger, &text, &finding(quote, &["./calc.py"], Verdict::Accepted)).expect("anchored");
    assert_eq!((at.path.as_str(), at.line, at.start_line), ("calc.py", 11, None));
    // A quote over two lines is a range, start_line < line.
    let two = "`list of numbers.\"\"\" return sum(values) / (len(values) + 1)`";
    let at = anchor(&ledger, &text, &finding(two, &["calc.py"], Verdict::Accepted)).expect("anchored");
    assert_eq!((at.line, at.start_line), (11, Some(10)));
    // Only supported findings, only cited files, only text the diff shows.
    assert_eq!(anchor(&ledger, &text, &finding(quote, &["calc.py"], Verdict::Rejected)), None);
    assert_eq!(anchor(&ledger, &text, &finding(quote, &["README.md"], Verdict::Accepted)), None);
    assert_eq!(anchor(&ledger, &text, &finding("`def subtract(a, b):`", &["calc.py"], Verdict::Accepted)), None);
    // A context line is anchored when no added line holds the quote.
    let at =
        anchor(&ledger, &text, &finding("`def average(values):`", &["calc.py"], Verdict::Accepted)).expect("context");
    assert_eq!(at.line, 9);
}

#[test]
fn right_side_numbers_follow_the_hunk_header() {
    assert_eq!(right_start("@@ -8,7 +8,7 @@ def add(a, b):"), Some(8));
    assert_eq!(right_start("@@ -1 +1 @@"), Some(1));
    assert_eq!(right_start("@@ -0,0 +1,3 @@"), Some(1));
    assert_eq!(right_start("@@ garbage"), None);
    let lines = right_lines(CALC_PATCH);
    let numbered: Vec<u32> = lines[0].iter().map(|l| l.number).collect();
    assert_eq!(numbered, [8, 9, 10, 11]);
    assert!(lines[0][3].added && lines[0][3].text.contains("+ 1)"));
}
