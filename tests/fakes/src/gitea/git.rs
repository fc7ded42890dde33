//! One repository of the fake Gitea as a real bare git repository (as
//! Gitea keeps them on disk), driven through the `git` command: blob shas,
//! commits and `git archive` tarballs are git's own.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A change to commit.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    /// Writes `path` (a regular file).
    Put(String, Vec<u8>),
    /// Removes `path`.
    Delete(String),
}

/// An entry of a tree listing.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) path: String,
    /// `blob`, `tree` or `commit` (a submodule).
    pub(crate) kind: String,
    pub(crate) mode: String,
    pub(crate) sha: String,
    pub(crate) size: u64,
}

/// A commit's metadata.
#[derive(Debug, Clone)]
pub(crate) struct CommitInfo {
    pub(crate) sha: String,
    pub(crate) tree: String,
    pub(crate) parents: Vec<String>,
    pub(crate) author_name: String,
    pub(crate) author_email: String,
    pub(crate) author_date: String,
    pub(crate) committer_name: String,
    pub(crate) committer_email: String,
    pub(crate) committer_date: String,
    pub(crate) message: String,
}

/// One changed file between two commits.
#[derive(Debug, Clone)]
pub(crate) struct Changed {
    pub(crate) path: String,
    /// `added`, `modified` or `deleted` (Gitea's words).
    pub(crate) status: String,
    pub(crate) additions: u64,
    pub(crate) deletions: u64,
}

/// A bare repository at `path`.
#[derive(Debug)]
pub(crate) struct BareRepo {
    path: PathBuf,
}

/// A failed git command, with its stderr.
pub(crate) type GitResult<T> = Result<T, String>;

impl BareRepo {
    /// `git init --bare` at `path` (created), with `default_branch` as HEAD.
    pub(crate) fn init(path: &Path, default_branch: &str) -> GitResult<Self> {
        std::fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let repo = Self { path: path.to_owned() };
        repo.run(&["init", "--quiet", "--bare", "--initial-branch", default_branch], None, &[])?;
        Ok(repo)
    }

