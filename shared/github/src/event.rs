//! Parsing one verified delivery (`X-GitHub-Event`, `X-GitHub-Delivery`, raw
//! body) into an [`Intake`]. Pure: bytes in, value out.
//!
//! Rules (the reference adapter's, plus the edge's own):
//! - `ping` answers; `installation` and `installation_repositories` are
//!   recorded;
//! - `pull_request` `opened|reopened|synchronize|ready_for_review` starts a
//!   proactive review ([`PolicyGate::Proactive`]), and `labeled` one the
//!   policy admits only when the label added is `triggers.optInLabel`
//!   ([`PolicyGate::OptIn`]);
//! - `pull_request_review` `submitted` with text and a `commented` or
//!   `changes_requested` state, and `pull_request_review_comment` `created`,
//!   parsed a feedback task;
//! - a command (`/agent-zero review|resolve`, `@<app> review|resolve`) in
//!   an `issue_comment` `created` on a pull request, or in a submitted
//!   review's body, starts a review of the current head
//!   ([`PolicyGate::Command`]); any other comment is ignored with its reason;
//! - `issues` `opened|reopened|labeled` on an open issue starts an issue
//!   task ([`PolicyGate::IssueLabel`]): a reopened issue that carries the
//!   label is asked to be worked on again, as the reference reads it;
//! - drafts and repositories outside the allowlist are ignored with a
//!   reason; so is everything else;
//! - the parsed carries its [`Author`] (login, `author_association`, bot or
//!   not) so the repository's `triggers` policy decides who may start a
//!   run ([`ParsedDelivery::admit`]): bots are no longer refused here, since AI
//!   reviewers' feedback is what the product validates. On a pull request
//!   it also carries the labels and, when someone else's text starts the
//!   run, the opener;
//! - and the time the event happened by the payload's own timestamps
//!   ([`ParsedDelivery::event_at_ms`]), for the replay window.
//!
//! The action is read first, so an unhandled action is ignored without
//! requiring the rest of its payload to have any particular shape.

use agent_zero_contracts::{
    FeedbackItem, FeedbackKind, IssueRef, PullRequestRef, Trigger, UntrustedText, is_repository_relative_path,
};
use serde::Deserialize;
use thiserror::Error;

use crate::command::{self, Found, IssueCommentEvent};
use crate::intake::{
    Author, IgnoreReason, InstallationChange, Intake, IntakeOptions, MAX_BODY_BYTES, MAX_INSTALLATION_REPOSITORIES,
    MAX_LABEL_BYTES, MAX_LABELS, MAX_NAME_BYTES, MAX_TITLE_BYTES, ParsedDelivery, PolicyGate, Repository, Subject,
    is_bot,
};
use crate::payload::{
    Account, ActionOnly, InstallationEvent, InstallationId, IssuesEvent, Label, PingEvent, PullRequestEvent,
    PullRequestPayload, RepositoryName, RepositoryPayload, ReviewCommentEvent, ReviewEvent,
};

/// `labeled` is read too: adding `triggers.optInLabel` starts a review.
const PROACTIVE_ACTIONS: &[&str] = &["opened", "reopened", "synchronize", "ready_for_review", "labeled"];
/// `reopened` as the reference reads it: like `opened`, the label checked
/// on the issue.
const ISSUE_ACTIONS: &[&str] = &["opened", "reopened", "labeled"];
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
        "pull_request" | "pull_request_review" | "pull_request_review_comment" | "issues" | "issue_comment" => {
            let action = parse::<ActionOnly>(body)?.action.unwrap_or_default();
            let handled = match event {
                "pull_request" => PROACTIVE_ACTIONS.contains(&action.as_str()),
                "pull_request_review" => action == "submitted",
                "pull_request_review_comment" | "issue_comment" => action == "created",
                _ => ISSUE_ACTIONS.contains(&action.as_str()),
            };
            if !handled {
                return ignored(IgnoreReason::UnsupportedAction { event: event.to_owned(), action: name(&action) });
            }
            let context = EventContext { event, action: &action, delivery_id, options };
            match event {
                "pull_request" => context.pull_request(parse(body)?),
                "pull_request_review" => context.review(parse(body)?),
                "pull_request_review_comment" => context.review_comment(parse(body)?),
                "issue_comment" => context.issue_comment(parse(body)?),
                _ => context.issue(parse(body)?),
            }
        }
        _ => {
            parse::<serde::de::IgnoredAny>(body)?;
            ignored(IgnoreReason::UnsupportedEvent { event: name(event) })
        }
    }
}

struct EventContext<'a> {
    event: &'a str,
    action: &'a str,
    delivery_id: &'a str,
    options: &'a IntakeOptions,
}

