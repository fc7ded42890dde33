//! The dashboard's operator settings: the GitHub OAuth app, who may sign
//! in (users and organisations, each with its mode grants and the
//! repositories they cover), and the key that signs sessions. Pure:
//! configuration in, settings or the error naming the variable (and the
//! bad grant entry) out.

use agent_zero_contracts::RunMode;

use super::scope::{Access, Grant, Pattern, is_github_login};
use crate::Config;
use crate::error::{ApiError, ErrorCode};

pub(crate) const CLIENT_ID: &str = "AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID";
pub(crate) const CLIENT_SECRET: &str = "AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET";
pub(crate) const SESSION_KEY: &str = "AGENT_ZERO_DASHBOARD_SESSION_KEY";
pub(crate) const USERS: &str = "AGENT_ZERO_DASHBOARD_USERS";
pub(crate) const ORGS: &str = "AGENT_ZERO_DASHBOARD_ORGS";
pub(crate) const GITHUB_URL: &str = "AGENT_ZERO_DASHBOARD_GITHUB_URL";

/// Every dashboard variable; setting any of them turns the dashboard on.
pub(crate) const VARIABLES: &[&str] = &[CLIENT_ID, CLIENT_SECRET, SESSION_KEY, USERS, ORGS, GITHUB_URL];

/// Fewest bytes of a session key (HMAC-SHA256 wants 32).
const MIN_KEY_BYTES: usize = 32;

/// Modes a signed-in person without a grant may use: neither writes.
pub(crate) const DEFAULT_MODES: &[RunMode] = &[RunMode::Observe, RunMode::Suggest];

/// The parsed dashboard settings.
#[derive(Clone)]
pub(crate) struct DashboardSettings {
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
    pub(crate) session_key: Vec<u8>,
    pub(crate) users: Vec<Grant>,
    pub(crate) orgs: Vec<Grant>,
    /// Where people sign in (`https://github.com`), no trailing `/`.
    pub(crate) github_url: String,
    /// The REST API (`GITHUB_API_URL`), no trailing `/`.
    pub(crate) api_url: String,
}

impl std::fmt::Debug for DashboardSettings {
    // The secret and the key never reach a `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DashboardSettings")
            .field("client_id", &self.client_id)
            .field("users", &self.users)
            .field("orgs", &self.orgs)
            .field("github_url", &self.github_url)
            .finish_non_exhaustive()
    }
}

fn malformed(variable: &str, why: &str) -> ApiError {
    ApiError::new(ErrorCode::NotConfigured, format!("{variable} is malformed: {why}")).with_field(variable)
}

fn missing(variable: &str, why: &str) -> ApiError {
    ApiError::new(ErrorCode::NotConfigured, format!("{variable} is not set: {why}")).with_field(variable)
}

