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
//! | 3 | confidence >= `autofix.minConfidence` | needs a human | `confidence-below-threshold` |
//! | 4 | every path inside the checkout | refused | `path-outside-checkout` |
//! | 5 | every path cited by the validated finding and, when it exists at the leased commit, holding a verified quote itself or named by the feedback or issue (a new file needs `autofix.allowNewFiles`) | needs a human | `out-of-scope` |
//! | 6 | distinct changed files <= `agent.maxChangedFiles` | needs a human | `too-many-changed-files` |
//! | 7 | risk, classified from the paths, is not `high-impact` | needs a human | `high-impact-change` |
//! | 8 | risk in `autofix.allowedChangeRisks` | needs a human | `change-risk-not-allowed` |
//! | 9 | runner isolated when `autofix.requireIsolated` | needs a human | `runner-not-isolated` |
//!
//! The risk is never the model's word alone: [`classify_change_risk_in`] (with what the repository runs of its documentation, [`crate::DocUse`])
//! raises the declared class from the paths (CI, policy, tests, manifests
//! and lockfiles are `high-impact`; executable source is at least
//! `behavioral`). Scope is earned by evidence, file by file: the model
//! cannot widen it by naming more files, because each existing file it
//! changes must itself hold a quote validation verified (or be the file
//! the feedback or issue names); one supported quote does not make every
//! cited file writable.
//!
//! The links that end in "needs a human" stop the run at `needs-human`
//! until someone decides, as the reference's do; a person's approval of
//! the decision they were shown stands in for the link that stopped it
//! ([`WriteRequest::approved`]), and for that link alone: every other link
//! still holds. The refused links are what no person can approve here: a
//! finding validation did not accept, a mode or policy that never writes,
//! a path outside the checkout.

use std::collections::BTreeSet;

use agent_zero_contracts::{ChangeRisk, Refusal, RunMode, Verdict, inserted, is_repository_relative_path};

use crate::policy::Policy;
use crate::risk::classify_change_risk_in;
use crate::validation::normalize_path;

/// Everything the chain looks at, gathered by the plan step.
#[derive(Debug, Clone, Copy)]
pub struct WriteRequest<'a> {
    /// The validation verdict of the finding the change addresses.
    pub verdict: Verdict,
    /// The run's effective mode (already [`Policy::restrict_mode`]ed).
    pub mode: RunMode,
    /// The model's confidence in the finding.
    pub confidence: f64,
    /// The change-risk class the model declared; the chain raises it from
    /// the paths and never lowers it.
    pub change_risk: ChangeRisk,
    /// Whether the runner that would write reports `isolated: true`.
    pub runner_isolated: bool,
    /// Repository-relative paths the change would write.
    pub changed_paths: &'a [String],
    /// Files the validated finding cites.
    pub cited_files: &'a [String],
    /// The cited files that hold a verified quote themselves
    /// ([`crate::quoted_files`]).
    pub quoted_files: &'a [String],
    /// Files the task's feedback or issue names, or the requester scoped
    /// it to: they earn scope without a quote of their own.
    pub named_files: &'a [String],
    /// Every file at the leased commit.
    pub checkout_files: &'a [String],
    /// The needs-human links (their [`RefusalCode`]s) a person approved for
    /// this very decision: each stands in for its own link only.
    pub approved: &'a [String],
    /// The documentation the repository runs or includes: a change to it
    /// is high-impact, not mechanical.
    pub doc_use: &'a crate::risk::DocUse,
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
    OutOfScope,
}

