//! Everything the fake GitLab knows, behind one lock.

use std::collections::{BTreeMap, VecDeque};

use crate::gitea::git::BareRepo;

/// GitLab's access levels (`Gitlab::Access`): guest 10, reporter 20,
/// developer 30, maintainer 40, owner 50; 0 is no access.
pub(crate) const GUEST: u32 = 10;
pub(crate) const REPORTER: u32 = 20;
pub(crate) const DEVELOPER: u32 = 30;
pub(crate) const MAINTAINER: u32 = 40;
pub(crate) const OWNER: u32 = 50;

/// A user account.
#[derive(Debug, Clone)]
pub(crate) struct User {
    pub(crate) id: u64,
    pub(crate) username: String,
    pub(crate) created: String,
}

/// A personal access token: its user and scopes (`api`, `read_api`,
/// `read_user`, `read_repository`, ...).
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub(crate) token: String,
    pub(crate) username: String,
    pub(crate) scopes: Vec<String>,
}

/// One project (`namespace/path`), its repository a real bare git
/// repository.
#[derive(Debug)]
pub(crate) struct Project {
    pub(crate) id: u64,
    pub(crate) namespace: String,
    pub(crate) path: String,
    pub(crate) default_branch: String,
    pub(crate) private: bool,
    pub(crate) git: BareRepo,
    /// Members' access levels by lower-case username.
    pub(crate) members: BTreeMap<String, u32>,
    pub(crate) created: String,
}

impl Project {
    /// `namespace/path` as GitLab spells it.
    pub(crate) fn full_path(&self) -> String {
        format!("{}/{}", self.namespace, self.path)
    }
}

/// An issue of a project.
#[derive(Debug, Clone)]
pub(crate) struct Issue {
    pub(crate) id: u64,
    pub(crate) project: u64,
    pub(crate) iid: u64,
    pub(crate) title: String,
    pub(crate) description: String,
    pub(crate) author: String,
    pub(crate) labels: Vec<String>,
    pub(crate) state: String,
    /// Visible only to members who may see confidential issues.
    pub(crate) confidential: bool,
    pub(crate) created: String,
    pub(crate) updated: String,
}

/// A note (comment) on an issue or a merge request.
#[derive(Debug, Clone)]
pub(crate) struct Note {
    pub(crate) id: u64,
    pub(crate) project: u64,
    /// `Issue` or `MergeRequest`.
    pub(crate) noteable_type: &'static str,
    /// The noteable's global id.
    pub(crate) noteable_id: u64,
    pub(crate) noteable_iid: u64,
    pub(crate) author: String,
    pub(crate) body: String,
    pub(crate) created: String,
    pub(crate) updated: String,
    /// The discussion it belongs to (40 hex digits, as GitLab's): a note
    /// made by the notes API starts its own.
    pub(crate) discussion: String,
    /// A diff note's position, as posted.
    pub(crate) position: Option<serde_json::Value>,
}

/// A commit status.
#[derive(Debug, Clone)]
pub(crate) struct Status {
    pub(crate) id: u64,
    pub(crate) project: u64,
    pub(crate) sha: String,
    pub(crate) git_ref: Option<String>,
    pub(crate) state: String,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) target_url: Option<String>,
    pub(crate) author: String,
    pub(crate) created: String,
}

/// A merge request within one project.
#[derive(Debug, Clone)]
pub(crate) struct MergeRequest {
    pub(crate) id: u64,
    pub(crate) project: u64,
    pub(crate) iid: u64,
    pub(crate) title: String,
    pub(crate) description: String,
    pub(crate) source_branch: String,
    pub(crate) target_branch: String,
    pub(crate) author: String,
    pub(crate) state: String,
    pub(crate) labels: Vec<String>,
    pub(crate) created: String,
    pub(crate) updated: String,
}