impl DashboardSettings {
    /// `Ok(None)`: no dashboard variable is set (the dashboard is off).
    pub(crate) fn from_config(config: &Config) -> Result<Option<Self>, ApiError> {
        if !VARIABLES.iter().any(|v| config.is_set(v)) {
            return Ok(None);
        }
        let client_id = config
            .get(CLIENT_ID)
            .map(str::trim)
            .ok_or_else(|| missing(CLIENT_ID, "the client id of the GitHub OAuth app people sign in with"))?;
        if !client_id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
            return Err(malformed(CLIENT_ID, "letters, digits, `.`, `_` and `-` only"));
        }
        let client_secret = config
            .get(CLIENT_SECRET)
            .map(str::trim)
            .ok_or_else(|| missing(CLIENT_SECRET, "the OAuth app's client secret"))?;
        let session_key = config.get(SESSION_KEY).map(str::trim).ok_or_else(|| {
            missing(SESSION_KEY, &format!("at least {MIN_KEY_BYTES} random bytes that sign sessions"))
        })?;
        if session_key.len() < MIN_KEY_BYTES {
            return Err(malformed(SESSION_KEY, &format!("at least {MIN_KEY_BYTES} bytes")));
        }
        let users = parse_grants(USERS, config.get(USERS).unwrap_or_default(), false)?;
        let orgs = parse_grants(ORGS, config.get(ORGS).unwrap_or_default(), true)?;
        if users.is_empty() && orgs.is_empty() {
            return Err(missing(
                USERS,
                &format!("nobody may sign in: list GitHub users here or organisations in {ORGS}"),
            ));
        }
        let api_url = base_url("GITHUB_API_URL", config.get("GITHUB_API_URL").unwrap_or("https://api.github.com"))?;
        let github_url = match config.get(GITHUB_URL) {
            Some(url) => base_url(GITHUB_URL, url)?,
            None => web_url_of(&api_url),
        };
        Ok(Some(Self {
            client_id: client_id.to_owned(),
            client_secret: client_secret.to_owned(),
            session_key: session_key.as_bytes().to_vec(),
            users,
            orgs,
            github_url,
            api_url,
        }))
    }

    /// What user `login` (numeric `user_id`), a member of `orgs`, may do:
    /// its user grant and those organisations' grants; `None` when none
    /// names it. A grant pinned to an id matches that account whatever its
    /// login is now, and no other account of that login.
    pub(crate) fn access_of(&self, login: &str, user_id: u64, orgs: &[String]) -> Option<Access<'_>> {
        let login = login.to_ascii_lowercase();
        let users = self.users.iter().filter(|g| g.id.map_or(g.login == login, |id| id == user_id));
        let orgs = self.orgs.iter().filter(|g| orgs.iter().any(|o| o.eq_ignore_ascii_case(&g.login)));
        let grants: Vec<&Grant> = users.chain(orgs).collect();
        (!grants.is_empty()).then(|| Access { name: format!("github:{login}"), grants })
    }

    /// The grant's login of the organisation `login` (numeric `id`) when one
    /// allows it: by id when the grant is pinned, else by name.
    pub(crate) fn allowed_org(&self, login: &str, id: u64) -> Option<&str> {
        self.orgs
            .iter()
            .find(|g| g.id.map_or(g.login.eq_ignore_ascii_case(login), |pinned| pinned == id))
            .map(|g| g.login.as_str())
    }
}

/// `login[#id][:mode|mode][@repo|repo],...` (`repo`: `owner/name`,
/// `owner/*` or `*`); a login without modes gets [`DEFAULT_MODES`], without
/// a scope every repository for a user, its own for an organisation.
fn parse_grants(variable: &str, text: &str, organisations: bool) -> Result<Vec<Grant>, ApiError> {
    let mut grants = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match parse_grant(entry, organisations) {
            Ok(grant) => grants.push(grant),
            Err(why) => return Err(malformed(variable, &format!("entry `{entry}`: {why}"))),
        }
    }
    Ok(grants)
}

/// One grant, or why it is not one.
fn parse_grant(entry: &str, organisations: bool) -> Result<Grant, String> {
    let (head, scope) = entry.split_once('@').map_or((entry, None), |(h, s)| (h.trim(), Some(s)));
    let (account, modes) = head.split_once(':').map_or((head, None), |(l, m)| (l.trim(), Some(m)));
    let (login, id) = match account.split_once('#') {
        Some((login, id)) => match id.trim().parse::<u64>() {
            Ok(id) if id > 0 => (login.trim(), Some(id)),
            _ => return Err("`login#id` needs the account's numeric id (GET /users/{login})".into()),
        },
        None => (account, None),
    };
    if !is_github_login(login) {
        return Err("entries are `login[#id][:mode|mode][@owner/name|owner/*|*]`, with a GitHub login".into());
    }
    let modes = match modes {
        None => DEFAULT_MODES.to_vec(),
        Some(modes) => {
            let mut parsed = Vec::new();
            for mode in modes.split('|').map(str::trim).filter(|m| !m.is_empty()) {
                parsed.push(RunMode::parse(mode).ok_or_else(|| format!("unknown mode `{mode}`"))?);
            }
            if parsed.is_empty() {
                return Err("`login:` needs at least one mode".into());
            }
            parsed
        }
    };
    let login = login.to_ascii_lowercase();
    let scope = match scope {
        None if organisations => vec![Pattern::Owner(agent_zero_contracts::ForgeKind::GitHub, login.clone())],
        None => vec![Pattern::All],
        Some(scope) => {
            let mut patterns = Vec::new();
            for pattern in scope.split('|') {
                match Pattern::parse(pattern) {
                    Some(pattern) => patterns.push(pattern),
                    None => {
                        return Err(format!(
                            "`@{scope}` is not `[forge:]owner/name`, `[forge:]owner/*` or `*` separated by `|` (forge: gitlab, gitea or forgejo; modes go before `@`)"
                        ));
                    }
                }
            }
            patterns
        }
    };
    Ok(Grant { login, id, modes, scope })
}

