//! `suggest` mode: a line comment carries a committable suggestion block
//! only for a change that was applied in the sandbox and passed the
//! repository's checks there, and only when that change is exactly the
//! commented lines replaced (the reader applies the suggestion and gets
//! what was verified, nothing less). Otherwise the comment says why not.
//!
//! The rules are the forge's neutral part: whether the run's change may be
//! a suggestion at all ([`verified_content`]), the lines that replace the
//! commented range ([`replacement`]), and the block, in each forge's
//! syntax ([`Suggestion::markdown`]): GitHub's ```` ```suggestion ````
//! replaces the commented range; GitLab's ```` ```suggestion:-N+0 ````
//! replaces the commented line and the `N` above it. Each adapter reads
//! the head's file its own way.

use agent_zero_contracts::{EvidenceBundle, RunMode, TerminalState};
use agent_zero_evidence::ReviewComment;
use sha2::{Digest, Sha256};

use super::PublishFile;

/// Most bytes of a head file read to place a suggestion.
pub const MAX_HEAD_FILE_BYTES: u64 = 1_000_000;

/// A forge's suggestion block syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// ```` ```suggestion ````: the comment's range (`start_line..=line`).
    GitHub,
    /// ```` ```suggestion:-N+0 ````: the comment's line and the `N` lines
    /// above it.
    GitLab,
}

/// What a comment says about a suggestion, in `suggest` mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suggestion {
    /// The lines that replace the commented range, and how many lines
    /// above the commented line that range starts.
    Lines { text: String, above: u32 },
    /// Why there is none.
    None(String),
}

impl Suggestion {
    /// The Markdown appended to the comment, in `syntax`.
    pub fn markdown(&self, syntax: Syntax) -> String {
        match self {
            Self::Lines { text, above } => {
                // A fence longer than any backtick run in the text.
                let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
                let fence = "`".repeat(longest.max(2) + 1);
                let body = if text.is_empty() { String::new() } else { format!("{text}\n") };
                let info = match syntax {
                    Syntax::GitHub => "suggestion".to_owned(),
                    Syntax::GitLab => format!("suggestion:-{above}+0"),
                };
                format!(
                    "\n\n**Suggested change**, applied in the sandbox, where the repository's checks passed:\n\n{fence}{info}\n{body}{fence}"
                )
            }
            Self::None(reason) => format!("\n\n**No suggestion:** {reason}."),
        }
    }

    /// The suggestion for `comment` once the head's file is read: its
    /// bytes (`None`: the file is not in the head) against `verified`.
    pub fn of_head(head: Option<&[u8]>, verified: &[u8], comment: &ReviewComment) -> Self {
        let Some(head) = head else { return Self::None("the commented file is not in the head".into()) };
        let (Ok(head), Ok(verified)) = (std::str::from_utf8(head), std::str::from_utf8(verified)) else {
            return Self::None("the file is not UTF-8 text".into());
        };
        let start = comment.start_line.unwrap_or(comment.line);
        match replacement(head, verified, start, comment.line) {
            Ok(text) => Self::Lines { text, above: comment.line.saturating_sub(start) },
            Err(reason) => Self::None(reason.into()),
        }
    }
}

/// In `suggest` mode, the verified content of the commented file, which
/// the head's file is then compared with (`Ok`), or the suggestion that
/// says why there is none (`Err`); `None` in any other mode.
pub fn verified_content<'f>(
    bundle: &EvidenceBundle,
    files: &[PublishFile<'f>],
    comment: &ReviewComment,
) -> Option<Result<&'f [u8], Suggestion>> {
    if bundle.mode != RunMode::Suggest {
        return None;
    }
    let none = |reason: String| Some(Err(Suggestion::None(reason)));
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
    match verified.filter(|c| recorded == Some(hex::encode(Sha256::digest(c)).as_str())) {
        Some(verified) => Some(Ok(verified)),
        None => none("the content at hand is not the content the checks passed on".into()),
    }
}

/// The lines of `verified` that replace lines `start..=end` (1-based) of
/// `head`, when the two differ only there.
pub fn replacement(head: &str, verified: &str, start: u32, end: u32) -> Result<String, &'static str> {
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
    fn the_fence_outgrows_backticks_in_the_text_in_each_syntax() {
        let lines = |text: &str, above| Suggestion::Lines { text: text.into(), above };
        let md = lines("x = ```y```", 0).markdown(Syntax::GitHub);
        assert!(md.contains("\n````suggestion\nx = ```y```\n````"), "{md}");
        let md = lines("x", 0).markdown(Syntax::GitHub);
        assert!(md.ends_with("```suggestion\nx\n```"), "{md}");
        // GitLab's block names its range from the commented line up.
        let md = lines("b\ngood", 1).markdown(Syntax::GitLab);
        assert!(md.ends_with("```suggestion:-1+0\nb\ngood\n```"), "{md}");
        let none = Suggestion::None("why".into());
        assert_eq!(none.markdown(Syntax::GitLab), "\n\n**No suggestion:** why.");
    }

    #[test]
    fn the_head_decides_the_lines_and_the_range() {
        let comment = |start: Option<u32>, line: u32| ReviewComment {
            path: "calc.py".into(),
            line,
            start_line: start,
            body: "b".into(),
            quote: None,
        };
        let verified = b"a\nb\ngood\nbetter\nd\n";
        let range = Suggestion::of_head(Some(HEAD.as_bytes()), verified, &comment(Some(2), 3));
        assert_eq!(range, Suggestion::Lines { text: "b\ngood\nbetter".into(), above: 1 });
        let absent = Suggestion::of_head(None, verified, &comment(None, 3));
        assert_eq!(absent, Suggestion::None("the commented file is not in the head".into()));
        let binary = Suggestion::of_head(Some(&[0xff, 0xfe]), verified, &comment(None, 1));
        assert_eq!(binary, Suggestion::None("the file is not UTF-8 text".into()));
    }
}
