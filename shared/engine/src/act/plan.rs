//! Plan: authorise the write of the model's decision (after asking the
//! model for a new one when a repair begins). The agent's chain decides
//! (risk classified from the paths, scope earned by the validated finding
//! and the leased checkout), then the engine's own links (something to
//! write, checks to verify it with). A recorded approval stands in for the
//! high-impact link.

use agent_zero_agent::{WriteDecision, WriteRequest, authorize_write};
use agent_zero_contracts::{AgentDecision, Finding, Refusal, RunMode, TaskState, TerminalState};

use super::{Acted, Run};
use crate::fact::{Fact, ModelOutcome, ModelPurpose, WriteOutcome};
use crate::ports::Decider;
use crate::render::model_request;
use crate::resident::FINDING_INCONCLUSIVE;
use crate::resident::FoldError;
use crate::store::TickStats;

/// What [`crate::Step::Plan`] carries.
pub(super) struct Planned<'a> {
    /// Ask the model for a new decision first (a repair).
    pub(super) replan: bool,
    /// The decision to authorise (the previous one, on a repair).
    pub(super) decision: &'a AgentDecision,
    pub(super) finding: &'a Finding,
}

pub(super) async fn plan<D: Decider>(
    run: &Run<'_>,
    planned: Planned<'_>,
    decider: &D,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let mut facts = Vec::new();
    let mut replanned = None;
    if planned.replan {
        stats.model_calls += 1;
        let outcome = decider.decide(&model_request(run.r, run.stimulus, ModelPurpose::Plan, run.cx.key.clone())).await;
        let delay_ms = run.model_delay(&outcome);
        if let ModelOutcome::Decided { decision, .. } = &outcome {
            replanned = Some(decision.clone());
        }
        facts.push(Fact::ModelCall { purpose: ModelPurpose::Plan, outcome });
        if replanned.is_none() {
            return Acted::after(facts, delay_ms);
        }
    }
    let decision = replanned.as_ref().unwrap_or(planned.decision);
    let attempts = run.r.attempts();
    let approved = approved_stops(run, decision);
    if approved.iter().any(|code| code == FINDING_INCONCLUSIVE) {
        // Nothing can be written on an inconclusive finding: the person
        // accepted the conclusion as it stands.
        return accepted(run, facts, "the evidence is inconclusive; nothing was written");
    }
    let outcome = authorize(run, decision, planned.finding, approved);
    facts.push(Fact::WriteDecision { outcome: outcome.clone() });
    match outcome {
        // The person approved this very stop and the chain still stops
        // there: no approval lifts it (a path outside the checkout, no
        // checks to verify with, nothing to write), so the approval accepts
        // the conclusion instead of stopping again.
        WriteOutcome::Refused { refusal } | WriteOutcome::NeedsHuman { refusal }
            if approved.contains(&refusal.code) =>
        {
            accepted(run, facts, &format!("{}; nothing was written", refusal.message))
        }
        WriteOutcome::Allowed => {
            let message = format!("Applying {} planned change(s)", decision.changes.len());
            facts.push(run.transition(TaskState::Executing, &message, Some(attempts + 1)));
            Acted::now(facts)
        }
        WriteOutcome::Refused { refusal } if attempts == 0 => {
            let summary = format!("Reported without writing: {}", refusal.message);
            run.finish(facts, TerminalState::Completed, &summary, None)
        }
        WriteOutcome::Refused { refusal } | WriteOutcome::NeedsHuman { refusal } => {
            let summary = format!("A person must decide: {}", refusal.message);
            run.finish(facts, TerminalState::NeedsHuman, &summary, None)
        }
    }
}

/// The stops a person approved for `decision` (none when the decision is
/// not the one they were shown).
fn approved_stops<'r>(run: &'r Run<'_>, decision: &AgentDecision) -> &'r [String] {
    let approval = &run.r.approval;
    let shown = approval.approved_by.is_some()
        && approval.approved_digest.as_deref() == Some(&crate::decision_digest(decision));
    if shown { &approval.lifted } else { &[] }
}

