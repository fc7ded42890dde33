//! Everything the fake Gitea knows, behind one lock.

use std::collections::{BTreeMap, VecDeque};

use super::git::BareRepo;

/// A repository access level, Gitea's `AccessMode` (ordered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Access {
    None,
    Read,
    Write,
    Admin,
    Owner,
}

impl Access {
    /// Gitea's `AccessMode.ToString()`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Read => "read",
            Self::Write => "write",
            Self::Admin => "admin",
            Self::Owner => "owner",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "none" => Self::None,
            "read" => Self::Read,
            "write" => Self::Write,
            "admin" => Self::Admin,
            "owner" => Self::Owner,
            _ => return None,
        })
    }
}

/// A user account.
#[derive(Debug, Clone)]
pub(crate) struct User {
    pub(crate) login: String,
    pub(crate) id: u64,
    pub(crate) created: String,
}

/// An access token: its user and scopes (`write:repository`, `all`, ...).
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub(crate) token: String,
    pub(crate) login: String,
    pub(crate) scopes: Vec<String>,
}

/// One repository.
#[derive(Debug)]
pub(crate) struct Repo {
    pub(crate) owner: String,
    pub(crate) name: String,
    pub(crate) id: u64,
    pub(crate) default_branch: String,
    pub(crate) private: bool,
    pub(crate) git: BareRepo,
    /// Collaborators' access (lower-case login).
    pub(crate) collaborators: BTreeMap<String, Access>,
    /// The next issue/pull request index.
    pub(crate) next_index: u64,
    pub(crate) created: String,
    /// The repository this one is a fork of (its key), if any.
    pub(crate) fork_of: Option<String>,
}

/// A label of a repository.
#[derive(Debug, Clone)]
pub(crate) struct Label {
    pub(crate) id: u64,
    pub(crate) repo: String,
    pub(crate) name: String,
    pub(crate) color: String,
    pub(crate) description: String,
}

/// An issue (pull requests are in [`Pull`]).
#[derive(Debug, Clone)]
pub(crate) struct Issue {
    pub(crate) id: u64,
    pub(crate) repo: String,
    pub(crate) number: u64,
    pub(crate) title: String,
    pub(crate) body: String,
    pub(crate) author: String,
    pub(crate) labels: Vec<String>,
    pub(crate) created: String,
}

/// A label added to or removed from an issue: Gitea writes one `label`
/// comment per label (`Content` `"1"` when added), its doer the one who
/// changed it, also for the labels an issue is opened with.
#[derive(Debug, Clone)]
pub(crate) struct LabelEvent {
    pub(crate) id: u64,
    pub(crate) repo: String,
    pub(crate) number: u64,
    pub(crate) login: String,
    pub(crate) label: String,
    pub(crate) added: bool,
    pub(crate) created: String,
}

/// An issue or pull request comment.
#[derive(Debug, Clone)]
pub(crate) struct Comment {
    pub(crate) id: u64,
    pub(crate) repo: String,
    pub(crate) number: u64,
    pub(crate) author: String,
    pub(crate) body: String,
    pub(crate) created: String,
    pub(crate) updated: String,
}

/// A commit status.
#[derive(Debug, Clone)]
pub(crate) struct Status {
    pub(crate) id: u64,
    pub(crate) repo: String,
    pub(crate) sha: String,
    pub(crate) state: String,
    pub(crate) context: String,
    pub(crate) description: String,
    pub(crate) target_url: String,
    pub(crate) creator: String,
    pub(crate) created: String,
}

/// A pull request of `head` (a branch of `head_repo`: this repository, or
/// a fork of it) into `base` (a branch of `repo`). As Gitea, the base
/// repository keeps the head's commit as `refs/pull/{number}/head`
/// ([`State::sync_pull_head`]), so its diff and archive are read there.
#[derive(Debug, Clone)]
pub(crate) struct Pull {
    pub(crate) id: u64,
    pub(crate) repo: String,
    pub(crate) number: u64,
    pub(crate) title: String,
    pub(crate) body: String,
    pub(crate) head: String,
    /// The key of the repository `head` is a branch of.
    pub(crate) head_repo: String,
    pub(crate) base: String,
    /// Label names (a pull request is an issue to Gitea's labels).
    pub(crate) labels: Vec<String>,
    pub(crate) author: String,
    pub(crate) created: String,
    /// Closed (not merged) by [`FakeGitea::close_pull`](super::FakeGitea::close_pull).
    pub(crate) closed: bool,
}

/// A pull request review and its line comments.
#[derive(Debug, Clone)]
pub(crate) struct Review {
    pub(crate) id: u64,
    pub(crate) repo: String,
    pub(crate) number: u64,
    pub(crate) author: String,
    pub(crate) body: String,
    pub(crate) state: String,
    pub(crate) commit_id: String,
    pub(crate) submitted: String,
    /// `(id, path, body, new_position, old_position)`.
    pub(crate) comments: Vec<(u64, String, String, u64, u64)>,
}

/// A fault to answer the next matching request with.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub(crate) method: String,
    pub(crate) path_prefix: String,
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

