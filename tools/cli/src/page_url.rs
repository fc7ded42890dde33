//! What `agent-zero review` and `fix` are pointed at: a pull request's
//! (GitLab: a merge request's) or an issue's page, as copied from the
//! browser:
//!
//! - GitHub: `https://github.com/OWNER/REPO/pull/N`, `.../issues/N`;
//! - GitLab: `https://HOST/NAMESPACE/PROJECT/-/merge_requests/N`,
//!   `.../-/issues/N`, the namespace possibly nested (`group/sub`);
//! - Gitea and Forgejo: `https://HOST/OWNER/REPO/pulls/N`, `.../issues/N`.
//!
//! A tab of the pull request (`/files`, `/diffs`, ...), a query or a
//! `#fragment` may follow. Without `--forge`, github.com is GitHub and a
//! path with a `/-/` segment is GitLab; any other host needs `--forge`,
//! because Gitea's and Forgejo's pages look alike and their issue pages
//! look like GitHub Enterprise Server's, and a guess would create a task on
//! the wrong forge. The host itself is not sent: the deployment works on
//! the instance it is configured with. Anything else is refused naming
//! what was wrong.

use agent_zero_contracts::{ForgeKind, RepoName};

use crate::text::printable;

/// Which page a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    PullRequest,
    Issue,
}

impl Kind {
    const fn other(self) -> Self {
        match self {
            Self::PullRequest => Self::Issue,
            Self::Issue => Self::PullRequest,
        }
    }

    const fn command(self) -> &'static str {
        match self {
            Self::PullRequest => "review",
            Self::Issue => "fix",
        }
    }
}

/// A pull request (merge request) or issue of `repository` on `forge`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) forge: ForgeKind,
    pub(crate) repository: String,
    pub(crate) number: u64,
}

/// How a forge spells one kind of page.
struct Shape {
    /// The path segment before the number.
    segment: &'static str,
    noun: &'static str,
    /// The tabs that may follow the number.
    tabs: &'static [&'static str],
}

const fn shape(forge: ForgeKind, kind: Kind) -> Shape {
    match (forge, kind) {
        (ForgeKind::GitHub, Kind::PullRequest) => {
            Shape { segment: "pull", noun: "a pull request", tabs: &["files", "commits", "checks", "changes"] }
        }
        (ForgeKind::GitLab, Kind::PullRequest) => {
            Shape { segment: "merge_requests", noun: "a merge request", tabs: &["diffs", "commits", "pipelines"] }
        }
        (ForgeKind::Gitea | ForgeKind::Forgejo, Kind::PullRequest) => {
            Shape { segment: "pulls", noun: "a pull request", tabs: &["files", "commits"] }
        }
        (_, Kind::Issue) => Shape { segment: "issues", noun: "an issue", tabs: &[] },
    }
}

/// What a repository's path is called on `forge`, for messages.
const fn path_name(forge: ForgeKind) -> &'static str {
    match forge {
        ForgeKind::GitLab => "NAMESPACE/PROJECT",
        ForgeKind::GitHub | ForgeKind::Gitea | ForgeKind::Forgejo => "OWNER/REPO",
    }
}

/// `kind`'s page on `forge`, for messages.
fn example(forge: ForgeKind, kind: Kind) -> String {
    let (segment, path) = (shape(forge, kind).segment, path_name(forge));
    match forge {
        ForgeKind::GitHub => format!("https://github.com/{path}/{segment}/NUMBER"),
        ForgeKind::GitLab => format!("https://HOST/{path}/-/{segment}/NUMBER"),
        ForgeKind::Gitea | ForgeKind::Forgejo => format!("https://HOST/{path}/{segment}/NUMBER"),
    }
}

