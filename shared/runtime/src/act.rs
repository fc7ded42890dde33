//! Act: perform one step through exactly one port, and say which facts it
//! produced. Nothing here writes to KV; the tick commits what this returns.

use agent_zero_agent::{RepositoryFacts, WriteDecision, WriteRequest, authorize_write, validate};
use agent_zero_contracts::{
    ProposedChange, Refusal, TaskState, TerminalState, Verdict, all_checks_passed, is_repository_relative_path,
};

use crate::conclude::conclude;
use crate::discover::{MANIFESTS, default_checks};
use crate::fact::{Admission, Entry, Fact, ModelOutcome, ModelPurpose, PublicationOutcome, ReadBack, WriteOutcome};
use crate::ports::{AdmitError, Decider, ForgeError, LeaseRequest, Publication, Publisher, Workspace, WorkspaceError};
use crate::render::model_request;
use crate::resident::{FoldError, Resident};
use crate::step::{Limits, Step, admission_backoff, backoff, remaining_ms};
use crate::store::TickStats;

/// Most cited files read for validation.
const MAX_CITED_FILES: usize = 20;

/// What one step produced.
#[derive(Debug)]
pub(crate) struct Acted {
    pub(crate) facts: Vec<Fact>,
    pub(crate) delay_ms: u64,
}

/// The ports one tick may use.
#[derive(Debug, Clone, Copy)]
pub struct Ports<'p, D, W, P> {
    pub decider: &'p D,
    pub workspace: &'p W,
    pub publisher: &'p P,
}

/// Everything `act` needs to know about the tick.
pub(crate) struct StepContext<'a> {
    pub(crate) resident: &'a Resident,
    pub(crate) seq: u64,
    pub(crate) now_ms: u64,
    pub(crate) limits: &'a Limits,
    pub(crate) key: String,
}

