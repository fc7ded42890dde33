//! Control-plane access as the settings parse it: who may call, what they
//! may do, and which browser origins may call at all ([`crate::auth`]
//! checks each request against it).
//!
//! - `AGENT_ZERO_CONTROL_PLANE_TOKENS`: `name:token,...`; the `Authorization:
//!   Bearer <token>` header is compared to every token in constant time.
//!   None configured: every mutation answers 503 (fail closed).
//! - `AGENT_ZERO_CONTROL_PLANE_REPOSITORIES`: `owner/name,...` that
//!   `POST /api/v1/tasks` may target (ASCII case-insensitive); another
//!   forge's with its name first (`gitlab:group/project`, `gitea:owner/name`,
//!   `forgejo:owner/name`). Empty: none.
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

use agent_zero_contracts::{ForgeKind, RunMode};
use http::{HeaderMap, header};
use subtle::ConstantTimeEq;

use crate::Config;
use crate::error::{ApiError, ErrorCode};

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

    /// Whether task creation may target `repository` on `forge`: GitHub's
    /// `owner/name` is granted as itself, another forge's path with the
    /// forge's name before it (`gitlab:group/project`, `gitea:owner/name`,
    /// `forgejo:owner/name`), so a grant never carries over to a namesake
    /// on another forge.
    pub(crate) fn may_target(&self, forge: ForgeKind, repository: &str) -> bool {
        let repository = match forge {
            ForgeKind::GitHub => repository.to_ascii_lowercase(),
            other => format!("{}:{}", other.as_str(), repository.to_ascii_lowercase()),
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, http::HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn parses_principals_grants_and_repositories() {
        let config = Config::from_pairs([
            (TOKENS, "alice:tok-alice-123, bob:tok-bob-456"),
            (MODES, "alice:fix|observe"),
            (REPOSITORIES, "Acme/Widgets, acme/tools, gitlab:Acme/Sub/Widgets, gitea:acme/gadgets"),
        ]);
        let access = Access::from_config(&config).unwrap().unwrap();
        let alice = access.authenticate(&headers(&[("authorization", "Bearer tok-alice-123")])).unwrap();
        assert_eq!(alice.name, "alice");
        assert!(alice.may_use(RunMode::Fix) && !alice.may_use(RunMode::Suggest));
        let bob = access.authenticate(&headers(&[("authorization", "Bearer tok-bob-456")])).unwrap();
        assert_eq!(bob.modes, DEFAULT_MODES);
        assert!(
            access.may_target(ForgeKind::GitHub, "acme/widgets")
                && access.may_target(ForgeKind::GitHub, "ACME/TOOLS")
                && !access.may_target(ForgeKind::GitHub, "acme/other")
        );
        // Another forge's repository is granted with its forge's name, and
        // a GitHub grant never carries over to a namesake elsewhere.
        assert!(!access.may_target(ForgeKind::GitLab, "acme/widgets"));
        assert!(access.may_target(ForgeKind::GitLab, "acme/sub/widgets"));
        assert!(
            access.may_target(ForgeKind::Gitea, "Acme/Gadgets")
                && !access.may_target(ForgeKind::Forgejo, "acme/gadgets")
        );
        assert!(!access.may_target(ForgeKind::GitHub, "acme/gadgets"));
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
}
