//! The one mapping from a finished run to what every report leads with:
//! terminal state (+ verdict, verified, refusal) -> [`Outcome`] ->
//! [`CheckConclusion`].

use agent_zero_contracts::{EvidenceBundle, TerminalState, Verdict, is_verified};

/// Provider-neutral outcome of a finished run.
///
/// | state         | condition (first that holds)          | outcome          | GitHub conclusion  |
/// |---------------|---------------------------------------|------------------|--------------------|
/// | `failed`      | any                                   | `Failed`         | `failure`          |
/// | `needs-human` | any                                   | `NeedsHuman`     | `action_required`  |
/// | `completed`   | [`shown_verified`]                    | `Verified`       | `success`          |
/// | `completed`   | a refusal is recorded                 | `Refused`        | `neutral`          |
/// | `completed`   | verdict `accepted`                    | `Confirmed`      | `neutral`          |
/// | `completed`   | verdict `rejected`                    | `NotConfirmed`   | `neutral`          |
/// | `completed`   | verdict `inconclusive`                | `Inconclusive`   | `neutral`          |
///
/// Why: `success` claims the evidence shows the work is done and sound, which
/// only a change that passed every check shows. A confirmed claim without a
/// proven change, a rejected claim, an inconclusive one and a policy refusal
/// are information, not a pass or a fail: `neutral` (a required check with
/// `neutral` does not block a merge, and a model's opinion should not).
/// `failure` is reserved for the run itself failing; `action_required` for a
/// run waiting on a human decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A change was written and every check passed.
    Verified,
    /// The claim was supported, but no change was proven.
    Confirmed,
    /// A write was refused by policy (see the bundle's refusal code).
    Refused,
    /// The claim was contradicted or unsupported.
    NotConfirmed,
    /// The evidence was not enough to decide.
    Inconclusive,
    /// Waiting for a human decision.
    NeedsHuman,
    /// The run failed.
    Failed,
}

/// GitHub check-run conclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
    ActionRequired,
}

impl CheckConclusion {
    /// The value of the `conclusion` field in GitHub's check-run API.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
            Self::Neutral => "neutral",
            Self::ActionRequired => "action_required",
        }
    }
}

impl Outcome {
    /// Every outcome.
    pub const ALL: &'static [Self] = &[
        Self::Verified,
        Self::Confirmed,
        Self::Refused,
        Self::NotConfirmed,
        Self::Inconclusive,
        Self::NeedsHuman,
        Self::Failed,
    ];

    /// The GitHub check-run conclusion for this outcome (table on [`Outcome`]).
    pub const fn github_conclusion(self) -> CheckConclusion {
        match self {
            Self::Verified => CheckConclusion::Success,
            Self::Confirmed | Self::Refused | Self::NotConfirmed | Self::Inconclusive => CheckConclusion::Neutral,
            Self::NeedsHuman => CheckConclusion::ActionRequired,
            Self::Failed => CheckConclusion::Failure,
        }
    }

    /// Stable kebab-case name (for JSON, CSS classes, logs).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::Confirmed => "confirmed",
            Self::Refused => "refused",
            Self::NotConfirmed => "not-confirmed",
            Self::Inconclusive => "inconclusive",
            Self::NeedsHuman => "needs-human",
            Self::Failed => "failed",
        }
    }

    /// The words a report leads with. Only `Verified` says "verified".
    pub const fn headline(self) -> &'static str {
        match self {
            Self::Verified => "Verified change",
            Self::Confirmed => "Confirmed, no change proven",
            Self::Refused => "Write refused by policy",
            Self::NotConfirmed => "Not confirmed",
            Self::Inconclusive => "Inconclusive",
            Self::NeedsHuman => "Needs a human decision",
            Self::Failed => "Run failed",
        }
    }
}

/// Whether a report may say "verified": the record says so *and* its own
/// state, changed files and checks agree ([`is_verified`]). A record that
/// claims more than its evidence is shown as not proven.
pub fn shown_verified(bundle: &EvidenceBundle) -> bool {
    bundle.verified && is_verified(bundle.state, &bundle.changed_files, &bundle.checks)
}

/// The outcome of a finished run (table on [`Outcome`]).
pub fn outcome(bundle: &EvidenceBundle) -> Outcome {
    match bundle.state {
        // An ignored delivery never ran, so it has no evidence bundle; one
        // claiming to be is reported as the failure it would be.
        TerminalState::Failed | TerminalState::Ignored => Outcome::Failed,
        TerminalState::NeedsHuman => Outcome::NeedsHuman,
        TerminalState::Completed if shown_verified(bundle) => Outcome::Verified,
        TerminalState::Completed if bundle.refusal.is_some() => Outcome::Refused,
        TerminalState::Completed => match bundle.verdict {
            Verdict::Accepted => Outcome::Confirmed,
            Verdict::Rejected => Outcome::NotConfirmed,
            Verdict::Inconclusive => Outcome::Inconclusive,
        },
    }
}

