//! Parsing one verified delivery (`X-GitHub-Event`, `X-GitHub-Delivery`, raw
//! body) into an [`Intake`]. Pure: bytes in, value out.
//!
//! Rules (the reference adapter's, plus the edge's own):
//! - `ping` answers; `installation` and `installation_repositories` are
//!   recorded;
//! - `pull_request` `opened|reopened|synchronize|ready_for_review` seeds a
//!   proactive review ([`PolicyGate::Proactive`]);
//! - `pull_request_review` `submitted` with text and a `commented` or
//!   `changes_requested` state, and `pull_request_review_comment` `created`,
//!   seed a feedback task;
//! - `issues` `opened|labeled` on an open issue seeds an issue task
//!   ([`PolicyGate::IssueLabel`]);
//! - drafts and repositories outside the allowlist are ignored with a
//!   reason; so is everything else;
//! - the seed carries its [`Author`] (login, `author_association`, bot or
//!   not) so the repository's `triggers` policy decides who may start a
//!   run ([`TaskSeed::admit`]): bots are no longer refused here, since AI
//!   reviewers' feedback is what the product validates.
//!
//! The action is read first, so an unhandled action is ignored without
//! requiring the rest of its payload to have any particular shape.

use agent_zero_contracts::{
    FeedbackItem, FeedbackKind, IssueRef, PullRequestRef, Trigger, UntrustedText, is_repository_relative_path,
};
use serde::Deserialize;
use thiserror::Error;

use crate::intake::{
    IgnoreReason, InstallationChange, Intake, IntakeOptions, MAX_BODY_BYTES, MAX_INSTALLATION_REPOSITORIES,
    Author, MAX_LABEL_BYTES, MAX_LABELS, MAX_NAME_BYTES, MAX_TITLE_BYTES, PolicyGate, Repository, Subject, TaskSeed,
    is_bot,
};
use crate::payload::{
    Account, ActionOnly, InstallationEvent, InstallationId, IssuesEvent, PingEvent, PullRequestEvent,
    PullRequestPayload, RepositoryName, RepositoryPayload, ReviewCommentEvent, ReviewEvent,
};

const PROACTIVE_ACTIONS: &[&str] = &["opened", "reopened", "synchronize", "ready_for_review"];
const ISSUE_ACTIONS: &[&str] = &["opened", "labeled"];
/// Longest `X-GitHub-Delivery` accepted (GitHub sends a 36-character GUID).
const MAX_DELIVERY_ID_BYTES: usize = 64;
const MAX_PATH_BYTES: usize = 1024;

/// Why a verified delivery could not be read. Answered 400.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum IntakeError {
    /// `X-GitHub-Delivery` is empty, too long or not a GUID-like token; it
    /// becomes a storage key, so it is checked.
    #[error("invalid X-GitHub-Delivery: {reason}")]
    InvalidDeliveryId { reason: &'static str },
    /// The body is not JSON, or a field the event needs is missing or has
    /// the wrong type (`path` is the field's path, `.` for the whole body).
    #[error("invalid payload at `{path}`: {message}")]
    Json { path: String, message: String },
    /// A field parsed but its value is unusable (e.g. a head that is not a
    /// commit sha).
    #[error("invalid payload at `{path}`: {reason}")]
    InvalidField { path: &'static str, reason: &'static str },
}

impl IntakeError {
    /// The payload field (or header) the error is about, for the answer.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::InvalidDeliveryId { .. } => Some("X-GitHub-Delivery"),
            Self::Json { path, .. } => Some(path),
            Self::InvalidField { path, .. } => Some(path),
        }
    }
}