/// `url` as `kind`'s page on `forge` (`None`: as the URL shows, when it
/// does), or why it is not one.
pub(crate) fn parse(url: &str, kind: Kind, forge: Option<ForgeKind>) -> Result<Target, String> {
    let url = url.trim();
    let shown = printable(url);
    let wrong = |forge: ForgeKind, why: &str| {
        format!("`{shown}` is not {}'s URL: {why} (expected {})", shape(forge, kind).noun, example(forge, kind))
    };
    // Until the URL shows its forge, messages show GitHub's shape.
    let given = forge.unwrap_or_default();
    let rest = url.strip_prefix("https://").ok_or_else(|| wrong(given, "it does not start with https://"))?;
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if !is_host(host) {
        return Err(wrong(given, &format!("`{}` is not a host name", printable(host))));
    }
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let on_github = host.eq_ignore_ascii_case("github.com") || host.eq_ignore_ascii_case("www.github.com");
    let forge = match forge {
        Some(forge) if on_github && !forge.is_github() => {
            return Err(wrong(forge, &format!("`--forge {}` but github.com is GitHub", forge.as_str())));
        }
        Some(forge) => forge,
        None if on_github => ForgeKind::GitHub,
        None if segments.contains(&"-") => ForgeKind::GitLab,
        None => {
            return Err(wrong(
                ForgeKind::GitHub,
                &format!(
                    "the host is `{}`, not github.com: pass `--forge gitea` or `--forge forgejo` for a Gitea or \
                     Forgejo page, `--forge github` for GitHub Enterprise Server's",
                    printable(host)
                ),
            ));
        }
    };
    let wrong = |why: &str| wrong(forge, why);

    // The repository's segments, then the page's.
    let (project, page) = match forge {
        ForgeKind::GitLab => match segments.iter().position(|s| *s == "-") {
            Some(dash) => (&segments[..dash], &segments[dash + 1..]),
            None => return Err(wrong("its path has no `/-/` segment, which GitLab's pages have")),
        },
        _ => segments.split_at(segments.len().min(2)),
    };
    let repository = project.join("/");
    let (segment, number, tail) = match page {
        [_, _, ..] if project.len() < 2 && forge == ForgeKind::GitLab => {
            let why = "a GitLab project's path has a namespace and a name";
            return Err(wrong(&format!("`{}` is not NAMESPACE/PROJECT: {why}", printable(&repository))));
        }
        [segment, number, tail @ ..] => (*segment, *number, tail),
        _ => return Err(wrong(&format!("it names no {} and number", path_name(forge)))),
    };
    if let Some(why) = repository_error(forge, project) {
        return Err(wrong(&format!("`{}` is not a repository name: {why}", printable(&repository))));
    }
    let (expected, other) = (shape(forge, kind), shape(forge, kind.other()));
    if segment == other.segment {
        return Err(format!(
            "`{shown}` is {}'s URL; `{}` takes {} ({}): use `agent-zero {}`",
            other.noun,
            kind.command(),
            expected.noun,
            example(forge, kind),
            kind.other().command()
        ));
    }
    if segment != expected.segment {
        return Err(wrong(&format!("`/{}/` is not `/{}/`", printable(segment), expected.segment)));
    }
    let number = Some(number)
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| (1..=u64::from(u32::MAX)).contains(n))
        .ok_or_else(|| wrong(&format!("`{}` is not a number from 1", printable(number))))?;
    let tab_ok = match tail {
        [] => true,
        [tab] => expected.tabs.contains(tab),
        _ => false,
    };
    if !tab_ok {
        return Err(wrong(&format!("`/{}` follows the number", printable(&tail.join("/")))));
    }
    Ok(Target { forge, repository, number })
}

/// Whether `host` is a host name, with an optional `:PORT`.
fn is_host(host: &str) -> bool {
    let (name, port) = host.split_once(':').unwrap_or((host, "0"));
    !name.is_empty()
        && !name.starts_with(['.', '-'])
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
}