impl EventContext<'_> {
    fn pull_request(&self, p: PullRequestEvent) -> Result<Intake, IntakeError> {
        let repository = self.repository(&p.repository);
        if let Some(reason) = self.screen_pull_request(&repository, &p.pull_request) {
            return Ok(Intake::Ignored { reason });
        }
        let gate = match self.action {
            "labeled" => PolicyGate::OptIn {
                added_label: p
                    .label
                    .as_ref()
                    .map(|label| capped(&label.name, MAX_LABEL_BYTES))
                    .ok_or(IntakeError::InvalidField { path: "label", reason: "missing on a `labeled` action" })?,
            },
            _ => PolicyGate::Proactive,
        };
        let pr = pull_request_ref(&repository, &p.pull_request)?;
        let mut parsed =
            self.parsed(Trigger::Proactive, repository, &p.sender, p.installation, Subject::PullRequest(pr));
        parsed.title = text(p.pull_request.title.as_deref(), MAX_TITLE_BYTES);
        parsed.body = text(p.pull_request.body.as_deref(), MAX_BODY_BYTES);
        parsed.gate = gate;
        // A proactive review runs the pull request's own checks: its opener
        // passes the same author gate as feedback and issues do.
        let opener = p.pull_request.user.as_ref().unwrap_or(&p.sender);
        parsed.author = Some(author_of(opener, p.pull_request.author_association.as_deref()));
        parsed.labels = labels(&p.pull_request.labels);
        parsed.event_at_ms = event_at(&[("pull_request.updated_at", &p.pull_request.updated_at)])?;
        Ok(Intake::Task(Box::new(parsed)))
    }

    fn review(&self, p: ReviewEvent) -> Result<Intake, IntakeError> {
        let repository = self.repository(&p.repository);
        if let Some(reason) = self.screen_pull_request(&repository, &p.pull_request) {
            return Ok(Intake::Ignored { reason });
        }
        let author = p.review.user.as_ref().unwrap_or(&p.sender);
        let at = review_at(&p)?;
        match command::find(p.review.body.as_deref().unwrap_or_default()) {
            Found::Command { command, mention } => {
                let pr = pull_request_ref(&repository, &p.pull_request)?;
                let mut parsed =
                    self.parsed(Trigger::Proactive, repository, &p.sender, p.installation, Subject::PullRequest(pr));
                parsed.title = text(p.pull_request.title.as_deref(), MAX_TITLE_BYTES);
                parsed.author = Some(author_of(author, p.review.author_association.as_deref()));
                parsed.gate = PolicyGate::Command { command, mention: mention.as_deref().map(name), comment_id: None };
                on_pull_request(&mut parsed, &p.pull_request, &p.sender);
                parsed.event_at_ms = at;
                return Ok(Intake::Task(Box::new(parsed)));
            }
            Found::Unknown { word } => {
                return Ok(Intake::Ignored { reason: IgnoreReason::UnknownCommand { word } });
            }
            Found::Nothing => {}
        }
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
        let mut parsed =
            self.parsed(Trigger::Feedback, repository, &p.sender, p.installation, Subject::PullRequest(pr));
        parsed.title = text(p.pull_request.title.as_deref(), MAX_TITLE_BYTES);
        parsed.requested_changes = item.requested_changes;
        parsed.feedback.push(item);
        parsed.author = Some(author_of(author, p.review.author_association.as_deref()));
        on_pull_request(&mut parsed, &p.pull_request, &p.sender);
        parsed.event_at_ms = at;
        Ok(Intake::Task(Box::new(parsed)))
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
        let mut parsed =
            self.parsed(Trigger::Feedback, repository, &p.sender, p.installation, Subject::PullRequest(pr));
        parsed.title = text(p.pull_request.title.as_deref(), MAX_TITLE_BYTES);
        parsed.feedback.push(item);
        parsed.author = Some(author_of(author, p.comment.author_association.as_deref()));
        on_pull_request(&mut parsed, &p.pull_request, &p.sender);
        parsed.event_at_ms = event_at(&[
            ("comment.updated_at", &p.comment.updated_at),
            ("pull_request.updated_at", &p.pull_request.updated_at),
        ])?;
        Ok(Intake::Task(Box::new(parsed)))
    }

    /// A command in a comment on a pull request's conversation; the
    /// payload has no head, so admission reads the current one.
    fn issue_comment(&self, p: IssueCommentEvent) -> Result<Intake, IntakeError> {
        let repository = self.repository(&p.repository);
        if let Some(reason) = self.screen_repository(&repository) {
            return Ok(Intake::Ignored { reason });
        }
        let number = p.issue.number;
        let (command, mention) = match command::find(p.comment.body.as_deref().unwrap_or_default()) {
            Found::Command { command, mention } => (command, mention),
            Found::Unknown { word } => return Ok(Intake::Ignored { reason: IgnoreReason::UnknownCommand { word } }),
            Found::Nothing => {
                return Ok(Intake::Ignored { reason: IgnoreReason::NoCommand { what: "comment".into() } });
            }
        };
        if p.issue.pull_request.is_none() {
            return Ok(Intake::Ignored { reason: IgnoreReason::CommandNotOnPullRequest { number } });
        }
        if p.issue.state.as_deref().is_some_and(|state| state != "open") {
            return Ok(Intake::Ignored { reason: IgnoreReason::PullRequestNotOpen { number } });
        }
        let pr = PullRequestRef {
            owner: repository.owner.clone(),
            repo: repository.repo.clone(),
            number,
            head_sha: String::new(),
            base_sha: None,
        };
        let mut parsed =
            self.parsed(Trigger::Proactive, repository, &p.sender, p.installation, Subject::PullRequest(pr));
        let author = p.comment.user.as_ref().unwrap_or(&p.sender);
        parsed.author = Some(author_of(author, p.comment.author_association.as_deref()));
        parsed.gate =
            PolicyGate::Command { command, mention: mention.as_deref().map(name), comment_id: Some(p.comment.id) };
        parsed.labels = labels(&p.issue.labels);
        let opener = p.issue.user.as_ref().unwrap_or(&p.sender);
        parsed.opener = Some(author_of(opener, p.issue.author_association.as_deref()));
        parsed.event_at_ms =
            event_at(&[("comment.updated_at", &p.comment.updated_at), ("issue.updated_at", &p.issue.updated_at)])?;
        Ok(Intake::Task(Box::new(parsed)))
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
        let labels = labels(&p.issue.labels);
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
        let mut parsed = self.parsed(Trigger::Issue, repository, &p.sender, p.installation, Subject::Issue(issue));
        parsed.title = Some(UntrustedText::capped(title, MAX_TITLE_BYTES));
        parsed.body = text(p.issue.body.as_deref(), MAX_BODY_BYTES);
        let author = p.issue.user.as_ref().unwrap_or(&p.sender);
        // Labelling another's issue needs triage access on GitHub (an issue
        // template's labels are applied by the author): such a person
        // vouches for the issue. A bot never vouches.
        let labelled_by_other = added_label.is_some()
            && !p.sender.login.eq_ignore_ascii_case(&author.login)
            && !is_bot(&p.sender.login, p.sender.kind.as_deref());
        parsed.vouched_by = labelled_by_other.then(|| name(&p.sender.login));
        parsed.author = Some(author_of(author, p.issue.author_association.as_deref()));
        parsed.gate = PolicyGate::IssueLabel { labels, added_label };
        parsed.event_at_ms = event_at(&[("issue.updated_at", &p.issue.updated_at)])?;
        Ok(Intake::Task(Box::new(parsed)))
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

    fn parsed(
        &self,
        trigger: Trigger,
        repository: Repository,
        sender: &Account,
        installation: Option<InstallationId>,
        subject: Subject,
    ) -> ParsedDelivery {
        ParsedDelivery {
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
            labels: Vec::new(),
            opener: None,
            event_at_ms: None,
        }
    }
}

