//! `GET /repos/{owner}/{repo}/installation` ("Get a repository installation
//! for the authenticated app", `apps/get-repo-installation` in GitHub's
//! published OpenAPI description, API version `2022-11-28`): the App's
//! installation that covers the repository.
//!
//! As GitHub does: only the App's JWT is accepted (a personal or
//! installation token, or none, is 401 with GitHub's JWT message); 404
//! `Not Found` when no installation of the App covers the repository, or
//! it does not exist (an App cannot tell the two apart). An installation
//! ([`FakeGitHub::add_installation`](super::FakeGitHub::add_installation))
//! covers every repository of its account, unless it was limited to some
//! ([`FakeGitHub::set_installation_repositories`](super::FakeGitHub::set_installation_repositories)).

use serde_json::json;

use super::auth::check_jwt;
use super::state::{State, repo_key};
use super::wire::{RepoUrls, error, not_found};
use crate::record::RecordedCall;
use crate::server::Reply;
use crate::time::now_secs;

/// When the fake's installations were "created".
const INSTALLED_AT: &str = "2024-01-02T03:04:05Z";

/// The route; the JWT is checked before anything about the repository is
/// told.
pub(crate) fn repository_installation(state: &State, call: &RecordedCall, owner: &str, name: &str) -> Reply {
    if let Err(message) = check_jwt(call, state.app.as_ref(), now_secs()) {
        return error(401, message);
    }
    let key = repo_key(owner, name);
    let Some(repo) = state.repos.get(&key) else { return not_found() };
    let Some((id, account)) = state.installation_for(&repo.owner, &key) else { return not_found() };
    let app_id = state.app.as_ref().map_or("0", |app| app.id.as_str());
    let app_id = app_id.parse::<u64>().unwrap_or_default();
    let selection = if state.installation_repositories.contains_key(&id) { "selected" } else { "all" };
    let base = &state.base_url;
    Reply::json(
        200,
        &json!({
            "id": id,
            "account": RepoUrls::user(base, &account),
            "repository_selection": selection,
            "access_tokens_url": format!("{base}/app/installations/{id}/access_tokens"),
            "repositories_url": format!("{base}/installation/repositories"),
            "html_url": format!("https://github.com/settings/installations/{id}"),
            "app_id": app_id,
            "app_slug": state.app_slug,
            "target_id": RepoUrls::user(base, &account)["id"],
            "target_type": "User",
            "permissions": {"checks": "write", "contents": "write", "issues": "write", "metadata": "read", "pull_requests": "write"},
            "events": ["issues", "pull_request", "pull_request_review", "pull_request_review_comment"],
            "created_at": INSTALLED_AT,
            "updated_at": INSTALLED_AT,
            "single_file_name": null,
            "has_multiple_single_files": false,
            "single_file_paths": [],
            "suspended_by": null,
            "suspended_at": null,
        }),
    )
}
