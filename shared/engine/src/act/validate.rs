//! Validate: read the files the model's claim cites and judge the claim
//! against that repository evidence (the verdict is never the model's).

use agent_zero_agent::{DocUse, RepositoryFacts, quoted_files, validate as judge};
use agent_zero_contracts::{
    ModelFinding, OmittedItem, TaskState, TerminalState, Trigger, Verdict, is_repository_relative_path,
};

use super::{Acted, Run};
use crate::fact::{Fact, LeaseRecord};
use crate::ports::Workspace;
use crate::resident::FoldError;
use crate::store::TickStats;

/// Most cited files read for validation.
const MAX_CITED_FILES: usize = 20;
/// Most files read to learn which documentation the repository runs.
const MAX_DOC_EVIDENCE_FILES: usize = 24;

pub(super) async fn validate<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    claim: &ModelFinding,
    workspace: &W,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let discovery = &run.r.discovery;
    let mut cited: Vec<String> =
        claim.files.iter().filter(|p| is_repository_relative_path(p) && discovery.files.contains(p)).cloned().collect();
    cited.dedup();
    let mut omitted = Vec::new();
    if cited.len() > MAX_CITED_FILES {
        omitted.push(OmittedItem {
            kind: "file".into(),
            subject: "cited files".into(),
            reason: format!("validation read the first {MAX_CITED_FILES} of {} cited files", cited.len()),
        });
    }
    cited.truncate(MAX_CITED_FILES);
    let mut seen = RepositoryFacts::new(discovery.files.iter().cloned());
    let reviewing = run.stimulus.trigger == Trigger::Proactive;
    if let Some(review) = discovery.review.as_ref().filter(|l| reviewing && !l.files.is_empty()) {
        // A review's finding must be about a file the pull request changed
        // (review feedback may cite any file: the reviewer chose it).
        seen.require_files(review.files.iter().map(|f| f.path.clone()));
    }
    // In the same read: what tells whether the repository runs or includes
    // its documentation (doctest configuration, crate roots).
    let evidence: Vec<String> = DocUse::evidence_in(&discovery.files, MAX_DOC_EVIDENCE_FILES)
        .into_iter()
        .filter(|p| !cited.iter().any(|c| c == p))
        .map(str::to_owned)
        .collect();
    let mut doc_sources = Vec::new();
    if !cited.is_empty() || !evidence.is_empty() {
        stats.sandbox_calls += 1;
        let wanted: Vec<String> = cited.iter().chain(&evidence).cloned().collect();
        match workspace.read_files(lease, &wanted).await {
            Ok(read) => {
                for (path, content) in read {
                    if let Some(content) = content {
                        if DocUse::is_evidence(&path) {
                            doc_sources.push((path.clone(), content.clone()));
                        }
                        if cited.contains(&path) {
                            seen.insert_content(&path, content);
                        }
                    }
                }
            }
            Err(e) => return run.sandbox_failed("read-files", e),
        }
    }
    let doc_use = DocUse::from_files(&doc_sources.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect::<Vec<_>>());
    let finding = judge(claim, &seen, &run.stimulus.policy.validation);
    let quoted_files = quoted_files(claim, &seen, &run.stimulus.policy.validation);
    let reasons = finding.rejection_reasons.join(" ");
    let verdict = finding.verdict;
    let mut facts = vec![Fact::Finding { finding, omitted, doc_use, quoted_files }];
    match verdict {
        Verdict::Accepted => {
            facts.push(run.transition(TaskState::Planning, "Recording an evidence-backed plan", Some(1)));
            Acted::now(facts)
        }
        Verdict::Rejected => {
            let summary = format!("Rejected the claim with evidence: {reasons}");
            run.finish(facts, TerminalState::Completed, &summary, None)
        }
        // As the reference does: a person decides what an inconclusive
        // finding is worth (approving accepts the conclusion).
        Verdict::Inconclusive => {
            run.finish(facts, TerminalState::NeedsHuman, &format!("Evidence is inconclusive: {reasons}"), None)
        }
    }
}
