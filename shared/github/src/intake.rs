//! What a webhook delivery becomes: a normalised, size-bounded parsed delivery, a
//! ping, an installation record, or an ignored delivery with its reason.
//! Never the raw payload.

use agent_zero_contracts::{FeedbackItem, IssueRef, PullRequestRef, Trigger, UntrustedText};
use serde::{Deserialize, Serialize};

/// Caps on untrusted text taken from a payload, in bytes.
pub const MAX_TITLE_BYTES: usize = 256;
/// Issue bodies, review bodies and review comments.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// One label name (GitHub allows 50 characters).
pub const MAX_LABEL_BYTES: usize = 100;
/// Labels kept from one issue.
pub const MAX_LABELS: usize = 50;
/// A login or a repository-relative path taken from a payload.
pub(crate) const MAX_NAME_BYTES: usize = 255;
/// Repositories listed in one installation record.
pub const MAX_INSTALLATION_REPOSITORIES: usize = 100;

/// The outcome of parsing one delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Intake {
    /// Work to create, once [`ParsedDelivery::admit`] accepts it under the
    /// repository's policy.
    Task(Box<ParsedDelivery>),
    /// Nothing to do; the reason is answered to GitHub (202).
    Ignored { reason: IgnoreReason },
    /// GitHub checking the hook (200).
    Ping {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hook_id: Option<u64>,
    },
    /// An App installation changed; worth recording, never a task.
    Installation(InstallationChange),
}

/// The repository a delivery is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Repository {
    pub owner: String,
    pub repo: String,
    /// As the payload saw it; the policy is read from the branch the API
    /// reports at run time, not from this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_branch: Option<String>,
}

impl Repository {
    /// `owner/repo`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }
}

/// What a task is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Subject {
    PullRequest(PullRequestRef),
    Issue(IssueRef),
}

/// Which policy switch decides whether a parsed delivery becomes a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "gate", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum PolicyGate {
    /// Review feedback is always validated (the mode still comes from policy).
    Feedback,
    /// A proactive review: needs `proactive.enabled`.
    Proactive,
    /// A `pull_request` `labeled`: a proactive review when the label added
    /// is `triggers.optInLabel` (and `proactive.enabled`), whoever opened
    /// the pull request: labelling needs triage access on GitHub.
    OptIn {
        /// The label just added.
        added_label: String,
    },
    /// A command from the pull request's conversation (`/agent-zero
    /// review`): an explicit request, so `proactive.enabled` is not needed;
    /// the author rules still apply.
    Command {
        command: crate::command::ReviewCommand,
        /// The `@login` it was addressed to: admission checks it is ours.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mention: Option<String>,
        /// The issue comment that carries it, acknowledged with a reaction
        /// (a review body has no reactions API).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment_id: Option<u64>,
    },
    /// An issue task: needs `issues.enabled` and `issues.requireLabel`.
    IssueLabel {
        /// Every label the issue carries (capped).
        labels: Vec<String>,
        /// For a `labeled` delivery, the label just added: only adding the
        /// required label starts a task, so unrelated labelling of an issue
        /// that already has it does not start another one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        added_label: Option<String>,
    },
}

/// The account whose text starts a run: the reviewer, the commenter, the
/// issue's author. What GitHub says of it, never what its text claims.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Author {
    pub login: String,
    /// GitHub's `author_association` (`OWNER`, `MEMBER`, `COLLABORATOR`,
    /// `CONTRIBUTOR`, `NONE`, ...); `None` when the payload has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub association: Option<String>,
    /// GitHub marks it `type: Bot`, or its login ends in `[bot]`.
    pub bot: bool,
}

/// A webhook delivery as intake parsed it: references, capped and marked
/// untrusted text, and the gate policy decides on. It is the first of three
/// stages of what a task starts from: intake records it in the task's
/// `Received` fact (agent-zero-engine); admission turns it (or an API
/// `CreateTask` body) into the run's `Stimulus`, whose `TaskInput` holds
/// the untrusted text the run may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ParsedDelivery {
    pub trigger: Trigger,
    /// `X-GitHub-Delivery`, the de-duplication key.
    pub delivery_id: String,
    /// `X-GitHub-Event` and the payload's action, for the record.
    pub event: String,
    pub action: String,
    pub repository: Repository,
    /// The App installation to authenticate as, when delivered to an App.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installation_id: Option<u64>,
    /// Login of the account that caused the delivery.
    pub sender: String,
    pub subject: Subject,
    /// Pull request or issue title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<UntrustedText>,
    /// Pull request or issue description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<UntrustedText>,
    /// Review feedback to validate (feedback tasks only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback: Vec<FeedbackItem>,
    /// True when a reviewer formally requested changes.
    pub requested_changes: bool,
    pub gate: PolicyGate,
    /// Whose text starts the run: the reviewer, commenter, issue author or
    /// pull request opener (`None` when the payload names no account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<Author>,
    /// A person other than the issue's author who added the required
    /// label: GitHub lets only accounts with triage access label another's
    /// issue, so they vouch for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vouched_by: Option<String>,
    /// The labels the pull request carries (capped), for
    /// `triggers.optInLabel`; empty for an issue, whose labels its gate holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Who opened the pull request, when someone else's text starts the
    /// run (feedback, a command): an allowed bot's feedback on an
    /// outsider's pull request starts nothing until it is opted in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opener: Option<Author>,
    /// When the event happened, by the payload's own timestamps (the
    /// latest of those it carries, milliseconds since the epoch): a signed
    /// body cannot be re-dated, so intake refuses one older than its replay
    /// window. `None` when the payload carries none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_at_ms: Option<u64>,
}

