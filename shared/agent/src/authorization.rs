//! The write authorisation chain: whether a validated change may be
//! written to the checkout without a human.
//!
//! Links are checked in this order, and the first that fails is the
//! outcome, each with its own stable code recorded in evidence:
//!
//! | # | link | outcome | code |
//! |---|---|---|---|
//! | 0 | the finding was `accepted` by validation | refused | `finding-not-accepted` |
//! | 1 | mode is `fix` or `autonomous` | refused | `mode-read-only` |
//! | 2 | `autofix.enabled` | refused | `autofix-disabled` |
//! | 3 | confidence >= `autofix.minConfidence` | refused | `confidence-below-threshold` |
//! | 4 | risk is not `high-impact` | needs a human | `high-impact-change` |
//! | 4 | risk in `autofix.allowedChangeRisks` | refused | `change-risk-not-allowed` |
//! | 5 | runner isolated when `autofix.requireIsolated` | refused | `runner-not-isolated` |
//! | 6 | distinct changed files <= `agent.maxChangedFiles` | refused | `too-many-changed-files` |
//! | 7 | every path inside the checkout | refused | `path-outside-checkout` |
//!
//! `high-impact` is not a refusal: it is a distinct outcome that stops the
//! run at `needs-human` until someone approves.

use std::collections::BTreeSet;

use agent_zero_contracts::{ChangeRisk, Refusal, RunMode, Verdict, is_repository_relative_path};

use crate::policy::Policy;

/// Everything the chain looks at, gathered by the plan step.
#[derive(Debug, Clone, Copy)]
pub struct WriteRequest<'a> {
    /// The validation verdict of the finding the change addresses.
    pub verdict: Verdict,
    /// The run's effective mode (already [`Policy::restrict_mode`]ed).
    pub mode: RunMode,
    /// The model's confidence in the finding.
    pub confidence: f64,
    /// The finding's change-risk class.
    pub change_risk: ChangeRisk,
    /// Whether the runner that would write reports `isolated: true`.
    pub runner_isolated: bool,
    /// Repository-relative paths the change would write.
    pub changed_paths: &'a [String],
}

/// One link of the chain, as a stable kebab-case code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusalCode {
    FindingNotAccepted,
    ModeReadOnly,
    AutofixDisabled,
    ConfidenceBelowThreshold,
    HighImpactChange,
    ChangeRiskNotAllowed,
    RunnerNotIsolated,
    TooManyChangedFiles,
    PathOutsideCheckout,
}

impl RefusalCode {
    /// Every code, in chain order.
    pub const ALL: &'static [Self] = &[
        Self::FindingNotAccepted,
        Self::ModeReadOnly,
        Self::AutofixDisabled,
        Self::ConfidenceBelowThreshold,
        Self::HighImpactChange,
        Self::ChangeRiskNotAllowed,
        Self::RunnerNotIsolated,
        Self::TooManyChangedFiles,
        Self::PathOutsideCheckout,
    ];

    /// The stable code recorded in evidence.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::FindingNotAccepted => "finding-not-accepted",
            Self::ModeReadOnly => "mode-read-only",
            Self::AutofixDisabled => "autofix-disabled",
            Self::ConfidenceBelowThreshold => "confidence-below-threshold",
            Self::HighImpactChange => "high-impact-change",
            Self::ChangeRiskNotAllowed => "change-risk-not-allowed",
            Self::RunnerNotIsolated => "runner-not-isolated",
            Self::TooManyChangedFiles => "too-many-changed-files",
            Self::PathOutsideCheckout => "path-outside-checkout",
        }
    }

    fn with(self, message: String) -> Refusal {
        Refusal { code: self.as_str().into(), message }
    }
}

impl std::fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The chain's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteDecision {
    /// Every link held: the change may be executed.
    Allowed,
    /// A high-impact change: stop at `needs-human` (code `high-impact-change`).
    NeedsHuman { reason: Refusal },
    /// A link failed: no write; the run reports why.
    Refused(Refusal),
}

impl WriteDecision {
    /// Whether the write may go ahead.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allowed)
    }

    /// The refusal or needs-human reason to record, if any.
    pub fn reason(&self) -> Option<&Refusal> {
        match self {
            Self::Allowed => None,
            Self::NeedsHuman { reason } | Self::Refused(reason) => Some(reason),
        }
    }
}

/// Runs the chain for `request` under `policy`.
pub fn authorize_write(policy: &Policy, request: &WriteRequest<'_>) -> WriteDecision {
    use RefusalCode as C;
    let autofix = &policy.autofix;
    let refuse = |code: RefusalCode, message: String| WriteDecision::Refused(code.with(message));

    if request.verdict != Verdict::Accepted {
        let message = format!("the finding was {}, not accepted; nothing may be written", request.verdict);
        return refuse(C::FindingNotAccepted, message);
    }
    if !request.mode.may_write() {
        let message = format!("mode `{}` never writes; writes need `fix` or `autonomous`", request.mode);
        return refuse(C::ModeReadOnly, message);
    }
    if !autofix.enabled {
        return refuse(C::AutofixDisabled, "autofix.enabled is false in .agent-zero.yml".into());
    }
    let confidence = request.confidence;
    if !(confidence.is_finite() && confidence >= autofix.min_confidence) {
        let message = format!(
            "confidence {confidence:.2} is below autofix.minConfidence {:.2}",
            autofix.min_confidence
        );
        return refuse(C::ConfidenceBelowThreshold, message);
    }
    if request.change_risk == ChangeRisk::HighImpact {
        let reason = C::HighImpactChange
            .with("high-impact changes are never written without a human's approval".into());
        return WriteDecision::NeedsHuman { reason };
    }
    if !autofix.allowed_change_risks.contains(&request.change_risk) {
        let allowed: Vec<&str> = autofix.allowed_change_risks.iter().map(|r| r.as_str()).collect();
        let message = format!(
            "change risk `{}` is not in autofix.allowedChangeRisks [{}]",
            request.change_risk,
            allowed.join(", ")
        );
        return refuse(C::ChangeRiskNotAllowed, message);
    }
    if autofix.require_isolated && !request.runner_isolated {
        let message = "autofix.requireIsolated is true and the runner does not report isolation";
        return refuse(C::RunnerNotIsolated, message.into());
    }
    let distinct: BTreeSet<&str> = request.changed_paths.iter().map(String::as_str).collect();
    let max = policy.agent.max_changed_files;
    if distinct.len() > max as usize {
        let message = format!("{} files would change; agent.maxChangedFiles is {max}", distinct.len());
        return refuse(C::TooManyChangedFiles, message);
    }
    let outside: Vec<String> = distinct
        .into_iter()
        .filter(|p| !is_repository_relative_path(p))
        .map(|p| format!("{:?}", p))
        .collect();
    if !outside.is_empty() {
        let message = format!("paths outside the checkout: {}", outside.join(", "));
        return refuse(C::PathOutsideCheckout, message);
    }
    WriteDecision::Allowed
}

#[cfg(test)]
#[path = "authorization_tests.rs"]
mod tests;
