use agent_zero_contracts::{ChangeRisk, RunMode, Verdict};

use super::*;
use crate::policy::{AutofixPolicy, Policy};

fn writable_policy() -> Policy {
    Policy {
        mode: RunMode::Fix,
        autofix: AutofixPolicy { enabled: true, ..AutofixPolicy::default() },
        ..Policy::default()
    }
}

/// Inert files, so the paths keep a declared `mechanical` risk.
fn paths(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("docs/f{i}.md")).collect()
}

/// A request whose finding cites, and whose checkout holds, every changed path.
fn request(changed: &[String]) -> WriteRequest<'_> {
    WriteRequest {
        verdict: Verdict::Accepted,
        mode: RunMode::Fix,
        confidence: 0.9,
        change_risk: ChangeRisk::Mechanical,
        runner_isolated: true,
        changed_paths: changed,
        cited_files: changed,
        quoted_files: changed,
        named_files: &[],
        checkout_files: changed,
        approved: &[],
        doc_use: &NOTHING_RUN,
    }
}

/// A repository that runs none of its documentation.
static NOTHING_RUN: std::sync::LazyLock<crate::DocUse> = std::sync::LazyLock::new(crate::DocUse::default);

fn code(decision: &WriteDecision) -> &str {
    decision.reason().map_or("allowed", |r| r.code.as_str())
}

#[test]
fn a_request_that_passes_every_link_is_allowed() {
    let changed = paths(2);
    let d = authorize_write(&writable_policy(), &request(&changed));
    assert_eq!(d, WriteDecision::Allowed);
    assert!(d.is_allowed() && d.reason().is_none());
    let auto = WriteRequest { mode: RunMode::Autonomous, ..request(&changed) };
    assert!(authorize_write(&writable_policy(), &auto).is_allowed());
}

#[test]
fn only_accepted_findings_are_written() {
    let changed = paths(1);
    for verdict in [Verdict::Rejected, Verdict::Inconclusive] {
        let d = authorize_write(&writable_policy(), &WriteRequest { verdict, ..request(&changed) });
        assert_eq!(code(&d), "finding-not-accepted");
    }
}

#[test]
fn read_only_modes_never_write() {
    let changed = paths(1);
    for mode in [RunMode::Observe, RunMode::Suggest] {
        let d = authorize_write(&writable_policy(), &WriteRequest { mode, ..request(&changed) });
        assert!(matches!(d, WriteDecision::Refused(_)));
        assert_eq!(code(&d), "mode-read-only");
        assert!(d.reason().unwrap().message.contains(mode.as_str()));
    }
}

#[test]
fn autofix_must_be_enabled() {
    let changed = paths(1);
    let mut p = writable_policy();
    p.autofix.enabled = false;
    let d = authorize_write(&p, &request(&changed));
    assert_eq!(code(&d), "autofix-disabled");
    assert!(d.reason().unwrap().message.contains("autofix.enabled"));
}

#[test]
fn confidence_must_reach_the_threshold() {
    let changed = paths(1);
    let p = writable_policy();
    for confidence in [0.84, f64::NAN, -1.0] {
        let d = authorize_write(&p, &WriteRequest { confidence, ..request(&changed) });
        assert_eq!(code(&d), "confidence-below-threshold", "{confidence}");
        // A low confidence waits for a person; one that is not a number is refused.
        assert_eq!(matches!(d, WriteDecision::NeedsHuman { .. }), confidence.is_finite(), "{confidence}");
    }
    let exact = WriteRequest { confidence: 0.85, ..request(&changed) };
    assert!(authorize_write(&p, &exact).is_allowed());
}

#[test]
fn high_impact_always_needs_a_human() {
    let changed = paths(1);
    let mut p = writable_policy();
    p.autofix.allowed_change_risks = vec![ChangeRisk::Mechanical, ChangeRisk::Behavioral, ChangeRisk::HighImpact];
    let high = WriteRequest { change_risk: ChangeRisk::HighImpact, ..request(&changed) };
    let d = authorize_write(&p, &high);
    assert!(matches!(d, WriteDecision::NeedsHuman { .. }), "{d:?}");
    assert_eq!(code(&d), "high-impact-change");
    assert!(!d.is_allowed());
}

#[test]
fn risk_must_be_allowed_by_policy() {
    let changed = paths(1);
    let behavioral = WriteRequest { change_risk: ChangeRisk::Behavioral, ..request(&changed) };
    let d = authorize_write(&writable_policy(), &behavioral);
    assert!(matches!(d, WriteDecision::NeedsHuman { .. }), "{d:?}");
    assert_eq!(code(&d), "change-risk-not-allowed");
    assert!(d.reason().unwrap().message.contains("[mechanical]"));
    let mut p = writable_policy();
    p.autofix.allowed_change_risks.push(ChangeRisk::Behavioral);
    assert!(authorize_write(&p, &behavioral).is_allowed());
}

