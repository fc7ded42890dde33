//! Control-plane authorization of each request, against the access policy
//! the settings parsed ([`crate::access`]).
//!
//! The JSON API (`/api/v1/*`) takes bearer tokens only, never the
//! dashboard's session cookie: a browser sends a cookie with any request a
//! page elsewhere makes it send, so a cookie-authenticated API would need
//! CSRF defences on every route. The dashboard's own forms carry those
//! (a CSRF token per session) and take the same path as the API.

use agent_zero_evidence::RenderOptions;
use http::{HeaderMap, HeaderValue, header};

use crate::Settings;
use crate::access::{Access, Principal, TOKENS};
use crate::error::{ApiError, ErrorCode};

/// The access policy, or 503 when no tokens are configured (mutations and
/// the audit log fail closed).
pub(crate) fn required(settings: &Settings) -> Result<&Access, ApiError> {
    settings.access()?.ok_or_else(|| {
        ApiError::new(ErrorCode::NotConfigured, format!("no control-plane principals: set {TOKENS} (`name:token,...`)"))
            .with_field(TOKENS)
    })
}

/// Authenticates a mutation (or an audit read): the principal, or the
/// error to answer.
pub(crate) fn principal(settings: &Settings, headers: &HeaderMap) -> Result<Principal, ApiError> {
    required(settings)?.authenticate(headers).cloned()
}

/// Checks a task read: a valid token when reads need one (see
/// `AGENT_ZERO_CONTROL_PLANE_READS`), otherwise open.
pub(crate) fn authorize_read(settings: &Settings, headers: &HeaderMap) -> Result<(), ApiError> {
    match settings.access()? {
        Some(access) if access.reads_need_token() => access.authenticate(headers).map(|_| ()),
        _ => Ok(()),
    }
}

/// Every value that must never be stored (parsed once with the settings).
pub(crate) fn secrets(settings: &Settings) -> &[String] {
    settings.secrets()
}

/// The configured secret values as the renderers take them (`&[&str]`),
/// and the base path the app's links start with.
pub(crate) struct Secrets<'c> {
    values: Vec<&'c str>,
    base_path: &'c str,
}

impl<'c> Secrets<'c> {
    pub(crate) fn of(settings: &'c Settings) -> Self {
        Self {
            values: secrets(settings).iter().map(String::as_str).collect(),
            // A malformed base path answers every request before a page renders.
            base_path: settings.base_path().unwrap_or_default(),
        }
    }

    /// Rendering with these secrets redacted, links under the base path.
    pub(crate) fn options(&self) -> RenderOptions<'_> {
        RenderOptions { secrets: &self.values, base_path: self.base_path, ..RenderOptions::default() }
    }
}

/// `text` with every occurrence of every secret replaced, and every
/// GitHub-token-shaped run (a minted `ghs_` installation token is in no
/// configured list) too.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    agent_zero_ports::redact(text, secrets).into_owned()
}

/// The allowed origin of a cross-origin request, if it is allowed:
/// exact match against `AGENT_ZERO_CONTROL_PLANE_ORIGINS`, `/api/v1/` only.
pub(crate) fn allowed_origin(settings: &Settings, path: &str, headers: &HeaderMap) -> Option<HeaderValue> {
    if !path.starts_with("/api/v1/") {
        return None;
    }
    let origin = headers.get(header::ORIGIN)?.to_str().ok()?;
    settings.origins().iter().any(|o| o == origin).then(|| HeaderValue::from_str(origin).ok()).flatten()
}

/// Adds the CORS answer headers for an allowed origin.
pub(crate) fn add_cors(response: &mut http::Response<Vec<u8>>, origin: HeaderValue) {
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("location, www-authenticate"));
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
}

