//! `suggest` mode: a line comment carries a committable ```` ```suggestion
//! ```` block only for a change that was applied in the sandbox and passed
//! the repository's checks there, and only when that change is exactly the
//! commented lines replaced (the reader commits the suggestion and gets
//! what was verified, nothing less). Otherwise the comment says why not.
//!
//! The verified content is the publication's file, matched to the
//! evidence's SHA-256 of the sandbox's copy; the head's content is read
//! with the contents API.

use agent_zero_contracts::{EvidenceBundle, RunMode, TerminalState};
use agent_zero_evidence::ReviewComment;
use agent_zero_ports::HttpClient;
use sha2::{Digest, Sha256};

use super::PublishFile;
use super::rest::{Halt, Rest};
use crate::client::GitHubError;

/// Most bytes of a head file read to place a suggestion.
const MAX_HEAD_FILE_BYTES: u64 = 1_000_000;

/// What a comment says about a suggestion, in `suggest` mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Suggestion {
    /// The lines that replace the commented range.
    Lines(String),
    /// Why there is none.
    None(String),
}

impl Suggestion {
    /// The Markdown appended to the comment.
    pub(crate) fn markdown(&self) -> String {
        match self {
            Self::Lines(text) => {
                // A fence longer than any backtick run in the text.
                let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
                let fence = "`".repeat(longest.max(2) + 1);
                let body = if text.is_empty() { String::new() } else { format!("{text}\n") };
                format!(
                    "\n\n**Suggested change**, applied in the sandbox, where the repository's checks passed:\n\n{fence}suggestion\n{body}{fence}"
                )
            }
            Self::None(reason) => format!("\n\n**No suggestion:** {reason}."),
        }
    }
}

/// The suggestion for `comment` of a `suggest`-mode run, or `None` in any
/// other mode.
pub(crate) async fn for_comment<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    (owner, repo, head_sha): (&str, &str, &str),
    bundle: &EvidenceBundle,
    files: &[PublishFile<'_>],
    comment: &ReviewComment,
) -> Result<Option<Suggestion>, Halt> {
    if bundle.mode != RunMode::Suggest {
        return Ok(None);
    }
    let none = |reason: String| Ok(Some(Suggestion::None(reason)));
    // Failed checks first: a run whose repairs were used up stops for a
    // person with a recorded stop, yet its change was tried.
    if bundle.checks.iter().any(|c| !c.passed()) {
        return none("the repository's checks failed on the change in the sandbox".into());
    }
    if let Some(refusal) = &bundle.refusal {
        return none(format!("the change was not tried in the sandbox: {}", refusal.message));
    }
    if !(bundle.verified && bundle.state == TerminalState::Completed) {
        return none(format!("the change was not verified in the sandbox (the run ended {})", bundle.state));
    }
    if bundle.changed_files.len() != 1 || bundle.changed_files[0] != comment.path {
        return none(format!(
            "the verified change touches {} file(s), not only the commented one",
            bundle.changed_files.len()
        ));
    }
    let verified = files.iter().find(|f| f.path == comment.path).and_then(|f| f.content);
    let recorded = bundle.tree.iter().find(|t| t.path == comment.path).map(|t| t.sha256.as_str());
    let Some(verified) = verified.filter(|c| recorded == Some(hex::encode(Sha256::digest(c)).as_str())) else {
        return none("the content at hand is not the content the checks passed on".into());
    };
    let head = match rest.client.file_at(owner, repo, &comment.path, head_sha, MAX_HEAD_FILE_BYTES).await {
        Ok(Some(file)) => file.bytes,
        Ok(None) => return none("the commented file is not in the head".into()),
        Err(GitHubError::FileTooLarge { .. } | GitHubError::NotAFile { .. }) => {
            return none("the commented file cannot be read to place a suggestion".into());
        }
        Err(e) => return Err(e.into()),
    };
    let (Ok(head), Ok(verified)) = (std::str::from_utf8(&head), std::str::from_utf8(verified)) else {
        return none("the file is not UTF-8 text".into());
    };
    let start = comment.start_line.unwrap_or(comment.line);
    Ok(Some(match replacement(head, verified, start, comment.line) {
        Ok(lines) => Suggestion::Lines(lines),
        Err(reason) => Suggestion::None(reason.into()),
    }))
}

/// The lines of `verified` that replace lines `start..=end` (1-based) of
/// `head`, when the two differ only there.
pub(crate) fn replacement(head: &str, verified: &str, start: u32, end: u32) -> Result<String, &'static str> {
    let (old, new): (Vec<&str>, Vec<&str>) = (head.lines().collect(), verified.lines().collect());
    let (start, end) = (start as usize, end as usize);
    if start == 0 || start > end || end > old.len() {
        return Err("the commented lines are not in the head's file");
    }
    if head.ends_with('\n') != verified.ends_with('\n') {
        return Err("the verified change also changes the file's final newline");
    }
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old.iter().rev().zip(new.iter().rev()).take_while(|(a, b)| a == b).count();
    // Lines before the range and after it must be untouched.
    let kept_before = start - 1;
    let kept_after = old.len() - end;
    if prefix < kept_before || suffix < kept_after || new.len() < kept_before + kept_after {
        return Err("the verified change reaches outside the commented lines");
    }
    let replaced = &new[kept_before..new.len() - kept_after];
    if replaced == &old[start - 1..end] {
        return Err("the verified change leaves the commented lines as they are");
    }
    Ok(replaced.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "a\nb\nbad\nd\n";

    #[test]
    fn a_suggestion_is_the_commented_lines_replaced() {
        assert_eq!(replacement(HEAD, "a\nb\ngood\nd\n", 3, 3), Ok("good".into()));
        // A range, grown by a line.
        assert_eq!(replacement(HEAD, "a\nb\ngood\nbetter\nd\n", 2, 3), Ok("b\ngood\nbetter".into()));
        // Removing the line: an empty suggestion.
        assert_eq!(replacement(HEAD, "a\nb\nd\n", 3, 3), Ok(String::new()));
    }

    #[test]
    fn anything_else_gets_no_suggestion() {
        assert_eq!(
            replacement(HEAD, "A\nb\ngood\nd\n", 3, 3),
            Err("the verified change reaches outside the commented lines")
        );
        assert_eq!(
            replacement(HEAD, "a\nb\ngood\nd\ne\n", 3, 3),
            Err("the verified change reaches outside the commented lines")
        );
        assert_eq!(replacement(HEAD, HEAD, 3, 3), Err("the verified change leaves the commented lines as they are"));
        assert_eq!(
            replacement(HEAD, "a\nb\ngood\nd", 3, 3),
            Err("the verified change also changes the file's final newline")
        );
        assert_eq!(replacement(HEAD, "a\n", 9, 9), Err("the commented lines are not in the head's file"));
    }

    #[test]
    fn the_fence_outgrows_backticks_in_the_text() {
        let md = Suggestion::Lines("x = ```y```".into()).markdown();
        assert!(md.contains("\n````suggestion\nx = ```y```\n````"), "{md}");
        let md = Suggestion::Lines("x".into()).markdown();
        assert!(md.ends_with("```suggestion\nx\n```"), "{md}");
        assert_eq!(Suggestion::None("why".into()).markdown(), "\n\n**No suggestion:** why.");
    }
}