#[test]
fn isolation_is_required_when_policy_says_so() {
    let changed = paths(1);
    let shared = WriteRequest { runner_isolated: false, ..request(&changed) };
    let d = authorize_write(&writable_policy(), &shared);
    assert!(matches!(d, WriteDecision::NeedsHuman { .. }), "{d:?}");
    assert_eq!(code(&d), "runner-not-isolated");
    let mut p = writable_policy();
    p.autofix.require_isolated = false;
    assert!(authorize_write(&p, &shared).is_allowed());
}

#[test]
fn changed_files_are_bounded() {
    let p = writable_policy();
    let ten = paths(10);
    assert!(authorize_write(&p, &request(&ten)).is_allowed());
    let eleven = paths(11);
    let d = authorize_write(&p, &request(&eleven));
    assert_eq!(code(&d), "too-many-changed-files");
    assert!(matches!(d, WriteDecision::NeedsHuman { .. }), "{d:?}");
    assert!(d.reason().unwrap().message.contains("11 files"));
    let mut repeated = paths(10);
    repeated.extend(paths(10));
    assert!(authorize_write(&p, &request(&repeated)).is_allowed(), "a path counts once");
}

#[test]
fn every_path_stays_inside_the_checkout() {
    let p = writable_policy();
    for bad in ["/etc/passwd", "../up.rs", "src/../../x", ".git/hooks/pre-commit", "a\0b", "C:\\x"] {
        let changed = vec!["docs/ok.md".to_owned(), bad.to_owned()];
        let d = authorize_write(&p, &request(&changed));
        assert_eq!(code(&d), "path-outside-checkout", "{bad:?}");
        assert!(!d.reason().unwrap().message.contains('\0'), "NUL is escaped in the message");
    }
}

#[test]
fn links_are_checked_in_order() {
    // Everything wrong at once: the first link wins, and each fix exposes the next.
    let outside = vec!["../x".to_owned()];
    let mut many: Vec<String> = (0..11).map(|i| format!("src/f{i}.rs")).collect();
    many.push("../x".into());
    let inside: Vec<String> = many[..11].to_vec();
    let cited_some = many[..1].to_vec();
    let high: Vec<String> = vec!["src/f0.rs".into(), ".github/workflows/ci.yml".into()];
    let mut p = Policy::default();
    p.agent.max_changed_files = 10;
    let mut r = WriteRequest {
        verdict: Verdict::Rejected,
        mode: RunMode::Observe,
        confidence: 0.1,
        change_risk: ChangeRisk::Mechanical,
        runner_isolated: false,
        changed_paths: &many,
        cited_files: &cited_some,
        quoted_files: &many,
        named_files: &[],
        checkout_files: &many,
        approved: &[],
        doc_use: &NOTHING_RUN,
    };
    let mut seen = vec![];
    let mut check = |p: &Policy, r: &WriteRequest<'_>| seen.push(code(&authorize_write(p, r)).to_owned());
    check(&p, &r);
    r.verdict = Verdict::Accepted;
    check(&p, &r);
    r.mode = RunMode::Fix;
    check(&p, &r);
    p.autofix.enabled = true;
    check(&p, &r);
    r.confidence = 0.99;
    check(&p, &r);
    r.changed_paths = &inside;
    check(&p, &r);
    r.cited_files = &inside;
    check(&p, &r);
    r.changed_paths = &high;
    r.cited_files = &high;
    r.quoted_files = &high;
    r.checkout_files = &high;
    check(&p, &r);
    r.changed_paths = &inside[..1];
    check(&p, &r);
    p.autofix.allowed_change_risks.push(ChangeRisk::Behavioral);
    check(&p, &r);
    p.autofix.require_isolated = false;
    check(&p, &r);
    r.changed_paths = &outside;
    check(&p, &r);
    let expected = [
        "finding-not-accepted",
        "mode-read-only",
        "autofix-disabled",
        "confidence-below-threshold",
        "path-outside-checkout",
        "out-of-scope",
        "too-many-changed-files",
        "high-impact-change",
        "change-risk-not-allowed",
        "runner-not-isolated",
        "allowed",
        "path-outside-checkout",
    ];
    assert_eq!(seen, expected);
    // The codes in chain order are exactly the ones seen, in that order.
    let chain: Vec<&str> = RefusalCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(chain, expected[..10]);
}

