//! GitHub's OAuth web application flow, as "Authorizing OAuth apps" (GitHub
//! Docs, REST API version 2022-11-28) documents it:
//!
//! - `GET /login/oauth/authorize?client_id&state[&scope]`: GitHub shows its
//!   consent page; here the browser's signed-in user
//!   ([`FakeGitHub::set_oauth_browser_user`]) consents at once, and the
//!   answer is a `302` to the app's registered callback URL with `code` and
//!   `state` (or `error=access_denied` when no user is signed in). An
//!   unknown `client_id` is GitHub's 404 page.
//! - `POST /login/oauth/access_token` (form `client_id`, `client_secret`,
//!   `code`): with `Accept: application/json`, `200` with `access_token`,
//!   `scope` and `token_type`; a used, unknown or foreign code is still `200`
//!   with `error=bad_verification_code`, a wrong secret
//!   `error=incorrect_client_credentials`, as GitHub answers.
//! - `GET /user` and `GET /user/orgs` with the `gho_` token.
//!
//! Codes are single use.

use serde_json::json;

use super::state::State;
use super::wire::{RepoUrls, error, stable_number};
use crate::record::{RecordedCall, parse_query};
use crate::server::Reply;

impl super::FakeGitHub {
    /// Registers the OAuth app people sign in with.
    pub fn register_oauth_app(&self, client_id: &str, client_secret: &str, callback_url: &str) {
        self.with(|s| s.oauth.app = Some((client_id.to_owned(), client_secret.to_owned(), callback_url.to_owned())));
    }

    /// Adds a GitHub user who belongs to `orgs`.
    pub fn add_oauth_user(&self, login: &str, orgs: &[&str]) {
        self.with(|s| s.oauth.users.push((login.to_owned(), orgs.iter().map(|o| (*o).to_owned()).collect())));
    }

    /// Sets the organisations `login` belongs to from now on (an owner
    /// removed it, or it left): `GET /user/orgs` lists these.
    pub fn set_oauth_user_orgs(&self, login: &str, orgs: &[&str]) {
        self.with(|s| {
            s.oauth.users.retain(|(l, _)| !l.eq_ignore_ascii_case(login));
            s.oauth.users.push((login.to_owned(), orgs.iter().map(|o| (*o).to_owned()).collect()));
        });
    }

    /// Who is signed in to GitHub in the browser and consents on the
    /// authorize page (`None`: the user denies).
    pub fn set_oauth_browser_user(&self, login: Option<&str>) {
        self.with(|s| s.oauth.browser_user = login.map(str::to_owned));
    }

    /// Gives the account now named `login` the id `id` (GitHub keeps an
    /// account's id across renames; a released login taken by someone
    /// else comes with that account's own id).
    pub fn set_oauth_user_id(&self, login: &str, id: u64) {
        self.with(|s| {
            s.oauth.ids.retain(|(l, _)| !l.eq_ignore_ascii_case(login));
            s.oauth.ids.push((login.to_owned(), id));
        });
    }

    /// How many access tokens were issued.
    pub fn oauth_tokens_issued(&self) -> usize {
        self.with(|s| s.oauth.tokens.len())
    }
}

/// Answers the OAuth routes; `None` for anything else.
pub(crate) fn route(state: &mut State, call: &RecordedCall, segments: &[&str]) -> Option<Reply> {
    match (call.method.as_str(), segments) {
        ("GET", ["login", "oauth", "authorize"]) => Some(authorize(state, call)),
        ("POST", ["login", "oauth", "access_token"]) => Some(access_token(state, call)),
        ("GET", ["user", rest @ ..]) => {
            let token = super::auth::credential(call)?;
            let login = state.oauth.tokens.iter().find(|(t, _)| t == token).map(|(_, l)| l.clone())?;
            Some(match rest {
                [] => user(state, &login),
                ["orgs"] => orgs(state, &login),
                _ => super::wire::not_found(),
            })
        }
        _ => None,
    }
}