/// The GitHub conclusion of a finished run: its outcome's (table on
/// [`Outcome`]), except that a pull-request review that did not read every
/// changed file whole never concludes `success`: it is `neutral`.
pub fn conclusion(bundle: &EvidenceBundle) -> CheckConclusion {
    let concluded = outcome(bundle).github_conclusion();
    let partial = bundle.review.as_ref().is_some_and(|r| !r.is_complete());
    if partial && concluded == CheckConclusion::Success { CheckConclusion::Neutral } else { concluded }
}

/// The conclusion of a check run a branch protection rule may require
/// (`checkRun.blocking`), from the advisory one the check run was rendered
/// with: `neutral` passes a required check, so only what holds nothing
/// against the head does. A verified change on this head and a claim the
/// evidence did not support keep `advisory`; an evidence-backed finding
/// left unfixed on this head (`confirmed`, `refused`, or fixed only in the
/// sandbox) is `failure`; an inconclusive run, or a review that did not
/// read every changed file, is `action_required` (a person looks).
pub fn blocking_conclusion(bundle: &EvidenceBundle, advisory: CheckConclusion) -> CheckConclusion {
    let partial = bundle.review.as_ref().is_some_and(|r| !r.is_complete());
    match outcome(bundle) {
        Outcome::Confirmed | Outcome::Refused => CheckConclusion::Failure,
        Outcome::Inconclusive => CheckConclusion::ActionRequired,
        _ if partial && advisory != CheckConclusion::Failure => CheckConclusion::ActionRequired,
        Outcome::Verified if advisory == CheckConclusion::Neutral => CheckConclusion::Failure,
        _ => advisory,
    }
}

/// Plain-text status of the change: why it is, or is not, proven.
pub(crate) fn change_status(bundle: &EvidenceBundle) -> String {
    let prefix = if shown_verified(bundle) { "verified" } else { "not proven" };
    format!("{prefix}: {}", change_detail(bundle))
}

/// The fact behind [`change_status`], without its verdict word.
pub(crate) fn change_detail(bundle: &EvidenceBundle) -> String {
    use crate::format::count;
    let total = bundle.checks.len();
    let passed = bundle.checks.iter().filter(|c| c.passed()).count();
    if shown_verified(bundle) {
        return format!(
            "{} changed, {passed} of {total} checks passed",
            count(bundle.changed_files.len(), "file", "files")
        );
    }
    let reason = if bundle.state != TerminalState::Completed {
        format!("the run ended in state {}", bundle.state)
    } else if bundle.changed_files.is_empty() {
        "no file was changed".to_owned()
    } else if total == 0 {
        "no check ran".to_owned()
    } else if passed < total {
        format!("{} of {total} checks did not pass", total - passed)
    } else {
        "the run did not mark the change as proven".to_owned()
    };
    let disagrees = if bundle.verified { " (the record's flag disagrees with its evidence)" } else { "" };
    format!("{reason}{disagrees}")
}

#[cfg(test)]
mod tests {
    use agent_zero_contracts::{CheckResult, Coverage, Refusal, RunMode, RunnerDescription, Trigger, Usage};

    use super::*;

    fn bundle(state: TerminalState, verdict: Verdict, verified: bool, refused: bool) -> EvidenceBundle {
        let ok = CheckResult {
            command: vec!["make".into()],
            exit_code: 0,
            stdout: String::new(),
            stderr: String::new(),
            duration_ms: 1,
            truncated_bytes: 0,
            timed_out: false,
        };
        EvidenceBundle {
            task_id: "t".into(),
            repository: "o/r".into(),
            state,
            verdict,
            verified,
            mode: RunMode::Fix,
            trigger: Trigger::Issue,
            source: None,
            issue: None,
            pull_request: None,
            runner: RunnerDescription::none(),
            finding: None,
            plan: vec![],
            acceptance_criteria: vec![],
            changed_files: vec!["a.rs".into()],
            checks: vec![ok],
            attempts: 1,
            transitions: vec![],
            usage: Usage::default(),
            refusal: refused.then(|| Refusal { code: "autofix-disabled".into(), message: "m".into() }),
            coverage: Coverage::default(),
            summary: String::new(),
            review: None,
            tree: Vec::new(),
            cost: None,
            witness: None,
        }
    }

    /// The whole table on [`Outcome`], every combination.
    #[test]
    fn mapping_is_exhaustive() {
        use CheckConclusion as C;
        for &state in TerminalState::ALL {
            for &verdict in Verdict::ALL {
                for verified in [false, true] {
                    for refused in [false, true] {
                        let b = bundle(state, verdict, verified, refused);
                        let expected = match state {
                            TerminalState::Failed | TerminalState::Ignored => (Outcome::Failed, C::Failure),
                            TerminalState::NeedsHuman => (Outcome::NeedsHuman, C::ActionRequired),
                            TerminalState::Completed if verified => (Outcome::Verified, C::Success),
                            TerminalState::Completed if refused => (Outcome::Refused, C::Neutral),
                            TerminalState::Completed => match verdict {
                                Verdict::Accepted => (Outcome::Confirmed, C::Neutral),
                                Verdict::Rejected => (Outcome::NotConfirmed, C::Neutral),
                                Verdict::Inconclusive => (Outcome::Inconclusive, C::Neutral),
                            },
                        };
                        let got = outcome(&b);
                        assert_eq!((got, got.github_conclusion()), expected, "{state} {verdict} {verified} {refused}");
                    }
                }
            }
        }
        let names: Vec<_> = [C::Success, C::Failure, C::Neutral, C::ActionRequired].map(C::as_str).into();
        assert_eq!(names, ["success", "failure", "neutral", "action_required"]);
    }

