//! Issues: [`FakeGitHub::open_issue`] seeds one, and
//! `GET /repos/{o}/{r}/issues/{n}` answers it in GitHub's Issue shape; a
//! pull request's number answers too, as on GitHub, with its
//! `pull_request` object; any other number is GitHub's 404.

use serde_json::{Value, json};

use super::FakeGitHub;
use super::state::{State, repo_key};
use super::wire::{RepoUrls, node_id, not_found};
use crate::server::Reply;
use crate::time::now_rfc3339;

impl FakeGitHub {
    /// Opens issue `title` (`body`, when given) on a seeded repository,
    /// by the tokens' user; returns its number.
    ///
    /// # Panics
    /// When the repository was not seeded.
    pub fn open_issue(&self, owner: &str, repo: &str, title: &str, body: Option<&str>) -> u64 {
        self.with(|state| {
            let key = repo_key(owner, repo);
            let base_url = state.base_url.clone();
            let id = state.fresh_id();
            let actor = state.actor.clone();
            let r = state.repos.get_mut(&key).expect("seed the repository first");
            let number = r.next_number;
            r.next_number += 1;
            let urls = RepoUrls::new(&base_url, &r.owner, &r.name);
            let now = now_rfc3339();
            let issue = json!({
                "url": format!("{}/issues/{number}", urls.api),
                "html_url": format!("{}/issues/{number}", urls.html),
                "id": id,
                "node_id": node_id("Issue", &id.to_string()),
                "number": number,
                "title": title,
                "user": RepoUrls::user(&base_url, &actor),
                "labels": [],
                "state": "open",
                "locked": false,
                "comments": 0,
                "created_at": now,
                "updated_at": now,
                "closed_at": null,
                "author_association": "OWNER",
                "body": body,
            });
            state.issues.push((key, issue));
            number
        })
    }
}

/// `GET .../issues/{number}` of repository `key`.
pub(super) fn get(state: &State, key: &str, number: u64) -> Reply {
    if let Some((_, issue)) = state.issues.iter().find(|(k, i)| k == key && i["number"] == number) {
        return Reply::json(200, issue);
    }
    let Some((_, pull)) = state.pulls.iter().find(|(k, p)| k == key && p["number"] == number) else {
        return not_found();
    };
    let mut issue: Value = json!({ "pull_request": { "url": pull["url"], "html_url": pull["html_url"] } });
    for field in ["id", "node_id", "number", "title", "user", "state", "body", "created_at", "updated_at", "html_url"] {
        issue[field] = pull[field].clone();
    }
    issue["url"] = json!(pull["url"].as_str().unwrap_or_default().replace("/pulls/", "/issues/"));
    Reply::json(200, &issue)
}