/// A pull request's labels and opener, on a parsed whose text is someone
/// else's (a review, a comment, a command in a review).
fn on_pull_request(parsed: &mut ParsedDelivery, pr: &PullRequestPayload, sender: &Account) {
    parsed.labels = labels(&pr.labels);
    let opener = pr.user.as_ref().unwrap_or(sender);
    parsed.opener = Some(author_of(opener, pr.author_association.as_deref()));
}

fn labels(labels: &[Label]) -> Vec<String> {
    labels.iter().take(MAX_LABELS).map(|label| capped(&label.name, MAX_LABEL_BYTES)).collect()
}

fn review_at(p: &ReviewEvent) -> Result<Option<u64>, IntakeError> {
    event_at(&[
        ("review.submitted_at", &p.review.submitted_at),
        ("pull_request.updated_at", &p.pull_request.updated_at),
    ])
}

/// The latest of the payload's timestamps `fields` (`(path, value)`), in
/// milliseconds; `None` when it carries none. One that is there but not an
/// ISO 8601 time is an error naming it: GitHub writes none such.
fn event_at(fields: &[(&'static str, &Option<String>)]) -> Result<Option<u64>, IntakeError> {
    let mut latest = None;
    for (path, value) in fields {
        let Some(value) = value else { continue };
        let at = crate::timestamp::parse_ms(value)
            .ok_or(IntakeError::InvalidField { path, reason: "not an ISO 8601 time (`2019-05-15T15:20:33Z`)" })?;
        latest = latest.max(Some(at));
    }
    Ok(latest)
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
    agent_zero_contracts::Sha::is_valid(sha)
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
///
/// Plain `serde_json` parses; only a failure pays for the path, which
/// [`json_path_at`] recovers from the error's position. (A path-tracking
/// deserializer such as `serde_path_to_error` would instead compile every
/// payload type a second time: tens of KB of wasm.)
pub(crate) fn parse<'de, T: Deserialize<'de>>(body: &'de [u8]) -> Result<T, IntakeError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value =
        T::deserialize(agent_zero_codecs::json::Objects(&mut deserializer)).map_err(|e| json_error(body, &e))?;
    deserializer.end().map_err(|e| IntakeError::Json { path: ".".to_owned(), message: e.to_string() })?;
    Ok(value)
}

fn json_error(body: &[u8], error: &serde_json::Error) -> IntakeError {
    IntakeError::Json {
        path: crate::json_path::json_path_at(body, error.line(), error.column()),
        message: error.to_string(),
    }
}
