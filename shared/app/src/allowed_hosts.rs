//! Spin's `allowed_outbound_hosts`, checked against what the configuration
//! will call: a host missing from the list fails every request to it at
//! run time (`HttpRequestDenied`), so it is named before any task starts
//! (health, and task creation's 503) instead.
//!
//! An entry may be a template over the application's variables, as Spin
//! allows (`"{{ agent_zero_model_origin }}"`): it is resolved with the
//! component's variable of the same name, and one that resolves to nothing
//! is skipped, as Spin skips it. Our `spin.toml` lists one such entry per
//! configurable destination ([`ORIGIN_VARIABLES`]), so a GitHub Enterprise
//! API, an OpenAI-compatible endpoint or a `custom` sandbox is allowed by
//! setting a variable, without editing the manifest. Loopback destinations
//! are checked like any other: Spin checks them too.
//!
//! The matching follows Spin's (spinframework/spin 94a8fc8,
//! `crates/outbound-networking-config/src/allowed_hosts.rs`): an entry is
//! `scheme://host[:port]`; `*` stands for any scheme, host or port; a host
//! starting with `*.` matches any subdomain; a missing port is the scheme's
//! well-known one (80, 443).

use crate::Config;

/// The variable that names a URL, and the variable whose value (an origin,
/// `scheme://host[:port]`) `spin.toml` lists as an allowed outbound host
/// for it.
pub const ORIGIN_VARIABLES: &[(&str, &str)] = &[
    ("GITHUB_API_URL", "AGENT_ZERO_FORGE_ORIGIN"),
    ("GITEA_URL", "AGENT_ZERO_GITEA_ORIGIN"),
    ("GITLAB_URL", "AGENT_ZERO_GITLAB_ORIGIN"),
    ("AGENT_ZERO_MODEL_BASE_URL", "AGENT_ZERO_MODEL_ORIGIN"),
    ("AGENT_ZERO_SANDBOX_URL", "AGENT_ZERO_SANDBOX_ORIGIN"),
    ("AGENT_ZERO_DASHBOARD_GITHUB_URL", "AGENT_ZERO_DASHBOARD_GITHUB_ORIGIN"),
];

/// The origin variable beside the URL variable `variable`, if it has one.
fn origin_variable(variable: &str) -> Option<&'static str> {
    ORIGIN_VARIABLES.iter().find(|(url, _)| *url == variable).map(|(_, origin)| *origin)
}

/// The URLs this configuration will call, each with the variable that
/// names it (or, for a fixed vendor URL, the variable that chose the vendor).
pub(crate) fn destinations(config: &Config) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let github = config.get("GITHUB_API_URL").map_or("https://api.github.com", str::trim).to_owned();
    let github_com = github.trim_end_matches('/') == "https://api.github.com";
    out.push(("GITHUB_API_URL", github));
    if let Some(gitea) = config.get("GITEA_URL") {
        out.push(("GITEA_URL", gitea.trim().to_owned()));
    }
    // gitlab.com unless `GITLAB_URL` names a self-managed instance; called
    // only when GitLab's run path has its token.
    if config.is_set("GITLAB_TOKEN") {
        let gitlab = config.get("GITLAB_URL").map_or(crate::forge_settings::DEFAULT_GITLAB_URL, str::trim);
        out.push(("GITLAB_URL", gitlab.to_owned()));
    }
    match config.get("AGENT_ZERO_MODEL_BASE_URL") {
        Some(base) => out.push(("AGENT_ZERO_MODEL_BASE_URL", base.trim().to_owned())),
        None => {
            for (variable, url) in [
                ("OPENAI_API_KEY", "https://api.openai.com"),
                ("ANTHROPIC_API_KEY", "https://api.anthropic.com"),
                ("GOOGLE_GENERATIVE_AI_API_KEY", "https://generativelanguage.googleapis.com"),
                ("AI_GATEWAY_API_KEY", "https://ai-gateway.vercel.sh"),
            ] {
                if config.is_set(variable) {
                    out.push((variable, url.to_owned()));
                }
            }
        }
    }
    let provider = config.get("AGENT_ZERO_SANDBOX_PROVIDER").map(str::trim);
    if let Some(url) = config.get("AGENT_ZERO_SANDBOX_URL") {
        out.push(("AGENT_ZERO_SANDBOX_URL", url.trim().to_owned()));
    }
    let vendor = match provider {
        Some("e2b") => Some("https://api.e2b.app"),
        Some("daytona") => Some("https://app.daytona.io"),
        Some("vercel") => Some("https://vercel.com"),
        _ => None,
    };
    if let Some(url) = vendor {
        out.push(("AGENT_ZERO_SANDBOX_PROVIDER", url.to_owned()));
    }
    // The edge downloads a commit's archive itself for the sandboxes that
    // take no link; on github.com the link is on codeload.
    let credentials = config.is_set("GITHUB_TOKEN") || config.is_set("GITHUB_APP_ID");
    if credentials && github_com && matches!(provider, Some("e2b" | "daytona" | "cloudflare")) {
        out.push(("AGENT_ZERO_SANDBOX_PROVIDER", "https://codeload.github.com".to_owned()));
    }
    out
}

