//! FixtureRepo: a real git repository whose own check fails on the bug and
//! passes on the fix; sign_github; FakeGitHub seeded from the fixture.

mod support;

use std::process::Command;

use agent_zero_fakes::{FakeGitHub, FixtureRepo, calc, sign_github};

fn check(repo: &FixtureRepo) -> std::process::Output {
    repo.run(&calc::CHECK).expect("python3 runs")
}

#[test]
fn the_check_fails_on_the_bug_and_passes_with_the_fix() {
    let mut repo = FixtureRepo::calc("octo", "calc").build().unwrap();
    assert_eq!(repo.path(), repo.repos_dir().join("octo").join("calc"));
    let before = check(&repo);
    let stderr = String::from_utf8_lossy(&before.stderr);
    assert!(!before.status.success(), "{stderr}");
    assert!(stderr.contains("FAIL: test_average"), "{stderr}");
    assert!(stderr.contains("Ran 2 tests"), "{stderr}");

    let bug_line = calc::CALC_PY.lines().nth(calc::BUG_LINE as usize - 1).unwrap();
    assert_eq!(bug_line, calc::BUG_QUOTE);
    assert!(!calc::CALC_PY_FIXED.contains(calc::BUG_QUOTE));

    let first = repo.head_sha();
    let fixed = repo.commit(&[(calc::BUG_PATH, calc::CALC_PY_FIXED)], "Fix average").unwrap();
    assert_ne!(fixed, first);
    let after = check(&repo);
    assert!(after.status.success(), "{}", String::from_utf8_lossy(&after.stderr));
    let status = Command::new("git").args(["status", "--porcelain"]).current_dir(repo.path()).output().unwrap();
    assert!(status.stdout.is_empty(), "the worktree stays clean: {}", String::from_utf8_lossy(&status.stdout));
}

#[test]
fn the_repository_clones_like_the_sandbox_clones_it() {
    let repo = FixtureRepo::calc("octo", "calc").build().unwrap();
    let head = repo.head_sha();
    assert!(head.len() == 40 && head.bytes().all(|b| b.is_ascii_hexdigit()));
    let dest = tempfile::tempdir().unwrap();
    let checkout = dest.path().join("checkout");
    let source = repo.repos_dir().join("octo/calc");
    let clone = Command::new("git")
        .args(["clone", "--quiet", "--no-checkout", "--"])
        .arg(&source)
        .arg(&checkout)
        .output()
        .unwrap();
    assert!(clone.status.success(), "{}", String::from_utf8_lossy(&clone.stderr));
    let co = Command::new("git")
        .args(["checkout", "--quiet", "--detach", &head, "--"])
        .current_dir(&checkout)
        .output()
        .unwrap();
    assert!(co.status.success(), "{}", String::from_utf8_lossy(&co.stderr));
    assert_eq!(std::fs::read_to_string(checkout.join("calc.py")).unwrap(), calc::CALC_PY);
    assert_eq!(std::fs::read_to_string(checkout.join(".agent-zero.yml")).unwrap(), calc::POLICY_YML);
}

#[test]
fn fake_github_serves_the_fixture_at_its_real_head() {
    let repo = FixtureRepo::builder("octo", "tiny").branch("trunk").file("a.txt", "A\n").build().unwrap();
    let gh = FakeGitHub::start();
    gh.add_fixture(&repo);
    let reference =
        support::send("GET", &format!("{}/repos/octo/tiny/git/ref/heads/trunk", gh.url()), &[], None).json();
    assert_eq!(reference["object"]["sha"].as_str(), Some(repo.head_sha().as_str()));
    let commit = support::send("GET", &format!("{}/repos/octo/tiny/commits/{}", gh.url(), repo.head_sha()), &[], None);
    assert_eq!(commit.status, 200);
    assert_eq!(gh.file("octo", "tiny", &repo.head_sha(), "a.txt").as_deref(), Some("A\n"));
    let info = support::send("GET", &format!("{}/repos/octo/tiny", gh.url()), &[], None).json();
    assert_eq!(info["default_branch"], "trunk");
}

#[test]
fn webhook_signatures_depend_on_secret_and_body() {
    let body = br#"{"action":"opened"}"#;
    let signature = sign_github("s3cret", body);
    assert!(signature.starts_with("sha256=") && signature.len() == 7 + 64);
    assert_ne!(signature, sign_github("other", body));
    assert_ne!(signature, sign_github("s3cret", br#"{"action":"closed"}"#));
}
