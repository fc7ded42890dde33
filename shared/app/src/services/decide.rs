//! What a parsed delivery becomes under its repository's policy, whatever
//! forge it came from: declined with GitHub's rules' reason, or the run's
//! stimulus. Pure; the gates of each forge (`admission.rs`, `gitea.rs`)
//! read what it needs first.

use agent_zero_contracts::{PullRequestRef, RunMode};
use agent_zero_engine::{Admission, AdmitError, Received, Stimulus, TaskInput};
use agent_zero_github::{ParsedDelivery, Subject};

/// Admits or declines `parsed` under `policy`. Pure.
pub(crate) fn admit_or_decline(
    received: &Received,
    parsed: &ParsedDelivery,
    policy: agent_zero_agent::Policy,
) -> Admission {
    if let Err(reason) = parsed.admit(&crate::intake_gate::switches(&policy)) {
        return Admission::Declined { reason: reason.code().to_owned(), message: reason.to_string() };
    }
    // Webhooks never raise the mode: the policy's own mode is the ceiling.
    let mode: RunMode = policy.restrict_mode(None);
    let mut input = TaskInput {
        feedback: parsed.feedback.clone(),
        installation_id: parsed.installation_id,
        ..TaskInput::default()
    };
    match &parsed.subject {
        Subject::PullRequest(pr) => input.pull_request = Some(PullRequestRef { ..pr.clone() }),
        Subject::Issue(issue) => {
            input.issue = Some(issue.clone());
            input.issue_body = parsed.body.clone();
        }
        #[allow(unreachable_patterns)]
        _ => {}
    }
    Admission::Admitted(Box::new(Stimulus {
        task_id: received.task_id.clone(),
        repository: received.repository.clone(),
        trigger: parsed.trigger,
        mode,
        source: received.source.clone(),
        input,
        policy,
    }))
}

/// The repository policy a forge's gate read from the default branch
/// (`None`: no policy file, the defaults apply).
pub(crate) fn policy_of(bytes: Option<Vec<u8>>, branch: &str) -> Result<agent_zero_agent::Policy, AdmitError> {
    use agent_zero_github::POLICY_PATH;
    let Some(bytes) = bytes else { return Ok(agent_zero_agent::Policy::default()) };
    let text = String::from_utf8(bytes)
        .map_err(|_| AdmitError::Invalid(format!("{POLICY_PATH} is not UTF-8 ({POLICY_PATH})")))?;
    agent_zero_agent::Policy::parse(&text).map_err(|e| {
        let field = e.field().map(|f| format!(":{f}")).unwrap_or_default();
        AdmitError::Invalid(format!("{POLICY_PATH} on {branch}: {e} ({POLICY_PATH}{field})"))
    })
}

/// What a forge's gate read about an issue arrival, in the neutral terms
/// GitHub's rules decide on. The title and text are untrusted.
pub(crate) struct IssueFacts<'a> {
    pub(crate) owner: &'a str,
    pub(crate) repo: &'a str,
    pub(crate) default_branch: &'a str,
    pub(crate) number: u64,
    pub(crate) title: &'a str,
    pub(crate) body: &'a str,
    pub(crate) url: Option<String>,
    pub(crate) labels: Vec<String>,
    /// The labels this delivery added, for a labelled issue (empty for an
    /// opened one): as with GitHub's `labeled`, only adding the required
    /// label starts a run, so labelling an issue that already carries it
    /// with something else starts none.
    pub(crate) added: Vec<String>,
    /// Who caused the delivery (the labeller of a labelled issue).
    pub(crate) sender: &'a str,
    pub(crate) author: &'a str,
    /// The author's standing as `triggers.authorAssociations` lists it.
    pub(crate) author_association: &'static str,
    /// Someone other than the author with write access who labelled it.
    pub(crate) vouched_by: Option<&'a str>,
}

/// Where an arrival is, as a forge's gate read it.
pub(crate) struct Where<'a> {
    pub(crate) owner: &'a str,
    pub(crate) repo: &'a str,
    pub(crate) default_branch: &'a str,
    /// Who caused the delivery.
    pub(crate) sender: &'a str,
}

/// Admits or declines what a forge's gate read, by GitHub's rules: the
/// neutral parsed delivery is the arrival's common fields and `fields`
/// (subject, author, gate, ...), in the recorded serde shape, so it is
/// built as a record would be. An admitted stimulus names `forge`.
pub(crate) fn admit_read(
    received: &Received,
    at: &Where<'_>,
    trigger: &str,
    fields: serde_json::Value,
    policy: agent_zero_agent::Policy,
    forge: agent_zero_contracts::ForgeKind,
) -> Result<Admission, AdmitError> {
    use serde_json::{Value, json};
    let arrival = &received.delivery;
    let mut parsed = json!({
        "trigger": trigger,
        "deliveryId": arrival.get("deliveryId").cloned().unwrap_or(Value::Null),
        "event": arrival.get("event").cloned().unwrap_or(Value::Null),
        "action": arrival.get("action").cloned().unwrap_or(Value::Null),
        "repository": { "owner": at.owner, "repo": at.repo, "defaultBranch": at.default_branch },
        "sender": at.sender,
    });
    if let (Some(parsed), Value::Object(fields)) = (parsed.as_object_mut(), fields) {
        parsed.extend(fields);
    }
    let parsed: ParsedDelivery = serde_json::to_vec(&parsed)
        .and_then(|bytes| agent_zero_codecs::json::from_slice(&bytes))
        .map_err(|e| AdmitError::Invalid(format!("the arrival could not be read as a delivery: {e}")))?;
    let mut admission = admit_or_decline(received, &parsed, policy);
    if let Admission::Admitted(stimulus) = &mut admission {
        stimulus.input.forge = forge;
    }
    Ok(admission)
}

