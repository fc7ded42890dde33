//! Which repositories a dashboard grant covers, and what a signed-in
//! person may see and do in one repository.
//!
//! A grant's scope is `@pattern|pattern` after its modes: `owner/name`,
//! `owner/*` (every repository of `owner`) or `*` (all). Without one, a
//! user grant covers every repository (the operator named that person) and
//! an organisation grant covers that organisation's repositories only
//! (`acme` is `acme@acme/*`). Names compare ASCII case-insensitively, as
//! GitHub's do. Pure: patterns and repository names in, answers out.

use agent_zero_contracts::RunMode;

use crate::access::Principal;

/// One pattern of a grant's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// `*`: every repository.
    All,
    /// `owner/*`, the owner in lower case.
    Owner(String),
    /// `owner/name`, in lower case.
    Repository(String),
}

impl Pattern {
    /// `owner/name`, `owner/*` or `*`; `None` for anything else.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text == "*" {
            return Some(Self::All);
        }
        let (owner, name) = text.split_once('/')?;
        if !is_github_login(owner) {
            return None;
        }
        if name == "*" {
            return Some(Self::Owner(owner.to_ascii_lowercase()));
        }
        is_repository_name(name).then(|| Self::Repository(text.to_ascii_lowercase()))
    }

    /// Whether this pattern covers `repository` (`owner/name`).
    pub(crate) fn covers(&self, repository: &str) -> bool {
        match self {
            Self::All => true,
            Self::Owner(owner) => repository
                .split_once('/')
                .is_some_and(|(o, name)| o.eq_ignore_ascii_case(owner) && !name.is_empty() && !name.contains('/')),
            Self::Repository(exact) => exact.eq_ignore_ascii_case(repository),
        }
    }
}

/// GitHub's rule for a repository name: 1 to 100 letters, digits, `.`,
/// `_` or `-`, and neither `.` nor `..`.
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
    /// Whether any grant covers `repository`.
    pub(crate) fn covers(&self, repository: &str) -> bool {
        self.grants.iter().any(|g| g.scope.iter().any(|p| p.covers(repository)))
    }

    /// Whether a grant covers every repository (`*`).
    pub(crate) fn covers_all(&self) -> bool {
        self.grants.iter().any(|g| g.scope.contains(&Pattern::All))
    }

    /// The one repository every grant is limited to, when there is one:
    /// the task list then reads that repository's index alone.
    pub(crate) fn only_repository(&self) -> Option<&str> {
        let mut patterns = self.grants.iter().flat_map(|g| g.scope.iter());
        let Some(Pattern::Repository(first)) = patterns.next() else { return None };
        patterns.all(|p| p == &Pattern::Repository(first.clone())).then_some(first.as_str())
    }

    /// The principal acting on a task of `repository`: the union of the
    /// modes of the grants that cover it (none when none does).
    pub(crate) fn principal_for(&self, repository: &str) -> Principal {
        let mut modes: Vec<RunMode> = Vec::new();
        let covering = self.grants.iter().filter(|g| g.scope.iter().any(|p| p.covers(repository)));
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
        assert_eq!(Pattern::parse("*"), Some(Pattern::All));
        assert_eq!(Pattern::parse(" Acme/* "), Some(Pattern::Owner("acme".into())));
        assert_eq!(Pattern::parse("Acme/Widgets.rs"), Some(Pattern::Repository("acme/widgets.rs".into())));
        for bad in
            ["", "acme", "acme/", "/widgets", "acme/wid gets", "acme/a/b", "-acme/x", "acme/..", "acme/**", "a*/x"]
        {
            assert_eq!(Pattern::parse(bad), None, "{bad:?}");
        }
        let owner = Pattern::Owner("acme".into());
        assert!(owner.covers("ACME/widgets") && !owner.covers("acme-ops/widgets") && !owner.covers("acme"));
        assert!(!owner.covers("acme/") && !owner.covers("other/acme"));
        let exact = Pattern::Repository("acme/widgets".into());
        assert!(exact.covers("Acme/Widgets") && !exact.covers("acme/widgets2") && !exact.covers("acme/tools"));
        assert!(Pattern::All.covers("anyone/anything"));
    }
}