/// Parses one delivery whose signature has already been verified.
pub fn parse_delivery(
    event: &str,
    delivery_id: &str,
    body: &[u8],
    options: &IntakeOptions,
) -> Result<Intake, IntakeError> {
    check_delivery_id(delivery_id)?;
    let ignored = |reason| Ok(Intake::Ignored { reason });
    match event {
        "ping" => Ok(Intake::Ping { hook_id: parse::<PingEvent>(body)?.hook_id }),
        "installation" | "installation_repositories" => {
            let action = parse::<ActionOnly>(body)?.action.unwrap_or_default();
            let payload: InstallationEvent = parse(body)?;
            Ok(Intake::Installation(installation_change(event, delivery_id, action, payload)))
        }
        "pull_request" | "pull_request_review" | "pull_request_review_comment" | "issues" => {
            let action = parse::<ActionOnly>(body)?.action.unwrap_or_default();
            let handled = match event {
                "pull_request" => PROACTIVE_ACTIONS.contains(&action.as_str()),
                "pull_request_review" => action == "submitted",
                "pull_request_review_comment" => action == "created",
                _ => ISSUE_ACTIONS.contains(&action.as_str()),
            };
            if !handled {
                return ignored(IgnoreReason::UnsupportedAction { event: event.to_owned(), action: name(&action) });
            }
            let context = Context { event, action: &action, delivery_id, options };
            match event {
                "pull_request" => context.pull_request(parse(body)?),
                "pull_request_review" => context.review(parse(body)?),
                "pull_request_review_comment" => context.review_comment(parse(body)?),
                _ => context.issue(parse(body)?),
            }
        }
        _ => {
            parse::<serde::de::IgnoredAny>(body)?;
            ignored(IgnoreReason::UnsupportedEvent { event: name(event) })
        }
    }
}

struct Context<'a> {
    event: &'a str,
    action: &'a str,
    delivery_id: &'a str,
    options: &'a IntakeOptions,
}

