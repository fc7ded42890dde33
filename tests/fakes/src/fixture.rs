//! [`FixtureRepo`]: a real local git repository in a temp dir, laid out for
//! the reference sandbox server's `--repos DIR` (`DIR/<owner>/<repo>`), and
//! [`calc`], a tiny Python project with a real bug that its own check
//! command catches.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// The tiny Python fixture project: `calc.py` with a wrong `average`,
/// `test_calc.py` that fails on it, the check that runs the tests, and the
/// fixed file to script a model's proposal with.
pub mod calc {
    /// `calc.py` with the bug: divides by one too many.
    pub const CALC_PY: &str = "\"\"\"Tiny arithmetic helpers.\"\"\"


def add(a, b):
    \"\"\"Return the sum of a and b.\"\"\"
    return a + b


def average(values):
    \"\"\"Return the arithmetic mean of a non-empty list of numbers.\"\"\"
    return sum(values) / (len(values) + 1)
";
    /// `calc.py` fixed.
    pub const CALC_PY_FIXED: &str = "\"\"\"Tiny arithmetic helpers.\"\"\"


def add(a, b):
    \"\"\"Return the sum of a and b.\"\"\"
    return a + b


def average(values):
    \"\"\"Return the arithmetic mean of a non-empty list of numbers.\"\"\"
    return sum(values) / len(values)
";
    /// `test_calc.py`, run by `python3 -m unittest`.
    pub const TEST_CALC_PY: &str = "import unittest

from calc import add, average


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_average(self):
        self.assertEqual(average([2, 4, 6]), 4)


if __name__ == \"__main__\":
    unittest.main()
";
    /// The buggy file's path.
    pub const BUG_PATH: &str = "calc.py";
    /// The 1-based line of the bug in [`CALC_PY`].
    pub const BUG_LINE: u32 = 11;
    /// The buggy line's text, for quoted evidence.
    pub const BUG_QUOTE: &str = "    return sum(values) / (len(values) + 1)";
    /// The repository's check, as policy argv.
    pub const CHECK: [&str; 3] = ["python3", "-m", "unittest"];
    /// A minimal `.agent-zero.yml` naming that check (discovery does not
    /// know `unittest`).
    pub const POLICY_YML: &str = "version: 1\nchecks:\n  - [python3, -m, unittest]\n";
    /// Keeps bytecode caches out of `git status`.
    pub const GITIGNORE: &str = "__pycache__/\n";
}

/// Builds a [`FixtureRepo`].
#[derive(Debug, Clone)]
pub struct FixtureBuilder {
    owner: String,
    name: String,
    branch: String,
    message: String,
    files: Vec<(String, String)>,
}

impl FixtureBuilder {
    /// The branch the first commit is on (`main` unless set).
    pub fn branch(mut self, branch: &str) -> Self {
        branch.clone_into(&mut self.branch);
        self
    }

    /// Adds or replaces a file.
    pub fn file(mut self, path: &str, content: &str) -> Self {
        self.files.retain(|(p, _)| p != path);
        self.files.push((path.to_owned(), content.to_owned()));
        self
    }

    /// Leaves a preloaded file out (e.g. the `.gitignore` of [`FixtureRepo::calc`]).
    pub fn without(mut self, path: &str) -> Self {
        self.files.retain(|(p, _)| p != path);
        self
    }

    /// The first commit's message.
    pub fn message(mut self, message: &str) -> Self {
        message.clone_into(&mut self.message);
        self
    }

