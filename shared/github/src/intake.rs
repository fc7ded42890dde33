//! What a webhook delivery becomes: a normalised, size-bounded task seed, a
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

/// Which policy switch decides whether a seed becomes a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "gate", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum PolicyGate {
    /// Review feedback is always validated (the mode still comes from policy).
    Feedback,
    /// A proactive review: needs `proactive.enabled`.
    Proactive,
    /// A command from the pull request's conversation (`/agent-zero
    /// review`): an explicit request, so `proactive.enabled` is not needed;
    /// the author rules still apply.
    Command {
        command: crate::command::Command,
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

/// The policy values a seed is checked against, read by the caller from
/// `.agent-zero.yml` on the default branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicySwitches<'a> {
    pub proactive_enabled: bool,
    pub issues_enabled: bool,
    pub issues_require_label: &'a str,
    /// `triggers.authorAssociations`: whose feedback and issues start a run.
    pub author_associations: &'a [String],
    /// `triggers.allowedBots`: bot logins whose feedback is validated.
    pub allowed_bots: &'a [String],
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
}

impl ParsedDelivery {
    /// Whether the repository's policy turns this seed into a task; the
    /// reason it does not otherwise.
    pub fn admit(&self, policy: &PolicySwitches<'_>) -> Result<(), IgnoreReason> {
        self.admit_gate(policy)?;
        self.admit_author(policy)
    }

    /// Who may start a run: an allowed bot, someone who vouched for the
    /// issue by labelling it, or an author whose association policy allows.
    fn admit_author(&self, policy: &PolicySwitches<'_>) -> Result<(), IgnoreReason> {
        let Some(author) = &self.author else { return Ok(()) };
        if author.bot {
            let allowed = policy.allowed_bots.iter().any(|b| b.eq_ignore_ascii_case(&author.login));
            return if allowed { Ok(()) } else { Err(IgnoreReason::BotAuthor { login: author.login.clone() }) };
        }
        if self.vouched_by.is_some() {
            return Ok(());
        }
        let association = author.association.as_deref().unwrap_or("NONE");
        if policy.author_associations.iter().any(|a| a.eq_ignore_ascii_case(association)) {
            return Ok(());
        }
        Err(IgnoreReason::AuthorNotAllowed {
            login: author.login.clone(),
            association: association.to_owned(),
            allowed: policy.author_associations.join(", "),
        })
    }

    fn admit_gate(&self, policy: &PolicySwitches<'_>) -> Result<(), IgnoreReason> {
        match &self.gate {
            PolicyGate::Feedback | PolicyGate::Command { .. } => Ok(()),
            PolicyGate::Proactive if policy.proactive_enabled => Ok(()),
            PolicyGate::Proactive => Err(IgnoreReason::ProactiveDisabled),
            PolicyGate::IssueLabel { .. } if !policy.issues_enabled => Err(IgnoreReason::IssuesDisabled),
            PolicyGate::IssueLabel { labels, added_label } => {
                let required = policy.issues_require_label.trim();
                let matches = |label: &str| required.is_empty() || label.eq_ignore_ascii_case(required);
                match added_label {
                    Some(added) if matches(added) => Ok(()),
                    Some(added) => {
                        Err(IgnoreReason::OtherLabelAdded { added: added.clone(), required: required.to_owned() })
                    }
                    None if labels.iter().any(|l| matches(l)) => Ok(()),
                    None => Err(IgnoreReason::MissingRequiredLabel { required: required.to_owned() }),
                }
            }
        }
    }
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

/// Why a delivery (or a seed, under policy) does not become a task.
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

    fn issue_gate(labels: &[&str], added: Option<&str>) -> ParsedDelivery {
        ParsedDelivery {
            trigger: Trigger::Issue,
            delivery_id: "d".into(),
            event: "issues".into(),
            action: "opened".into(),
            repository: Repository { owner: "o".into(), repo: "r".into(), default_branch: None },
            installation_id: None,
            sender: "s".into(),
            subject: Subject::Issue(IssueRef {
                owner: "o".into(),
                repo: "r".into(),
                number: 1,
                title: UntrustedText::capped("t", 10),
                url: None,
            }),
            title: None,
            body: None,
            feedback: vec![],
            requested_changes: false,
            gate: PolicyGate::IssueLabel {
                labels: labels.iter().map(|l| (*l).to_owned()).collect(),
                added_label: added.map(str::to_owned),
            },
            author: None,
            vouched_by: None,
        }
    }

