//! `allowed_outbound_hosts`: Spin refuses outbound requests to destinations
//! a component did not declare. Patterns are `scheme://host[:port]` with `*`
//! for any scheme, host or port, and `*.` as a subdomain wildcard.

use http::Uri;

#[derive(Debug, Clone)]
pub(crate) struct AllowedHosts {
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    scheme: String,
    host: String,
    port: Option<String>,
}

impl AllowedHosts {
    pub(crate) fn parse(entries: &[String]) -> anyhow::Result<Self> {
        let mut patterns = Vec::new();
        for entry in entries {
            let Some((scheme, rest)) = entry.split_once("://") else {
                anyhow::bail!("allowed_outbound_hosts entry `{entry}` has no scheme");
            };
            let rest = rest.trim_end_matches('/');
            let (host, port) = match rest.rsplit_once(':') {
                Some((h, p)) if !h.is_empty() => (h, Some(p.to_owned())),
                _ => (rest, None),
            };
            if host.is_empty() {
                anyhow::bail!("allowed_outbound_hosts entry `{entry}` has no host");
            }
            patterns.push(Pattern { scheme: scheme.to_owned(), host: host.to_owned(), port });
        }
        Ok(Self { patterns })
    }

    pub(crate) fn allows(&self, uri: &Uri) -> bool {
        let scheme = uri.scheme_str().unwrap_or("https");
        let Some(host) = uri.host() else { return false };
        let port = uri.port_u16().unwrap_or(if scheme == "http" { 80 } else { 443 }).to_string();
        self.patterns.iter().any(|p| {
            let scheme_ok = p.scheme == "*" || p.scheme == scheme;
            let host_ok = p.host == "*"
                || p.host.eq_ignore_ascii_case(host)
                || p.host.strip_prefix("*.").is_some_and(|s| host.len() > s.len() && host.ends_with(&format!(".{s}")));
            let default_port = if p.scheme == "http" { "80" } else { "443" };
            let port_ok = match &p.port {
                Some(p) => p == "*" || *p == port,
                None => port == default_port || (p.scheme == "*" && (port == "80" || port == "443")),
            };
            scheme_ok && host_ok && port_ok
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_like_spin() {
        let allowed = AllowedHosts::parse(&[
            "https://api.github.com".into(),
            "http://127.0.0.1:*".into(),
            "https://*.example.com".into(),
        ])
        .unwrap();
        let ok = |u: &str| allowed.allows(&u.parse().unwrap());
        assert!(ok("https://api.github.com/repos"));
        assert!(!ok("http://api.github.com/repos"));
        assert!(!ok("https://api.github.com:8443/"));
        assert!(ok("http://127.0.0.1:4000/x"));
        assert!(!ok("http://localhost:4000/x"));
        assert!(ok("https://a.example.com/"));
        assert!(!ok("https://example.com/"));
        assert!(!ok("https://evil.com/"));
    }
}
