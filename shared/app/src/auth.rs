//! Control-plane access: who is calling, what they may do, and which
//! browser origins may call at all.
//!
//! - `AGENT_ZERO_CONTROL_PLANE_TOKENS`: `name:token,...`; the `Authorization:
//!   Bearer <token>` header is compared to every token in constant time.
//!   None configured: every mutation answers 503 (fail closed).
//! - `AGENT_ZERO_CONTROL_PLANE_REPOSITORIES`: `owner/name,...` that
//!   `POST /api/v1/tasks` may target (ASCII case-insensitive). Empty: none.
//! - `AGENT_ZERO_CONTROL_PLANE_MODES`: `name:mode|mode,...`; a principal
//!   without a grant may request only `observe` and `suggest`.
//! - `AGENT_ZERO_CONTROL_PLANE_READS`: `open` or `token`: whether task reads
//!   need a valid token too. The default is `token` when the app has GitHub
//!   credentials (it can then read private repositories), `open` otherwise.
//!   The audit log always needs a token.
//! - `AGENT_ZERO_CONTROL_PLANE_ORIGINS`: exact origins (`https://host[:port]`)
//!   allowed to call `/api/v1/*` from a browser (CORS). Empty by default.
//!
//! A malformed variable answers 503 naming the variable, never its value.
//!
//! The JSON API (`/api/v1/*`) takes bearer tokens only, never the
//! dashboard's session cookie: a browser sends a cookie with any request a
//! page elsewhere makes it send, so a cookie-authenticated API would need
//! CSRF defences on every route. The dashboard's own forms carry those
//! (a CSRF token per session) and take the same path as the API.

use agent_zero_contracts::RunMode;
use agent_zero_evidence::RenderOptions;
use http::{HeaderMap, HeaderValue, header};
use subtle::ConstantTimeEq;

use crate::error::{ApiError, ErrorCode};
use crate::{Config, Settings};

pub(crate) const TOKENS: &str = "AGENT_ZERO_CONTROL_PLANE_TOKENS";
pub(crate) const REPOSITORIES: &str = "AGENT_ZERO_CONTROL_PLANE_REPOSITORIES";
pub(crate) const MODES: &str = "AGENT_ZERO_CONTROL_PLANE_MODES";
pub(crate) const READS: &str = "AGENT_ZERO_CONTROL_PLANE_READS";
pub(crate) const ORIGINS: &str = "AGENT_ZERO_CONTROL_PLANE_ORIGINS";

/// Modes a principal without a grant may request: neither can write.
const DEFAULT_MODES: &[RunMode] = &[RunMode::Observe, RunMode::Suggest];

/// An authenticated caller. Mutations record this name, never a wire field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Principal {
    pub(crate) name: String,
    pub(crate) modes: Vec<RunMode>,
}

impl Principal {
    /// Whether this principal may request `mode`.
    pub(crate) fn may_use(&self, mode: RunMode) -> bool {
        self.modes.contains(&mode)
    }
}

/// The parsed access policy.
#[derive(Clone)]
pub(crate) struct Access {
    principals: Vec<(String, Principal)>,
    repositories: Vec<String>,
    reads_need_token: bool,
}

impl std::fmt::Debug for Access {
    // Principal names only: tokens never reach a `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.principals.iter().map(|(_, p)| p.name.as_str()).collect();
        f.debug_struct("Access").field("principals", &names).field("repositories", &self.repositories).finish()
    }
}

fn misconfigured(variable: &str, why: &str) -> ApiError {
    ApiError::new(ErrorCode::NotConfigured, format!("{variable} is malformed: {why}")).with_field(variable)
}

