//! What an installation token may do, as GitHub decides it: an App's
//! installation is granted the permissions the App asked for (its
//! manifest's `default_permissions`), a token gets those or the subset its
//! request names (more is 422), and a repository route its token lacks the
//! permission for is 403 "Resource not accessible by integration".
//!
//! Each route's permission is the one GitHub's REST reference lists under
//! "Fine-grained access tokens" / "GitHub App installation access tokens"
//! for the endpoint (docs.github.com/en/rest, API version 2022-11-28),
//! for the routes this fake serves. Tokens given with `require_token`
//! (a person's) are not narrowed: their scopes are not modelled.

use std::collections::BTreeMap;

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

/// The permissions (any one of them) and level a repository route
/// (`rest`, under `/repos/{o}/{r}/`) needs; `None` for what needs only
/// the installation (`metadata: read`, which every installation has).
pub(crate) fn required(method: &str, rest: &[&str]) -> Option<(&'static [&'static str], &'static str)> {
    let level = if method == "GET" { "read" } else { "write" };
    Some(match rest {
        [] | ["collaborators", ..] | ["installation"] => return None,
        ["check-runs", ..] | ["commits", _, "check-runs"] => (&["checks"], level),
        ["statuses", ..] | ["commits", _, "statuses"] => (&["statuses"], level),
        ["commits", ..] | ["contents", ..] | ["git", ..] | ["compare", ..] | ["tarball", ..] => (&["contents"], level),
        ["pulls", ..] => (&["pull_requests"], level),
        // An issue's comments, and a pull request's conversation comments
        // (the same endpoints: either permission opens them), and their reactions.
        ["issues", ..] => (&["issues", "pull_requests"], level),
        _ => return None,
    })
}

/// 403 as GitHub answers it when `grants` lacks what `method` on `rest` needs.
pub(crate) fn refusal(grants: &Grants, method: &str, rest: &[&str]) -> Option<&'static str> {
    let (permissions, level) = required(method, rest)?;
    (!permissions.iter().any(|p| holds(grants, p, level))).then_some("Resource not accessible by integration")
}
