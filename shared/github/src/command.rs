//! Commands from a pull request's conversation: a line `@<app login>
//! review` or `/agent-zero review` (or `resolve`) in an issue comment on a
//! pull request or in a submitted review's body. Pure: the comment's text
//! in, what it asks out.
//!
//! Only a line's first two words are read. Quoted lines (`> ...`, a reply
//! quoting someone's command) and fenced code are not commands. Whether an
//! `@login` is this app is decided at admission, where its login is known.

use serde::{Deserialize, Serialize};

/// The slash prefix every installation of this app answers to.
pub const SLASH_PREFIX: &str = "/agent-zero";
/// Lines of a comment read for a command.
const MAX_LINES: usize = 40;
/// Longest word kept from an unknown command (for its reason).
const MAX_WORD_BYTES: usize = 40;

/// `issue_comment`: only the fields a command needs.
#[derive(Debug, Deserialize)]
pub(crate) struct IssueCommentEvent {
    pub(crate) issue: CommentedIssue,
    pub(crate) comment: IssueCommentPayload,
    pub(crate) repository: crate::payload::RepositoryPayload,
    pub(crate) sender: crate::payload::Account,
    #[serde(default)]
    pub(crate) installation: Option<crate::payload::InstallationId>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CommentedIssue {
    pub(crate) number: u64,
    /// Present (an object of links) when the issue is a pull request.
    #[serde(default)]
    pub(crate) pull_request: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) state: Option<String>,
    /// Who opened the issue or pull request (`null` for a deleted account).
    #[serde(default)]
    pub(crate) user: Option<crate::payload::Account>,
    /// The opener's relation to the repository.
    #[serde(default)]
    pub(crate) author_association: Option<String>,
    #[serde(default, deserialize_with = "crate::payload::null_as_default")]
    pub(crate) labels: Vec<crate::payload::Label>,
    /// When it last changed (ISO 8601).
    #[serde(default)]
    pub(crate) updated_at: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct IssueCommentPayload {
    pub(crate) id: u64,
    #[serde(default)]
    pub(crate) body: Option<String>,
    #[serde(default)]
    pub(crate) user: Option<crate::payload::Account>,
    #[serde(default)]
    pub(crate) author_association: Option<String>,
    /// When it was written or last edited (ISO 8601).
    #[serde(default)]
    pub(crate) updated_at: Option<String>,
}

/// What a command asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ReviewCommand {
    /// Review the pull request's current head.
    Review,
    /// Re-check the open findings of our earlier reviews against the head
    /// (a review of the current head, which resolves those it no longer holds).
    Resolve,
}

impl ReviewCommand {
    /// The word that asks for it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Review => "review",
            Self::Resolve => "resolve",
        }
    }

    fn from_word(word: &str) -> Option<Self> {
        match word.to_ascii_lowercase().as_str() {
            "review" => Some(Self::Review),
            "resolve" => Some(Self::Resolve),
            _ => None,
        }
    }
}

/// What a comment holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// A command, and the login it was addressed to (`None` for the slash form).
    Command { command: ReviewCommand, mention: Option<String> },
    /// `/agent-zero <word>` with a word that is no command.
    Unknown { word: String },
    /// No command: conversation.
    Nothing,
}

/// The first command line of `body`.
pub(crate) fn find(body: &str) -> Found {
    let mut fenced = false;
    for line in body.lines().take(MAX_LINES) {
        let line = line.trim();
        if line.starts_with("```") || line.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced || line.starts_with('>') {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(first), second) = (words.next(), words.next()) else { continue };
        if first.eq_ignore_ascii_case(SLASH_PREFIX) {
            let word = second.unwrap_or_default();
            return match ReviewCommand::from_word(word) {
                Some(command) => Found::Command { command, mention: None },
                None => Found::Unknown { word: capped(word) },
            };
        }
        if let (Some(login), Some(command)) = (first.strip_prefix('@'), second.and_then(ReviewCommand::from_word))
            && is_login(login)
        {
            return Found::Command { command, mention: Some(login.to_owned()) };
        }
    }
    Found::Nothing
}

/// Whether `mention` names the account `own_login` (`name[bot]` answers
/// to `@name` and `@name[bot]`).
pub fn addresses(mention: &str, own_login: &str) -> bool {
    let bare = |l: &str| l.strip_suffix("[bot]").unwrap_or(l).to_ascii_lowercase();
    bare(mention) == bare(own_login)
}

/// A GitHub login: letters, digits and single hyphens, at most 39, plus an
/// App account's `[bot]`.
fn is_login(login: &str) -> bool {
    let name = login.strip_suffix("[bot]").unwrap_or(login);
    !name.is_empty()
        && name.len() <= 39
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !name.starts_with('-')
}

fn capped(word: &str) -> String {
    let mut end = word.len().min(MAX_WORD_BYTES);
    while !word.is_char_boundary(end) {
        end -= 1;
    }
    word[..end].chars().filter(|c| !c.is_control()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_commands_on_their_own_line() {
        let review = Found::Command { command: ReviewCommand::Review, mention: None };
        assert_eq!(find("/agent-zero review"), review);
        assert_eq!(find("Thanks!\n\n  /Agent-Zero REVIEW please"), review);
        assert_eq!(
            find("@agent-zero-app[bot] resolve"),
            Found::Command { command: ReviewCommand::Resolve, mention: Some("agent-zero-app[bot]".into()) }
        );
        assert_eq!(find("/agent-zero deploy"), Found::Unknown { word: "deploy".into() });
        assert_eq!(find("/agent-zero"), Found::Unknown { word: String::new() });
        // Conversation, quotes and code are not commands.
        assert_eq!(find("@alice thanks for the review"), Found::Nothing);
        assert_eq!(find("> /agent-zero review\nagreed"), Found::Nothing);
        assert_eq!(find("```\n/agent-zero review\n```"), Found::Nothing);
        assert_eq!(find("please run /agent-zero review"), Found::Nothing);
        assert_eq!(find("@-x review"), Found::Nothing);
    }

    #[test]
    fn a_mention_addresses_the_app_with_or_without_its_bot_suffix() {
        assert!(addresses("agent-zero", "agent-zero[bot]"));
        assert!(addresses("Agent-Zero[bot]", "agent-zero[bot]"));
        assert!(addresses("octocat", "octocat"));
        assert!(!addresses("coderabbitai", "agent-zero[bot]"));
    }
}