    #[test]
    fn a_flag_without_evidence_is_not_shown_verified() {
        let mut b = bundle(TerminalState::Completed, Verdict::Accepted, true, false);
        assert_eq!(outcome(&b), Outcome::Verified);
        b.checks[0].exit_code = 1;
        assert_eq!(outcome(&b), Outcome::Confirmed);
        assert_eq!(
            change_status(&b),
            "not proven: 1 of 1 checks did not pass (the record's flag disagrees with its evidence)"
        );
        b.checks.clear();
        assert_eq!(outcome(&b), Outcome::Confirmed);
        b.verified = false;
        assert_eq!(change_status(&b), "not proven: no check ran");
    }

    #[test]
    fn a_review_that_skipped_anything_never_concludes_success() {
        use agent_zero_contracts::{FileCoverage, FileReview, ReviewLedger, SkipReason};
        let file =
            |review, reason| FileCoverage { path: "a.rs".into(), review, hunks: vec![], skipped_hunks: vec![], reason };
        let mut b = bundle(TerminalState::Completed, Verdict::Accepted, true, false);
        assert_eq!(conclusion(&b), CheckConclusion::Success);
        b.review = Some(ReviewLedger { files: vec![file(FileReview::Reviewed, None)], ..ReviewLedger::default() });
        assert_eq!(conclusion(&b), CheckConclusion::Success, "a whole review passes like any run");
        for (review, reason) in
            [(FileReview::Partial, Some(SkipReason::TooLarge)), (FileReview::Skipped, Some(SkipReason::Binary))]
        {
            b.review = Some(ReviewLedger {
                files: vec![file(FileReview::Reviewed, None), file(review, reason)],
                ..ReviewLedger::default()
            });
            assert_eq!(conclusion(&b), CheckConclusion::Neutral, "{review:?}");
        }
        b.review = Some(ReviewLedger { unlisted: Some("no credentials".into()), ..ReviewLedger::default() });
        assert_eq!(conclusion(&b), CheckConclusion::Neutral);
        // Other conclusions are kept: a failure stays a failure.
        b.state = TerminalState::Failed;
        assert_eq!(conclusion(&b), CheckConclusion::Failure);
    }

    #[test]
    fn a_blocking_check_run_holds_what_a_required_check_must_not_pass() {
        use agent_zero_contracts::{FileCoverage, FileReview, ReviewLedger, SkipReason};
        let verified = bundle(TerminalState::Completed, Verdict::Accepted, true, false);
        let confirmed = bundle(TerminalState::Completed, Verdict::Accepted, false, false);
        let rejected = bundle(TerminalState::Completed, Verdict::Rejected, false, false);
        let unsure = bundle(TerminalState::Completed, Verdict::Inconclusive, false, false);
        let cases = [
            (&verified, CheckConclusion::Success, CheckConclusion::Success),
            (&confirmed, CheckConclusion::Neutral, CheckConclusion::Failure),
            (&rejected, CheckConclusion::Neutral, CheckConclusion::Neutral),
            (&unsure, CheckConclusion::Neutral, CheckConclusion::ActionRequired),
        ];
        for (b, advisory, blocking) in cases {
            assert_eq!(
                (conclusion(b), blocking_conclusion(b, conclusion(b))),
                (advisory, blocking),
                "{:?}",
                outcome(b)
            );
        }
        // Verified in the sandbox only (rendered `neutral`): the head still holds the finding.
        assert_eq!(blocking_conclusion(&verified, CheckConclusion::Neutral), CheckConclusion::Failure);
        // A review that skipped a file passes no required check.
        let mut partial = rejected.clone();
        partial.review = Some(ReviewLedger {
            files: vec![FileCoverage {
                path: "a.bin".into(),
                review: FileReview::Skipped,
                hunks: vec![],
                skipped_hunks: vec![],
                reason: Some(SkipReason::Binary),
            }],
            ..ReviewLedger::default()
        });
        assert_eq!(blocking_conclusion(&partial, conclusion(&partial)), CheckConclusion::ActionRequired);
        let mut failed = partial;
        failed.state = TerminalState::Failed;
        assert_eq!(blocking_conclusion(&failed, conclusion(&failed)), CheckConclusion::Failure);
    }

    #[test]
    fn only_verified_headline_says_verified() {
        for o in Outcome::ALL {
            assert_eq!(o.headline().to_lowercase().contains("verified"), *o == Outcome::Verified, "{o:?}");
        }
    }
}