/// A fault to answer the next matching request with.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub(crate) method: Option<String>,
    pub(crate) path_prefix: String,
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
    pub(crate) content_type: &'static str,
}

/// The fake's whole state.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) base_url: String,
    pub(crate) users: BTreeMap<String, User>,
    pub(crate) tokens: Vec<Token>,
    pub(crate) projects: Vec<Project>,
    pub(crate) issues: Vec<Issue>,
    pub(crate) notes: Vec<Note>,
    pub(crate) statuses: Vec<Status>,
    pub(crate) merge_requests: Vec<MergeRequest>,
    pub(crate) faults: VecDeque<Fault>,
    pub(crate) outage: bool,
    pub(crate) violations: Vec<String>,
    pub(crate) next_id: u64,
}

impl State {
    /// A fresh id (users, projects, issues, notes, statuses and merge
    /// requests share one sequence, as ids are global in GitLab per table
    /// and nothing compares them across tables).
    pub(crate) fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The user `username`, created on first mention.
    pub(crate) fn ensure_user(&mut self, username: &str) -> User {
        let key = username.to_ascii_lowercase();
        if let Some(user) = self.users.get(&key) {
            return user.clone();
        }
        let id = self.fresh_id();
        let user = User { id, username: username.to_owned(), created: crate::time::now_rfc3339() };
        self.users.insert(key, user.clone());
        user
    }

    /// The user `username`, if known.
    pub(crate) fn user(&self, username: &str) -> Option<&User> {
        self.users.get(&username.to_ascii_lowercase())
    }

    /// The user with this id.
    pub(crate) fn user_by_id(&self, id: u64) -> Option<&User> {
        self.users.values().find(|u| u.id == id)
    }

    /// The project an `:id` names: its numeric id, or its full path
    /// (`namespace/path`, case-insensitive, as GitLab's `find_project`).
    pub(crate) fn project_index(&self, id: &str) -> Option<usize> {
        if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
            let id: u64 = id.parse().ok()?;
            return self.projects.iter().position(|p| p.id == id);
        }
        self.projects.iter().position(|p| p.full_path().eq_ignore_ascii_case(id))
    }

    /// The project with this full path.
    pub(crate) fn project_by_path(&self, path: &str) -> Option<usize> {
        self.projects.iter().position(|p| p.full_path().eq_ignore_ascii_case(path))
    }

    /// `username`'s access level on a project: the namespace's user owns
    /// it (a personal project), members have their level, anyone else 0.
    pub(crate) fn access(project: &Project, username: &str) -> u32 {
        if username.eq_ignore_ascii_case(&project.namespace) {
            return OWNER;
        }
        project.members.get(&username.to_ascii_lowercase()).copied().unwrap_or(0)
    }

    /// Takes the first fault matching the request.
    pub(crate) fn take_fault(&mut self, method: &str, path: &str) -> Option<Fault> {
        if self.outage {
            return Some(Fault {
                method: None,
                path_prefix: String::new(),
                status: 503,
                headers: Vec::new(),
                body: r#"{"message":"503 Service Unavailable"}"#.to_owned(),
                content_type: "application/json",
            });
        }
        let index = self.faults.iter().position(|f| {
            f.method.as_deref().is_none_or(|m| m.eq_ignore_ascii_case(method)) && path.starts_with(&f.path_prefix)
        })?;
        self.faults.remove(index)
    }

    /// The next issue/merge request iid of a project (each kind counts on
    /// its own in GitLab: issue #1 and merge request !1 can both exist).
    pub(crate) fn next_issue_iid(&self, project: u64) -> u64 {
        self.issues.iter().filter(|i| i.project == project).map(|i| i.iid).max().unwrap_or(0) + 1
    }

    /// The next merge request iid of a project.
    pub(crate) fn next_mr_iid(&self, project: u64) -> u64 {
        self.merge_requests.iter().filter(|m| m.project == project).map(|m| m.iid).max().unwrap_or(0) + 1
    }
}