/// The end of a run whose stop a person approved where nothing can go on:
/// they accepted the conclusion. `completed` while no attempt executed, and
/// `failed` after one did (a change that failed its checks never completes).
fn accepted(run: &Run<'_>, facts: Vec<Fact>, why: &str) -> Result<Acted, FoldError> {
    let by = run.r.approval.approved_by.as_deref().unwrap_or("a person");
    let summary = format!("{by} accepted the conclusion: {why}");
    if run.r.attempts() == 0 {
        run.finish(facts, TerminalState::Completed, &summary, None)
    } else {
        run.finish(facts, TerminalState::Failed, &summary, Some(summary.clone()))
    }
}

/// The authorisation of writing `decision`'s changes for `finding`, with
/// the stops a person `approved` for it.
fn authorize(run: &Run<'_>, decision: &AgentDecision, finding: &Finding, approved: &[String]) -> WriteOutcome {
    let (r, stimulus) = (run.r, run.stimulus);
    let paths: Vec<String> = decision.changes.iter().map(|c| c.path.clone()).collect();
    let suggests = run.suggests();
    if suggests && paths.is_empty() {
        let message = "the finding proposes no change, so there is no suggestion to verify".into();
        return WriteOutcome::Refused { refusal: Refusal { code: "no-change".into(), message } };
    }
    let request = WriteRequest {
        verdict: finding.verdict,
        mode: if suggests { RunMode::Fix } else { stimulus.mode },
        confidence: finding.claim.confidence,
        change_risk: finding.claim.change_risk,
        runner_isolated: r.sandbox.runner.as_ref().is_some_and(|d| d.isolated),
        changed_paths: &paths,
        cited_files: &finding.claim.files,
        quoted_files: &r.attempt.quoted_files,
        named_files: &named_files(stimulus, &finding.claim.files),
        checkout_files: &r.discovery.files,
        doc_use: &r.discovery.doc_use,
        // The approval covers the decision the person was shown, no other.
        approved,
    };
    let needs_human =
        |code: &str, message: String| WriteOutcome::NeedsHuman { refusal: Refusal { code: code.into(), message } };
    match authorize_write(&stimulus.policy, &request) {
        WriteDecision::Allowed => {}
        WriteDecision::NeedsHuman { reason } => return WriteOutcome::NeedsHuman { refusal: reason },
        WriteDecision::Refused(refusal) => return WriteOutcome::Refused { refusal },
        other => {
            return WriteOutcome::Refused {
                refusal: other.reason().cloned().unwrap_or_else(|| Refusal {
                    code: "unknown".into(),
                    message: "a write decision this engine does not know".into(),
                }),
            };
        }
    }
    if paths.is_empty() {
        return needs_human("no-changes", "the plan proposes no file changes, so there is nothing to verify".into());
    }
    if r.discovery.checks.is_empty() {
        return needs_human(
            "no-checks",
            "no repository checks were configured or discovered, so a change could not be verified".into(),
        );
    }
    WriteOutcome::Allowed
}

/// The cited files the task itself names, which earn write scope without a
/// quote of their own: the files the requester scoped it to, the files
/// feedback was left on, and those the feedback or issue text names.
fn named_files(stimulus: &crate::fact::Stimulus, cited: &[String]) -> Vec<String> {
    let input = &stimulus.input;
    let mut texts: Vec<&str> = input.feedback.iter().map(|f| f.body.text.as_str()).collect();
    texts.extend(input.issue.as_ref().map(|i| i.title.text.as_str()));
    texts.extend(input.issue_body.as_ref().map(|b| b.text.as_str()));
    let pinned = input.files.iter().chain(input.feedback.iter().filter_map(|f| f.path.as_ref()));
    let mentioned = cited.iter().filter(|path| texts.iter().any(|text| agent_zero_agent::names_path(text, path)));
    pinned.chain(mentioned).cloned().collect()
}