    fn run(&self, args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> GitResult<Vec<u8>> {
        let mut command = Command::new("git");
        command
            .arg("--git-dir")
            .arg(&self.path)
            .args(["-c", "core.quotePath=false", "-c", "commit.gpgsign=false", "-c", "tar.umask=0022"])
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().map_err(|e| format!("git {}: {e}", args.join(" ")))?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(input).map_err(|e| format!("git {}: {e}", args.join(" ")))?;
        }
        let output = child.wait_with_output().map_err(|e| format!("git {}: {e}", args.join(" ")))?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
        }
    }

    fn text(&self, args: &[&str]) -> GitResult<String> {
        self.run(args, None, &[]).map(|out| String::from_utf8_lossy(&out).trim_end().to_owned())
    }

    /// The commit a name resolves to: a branch, a tag, or a full or
    /// abbreviated commit sha. Names starting with `-` resolve to nothing.
    pub(crate) fn resolve(&self, name: &str) -> Option<String> {
        if name.is_empty() || name.starts_with('-') {
            return None;
        }
        for candidate in [format!("refs/heads/{name}"), format!("refs/tags/{name}"), name.to_owned()] {
            if let Ok(sha) = self.text(&["rev-parse", "--verify", "--quiet", &format!("{candidate}^{{commit}}")]) {
                return Some(sha);
            }
        }
        None
    }

    /// The commit `refs/heads/{branch}` points at.
    pub(crate) fn branch(&self, branch: &str) -> Option<String> {
        if branch.is_empty() || branch.starts_with('-') {
            return None;
        }
        self.text(&["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}^{{commit}}")]).ok()
    }

    /// Points `refs/heads/{branch}` at `sha`.
    pub(crate) fn set_branch(&self, branch: &str, sha: &str) -> GitResult<()> {
        self.run(&["update-ref", &format!("refs/heads/{branch}"), sha], None, &[]).map(drop)
    }

    /// The blob at `path` in `commit`: `(blob sha, bytes)`; `None` when
    /// absent or not a file.
    pub(crate) fn blob(&self, commit: &str, path: &str) -> Option<(String, Vec<u8>)> {
        let path = path.trim_matches('/');
        if path.is_empty() {
            return None;
        }
        let entry = self.entry(commit, path)?;
        if entry.kind != "blob" {
            return None;
        }
        let bytes = self.run(&["cat-file", "blob", &entry.sha], None, &[]).ok()?;
        Some((entry.sha, bytes))
    }

    /// The tree entry at `path` in `commit`.
    pub(crate) fn entry(&self, commit: &str, path: &str) -> Option<Entry> {
        let out = self.run(&["ls-tree", "-l", "-z", "--full-tree", commit, "--", path], None, &[]).ok()?;
        parse_ls_tree(&out).into_iter().find(|e| e.path == path)
    }

    /// The last commit up to `commit` that touched `path`.
    pub(crate) fn last_commit(&self, commit: &str, path: &str) -> Option<String> {
        self.text(&["log", "-1", "--format=%H", commit, "--", path]).ok().filter(|s| !s.is_empty())
    }

    /// The direct children of directory `path` ("" for the root).
    pub(crate) fn list(&self, commit: &str, path: &str) -> Vec<Entry> {
        let path = path.trim_matches('/');
        let spec = if path.is_empty() { String::new() } else { format!("{path}/") };
        let mut args = vec!["ls-tree", "-l", "-z", "--full-tree", commit];
        if !spec.is_empty() {
            args.extend(["--", spec.as_str()]);
        }
        self.run(&args, None, &[]).map(|out| parse_ls_tree(&out)).unwrap_or_default()
    }

    /// Commits `changes` on top of `parent` (or as a root commit) and
    /// returns the new commit's sha; no ref moves.
    pub(crate) fn commit(
        &self,
        parent: Option<&str>,
        changes: &[Change],
        message: &str,
        author: (&str, &str),
        date: &str,
    ) -> GitResult<String> {
        let index = tempfile::Builder::new()
            .prefix("index-")
            .tempfile_in(&self.path)
            .map_err(|e| format!("temp index: {e}"))?
            .into_temp_path();
        let index_path = index.to_string_lossy().into_owned();
        // git wants to create the index itself.
        let _ = std::fs::remove_file(&index);
        let env = [("GIT_INDEX_FILE", index_path.as_str())];
        match parent {
            Some(parent) => self.run(&["read-tree", parent], None, &env)?,
            None => self.run(&["read-tree", "--empty"], None, &env)?,
        };
        for change in changes {
            match change {
                Change::Put(path, bytes) => {
                    let sha = self.run(&["hash-object", "-w", "--stdin"], Some(bytes), &[])?;
                    let sha = String::from_utf8_lossy(&sha).trim().to_owned();
                    let info = format!("100644,{sha},{path}");
                    self.run(&["update-index", "--add", "--cacheinfo", &info], None, &env)?;
                }
                Change::Delete(path) => {
                    // Mode 0 removes the entry; `--force-remove` would want a work tree.
                    let line = format!("0 {}\t{path}\n", "0".repeat(40));
                    self.run(&["update-index", "--index-info"], Some(line.as_bytes()), &env)?;
                }
            }
        }
        let tree = String::from_utf8_lossy(&self.run(&["write-tree"], None, &env)?).trim().to_owned();
        let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
        if let Some(parent) = parent {
            args.extend(["-p", parent]);
        }
        let (name, email) = author;
        let env = [
            ("GIT_AUTHOR_NAME", name),
            ("GIT_AUTHOR_EMAIL", email),
            ("GIT_COMMITTER_NAME", name),
            ("GIT_COMMITTER_EMAIL", email),
            ("GIT_AUTHOR_DATE", date),
            ("GIT_COMMITTER_DATE", date),
        ];
        let sha = self.run(&args, None, &env)?;
        Ok(String::from_utf8_lossy(&sha).trim().to_owned())
    }

    /// Where the repository is on disk.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Points `name` (a full ref, `refs/pull/3/head`) at `sha`.
    pub(crate) fn set_ref(&self, name: &str, sha: &str) -> GitResult<()> {
        self.run(&["update-ref", name, sha], None, &[]).map(drop)
    }

    /// Fetches `refs/heads/{branch}` of the repository at `source` into the
    /// ref `target` here (forced), objects and all.
    pub(crate) fn fetch_branch(&self, source: &Path, branch: &str, target: &str) -> GitResult<()> {
        let source = source.to_string_lossy();
        let refspec = format!("+refs/heads/{branch}:{target}");
        self.run(&["fetch", "--quiet", "--no-tags", &source, &refspec], None, &[]).map(drop)
    }

    /// Fetches every branch of the repository at `source`.
    pub(crate) fn fetch_branches(&self, source: &Path) -> GitResult<()> {
        let source = source.to_string_lossy();
        self.run(&["fetch", "--quiet", "--no-tags", &source, "+refs/heads/*:refs/heads/*"], None, &[]).map(drop)
    }

    /// The commit's metadata.
    pub(crate) fn commit_info(&self, sha: &str) -> Option<CommitInfo> {
        let format = "--format=%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B";
        let out = self.text(&["show", "-s", format, sha, "--"]).ok()?;
        let mut fields = out.splitn(10, '\0');
        let mut next = || fields.next().unwrap_or_default().to_owned();
        Some(CommitInfo {
            sha: next(),
            tree: next(),
            parents: next().split_whitespace().map(str::to_owned).collect(),
            author_name: next(),
            author_email: next(),
            author_date: next(),
            committer_name: next(),
            committer_email: next(),
            committer_date: next(),
            message: next(),
        })
    }

    /// `git archive --format=<tar.gz|zip> --prefix=<prefix>/ <sha>`.
    pub(crate) fn archive(&self, sha: &str, format: &str, prefix: &str) -> GitResult<Vec<u8>> {
        self.run(&["archive", &format!("--format={format}"), &format!("--prefix={prefix}/"), sha], None, &[])
    }

    /// The merge base of two commits.
    pub(crate) fn merge_base(&self, a: &str, b: &str) -> Option<String> {
        self.text(&["merge-base", a, b]).ok()
    }

    /// The files `commit` changed against its first parent (all of them,
    /// added, for a root commit).
    pub(crate) fn changed_by(&self, commit: &str) -> Vec<Changed> {
        /// git's empty tree.
        const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
        let parent = self.commit_info(commit).and_then(|c| c.parents.first().cloned());
        self.changed(parent.as_deref().unwrap_or(EMPTY_TREE), commit)
    }

    /// The unified diff from `base` to `head`, as `git diff` prints it.
    pub(crate) fn diff(&self, base: &str, head: &str) -> GitResult<Vec<u8>> {
        self.run(&["diff", "--no-renames", "--no-color", base, head], None, &[])
    }

    /// The files changed from `base` to `head`.
    pub(crate) fn changed(&self, base: &str, head: &str) -> Vec<Changed> {
        let Ok(status) = self.text(&["diff", "--no-renames", "--name-status", base, head]) else { return Vec::new() };
        let numstat = self.text(&["diff", "--no-renames", "--numstat", base, head]).unwrap_or_default();
        status
            .lines()
            .filter_map(|line| {
                let (kind, path) = line.split_once('\t')?;
                let (additions, deletions) = numstat
                    .lines()
                    .filter_map(|l| {
                        let mut parts = l.splitn(3, '\t');
                        let (a, d, p) = (parts.next()?, parts.next()?, parts.next()?);
                        (p == path).then(|| (a.parse().unwrap_or(0), d.parse().unwrap_or(0)))
                    })
                    .next()
                    .unwrap_or((0, 0));
                let status = match kind {
                    "A" => "added",
                    "D" => "deleted",
                    _ => "modified",
                };
                Some(Changed { path: path.to_owned(), status: status.to_owned(), additions, deletions })
            })
            .collect()
    }
}

/// Parses `git ls-tree -l -z` output.
fn parse_ls_tree(out: &[u8]) -> Vec<Entry> {
    out.split(|b| *b == 0)
        .filter(|record| !record.is_empty())
        .filter_map(|record| {
            let record = String::from_utf8_lossy(record);
            let (meta, path) = record.split_once('\t')?;
            let mut meta = meta.split_whitespace();
            let (mode, kind, sha, size) = (meta.next()?, meta.next()?, meta.next()?, meta.next()?);
            Some(Entry {
                path: path.to_owned(),
                kind: kind.to_owned(),
                mode: mode.to_owned(),
                sha: sha.to_owned(),
                size: size.parse().unwrap_or(0),
            })
        })
        .collect()
}
