//! Everything the fake GitHub knows, behind one lock.

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;

use super::auth::{App, credential};
use super::store::GitStore;
use super::wire::RepoUrls;
use crate::record::RecordedCall;

/// One repository.
#[derive(Debug)]
pub(crate) struct Repo {
    pub(crate) owner: String,
    pub(crate) name: String,
    pub(crate) id: u64,
    pub(crate) default_branch: String,
    pub(crate) private: bool,
    pub(crate) git: GitStore,
    /// The next issue/pull request number.
    pub(crate) next_number: u64,
}

/// An issue or pull request comment.
#[derive(Debug, Clone)]
pub(crate) struct Comment {
    pub(crate) id: u64,
    pub(crate) repo: String,
    pub(crate) number: u64,
    pub(crate) login: String,
    pub(crate) body: String,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
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
    pub(crate) repos: BTreeMap<String, Repo>,
    pub(crate) tokens: Vec<String>,
    pub(crate) minted: Vec<String>,
    /// When each minted token expires (seconds since the epoch): GitHub
    /// answers 401 "Bad credentials" from then on.
    pub(crate) minted_expiry: BTreeMap<String, u64>,
    /// What each minted token may do (`permissions.rs`).
    pub(crate) minted_grants: BTreeMap<String, super::permissions::Grants>,
    /// What the App's installations are granted (its manifest's
    /// `default_permissions`); `None`: everything, unmodelled.
    pub(crate) app_grants: Option<super::permissions::Grants>,
    pub(crate) installations: BTreeMap<u64, String>,
    /// The repositories (keys) an installation is limited to; one absent
    /// here covers every repository of its account.
    pub(crate) installation_repositories: BTreeMap<u64, Vec<String>>,
    pub(crate) app: Option<App>,
    pub(crate) faults: VecDeque<Fault>,
    pub(crate) next_id: u64,
    pub(crate) comments: Vec<Comment>,
    /// `(repo key, check run)`.
    pub(crate) check_runs: Vec<(String, Value)>,
    /// Commit statuses by repository, oldest first.
    pub(crate) statuses: Vec<(String, Value)>,
    /// `(repo key, pull request)`.
    pub(crate) pulls: Vec<(String, Value)>,
    /// `(repo key, issue)` (see `issues.rs`).
    pub(crate) issues: Vec<(String, Value)>,
    /// `(repo key, {number, review, comments})` (see `pulls.rs`).
    pub(crate) reviews: Vec<(String, Value)>,
    /// `(repo key, review comment)`, replies included (see `pulls.rs`).
    pub(crate) review_comments: Vec<(String, Value)>,
    /// `(repo key, {comment_id, reaction})` on issue comments (see `pulls.rs`).
    pub(crate) reactions: Vec<(String, Value)>,
    /// The user the configured tokens belong to: what `GET /user` answers
    /// for them and the author of what they write.
    pub(crate) actor: String,
    /// The App's slug: installation tokens act as `{slug}[bot]`.
    pub(crate) app_slug: String,
    pub(crate) requests_served: u64,
    /// While true every request answers 503, as GitHub does in an outage.
    pub(crate) outage: bool,
    /// Requests that were no conforming operation of GitHub's REST
    /// description, as the violation's text.
    pub(crate) violations: Vec<String>,
    /// Conforming requests for operations the fake does not model (501).
    pub(crate) unserved: Vec<String>,
    /// The OAuth app people sign in with, and what it issued (`oauth.rs`).
    pub(crate) oauth: OAuth,
}

/// The map key of a repository (GitHub names are case-insensitive).
pub(crate) fn repo_key(owner: &str, name: &str) -> String {
    format!("{}/{}", owner.to_ascii_lowercase(), name.to_ascii_lowercase())
}

impl State {
    /// A fresh id for a comment, check run or pull request.
    pub(crate) fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// URLs for a stored repository.
    pub(crate) fn urls(&self, repo: &Repo) -> RepoUrls {
        RepoUrls::new(&self.base_url, &repo.owner, &repo.name)
    }

    /// The repository, if seeded.
    pub(crate) fn repo_mut(&mut self, owner: &str, name: &str) -> Option<&mut Repo> {
        self.repos.get_mut(&repo_key(owner, name))
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

    /// The installation (id, account) covering the repository `key` owned
    /// by `owner`: its account's, unless limited to other repositories.
    pub(crate) fn installation_for(&self, owner: &str, key: &str) -> Option<(u64, String)> {
        self.installations
            .iter()
            .filter(|(_, account)| account.eq_ignore_ascii_case(owner))
            .find(|(id, _)| self.installation_repositories.get(id).is_none_or(|keys| keys.iter().any(|k| k == key)))
            .map(|(id, account)| (*id, account.clone()))
    }

    /// The App's bot account, which writes with installation tokens.
    pub(crate) fn app_login(&self) -> String {
        format!("{}[bot]", self.app_slug)
    }

    /// Whether `token` is an installation token the fake minted.
    pub(crate) fn is_minted(&self, token: &str) -> bool {
        self.minted.iter().any(|t| t == token)
    }

    /// Who a request acts as, as GitHub attributes a write: the App's bot
    /// for an installation token, else the tokens' user ([`State::actor`]).
    pub(crate) fn login_of(&self, call: &RecordedCall) -> String {
        match credential(call) {
            Some(token) if self.is_minted(token) => self.app_login(),
            _ => self.actor.clone(),
        }
    }

    /// The JSON of a comment.
    pub(crate) fn comment_json(&self, comment: &Comment) -> Value {
        let (owner, name) = comment.repo.split_once('/').unwrap_or_default();
        let (owner, name) =
            self.repos.get(&comment.repo).map_or((owner, name), |r| (r.owner.as_str(), r.name.as_str()));
        let urls = RepoUrls::new(&self.base_url, owner, name);
        serde_json::json!({
            "id": comment.id,
            "node_id": super::wire::node_id("IssueComment", &comment.id.to_string()),
            "url": format!("{}/issues/comments/{}", urls.api, comment.id),
            "html_url": format!("{}/issues/{}#issuecomment-{}", urls.html, comment.number, comment.id),
            "issue_url": format!("{}/issues/{}", urls.api, comment.number),
            "body": comment.body,
            "user": RepoUrls::user(&self.base_url, &comment.login),
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
            "author_association": if comment.login.ends_with("[bot]") { "NONE" } else { "OWNER" },
        })
    }
}

/// The fake's OAuth app, its users and what it issued.
#[derive(Debug, Default)]
pub(crate) struct OAuth {
    /// `(client id, client secret, callback URL)`.
    pub(crate) app: Option<(String, String, String)>,
    /// `(login, organisations)`.
    pub(crate) users: Vec<(String, Vec<String>)>,
    /// Who is signed in to GitHub in "the browser".
    pub(crate) browser_user: Option<String>,
    /// Account ids other than `oauth::account_id`'s: a login renamed, or a
    /// released login taken by another account.
    pub(crate) ids: Vec<(String, u64)>,
    /// Unredeemed codes and their user.
    pub(crate) codes: Vec<(String, String)>,
    /// Issued tokens and their user.
    pub(crate) tokens: Vec<(String, String)>,
    pub(crate) issued: u64,
}