impl Access {
    /// Parses the access variables. `Ok(None)`: no tokens configured.
    pub(crate) fn from_config(config: &Config) -> Result<Option<Self>, ApiError> {
        let reads_need_token = match config.get(READS).map(str::trim) {
            None => has_github_credentials(config),
            Some("open") => false,
            Some("token") => true,
            Some(_) => return Err(misconfigured(READS, "expected `open` or `token`")),
        };
        let Some(tokens) = config.get(TOKENS) else {
            return if !reads_need_token {
                Ok(None)
            } else if config.is_set(READS) {
                Err(ApiError::new(ErrorCode::NotConfigured, format!("{READS}=token needs {TOKENS}")).with_field(TOKENS))
            } else {
                Err(ApiError::new(
                    ErrorCode::NotConfigured,
                    format!(
                        "no control-plane principals: set {TOKENS} (`name:token,...`); task reads need a token because \
                         GitHub credentials are set (private repositories are readable), unless {READS}=open"
                    ),
                )
                .with_field(TOKENS))
            };
        };
        let grants = parse_grants(config.get(MODES).unwrap_or_default())?;
        let mut principals = Vec::new();
        for entry in tokens.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, token) = entry
                .split_once(':')
                .map(|(n, t)| (n.trim(), t.trim()))
                .filter(|(n, t)| !n.is_empty() && !t.is_empty())
                .ok_or_else(|| misconfigured(TOKENS, "entries must be `name:token`"))?;
            if !is_principal_name(name) {
                return Err(misconfigured(TOKENS, "names are 1 to 64 letters, digits, `.`, `_`, `-` or `@`"));
            }
            let modes =
                grants.iter().find(|(n, _)| n == name).map_or_else(|| DEFAULT_MODES.to_vec(), |(_, m)| m.clone());
            principals.push((token.to_owned(), Principal { name: name.to_owned(), modes }));
        }
        if principals.is_empty() {
            return Ok(None);
        }
        if let Some((name, _)) = grants.iter().find(|(n, _)| !principals.iter().any(|(_, p)| &p.name == n)) {
            return Err(misconfigured(MODES, &format!("grants modes to `{name}`, who has no token")));
        }
        let repositories = config
            .get(REPOSITORIES)
            .unwrap_or_default()
            .split(',')
            .map(|r| r.trim().to_ascii_lowercase())
            .filter(|r| !r.is_empty())
            .collect();
        Ok(Some(Self { principals, repositories, reads_need_token }))
    }

    /// The principal whose token is presented in `Authorization: Bearer`.
    /// Every configured token is compared, in constant time each.
    pub(crate) fn authenticate(&self, headers: &HeaderMap) -> Result<&Principal, ApiError> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(|| unauthorized("missing `Authorization: Bearer <token>`"))?;
        let mut found = None;
        for (token, principal) in &self.principals {
            if bool::from(token.as_bytes().ct_eq(presented.as_bytes())) && found.is_none() {
                found = Some(principal);
            }
        }
        found.ok_or_else(|| unauthorized("the bearer token matches no principal"))
    }

    /// Whether task creation may target `repository` (`owner/name`).
    pub(crate) fn may_target(&self, repository: &str) -> bool {
        let repository = repository.to_ascii_lowercase();
        self.repositories.contains(&repository)
    }

    /// Whether reads need a token.
    pub(crate) fn reads_need_token(&self) -> bool {
        self.reads_need_token
    }
}

/// Whether the app can read private repositories: a token, or a complete
/// GitHub App (its id and key).
fn has_github_credentials(config: &Config) -> bool {
    config.is_set("GITHUB_TOKEN") || (config.is_set("GITHUB_APP_ID") && config.is_set("GITHUB_APP_PRIVATE_KEY"))
}

fn unauthorized(message: &str) -> ApiError {
    let mut error = ApiError::new(ErrorCode::Unauthorized, message).with_field("Authorization");
    error.headers.push((header::WWW_AUTHENTICATE, "Bearer".to_owned()));
    error
}

fn is_principal_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'@'))
}

