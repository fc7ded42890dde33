//! Which repositories a dashboard grant covers, and what a signed-in
//! person may see and do in one repository.
//!
//! A grant's scope is `@pattern|pattern` after its modes: `owner/name`,
//! `owner/*` (every repository of `owner`) or `*` (all). Without one, a
//! user grant covers every repository (the operator named that person) and
//! an organisation grant covers that organisation's repositories only
//! (`acme` is `acme@acme/*`). Names compare ASCII case-insensitively, as
//! GitHub's do. Pure: patterns and repository names in, answers out.

use agent_zero_contracts::{ForgeKind, RunMode};

use crate::access::Principal;

/// One pattern of a grant's scope. A pattern names its forge: `owner/name`
/// and `owner/*` are GitHub's; `gitlab:`, `gitea:` or `forgejo:` before
/// one makes it that forge's (`gitlab:group/*` covers the group's projects
/// and its subgroups'). Only `*` covers every forge: a GitHub owner's
/// grant never covers a namesake's repositories on another forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// `*`: every repository.
    All,
    /// `owner/*`, the owner in lower case.
    Owner(ForgeKind, String),
    /// `owner/name`, in lower case.
    Repository(ForgeKind, String),
}

impl Pattern {
    /// `[forge:]owner/name`, `[forge:]owner/*` or `*`; `None` for anything else.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text == "*" {
            return Some(Self::All);
        }
        let (forge, path) = match text.split_once(':') {
            // `github:` is not a prefix: GitHub's patterns have none.
            Some((name, path)) => (ForgeKind::parse(name).filter(|f| !f.is_github())?, path),
            None => (ForgeKind::GitHub, text),
        };
        let (owner, name) = path.rsplit_once('/')?;
        let owner_ok = match forge {
            ForgeKind::GitHub => is_github_login(owner),
            ForgeKind::GitLab => owner.split('/').all(is_repository_name) && !owner.starts_with('-'),
            ForgeKind::Gitea | ForgeKind::Forgejo => is_repository_name(owner),
        };
        if !owner_ok {
            return None;
        }
        if name == "*" {
            return Some(Self::Owner(forge, owner.to_ascii_lowercase()));
        }
        is_repository_name(name).then(|| Self::Repository(forge, path.to_ascii_lowercase()))
    }

    /// Whether this pattern covers `repository` (its path) on `forge`.
    pub(crate) fn covers(&self, forge: ForgeKind, repository: &str) -> bool {
        match self {
            Self::All => true,
            Self::Owner(on, owner) => {
                *on == forge
                    && repository.len() > owner.len() + 1
                    && repository.is_char_boundary(owner.len())
                    && repository[..owner.len()].eq_ignore_ascii_case(owner)
                    && repository[owner.len()..]
                        .strip_prefix('/')
                        .is_some_and(|name| !name.is_empty() && (forge == ForgeKind::GitLab || !name.contains('/')))
            }
            Self::Repository(on, exact) => *on == forge && exact.eq_ignore_ascii_case(repository),
        }
    }
}

fn is_repository_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && name != "."
        && name != ".."
}

/// A GitHub account (user or organisation), the modes it is granted and
/// the repositories the grant covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    /// Lower case (GitHub logins are case-insensitive).
    pub(crate) login: String,
    /// The account's numeric id (`login#id`): when given, the grant follows
    /// the account, not the name (a released login can be taken by anyone).
    pub(crate) id: Option<u64>,
    pub(crate) modes: Vec<RunMode>,
    /// `@pattern|pattern`; without it `*` for a user, `org/*` for an
    /// organisation.
    pub(crate) scope: Vec<Pattern>,
}

/// GitHub's rule: 1 to 39 letters, digits or single inner hyphens.
pub(crate) fn is_github_login(login: &str) -> bool {
    (1..=39).contains(&login.len())
        && login.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !login.starts_with('-')
        && !login.ends_with('-')
        && !login.contains("--")
}

/// What one signed-in person may do: the grants that name it now (its
/// user grant and those of the allowed organisations it belonged to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Access<'s> {
    /// `github:<login>`, lower case.
    pub(crate) name: String,
    pub(crate) grants: Vec<&'s Grant>,
}

