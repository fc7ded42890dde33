//! Where a publication links back to (docs/receipts.md): the deployment's
//! public URL (`AGENT_ZERO_PUBLIC_URL`) and whether its front role signs
//! receipts (`AGENT_ZERO_RECEIPT_LINKS`). Both are plain, non-secret
//! settings both roles read, so the tick role, which never holds the
//! receipt key, can write the evidence page's and the receipt's absolute
//! URLs into a pull request's body. The front role, which holds both the key
//! and these settings, reports in `GET /api/v1/health` when they disagree.

use crate::{ApiError, Config, ErrorCode};

/// The deployment's public URL.
pub(crate) const PUBLIC_URL: &str = "AGENT_ZERO_PUBLIC_URL";
/// `on`: the front role signs receipts, so publications link them.
pub(crate) const RECEIPT_LINKS: &str = "AGENT_ZERO_RECEIPT_LINKS";

/// What publications link to, once parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PublicLinks {
    /// The origin, `http(s)://host[:port]`, without a trailing slash.
    pub(crate) origin: Option<String>,
    /// Whether the receipt is linked beside the evidence page.
    pub(crate) receipts: bool,
}

impl PublicLinks {
    /// Both settings, or the error naming the malformed one.
    pub(crate) fn from_config(config: &Config) -> Result<Self, ApiError> {
        let origin = config.get(PUBLIC_URL).map(origin).transpose()?;
        let receipts = match config.get(RECEIPT_LINKS).map(str::trim) {
            None | Some("off") => false,
            Some("on") => true,
            Some(_) => return Err(malformed(RECEIPT_LINKS, "must be `on` or `off`")),
        };
        if receipts && origin.is_none() {
            return Err(malformed(RECEIPT_LINKS, "is `on` but AGENT_ZERO_PUBLIC_URL is not set: a link needs it"));
        }
        Ok(Self { origin, receipts })
    }

    /// The absolute URLs of task `id`'s evidence page and (where receipts
    /// are linked) its receipt, under `base_path`; none without an origin.
    pub(crate) fn of_task(&self, base_path: &str, id: &str) -> (Option<String>, Option<String>) {
        let Some(origin) = &self.origin else { return (None, None) };
        let page = format!("{origin}{base_path}/tasks/{id}");
        let receipt = self.receipts.then(|| format!("{origin}{base_path}/api/v1/tasks/{id}/receipt"));
        (Some(page), receipt)
    }
}

/// `AGENT_ZERO_PUBLIC_URL` as an origin: an absolute `http` or `https` URL
/// with a host, no user, path (but `/`), query or fragment (the path the
/// app is served under is `AGENT_ZERO_BASE_PATH`).
fn origin(text: &str) -> Result<String, ApiError> {
    let text = text.trim();
    let refuse = |why: &str| malformed(PUBLIC_URL, why);
    let uri: http::Uri = text.parse().map_err(|_| refuse("is not a URL"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(refuse("must start with https:// (or http://)"));
    }
    let Some(authority) = uri.authority() else { return Err(refuse("has no host")) };
    if authority.as_str().contains('@') || authority.host().is_empty() {
        return Err(refuse("must name a host, without a user"));
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() || text.contains('#') {
        return Err(refuse(
            "must be an origin such as https://agent-zero.example.com: the path the app is under is AGENT_ZERO_BASE_PATH",
        ));
    }
    Ok(format!("{}://{}", uri.scheme_str().unwrap_or("https"), authority.as_str().to_ascii_lowercase()))
}

fn malformed(variable: &str, why: &str) -> ApiError {
    ApiError::new(ErrorCode::NotConfigured, format!("{variable} {why}")).with_field(variable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(pairs: &[(&str, &str)]) -> Result<PublicLinks, ApiError> {
        PublicLinks::from_config(&Config::from_pairs(pairs.iter().copied()))
    }

    #[test]
    fn links_name_the_page_and_the_receipt_under_the_base_path() {
        let on = links(&[(PUBLIC_URL, "https://Agent-Zero.example.com/"), (RECEIPT_LINKS, "on")]).unwrap();
        assert_eq!(
            on.of_task("/az", "gh-1"),
            (
                Some("https://agent-zero.example.com/az/tasks/gh-1".into()),
                Some("https://agent-zero.example.com/az/api/v1/tasks/gh-1/receipt".into())
            )
        );
        let page_only = links(&[(PUBLIC_URL, "http://127.0.0.1:8787")]).unwrap();
        assert_eq!(page_only.of_task("", "t").1, None, "receipts are not linked unless on");
        assert_eq!(links(&[]).unwrap().of_task("", "t"), (None, None), "no origin, no link");
    }

    #[test]
    fn health_names_receipt_links_the_front_cannot_sign() {
        let problem = |pairs: &[(&str, &str)]| {
            crate::Settings::from_pairs(pairs.iter().copied())
                .problems()
                .into_iter()
                .find(|p| p.field.as_deref() == Some(RECEIPT_LINKS))
        };
        let links = [(PUBLIC_URL, "https://az.example.com"), (RECEIPT_LINKS, "on")];
        let unsigned = problem(&links).expect("links without a key are a problem");
        assert!(unsigned.message.contains("AGENT_ZERO_RECEIPT_KEY is not set"), "{}", unsigned.message);
        // RFC 8032's first test key: the front signs, so the links are true.
        let key = (crate::receipt_keys::KEY, "k1:nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A");
        assert!(problem(&[links[0], links[1], key]).is_none());
        assert!(problem(&[links[0]]).is_none(), "the page alone needs no key");
    }

    #[test]
    fn a_malformed_setting_is_named() {
        for (pairs, says) in [
            (vec![(PUBLIC_URL, "not a url")], "is not a URL"),
            (vec![(PUBLIC_URL, "agent-zero.example.com")], "https://"),
            (vec![(PUBLIC_URL, "ftp://example.com")], "https://"),
            (vec![(PUBLIC_URL, "https://example.com/az")], "AGENT_ZERO_BASE_PATH"),
            (vec![(PUBLIC_URL, "https://example.com/?x=1")], "AGENT_ZERO_BASE_PATH"),
            (vec![(PUBLIC_URL, "https://user@example.com")], "without a user"),
            (vec![(RECEIPT_LINKS, "yes")], "`on` or `off`"),
            (vec![(RECEIPT_LINKS, "on")], "AGENT_ZERO_PUBLIC_URL is not set"),
        ] {
            let error = links(&pairs).expect_err(says);
            assert!(error.message.contains(says), "{pairs:?}: {}", error.message);
        }
    }
}
