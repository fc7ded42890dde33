//! Spin's `allowed_outbound_hosts`, checked against what the configuration
//! will call: a host missing from the list fails every request to it at
//! run time (`HttpRequestDenied`), so it is named before any task starts
//! (health, and task creation's 503) instead.
//!
//! A loopback destination (`127.0.0.0/8`, `localhost`, `[::1]`) is not
//! checked: it is a developer's stand-in on their own machine (the
//! end-to-end harness lists `http://127.0.0.1:*` in its copy of the
//! manifest), never a hosted platform's.
//!
//! The matching follows Spin's (spinframework/spin 94a8fc8,
//! `crates/outbound-networking-config/src/allowed_hosts.rs`): an entry is
//! `scheme://host[:port]`; `*` stands for any scheme, host or port; a host
//! starting with `*.` matches any subdomain; a missing port is the scheme's
//! well-known one (80, 443).

use crate::Config;

/// The URLs this configuration will call, each with the variable that
/// names it (or, for a fixed vendor URL, the variable that chose the vendor).
pub(crate) fn destinations(config: &Config) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let github = config.get("GITHUB_API_URL").map_or("https://api.github.com", str::trim).to_owned();
    let github_com = github.trim_end_matches('/') == "https://api.github.com";
    out.push(("GITHUB_API_URL", github));
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
/// `allowed_outbound_hosts`) does not let through: the variable, and why.
pub(crate) fn missing(config: &Config, allowed: &[&str], component: &str) -> Vec<(&'static str, String)> {
    destinations(config)
        .into_iter()
        .filter_map(|(variable, url)| {
            let origin = origin(&url).filter(|o| !o.is_loopback())?;
            (!allowed.iter().any(|pattern| matches(pattern, &origin))).then(|| {
                let entry = origin.entry();
                (
                    variable,
                    format!(
                        "`{variable}` makes the app call {entry}, which the `{component}` component's allowed_outbound_hosts in spin.toml does not list: add \"{entry}\" there, then rebuild and deploy"
                    ),
                )
            })
        })
        .collect()
}

/// A URL's scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    fn is_loopback(&self) -> bool {
        self.host == "localhost" || self.host == "[::1]" || self.host.starts_with("127.")
    }

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
        // A developer's loopback stand-ins are not checked.
        let local = Config::from_pairs([
            ("GITHUB_API_URL", "http://127.0.0.1:4000/"),
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
            ("AGENT_ZERO_SANDBOX_URL", "http://localhost:8787"),
        ]);
        assert!(missing(&local, &[], "agent-zero-ticks").is_empty());
    }
}
