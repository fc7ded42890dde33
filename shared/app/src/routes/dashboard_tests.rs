//! The dashboard routes over the in-memory host: settings errors on these
//! routes only, the sign-in redirect, refused callbacks and sessions, and a
//! forged form refused and audited. The whole OAuth round trip runs in the
//! e2e suite against the loopback GitHub.

use crate::Settings;
use crate::dashboard::session::{SESSION_COOKIE, Session};
use crate::test_host::{START_MS, TestHost};

const KEY: &str = "0123456789abcdef0123456789abcdef-test";

fn settings(extra: &[(&'static str, &'static str)]) -> Settings {
    let mut pairs = vec![
        ("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID", "Ov23liTest"),
        ("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET", "client-secret-9f8e"),
        ("AGENT_ZERO_DASHBOARD_SESSION_KEY", KEY),
        ("AGENT_ZERO_DASHBOARD_USERS", "octocat:fix"),
    ];
    pairs.extend_from_slice(extra);
    Settings::from_pairs(pairs)
}

fn get(host: &TestHost, settings: &Settings, uri: &str, cookie: Option<&str>) -> http::Response<Vec<u8>> {
    let mut builder = http::Request::get(uri);
    if let Some(cookie) = cookie {
        builder = builder.header("cookie", cookie);
    }
    host.send(settings, builder.body(Vec::new()).unwrap())
}

fn text(response: &http::Response<Vec<u8>>) -> String {
    String::from_utf8_lossy(response.body()).into_owned()
}

fn session_cookie(login: &str, expires_ms: u64) -> String {
    let session = Session { login: login.into(), user_id: 1, orgs: vec![], id: "00000000abcdef01".into(), expires_ms };
    format!("{SESSION_COOKIE}={}", session.seal(KEY.as_bytes()))
}

#[test]
fn malformed_dashboard_settings_are_503_on_the_dashboard_only() {
    let host = TestHost::new();
    let broken = settings(&[("AGENT_ZERO_DASHBOARD_SESSION_KEY", "short")]);
    for uri in ["/dashboard", "/login", "/login/callback?code=x&state=y", "/dashboard/audit"] {
        let response = get(&host, &broken, uri, None);
        assert_eq!(response.status(), 503, "{uri}");
        assert!(text(&response).contains("AGENT_ZERO_DASHBOARD_SESSION_KEY"), "{uri}: {}", text(&response));
        assert!(!text(&response).contains("short"), "{}", text(&response));
    }
    assert_eq!(get(&host, &broken, "/api/v1/health", None).status(), 200);
    // Off: 503 naming what to set.
    let off = get(&host, &Settings::from_pairs([]), "/dashboard", None);
    assert_eq!(off.status(), 503);
    assert!(text(&off).contains("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID"), "{}", text(&off));
}

#[test]
fn sign_in_redirects_to_github_with_a_state_bound_to_a_cookie() {
    let host = TestHost::new();
    let response = get(&host, &settings(&[]), "/login", None);
    assert_eq!(response.status(), 303);
    let location = response.headers()["location"].to_str().unwrap();
    assert!(location.starts_with("https://github.com/login/oauth/authorize?client_id=Ov23liTest&state="), "{location}");
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("az_oauth_state=") && cookie.contains("HttpOnly; Secure; SameSite=Lax"), "{cookie}");
    assert!(!location.contains("client-secret") && !cookie.contains("client-secret"));
    // The callback without that cookie is refused before any exchange.
    let state = location.split("state=").nth(1).unwrap().split('&').next().unwrap();
    let callback = get(&host, &settings(&[]), &format!("/login/callback?code=c0de&state={state}"), None);
    assert_eq!(callback.status(), 400, "{}", text(&callback));
    assert!(callback.headers().get("set-cookie").is_some_and(|c| !c.to_str().unwrap().contains("az_session")));
}

#[test]
fn sessions_must_be_signed_unexpired_and_still_allowed() {
    let host = TestHost::new();
    let ok = get(&host, &settings(&[]), "/dashboard", Some(&session_cookie("octocat", START_MS + 60_000)));
    assert!(text(&ok).contains("Signed in as <strong>github:octocat</strong>"), "{}", text(&ok));
    for cookie in [
        session_cookie("octocat", START_MS),
        session_cookie("mallory", START_MS + 60_000),
        format!("{SESSION_COOKIE}=djEKb2N0b2NhdAo.AAAA"),
    ] {
        let page = get(&host, &settings(&[]), "/dashboard", Some(&cookie));
        assert!(text(&page).contains("Sign in with GitHub"), "{cookie}: {}", text(&page));
        assert_eq!(get(&host, &settings(&[]), "/dashboard/audit", Some(&cookie)).status(), 401, "{cookie}");
    }
    // Removing octocat from the settings ends its session at once.
    let removed = settings(&[("AGENT_ZERO_DASHBOARD_USERS", "hubot")]);
    let page = get(&host, &removed, "/dashboard", Some(&session_cookie("octocat", START_MS + 60_000)));
    assert!(text(&page).contains("Sign in with GitHub"), "{}", text(&page));
}

#[test]
fn a_forged_form_is_refused_and_audited() {
    let host = TestHost::new();
    let cookie = session_cookie("octocat", START_MS + 60_000);
    let request = http::Request::post("/dashboard/tasks/t-1/decision")
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(b"csrf=not-the-token&decision=approve".to_vec())
        .unwrap();
    let response = host.send(&settings(&[]), request);
    assert_eq!(response.status(), 403, "{}", text(&response));
    assert!(text(&response).contains("csrf"), "{}", text(&response));
    let audit = get(&host, &settings(&[]), "/dashboard/audit", Some(&cookie));
    let log = text(&audit);
    assert!(log.contains("github:octocat") && log.contains("403 forbidden (csrf)"), "{log}");
}

#[test]
fn under_a_base_path_the_dashboards_links_redirects_and_cookies_carry_it() {
    let host = TestHost::new();
    let settings = settings(&[("AGENT_ZERO_BASE_PATH", "/az")]);
    let sign_in = get(&host, &settings, "/az/login", None);
    assert_eq!(sign_in.status(), 303);
    let cookie = sign_in.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("; Path=/az/login;"), "{cookie}");

    let session = session_cookie("octocat", START_MS + 60_000);
    let page = text(&get(&host, &settings, "/az/dashboard", Some(&session)));
    assert!(page.contains("Signed in as <strong>github:octocat</strong>"), "{page}");
    for attribute in ["href=\"", "action=\""] {
        for link in
            page.split(attribute).skip(1).filter_map(|rest| rest.split('"').next()).filter(|l| l.starts_with('/'))
        {
            assert!(link.starts_with("/az/"), "{link} ignores the base path: {page}");
        }
    }
    let csrf = page.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
    let request = http::Request::post("/az/logout")
        .header("cookie", &session)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={csrf}").into_bytes())
        .unwrap();
    let out = host.send(&settings, request);
    assert_eq!(out.status(), 303, "{}", text(&out));
    assert_eq!(out.headers()["location"], "/az/dashboard");
    let cleared = out.headers()["set-cookie"].to_str().unwrap();
    assert!(cleared.starts_with(&format!("{SESSION_COOKIE}=;")) && cleared.contains("; Path=/az/;"), "{cleared}");
    // The root's dashboard is not served under a base path.
    assert_eq!(get(&host, &settings, "/dashboard", Some(&session)).status(), 404);
}