    /// Creates the temp dir, `git init`s `DIR/<owner>/<repo>`, writes the
    /// files and commits them.
    ///
    /// # Errors
    /// When the temp dir, a file or a `git` command fails.
    pub fn build(self) -> io::Result<FixtureRepo> {
        let root = tempfile::Builder::new().prefix("agent-zero-fixture-").tempdir()?;
        let work = root.path().join(&self.owner).join(&self.name);
        std::fs::create_dir_all(&work)?;
        git(&work, &["init", "--quiet", "--initial-branch", &self.branch])?;
        git(&work, &["config", "user.name", "Fixture Author"])?;
        git(&work, &["config", "user.email", "fixture@example.com"])?;
        git(&work, &["config", "commit.gpgsign", "false"])?;
        let mut repo = FixtureRepo {
            root,
            owner: self.owner,
            name: self.name,
            branch: self.branch,
            files: Vec::new(),
            head: String::new(),
        };
        let files: Vec<(&str, &str)> = self.files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
        repo.commit(&files, &self.message)?;
        Ok(repo)
    }
}

/// A real git repository at `<repos_dir>/<owner>/<repo>`, deleted on drop.
#[derive(Debug)]
pub struct FixtureRepo {
    root: TempDir,
    owner: String,
    name: String,
    branch: String,
    files: Vec<(String, String)>,
    head: String,
}

impl FixtureRepo {
    /// An empty builder for `owner/name`.
    pub fn builder(owner: &str, name: &str) -> FixtureBuilder {
        FixtureBuilder {
            owner: owner.to_owned(),
            name: name.to_owned(),
            branch: "main".to_owned(),
            message: "Initial commit".to_owned(),
            files: Vec::new(),
        }
    }

    /// A builder preloaded with the [`calc`] project (buggy `calc.py`,
    /// `test_calc.py`, `.agent-zero.yml` with the check, `.gitignore`);
    /// override a file with [`FixtureBuilder::file`].
    pub fn calc(owner: &str, name: &str) -> FixtureBuilder {
        Self::builder(owner, name)
            .file(".agent-zero.yml", calc::POLICY_YML)
            .file(".gitignore", calc::GITIGNORE)
            .file(calc::BUG_PATH, calc::CALC_PY)
            .file("test_calc.py", calc::TEST_CALC_PY)
    }

    /// The directory to pass as the sandbox server's `--repos DIR`.
    pub fn repos_dir(&self) -> &Path {
        self.root.path()
    }

    /// The working tree, `repos_dir()/<owner>/<repo>`.
    pub fn path(&self) -> PathBuf {
        self.root.path().join(&self.owner).join(&self.name)
    }

    /// The owner.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The repository name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The branch commits go to.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// The head commit's sha (40 hex digits, real git).
    pub fn head_sha(&self) -> String {
        self.head.clone()
    }

    /// The files at the head commit, sorted by path.
    pub fn files(&self) -> Vec<(String, String)> {
        self.files.clone()
    }

    /// Writes `files` (adding or replacing) and commits them on the branch;
    /// returns the new head sha.
    ///
    /// # Errors
    /// When a file or a `git` command fails.
    pub fn commit(&mut self, files: &[(&str, &str)], message: &str) -> io::Result<String> {
        let work = self.path();
        for (path, content) in files {
            let target = work.join(path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&target, content)?;
            self.files.retain(|(p, _)| p != path);
            self.files.push(((*path).to_owned(), (*content).to_owned()));
        }
        self.files.sort();
        git(&work, &["add", "--all"])?;
        git(&work, &["commit", "--quiet", "--allow-empty", "--message", message])?;
        let out = git(&work, &["rev-parse", "HEAD"])?;
        self.head = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Ok(self.head.clone())
    }

    /// Runs `argv` in the working tree (no shell), without bytecode caches.
    ///
    /// # Errors
    /// When the program cannot be started.
    pub fn run(&self, argv: &[&str]) -> io::Result<Output> {
        let (program, args) = argv.split_first().ok_or_else(|| io::Error::other("empty argv"))?;
        Command::new(program).args(args).current_dir(self.path()).env("PYTHONDONTWRITEBYTECODE", "1").output()
    }
}

/// Runs git hermetically (no global or system config, fixed dates).
fn git(dir: &Path, args: &[&str]) -> io::Result<Output> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", "2025-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2025-01-01T00:00:00Z")
        .output()?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(io::Error::other(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())))
    }
}