impl RefusalCode {
    /// Every code, in chain order.
    pub const ALL: &'static [Self] = &[
        Self::FindingNotAccepted,
        Self::ModeReadOnly,
        Self::AutofixDisabled,
        Self::ConfidenceBelowThreshold,
        Self::PathOutsideCheckout,
        Self::OutOfScope,
        Self::TooManyChangedFiles,
        Self::HighImpactChange,
        Self::ChangeRiskNotAllowed,
        Self::RunnerNotIsolated,
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
            Self::OutOfScope => "out-of-scope",
        }
    }

    /// The code named `code`, if it is one of the chain's.
    pub fn parse(code: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.as_str() == code)
    }

    /// Whether the link stops the run for a person (and a person's approval
    /// of the decision stands in for it), rather than refusing outright.
    pub const fn needs_human(self) -> bool {
        !matches!(
            self,
            Self::FindingNotAccepted | Self::ModeReadOnly | Self::AutofixDisabled | Self::PathOutsideCheckout
        )
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
    /// Stop at `needs-human` until a person decides (the table's "needs a
    /// human" links).
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
    let stop = |code: RefusalCode, message: String| {
        if request.approved.iter().any(|a| a == code.as_str()) {
            None
        } else {
            Some(WriteDecision::NeedsHuman { reason: code.with(message) })
        }
    };
    let confidence = request.confidence;
    if !(confidence.is_finite() && confidence >= autofix.min_confidence) {
        let message =
            format!("confidence {confidence:.2} is below autofix.minConfidence {:.2}", autofix.min_confidence);
        // A confidence that is not a number is nothing a person can approve.
        if !confidence.is_finite() {
            return refuse(C::ConfidenceBelowThreshold, message);
        }
        if let Some(stopped) = stop(C::ConfidenceBelowThreshold, message) {
            return stopped;
        }
    }
    let distinct: BTreeSet<&str> = inserted(request.changed_paths.iter().map(String::as_str));
    let outside: Vec<String> =
        distinct.iter().filter(|p| !is_repository_relative_path(p)).map(|p| format!("{p:?}")).collect();
    if !outside.is_empty() {
        let message = format!("paths outside the checkout: {}", outside.join(", "));
        return refuse(C::PathOutsideCheckout, message);
    }
    let unearned = out_of_scope(policy, request, &distinct);
    if !unearned.is_empty() {
        let message = format!(
            "changes outside the validated scope (a change may touch only files the validated finding cites, \
             each holding a verified quote or named by the feedback or issue{}): {}",
            if autofix.allow_new_files { ", or new files" } else { "" },
            unearned.join("; ")
        );
        if let Some(stopped) = stop(C::OutOfScope, message) {
            return stopped;
        }
    }
    let max = policy.agent.max_changed_files;
    if distinct.len() > max as usize {
        let message = format!("{} files would change; agent.maxChangedFiles is {max}", distinct.len());
        if let Some(stopped) = stop(C::TooManyChangedFiles, message) {
            return stopped;
        }
    }
    let assessed = classify_change_risk_in(request.change_risk, request.changed_paths, request.doc_use);
    let risk = assessed.risk;
    let approved_high_impact = request.approved.iter().any(|a| a == C::HighImpactChange.as_str());
    if risk == ChangeRisk::HighImpact && !approved_high_impact {
        let why = match &assessed.high_impact {
            Some((path, kind)) => format!("`{path}` is {}", kind.describe()),
            None => "the change was declared high-impact".to_owned(),
        };
        let reason = C::HighImpactChange
            .with(format!("{why}; high-impact changes are never written without a human's approval"));
        return WriteDecision::NeedsHuman { reason };
    }
    // A person who approved the high-impact link decided the risk; every
    // other link still holds.
    let risk_decided = risk == ChangeRisk::HighImpact && approved_high_impact;
    if !risk_decided && !autofix.allowed_change_risks.contains(&risk) {
        let allowed: Vec<&str> = autofix.allowed_change_risks.iter().map(|r| r.as_str()).collect();
        let raised = if risk == request.change_risk {
            String::new()
        } else {
            format!(" (declared `{}`, raised by the paths it writes)", request.change_risk)
        };
        let message =
            format!("change risk `{risk}`{raised} is not in autofix.allowedChangeRisks [{}]", allowed.join(", "));
        if let Some(stopped) = stop(C::ChangeRiskNotAllowed, message) {
            return stopped;
        }
    }
    if autofix.require_isolated && !request.runner_isolated {
        let message = "autofix.requireIsolated is true and the runner does not report isolation";
        if let Some(stopped) = stop(C::RunnerNotIsolated, message.into()) {
            return stopped;
        }
    }
    WriteDecision::Allowed
}

/// The changed paths the evidence did not earn, each with why: not cited
/// by the validated finding, an existing file that holds no verified quote
/// and that nobody named, or absent at the leased commit (unless
/// `autofix.allowNewFiles`).
fn out_of_scope(policy: &Policy, request: &WriteRequest<'_>, distinct: &BTreeSet<&str>) -> Vec<String> {
    let normalized = |paths: &[String]| -> BTreeSet<String> { inserted(paths.iter().map(|p| normalize_path(p))) };
    let cited = normalized(request.cited_files);
    let present = normalized(request.checkout_files);
    let earned: BTreeSet<String> =
        normalized(request.quoted_files).into_iter().chain(normalized(request.named_files)).collect();
    distinct
        .iter()
        .filter_map(|path| {
            let normalized = normalize_path(path);
            if !cited.contains(&normalized) {
                Some(format!("`{path}` is not cited by the validated finding"))
            } else if !present.contains(&normalized) {
                (!policy.autofix.allow_new_files)
                    .then(|| format!("`{path}` does not exist at the leased commit and autofix.allowNewFiles is false"))
            } else if !earned.contains(&normalized) {
                Some(format!(
                    "`{path}` holds none of the claim's verified quotes and the feedback or issue does not name it"
                ))
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "authorization_tests.rs"]
mod tests;