/// The answer to an `OPTIONS` request on a route serving `methods`: 204
/// with `Allow`, plus the CORS preflight headers when the origin is allowed.
pub(crate) fn preflight(
    settings: &Settings,
    path: &str,
    headers: &HeaderMap,
    methods: &[&str],
) -> http::Response<Vec<u8>> {
    let mut response = http::Response::new(Vec::new());
    *response.status_mut() = http::StatusCode::NO_CONTENT;
    let allow = methods.join(", ");
    if let Ok(value) = HeaderValue::from_str(&allow) {
        response.headers_mut().insert(header::ALLOW, value.clone());
        if let Some(origin) = allowed_origin(settings, path, headers) {
            add_cors(&mut response, origin);
            let h = response.headers_mut();
            h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, value);
            h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("authorization, content-type"));
            h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
        }
    }
    response.headers_mut().append(header::VARY, HeaderValue::from_static("Origin"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{ORIGINS, READS, TOKENS};

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    /// A signed-in dashboard session (valid: the dashboard accepts it) is
    /// no credential for the JSON API: 401 on a decision and on the audit
    /// log, where the bearer token is let through.
    #[test]
    fn a_dashboard_session_alone_gets_401_from_the_json_api() {
        use crate::dashboard::session::{SESSION_COOKIE, Session};
        use crate::test_host::{START_MS, TestHost};
        const KEY: &str = "0123456789abcdef0123456789abcdef-test";
        let settings = Settings::from_pairs([
            (TOKENS, "ops:tok-ops-7d1c9e"),
            ("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID", "Ov23liTest"),
            ("AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET", "client-secret-9f8e"),
            ("AGENT_ZERO_DASHBOARD_SESSION_KEY", KEY),
            ("AGENT_ZERO_DASHBOARD_USERS", "octocat:observe|fix"),
        ]);
        let host = TestHost::new();
        let session = Session {
            login: "octocat".into(),
            user_id: 583_231,
            orgs: vec![],
            id: "00000000abcdef01".into(),
            issued_ms: START_MS,
            expires_ms: START_MS + 60_000,
        };
        let cookie = format!("{SESSION_COOKIE}={}", session.seal(KEY.as_bytes()));
        let send = |method: &str, uri: &str, credential: (&str, &str)| {
            let request = http::Request::builder()
                .method(method)
                .uri(uri)
                .header(credential.0, credential.1)
                .header("content-type", "application/json")
                .body(br#"{"decision":"approve"}"#.to_vec())
                .unwrap();
            host.send(&settings, request)
        };
        let page = send("GET", "/dashboard", ("cookie", &cookie));
        assert!(String::from_utf8_lossy(page.body()).contains("Signed in as <strong>github:octocat</strong>"));
        for (method, uri) in [("POST", "/api/v1/approvals/task-0000000000000001"), ("GET", "/api/v1/audit")] {
            let refused = send(method, uri, ("cookie", &cookie));
            assert_eq!(refused.status(), 401, "{method} {uri}: {}", String::from_utf8_lossy(refused.body()));
            let let_through = send(method, uri, ("authorization", "Bearer tok-ops-7d1c9e"));
            assert_ne!(let_through.status(), 401, "{method} {uri}");
        }
    }

    #[test]
    fn reads_default_to_token_when_the_app_can_read_private_repositories() {
        let anonymous = HeaderMap::new();
        let alice = headers(&[("authorization", "Bearer tok-alice-123")]);
        let tokens = (TOKENS, "alice:tok-alice-123");
        let app = [("GITHUB_APP_ID", "123"), ("GITHUB_APP_PRIVATE_KEY", "-----BEGIN PRIVATE KEY-----")];
        for credentials in [vec![("GITHUB_TOKEN", "ghp_x1")], app.to_vec()] {
            let mut pairs = credentials.clone();
            pairs.push(tokens);
            let closed = Settings::from_pairs(pairs.clone());
            let e = authorize_read(&closed, &anonymous).unwrap_err();
            assert_eq!(
                (e.code, e.field.as_deref()),
                (ErrorCode::Unauthorized, Some("Authorization")),
                "{credentials:?}"
            );
            assert!(authorize_read(&closed, &alice).is_ok());
            // An explicit `open` still opens them.
            pairs.push((READS, "open"));
            assert!(authorize_read(&Settings::from_pairs(pairs), &anonymous).is_ok(), "{credentials:?}");
            // Without principals nobody could read: 503 naming the variable to set.
            let e = authorize_read(&Settings::from_pairs(credentials.clone()), &alice).unwrap_err();
            assert_eq!((e.code, e.field.as_deref()), (ErrorCode::NotConfigured, Some(TOKENS)), "{credentials:?}");
            assert!(e.message.contains(READS) && !e.message.contains("ghp_x1"), "{}", e.message);
        }
        // No credentials, or an incomplete App: open as before.
        assert!(authorize_read(&Settings::from_pairs([tokens]), &anonymous).is_ok());
        assert!(authorize_read(&Settings::from_pairs([tokens, ("GITHUB_APP_ID", "123")]), &anonymous).is_ok());
        assert!(authorize_read(&Settings::default(), &anonymous).is_ok());
    }

    #[test]
    fn redacts_every_token_and_secret() {
        let config = Settings::from_pairs([(TOKENS, "a:tok-one,b:tok-one-longer"), ("GITHUB_TOKEN", "ghp_x1")]);
        let secrets = secrets(&config);
        let text = redact("tok-one-longer tok-one ghp_x1 a:tok-one,b:tok-one-longer", secrets);
        assert_eq!(text, "[redacted] [redacted] [redacted] [redacted]");
        // A minted installation token is in no configured list.
        let minted = redact("token ghs_16C7e42F292c6912E7710c838347Ae178B4a expired", secrets);
        assert_eq!(minted, "token [redacted] expired");
    }

    #[test]
    fn cors_only_for_listed_origins_on_the_api() {
        let config = Settings::from_pairs([(ORIGINS, "https://ops.example, http://localhost:3000/")]);
        let ok = headers(&[("origin", "http://localhost:3000")]);
        assert!(allowed_origin(&config, "/api/v1/tasks", &ok).is_some());
        assert!(allowed_origin(&config, "/webhooks/github", &ok).is_none());
        assert!(allowed_origin(&config, "/api/v1/tasks", &headers(&[("origin", "https://evil.example")])).is_none());
        assert!(allowed_origin(&Settings::default(), "/api/v1/tasks", &ok).is_none());
        let star = Settings::from_pairs([(ORIGINS, "*")]);
        assert!(allowed_origin(&star, "/api/v1/tasks", &ok).is_none());
    }
}