/// Why `segments` are not a repository's path on `forge`, if they are not.
/// GitHub's names follow [`RepoName`]; the others' segments are letters,
/// digits, `.`, `_` and `-`, none empty, `.` or `..`.
fn repository_error(forge: ForgeKind, segments: &[&str]) -> Option<String> {
    if forge.is_github() {
        return RepoName::parse(&segments.join("/")).err().map(str::to_owned);
    }
    segments.iter().find_map(|segment| match *segment {
        "" => Some("a segment is empty".to_owned()),
        "." | ".." => Some(format!("`{segment}` is not a segment")),
        s if !s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) => {
            Some(format!("`{}` holds more than letters, digits, `.`, `_` and `-`", printable(s)))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str, kind: Kind, forge: Option<ForgeKind>) -> (ForgeKind, String, u64) {
        let target = parse(url, kind, forge).unwrap_or_else(|e| panic!("{url}: {e}"));
        (target.forge, target.repository, target.number)
    }

    #[test]
    fn pull_request_and_issue_pages_parse_as_copied_from_a_browser() {
        let pr = (ForgeKind::GitHub, String::from("acme/widgets"), 42);
        for url in [
            "https://github.com/acme/widgets/pull/42",
            "https://github.com/acme/widgets/pull/42/",
            "https://github.com/acme/widgets/pull/42/files",
            "https://github.com/acme/widgets/pull/42/commits?w=1",
            "https://GitHub.com/acme/widgets/pull/42#discussion_r1",
            " https://www.github.com/acme/widgets/pull/42 ",
        ] {
            assert_eq!(ok(url, Kind::PullRequest, None), pr, "{url}");
            assert_eq!(ok(url, Kind::PullRequest, Some(ForgeKind::GitHub)), pr, "{url}");
        }
        let issue = (ForgeKind::GitHub, String::from("octo-org/hello.world_1"), 7);
        for url in [
            "https://github.com/octo-org/hello.world_1/issues/7",
            "https://github.com/octo-org/hello.world_1/issues/7#issuecomment-99",
        ] {
            assert_eq!(ok(url, Kind::Issue, None), issue, "{url}");
        }
        // GitHub Enterprise Server's host, when named.
        let ghes = ok("https://ghe.corp:8443/acme/widgets/pull/5", Kind::PullRequest, Some(ForgeKind::GitHub));
        assert_eq!(ghes, (ForgeKind::GitHub, "acme/widgets".into(), 5));
    }

    #[test]
    fn gitlab_pages_are_known_by_their_dash_segment_on_any_host() {
        let mr = (ForgeKind::GitLab, String::from("group/sub/project"), 12);
        for url in [
            "https://gitlab.com/group/sub/project/-/merge_requests/12",
            "https://gitlab.com/group/sub/project/-/merge_requests/12/",
            "https://gitlab.example.org/group/sub/project/-/merge_requests/12/diffs",
            "https://gitlab.example.org:8443/group/sub/project/-/merge_requests/12/commits?view=inline",
            "https://gitlab.com/group/sub/project/-/merge_requests/12#note_99",
        ] {
            assert_eq!(ok(url, Kind::PullRequest, None), mr, "{url}");
            assert_eq!(ok(url, Kind::PullRequest, Some(ForgeKind::GitLab)), mr, "{url}");
        }
        assert_eq!(
            ok("https://git.corp/a.b/my_app-2/-/issues/3#note_1", Kind::Issue, None),
            (ForgeKind::GitLab, "a.b/my_app-2".into(), 3)
        );
    }

    #[test]
    fn gitea_and_forgejo_pages_are_what_forge_names() {
        for forge in [ForgeKind::Gitea, ForgeKind::Forgejo] {
            for url in [
                "https://codeberg.org/acme/widgets/pulls/9",
                "https://codeberg.org/acme/widgets/pulls/9/files",
                "https://git.example.org:3000/acme/widgets/pulls/9/commits?style=split#diff-1",
            ] {
                assert_eq!(ok(url, Kind::PullRequest, Some(forge)), (forge, "acme/widgets".into(), 9), "{url}");
            }
            let url = "https://codeberg.org/ac_me/wid.gets/issues/4#issuecomment-8";
            assert_eq!(ok(url, Kind::Issue, Some(forge)), (forge, "ac_me/wid.gets".into(), 4));
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
            ("https://github.com/a/b/pull/+1", Kind::PullRequest, "`+1` is not a number"),
            ("https://github.com/a/b/pulls/1", Kind::PullRequest, "`/pulls/` is not `/pull/`"),
            ("https://github.com/a/b/pull/1/merge", Kind::PullRequest, "`/merge` follows the number"),
            ("https://github.com/a/b/issues/1/files", Kind::Issue, "`/files` follows the number"),
            ("https://github.com/a..b/c/pull/1", Kind::PullRequest, "`a..b/c` is not a repository name"),
            ("https://github.com/a/b/issues/3", Kind::PullRequest, "use `agent-zero fix`"),
            ("https://github.com/a/b/pull/3", Kind::Issue, "use `agent-zero review`"),
        ];
        for (url, kind, needle) in cases {
            let error = parse(url, *kind, None).unwrap_err();
            assert!(error.contains(needle), "{url}: {error}");
            assert!(error.contains("https://github.com/OWNER/REPO/"), "{url}: names the expected shape: {error}");
        }
        // Terminal escapes in the argument are not echoed.
        let error = parse("https://github.com/a/b/pull/\u{1b}[2J", Kind::PullRequest, None).unwrap_err();
        assert!(!error.contains('\u{1b}'), "{error:?}");
    }

    #[test]
    fn other_forges_pages_are_refused_naming_what_was_wrong() {
        use ForgeKind::{Forgejo, GitHub, GitLab, Gitea};
        let mr = "https://HOST/NAMESPACE/PROJECT/-/merge_requests/NUMBER";
        let gitlab_issue = "https://HOST/NAMESPACE/PROJECT/-/issues/NUMBER";
        let pulls = "https://HOST/OWNER/REPO/pulls/NUMBER";
        let cases: &[(&str, Kind, Option<ForgeKind>, &str, &str)] = &[
            // The command's page, not the other one.
            ("https://gitlab.com/g/p/-/merge_requests/3", Kind::Issue, None, "use `agent-zero review`", gitlab_issue),
            ("https://gitlab.com/g/p/-/issues/3", Kind::PullRequest, None, "is an issue's URL", mr),
            ("https://codeberg.org/o/r/pulls/3", Kind::Issue, Some(Forgejo), "is a pull request's URL", "/issues/"),
            ("https://codeberg.org/o/r/issues/3", Kind::PullRequest, Some(Gitea), "use `agent-zero fix`", pulls),
            // No number, or not one.
            ("https://gitlab.com/g/p/-/merge_requests", Kind::PullRequest, None, "names no NAMESPACE/PROJECT and", mr),
            ("https://gitlab.com/g/p/-/merge_requests/0", Kind::PullRequest, None, "`0` is not a number", mr),
            (
                "https://codeberg.org/o/r/pulls/",
                Kind::PullRequest,
                Some(Gitea),
                "names no OWNER/REPO and number",
                pulls,
            ),
            ("https://codeberg.org/o/r/pulls/9x", Kind::PullRequest, Some(Gitea), "`9x` is not a number", pulls),
            // Tabs that are not the page's.
            ("https://gitlab.com/g/p/-/merge_requests/3/files", Kind::PullRequest, None, "`/files` follows", mr),
            ("https://codeberg.org/o/r/pulls/3/diffs", Kind::PullRequest, Some(Gitea), "`/diffs` follows", pulls),
            // A project path GitLab would not have.
            (
                "https://gitlab.com/project/-/issues/3",
                Kind::Issue,
                None,
                "`project` is not NAMESPACE/PROJECT",
                gitlab_issue,
            ),
            ("https://gitlab.com/g//p/-/issues/3", Kind::Issue, None, "a segment is empty", gitlab_issue),
            ("https://gitlab.com/g/../p/-/issues/3", Kind::Issue, None, "`..` is not a segment", gitlab_issue),
            ("https://gitlab.com/g/p%20q/-/issues/3", Kind::Issue, None, "`p%20q` holds more than", gitlab_issue),
            ("https://codeberg.org/o/./pulls/3", Kind::PullRequest, Some(Gitea), "`.` is not a segment", pulls),
            // Other hosts without --forge: never guessed.
            (
                "https://codeberg.org/o/r/pulls/3",
                Kind::PullRequest,
                None,
                "pass `--forge gitea` or `--forge forgejo`",
                "",
            ),
            ("https://codeberg.org/o/r/issues/3", Kind::Issue, None, "the host is `codeberg.org`, not github.com", ""),
            ("https://user@codeberg.org/o/r/issues/3", Kind::Issue, Some(Gitea), "is not a host name", ""),
            ("https:///o/r/issues/3", Kind::Issue, Some(Gitea), "`` is not a host name", ""),
            // --forge and the URL disagree.
            ("https://codeberg.org/o/r/pull/3", Kind::PullRequest, Some(Gitea), "`/pull/` is not `/pulls/`", pulls),
            ("https://codeberg.org/o/r/pulls/3", Kind::PullRequest, Some(GitLab), "has no `/-/` segment", mr),
            ("https://gitlab.com/g/p/-/merge_requests/3", Kind::PullRequest, Some(Gitea), "`/-/` is not", pulls),
            ("https://gitlab.com/g/p/-/merge_requests/3", Kind::PullRequest, Some(GitHub), "`/-/` is not `/pull/`", ""),
            ("https://github.com/o/r/pull/3", Kind::PullRequest, Some(Gitea), "`--forge gitea` but github.com", ""),
        ];
        for (url, kind, forge, needle, shape) in cases {
            let error = parse(url, *kind, *forge).unwrap_err();
            assert!(error.contains(needle), "{url} {forge:?}: {error}");
            assert!(error.contains(shape), "{url} {forge:?}: names the expected shape {shape}: {error}");
        }
    }
}
