//! GitHub's OAuth web application flow, as GitHub documents it
//! ("Authorizing OAuth apps", web application flow):
//!
//! 1. the browser is sent to `GET {github}/login/oauth/authorize` with
//!    `client_id`, `scope` and `state`;
//! 2. GitHub sends it back to the app's registered callback with `code`
//!    and the same `state` (or `error=access_denied`);
//! 3. `POST {github}/login/oauth/access_token` (`client_id`,
//!    `client_secret`, `code`; `Accept: application/json`) answers
//!    `{"access_token", "scope", "token_type"}`, or `200` with `{"error"}`;
//! 4. `GET {api}/user` names the user and `GET {api}/user/orgs` lists its
//!    organisations (scope `read:org`).
//!
//! The user's token is used for those two reads only and then dropped: it
//! is never stored, logged or put in a cookie. I/O goes through the host's
//! [`HttpClient`].

use agent_zero_ports::{HttpClient, RequestTimeout};
use serde::Deserialize;

use super::settings::DashboardSettings;
use crate::error::{ApiError, ErrorCode};

/// Each call's deadline.
const TIMEOUT_MS: u64 = 10_000;
/// Most organisations read (one page).
const ORGS_PER_PAGE: u32 = 100;

/// The authorize URL the browser is sent to.
pub(crate) fn authorize_url(settings: &DashboardSettings, state: &str) -> String {
    let scope = if settings.orgs.is_empty() { "" } else { "&scope=read%3Aorg" };
    format!(
        "{}/login/oauth/authorize?client_id={}{scope}&state={}&allow_signup=false",
        settings.github_url,
        agent_zero_contracts::encode_component(&settings.client_id),
        agent_zero_contracts::encode_component(state)
    )
}

fn upstream(message: String) -> ApiError {
    ApiError::new(ErrorCode::UpstreamFailed, message)
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

#[derive(Deserialize)]
struct User {
    login: String,
    id: u64,
}

#[derive(Deserialize)]
struct Org {
    login: String,
    id: u64,
}

/// Exchanges the callback's `code` for the user's token.
pub(crate) async fn exchange(
    http: &impl HttpClient,
    settings: &DashboardSettings,
    code: &str,
) -> Result<String, ApiError> {
    let body = format!(
        "client_id={}&client_secret={}&code={}",
        agent_zero_contracts::encode_component(&settings.client_id),
        agent_zero_contracts::encode_component(&settings.client_secret),
        agent_zero_contracts::encode_component(code)
    );
    let request = http::Request::post(format!("{}/login/oauth/access_token", settings.github_url))
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(http::header::USER_AGENT, crate::PRODUCT)
        .extension(RequestTimeout(TIMEOUT_MS))
        .body(body.into_bytes())
        .map_err(|e| upstream(format!("the token request cannot be built: {e}")))?;
    let response =
        http.send(request).await.map_err(|e| upstream(format!("GitHub's token endpoint cannot be reached: {e}")))?;
    if !response.status().is_success() {
        return Err(upstream(format!("GitHub's token endpoint answered {}", response.status().as_u16())));
    }
    let answer: TokenAnswer = agent_zero_codecs::json::from_slice(response.body())
        .map_err(|e| upstream(format!("GitHub's token answer is not the documented JSON: {e}")))?;
    match (answer.access_token, answer.error) {
        (Some(token), None) if !token.is_empty() => Ok(token),
        (_, Some(error)) => {
            let detail = answer.error_description.unwrap_or_default();
            // `bad_verification_code`: an old, used or forged code.
            Err(ApiError::new(ErrorCode::Unauthorized, format!("GitHub refused the sign-in: {error}: {detail}"))
                .with_field("code"))
        }
        _ => Err(upstream("GitHub's token answer has no access_token".to_owned())),
    }
}

async fn get_json<T: for<'de> Deserialize<'de>>(
    http: &impl HttpClient,
    settings: &DashboardSettings,
    token: &str,
    path: &str,
) -> Result<T, ApiError> {
    let request = http::Request::get(format!("{}{path}", settings.api_url))
        .header(http::header::ACCEPT, "application/vnd.github+json")
        .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
        .header(http::header::USER_AGENT, crate::PRODUCT)
        .header("x-github-api-version", "2022-11-28")
        .extension(RequestTimeout(TIMEOUT_MS))
        .body(Vec::new())
        .map_err(|e| upstream(format!("GET {path} cannot be built: {e}")))?;
    let response = http.send(request).await.map_err(|e| upstream(format!("GET {path}: {e}")))?;
    if !response.status().is_success() {
        return Err(upstream(format!("GET {path} answered {}", response.status().as_u16())));
    }
    agent_zero_codecs::json::from_slice(response.body())
        .map_err(|e| upstream(format!("GET {path}: not the documented JSON: {e}")))
}

/// The signed-in user's login and numeric id and, when organisations grant
/// access, the allowed organisations it belongs to (by id where a grant
/// pins one), named as their grants name them.
pub(crate) async fn identify(
    http: &impl HttpClient,
    settings: &DashboardSettings,
    token: &str,
) -> Result<(String, u64, Vec<String>), ApiError> {
    let user: User = get_json(http, settings, token, "/user").await?;
    if !super::scope::is_github_login(&user.login) {
        return Err(upstream("GET /user: `login` is not a GitHub login".to_owned()));
    }
    let mut orgs = Vec::new();
    if !settings.orgs.is_empty() {
        let listed: Vec<Org> = get_json(http, settings, token, &format!("/user/orgs?per_page={ORGS_PER_PAGE}")).await?;
        orgs = listed.iter().filter_map(|o| settings.allowed_org(&o.login, o.id)).map(str::to_owned).collect();
    }
    Ok((user.login, user.id, orgs))
}

/// The decoded pairs of a form body or query string.
pub(crate) fn form_pairs(text: &str) -> Option<Vec<(String, String)>> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (n, v) = p.split_once('=').unwrap_or((p, ""));
            Some((agent_zero_contracts::decode_component(n)?, agent_zero_contracts::decode_component(v)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_round_trip() {
        let value = "a b&c=d/é%";
        assert_eq!(
            agent_zero_contracts::decode_component(&agent_zero_contracts::encode_component(value)).as_deref(),
            Some(value)
        );
        assert_eq!(
            form_pairs("decision=approve&csrf=a%2Bb&x=").unwrap(),
            [("decision".into(), "approve".into()), ("csrf".into(), "a+b".into()), ("x".into(), String::new())]
        );
        assert_eq!(form_pairs("a=%zz"), None);
    }
}