    const MAINTAINERS: &[String] = &[];
    const ON: PolicySwitches<'static> = PolicySwitches {
        proactive_enabled: true,
        issues_enabled: true,
        issues_require_label: "agent-zero",
        author_associations: MAINTAINERS,
        allowed_bots: MAINTAINERS,
    };

    fn author(login: &str, association: Option<&str>, bot: bool) -> Option<Author> {
        Some(Author { login: login.into(), association: association.map(str::to_owned), bot })
    }

    #[test]
    fn only_allowed_authors_start_runs() {
        let associations: Vec<String> = ["OWNER", "MEMBER", "COLLABORATOR"].map(String::from).to_vec();
        let bots = vec!["coderabbitai[bot]".to_owned()];
        let policy = PolicySwitches { author_associations: &associations, allowed_bots: &bots, ..ON };
        let mut seed = issue_gate(&[], None);
        seed.gate = PolicyGate::Feedback;
        for association in ["OWNER", "MEMBER", "COLLABORATOR", "member"] {
            seed.author = author("maintainer", Some(association), false);
            assert_eq!(seed.admit(&policy), Ok(()), "{association}");
        }
        for association in [Some("CONTRIBUTOR"), Some("NONE"), Some("FIRST_TIME_CONTRIBUTOR"), None] {
            seed.author = author("outsider", association, false);
            let refused = seed.admit(&policy).unwrap_err();
            assert_eq!(refused.code(), "author-not-allowed", "{association:?}");
            let message = refused.to_string();
            assert!(message.contains("outsider") && message.contains("triggers.authorAssociations"), "{message}");
        }
        // Bots: only the listed ones, whatever their association.
        seed.author = author("CodeRabbitAI[bot]", Some("NONE"), true);
        assert_eq!(seed.admit(&policy), Ok(()));
        seed.author = author("dependabot[bot]", Some("OWNER"), true);
        assert_eq!(seed.admit(&policy), Err(IgnoreReason::BotAuthor { login: "dependabot[bot]".into() }));
        // Someone else labelling an outsider's issue vouches for it.
        let mut issue = issue_gate(&["agent-zero"], Some("agent-zero"));
        issue.author = author("outsider", Some("NONE"), false);
        assert_eq!(issue.admit(&policy).unwrap_err().code(), "author-not-allowed");
        issue.vouched_by = Some("maintainer".into());
        assert_eq!(issue.admit(&policy), Ok(()));
        // The gate is checked first: a disabled feature says so, not who asked.
        let off = PolicySwitches { issues_enabled: false, ..policy };
        assert_eq!(issue.admit(&off), Err(IgnoreReason::IssuesDisabled));
        // Widened by policy.
        let everyone: Vec<String> = vec!["NONE".into(), "CONTRIBUTOR".into()];
        seed.author = author("outsider", Some("CONTRIBUTOR"), false);
        assert_eq!(seed.admit(&PolicySwitches { author_associations: &everyone, ..policy }), Ok(()));
    }

    #[test]
    fn issue_gate_needs_enabled_and_the_label() {
        assert_eq!(issue_gate(&["bug", "Agent-Zero"], None).admit(&ON), Ok(()));
        assert_eq!(
            issue_gate(&["bug"], None).admit(&ON),
            Err(IgnoreReason::MissingRequiredLabel { required: "agent-zero".into() })
        );
        let off = PolicySwitches { issues_enabled: false, ..ON };
        assert_eq!(issue_gate(&["agent-zero"], None).admit(&off), Err(IgnoreReason::IssuesDisabled));
        assert_eq!(issue_gate(&["agent-zero", "bug"], Some("agent-zero")).admit(&ON), Ok(()));
        assert_eq!(
            issue_gate(&["agent-zero", "bug"], Some("bug")).admit(&ON),
            Err(IgnoreReason::OtherLabelAdded { added: "bug".into(), required: "agent-zero".into() })
        );
    }

    #[test]
    fn proactive_and_feedback_gates() {
        let mut seed = issue_gate(&[], None);
        seed.gate = PolicyGate::Proactive;
        assert_eq!(seed.admit(&ON), Ok(()));
        let off = PolicySwitches { proactive_enabled: false, ..ON };
        assert_eq!(seed.admit(&off), Err(IgnoreReason::ProactiveDisabled));
        seed.gate = PolicyGate::Feedback;
        let all_off =
            PolicySwitches { proactive_enabled: false, issues_enabled: false, issues_require_label: "", ..ON };
        assert_eq!(seed.admit(&all_off), Ok(()));
    }

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