#[test]
fn the_paths_raise_the_declared_risk() {
    let mut p = writable_policy();
    // A model that calls a source change mechanical is not believed.
    let source = vec!["src/lib.rs".to_owned()];
    let d = authorize_write(&p, &request(&source));
    assert_eq!(code(&d), "change-risk-not-allowed");
    assert!(d.reason().unwrap().message.contains("declared `mechanical`, raised by the paths"), "{d:?}");
    p.autofix.allowed_change_risks.push(ChangeRisk::Behavioral);
    assert!(authorize_write(&p, &request(&source)).is_allowed());
    // CI, policy, tests and lockfiles always stop for a person, whatever was declared.
    for path in [".github/workflows/ci.yml", ".agent-zero.yml", "tests/test_calc.py", "Cargo.lock", "package.json"] {
        let changed = vec!["src/lib.rs".to_owned(), path.to_owned()];
        let d = authorize_write(&p, &request(&changed));
        assert!(matches!(d, WriteDecision::NeedsHuman { .. }), "{path}: {d:?}");
        assert_eq!(code(&d), "high-impact-change", "{path}");
        assert!(d.reason().unwrap().message.contains(path), "{d:?}");
    }
}

#[test]
fn an_approval_decides_only_the_link_it_was_given_for() {
    let mut p = writable_policy();
    let high_impact = ["high-impact-change".to_owned()];
    let changed = vec![".github/workflows/ci.yml".to_owned()];
    let approved = WriteRequest { approved: &high_impact, ..request(&changed) };
    assert!(authorize_write(&p, &approved).is_allowed());
    // Every other link still holds after an approval.
    let shared = WriteRequest { runner_isolated: false, ..approved };
    assert_eq!(code(&authorize_write(&p, &shared)), "runner-not-isolated");
    let uncited = WriteRequest { cited_files: &[], ..approved };
    assert_eq!(code(&authorize_write(&p, &uncited)), "out-of-scope");
    // An approval of the high-impact link does not allow a behavioral
    // change policy does not allow: that is a link of its own.
    let source = vec!["src/lib.rs".to_owned()];
    let behavioral = WriteRequest { approved: &high_impact, ..request(&source) };
    assert_eq!(code(&authorize_write(&p, &behavioral)), "change-risk-not-allowed");
    let risk = ["change-risk-not-allowed".to_owned()];
    assert!(authorize_write(&p, &WriteRequest { approved: &risk, ..request(&source) }).is_allowed());
    p.autofix.allowed_change_risks.push(ChangeRisk::Behavioral);
    assert!(authorize_write(&p, &behavioral).is_allowed());
    // Each needs-human link is lifted by its own approval, one at a time.
    let p = writable_policy();
    let one = paths(1);
    let low = WriteRequest { confidence: 0.5, runner_isolated: false, ..request(&one) };
    assert_eq!(code(&authorize_write(&p, &low)), "confidence-below-threshold");
    let confidence = ["confidence-below-threshold".to_owned()];
    let lifted = WriteRequest { approved: &confidence, ..low };
    assert_eq!(code(&authorize_write(&p, &lifted)), "runner-not-isolated", "the next link still holds");
    let both = ["confidence-below-threshold".to_owned(), "runner-not-isolated".to_owned()];
    assert!(authorize_write(&p, &WriteRequest { approved: &both, ..low }).is_allowed());
    let eleven = paths(11);
    let files = ["too-many-changed-files".to_owned()];
    assert!(authorize_write(&p, &WriteRequest { approved: &files, ..request(&eleven) }).is_allowed());
    // What no person can approve stays refused, whatever is approved.
    let every: Vec<String> = RefusalCode::ALL.iter().map(|c| c.as_str().to_owned()).collect();
    let outside = vec!["../x".to_owned()];
    let d = authorize_write(&p, &WriteRequest { approved: &every, ..request(&outside) });
    assert!(matches!(d, WriteDecision::Refused(_)) && code(&d) == "path-outside-checkout", "{d:?}");
    let d = authorize_write(&p, &WriteRequest { approved: &every, confidence: f64::NAN, ..request(&one) });
    assert!(matches!(d, WriteDecision::Refused(_)), "{d:?}");
    let d = authorize_write(&p, &WriteRequest { approved: &every, verdict: Verdict::Inconclusive, ..request(&one) });
    assert_eq!(code(&d), "finding-not-accepted");
    // Which links a person can approve, by their code.
    let approvable: Vec<&str> = RefusalCode::ALL.iter().filter(|c| c.needs_human()).map(|c| c.as_str()).collect();
    assert_eq!(
        approvable,
        [
            "confidence-below-threshold",
            "out-of-scope",
            "too-many-changed-files",
            "high-impact-change",
            "change-risk-not-allowed",
            "runner-not-isolated"
        ]
    );
    assert_eq!(RefusalCode::parse("out-of-scope"), Some(RefusalCode::OutOfScope));
    assert_eq!(RefusalCode::parse("no-checks"), None);
}

