//! The issue branch prefix: it becomes part of a git ref verbatim.

/// Longest accepted prefix, in bytes.
const MAX_LEN: usize = 100;

/// Checks that `prefix` can start a git branch name: 1..=100 bytes, `/`
/// separated segments that each start with an ASCII letter or digit and
/// contain only letters, digits, `.`, `_`, `-`; an optional trailing `/`;
/// no `..` and no segment ending in `.lock`. This is stricter than
/// `git check-ref-format` (no spaces, control characters, `~^:?*[\` or
/// `@{` can get through), so a prefix never surfaces later as a failed
/// push or an unexpected ref. Returns the reason on failure.
pub fn check_branch_prefix(prefix: &str) -> Result<(), String> {
    if prefix.is_empty() {
        return Err("must not be empty".into());
    }
    if prefix.len() > MAX_LEN {
        return Err(format!("must be at most {MAX_LEN} characters, got {}", prefix.len()));
    }
    if prefix.contains("..") {
        return Err("must not contain `..`".into());
    }
    let body = prefix.strip_suffix('/').unwrap_or(prefix);
    for segment in body.split('/') {
        let Some(first) = segment.chars().next() else {
            return Err("must not contain an empty segment (`//` or a leading `/`)".into());
        };
        if !first.is_ascii_alphanumeric() {
            return Err(format!("segment `{segment}` must start with a letter or digit"));
        }
        if let Some(bad) = segment.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
            return Err(format!("character {bad:?} is not allowed (letters, digits, `.`, `_`, `-`, `/` only)"));
        }
        if segment.ends_with(".lock") {
            return Err(format!("segment `{segment}` must not end with `.lock`"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_branch_prefix;

    #[test]
    fn accepts_ref_fragments() {
        for ok in ["agent-zero/", "agent-zero", "bots/agent_zero.v1/", "a", "A1/b-2/"] {
            assert_eq!(check_branch_prefix(ok), Ok(()), "{ok}");
        }
        assert_eq!(check_branch_prefix(&"a".repeat(100)), Ok(()));
    }

    #[test]
    fn rejects_what_git_or_a_push_would_refuse() {
        let cases = [
            ("", "empty"),
            ("a..b/", "`..`"),
            ("x.lock", "`.lock`"),
            ("x.lock/", "`.lock`"),
            ("x.lock/y/", "`.lock`"),
            ("has space/", "' '"),
            ("tab\there", "'\\t'"),
            ("a~1", "'~'"),
            ("a^b", "'^'"),
            ("a:b", "':'"),
            ("a?b", "'?'"),
            ("a*b", "'*'"),
            ("a[b", "'['"),
            ("a\\b", "'\\\\'"),
            ("a@{b", "'@'"),
            ("/lead", "empty segment"),
            ("a//b", "empty segment"),
            (".hidden/", "start with"),
            ("-dash/", "start with"),
            ("é/", "start with"),
        ];
        for (bad, needle) in cases {
            let reason = check_branch_prefix(bad).expect_err(bad);
            assert!(reason.contains(needle), "{bad:?}: {reason}");
        }
        let long = "a".repeat(101);
        assert!(check_branch_prefix(&long).unwrap_err().contains("at most 100"));
    }
}