impl Context<'_> {
    fn pull_request(&self, p: PullRequestEvent) -> Result<Intake, IntakeError> {
        let repository = self.repository(&p.repository);
        if let Some(reason) = self.screen_pull_request(&repository, &p.pull_request) {
            return Ok(Intake::Ignored { reason });
        }
        let pr = pull_request_ref(&repository, &p.pull_request)?;
        let mut seed = self.seed(Trigger::Proactive, repository, &p.sender, p.installation, Subject::PullRequest(pr));
        seed.title = text(p.pull_request.title.as_deref(), MAX_TITLE_BYTES);
        seed.body = text(p.pull_request.body.as_deref(), MAX_BODY_BYTES);
        seed.gate = PolicyGate::Proactive;
        Ok(Intake::Task(Box::new(seed)))
    }

    fn review(&self, p: ReviewEvent) -> Result<Intake, IntakeError> {
        let repository = self.repository(&p.repository);
        if let Some(reason) = self.screen_pull_request(&repository, &p.pull_request) {
            return Ok(Intake::Ignored { reason });
        }
        let author = p.review.user.as_ref().unwrap_or(&p.sender);
        let state = p.review.state.to_ascii_lowercase();
        if state != "commented" && state != "changes_requested" {
            return Ok(Intake::Ignored { reason: IgnoreReason::ReviewCarriesNoClaim { state: name(&state) } });
        }
        let Some(body) = text(p.review.body.as_deref(), MAX_BODY_BYTES) else {
            return Ok(Intake::Ignored { reason: IgnoreReason::EmptyFeedback { what: "review".into() } });
        };
        let item = FeedbackItem {
            id: format!("review:{}", p.review.id),
            kind: FeedbackKind::ReviewBody,
            body,
            author: name(&author.login),
            requested_changes: state == "changes_requested",
            path: None,
            line: None,
        };
        let pr = pull_request_ref(&repository, &p.pull_request)?;
        let mut seed = self.seed(Trigger::Feedback, repository, &p.sender, p.installation, Subject::PullRequest(pr));
        seed.title = text(p.pull_request.title.as_deref(), MAX_TITLE_BYTES);
        seed.requested_changes = item.requested_changes;
        seed.feedback.push(item);
        seed.author = Some(author_of(author, p.review.author_association.as_deref()));
        Ok(Intake::Task(Box::new(seed)))
    }

    fn review_comment(&self, p: ReviewCommentEvent) -> Result<Intake, IntakeError> {
        let repository = self.repository(&p.repository);
        if let Some(reason) = self.screen_pull_request(&repository, &p.pull_request) {
            return Ok(Intake::Ignored { reason });
        }
        let author = p.comment.user.as_ref().unwrap_or(&p.sender);
        let Some(body) = text(p.comment.body.as_deref(), MAX_BODY_BYTES) else {
            return Ok(Intake::Ignored { reason: IgnoreReason::EmptyFeedback { what: "review comment".into() } });
        };
        let path = p.comment.path.filter(|path| path.len() <= MAX_PATH_BYTES && is_repository_relative_path(path));
        let item = FeedbackItem {
            id: format!("review-comment:{}", p.comment.id),
            kind: FeedbackKind::ReviewComment,
            body,
            author: name(&author.login),
            // One inline comment is a remark; the review that carries it decides on changes.
            requested_changes: false,
            path,
            line: p.comment.line.or(p.comment.original_line).filter(|line| *line > 0),
        };
        let pr = pull_request_ref(&repository, &p.pull_request)?;
        let mut seed = self.seed(Trigger::Feedback, repository, &p.sender, p.installation, Subject::PullRequest(pr));
        seed.title = text(p.pull_request.title.as_deref(), MAX_TITLE_BYTES);
        seed.feedback.push(item);
        seed.author = Some(author_of(author, p.comment.author_association.as_deref()));
        Ok(Intake::Task(Box::new(seed)))
    }

    fn issue(&self, p: IssuesEvent) -> Result<Intake, IntakeError> {
        let repository = self.repository(&p.repository);
        let number = p.issue.number;
        let reason = self
            .screen_repository(&repository)
            .or_else(|| p.issue.pull_request.is_some().then_some(IgnoreReason::IssueIsPullRequest { number }))
            .or_else(|| (p.issue.state.as_deref() != Some("open")).then_some(IgnoreReason::IssueNotOpen { number }));
        if let Some(reason) = reason {
            return Ok(Intake::Ignored { reason });
        }
        let title = p.issue.title.as_deref().map(str::trim).unwrap_or_default();
        if title.is_empty() {
            return Err(IntakeError::InvalidField { path: "issue.title", reason: "empty" });
        }
        let labels = p.issue.labels.iter().take(MAX_LABELS).map(|label| capped(&label.name, MAX_LABEL_BYTES)).collect();
        let added_label = match self.action {
            "labeled" => Some(
                p.label
                    .as_ref()
                    .map(|label| capped(&label.name, MAX_LABEL_BYTES))
                    .ok_or(IntakeError::InvalidField { path: "label", reason: "missing on a `labeled` action" })?,
            ),
            _ => None,
        };
        let issue = IssueRef {
            owner: repository.owner.clone(),
            repo: repository.repo.clone(),
            number,
            title: UntrustedText::capped(title, MAX_TITLE_BYTES),
            url: p.issue.html_url.filter(|url| url.len() <= MAX_PATH_BYTES),
        };
        let mut seed = self.seed(Trigger::Issue, repository, &p.sender, p.installation, Subject::Issue(issue));
        seed.title = Some(UntrustedText::capped(title, MAX_TITLE_BYTES));
        seed.body = text(p.issue.body.as_deref(), MAX_BODY_BYTES);
        let author = p.issue.user.as_ref().unwrap_or(&p.sender);
        // Labelling another's issue needs triage access on GitHub (an issue
        // template's labels are applied by the author): such a person
        // vouches for the issue. A bot never vouches.
        let labelled_by_other = added_label.is_some()
            && !p.sender.login.eq_ignore_ascii_case(&author.login)
            && !is_bot(&p.sender.login, p.sender.kind.as_deref());
        seed.vouched_by = labelled_by_other.then(|| name(&p.sender.login));
        seed.author = Some(author_of(author, p.issue.author_association.as_deref()));
        seed.gate = PolicyGate::IssueLabel { labels, added_label };
        Ok(Intake::Task(Box::new(seed)))
    }

    fn repository(&self, repository: &RepositoryPayload) -> Repository {
        Repository {
            owner: name(&repository.owner.login),
            repo: name(&repository.name),
            default_branch: repository.default_branch.as_deref().map(name),
        }
    }

    fn screen_repository(&self, repository: &Repository) -> Option<IgnoreReason> {
        let allowlist = self.options.allowlist.as_ref()?;
        (!allowlist.allows(&repository.owner, &repository.repo))
            .then(|| IgnoreReason::RepositoryNotAllowed { repository: repository.full_name() })
    }

    fn screen_pull_request(&self, repository: &Repository, pr: &PullRequestPayload) -> Option<IgnoreReason> {
        self.screen_repository(repository)
            .or_else(|| (pr.draft == Some(true)).then_some(IgnoreReason::DraftPullRequest { number: pr.number }))
    }

    fn seed(
        &self,
        trigger: Trigger,
        repository: Repository,
        sender: &Account,
        installation: Option<InstallationId>,
        subject: Subject,
    ) -> TaskSeed {
        TaskSeed {
            trigger,
            delivery_id: self.delivery_id.to_owned(),
            event: self.event.to_owned(),
            action: self.action.to_owned(),
            repository,
            installation_id: installation.map(|i| i.id),
            sender: name(&sender.login),
            subject,
            title: None,
            body: None,
            feedback: Vec::new(),
            requested_changes: false,
            gate: PolicyGate::Feedback,
            author: None,
            vouched_by: None,
        }
    }
}

