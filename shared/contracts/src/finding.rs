//! What a model may claim, what validation made of it, and what checks showed.

use serde::{Deserialize, Serialize};

use crate::{ChangeRisk, QuoteRule, Severity, Verdict};

/// The part of a finding a model provider is allowed to author.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelFinding {
    pub title: String,
    pub explanation: String,
    pub severity: Severity,
    /// Self-reported confidence in `[0, 1]`; never proof on its own.
    pub confidence: f64,
    /// Whether the model could support the claim with repository evidence.
    pub valid: bool,
    /// Quoted repository text supporting the claim.
    pub evidence: Vec<String>,
    /// Repository-relative files the claim is about.
    pub files: Vec<String>,
    pub change_risk: ChangeRisk,
}

/// A model finding after the engine validated it against the repository.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub id: String,
    #[serde(flatten)]
    pub claim: ModelFinding,
    /// Decided by validation, never by the model or the reviewer.
    pub verdict: Verdict,
    /// Every reason the finding was not accepted; empty when accepted.
    pub rejection_reasons: Vec<String>,
    /// How its quotes were checked and what was found, when they were
    /// (an accepted claim under `validation.quotes: any` may hold quotes
    /// no cited file has: they are listed here, not hidden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_check: Option<QuoteCheck>,
}

/// The quote check of one claim: the rule the repository's policy applied
/// (`validation.quotes`) and which quotes a cited file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuoteCheck {
    pub rule: QuoteRule,
    /// Quotes found in a cited file, whitespace-collapsed.
    pub found: Vec<String>,
    /// Quotes found in no cited file.
    pub not_found: Vec<String>,
}

/// Read through [`FindingDe`], the claim's fields beside the others: serde's
/// reader of a flattened field buffers the object and reads the claim a
/// second time, with a second copy of each of its fields' deserializers.
impl<'de> Deserialize<'de> for Finding {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let FindingDe {
            id,
            title,
            explanation,
            severity,
            confidence,
            valid,
            evidence,
            files,
            change_risk,
            verdict,
            rejection_reasons,
            quote_check,
        } = FindingDe::deserialize(deserializer)?;
        let claim = ModelFinding { title, explanation, severity, confidence, valid, evidence, files, change_risk };
        Ok(Self { id, claim, verdict, rejection_reasons, quote_check })
    }
}

/// A [`Finding`] as it is written: [`ModelFinding`]'s fields, flattened.
/// Unknown fields are ignored, as the flattened reader ignored them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FindingDe {
    id: String,
    title: String,
    explanation: String,
    severity: Severity,
    confidence: f64,
    valid: bool,
    evidence: Vec<String>,
    files: Vec<String>,
    change_risk: ChangeRisk,
    verdict: Verdict,
    rejection_reasons: Vec<String>,
    #[serde(default)]
    quote_check: Option<QuoteCheck>,
}

/// A full-content file replacement proposed by a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProposedChange {
    pub path: String,
    pub content: String,
    pub reason: String,
}

/// What a model returns for one understand/plan step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentDecision {
    pub finding: ModelFinding,
    pub plan: Vec<String>,
    #[serde(default)]
    pub acceptance_criteria: Vec<String>,
    #[serde(default)]
    pub changes: Vec<ProposedChange>,
    /// A test that should fail on the pull request's head and pass on its
    /// base (at most one is run; `docs/witness.md`). Absent from decisions
    /// written before witnesses existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witness: Vec<crate::Witness>,
}

/// Most acceptance criteria a run records, as the reference bounds them.
pub const MAX_ACCEPTANCE_CRITERIA: usize = 20;
/// Most characters of one acceptance criterion, as the reference bounds it.
pub const MAX_CRITERION_CHARS: usize = 500;

/// A decision's acceptance criteria as a run records them: each trimmed,
/// the empty ones dropped, the first [`MAX_ACCEPTANCE_CRITERIA`] kept, and
/// each cut at [`MAX_CRITERION_CHARS`] (ending in `…`). They are untrusted
/// model text that reaches the evidence, the check run and a pull request's
/// body. `dropped` counts the criteria past the cap, `cut` the ones shortened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundedCriteria {
    pub kept: Vec<String>,
    pub dropped: usize,
    pub cut: usize,
}

impl AgentDecision {
    /// The acceptance criteria within the reference's bounds ([`BoundedCriteria`]).
    pub fn bounded_acceptance_criteria(&self) -> BoundedCriteria {
        let mut bounded = BoundedCriteria::default();
        for criterion in self.acceptance_criteria.iter().map(|c| c.trim()).filter(|c| !c.is_empty()) {
            if bounded.kept.len() == MAX_ACCEPTANCE_CRITERIA {
                bounded.dropped += 1;
                continue;
            }
            let kept = match criterion.char_indices().nth(MAX_CRITERION_CHARS - 1) {
                Some((at, _)) if criterion.chars().count() > MAX_CRITERION_CHARS => {
                    bounded.cut += 1;
                    format!("{}…", &criterion[..at])
                }
                _ => criterion.to_owned(),
            };
            bounded.kept.push(kept);
        }
        bounded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CheckResult, all_checks_passed};

