use agent_zero_contracts::{ChangeRisk, RunMode, Verdict};

use super::*;
use crate::policy::{AutofixPolicy, Policy};

/// A link of the chain repaired by one edit.
type Fix = dyn Fn(&mut Policy, &mut WriteRequest<'_>);

fn writable_policy() -> Policy {
    Policy {
        mode: RunMode::Fix,
        autofix: AutofixPolicy { enabled: true, ..AutofixPolicy::default() },
        ..Policy::default()
    }
}

fn paths(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("src/f{i}.rs")).collect()
}

fn request(changed: &[String]) -> WriteRequest<'_> {
    WriteRequest {
        verdict: Verdict::Accepted,
        mode: RunMode::Fix,
        confidence: 0.9,
        change_risk: ChangeRisk::Mechanical,
        runner_isolated: true,
        changed_paths: changed,
    }
}

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
    assert!(matches!(d, WriteDecision::Refused(_)));
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
    assert_eq!(code(&authorize_write(&writable_policy(), &shared)), "runner-not-isolated");
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
    assert!(d.reason().unwrap().message.contains("11 files"));
    let mut repeated = paths(10);
    repeated.extend(paths(10));
    assert!(authorize_write(&p, &request(&repeated)).is_allowed(), "a path counts once");
}

#[test]
fn every_path_stays_inside_the_checkout() {
    let p = writable_policy();
    for bad in ["/etc/passwd", "../up.rs", "src/../../x", ".git/hooks/pre-commit", "a\0b", "C:\\x"] {
        let changed = vec!["src/ok.rs".to_owned(), bad.to_owned()];
        let d = authorize_write(&p, &request(&changed));
        assert_eq!(code(&d), "path-outside-checkout", "{bad:?}");
        assert!(!d.reason().unwrap().message.contains('\0'), "NUL is escaped in the message");
    }
}

#[test]
fn links_are_checked_in_order() {
    // Everything wrong at once: the first link wins, and each fix exposes the next.
    let changed = vec!["../x".to_owned(); 1];
    let mut many = paths(11);
    many.push("../x".into());
    let mut p = Policy::default();
    p.agent.max_changed_files = 10;
    let mut r = WriteRequest {
        verdict: Verdict::Rejected,
        mode: RunMode::Observe,
        confidence: 0.1,
        change_risk: ChangeRisk::Behavioral,
        runner_isolated: false,
        changed_paths: &many,
    };
    let mut seen = vec![];
    let steps: [&Fix; 8] = [
        &|_, r| r.verdict = Verdict::Accepted,
        &|_, r| r.mode = RunMode::Fix,
        &|p, _| p.autofix.enabled = true,
        &|_, r| r.confidence = 0.99,
        &|p, _| p.autofix.allowed_change_risks.push(ChangeRisk::Behavioral),
        &|p, _| p.autofix.require_isolated = false,
        &|p, _| p.agent.max_changed_files = 20,
        &|_, _| {},
    ];
    for step in steps {
        seen.push(code(&authorize_write(&p, &r)).to_owned());
        step(&mut p, &mut r);
    }
    r.changed_paths = &changed;
    seen.push(code(&authorize_write(&p, &r)).to_owned());
    r.changed_paths = &[];
    seen.push(code(&authorize_write(&p, &r)).to_owned());
    let expected: Vec<&str> = RefusalCode::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| *c != "high-impact-change")
        .chain(["path-outside-checkout", "allowed"])
        .collect();
    assert_eq!(seen, expected);
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
