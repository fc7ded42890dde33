//! What an installation token may do, as GitHub decides it: an App's
//! installation is granted the permissions the App asked for (its
//! manifest's `default_permissions`), a token gets those or the subset its
//! request names (more is 422), and a repository route its token lacks the
//! permission for is 403 "Resource not accessible by integration".
//!
//! Each route's permission is GitHub's own (its docs' data, API version
//! 2022-11-28, [`PERMISSIONS`]). Tokens given with `require_token` (a
//! person's) are not narrowed: their scopes are not modelled.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::Value;

/// `read` or `write` of one permission (`write` includes `read`).
pub(crate) type Grants = BTreeMap<String, String>;

fn rank(level: &str) -> u8 {
    match level {
        "write" | "admin" => 2,
        "read" => 1,
        _ => 0,
    }
}

/// Whether `grants` holds `permission` at `level` or above.
pub(crate) fn holds(grants: &Grants, permission: &str, level: &str) -> bool {
    grants.get(permission).is_some_and(|held| rank(held) >= rank(level))
}

/// The token's grants for a request naming `requested` (an object of
/// permission → level, or absent) on an installation granted `granted`;
/// `Err` naming the first permission asked beyond the grant.
pub(crate) fn narrowed(granted: &Grants, requested: Option<&Value>) -> Result<Grants, String> {
    let Some(requested) = requested.and_then(Value::as_object) else { return Ok(granted.clone()) };
    let mut grants = Grants::new();
    for (permission, level) in requested {
        let level = level.as_str().unwrap_or_default();
        if !holds(granted, permission, level) {
            return Err(format!(
                "The permissions requested are not granted to this installation ({permission}: {level})."
            ));
        }
        grants.insert(permission.clone(), level.to_owned());
    }
    Ok(grants)
}

/// GitHub's own table of what an installation token needs per REST
/// operation, for the repository permissions the product's App asks for
/// (`tests/fixtures/github-app/server-to-server-permissions.tsv`, from
/// github/docs: the data behind "Permissions required for GitHub Apps").
const PERMISSIONS: &str = include_str!("../../../fixtures/github-app/server-to-server-permissions.tsv");

/// [`PERMISSIONS`]' rows (permission, verb, path, access, server to
/// server, additional permissions), split once for every request after.
static TABLE: LazyLock<Vec<[&'static str; 6]>> = LazyLock::new(|| {
    PERMISSIONS.lines().skip(1).filter_map(|line| line.split('\t').collect::<Vec<_>>().try_into().ok()).collect()
});

/// Whether `template`'s path (`/repos/{owner}/{repo}/contents/{path}`)
/// names `segments`, a `{placeholder}` standing for one segment; with
/// `rest`, a `{path}` or `{ref}` ending the template stands for all that
/// are left (a file's path, a ref with slashes).
fn names(template: &str, segments: &[&str], rest: bool) -> bool {
    let parts: Vec<&str> = template.trim_start_matches('/').split('/').collect();
    let fits = segments.len() == parts.len()
        || (rest && segments.len() > parts.len() && parts.last().is_some_and(|p| matches!(*p, "{path}" | "{ref}")));
    fits && parts.iter().zip(segments).all(|(part, segment)| part.starts_with('{') || part == segment)
}

/// The permissions (any one of them) and level a repository route
/// (`rest`, under `/repos/{o}/{r}/`) needs, as GitHub's table lists them
/// for `method`; `None` for a route the table does not list for these
/// permissions (then nothing is required of the token here).
pub(crate) fn required(method: &str, rest: &[&str]) -> Option<(Vec<&'static str>, &'static str)> {
    let verb = method.to_ascii_lowercase();
    let mut segments = vec!["repos", "{owner}", "{repo}"];
    segments.extend_from_slice(rest);
    // The operation of exactly these segments; failing that, one whose
    // last placeholder takes the rest.
    let mut permissions: Vec<&'static str> = Vec::new();
    let mut level = "read";
    for rest in [false, true] {
        for [permission, line_verb, path, access, server_to_server, _] in TABLE.iter() {
            if *line_verb == verb && *server_to_server == "true" && names(path, &segments, rest) {
                if !permissions.contains(permission) {
                    permissions.push(permission);
                }
                level = access;
            }
        }
        if !permissions.is_empty() {
            break;
        }
    }
    (!permissions.is_empty()).then_some((permissions, level))
}

/// 403 as GitHub answers it when `grants` lacks what `method` on `rest` needs.
pub(crate) fn refusal(grants: &Grants, method: &str, rest: &[&str]) -> Option<&'static str> {
    let (permissions, level) = required(method, rest)?;
    (!permissions.iter().any(|p| holds(grants, p, level))).then_some("Resource not accessible by integration")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_need_what_githubs_table_says() {
        assert_eq!(required("GET", &["pulls", "1", "files"]), Some((vec!["pull_requests"], "read")));
        assert_eq!(required("POST", &["issues", "3", "comments"]), Some((vec!["issues", "pull_requests"], "write")));
        assert_eq!(required("GET", &["contents", "src", "app.py"]), Some((vec!["contents"], "read")));
        assert_eq!(required("POST", &["statuses", "abc"]), Some((vec!["statuses"], "write")));
        assert_eq!(required("GET", &[]), Some((vec!["metadata"], "read")));
    }
}