fn authorize(state: &mut State, call: &RecordedCall) -> Reply {
    let Some((client_id, _, callback)) = state.oauth.app.clone() else { return page(404, "Not Found") };
    if call.query_param("client_id") != Some(client_id.as_str()) {
        return page(404, "Not Found");
    }
    let the_state = call.query_param("state").unwrap_or_default().to_owned();
    let encoded = percent_encode(&the_state);
    let location = match state.oauth.browser_user.clone() {
        Some(login) => {
            state.oauth.issued += 1;
            let code = format!("{:020x}", stable_number(&format!("code-{}-{login}", state.oauth.issued)));
            state.oauth.codes.push((code.clone(), login));
            format!("{callback}?code={code}&state={encoded}")
        }
        None => format!(
            "{callback}?error=access_denied&error_description=The+user+has+denied+your+application+access.\
             &error_uri=https%3A%2F%2Fdocs.github.com%2Fapps%2Fmanaging-oauth-apps%2Ftroubleshooting-authorization-request-errors%2F%23access-denied&state={encoded}"
        ),
    };
    let mut reply = page(302, "You are being redirected.");
    reply = reply.with_header("location", &location);
    reply
}

fn access_token(state: &mut State, call: &RecordedCall) -> Reply {
    let form = parse_query(&call.body_text());
    let field = |name: &str| form.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let Some((client_id, secret, _)) = state.oauth.app.clone() else { return error(404, "Not Found") };
    if field("client_id") != Some(client_id.as_str()) || field("client_secret") != Some(secret.as_str()) {
        return oauth_error(
            "incorrect_client_credentials",
            "The client_id and/or client_secret passed are incorrect.",
            "incorrect-client-credentials",
        );
    }
    let code = field("code").unwrap_or_default();
    let Some(index) = state.oauth.codes.iter().position(|(c, _)| c == code) else {
        return oauth_error(
            "bad_verification_code",
            "The code passed is incorrect or expired.",
            "bad-verification-code",
        );
    };
    let (_, login) = state.oauth.codes.remove(index);
    state.oauth.issued += 1;
    let token = format!("gho_{:036x}", u128::from(stable_number(&format!("token-{}-{login}", state.oauth.issued))));
    state.oauth.tokens.push((token.clone(), login));
    let scope = call_scope(call);
    Reply::json(200, &json!({ "access_token": token, "scope": scope, "token_type": "bearer" }))
}

/// GitHub grants the scopes asked for at authorize; the fake grants
/// `read:org` (what the dashboard asks for with organisations).
fn call_scope(_call: &RecordedCall) -> &'static str {
    "read:org"
}

fn oauth_error(code: &str, description: &str, anchor: &str) -> Reply {
    Reply::json(
        200,
        &json!({
            "error": code,
            "error_description": description,
            "error_uri": format!("https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#{anchor}"),
        }),
    )
}

/// The id GitHub gives the account `login` unless the fake was told
/// otherwise ([`super::FakeGitHub::set_oauth_user_id`]).
pub fn account_id(login: &str) -> u64 {
    stable_number(login)
}

fn user(state: &State, login: &str) -> Reply {
    let mut user = RepoUrls::user(&state.base_url, login);
    let id = state.oauth.ids.iter().find(|(l, _)| l.eq_ignore_ascii_case(login)).map(|(_, id)| *id);
    if let (Some(object), Some(id)) = (user.as_object_mut(), id) {
        object.insert("id".into(), json!(id));
    }
    if let Some(object) = user.as_object_mut() {
        object.insert("name".into(), json!(null));
        object.insert(
            "avatar_url".into(),
            json!(format!("https://avatars.githubusercontent.com/u/{}?v=4", stable_number(login))),
        );
        object.insert("created_at".into(), json!("2024-01-02T03:04:05Z"));
    }
    Reply::json(200, &user)
}

fn orgs(state: &State, login: &str) -> Reply {
    let orgs = state.oauth.users.iter().find(|(l, _)| l.eq_ignore_ascii_case(login)).map(|(_, o)| o.clone());
    let listed: Vec<_> = orgs
        .unwrap_or_default()
        .iter()
        .map(|org| {
            json!({
                "login": org,
                "id": stable_number(org),
                "node_id": super::wire::node_id("Organization", org),
                "url": format!("{}/orgs/{org}", state.base_url),
                "repos_url": format!("{}/orgs/{org}/repos", state.base_url),
                "description": null,
            })
        })
        .collect();
    Reply::json(200, &json!(listed))
}

fn page(status: u16, text: &str) -> Reply {
    Reply {
        status,
        headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
        body: format!("<!doctype html><title>{text}</title><p>{text}</p>").into_bytes(),
        delay_ms: 0,
    }
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