/// An installation or its repository selection changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InstallationChange {
    pub delivery_id: String,
    /// `installation` or `installation_repositories`.
    pub event: String,
    pub action: String,
    pub installation_id: u64,
    /// The account the App is installed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `owner/repo` names granted (from `repositories` or `repositories_added`).
    pub repositories_added: Vec<String>,
    pub repositories_removed: Vec<String>,
    /// Names left out past [`MAX_INSTALLATION_REPOSITORIES`] per list.
    #[serde(default)]
    pub repositories_omitted: usize,
}

/// Why a delivery (or a parsed delivery, under policy) does not become a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "code", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum IgnoreReason {
    /// An event this agent does not act on.
    #[error("event `{event}` is not handled")]
    UnsupportedEvent { event: String },
    /// A handled event with an action that carries no work.
    #[error("`{event}` action `{action}` is not handled")]
    UnsupportedAction { event: String, action: String },
    /// The repository is outside the operator's allowlist.
    #[error("repository {repository} is not in the allowlist")]
    RepositoryNotAllowed { repository: String },
    /// Draft pull requests are not reviewed until marked ready.
    #[error("pull request #{number} is a draft")]
    DraftPullRequest { number: u64 },
    /// Written by a bot that `triggers.allowedBots` does not list (possibly
    /// this agent: reacting would loop).
    #[error("authored by bot account {login}, which triggers.allowedBots does not list")]
    BotAuthor { login: String },
    /// The author's association with the repository does not start runs
    /// (`triggers.authorAssociations`).
    #[error(
        "{login} is `{association}` on this repository; runs start only for {allowed} (triggers.authorAssociations)"
    )]
    AuthorNotAllowed { login: String, association: String, allowed: String },
    /// An approval, dismissal or pending review carries no claim to validate.
    #[error("a `{state}` review carries no claim to validate")]
    ReviewCarriesNoClaim { state: String },
    /// The review or comment has no text.
    #[error("the {what} has no text")]
    EmptyFeedback { what: String },
    /// GitHub models pull requests as issues; those are not issue tasks.
    #[error("issue #{number} is a pull request")]
    IssueIsPullRequest { number: u64 },
    /// Only open issues become tasks.
    #[error("issue #{number} is not open")]
    IssueNotOpen { number: u64 },
    /// Policy: `proactive.enabled` is false.
    #[error("proactive review is disabled by repository policy")]
    ProactiveDisabled,
    /// Policy: `issues.enabled` is false.
    #[error("issue tasks are disabled by repository policy")]
    IssuesDisabled,
    /// Policy: the issue does not carry `issues.requireLabel`.
    #[error("the issue does not carry the required label `{required}`")]
    MissingRequiredLabel { required: String },
    /// Policy: a label other than `issues.requireLabel` was added.
    #[error("label `{added}` was added; only `{required}` starts an issue task")]
    OtherLabelAdded { added: String, required: String },
    /// A comment with no command in it: conversation.
    #[error("the {what} holds no command (`/agent-zero review`, `/agent-zero resolve`)")]
    NoCommand { what: String },
    /// `/agent-zero <word>` with a word that is no command.
    #[error("`/agent-zero {word}` is not a command; the commands are `review` and `resolve`")]
    UnknownCommand { word: String },
    /// A command on an issue that is not a pull request.
    #[error("issue #{number} is not a pull request; commands act on pull requests")]
    CommandNotOnPullRequest { number: u64 },
    /// `@login review` addressed to another account.
    #[error("the command is addressed to @{login}, not to this app")]
    CommandForAnotherAccount { login: String },
    /// A command on a closed or merged pull request.
    #[error("pull request #{number} is not open")]
    PullRequestNotOpen { number: u64 },
    /// Policy: a label other than `triggers.optInLabel` was added to a pull request.
    #[error("label `{added}` was added; only `{opt_in}` (triggers.optInLabel) opts a pull request in")]
    NotOptInLabel { added: String, opt_in: String },
    /// Policy: `triggers.optInLabel` is empty, so no label opts a pull request in.
    #[error("label `{added}` was added, but triggers.optInLabel is empty: no label opts a pull request in")]
    OptInDisabled { added: String },
    /// An allowed bot's text on a pull request whose opener the author
    /// rules refuse, and which does not carry `triggers.optInLabel`.
    #[error(
        "{login} wrote on a pull request opened by {opener} (`{association}`), whom triggers.authorAssociations does \
         not list; it starts a run once the pull request carries triggers.optInLabel (`{opt_in}`)"
    )]
    OpenerNotAllowed { login: String, opener: String, association: String, opt_in: String },
    /// Policy: the pull request or issue already started
    /// `triggers.maxRunsPerHour` runs in the last hour.
    #[error("#{number} started {max} runs in the last hour, the most triggers.maxRunsPerHour allows")]
    MaxRunsPerHour { number: u64, max: u32 },
    /// The signed body was already accepted under another
    /// `X-GitHub-Delivery`: a captured delivery sent again. (GitHub's own
    /// redelivery keeps its id and is answered as a duplicate.)
    #[error("this signed body was already accepted under another X-GitHub-Delivery; a replay starts nothing")]
    ReplayedBody,
    /// The payload's own timestamp is older than the replay window
    /// (`AGENT_ZERO_DELIVERY_RETENTION_DAYS`, how long accepted bodies are
    /// remembered).
    #[error("the event is dated {at}, older than the {hours}-hour replay window (AGENT_ZERO_DELIVERY_RETENTION_DAYS)")]
    StaleEvent { at: String, hours: u64 },
}

