//! References to forge objects and the untrusted input attached to a task.

use serde::{Deserialize, Serialize};

use crate::FeedbackKind;

/// Text written by someone outside the operator's trust: an issue body, a
/// review comment, model output. It is data, never instructions; renderers
/// escape it and the record says so (`"untrusted": true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntrustedText {
    /// The text, cut to the cap on a UTF-8 boundary.
    pub text: String,
    /// Always true; lets a reader of the raw record see the marking.
    pub untrusted: bool,
    /// Byte length before capping, when the text was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_bytes: Option<usize>,
}

impl UntrustedText {
    /// Wraps `text`, keeping at most `max_bytes` bytes (cut on a char boundary).
    pub fn capped(text: &str, max_bytes: usize) -> Self {
        if text.len() <= max_bytes {
            return Self { text: text.to_owned(), untrusted: true, original_bytes: None };
        }
        let mut end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Self { text: text[..end].to_owned(), untrusted: true, original_bytes: Some(text.len()) }
    }

    /// Whether the text was cut.
    pub fn is_truncated(&self) -> bool {
        self.original_bytes.is_some()
    }
}

/// The forge a task's repository lives on. GitHub unless a record says
/// otherwise (records written before 2026-12-07 say nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForgeKind {
    #[default]
    GitHub,
    GitLab,
    Gitea,
    /// A Gitea fork speaking Gitea's API: published as Gitea is.
    Forgejo,
}

impl ForgeKind {
    /// The name records and answers spell.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::GitHub => "github",
            Self::GitLab => "gitlab",
            Self::Gitea => "gitea",
            Self::Forgejo => "forgejo",
        }
    }

    /// The forge [`Self::as_str`] spells `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::GitHub, Self::GitLab, Self::Gitea, Self::Forgejo].into_iter().find(|f| f.as_str() == name)
    }

    /// Whether this is GitHub (the default, left out of records).
    #[allow(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
    pub fn is_github(&self) -> bool {
        *self == Self::GitHub
    }

    /// Gitea or Forgejo: one API.
    pub const fn speaks_gitea(self) -> bool {
        matches!(self, Self::Gitea | Self::Forgejo)
    }
}

/// One untrusted feedback item, normalised away from any forge payload shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackItem {
    pub id: String,
    pub kind: FeedbackKind,
    pub body: UntrustedText,
    pub author: String,
    /// True when the reviewer formally requested changes.
    pub requested_changes: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// The pull request a run reports against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestRef {
    pub owner: String,
    pub repo: String,
    pub number: u64,
    pub head_sha: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_sha: Option<String>,
}

/// The issue an issue-to-PR run works on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssueRef {
    pub owner: String,
    pub repo: String,
    pub number: u64,
    pub title: UntrustedText,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capping_respects_utf8() {
        let t = UntrustedText::capped("héllo", 2);
        assert_eq!(t.text, "h");
        assert_eq!(t.original_bytes, Some(6));
        assert!(t.is_truncated());
        let t = UntrustedText::capped("ok", 2);
        assert!(!t.is_truncated());
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json, serde_json::json!({"text": "ok", "untrusted": true}));
    }
}
