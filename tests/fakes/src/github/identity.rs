//! Who the caller is: `GET /user` for a token and `GET /app` for an App's
//! JWT, in the shapes GitHub's REST API (`2022-11-28`) documents ("Get the
//! authenticated user", "Get the authenticated app").

use serde_json::{Value, json};

use super::auth::{check_jwt, credential};
use super::state::State;
use super::wire::{RepoUrls, error, node_id, stable_number};
use crate::record::RecordedCall;
use crate::server::Reply;
use crate::time::now_secs;

/// When the fake's accounts and App were "created".
const CREATED_AT: &str = "2024-01-02T03:04:05Z";

/// `GET /user`: the user a token belongs to. An installation token is
/// refused as GitHub refuses it (403 `Resource not accessible by
/// integration`); a token the fake does not accept is 401 once
/// [`require_token`](super::FakeGitHub::require_token) was called.
pub(crate) fn authenticated_user(state: &State, call: &RecordedCall) -> Reply {
    let Some(token) = credential(call) else {
        return error(401, "Requires authentication");
    };
    if state.is_minted(token) {
        return Reply::json(
            403,
            &json!({
                "message": "Resource not accessible by integration",
                "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user",
                "status": "403",
            }),
        );
    }
    if !state.tokens.is_empty() && !state.tokens.iter().any(|t| t == token) {
        return error(401, "Bad credentials");
    }
    let mut user = RepoUrls::user(&state.base_url, &state.actor);
    let extra = json!({
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?v=4", stable_number(&state.actor)),
        "gravatar_id": "",
        "name": null,
        "company": null,
        "blog": "",
        "location": null,
        "email": null,
        "hireable": null,
        "bio": null,
        "twitter_username": null,
        "public_repos": 0,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": CREATED_AT,
        "updated_at": CREATED_AT,
        "private_gists": 0,
        "total_private_repos": 0,
        "owned_private_repos": 0,
        "two_factor_authentication": true,
    });
    merge(&mut user, extra);
    Reply::json(200, &user)
}

/// `GET /app`: the App whose JWT authenticates the request (checked like
/// the token route checks it); 401 with GitHub's message otherwise.
pub(crate) fn authenticated_app(state: &State, call: &RecordedCall) -> Reply {
    let issuer = match check_jwt(call, state.app.as_ref(), now_secs()) {
        Ok(issuer) => issuer,
        Err(message) => return error(401, message),
    };
    // `iss` is the numeric App id or the App's client id (`Iv1.…`).
    let (id, client_id) = match issuer.parse::<u64>() {
        Ok(id) => (id, format!("Iv1.{:016x}", id)),
        Err(_) => (stable_number(&issuer), issuer.clone()),
    };
    let slug = &state.app_slug;
    let owner = state.installations.values().next().map_or("agent-zero", String::as_str);
    Reply::json(
        200,
        &json!({
            "id": id,
            "slug": slug,
            "client_id": client_id,
            "node_id": node_id("Integration", &id.to_string()),
            "owner": RepoUrls::user(&state.base_url, owner),
            "name": "Agent Zero Edge",
            "description": "",
            "external_url": "https://example.com",
            "html_url": format!("https://github.com/apps/{slug}"),
            "created_at": CREATED_AT,
            "updated_at": CREATED_AT,
            "permissions": {"checks": "write", "contents": "write", "issues": "write", "metadata": "read", "pull_requests": "write"},
            "events": ["issues", "pull_request", "pull_request_review", "pull_request_review_comment"],
            "installations_count": state.installations.len(),
        }),
    )
}

fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(into), Value::Object(from)) = (into, from) {
        into.extend(from);
    }
}