/// Each destination of `config` that `allowed` (a component's
/// `allowed_outbound_hosts`, templates resolved with `config`) does not let
/// through: the variable, and why.
pub(crate) fn missing(config: &Config, allowed: &[&str], component: &str) -> Vec<(&'static str, String)> {
    let allowed: Vec<String> = allowed.iter().filter_map(|entry| resolve(entry, config)).collect();
    destinations(config)
        .into_iter()
        .filter_map(|(variable, url)| {
            let origin = origin(&url)?;
            (!allowed.iter().any(|pattern| matches(pattern, &origin))).then(|| {
                let entry = origin.entry();
                let fix = match origin_variable(variable) {
                    Some(origin_variable) => format!(
                        "set the variable `{}` to \"{entry}\" (or add \"{entry}\" there, then rebuild and deploy)",
                        origin_variable.to_ascii_lowercase()
                    ),
                    None => format!("add \"{entry}\" there, then rebuild and deploy"),
                };
                (
                    variable,
                    format!(
                        "`{variable}` makes the app call {entry}, which the `{component}` component's allowed_outbound_hosts in spin.toml does not list: {fix}"
                    ),
                )
            })
        })
        .collect()
}

/// One `allowed_outbound_hosts` entry with its `{{ name }}` references
/// replaced by the variables' values in `config`; `None` when it resolves
/// to nothing (an unset variable), which Spin skips (its `parse_or_skip`).
fn resolve(entry: &str, config: &Config) -> Option<String> {
    let mut out = String::new();
    let mut rest = entry;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}")? + start;
        let name = rest[start + 2..end].trim().to_ascii_uppercase();
        out.push_str(config.get(&name).map_or("", str::trim));
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    let out = out.trim().to_owned();
    (!out.is_empty() && out != "http://" && out != "https://").then_some(out)
}

/// A URL's scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    /// How it is written in `allowed_outbound_hosts` (the port only when
    /// it is not the scheme's own).
    fn entry(&self) -> String {
        match well_known_port(&self.scheme) {
            Some(port) if port == self.port => format!("{}://{}", self.scheme, self.host),
            _ => format!("{}://{}:{}", self.scheme, self.host, self.port),
        }
    }
}

fn well_known_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// The origin of `url`, or `None` when it is not `scheme://host[:port][/...]`.
fn origin(url: &str) -> Option<Origin> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || port.is_empty() => (host, port.parse().ok()?),
        _ => (authority, well_known_port(scheme)?),
    };
    (!host.is_empty()).then(|| Origin { scheme: scheme.to_ascii_lowercase(), host: host.to_ascii_lowercase(), port })
}

