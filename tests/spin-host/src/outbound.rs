//! `allowed_outbound_hosts`: Spin refuses outbound requests to destinations
//! a component did not declare. Patterns are `scheme://host[:port]` with `*`
//! for any scheme, host or port, and `*.` as a subdomain wildcard.
//!
//! Also the routing decision for Spin's service chaining: a request to
//! `http://<component-id>.spin.internal/...` is handed in-process to that
//! component instead of going to the network.

use http::Uri;

/// Spin's service-chaining domain (`SERVICE_CHAINING_DOMAIN` in Spin's
/// crates/outbound-networking-config/src/allowed_hosts.rs).
const SERVICE_CHAINING_DOMAIN: &str = "spin.internal";

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
            // Spin allows an empty path and refuses any other ("has a path
            // but is not allowed to", AllowedHostConfig::parse).
            let rest = rest.strip_suffix('/').unwrap_or(rest);
            if rest.contains('/') {
                anyhow::bail!("allowed_outbound_hosts entry `{entry}` has a path but is not allowed to");
            }
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

    /// Replaces each `*.spin.internal` pattern with one `<id>.spin.internal`
    /// per component of the application (same scheme and port), as Spin's
    /// `expand_wildcard_service_chaining` (crates/outbound-networking-config/
    /// src/allowed_hosts.rs): the wildcard allows chaining to the app's own
    /// components, and to no other `*.spin.internal` host.
    pub(crate) fn expand_service_chaining(self, component_ids: &[String]) -> Self {
        let wildcard = format!("*.{SERVICE_CHAINING_DOMAIN}");
        let patterns = self
            .patterns
            .into_iter()
            .flat_map(|p| {
                if p.host.eq_ignore_ascii_case(&wildcard) {
                    component_ids
                        .iter()
                        .map(|id| Pattern { host: format!("{id}.{SERVICE_CHAINING_DOMAIN}"), ..p.clone() })
                        .collect()
                } else {
                    vec![p]
                }
            })
            .collect();
        Self { patterns }
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

/// The component a request to `uri` chains to: `<id>` for the host
/// `<id>.spin.internal` (any scheme and port; exactly one label before the
/// domain), as Spin's `parse_service_chaining_target`
/// (crates/outbound-networking-config/src/allowed_hosts.rs).
pub(crate) fn service_chaining_target(uri: &Uri) -> Option<&str> {
    chaining_host_target(uri.host()?)
}

/// Whether `host` (a `Host` header: port allowed) is a service-chaining
/// host, as Spin's `is_service_chaining_host`.
pub(crate) fn is_service_chaining_host(host: &str) -> bool {
    chaining_host_target(host).is_some()
}

fn chaining_host_target(host: &str) -> Option<&str> {
    let host = host.trim();
    let host = host.rsplit_once(':').map_or(host, |(host, _port)| host);
    let (id, domain) = host.split_once('.')?;
    (domain == SERVICE_CHAINING_DOMAIN).then_some(id)
}

/// Where an outbound request goes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Destination<'a> {
    /// Not in `allowed_outbound_hosts`: the guest gets `HTTP-request-denied`.
    Denied,
    /// In-process to the component with this id (service chaining).
    Component(&'a str),
    /// Out to the network.
    Network,
}

/// Spin's order (`RequestSender::send` in crates/factor-outbound-http/src/
/// wasi.rs): `allowed_outbound_hosts` is enforced first, chained requests
/// included, then the service-chaining interceptor (crates/trigger-http/src/
/// outbound_http.rs) claims `*.spin.internal` hosts.
pub(crate) fn destination<'a>(allowed: &AllowedHosts, uri: &'a Uri) -> Destination<'a> {
    if !allowed.allows(uri) {
        Destination::Denied
    } else if let Some(id) = service_chaining_target(uri) {
        Destination::Component(id)
    } else {
        Destination::Network
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

    fn uri(u: &str) -> Uri {
        u.parse().unwrap()
    }

    #[test]
    fn chaining_target_is_the_first_label_of_spin_internal() {
        let target = |u: &str| service_chaining_target(&uri(u)).map(str::to_owned);
        assert_eq!(target("http://agent-zero-ticks.spin.internal/tick").as_deref(), Some("agent-zero-ticks"));
        assert_eq!(target("http://ticks.spin.internal:8080/").as_deref(), Some("ticks"));
        assert_eq!(target("https://ticks.spin.internal").as_deref(), Some("ticks"));
        assert_eq!(target("http://a.b.spin.internal/"), None);
        assert_eq!(target("http://spin.internal/"), None);
        assert_eq!(target("http://ticks.spin.internal.example.com/"), None);
        assert_eq!(target("https://api.github.com/"), None);
        assert_eq!(target("/relative"), None);
        assert!(is_service_chaining_host("ticks.spin.internal"));
        assert!(is_service_chaining_host("ticks.spin.internal:3000"));
        assert!(!is_service_chaining_host("127.0.0.1:3000"));
    }

    #[test]
    fn chained_requests_need_an_allowed_host() {
        let ids = ["agent-zero".to_owned(), "agent-zero-ticks".to_owned()];
        let parse = |hosts: &[&str]| {
            AllowedHosts::parse(&hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>())
                .unwrap()
                .expand_service_chaining(&ids)
        };
        let exact = parse(&["http://agent-zero-ticks.spin.internal", "https://api.github.com"]);
        assert_eq!(
            destination(&exact, &uri("http://agent-zero-ticks.spin.internal/tick")),
            Destination::Component("agent-zero-ticks")
        );
        assert_eq!(destination(&exact, &uri("https://api.github.com/repos")), Destination::Network);
        // Another component, a different scheme or port: not allowed.
        assert_eq!(destination(&exact, &uri("http://agent-zero.spin.internal/")), Destination::Denied);
        assert_eq!(destination(&exact, &uri("https://agent-zero-ticks.spin.internal/")), Destination::Denied);
        assert_eq!(destination(&exact, &uri("http://agent-zero-ticks.spin.internal:8080/")), Destination::Denied);
        // Nothing declared: no chaining either.
        assert_eq!(destination(&parse(&[]), &uri("http://agent-zero-ticks.spin.internal/")), Destination::Denied);

        // `*.spin.internal` allows every component of the app (public ones
        // too), and no unknown id.
        let wildcard = parse(&["http://*.spin.internal"]);
        assert_eq!(
            destination(&wildcard, &uri("http://agent-zero-ticks.spin.internal/")),
            Destination::Component("agent-zero-ticks")
        );
        assert_eq!(
            destination(&wildcard, &uri("http://agent-zero.spin.internal/")),
            Destination::Component("agent-zero")
        );
        assert_eq!(destination(&wildcard, &uri("http://nope.spin.internal/")), Destination::Denied);
        assert_eq!(destination(&wildcard, &uri("http://a.agent-zero.spin.internal/")), Destination::Denied);

        // Allow-all also allows chaining, to any id (unknown ones fail later).
        let all = parse(&["*://*:*"]);
        assert_eq!(destination(&all, &uri("http://nope.spin.internal/")), Destination::Component("nope"));
        assert_eq!(destination(&all, &uri("https://example.com/")), Destination::Network);
    }
}