impl IgnoreReason {
    /// The stable kebab-case code of this reason.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnsupportedEvent { .. } => "unsupported-event",
            Self::UnsupportedAction { .. } => "unsupported-action",
            Self::RepositoryNotAllowed { .. } => "repository-not-allowed",
            Self::DraftPullRequest { .. } => "draft-pull-request",
            Self::BotAuthor { .. } => "bot-author",
            Self::AuthorNotAllowed { .. } => "author-not-allowed",
            Self::ReviewCarriesNoClaim { .. } => "review-carries-no-claim",
            Self::EmptyFeedback { .. } => "empty-feedback",
            Self::IssueIsPullRequest { .. } => "issue-is-pull-request",
            Self::IssueNotOpen { .. } => "issue-not-open",
            Self::ProactiveDisabled => "proactive-disabled",
            Self::IssuesDisabled => "issues-disabled",
            Self::MissingRequiredLabel { .. } => "missing-required-label",
            Self::OtherLabelAdded { .. } => "other-label-added",
            Self::NoCommand { .. } => "no-command",
            Self::UnknownCommand { .. } => "unknown-command",
            Self::CommandNotOnPullRequest { .. } => "command-not-on-pull-request",
            Self::CommandForAnotherAccount { .. } => "command-for-another-account",
            Self::PullRequestNotOpen { .. } => "pull-request-not-open",
            Self::NotOptInLabel { .. } => "not-opt-in-label",
            Self::OptInDisabled { .. } => "opt-in-disabled",
            Self::OpenerNotAllowed { .. } => "opener-not-allowed",
            Self::MaxRunsPerHour { .. } => "max-runs-per-hour",
            Self::ReplayedBody => "replayed-body",
            Self::StaleEvent { .. } => "stale-event",
        }
    }
}

/// Repositories the operator lets deliveries through for; `None` on
/// [`IntakeOptions`] means every repository the webhook is installed on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepositoryAllowlist {
    /// Lower-cased `owner/repo` or `owner/*`.
    entries: Vec<String>,
}

impl RepositoryAllowlist {
    /// Parses a comma- or whitespace-separated list of `owner/repo` and
    /// `owner/*` entries (case-insensitive, as GitHub names are).
    pub fn parse(list: &str) -> Self {
        let entries = list
            .split([',', ' ', '\n', '\t'])
            .map(str::trim)
            .filter(|e| e.contains('/'))
            .map(str::to_ascii_lowercase)
            .collect();
        Self { entries }
    }

    /// Whether `owner/repo` is allowed.
    pub fn allows(&self, owner: &str, repo: &str) -> bool {
        let owner = owner.to_ascii_lowercase();
        let full = format!("{owner}/{}", repo.to_ascii_lowercase());
        let wildcard = format!("{owner}/*");
        self.entries.iter().any(|e| *e == full || *e == wildcard)
    }
}

/// Operator settings for intake (never from a repository).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntakeOptions {
    pub allowlist: Option<RepositoryAllowlist>,
}

/// Whether an account is a bot: GitHub marks them `type: Bot`, and App
/// accounts are named `something[bot]`.
pub(crate) fn is_bot(login: &str, account_type: Option<&str>) -> bool {
    account_type == Some("Bot") || login.ends_with("[bot]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_matches_exact_and_owner_wildcards() {
        let list = RepositoryAllowlist::parse("Octo/Hello-World, acme/*  junk");
        assert!(list.allows("octo", "hello-world"));
        assert!(list.allows("ACME", "anything"));
        assert!(!list.allows("octo", "other"));
        assert!(!list.allows("acme-evil", "x"));
        assert!(!RepositoryAllowlist::parse("").allows("a", "b"));
    }

    #[test]
    fn reasons_serialise_with_their_code() {
        let reason = IgnoreReason::DraftPullRequest { number: 7 };
        let json = serde_json::to_value(&reason).unwrap();
        assert_eq!(json["code"], reason.code());
        assert_eq!(reason.to_string(), "pull request #7 is a draft");
        assert!(is_bot("dependabot[bot]", Some("User")) && is_bot("x", Some("Bot")) && !is_bot("octo", Some("User")));
    }
}