/// Whether one `allowed_outbound_hosts` entry lets `origin` through.
fn matches(pattern: &str, origin: &Origin) -> bool {
    let Some((scheme, rest)) = pattern.trim().split_once("://") else { return false };
    let rest = rest.trim_end_matches('/');
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() => (host, Some(port)),
        _ => (rest, None),
    };
    let scheme_ok = scheme == "*" || scheme.eq_ignore_ascii_case(&origin.scheme);
    let host = host.to_ascii_lowercase();
    let host_ok = host == "*"
        || host == origin.host
        || host.strip_prefix("*.").is_some_and(|domain| origin.host.ends_with(&format!(".{domain}")));
    let port_ok = match port {
        Some("*") => true,
        Some(port) => port.parse() == Ok(origin.port),
        None => well_known_port(&origin.scheme) == Some(origin.port) && scheme != "*",
    };
    scheme_ok && host_ok && port_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(pattern: &str, url: &str) -> bool {
        matches(pattern, &origin(url).expect("a URL"))
    }

    #[test]
    fn entries_match_as_spin_matches_them() {
        assert!(allows("https://api.github.com", "https://api.github.com/repos/a/b"));
        assert!(!allows("https://api.github.com", "http://api.github.com"));
        assert!(!allows("https://api.github.com", "https://api.github.com:8443"));
        assert!(allows("https://api.github.com:8443", "https://api.github.com:8443/x"));
        assert!(allows("http://127.0.0.1:*", "http://127.0.0.1:4123"));
        assert!(!allows("http://127.0.0.1:*", "http://127.0.0.2:4123"));
        assert!(allows("https://*.e2b.app", "https://49983-abc.e2b.app/files"));
        assert!(!allows("https://*.e2b.app", "https://e2b.app"));
        assert!(!allows("https://*.e2b.app", "https://evil-e2b.app"));
        assert!(allows("*://*:*", "http://anything:1"));
        assert!(!allows("not a pattern", "https://api.github.com"));
    }

    #[test]
    fn a_configured_host_missing_from_the_list_is_named_with_its_variable() {
        let config = Config::from_pairs([
            ("GITHUB_TOKEN", "t"),
            ("OPENAI_API_KEY", "k"),
            ("AGENT_ZERO_SANDBOX_PROVIDER", "e2b"),
            ("E2B_API_KEY", "e"),
        ]);
        let spin_toml = ["https://api.github.com", "https://api.openai.com", "https://api.e2b.app"];
        let absent = missing(&config, &spin_toml, "agent-zero-ticks");
        assert_eq!(absent.len(), 1, "{absent:?}");
        assert_eq!(absent[0].0, "AGENT_ZERO_SANDBOX_PROVIDER");
        assert!(absent[0].1.contains("\"https://codeload.github.com\""), "{}", absent[0].1);

        let custom = Config::from_pairs([
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
            ("AGENT_ZERO_SANDBOX_URL", "https://sandbox.example.com:8443/v1"),
            ("AGENT_ZERO_MODEL_BASE_URL", "http://models.internal.example:11434/v1"),
            ("GITHUB_API_URL", "https://ghe.example.com/api/v3"),
        ]);
        let named: Vec<&str> = missing(&custom, &["https://api.github.com"], "agent-zero-ticks")
            .into_iter()
            .map(|(variable, message)| {
                assert!(message.contains("spin.toml"), "{message}");
                variable
            })
            .collect();
        assert_eq!(named, ["GITHUB_API_URL", "AGENT_ZERO_MODEL_BASE_URL", "AGENT_ZERO_SANDBOX_URL"]);
        let listed =
            ["https://ghe.example.com", "http://models.internal.example:11434", "https://sandbox.example.com:8443"];
        assert!(missing(&custom, &listed, "agent-zero-ticks").is_empty());
        // Loopback stand-ins are checked as Spin checks them.
        let local = Config::from_pairs([
            ("GITHUB_API_URL", "http://127.0.0.1:4000/"),
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
            ("AGENT_ZERO_SANDBOX_URL", "http://localhost:8787"),
        ]);
        let named: Vec<&str> = missing(&local, &[], "agent-zero-ticks").into_iter().map(|(v, _)| v).collect();
        assert_eq!(named, ["GITHUB_API_URL", "AGENT_ZERO_SANDBOX_URL"]);
    }

    /// Our spin.toml's entries for configurable destinations are templates
    /// over origin variables: set, they allow the origin; unset, they are
    /// skipped, and the message names the variable to set.
    #[test]
    fn templated_entries_resolve_with_the_origin_variables() {
        let templated = ["https://api.github.com", "{{ agent_zero_model_origin }}", "{{agent_zero_sandbox_origin}}"];
        let unset = Config::from_pairs([
            ("AGENT_ZERO_MODEL_BASE_URL", "http://127.0.0.1:4100/v1"),
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
            ("AGENT_ZERO_SANDBOX_URL", "https://sandbox.example.com"),
        ]);
        let absent = missing(&unset, &templated, "agent-zero-ticks");
        let named: Vec<&str> = absent.iter().map(|(v, _)| *v).collect();
        assert_eq!(named, ["AGENT_ZERO_MODEL_BASE_URL", "AGENT_ZERO_SANDBOX_URL"]);
        assert!(
            absent[0].1.contains("set the variable `agent_zero_model_origin` to \"http://127.0.0.1:4100\""),
            "{}",
            absent[0].1
        );
        let set = Config::from_pairs([
            ("AGENT_ZERO_MODEL_BASE_URL", "http://127.0.0.1:4100/v1"),
            ("AGENT_ZERO_MODEL_ORIGIN", "http://127.0.0.1:4100"),
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
            ("AGENT_ZERO_SANDBOX_URL", "https://sandbox.example.com"),
            ("AGENT_ZERO_SANDBOX_ORIGIN", "https://sandbox.example.com"),
        ]);
        assert!(missing(&set, &templated, "agent-zero-ticks").is_empty());
        // Another port on the same host is another origin.
        let other_port = Config::from_pairs([
            ("AGENT_ZERO_MODEL_BASE_URL", "http://127.0.0.1:4101/v1"),
            ("AGENT_ZERO_MODEL_ORIGIN", "http://127.0.0.1:4100"),
        ]);
        assert_eq!(missing(&other_port, &templated, "agent-zero-ticks").len(), 1);
        assert_eq!(resolve("{{ unset }}", &set), None);
        assert_eq!(resolve("https://{{ unset }}", &set), None, "Spin skips a bare scheme");
    }
}
