//! A merge request's changed file as a review reads it, and where a line
//! of the new file is in its hunks.
//!
//! GitLab's `merge_requests/:iid/diffs` already splits the diff by file
//! and gives each file's hunks from the first `@@` on (with `new_file`,
//! `deleted_file`, `renamed_file` beside them), which is what GitHub's
//! `patch` is: no unified-diff splitter is needed here (Gitea's
//! `gitea::diff` splits a whole `.diff` because Gitea gives no hunks per
//! file).

use super::api::MergeRequestDiff;

/// One changed file in GitHub's `pulls/{n}/files` terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewFile {
    /// The new path (the old one for a removed file).
    pub path: String,
    /// `added`, `removed`, `renamed` or `modified`.
    pub status: &'static str,
    /// The hunks without the last line break, as GitHub gives them;
    /// `None` when GitLab gives none (binary, mode only, too large).
    pub patch: Option<String>,
    pub additions: u64,
    pub deletions: u64,
}

/// `diff` as a review reads it.
pub fn review_file(diff: &MergeRequestDiff) -> ReviewFile {
    let status = if diff.new_file {
        "added"
    } else if diff.deleted_file {
        "removed"
    } else if diff.renamed_file {
        "renamed"
    } else {
        "modified"
    };
    let path = if diff.deleted_file { &diff.old_path } else { &diff.new_path };
    let patch = Some(diff.diff.trim_end_matches(['\n', '\r'])).filter(|p| p.starts_with("@@")).map(str::to_owned);
    let (mut additions, mut deletions) = (0, 0);
    for line in patch.as_deref().unwrap_or_default().lines() {
        match line.as_bytes().first() {
            Some(b'+') => additions += 1,
            Some(b'-') => deletions += 1,
            _ => {}
        }
    }
    ReviewFile { path: path.clone(), status, patch, additions, deletions }
}

/// Where line `new_line` of the new file is in `patch`: `Some(None)` for
/// an added line, `Some(Some(old_line))` for a context line (GitLab places
/// a note on one only with both numbers), `None` when the hunks do not
/// show it.
pub fn place(patch: &str, new_line: u64) -> Option<Option<u64>> {
    let (mut old, mut new) = (0_u64, 0_u64);
    let mut in_hunk = false;
    for line in patch.lines() {
        if let Some(header) = line.strip_prefix("@@ -") {
            // `@@ -a[,b] +c[,d] @@ ...`
            let mut parts = header.split(' ');
            let start = |part: Option<&str>| part?.trim_start_matches('+').split(',').next()?.parse::<u64>().ok();
            let (Some(a), Some(c)) = (start(parts.next()), start(parts.next())) else {
                in_hunk = false;
                continue;
            };
            (old, new, in_hunk) = (a, c, true);
            continue;
        }
        if !in_hunk {
            continue;
        }
        match line.as_bytes().first() {
            Some(b'+') => {
                if new == new_line {
                    return Some(None);
                }
                new += 1;
            }
            Some(b'-') => old += 1,
            Some(b'\\') => {}
            _ => {
                if new == new_line {
                    return Some(Some(old));
                }
                old += 1;
                new += 1;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hunk as GitLab 17's `merge_requests/:iid/diffs` gives it (git's
    /// own output, from the first `@@`).
    const PATCH: &str = "@@ -8,4 +8,5 @@ def total(values):\n \n def average(values):\n-    return sum(values) / \
                         len(values)\n+    return sum(values) / (len(values) + 1)\n+\n \n@@ -20 +21 @@\n-a\n+b\n\\ No \
                         newline at end of file\n";

    fn diff(new_file: bool, deleted_file: bool, renamed_file: bool, text: &str) -> MergeRequestDiff {
        MergeRequestDiff {
            old_path: "old.py".into(),
            new_path: "new.py".into(),
            diff: text.into(),
            new_file,
            renamed_file,
            deleted_file,
        }
    }

    #[test]
    fn added_and_context_lines_are_placed_and_others_are_not() {
        assert_eq!(place(PATCH, 10), Some(None), "the added line");
        assert_eq!(place(PATCH, 11), Some(None), "the added blank line");
        assert_eq!(place(PATCH, 9), Some(Some(9)), "a context line has its old number");
        assert_eq!(place(PATCH, 12), Some(Some(11)), "a context line after the change is shifted");
        assert_eq!(place(PATCH, 21), Some(None), "the second hunk");
        for outside in [1, 7, 13, 20, 22] {
            assert_eq!(place(PATCH, outside), None, "line {outside} is not in the hunks");
        }
        assert_eq!(place("", 1), None);
        assert_eq!(place("@@ garbage @@\n+x\n", 1), None, "a header that cannot be read places nothing");
    }

    #[test]
    fn a_diff_reads_as_github_files_status_patch_and_counts() {
        let file = review_file(&diff(false, false, false, PATCH));
        assert_eq!((file.path.as_str(), file.status, file.additions, file.deletions), ("new.py", "modified", 3, 2));
        assert!(file.patch.as_deref().is_some_and(|p| p.starts_with("@@ -8,4") && !p.ends_with('\n')));
        assert_eq!(review_file(&diff(true, false, false, "@@ -0,0 +1 @@\n+x\n")).status, "added");
        let removed = review_file(&diff(false, true, false, "@@ -1 +0,0 @@\n-x\n"));
        assert_eq!((removed.path.as_str(), removed.status), ("old.py", "removed"));
        assert_eq!(review_file(&diff(false, false, true, "")).status, "renamed");
        assert_eq!(review_file(&diff(false, false, false, "")).patch, None, "binary or too large: no hunks");
    }
}