    fn check(code: i32) -> CheckResult {
        CheckResult {
            command: vec!["cargo".into(), "test".into()],
            exit_code: code,
            stdout: String::new(),
            stderr: String::new(),
            duration_ms: 5,
            truncated_bytes: 0,
            timed_out: false,
        }
    }

    fn criteria(criteria: Vec<String>) -> AgentDecision {
        let finding: ModelFinding = serde_json::from_value(serde_json::json!({
            "title": "t", "explanation": "e", "severity": "low", "confidence": 0.9, "valid": true,
            "evidence": [], "files": [], "changeRisk": "mechanical"
        }))
        .expect("a finding");
        AgentDecision { finding, plan: vec![], acceptance_criteria: criteria, changes: vec![], witness: vec![] }
    }

    #[test]
    fn acceptance_criteria_are_bounded_as_the_reference_bounds_them() {
        let many = criteria((0..30).map(|i| format!("criterion {i}")).collect());
        let bounded = many.bounded_acceptance_criteria();
        assert_eq!((bounded.kept.len(), bounded.dropped, bounded.cut), (20, 10, 0));
        assert_eq!(bounded.kept[19], "criterion 19", "the first 20 are kept, in order");
        let long = criteria(vec!["é".repeat(1_000), "  ".into(), " x ".into(), "y".repeat(500)]);
        let bounded = long.bounded_acceptance_criteria();
        assert_eq!(bounded.kept.len(), 3, "the blank one is dropped, and not counted against the cap");
        assert_eq!(bounded.kept[0].chars().count(), MAX_CRITERION_CHARS);
        assert!(bounded.kept[0].ends_with("é…"), "cut on a character boundary");
        assert_eq!(bounded.kept[1], "x");
        assert_eq!(bounded.kept[2], "y".repeat(500), "exactly at the cap is kept whole");
        assert_eq!((bounded.dropped, bounded.cut), (0, 1));
        assert_eq!(criteria(vec![]).bounded_acceptance_criteria(), BoundedCriteria::default());
    }

    #[test]
    fn checks_pass_only_when_all_ran_and_passed() {
        assert!(!all_checks_passed(&[]));
        assert!(all_checks_passed(&[check(0), check(0)]));
        assert!(!all_checks_passed(&[check(0), check(1)]));
        let mut slow = check(0);
        slow.timed_out = true;
        assert!(!all_checks_passed(&[slow]));
    }

    #[test]
    fn finding_flattens_claim_in_camel_case() {
        let f = Finding {
            id: "f1".into(),
            claim: ModelFinding {
                title: "t".into(),
                explanation: "e".into(),
                severity: Severity::High,
                confidence: 0.9,
                valid: true,
                evidence: vec!["x".into()],
                files: vec!["a.rs".into()],
                change_risk: ChangeRisk::Mechanical,
            },
            verdict: Verdict::Accepted,
            rejection_reasons: vec![],
            quote_check: None,
        };
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["changeRisk"], "mechanical");
        assert_eq!(v["rejectionReasons"], serde_json::json!([]));
        assert!(v.get("quoteCheck").is_none(), "left out when there was none: {v}");
        assert_eq!(serde_json::from_value::<Finding>(v.clone()).unwrap(), f);
        let checked = Finding {
            quote_check: Some(QuoteCheck {
                rule: QuoteRule::Any,
                found: vec!["x".into()],
                not_found: vec!["y".into()],
            }),
            ..f.clone()
        };
        let c = serde_json::to_value(&checked).unwrap();
        assert_eq!(c["quoteCheck"], serde_json::json!({"rule": "any", "found": ["x"], "notFound": ["y"]}));
        assert_eq!(serde_json::from_value::<Finding>(c).unwrap(), checked);
        assert_eq!(serde_json::from_slice::<Finding>(&serde_json::to_vec(&f).unwrap()).unwrap(), f);
        // As the flattened reader did: an unknown field is ignored, a missing one named.
        let mut extra = v.clone();
        extra["note"] = "n".into();
        assert_eq!(serde_json::from_str::<Finding>(&extra.to_string()).unwrap(), f);
        let mut missing = v;
        missing.as_object_mut().unwrap().remove("severity");
        let error = serde_json::from_str::<Finding>(&missing.to_string()).unwrap_err().to_string();
        assert!(error.starts_with("missing field `severity`"), "{error}");
    }

    #[test]
    fn decisions_reject_unknown_fields() {
        let err = serde_json::from_str::<ProposedChange>(r#"{"path":"a","content":"b","reason":"c","mode":"x"}"#)
            .unwrap_err();
        assert!(err.to_string().contains("unknown field `mode`"), "{err}");
    }
}
