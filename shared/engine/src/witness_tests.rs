use agent_zero_agent::policy::ReviewPolicy;
use agent_zero_contracts::{FileCoverage, FileReview, MAX_WITNESS_BYTES, ReviewLedger, Witness};

use super::{Refused, base_unavailable, check, patches, rebuild_base};

const HEAD: &str =
    "def average(values):\n    if not values:\n        return 0\n    return sum(values) / (len(values) + 1)\n";
const BASE: &str = "def average(values):\n    if not values:\n        return 0\n    return sum(values) / len(values)\n";
const PATCH: &str = "@@ -1,4 +1,4 @@\n def average(values):\n     if not values:\n         return 0\n-    return sum(values) / len(values)\n+    return sum(values) / (len(values) + 1)\n";

fn witness(path: &str, content: &str) -> Witness {
    Witness { path: path.into(), content: content.into() }
}

#[test]
fn the_base_is_the_head_with_the_hunks_undone() {
    assert_eq!(rebuild_base(Some(HEAD), PATCH).unwrap().as_deref(), Some(BASE));
    // Context outside the hunk is kept, on both sides of it.
    let head = format!("# top\n{HEAD}# tail\n");
    let patch = PATCH.replace("@@ -1,4 +1,4 @@", "@@ -2,4 +2,4 @@");
    assert_eq!(rebuild_base(Some(&head), &patch).unwrap(), Some(format!("# top\n{BASE}# tail\n")));
    // A file the pull request added is absent at the base; one it removed is back.
    assert_eq!(rebuild_base(Some("a\nb\n"), "@@ -0,0 +1,2 @@\n+a\n+b\n").unwrap(), None);
    assert_eq!(rebuild_base(None, "@@ -1,2 +0,0 @@\n-a\n-b\n").unwrap().as_deref(), Some("a\nb\n"));
    // Lines the pull request removed go back after the line the hunk names.
    let patch = "@@ -2,2 +1,0 @@\n-b\n-c\n";
    assert_eq!(rebuild_base(Some("a\nd\n"), patch).unwrap().as_deref(), Some("a\nb\nc\nd\n"));
    // A line without its newline at the end of the base's file.
    let patch = "@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n";
    assert_eq!(rebuild_base(Some("new\n"), patch).unwrap().as_deref(), Some("old"));
}

#[test]
fn a_checkout_that_is_not_the_head_is_not_rebuilt() {
    // A retried step that finds the base's lines (or any other) refuses.
    let error = rebuild_base(Some(BASE), PATCH).unwrap_err();
    assert!(error.contains("does not hold line 4"), "{error}");
    let error = rebuild_base(Some("x\n"), "@@ -9,1 +9,1 @@\n-a\n+b\n").unwrap_err();
    assert!(error.contains("outside the head's file"), "{error}");
    assert!(rebuild_base(Some("x\n"), "not a hunk\n").unwrap_err().contains("not a hunk header"));
}

#[test]
fn the_diff_text_splits_into_its_files() {
    let diff = format!("diff --git a/calc.py b/calc.py\n{PATCH}diff --git a/a b.txt b/a b.txt\n@@ -0,0 +1 @@\n+x\n");
    let files = patches(&diff);
    assert_eq!(files.len(), 2);
    assert_eq!((files[0].0.as_str(), files[0].1.as_str()), ("calc.py", PATCH));
    assert_eq!(files[1].0, "a b.txt", "a path with a space");
}

#[test]
fn a_witness_is_a_bounded_new_file_inside_the_checkout() {
    let policy = ReviewPolicy::default();
    let files = vec!["calc.py".to_owned(), "tests/test_calc.py".to_owned()];
    let changed = vec!["calc.py".to_owned()];
    let ok = witness("tests/test_witness.py", "assert False\n");
    assert_eq!(check(&ok, &files, &changed, &policy), Ok(()));
    for (path, why) in [
        ("../outside.py", "is not a repository-relative file path"),
        ("/etc/passwd", "is not a repository-relative file path"),
        (".git/hooks/pre-commit", "is not a repository-relative file path"),
        ("tests\\..\\x.py", "is not a repository-relative file path"),
        ("tests//x.py", "has an empty or `.` segment"),
        ("./x.py", "has an empty or `.` segment"),
        ("calc.py", "is a file the pull request changes"),
        ("tests/test_calc.py", "is an existing file (review.witness.allowOverwrite is off)"),
    ] {
        let refused = check(&witness(path, "x"), &files, &changed, &policy).unwrap_err();
        assert!(matches!(refused, Refused::Path { .. }), "{path}");
        assert!(refused.to_string().starts_with(&format!("the witness path `{path}` {why}")), "{refused}");
    }
    let big = witness("w.py", &"x".repeat(MAX_WITNESS_BYTES + 1));
    let refused = check(&big, &files, &changed, &policy).unwrap_err();
    assert_eq!(refused.to_string(), "the witness is 16385 bytes, over the 16384-byte limit of a witness");
    assert_eq!(check(&witness("w.py", &"x".repeat(MAX_WITNESS_BYTES)), &files, &changed, &policy), Ok(()));
    // With the policy's leave, an existing file (not a changed one) may be replaced.
    let mut allowing = policy;
    allowing.witness.allow_overwrite = true;
    assert_eq!(check(&witness("tests/test_calc.py", "x"), &files, &changed, &allowing), Ok(()));
    assert!(check(&witness("calc.py", "x"), &files, &changed, &allowing).is_err());
}

#[test]
fn the_base_is_rebuilt_only_from_a_whole_diff() {
    let file =
        |review| FileCoverage { path: "calc.py".into(), review, hunks: vec![], skipped_hunks: vec![], reason: None };
    let whole = ReviewLedger { files: vec![file(FileReview::Reviewed)], ..ReviewLedger::default() };
    assert_eq!(base_unavailable(&whole, Some("diff")), None);
    assert!(base_unavailable(&whole, None).unwrap().contains("not read"));
    let part = ReviewLedger { files: vec![file(FileReview::Partial)], ..ReviewLedger::default() };
    assert!(base_unavailable(&part, Some("diff")).unwrap().contains("did not read the whole diff"));
    let since = ReviewLedger { since: Some("abc1234".into()), ..whole };
    assert!(base_unavailable(&since, Some("diff")).unwrap().contains("only the changes since abc1234"));
}