fn pull_request_ref(repository: &Repository, pr: &PullRequestPayload) -> Result<PullRequestRef, IntakeError> {
    if !is_commit_sha(&pr.head.sha) {
        return Err(IntakeError::InvalidField { path: "pull_request.head.sha", reason: "not a commit sha" });
    }
    if !is_commit_sha(&pr.base.sha) {
        return Err(IntakeError::InvalidField { path: "pull_request.base.sha", reason: "not a commit sha" });
    }
    Ok(PullRequestRef {
        owner: repository.owner.clone(),
        repo: repository.repo.clone(),
        number: pr.number,
        head_sha: pr.head.sha.clone(),
        base_sha: Some(pr.base.sha.clone()),
    })
}

fn installation_change(
    event: &str,
    delivery_id: &str,
    action: String,
    payload: InstallationEvent,
) -> InstallationChange {
    let mut omitted = 0;
    let mut names = |list: Vec<RepositoryName>| -> Vec<String> {
        omitted += list.len().saturating_sub(MAX_INSTALLATION_REPOSITORIES);
        list.into_iter().take(MAX_INSTALLATION_REPOSITORIES).map(|r| name(&r.full_name)).collect()
    };
    let added = if payload.repositories_added.is_empty() && action == "created" {
        names(payload.repositories)
    } else {
        names(payload.repositories_added)
    };
    let removed = names(payload.repositories_removed);
    let account = payload.installation.account.and_then(|a| a.login.or(a.slug)).map(|a| name(&a));
    InstallationChange {
        delivery_id: delivery_id.to_owned(),
        event: event.to_owned(),
        action: name(&action),
        installation_id: payload.installation.id,
        account,
        repositories_added: added,
        repositories_removed: removed,
        repositories_omitted: omitted,
    }
}

fn author_of(account: &Account, association: Option<&str>) -> Author {
    Author {
        login: name(&account.login),
        association: association.map(|a| capped(&a.to_ascii_uppercase(), 32)),
        bot: is_bot(&account.login, account.kind.as_deref()),
    }
}

/// Untrusted text, trimmed, capped and marked; `None` when empty.
fn text(value: Option<&str>, max_bytes: usize) -> Option<UntrustedText> {
    let value = value?.trim();
    (!value.is_empty()).then(|| UntrustedText::capped(value, max_bytes))
}

/// A short identifier from the payload (login, repository, action), capped.
fn name(value: &str) -> String {
    capped(value, MAX_NAME_BYTES)
}

fn capped(value: &str, max_bytes: usize) -> String {
    UntrustedText::capped(value, max_bytes).text
}

fn is_commit_sha(sha: &str) -> bool {
    matches!(sha.len(), 40 | 64) && sha.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Checks `X-GitHub-Delivery` as it arrived: it keys storage, so it is
/// validated before any use and never cleaned into another id.
pub fn check_delivery_id(id: &str) -> Result<(), IntakeError> {
    if id.is_empty() {
        return Err(IntakeError::InvalidDeliveryId { reason: "empty" });
    }
    if id.len() > MAX_DELIVERY_ID_BYTES {
        return Err(IntakeError::InvalidDeliveryId { reason: "longer than 64 bytes" });
    }
    if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(IntakeError::InvalidDeliveryId { reason: "only letters, digits and `-` are allowed" });
    }
    Ok(())
}

/// Deserializes `body` as `T`, naming the failing field's path.
fn parse<'de, T: Deserialize<'de>>(body: &'de [u8]) -> Result<T, IntakeError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|e| IntakeError::Json { path: e.path().to_string(), message: e.inner().to_string() })?;
    deserializer.end().map_err(|e| IntakeError::Json { path: ".".to_owned(), message: e.to_string() })?;
    Ok(value)
}