#[test]
fn scope_is_earned_by_evidence() {
    let mut p = writable_policy();
    let changed = vec!["docs/a.md".to_owned(), "docs/b.md".to_owned()];
    let cited = vec!["docs/a.md".to_owned()];
    // Not cited by the validated finding.
    let uncited = WriteRequest { cited_files: &cited, ..request(&changed) };
    let d = authorize_write(&p, &uncited);
    assert!(matches!(d, WriteDecision::NeedsHuman { .. }), "{d:?}");
    assert_eq!(code(&d), "out-of-scope");
    assert!(d.reason().unwrap().message.contains("`docs/b.md` is not cited"), "{d:?}");
    // Cited but absent at the leased commit: a new file needs autofix.allowNewFiles.
    let present = vec!["docs/a.md".to_owned()];
    let new_file = WriteRequest { checkout_files: &present, ..request(&changed) };
    let d = authorize_write(&p, &new_file);
    assert_eq!(code(&d), "out-of-scope");
    assert!(d.reason().unwrap().message.contains("`docs/b.md` does not exist at the leased commit"), "{d:?}");
    p.autofix.allow_new_files = true;
    assert!(authorize_write(&p, &new_file).is_allowed());
    // Spellings of one path are one path.
    let dotted = vec!["./docs/a.md".to_owned()];
    assert!(
        authorize_write(&p, &WriteRequest { cited_files: &cited, checkout_files: &cited, ..request(&dotted) })
            .is_allowed()
    );
}

#[test]
fn each_existing_file_earns_its_own_scope() {
    let p = writable_policy();
    let changed = vec!["docs/guide.md".to_owned(), "docs/faq.md".to_owned()];
    // Both cited and present, but only lib.rs holds a verified quote.
    let quoted = vec!["docs/guide.md".to_owned()];
    let one_quote = WriteRequest { quoted_files: &quoted, ..request(&changed) };
    let d = authorize_write(&p, &one_quote);
    assert!(matches!(d, WriteDecision::NeedsHuman { .. }), "{d:?}");
    assert_eq!(code(&d), "out-of-scope");
    let message = &d.reason().unwrap().message;
    assert!(message.contains("`docs/faq.md` holds none of the claim's verified quotes"), "{message}");
    assert!(!message.contains("`docs/guide.md`"), "the quoted file earned its scope: {message}");
    // The feedback or issue naming the other file earns it.
    let named = vec!["./docs/faq.md".to_owned()];
    assert!(authorize_write(&p, &WriteRequest { named_files: &named, ..one_quote }).is_allowed());
    // A new file holds no quote: autofix.allowNewFiles decides it, as before.
    let present = vec!["docs/guide.md".to_owned()];
    let mut new_files = p.clone();
    new_files.autofix.allow_new_files = true;
    let with_new = WriteRequest { checkout_files: &present, ..one_quote };
    assert!(authorize_write(&new_files, &with_new).is_allowed());
}

#[test]
fn codes_are_distinct_kebab_case() {
    let codes: Vec<&str> = RefusalCode::ALL.iter().map(|c| c.as_str()).collect();
    for (i, c) in codes.iter().enumerate() {
        assert!(c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '-'), "{c}");
        assert!(!codes[i + 1..].contains(c), "{c} twice");
    }
    assert_eq!(RefusalCode::AutofixDisabled.to_string(), "autofix-disabled");
}

/// A documentation file the repository runs as doctests (pytest's
/// `--doctest-glob`) or compiles in (`include_str!`) is high-impact: it
/// stops for a person; the same file in a repository that runs none of
/// its documentation stays mechanical.
#[test]
fn documentation_the_repository_runs_needs_a_person() {
    let readme = vec!["README.md".to_owned()];
    assert_eq!(code(&authorize_write(&writable_policy(), &request(&readme))), "allowed");
    for files in [
        &[("pytest.ini", "[pytest]\naddopts = --doctest-glob=*.md\n")][..],
        &[("src/lib.rs", "#![doc = include_str!(\"../README.md\")]\n")][..],
    ] {
        let runs = crate::DocUse::from_files(files);
        let d = authorize_write(&writable_policy(), &WriteRequest { doc_use: &runs, ..request(&readme) });
        assert_eq!(code(&d), "high-impact-change", "{files:?}: {d:?}");
    }
}