/// Parses `name:mode|mode,...`, refusing unknown modes rather than
/// silently widening or narrowing a grant.
fn parse_grants(text: &str) -> Result<Vec<(String, Vec<RunMode>)>, ApiError> {
    let mut grants = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, modes) = entry
            .split_once(':')
            .map(|(n, m)| (n.trim(), m))
            .filter(|(n, _)| !n.is_empty())
            .ok_or_else(|| misconfigured(MODES, "entries must be `name:mode|mode`"))?;
        let mut parsed = Vec::new();
        for mode in modes.split('|').map(str::trim).filter(|m| !m.is_empty()) {
            let mode = RunMode::parse(mode).ok_or_else(|| misconfigured(MODES, &format!("unknown mode `{mode}`")))?;
            parsed.push(mode);
        }
        if parsed.is_empty() {
            return Err(misconfigured(MODES, "entries must be `name:mode|mode`"));
        }
        grants.push((name.to_owned(), parsed));
    }
    Ok(grants)
}

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

/// Every value that must never be stored: the configured secrets and each
/// control-plane token on its own. Empty values are skipped.
pub(crate) fn secrets_of(config: &Config) -> Vec<String> {
    let mut secrets: Vec<String> = config.secret_values().into_iter().map(str::to_owned).collect();
    if let Some(tokens) = config.get(TOKENS) {
        secrets.extend(tokens.split(',').filter_map(|e| e.split_once(':')).map(|(_, t)| t.trim().to_owned()));
    }
    agent_zero_ports::order_secrets(&mut secrets);
    secrets
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

/// `AGENT_ZERO_CONTROL_PLANE_ORIGINS` as exact origins (`*` is never one).
pub(crate) fn origins_of(config: &Config) -> Vec<String> {
    config
        .get(ORIGINS)
        .unwrap_or_default()
        .split(',')
        .map(|o| o.trim().trim_end_matches('/'))
        .filter(|o| !o.is_empty() && *o != "*")
        .map(str::to_owned)
        .collect()
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
    fn parses_principals_grants_and_repositories() {
        let config = Config::from_pairs([
            (TOKENS, "alice:tok-alice-123, bob:tok-bob-456"),
            (MODES, "alice:fix|observe"),
            (REPOSITORIES, "Acme/Widgets, acme/tools"),
        ]);
        let access = Access::from_config(&config).unwrap().unwrap();
        let alice = access.authenticate(&headers(&[("authorization", "Bearer tok-alice-123")])).unwrap();
        assert_eq!(alice.name, "alice");
        assert!(alice.may_use(RunMode::Fix) && !alice.may_use(RunMode::Suggest));
        let bob = access.authenticate(&headers(&[("authorization", "Bearer tok-bob-456")])).unwrap();
        assert_eq!(bob.modes, DEFAULT_MODES);
        assert!(
            access.may_target("acme/widgets") && access.may_target("ACME/TOOLS") && !access.may_target("acme/other")
        );
        for bad in
            ["", "Bearer ", "Bearer tok-alice-12", "Bearer tok-alice-1234", "Basic tok-alice-123", "tok-alice-123"]
        {
            let e = access.authenticate(&headers(&[("authorization", bad)])).unwrap_err();
            assert_eq!(e.code, ErrorCode::Unauthorized, "{bad:?}");
        }
        assert!(!format!("{access:?}").contains("tok-"));
    }

    #[test]
    fn malformed_variables_name_the_variable_not_the_value() {
        let cases = [
            (vec![(TOKENS, "alice")], TOKENS),
            (vec![(TOKENS, "al ice:secret-x")], TOKENS),
            (vec![(TOKENS, "alice:secret-x"), (MODES, "alice:write")], MODES),
            (vec![(TOKENS, "alice:secret-x"), (MODES, "carol:fix")], MODES),
            (vec![(TOKENS, "alice:secret-x"), (READS, "maybe")], READS),
            (vec![(READS, "token")], TOKENS),
        ];
        for (pairs, variable) in cases {
            let e = Access::from_config(&Config::from_pairs(pairs.clone())).unwrap_err();
            assert_eq!((e.code, e.field.as_deref()), (ErrorCode::NotConfigured, Some(variable)), "{pairs:?}");
            assert!(!e.message.contains("secret-x"), "{}", e.message);
        }
        assert!(Access::from_config(&Config::default()).unwrap().is_none());
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