pub(crate) async fn act<D: Decider, W: Workspace, P: Publisher>(
    step: &Step,
    cx: &StepContext<'_>,
    ports: &Ports<'_, D, W, P>,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let r = cx.resident;
    if r.stimulus.is_none() {
        return admit(step, cx, ports.publisher, stats).await;
    }
    let stimulus = r.stimulus();
    let policy = &stimulus.policy;
    let remaining = remaining_ms(r, cx.now_ms);
    let now = |facts: Vec<Fact>| Ok(Acted { facts, delay_ms: 0 });
    let sandbox_failed = |operation: &str, error: WorkspaceError| {
        let (operation, tries) = match error {
            WorkspaceError::LeaseGone(_) => ("lease-gone", r.sandbox_errors + 1),
            // A full pool is not a failure: wait for a slot (agent.timeoutMs bounds it).
            WorkspaceError::Refused(_) if r.lease.is_none() => (crate::resident::LEASE_REFUSED, r.lease_waits + 1),
            _ => (operation, r.sandbox_errors + 1),
        };
        let fact = Fact::SandboxError { operation: operation.into(), reason: error.to_string() };
        Ok(Acted { facts: vec![fact], delay_ms: backoff(cx.limits, tries) })
    };
    let lease = r.lease.as_ref();
    match step {
        Step::Lease => {
            stats.sandbox_calls += 1;
            let request = LeaseRequest {
                task_id: stimulus.task_id.clone(),
                repository: stimulus.repository.clone(),
                // The sandbox writes for a writing mode only: a suggestion's
                // proof is a fix confined to the sandbox.
                mode: if suggests(stimulus) { agent_zero_contracts::RunMode::Fix } else { stimulus.mode },
                writable: (stimulus.mode.may_write() || suggests(stimulus)) && policy.autofix.enabled,
                network: policy.permissions.network,
                lease_ms: remaining,
                idempotency_key: cx.key.clone(),
            };
            match ports.workspace.lease(&request).await {
                Ok(lease) => {
                    let mut facts = vec![Fact::Leased { lease }];
                    if r.state == TaskState::Queued {
                        facts.push(transition(
                            r,
                            TaskState::Discovering,
                            "Collecting the checkout, its files and its native checks",
                            None,
                        ));
                    }
                    now(facts)
                }
                Err(e) => sandbox_failed("lease", e),
            }
        }
        Step::Discover => {
            let lease = lease.expect("decide leases first");
            stats.sandbox_calls += 1;
            let files = match ports.workspace.list_files(lease).await {
                Ok(files) => files,
                Err(e) => return sandbox_failed("list-files", e),
            };
            let mut checks: Vec<Vec<String>> = policy.checks.iter().map(|c| c.argv.clone()).collect();
            if checks.is_empty() {
                let manifests: Vec<String> =
                    MANIFESTS.iter().filter(|m| files.iter().any(|f| f == *m)).map(|m| (*m).to_owned()).collect();
                let mut package_json = None;
                if !manifests.is_empty() {
                    stats.sandbox_calls += 1;
                    match ports.workspace.read_files(lease, &manifests).await {
                        Ok(read) => {
                            package_json = read.into_iter().find(|(p, _)| p == "package.json").and_then(|(_, c)| c)
                        }
                        Err(e) => return sandbox_failed("read-manifests", e),
                    }
                }
                checks = default_checks(&files, package_json.as_deref());
            }
            let (mut diff, mut review) = (None, None);
            if stimulus.trigger == agent_zero_contracts::Trigger::Proactive {
                // The pull request's own diff (`base...head`) from the forge:
                // a clean checkout of the head has no working-tree changes.
                let head = stimulus.input.pull_request.as_ref().map(|pr| pr.head_sha.as_str());
                match ports.publisher.changed_files(stimulus).await {
                    Ok(listed) => {
                        let (text, ledger) = crate::review::read(&listed, head);
                        (diff, review) = (Some(text), Some(ledger));
                    }
                    Err(ForgeError::Unavailable(reason)) => review = Some(crate::review::unlisted(reason, head)),
                    Err(ForgeError::Failed(reason)) => {
                        return sandbox_failed("pull-request-files", WorkspaceError::Failed(reason));
                    }
                }
            }
            let mut omitted = Vec::new();
            if files.len() > crate::render::MAX_LISTED_FILES {
                omitted.push(agent_zero_contracts::OmittedItem {
                    kind: "context".into(),
                    subject: "repository file list".into(),
                    reason: format!(
                        "the model was shown the first {} of {} paths",
                        crate::render::MAX_LISTED_FILES,
                        files.len()
                    ),
                });
            }
            if checks.is_empty() {
                omitted.push(agent_zero_contracts::OmittedItem {
                    kind: "check".into(),
                    subject: "checks".into(),
                    reason: "no checks configured in .agent-zero.yml and none discovered".into(),
                });
            }
            let message = format!("Interpreting the {} against the checkout", stimulus.trigger);
            now(vec![
                Fact::Discovered { files, checks, diff, omitted, review },
                transition(r, TaskState::Understanding, &message, None),
            ])
        }
        Step::Understand => {
            stats.model_calls += 1;
            let outcome = ports.decider.decide(&model_request(r, ModelPurpose::Understand, cx.key.clone())).await;
            let delay_ms = model_delay(&outcome, r, cx.limits);
            let decided = matches!(outcome, ModelOutcome::Decided { .. });
            let mut facts = vec![Fact::ModelCall { purpose: ModelPurpose::Understand, outcome }];
            if decided {
                facts.push(transition(r, TaskState::Validating, "Testing the claim against repository evidence", None));
            }
            Ok(Acted { facts, delay_ms })
        }
        Step::Validate => {
            let lease = lease.expect("decide leases first");
            let claim = &r.decision.as_ref().expect("validating follows a decision").finding;
            let mut cited: Vec<String> =
                claim.files.iter().filter(|p| is_repository_relative_path(p) && r.files.contains(p)).cloned().collect();
            cited.dedup();
            let mut omitted = Vec::new();
            if cited.len() > MAX_CITED_FILES {
                omitted.push(agent_zero_contracts::OmittedItem {
                    kind: "file".into(),
                    subject: "cited files".into(),
                    reason: format!("validation read the first {MAX_CITED_FILES} of {} cited files", cited.len()),
                });
            }
            cited.truncate(MAX_CITED_FILES);
            let mut facts_seen = RepositoryFacts::new(r.files.iter().cloned());
            if let Some(review) = r.review.as_ref().filter(|l| !l.files.is_empty()) {
                // A review's finding must be about a file the pull request changed.
                facts_seen.require_files(review.files.iter().map(|f| f.path.clone()));
            }
            if !cited.is_empty() {
                stats.sandbox_calls += 1;
                match ports.workspace.read_files(lease, &cited).await {
                    Ok(read) => {
                        for (path, content) in read {
                            if let Some(content) = content {
                                facts_seen.insert_content(&path, content);
                            }
                        }
                    }
                    Err(e) => return sandbox_failed("read-files", e),
                }
            }
            let finding = validate(claim, &facts_seen, &policy.validation);
            let reasons = finding.rejection_reasons.join(" ");
            let verdict = finding.verdict;
            let mut facts = vec![Fact::Finding { finding, omitted }];
            match verdict {
                Verdict::Accepted => {
                    facts.push(transition(r, TaskState::Planning, "Recording an evidence-backed plan", Some(1)));
                    now(facts)
                }
                Verdict::Rejected => finish(
                    cx,
                    facts,
                    TerminalState::Completed,
                    &format!("Rejected the claim with evidence: {reasons}"),
                    None,
                ),
                Verdict::Inconclusive => {
                    finish(cx, facts, TerminalState::Completed, &format!("Evidence is inconclusive: {reasons}"), None)
                }
            }
        }
        Step::Plan { replan } => {
            let mut facts = Vec::new();
            let mut planned = r.clone();
            if *replan {
                stats.model_calls += 1;
                let outcome = ports.decider.decide(&model_request(r, ModelPurpose::Plan, cx.key.clone())).await;
                let delay_ms = model_delay(&outcome, r, cx.limits);
                let decided = matches!(outcome, ModelOutcome::Decided { .. });
                facts.push(Fact::ModelCall { purpose: ModelPurpose::Plan, outcome });
                if !decided {
                    return Ok(Acted { facts, delay_ms });
                }
                planned.apply(&Entry { seq: cx.seq, at_ms: cx.now_ms, facts: facts.clone() })?;
            }
            let outcome = authorize(&planned);
            facts.push(Fact::WriteDecision { outcome: outcome.clone() });
            let attempts = r.attempts();
            match outcome {
                WriteOutcome::Allowed => {
                    let count = planned.decision.as_ref().map_or(0, |d| d.changes.len());
                    facts.push(transition(
                        r,
                        TaskState::Executing,
                        &format!("Applying {count} planned change(s)"),
                        Some(attempts + 1),
                    ));
                    now(facts)
                }
                WriteOutcome::Refused { refusal } if attempts == 0 => finish(
                    cx,
                    facts,
                    TerminalState::Completed,
                    &format!("Reported without writing: {}", refusal.message),
                    None,
                ),
                WriteOutcome::Refused { refusal } | WriteOutcome::NeedsHuman { refusal } => finish(
                    cx,
                    facts,
                    TerminalState::NeedsHuman,
                    &format!("A person must decide: {}", refusal.message),
                    None,
                ),
            }
        }
        Step::Execute { reapply } => {
            let lease = lease.expect("decide leases first");
            let changes = &r.decision.as_ref().expect("executing follows a decision").changes;
            stats.sandbox_calls += 1;
            if let Err(e) = ports.workspace.write_files(lease, changes, &cx.key).await {
                return sandbox_failed("write-files", e);
            }
            let mut facts = vec![Fact::Applied { files: changes.iter().map(|c| c.path.clone()).collect() }];
            if !reapply {
                let message = format!("Running {} repository check(s)", r.checks.len());
                facts.push(transition(r, TaskState::Verifying, &message, Some(r.attempts())));
            }
            now(facts)
        }
        Step::Verify => {
            let lease = lease.expect("decide leases first");
            stats.sandbox_calls += 1;
            let results = match ports.workspace.run(lease, &r.checks, remaining, &cx.key).await {
                Ok(results) => results,
                Err(e) => return sandbox_failed("run-checks", e),
            };
            let attempt = r.attempts();
            let passed = all_checks_passed(&results) && results.len() == r.checks.len();
            let mut facts = vec![Fact::Checked { attempt, results }];
            if passed {
                facts.push(transition(r, TaskState::Reviewing, "Inspecting the resulting diff", Some(attempt)));
                now(facts)
            } else if attempt < r.max_attempts {
                facts.push(transition(
                    r,
                    TaskState::Planning,
                    "Replanning after failed verification",
                    Some(attempt + 1),
                ));
                now(facts)
            } else {
                let reason = format!(
                    "verification still fails after {attempt} attempt(s) (agent.maxAttempts {})",
                    r.max_attempts
                );
                finish(cx, facts, TerminalState::Failed, &reason, Some(reason.clone()))
            }
        }
        Step::Review => {
            let lease = lease.expect("decide leases first");
            stats.sandbox_calls += 1;
            let diff = match ports.workspace.diff(lease).await {
                Ok(diff) => diff,
                Err(e) => return sandbox_failed("diff", e),
            };
            // Judged: what the run wrote, and any tracked file a check
            // modified. A new file the run did not write is a byproduct of
            // the checks (`__pycache__/`, `target/`, coverage): listed, never
            // published, never a reason to stop.
            let (byproducts, changed_files): (Vec<String>, Vec<String>) =
                diff.changed_files.into_iter().partition(|f| !r.applied.contains(f) && !r.files.contains(f));
            let out_of_scope: Vec<String> = changed_files.iter().filter(|f| !r.applied.contains(f)).cloned().collect();
            let empty = changed_files.is_empty();
            // What is published is what was verified: the run's files read
            // back now, after the checks passed, with their digests.
            stats.sandbox_calls += 1;
            let read = match ports.workspace.read_files(lease, &r.applied).await {
                Ok(read) => read,
                Err(e) => return sandbox_failed("read-back", e),
            };
            stats.sandbox_calls += 1;
            let modes = match ports.workspace.file_modes(lease, &r.applied).await {
                Ok(modes) => modes,
                Err(e) => return sandbox_failed("read-back", e),
            };
            let (tree, removed) = read_back(r, read, &modes);
            let symlinks: Vec<String> =
                tree.iter().filter(|t| t.file.mode == SYMLINK_MODE).map(|t| t.file.path.clone()).collect();
            let facts = vec![Fact::Reviewed { changed_files, out_of_scope: out_of_scope.clone(), byproducts, tree }];
            if !removed.is_empty() {
                let summary = format!("The checks removed files the run wrote: {}", removed.join(", "));
                return finish(cx, facts, TerminalState::NeedsHuman, &summary, None);
            }
            if !symlinks.is_empty() {
                let summary = format!(
                    "The checks left symbolic links where the run wrote files: {}; a symlink is never published",
                    symlinks.join(", ")
                );
                return finish(cx, facts, TerminalState::NeedsHuman, &summary, None);
            }
            if !out_of_scope.is_empty() {
                let summary =
                    format!("The diff changes files outside the authorised change: {}", out_of_scope.join(", "));
                finish(cx, facts, TerminalState::NeedsHuman, &summary, None)
            } else if empty {
                finish(
                    cx,
                    facts,
                    TerminalState::NeedsHuman,
                    "Every check passed but the checkout is unchanged, so nothing was fixed.",
                    None,
                )
            } else {
                let title = r.finding.as_ref().map_or("the finding", |f| f.claim.title.as_str());
                finish(cx, facts, TerminalState::Completed, &format!("Fixed and verified: {title}"), None)
            }
        }
        Step::Fail { reason } => finish(cx, Vec::new(), TerminalState::Failed, reason, Some(reason.clone())),
        Step::Release => {
            let lease = lease.expect("release needs a lease");
            stats.sandbox_calls += 1;
            match ports.workspace.release(lease).await {
                Ok(()) | Err(WorkspaceError::LeaseGone(_)) => now(vec![Fact::Released]),
                Err(e) => sandbox_failed("release", e),
            }
        }
        Step::Publish => {
            let (result, evidence) = &**r.concluded.as_ref().expect("publish follows the conclusion");
            stats.publications += 1;
            // The verified content: what a check rewrote replaces what was written.
            let changes: Vec<ProposedChange> = r
                .decision
                .as_ref()
                .map(|d| d.changes.iter().filter(|c| r.applied.contains(&c.path)).cloned().collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .map(|mut c| {
                    if let Some((_, content)) = r.rewritten.iter().find(|(p, _)| *p == c.path) {
                        c.content.clone_from(content);
                    }
                    c
                })
                .collect();
            let publication = Publication { stimulus, result, evidence, changes: &changes, idempotency_key: &cx.key };
            let (outcome, delay_ms) = match ports.publisher.publish(publication).await {
                Ok(reference) => (PublicationOutcome::Published { reference }, 0),
                Err(reason) => (PublicationOutcome::Failed { reason }, backoff(cx.limits, r.publish_attempts + 1)),
            };
            Ok(Acted { facts: vec![Fact::Published { outcome }], delay_ms })
        }
        Step::Quiet(_) | Step::Admit => now(Vec::new()),
    }
}

/// The steps of a delivery that awaits its policy gate: read the policy
/// and admit or decline it, or fail once GitHub was unreachable too long.
/// Nothing ran, so nothing is concluded or published.
async fn admit<P: Publisher>(
    step: &Step,
    cx: &StepContext<'_>,
    publisher: &P,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let r = cx.resident;
    let fail = |reason: String| {
        let facts = vec![transition(r, TaskState::Failed, &reason, None), Fact::Failure { reason: reason.clone() }];
        Ok(Acted { facts, delay_ms: 0 })
    };
    match step {
        Step::Admit => {
            let received = r.received.as_deref().ok_or_else(|| FoldError::Malformed {
                seq: cx.seq,
                reason: "a task with neither a stimulus nor a received delivery".into(),
            })?;
            stats.publications += 1;
            match publisher.admit(received).await {
                Ok(Admission::Admitted(stimulus)) => {
                    Ok(Acted { facts: vec![Fact::Admitted { stimulus }], delay_ms: 0 })
                }
                Ok(Admission::Declined { reason, message }) => {
                    let facts = vec![
                        Fact::Declined { reason, message: message.clone() },
                        transition(r, TaskState::Ignored, &message, None),
                    ];
                    Ok(Acted { facts, delay_ms: 0 })
                }
                Err(AdmitError::Unavailable(reason)) => Ok(Acted {
                    facts: vec![Fact::AdmissionError { reason }],
                    delay_ms: admission_backoff(cx.limits, r.admission_errors + 1),
                }),
                Err(AdmitError::Invalid(reason)) => fail(reason),
            }
        }
        Step::Fail { reason } => fail(reason.clone()),
        _ => Ok(Acted { facts: Vec::new(), delay_ms: 0 }),
    }
}

/// The Git mode of a symlink: read back, never published.
const SYMLINK_MODE: &str = "120000";

/// The run's files as read back from the sandbox: each with its digest and
/// mode (and its content when a check rewrote it), and the paths a check
/// removed.
fn read_back(
    r: &Resident,
    read: Vec<(String, Option<String>)>,
    modes: &[(String, Option<String>)],
) -> (Vec<ReadBack>, Vec<String>) {
    use sha2::Digest as _;
    let written = |path: &str| {
        r.decision.as_ref().and_then(|d| d.changes.iter().find(|c| c.path == path)).map(|c| c.content.as_str())
    };
    let mut tree = Vec::new();
    let mut removed = Vec::new();
    for (path, content) in read {
        let Some(content) = content else {
            removed.push(path);
            continue;
        };
        let digest = sha2::Sha256::digest(content.as_bytes());
        let sha256 = digest.iter().map(|b| format!("{b:02x}")).collect();
        let rewritten = written(&path) != Some(content.as_str());
        let bytes = content.len() as u64;
        let mode = modes.iter().find(|(p, _)| *p == path).and_then(|(_, m)| m.clone());
        let Some(mode) = mode else {
            // Read, yet absent by the time its mode was asked: removed.
            removed.push(path);
            continue;
        };
        tree.push(ReadBack {
            file: agent_zero_contracts::TreeFile { path, sha256, bytes, mode },
            content: rewritten.then_some(content),
        });
    }
    (tree, removed)
}

fn transition(r: &Resident, to: TaskState, message: &str, attempt: Option<u32>) -> Fact {
    Fact::Transition { from: r.state, to, message: message.to_owned(), attempt }
}

fn model_delay(outcome: &ModelOutcome, r: &Resident, limits: &Limits) -> u64 {
    match outcome {
        ModelOutcome::Unavailable { .. } => backoff(limits, r.model_failures + 1),
        _ => 0,
    }
}

/// Ends the run: the transition, the failure reason, and the conclusion
/// built from the state those facts produce.
fn finish(
    cx: &StepContext<'_>,
    mut facts: Vec<Fact>,
    to: TerminalState,
    summary: &str,
    failure: Option<String>,
) -> Result<Acted, FoldError> {
    let r = cx.resident;
    // The facts before the ending carry no transition: the run ends from where it is.
    facts.push(Fact::Transition { from: r.state, to: to.into(), message: summary.to_owned(), attempt: None });
    if let Some(reason) = failure {
        facts.push(Fact::Failure { reason });
    }
    let mut ended = r.clone();
    ended.apply(&Entry { seq: cx.seq, at_ms: cx.now_ms, facts: facts.clone() })?;
    let (result, evidence) = conclude(&ended, to, summary);
    facts.push(Fact::Concluded { result: Box::new(result), evidence: Box::new(evidence) });
    Ok(Acted { facts, delay_ms: 0 })
}

/// A review in `suggest` mode proves its change in the sandbox, as a fix
/// would be, under the same chain; it is posted as a suggestion only, never
/// pushed (publication opens pull requests for issue runs alone).
fn suggests(stimulus: &crate::fact::Stimulus) -> bool {
    stimulus.mode == agent_zero_contracts::RunMode::Suggest
        && stimulus.trigger == agent_zero_contracts::Trigger::Proactive
}

/// The plan step's authorisation: the agent's chain (risk classified from
/// the paths, scope earned by the validated finding and the leased
/// checkout), then the runtime's own links (something to write, checks to
/// verify it with). A recorded approval stands in for the high-impact link.
pub(crate) fn authorize(r: &Resident) -> WriteOutcome {
    let stimulus = r.stimulus();
    let policy = &stimulus.policy;
    let decision = r.decision.as_ref().expect("planning follows a decision");
    let finding = r.finding.as_ref().expect("planning follows validation");
    let paths: Vec<String> = decision.changes.iter().map(|c| c.path.clone()).collect();
    let suggests = suggests(stimulus);
    if suggests && paths.is_empty() {
        let message = "the finding proposes no change, so there is no suggestion to verify".into();
        return WriteOutcome::Refused { refusal: Refusal { code: "no-change".into(), message } };
    }
    let request = WriteRequest {
        verdict: finding.verdict,
        mode: if suggests { agent_zero_contracts::RunMode::Fix } else { stimulus.mode },
        confidence: finding.claim.confidence,
        change_risk: finding.claim.change_risk,
        runner_isolated: r.runner.as_ref().is_some_and(|d| d.isolated),
        changed_paths: &paths,
        cited_files: &finding.claim.files,
        checkout_files: &r.files,
        human_approved: r.approved_by.is_some(),
    };
    let needs_human =
        |code: &str, message: String| WriteOutcome::NeedsHuman { refusal: Refusal { code: code.into(), message } };
    match authorize_write(policy, &request) {
        WriteDecision::Allowed => {}
        WriteDecision::NeedsHuman { reason } => return WriteOutcome::NeedsHuman { refusal: reason },
        WriteDecision::Refused(refusal) => return WriteOutcome::Refused { refusal },
        other => {
            return WriteOutcome::Refused {
                refusal: other
                    .reason()
                    .cloned()
                    .unwrap_or_else(|| Refusal { code: "unknown".into(), message: format!("{other:?}") }),
            };
        }
    }
    if paths.is_empty() {
        return needs_human("no-changes", "the plan proposes no file changes, so there is nothing to verify".into());
    }
    if r.checks.is_empty() {
        return needs_human(
            "no-checks",
            "no repository checks were configured or discovered, so a change could not be verified".into(),
        );
    }
    WriteOutcome::Allowed
}