/// Admits or declines an issue arrival of `forge` under `policy`, by the
/// same rules as a GitHub issue's.
pub(crate) fn admit_issue(
    received: &Received,
    facts: &IssueFacts<'_>,
    policy: agent_zero_agent::Policy,
    forge: agent_zero_contracts::ForgeKind,
) -> Result<Admission, AdmitError> {
    use agent_zero_contracts::{IssueRef, UntrustedText};
    use agent_zero_github::{MAX_BODY_BYTES, MAX_TITLE_BYTES};
    let (owner, repo, number) = (facts.owner, facts.repo, facts.number);
    let title = UntrustedText::capped(facts.title, MAX_TITLE_BYTES);
    let body = UntrustedText::capped(facts.body, MAX_BODY_BYTES);
    // One label stands for what was added: the required one when it was
    // among them (a forge may add several at once), else the first.
    let required = policy.issues.require_label.trim();
    let added_label = facts.added.iter().find(|l| l.eq_ignore_ascii_case(required)).or(facts.added.first());
    let fields = serde_json::json!({
        "subject": { "type": "issue", "owner": owner, "repo": repo, "number": number, "title": title, "url": facts.url },
        "title": title,
        "body": body,
        "requestedChanges": false,
        "gate": { "gate": "issue-label", "labels": facts.labels, "added_label": added_label },
        "author": { "login": facts.author, "association": facts.author_association, "bot": false },
        "vouchedBy": facts.vouched_by,
    });
    let at = Where { owner, repo, default_branch: facts.default_branch, sender: facts.sender };
    let mut admission = admit_read(received, &at, "issue", fields, policy, forge)?;
    if let Admission::Admitted(stimulus) = &mut admission {
        stimulus.input.issue =
            Some(IssueRef { owner: owner.to_owned(), repo: repo.to_owned(), number, title, url: facts.url.clone() });
        stimulus.input.issue_body = Some(body);
    }
    Ok(admission)
}

/// What a forge's gate read about a change request (merge request, pull
/// request) arrival, in the neutral terms GitHub's proactive-review rules
/// decide on. The title and text are untrusted.
pub(crate) struct ChangeRequestFacts<'a> {
    pub(crate) owner: &'a str,
    pub(crate) repo: &'a str,
    pub(crate) default_branch: &'a str,
    pub(crate) number: u64,
    /// The head the review reads (the forge's current one).
    pub(crate) head_sha: &'a str,
    pub(crate) base_sha: Option<&'a str>,
    pub(crate) title: &'a str,
    pub(crate) body: &'a str,
    pub(crate) labels: Vec<String>,
    /// Who caused the delivery.
    pub(crate) sender: &'a str,
    /// Who opened the change request: the author the rules check.
    pub(crate) author: &'a str,
    /// The author's standing as `triggers.authorAssociations` lists it.
    pub(crate) author_association: &'static str,
}

/// Admits or declines a change request arrival of `forge` under `policy`
/// as a proactive review, by the same rules as a GitHub `pull_request`
/// (`proactive.enabled`, the opener's association or
/// `triggers.optInLabel`).
pub(crate) fn admit_change_request(
    received: &Received,
    facts: &ChangeRequestFacts<'_>,
    policy: agent_zero_agent::Policy,
    forge: agent_zero_contracts::ForgeKind,
) -> Result<Admission, AdmitError> {
    use agent_zero_contracts::UntrustedText;
    use agent_zero_github::{MAX_BODY_BYTES, MAX_LABELS, MAX_TITLE_BYTES};
    let (owner, repo, number) = (facts.owner, facts.repo, facts.number);
    let labels: Vec<&String> = facts.labels.iter().take(MAX_LABELS).collect();
    let fields = serde_json::json!({
        "subject": {
            "type": "pull-request", "owner": owner, "repo": repo, "number": number,
            "headSha": facts.head_sha, "baseSha": facts.base_sha,
        },
        "title": UntrustedText::capped(facts.title, MAX_TITLE_BYTES),
        "body": UntrustedText::capped(facts.body, MAX_BODY_BYTES),
        "requestedChanges": false,
        "gate": { "gate": "proactive" },
        "author": { "login": facts.author, "association": facts.author_association, "bot": false },
        "labels": labels,
    });
    let at = Where { owner, repo, default_branch: facts.default_branch, sender: facts.sender };
    admit_read(received, &at, "proactive", fields, policy, forge)
}