/// A component's outbound requests over the last hour, as a hosted Spin
/// counts them against its plan (Fermyon Cloud: 500 an hour on its
/// starter plan); chained requests are not counted.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    sent: std::sync::Mutex<std::collections::VecDeque<std::time::Instant>>,
}

impl Meter {
    /// Counts one request now, or says why it is over `per_hour`.
    pub(crate) fn admit(&self, per_hour: Option<usize>) -> Result<(), String> {
        self.admit_at(per_hour, std::time::Instant::now())
    }

    fn admit_at(&self, per_hour: Option<usize>, now: std::time::Instant) -> Result<(), String> {
        let Some(limit) = per_hour else { return Ok(()) };
        let hour = std::time::Duration::from_secs(3600);
        let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        while sent.front().is_some_and(|t| now.duration_since(*t) >= hour) {
            sent.pop_front();
        }
        if sent.len() >= limit {
            return Err(format!("{limit} outbound requests in the last hour (--outbound-per-hour)"));
        }
        sent.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod meter_tests {
    use super::Meter;
    use std::time::{Duration, Instant};

    #[test]
    fn the_hourly_outbound_budget_refuses_the_request_past_it_and_recovers() {
        let meter = Meter::default();
        let start = Instant::now();
        assert!(meter.admit_at(None, start).is_ok());
        for i in 0..3 {
            assert!(meter.admit_at(Some(3), start + Duration::from_secs(i)).is_ok());
        }
        let refused = meter.admit_at(Some(3), start + Duration::from_secs(10)).unwrap_err();
        assert!(refused.contains("3 outbound requests in the last hour"), "{refused}");
        // An hour after the first, one slot is free again.
        assert!(meter.admit_at(Some(3), start + Duration::from_secs(3600)).is_ok());
        assert!(meter.admit_at(Some(3), start + Duration::from_secs(3600)).is_err());
    }
}
