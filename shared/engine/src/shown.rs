//! What a person was shown when they approved: a digest of the decision's
//! every path and content, so an approval covers that decision and no
//! other. A repair's new decision has another digest, so it stops for a new
//! approval (`act/plan.rs`).

use agent_zero_contracts::AgentDecision;
use sha2::{Digest, Sha256};

/// `sha256:<hex>` over each proposed change's path and content, in order,
/// each length-prefixed (no two decisions share a preimage). A decision
/// without changes has the digest of nothing.
pub fn decision_digest(decision: &AgentDecision) -> String {
    let mut hasher = Sha256::new();
    for change in &decision.changes {
        for part in [&change.path, &change.content] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part.as_bytes());
        }
    }
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use agent_zero_contracts::ProposedChange;

    use super::*;

    fn decision(changes: &[(&str, &str)]) -> AgentDecision {
        let mut decision: AgentDecision = serde_json::from_value(serde_json::json!({
            "finding": {
                "title": "t", "explanation": "e", "severity": "low", "confidence": 0.9, "valid": true,
                "evidence": [], "files": [], "changeRisk": "mechanical"
            },
            "plan": ["p"],
        }))
        .expect("a decision");
        decision.changes = changes
            .iter()
            .map(|(path, content)| ProposedChange {
                path: (*path).to_owned(),
                content: (*content).to_owned(),
                reason: "r".into(),
            })
            .collect();
        decision
    }

    #[test]
    fn any_path_or_content_change_changes_the_digest_and_the_reason_does_not() {
        let shown = decision_digest(&decision(&[("calc.py", "x = 1\n")]));
        assert!(shown.starts_with("sha256:") && shown.len() == 7 + 64, "{shown}");
        assert_eq!(shown, decision_digest(&decision(&[("calc.py", "x = 1\n")])));
        for other in [
            decision(&[("calc.py", "x = 2\n")]),
            decision(&[("conftest.py", "x = 1\n")]),
            decision(&[("calc.py", "x = 1\n"), ("conftest.py", "")]),
            // The boundary between path and content is part of the digest.
            decision(&[("calc.p", "yx = 1\n")]),
            decision(&[]),
        ] {
            assert_ne!(decision_digest(&other), shown, "{:?}", other.changes);
        }
        let mut reworded = decision(&[("calc.py", "x = 1\n")]);
        reworded.changes[0].reason = "another reason".into();
        reworded.plan = vec!["another plan".into()];
        assert_eq!(decision_digest(&reworded), shown, "prose is not what is written");
    }
}
