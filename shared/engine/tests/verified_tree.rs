//! What is published is what was verified: after the checks pass, review
//! reads the run's files back from the sandbox, records their digests in
//! the evidence, and publishes that content (a check that rewrote a file
//! wins over what the run wrote); a check that removed one stops the run.

mod harness;

use agent_zero_contracts::{RunMode, TerminalState};
use agent_zero_engine::TickOutcome;
use harness::{FIX_POLICY, FIXED, Harness, claim, decision, policy, stimulus};
use sha2::Digest as _;

fn sha256(text: &str) -> String {
    sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_published_files_are_the_ones_read_back_with_their_digests_in_the_evidence() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    assert_eq!(
        h.run(stimulus("t-tree", RunMode::Fix, policy(FIX_POLICY))),
        Some(TickOutcome::Terminal(TerminalState::Completed))
    );
    let r = h.load("t-tree");
    let evidence = &r.conclusion.concluded.as_ref().unwrap().1;
    assert!(evidence.verified);
    assert_eq!(evidence.tree.len(), 1);
    assert_eq!((evidence.tree[0].path.as_str(), evidence.tree[0].sha256.clone()), ("src/lib.rs", sha256(FIXED)));
    assert_eq!(evidence.tree[0].bytes, FIXED.len() as u64);
    assert!(r.attempt.rewritten.is_empty(), "unchanged since written: the log holds the digest only");
    let files = h.publisher.files.borrow();
    assert_eq!(
        files.last().unwrap().iter().map(|c| (c.path.as_str(), c.content.as_str())).collect::<Vec<_>>(),
        [("src/lib.rs", FIXED)]
    );
}

#[test]
fn a_file_a_check_rewrote_is_published_as_the_checks_left_it() {
    let h = Harness::new();
    // A formatter-like check rewrites the run's own file on every run.
    *h.workspace.stray_change.borrow_mut() = Some("src/lib.rs".into());
    h.decider.push(decision(claim()));
    assert_eq!(
        h.run(stimulus("t-fmt", RunMode::Fix, policy(FIX_POLICY))),
        Some(TickOutcome::Terminal(TerminalState::Completed))
    );
    let r = h.load("t-fmt");
    let evidence = &r.conclusion.concluded.as_ref().unwrap().1;
    assert_eq!(evidence.tree[0].sha256, sha256("stray"), "the digest is of what the sandbox held");
    let files = h.publisher.files.borrow();
    assert_eq!(files.last().unwrap()[0].content, "stray", "the verified content, not the written one");
}

#[test]
fn a_check_that_removes_a_file_the_run_wrote_stops_the_run() {
    let h = Harness::new();
    *h.workspace.removed_by_checks.borrow_mut() = Some("src/lib.rs".into());
    h.decider.push(decision(claim()));
    assert_eq!(h.run(stimulus("t-rm", RunMode::Fix, policy(FIX_POLICY))), Some(TickOutcome::Waiting));
    let r = h.load("t-rm");
    let (result, _) = r.conclusion.concluded.as_deref().unwrap();
    assert!(!result.verified);
    assert!(result.summary.contains("removed files the run wrote: src/lib.rs"), "{}", result.summary);
    let published = h.publisher.published.borrow();
    assert_eq!(
        published.last().map(|p| (p.1, p.2)),
        Some((TerminalState::NeedsHuman, false)),
        "reported, never as verified"
    );
}