fn base_url(variable: &str, url: &str) -> Result<String, ApiError> {
    let url = url.trim().trim_end_matches('/');
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') && !rest.contains(['?', '#', '@', ' ']) => {
            Ok(url.to_owned())
        }
        _ => Err(malformed(variable, "an http(s) URL with a host and no query, fragment or user info")),
    }
}

/// Where people sign in for an API base: `api.github.com` → `github.com`,
/// GitHub Enterprise Server's `https://HOST/api/v3` → `https://HOST`, GHE.com
/// `api.SUB.ghe.com` → `SUB.ghe.com`; anything else serves both.
fn web_url_of(api_url: &str) -> String {
    if let Some(host) = api_url.strip_prefix("https://api.")
        && (host == "github.com" || host.ends_with(".ghe.com"))
    {
        return format!("https://{host}");
    }
    api_url.strip_suffix("/api/v3").unwrap_or(api_url).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0123456789abcdef0123456789abcdef";

    fn settings(extra: &[(&'static str, &'static str)]) -> Result<Option<DashboardSettings>, ApiError> {
        let mut pairs = vec![(CLIENT_ID, "Iv1.abc123"), (CLIENT_SECRET, "shh-client-secret"), (SESSION_KEY, KEY)];
        pairs.extend_from_slice(extra);
        DashboardSettings::from_config(&Config::from_pairs(pairs))
    }

    /// The modes `login` (`id`, a member of `orgs`) has on a task of
    /// `repository`; `None` when no grant names it.
    fn modes_of(s: &DashboardSettings, login: &str, id: u64, orgs: &[&str], repository: &str) -> Option<Vec<RunMode>> {
        let orgs: Vec<String> = orgs.iter().map(|o| (*o).to_owned()).collect();
        s.access_of(login, id, &orgs)
            .map(|a| a.principal_for(agent_zero_contracts::ForgeKind::GitHub, repository).modes)
    }

    #[test]
    fn off_unless_a_variable_is_set() {
        assert!(DashboardSettings::from_config(&Config::default()).unwrap().is_none());
    }

    /// A grant pinned to an account id follows the account: a renamed
    /// account keeps it, and whoever takes its old login gets nothing.
    #[test]
    fn a_pinned_grant_follows_the_account_not_the_login() {
        let s = settings(&[(USERS, "octocat#583231:fix"), (ORGS, "acme#9919:suggest")]).unwrap().unwrap();
        assert_eq!(modes_of(&s, "octocat", 583_231, &[], "o/r"), Some(vec![RunMode::Fix]));
        assert_eq!(modes_of(&s, "octocat-renamed", 583_231, &[], "o/r"), Some(vec![RunMode::Fix]));
        assert_eq!(modes_of(&s, "octocat", 999, &[], "o/r"), None, "another account under the released login");
        assert_eq!(s.allowed_org("acme", 9919), Some("acme"));
        assert_eq!(s.allowed_org("acme", 1), None, "another organisation under the released name");
        assert_eq!(s.allowed_org("acme-renamed", 9919), Some("acme"));
        for bad in ["octocat#", "octocat#abc", "octocat#0", "#5"] {
            let error = settings(&[(USERS, bad)]).expect_err(bad);
            assert_eq!(error.field.as_deref(), Some(USERS), "{bad}: {}", error.message);
        }
    }

    #[test]
    fn grants_from_users_and_organisations_are_unioned() {
        let s = settings(&[(USERS, "Octocat:fix|observe, hubot"), (ORGS, "acme:suggest|autonomous")]).unwrap().unwrap();
        assert_eq!(modes_of(&s, "octocat", 1, &[], "o/r"), Some(vec![RunMode::Fix, RunMode::Observe]));
        assert_eq!(modes_of(&s, "HUBOT", 2, &[], "o/r"), Some(DEFAULT_MODES.to_vec()));
        assert_eq!(
            modes_of(&s, "octocat", 1, &["ACME"], "acme/widgets"),
            Some(vec![RunMode::Fix, RunMode::Observe, RunMode::Suggest, RunMode::Autonomous])
        );
        // An organisation's grant covers its own repositories only.
        assert_eq!(modes_of(&s, "octocat", 1, &["ACME"], "other/widgets"), Some(vec![RunMode::Fix, RunMode::Observe]));
        assert_eq!(
            modes_of(&s, "mallory", 3, &["acme"], "acme/widgets"),
            Some(vec![RunMode::Suggest, RunMode::Autonomous])
        );
        assert_eq!(modes_of(&s, "mallory", 3, &["acme"], "other/widgets"), Some(vec![]));
        assert_eq!(modes_of(&s, "mallory", 3, &["other"], "other/widgets"), None);
        assert_eq!((s.github_url.as_str(), s.api_url.as_str()), ("https://github.com", "https://api.github.com"));
        assert!(!format!("{s:?}").contains("shh") && !format!("{s:?}").contains(KEY));
    }

    /// `@scope` limits a grant to repositories; without it a user grant
    /// covers all and an organisation grant its own repositories.
    #[test]
    fn grants_are_scoped_to_repositories() {
        let s = settings(&[
            (USERS, "alice#7:fix@acme/widgets|Acme/tools, bob@beta/*, carol, dave:observe@*"),
            (ORGS, "acme:observe, ops#12:suggest@acme/*|beta/api"),
        ])
        .unwrap()
        .unwrap();
        let covers = |login: &str, id: u64, orgs: &[&str], repository: &str| {
            let orgs: Vec<String> = orgs.iter().map(|o| (*o).to_owned()).collect();
            s.access_of(login, id, &orgs).is_some_and(|a| a.covers(agent_zero_contracts::ForgeKind::GitHub, repository))
        };
        assert!(covers("alice", 7, &[], "acme/widgets") && covers("alice", 7, &[], "ACME/Tools"));
        assert!(!covers("alice", 7, &[], "acme/secret") && !covers("alice", 7, &[], "beta/widgets"));
        assert!(covers("bob", 2, &[], "beta/anything") && !covers("bob", 2, &[], "acme/widgets"));
        assert!(covers("carol", 3, &[], "anyone/anything"), "a user grant without a scope covers all");
        assert!(covers("dave", 4, &[], "anyone/anything"));
        assert!(covers("eve", 5, &["acme"], "acme/widgets") && !covers("eve", 5, &["acme"], "beta/api"));
        assert!(covers("eve", 5, &["ops"], "beta/api") && !covers("eve", 5, &["ops"], "beta/other"));
        // Modes are those of the grants that cover the repository.
        assert_eq!(modes_of(&s, "alice", 7, &["acme"], "acme/widgets"), Some(vec![RunMode::Fix, RunMode::Observe]));
        assert_eq!(modes_of(&s, "alice", 7, &["acme"], "acme/secret"), Some(vec![RunMode::Observe]));
        let access = |login: &str, id: u64, orgs: &[&str]| {
            let orgs: Vec<String> = orgs.iter().map(|o| (*o).to_owned()).collect();
            s.access_of(login, id, &orgs).map(|a| (a.covers_all(), a.only_repository().map(str::to_owned)))
        };
        assert_eq!(access("carol", 3, &[]), Some((true, None)));
        assert_eq!(access("alice", 7, &[]), Some((false, None)));
        let one = settings(&[(USERS, "alice@acme/widgets")]).unwrap().unwrap();
        let alice = one.access_of("alice", 7, &[]).unwrap();
        assert_eq!((alice.covers_all(), alice.only_repository()), (false, Some("acme/widgets")));
    }

    /// A malformed grant names its variable and the entry, so the
    /// operator can find it among the others.
    #[test]
    fn a_malformed_grant_names_the_variable_and_the_entry() {
        for (variable, entry) in [
            (USERS, "alice@acme"),
            (USERS, "alice@acme/wid gets"),
            (USERS, "alice@"),
            (USERS, "alice@acme/x:fix"),
            (USERS, "alice@acme/x||beta/y"),
            (ORGS, "acme:observe@acme/*/x"),
            (ORGS, "acme@**"),
        ] {
            let text = format!("carol, {entry}");
            let config = Config::from_pairs([
                (CLIENT_ID, "Iv1.abc123"),
                (CLIENT_SECRET, "shh-client-secret"),
                (SESSION_KEY, KEY),
                (variable, text.as_str()),
            ]);
            let e = DashboardSettings::from_config(&config).unwrap_err();
            assert_eq!((e.code, e.field.as_deref()), (ErrorCode::NotConfigured, Some(variable)), "{entry}");
            assert!(e.message.contains(&format!("entry `{entry}`")) && !e.message.contains("carol"), "{}", e.message);
        }
    }

    #[test]
    fn the_sign_in_host_follows_the_api() {
        let s = settings(&[(USERS, "a"), ("GITHUB_API_URL", "https://ghe.example/api/v3/")]).unwrap().unwrap();
        assert_eq!(s.github_url, "https://ghe.example");
        let s = settings(&[(USERS, "a"), ("GITHUB_API_URL", "http://127.0.0.1:4000")]).unwrap().unwrap();
        assert_eq!(s.github_url, "http://127.0.0.1:4000");
        let s = settings(&[(USERS, "a"), (GITHUB_URL, "https://sso.example/")]).unwrap().unwrap();
        assert_eq!(s.github_url, "https://sso.example");
    }

    #[test]
    fn malformed_settings_name_the_variable_never_the_value() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[(USERS, "a")], CLIENT_ID),
            (&[(CLIENT_ID, "x"), (USERS, "a")], CLIENT_SECRET),
            (&[(CLIENT_ID, "x"), (CLIENT_SECRET, "shh-client-secret"), (USERS, "a")], SESSION_KEY),
            (&[(CLIENT_ID, "x"), (CLIENT_SECRET, "shh-client-secret"), (SESSION_KEY, "shh-short")], SESSION_KEY),
        ];
        for (pairs, variable) in cases {
            let e = DashboardSettings::from_config(&Config::from_pairs(pairs.iter().copied())).unwrap_err();
            assert_eq!((e.code, e.field.as_deref()), (ErrorCode::NotConfigured, Some(*variable)), "{pairs:?}");
            assert!(!e.message.contains("shh"), "{}", e.message);
        }
        for (extra, variable) in [
            (&[][..], USERS),
            (&[(USERS, "bad login!")][..], USERS),
            (&[(USERS, "a:write")][..], USERS),
            (&[(USERS, "a:")][..], USERS),
            (&[(ORGS, "-acme")][..], ORGS),
            (&[(USERS, "a"), (GITHUB_URL, "ftp://x")][..], GITHUB_URL),
            (&[(USERS, "a"), (CLIENT_ID, "a b")][..], CLIENT_ID),
        ] {
            let e = settings(extra).unwrap_err();
            assert_eq!((e.code, e.field.as_deref()), (ErrorCode::NotConfigured, Some(variable)), "{extra:?}");
        }
    }
}
