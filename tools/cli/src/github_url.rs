//! What `agent-zero review` and `fix` are pointed at: a pull request's or
//! an issue's page on GitHub, `https://github.com/OWNER/REPO/pull/N` or
//! `.../issues/N`, as copied from the browser (a tab of the pull request,
//! `/files` or `/commits`, a query or a `#fragment` may follow). Anything
//! else is refused naming what was wrong.

use agent_zero_contracts::RepoName;

use crate::text::printable;

/// Which page a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    PullRequest,
    Issue,
}

impl Kind {
    const fn segment(self) -> &'static str {
        match self {
            Self::PullRequest => "pull",
            Self::Issue => "issues",
        }
    }

    const fn noun(self) -> &'static str {
        match self {
            Self::PullRequest => "a pull request",
            Self::Issue => "an issue",
        }
    }

    const fn command(self) -> &'static str {
        match self {
            Self::PullRequest => "review",
            Self::Issue => "fix",
        }
    }
}

/// A pull request or issue of `owner/repo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) repository: String,
    pub(crate) number: u64,
}

/// `url` as `kind`'s page, or why it is not one.
pub(crate) fn parse(url: &str, kind: Kind) -> Result<Target, String> {
    let shown = printable(url.trim());
    let example = format!("https://github.com/OWNER/REPO/{}/NUMBER", kind.segment());
    let wrong = |why: &str| format!("`{shown}` is not {}'s URL: {why} (expected {example})", kind.noun());
    let url = url.trim();
    let rest = url.strip_prefix("https://").ok_or_else(|| wrong("it does not start with https://"))?;
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if !host.eq_ignore_ascii_case("github.com") && !host.eq_ignore_ascii_case("www.github.com") {
        return Err(wrong(&format!("the host is `{}`, not github.com", printable(host))));
    }
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let (owner, repo, page, number, tail) = match segments.as_slice() {
        [owner, repo, page, number, tail @ ..] => (*owner, *repo, *page, *number, tail),
        _ => return Err(wrong("it names no OWNER/REPO and number")),
    };
    let repository = format!("{owner}/{repo}");
    if !RepoName::is_valid(&repository) {
        return Err(wrong(&format!("`{}` is not a repository name", printable(&repository))));
    }
    let other = match kind {
        Kind::PullRequest => Kind::Issue,
        Kind::Issue => Kind::PullRequest,
    };
    if page == other.segment() {
        return Err(format!(
            "`{shown}` is {}'s URL; `{}` takes {} ({example}): use `agent-zero {}`",
            other.noun(),
            kind.command(),
            kind.noun(),
            other.command()
        ));
    }
    if page != kind.segment() {
        return Err(wrong(&format!("`/{}/` is not `/{}/`", printable(page), kind.segment())));
    }
    let number = number
        .parse::<u64>()
        .ok()
        .filter(|n| (1..=u64::from(u32::MAX)).contains(n))
        .ok_or_else(|| wrong(&format!("`{}` is not a number from 1", printable(number))))?;
    // A pull request's tabs; an issue's page has none.
    let tab_ok = match (kind, tail) {
        (_, []) => true,
        (Kind::PullRequest, [tab]) => ["files", "commits", "checks", "changes"].contains(tab),
        _ => false,
    };
    if !tab_ok {
        return Err(wrong(&format!("`/{}` follows the number", printable(&tail.join("/")))));
    }
    Ok(Target { repository, number })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str, kind: Kind) -> (String, u64) {
        let target = parse(url, kind).unwrap_or_else(|e| panic!("{url}: {e}"));
        (target.repository, target.number)
    }

    #[test]
    fn pull_request_and_issue_pages_parse_as_copied_from_a_browser() {
        let pr = (String::from("acme/widgets"), 42);
        for url in [
            "https://github.com/acme/widgets/pull/42",
            "https://github.com/acme/widgets/pull/42/",
            "https://github.com/acme/widgets/pull/42/files",
            "https://github.com/acme/widgets/pull/42/commits?w=1",
            "https://GitHub.com/acme/widgets/pull/42#discussion_r1",
            " https://www.github.com/acme/widgets/pull/42 ",
        ] {
            assert_eq!(ok(url, Kind::PullRequest), pr, "{url}");
        }
        let issue = (String::from("octo-org/hello.world_1"), 7);
        for url in [
            "https://github.com/octo-org/hello.world_1/issues/7",
            "https://github.com/octo-org/hello.world_1/issues/7#issuecomment-99",
        ] {
            assert_eq!(ok(url, Kind::Issue), issue, "{url}");
        }
    }

    #[test]
    fn anything_else_is_refused_naming_what_was_wrong() {
        let cases: &[(&str, Kind, &str)] = &[
            ("http://github.com/a/b/pull/1", Kind::PullRequest, "does not start with https://"),
            ("github.com/a/b/pull/1", Kind::PullRequest, "does not start with https://"),
            ("https://gitlab.com/a/b/pull/1", Kind::PullRequest, "the host is `gitlab.com`"),
            ("https://github.com/a/b", Kind::PullRequest, "names no OWNER/REPO and number"),
            ("https://github.com/a/b/pull", Kind::PullRequest, "names no OWNER/REPO and number"),
            ("https://github.com/a/b/pull/0", Kind::PullRequest, "`0` is not a number from 1"),
            ("https://github.com/a/b/pull/4294967296", Kind::PullRequest, "not a number from 1"),
            ("https://github.com/a/b/pull/x1", Kind::PullRequest, "`x1` is not a number"),
            ("https://github.com/a/b/pulls/1", Kind::PullRequest, "`/pulls/` is not `/pull/`"),
            ("https://github.com/a/b/pull/1/merge", Kind::PullRequest, "`/merge` follows the number"),
            ("https://github.com/a/b/issues/1/files", Kind::Issue, "`/files` follows the number"),
            ("https://github.com/a..b/c/pull/1", Kind::PullRequest, "`a..b/c` is not a repository name"),
            ("https://github.com/a/b/issues/3", Kind::PullRequest, "use `agent-zero fix`"),
            ("https://github.com/a/b/pull/3", Kind::Issue, "use `agent-zero review`"),
        ];
        for (url, kind, needle) in cases {
            let error = parse(url, *kind).unwrap_err();
            assert!(error.contains(needle), "{url}: {error}");
            assert!(error.contains("https://github.com/OWNER/REPO/"), "{url}: names the expected shape: {error}");
        }
        // Terminal escapes in the argument are not echoed.
        let error = parse("https://github.com/a/b/pull/\u{1b}[2J", Kind::PullRequest).unwrap_err();
        assert!(!error.contains('\u{1b}'), "{error:?}");
    }
}
