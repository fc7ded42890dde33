//! A pull request's diff (`GET .../pulls/{n}.diff`, git's unified format
//! with its extended headers) split into files, in the shape a review
//! reads (GitHub's `pulls/{n}/files`: path, status, the hunks from the
//! first `@@` on, line counts). Gitea 1.22's `pulls/{n}/files` carries no
//! patch, so this is how the hunks are had.
//!
//! Our own short splitter rather than a crate: the hunks stay text (the
//! engine reads them as they are), so only the file boundaries and git's
//! headers (`new file mode`, `deleted file mode`, `rename from/to`,
//! `Binary files ... differ`) are parsed; docs/forges.md says why.

/// One file of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffFile {
    /// The path on the new side (the old one for a removed file).
    pub path: String,
    /// `added`, `removed`, `renamed` or `modified`.
    pub status: &'static str,
    /// The hunks, from the first `@@` line on; `None` for a binary file or
    /// a change of mode only.
    pub patch: Option<String>,
    pub additions: u64,
    pub deletions: u64,
}

/// The files of `diff`, in order. A file whose path cannot be read (no
/// `diff --git` line git writes) is left out.
pub fn split(diff: &str) -> Vec<DiffFile> {
    let mut files = Vec::new();
    let mut current: Option<Builder> = None;
    for line in diff.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            files.extend(current.take().and_then(Builder::finish));
            current = Some(Builder::new(rest.trim_end_matches(['\n', '\r'])));
            continue;
        }
        if let Some(file) = current.as_mut() {
            file.line(line);
        }
    }
    files.extend(current.and_then(Builder::finish));
    files
}

#[derive(Default)]
struct Builder {
    /// From the `diff --git a/X b/Y` line, when X and Y can be told apart.
    git_path: Option<String>,
    old: Option<String>,
    new: Option<String>,
    status: Option<&'static str>,
    patch: Option<String>,
    additions: u64,
    deletions: u64,
}

impl Builder {
    fn new(names: &str) -> Self {
        // `a/X b/X`: with no quoting and the same path both sides, the
        // halves are equal; otherwise the `---`/`+++` or rename lines say.
        let git_path = names
            .strip_prefix("a/")
            .and_then(|rest| {
                let half = rest.len().checked_sub(3)? / 2;
                let (old, new) = (rest.get(..half)?, rest.get(half..)?);
                (new.strip_prefix(" b/") == Some(old)).then(|| old.to_owned())
            })
            .filter(|p| !p.is_empty());
        Self { git_path, ..Self::default() }
    }

    fn line(&mut self, line: &str) {
        if let Some(patch) = self.patch.as_mut() {
            match line.as_bytes().first() {
                Some(b'+') => self.additions += 1,
                Some(b'-') => self.deletions += 1,
                _ => {}
            }
            patch.push_str(line);
            return;
        }
        let text = line.trim_end_matches(['\n', '\r']);
        if text.starts_with("@@") {
            self.patch = Some(line.to_owned());
        } else if text.starts_with("new file mode") {
            self.status = Some("added");
        } else if text.starts_with("deleted file mode") {
            self.status = Some("removed");
        } else if let Some(from) = text.strip_prefix("rename from ") {
            self.status = Some("renamed");
            self.old = Some(from.to_owned());
        } else if let Some(to) = text.strip_prefix("rename to ") {
            self.status = Some("renamed");
            self.new = Some(to.to_owned());
        } else if let Some(old) = text.strip_prefix("--- ") {
            self.old = old.strip_prefix("a/").map(str::to_owned).or(self.old.take());
        } else if let Some(new) = text.strip_prefix("+++ ") {
            self.new = new.strip_prefix("b/").map(str::to_owned).or(self.new.take());
        }
    }

    fn finish(self) -> Option<DiffFile> {
        let status = self.status.unwrap_or("modified");
        let path = match status {
            "removed" => self.old.or(self.git_path),
            _ => self.new.or(self.git_path),
        }?;
        // A patch ends with its last line's break; the hunks as GitHub
        // gives them do not.
        let patch = self.patch.map(|p| p.trim_end_matches(['\n', '\r']).to_owned());
        Some(DiffFile { path, status, patch, additions: self.additions, deletions: self.deletions })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `git diff` of a modification, an addition, a removal, a rename with
    /// a change, a binary file and a mode change, as git 2.39 writes them.
    const DIFF: &str = "\
diff --git a/calc/stats.py b/calc/stats.py
index 3b18e51..a9c2f1e 100644
--- a/calc/stats.py
+++ b/calc/stats.py
@@ -1,4 +1,4 @@
 def average(values):
-    return sum(values) / (len(values) + 1)
+    return sum(values) / len(values)
 
diff --git a/docs/new.md b/docs/new.md
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+# New
+--- not a header
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 8baef1b..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/a b.txt b/c d.txt
similarity index 80%
rename from a b.txt
rename to c d.txt
index 1111111..2222222 100644
--- a/a b.txt
+++ b/c d.txt
@@ -1,2 +1,2 @@
 keep
-was
+is
diff --git a/logo.png b/logo.png
index 1111111..2222222 100644
Binary files a/logo.png and b/logo.png differ
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
";

    #[test]
    fn each_file_has_its_path_status_hunks_and_counts() {
        let files = split(DIFF);
        let summary: Vec<_> =
            files.iter().map(|f| (f.path.as_str(), f.status, f.additions, f.deletions, f.patch.is_some())).collect();
        assert_eq!(
            summary,
            [
                ("calc/stats.py", "modified", 1, 1, true),
                ("docs/new.md", "added", 2, 0, true),
                ("old.txt", "removed", 0, 1, true),
                ("c d.txt", "renamed", 1, 1, true),
                ("logo.png", "modified", 0, 0, false),
                ("run.sh", "modified", 0, 0, false),
            ]
        );
        assert_eq!(
            files[0].patch.as_deref(),
            Some(
                "@@ -1,4 +1,4 @@\n def average(values):\n-    return sum(values) / (len(values) + 1)\n+    return \
                 sum(values) / len(values)\n "
            )
        );
        // A `--- ` inside a hunk is content, not a header.
        assert!(files[1].patch.as_deref().unwrap().ends_with("+--- not a header"));
    }

    #[test]
    fn nothing_before_the_first_file_and_an_empty_diff_are_no_files() {
        assert!(split("").is_empty());
        assert!(split("garbage\n@@ -1 +1 @@\n-x\n+y\n").is_empty());
    }
}
