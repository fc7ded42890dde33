//! When a run may become a pull request, and when it may comment: checked
//! again here from the record, whatever the engine already decided.

use std::collections::BTreeSet;

use agent_zero_contracts::{
    ChangeRisk, TerminalState, Trigger, Verdict, inserted, is_repository_relative_path, is_verified,
};

use super::{MAX_PUBLISHED_FILES, PublishRequest, capped};

/// Where the validation comment goes: `(owner, repo, number)` of the
/// issue of an issue run, or of the pull request whose review feedback
/// started a feedback run (its conversation hears the verdict).
pub fn comment_target<'r>(request: &'r PublishRequest<'_>) -> Option<(&'r str, &'r str, u64)> {
    if let Some(issue) = request.issue {
        return Some((&issue.owner, &issue.repo, issue.number));
    }
    let bundle = request.bundle;
    match (&bundle.pull_request, bundle.trigger) {
        (Some(pr), Trigger::Feedback) => Some((&pr.owner, &pr.repo, pr.number)),
        _ => None,
    }
}

/// Why the run gets no validation comment, or `None` when it gets one.
pub fn comment_refusal(request: &PublishRequest<'_>) -> Option<&'static str> {
    if !request.policy.validation_comment {
        return Some("issues.validationComment is off");
    }
    if comment_target(request).is_none() {
        return Some("the run has no issue and no review feedback to answer");
    }
    // A verdict exists once the finding was validated; before that, nothing.
    if request.bundle.finding.is_none() {
        return Some("the run ended before a verdict");
    }
    None
}

/// Why the run gets no pull request, or `None` when it gets one.
pub fn pull_request_refusal(request: &PublishRequest<'_>) -> Option<String> {
    if request.issue.is_none() {
        return Some("the run has no issue to open a pull request for".into());
    }
    change_refusal(request)
}

/// Why the run's change may not be committed anywhere, or `None` when it
/// may: the mode writes, the run completed, its claim was accepted, it
/// changed files and verified them, the task result agrees with the
/// evidence, the change is not high-impact, and the files given are
/// exactly the changed ones. A pull request for an issue needs this and
/// the issue; a review-feedback run's side branch (Gitea) needs this and
/// the pull request.
pub fn change_refusal(request: &PublishRequest<'_>) -> Option<String> {
    let (bundle, result) = (request.bundle, request.result);
    if !bundle.mode.may_write() {
        return Some(format!("mode {} does not write", bundle.mode));
    }
    if bundle.state != TerminalState::Completed {
        return Some(format!("the run ended {}, not completed", bundle.state));
    }
    if let Some(refusal) = &bundle.refusal {
        return Some(format!("the write was refused by policy ({})", refusal.code));
    }
    if bundle.verdict != Verdict::Accepted {
        return Some(format!("the claim was not accepted (verdict {})", bundle.verdict));
    }
    if bundle.changed_files.is_empty() {
        return Some("no file changed".into());
    }
    if !(bundle.verified && is_verified(bundle.state, &bundle.changed_files, &bundle.checks)) {
        return Some("the change is not verified".into());
    }
    let changed: BTreeSet<&str> = inserted(bundle.changed_files.iter().map(String::as_str));
    let agrees = result.id == request.task_id
        && bundle.task_id == request.task_id
        && result.state == bundle.state
        && result.verdict == bundle.verdict
        && result.verified
        && is_verified(result.state, &result.changed_files, &result.checks)
        && inserted::<BTreeSet<_>, _>(result.changed_files.iter().map(String::as_str)) == changed;
    if !agrees {
        return Some("the task result and its evidence disagree".into());
    }
    match bundle.finding.as_ref().map(|f| f.claim.change_risk) {
        None => return Some("no finding records the change risk".into()),
        Some(ChangeRisk::HighImpact) => return Some("a high-impact change is left to a human".into()),
        Some(_) => {}
    }
    files_refusal(request, &changed)
}

/// The files given must be exactly the changed files, each a plain
/// repository path, given once.
fn files_refusal(request: &PublishRequest<'_>, changed: &BTreeSet<&str>) -> Option<String> {
    if request.files.len() > MAX_PUBLISHED_FILES {
        return Some(format!("more than {MAX_PUBLISHED_FILES} files"));
    }
    let mut given = BTreeSet::new();
    for file in request.files {
        let path = file.path;
        let plain = is_repository_relative_path(path)
            && !path.ends_with('/')
            && !path.split('/').any(|s| s.is_empty() || s == "." || s == ".." || s.eq_ignore_ascii_case(".git"));
        if !plain {
            return Some(format!("`{}` is not a repository path", capped(path)));
        }
        if !given.insert(path) {
            return Some(format!("`{path}` is given twice"));
        }
        if !changed.contains(path) {
            return Some(format!("`{path}` is not among the changed files"));
        }
    }
    if let Some(missing) = changed.iter().find(|p| !given.contains(*p)) {
        return Some(format!("the content of changed file `{}` was not provided", capped(missing)));
    }
    None
}