impl Access<'_> {
    /// Whether any grant covers `repository` on `forge`.
    pub(crate) fn covers(&self, forge: ForgeKind, repository: &str) -> bool {
        self.grants.iter().any(|g| g.scope.iter().any(|p| p.covers(forge, repository)))
    }

    /// Whether any grant covers a repository of this path on some forge:
    /// what a filter by path may read (its rows are then checked one by
    /// one with [`Self::covers`]).
    pub(crate) fn covers_path(&self, repository: &str) -> bool {
        [ForgeKind::GitHub, ForgeKind::GitLab, ForgeKind::Gitea, ForgeKind::Forgejo]
            .into_iter()
            .any(|forge| self.covers(forge, repository))
    }

    /// Whether a grant covers every repository (`*`).
    pub(crate) fn covers_all(&self) -> bool {
        self.grants.iter().any(|g| g.scope.contains(&Pattern::All))
    }

    /// The one repository every grant is limited to, when there is one:
    /// the task list then reads that repository's index alone.
    pub(crate) fn only_repository(&self) -> Option<&str> {
        let mut patterns = self.grants.iter().flat_map(|g| g.scope.iter());
        let Some(Pattern::Repository(_, first)) = patterns.next() else { return None };
        patterns.all(|p| matches!(p, Pattern::Repository(_, path) if path == first)).then_some(first.as_str())
    }

    /// The principal acting on a task of `repository` on `forge`: the
    /// union of the modes of the grants that cover it (none when none does).
    pub(crate) fn principal_for(&self, forge: ForgeKind, repository: &str) -> Principal {
        let mut modes: Vec<RunMode> = Vec::new();
        let covering = self.grants.iter().filter(|g| g.scope.iter().any(|p| p.covers(forge, repository)));
        for mode in covering.flat_map(|g| g.modes.iter()) {
            if !modes.contains(mode) {
                modes.push(*mode);
            }
        }
        Principal { name: self.name.clone(), modes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_cover_case_insensitively() {
        use ForgeKind::{GitHub, GitLab};
        assert_eq!(Pattern::parse("*"), Some(Pattern::All));
        assert_eq!(Pattern::parse(" Acme/* "), Some(Pattern::Owner(GitHub, "acme".into())));
        assert_eq!(Pattern::parse("Acme/Widgets.rs"), Some(Pattern::Repository(GitHub, "acme/widgets.rs".into())));
        for bad in
            ["", "acme", "acme/", "/widgets", "acme/wid gets", "acme/a/b", "-acme/x", "acme/..", "acme/**", "a*/x"]
        {
            assert_eq!(Pattern::parse(bad), None, "{bad:?}");
        }
        let owner = Pattern::Owner(GitHub, "acme".into());
        assert!(
            owner.covers(GitHub, "ACME/widgets")
                && !owner.covers(GitHub, "acme-ops/widgets")
                && !owner.covers(GitHub, "acme")
        );
        assert!(!owner.covers(GitHub, "acme/") && !owner.covers(GitHub, "other/acme"));
        let exact = Pattern::Repository(GitHub, "acme/widgets".into());
        assert!(
            exact.covers(GitHub, "Acme/Widgets")
                && !exact.covers(GitHub, "acme/widgets2")
                && !exact.covers(GitHub, "acme/tools")
        );
        assert!(Pattern::All.covers(GitHub, "anyone/anything") && Pattern::All.covers(GitLab, "a/b/c"));
    }

    /// A pattern covers its own forge's repositories only: a GitHub owner's
    /// grant never reaches a namesake's repositories on GitLab or Gitea.
    #[test]
    fn patterns_name_their_forge() {
        use ForgeKind::{Forgejo, GitHub, GitLab, Gitea};
        let github = Pattern::parse("acme/*").unwrap();
        assert!(github.covers(GitHub, "acme/widgets"));
        assert!(!github.covers(Gitea, "acme/widgets") && !github.covers(GitLab, "acme/widgets"));
        assert!(!Pattern::parse("acme/widgets").unwrap().covers(Forgejo, "acme/widgets"));
        let group = Pattern::parse("gitlab:Acme/*").unwrap();
        assert_eq!(group, Pattern::Owner(GitLab, "acme".into()));
        assert!(group.covers(GitLab, "acme/widgets") && group.covers(GitLab, "acme/tools/widgets"));
        assert!(!group.covers(GitHub, "acme/widgets") && !group.covers(GitLab, "acme-ops/widgets"));
        let nested = Pattern::parse("gitlab:acme/tools/widgets").unwrap();
        assert!(nested.covers(GitLab, "Acme/Tools/Widgets") && !nested.covers(GitLab, "acme/tools"));
        let gitea = Pattern::parse("gitea:acme/widgets").unwrap();
        assert!(gitea.covers(Gitea, "acme/widgets") && !gitea.covers(Forgejo, "acme/widgets"));
        for bad in ["gitea:acme/a/b", "bitbucket:acme/x", "gitlab:acme", "gitlab:/x", "gitea:*"] {
            assert_eq!(Pattern::parse(bad), None, "{bad:?}");
        }
    }
}
