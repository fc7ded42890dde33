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
//! - a command (`/agent-zero review|resolve`, `@<app> review|resolve`) in
//!   an `issue_comment` `created` on a pull request, or in a submitted
//!   review's body, seeds a review of the current head
//!   ([`PolicyGate::Command`]); any other comment is ignored with its reason;
//! - `issues` `opened|labeled` on an open issue seeds an issue task
//!   ([`PolicyGate::IssueLabel`]);
//! - drafts and repositories outside the allowlist are ignored with a
//!   reason; so is everything else;
//! - the seed carries its [`Author`] (login, `author_association`, bot or
//!   not) so the repository's `triggers` policy decides who may start a
//!   run ([`ParsedDelivery::admit`]): bots are no longer refused here, since AI
//!   reviewers' feedback is what the product validates.
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
        let pr = pull_request_ref(&repository, &p.pull_request)?;
        let mut seed = self.seed(Trigger::Proactive, repository, &p.sender, p.installation, Subject::PullRequest(pr));
        seed.title = text(p.pull_request.title.as_deref(), MAX_TITLE_BYTES);
        seed.body = text(p.pull_request.body.as_deref(), MAX_BODY_BYTES);
        seed.gate = PolicyGate::Proactive;
        // A proactive review runs the pull request's own checks: its opener
        // passes the same author gate as feedback and issues do.
        let opener = p.pull_request.user.as_ref().unwrap_or(&p.sender);
        seed.author = Some(author_of(opener, p.pull_request.author_association.as_deref()));
        Ok(Intake::Task(Box::new(seed)))
    }

    fn review(&self, p: ReviewEvent) -> Result<Intake, IntakeError> {
        let repository = self.repository(&p.repository);
        if let Some(reason) = self.screen_pull_request(&repository, &p.pull_request) {
            return Ok(Intake::Ignored { reason });
        }
        let author = p.review.user.as_ref().unwrap_or(&p.sender);
        match command::find(p.review.body.as_deref().unwrap_or_default()) {
            Found::Command { command, mention } => {
                let pr = pull_request_ref(&repository, &p.pull_request)?;
                let mut seed =
                    self.seed(Trigger::Proactive, repository, &p.sender, p.installation, Subject::PullRequest(pr));
                seed.title = text(p.pull_request.title.as_deref(), MAX_TITLE_BYTES);
                seed.author = Some(author_of(author, p.review.author_association.as_deref()));
                seed.gate = PolicyGate::Command { command, mention: mention.as_deref().map(name), comment_id: None };
                return Ok(Intake::Task(Box::new(seed)));
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
        let mut seed = self.seed(Trigger::Proactive, repository, &p.sender, p.installation, Subject::PullRequest(pr));
        let author = p.comment.user.as_ref().unwrap_or(&p.sender);
        seed.author = Some(author_of(author, p.comment.author_association.as_deref()));
        seed.gate =
            PolicyGate::Command { command, mention: mention.as_deref().map(name), comment_id: Some(p.comment.id) };
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
fn parse<'de, T: Deserialize<'de>>(body: &'de [u8]) -> Result<T, IntakeError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value =
        T::deserialize(agent_zero_contracts::json::Objects(&mut deserializer)).map_err(|e| json_error(body, &e))?;
    deserializer.end().map_err(|e| IntakeError::Json { path: ".".to_owned(), message: e.to_string() })?;
    Ok(value)
}

fn json_error(body: &[u8], error: &serde_json::Error) -> IntakeError {
    IntakeError::Json { path: json_path_at(body, error.line(), error.column()), message: error.to_string() }
}

/// One open container while [`json_path_at`] scans.
enum Frame {
    /// The key being read, and whether its `:` has been passed.
    Object { key: Option<String>, in_value: bool },
    /// The index of the element being read.
    Array { index: usize },
}

/// The path (`pull_request.head`, `issue.labels[0].name`, `.` for the
/// root) of the value serde_json was reading at `line`:`column` of `body`
/// when it failed, written the way `serde_path_to_error` writes it: a
/// wrong type, value or variant names the value itself; a missing or
/// unknown field names the object holding it.
///
/// serde_json positions an error just after the bytes it consumed: after
/// the offending scalar, before a `{`/`[` it refused, after a key it did
/// not know (before its `:`), or after the `}` of an object that lacked a
/// field. Scanning the valid prefix up to there and keeping the open
/// containers is enough to name it.
pub fn json_path_at(body: &[u8], line: usize, column: usize) -> String {
    if line == 0 {
        return ".".to_owned();
    }
    let line_start = match line {
        1 => 0,
        _ => body.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(line - 2).map_or(body.len(), |(i, _)| i + 1),
    };
    let end = (line_start + column).min(body.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < end {
        match body[i] {
            b'{' => stack.push(Frame::Object { key: None, in_value: false }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => drop(stack.pop()),
            b':' => {
                if let Some(Frame::Object { in_value, .. }) = stack.last_mut() {
                    *in_value = true;
                }
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { key, in_value }) => (*key, *in_value) = (None, false),
                Some(Frame::Array { index }) => *index += 1,
                None => {}
            },
            b'"' => {
                let mut close = i + 1;
                while close < end && body[close] != b'"' {
                    close += if body[close] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object { key: key @ None, in_value: false }) = stack.last_mut() {
                    let raw = &body[i + 1..close.min(end)];
                    let decoded = match raw.contains(&b'\\') {
                        true => {
                            body.get(i..=close).and_then(|s| agent_zero_contracts::json::from_slice::<String>(s).ok())
                        }
                        false => None,
                    };
                    *key = Some(decoded.unwrap_or_else(|| String::from_utf8_lossy(raw).into_owned()));
                }
                i = close;
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(key), in_value: true } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Array { index } => {
                use std::fmt::Write as _;
                let _ = write!(path, "[{index}]");
            }
            Frame::Object { .. } => {}
        }
    }
    if path.is_empty() { ".".to_owned() } else { path }
}

#[cfg(test)]
mod path_tests {
    //! [`json_path_at`] against `serde_path_to_error` on every field of real
    //! payloads made wrong in each way, pretty and compact.
    use serde_json::{Value, json};

    use super::*;

    fn compare<T: for<'de> Deserialize<'de>>(body: &[u8]) -> bool {
        let ours = parse::<T>(body).err();
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        // Over the same reading of structs (objects only) as `parse`.
        let objects = agent_zero_contracts::json::Objects(&mut deserializer);
        let theirs = serde_path_to_error::deserialize::<_, T>(objects).err();
        match (ours, theirs) {
            (Some(IntakeError::Json { path, message }), Some(e)) => {
                assert_eq!((path.as_str(), message), (e.path().to_string().as_str(), e.inner().to_string()));
                true
            }
            (None, None) => false,
            (ours, theirs) => panic!("{ours:?} vs {theirs:?}"),
        }
    }

    fn mutate<T: for<'de> Deserialize<'de>>(root: &Value, pointer: &str, node: &Value) {
        let replacements =
            [json!(5), json!("s"), json!(true), json!(null), json!([]), json!({}), json!({"zz": 1}), json!([1])];
        let mut read = false;
        for (n, replacement) in replacements.into_iter().enumerate() {
            let mut changed = root.clone();
            *changed.pointer_mut(pointer).unwrap() = replacement;
            read |= compare::<T>(&serde_json::to_vec_pretty(&changed).unwrap());
            if n < 2 {
                read |= compare::<T>(&serde_json::to_vec(&changed).unwrap());
            }
        }
        if let Some((parent, key)) = pointer.rsplit_once('/') {
            let mut changed = root.clone();
            match changed.pointer_mut(parent).unwrap() {
                Value::Object(map) => drop(map.remove(key)),
                Value::Array(items) => drop(items.remove(key.parse::<usize>().unwrap())),
                _ => unreachable!(),
            }
            compare::<T>(&serde_json::to_vec_pretty(&changed).unwrap());
        }
        if !read {
            return; // a value the type skips, and so everything under it
        }
        let children: Vec<(String, Value)> = match node {
            Value::Object(map) => {
                map.iter().map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v.clone())).collect()
            }
            Value::Array(items) => items.iter().take(2).enumerate().map(|(i, v)| (i.to_string(), v.clone())).collect(),
            _ => Vec::new(),
        };
        for (key, child) in children {
            mutate::<T>(root, &format!("{pointer}/{key}"), &child);
        }
    }

    fn fixture(event: &str, name: &str) -> Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/github-webhooks")
            .join(event)
            .join(name);
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn paths_match_serde_path_to_error() {
        let pr = fixture("pull_request", "opened.payload.json");
        for (key, value) in pr.as_object().unwrap() {
            mutate::<PullRequestEvent>(&pr, &format!("/{key}"), value);
        }
        let issue = fixture("issues", "labeled.payload.json");
        for (key, value) in issue.as_object().unwrap() {
            mutate::<IssuesEvent>(&issue, &format!("/{key}"), value);
        }
        let comment = fixture("pull_request_review_comment", "created.payload.json");
        for (key, value) in comment.as_object().unwrap() {
            mutate::<ReviewCommentEvent>(&comment, &format!("/{key}"), value);
        }
        for body in
            [&b"{\"a\\u0062\": {\"x\": 1}, \"pull_request\": 5}"[..], b"[1,", b"{\"pull_request\": {\"head\": ", b"  "]
        {
            compare::<PullRequestEvent>(body);
        }
    }
}