/// The fake's whole state.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) base_url: String,
    pub(crate) forgejo: bool,
    pub(crate) users: BTreeMap<String, User>,
    pub(crate) tokens: Vec<Token>,
    pub(crate) repos: BTreeMap<String, Repo>,
    pub(crate) labels: Vec<Label>,
    pub(crate) issues: Vec<Issue>,
    pub(crate) comments: Vec<Comment>,
    pub(crate) label_events: Vec<LabelEvent>,
    pub(crate) statuses: Vec<Status>,
    pub(crate) pulls: Vec<Pull>,
    pub(crate) reviews: Vec<Review>,
    pub(crate) faults: VecDeque<Fault>,
    pub(crate) outage: bool,
    pub(crate) violations: Vec<String>,
    pub(crate) next_id: u64,
}

/// The ref the base repository keeps a pull request's head under.
pub(crate) fn pull_ref(number: u64) -> String {
    format!("refs/pull/{number}/head")
}

/// The map key of a repository (Gitea names are case-insensitive).
pub(crate) fn repo_key(owner: &str, name: &str) -> String {
    format!("{}/{}", owner.to_ascii_lowercase(), name.to_ascii_lowercase())
}

impl State {
    /// A fresh id.
    pub(crate) fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The user `login`, created on first mention.
    pub(crate) fn ensure_user(&mut self, login: &str) -> User {
        let key = login.to_ascii_lowercase();
        if let Some(user) = self.users.get(&key) {
            return user.clone();
        }
        let id = self.fresh_id();
        let user = User { login: login.to_owned(), id, created: crate::time::now_rfc3339() };
        self.users.insert(key, user.clone());
        user
    }

    /// The user `login`, if known.
    pub(crate) fn user(&self, login: &str) -> Option<&User> {
        self.users.get(&login.to_ascii_lowercase())
    }

    /// What `login` (or an anonymous caller) may do on `repo`, as Gitea's
    /// `GetUserRepoPermission` says: the owner owns, a collaborator has
    /// their level, anyone else reads a public repository.
    pub(crate) fn access(repo: &Repo, login: Option<&str>) -> Access {
        let public = if repo.private { Access::None } else { Access::Read };
        let Some(login) = login else { return public };
        if login.eq_ignore_ascii_case(&repo.owner) {
            return Access::Owner;
        }
        repo.collaborators.get(&login.to_ascii_lowercase()).copied().unwrap_or(Access::None).max(public)
    }

    /// Writes `refs/pull/{n}/head` in the base repository from the head
    /// branch's tip (fetched from a fork), as Gitea does when a pull request
    /// is opened and on each push to its head branch.
    pub(crate) fn sync_pull_head(&self, pull: &Pull) -> Result<(), String> {
        let (Some(base), Some(head)) = (self.repos.get(&pull.repo), self.repos.get(&pull.head_repo)) else {
            return Ok(());
        };
        let target = pull_ref(pull.number);
        if pull.repo == pull.head_repo {
            let Some(sha) = base.git.branch(&pull.head) else { return Ok(()) };
            return base.git.set_ref(&target, &sha);
        }
        if head.git.branch(&pull.head).is_none() {
            return Ok(());
        }
        base.git.fetch_branch(head.git.path(), &pull.head, &target)
    }

    /// After a push to `branch` of repository `key`: the open pull requests
    /// whose head it is are given its new tip (Gitea's
    /// `AddTestPullRequestTask`).
    pub(crate) fn pushed(&self, key: &str, branch: &str) -> Result<(), String> {
        let mut heads = self.pulls.iter().filter(|p| !p.closed && p.head_repo == key && p.head == branch);
        heads.try_for_each(|pull| self.sync_pull_head(pull))
    }

    /// `(merge base, head)` of a pull request, read in its base repository
    /// as Gitea reads its files and diff: the head is `refs/pull/{n}/head`.
    pub(crate) fn pull_commits(&self, pull: &Pull) -> (String, String) {
        let git = &self.repos[&pull.repo].git;
        let head = git.resolve(&pull_ref(pull.number)).unwrap_or_default();
        let base = git.branch(&pull.base).unwrap_or_default();
        let merge_base = git.merge_base(&base, &head).unwrap_or(base);
        (merge_base, head)
    }

    /// One label change on issue `number`'s timeline.
    pub(crate) fn record_label_event(&mut self, key: &str, number: u64, login: &str, label: &str, added: bool) {
        let id = self.fresh_id();
        self.label_events.push(LabelEvent {
            id,
            repo: key.to_owned(),
            number,
            login: login.to_owned(),
            label: label.to_owned(),
            added,
            created: crate::time::now_rfc3339(),
        });
    }

    /// Takes the first fault matching the request.
    pub(crate) fn take_fault(&mut self, method: &str, path: &str) -> Option<Fault> {
        if self.outage {
            return Some(Fault {
                method: method.to_owned(),
                path_prefix: path.to_owned(),
                status: 503,
                headers: Vec::new(),
                body: r#"{"message":"Service Unavailable"}"#.to_owned(),
            });
        }
        let index = self
            .faults
            .iter()
            .position(|f| f.method.eq_ignore_ascii_case(method) && path.starts_with(&f.path_prefix))?;
        self.faults.remove(index)
    }

    /// The next index of a repository (issues and pull requests share it).
    pub(crate) fn next_index(&mut self, key: &str) -> u64 {
        let taken = self
            .issues
            .iter()
            .filter(|i| i.repo == key)
            .map(|i| i.number)
            .chain(self.pulls.iter().filter(|p| p.repo == key).map(|p| p.number))
            .max()
            .unwrap_or(0);
        let repo = self.repos.get_mut(key).expect("checked by the caller");
        repo.next_index = repo.next_index.max(taken + 1);
        let index = repo.next_index;
        repo.next_index += 1;
        index
    }
}
