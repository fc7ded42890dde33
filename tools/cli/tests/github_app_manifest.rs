//! `github-app.json`, the GitHub App manifest `agent-zero init github-app`
//! registers, holds against GitHub's own descriptions:
//!
//! - its parameters are those GitHub documents for a manifest ("Registering
//!   a GitHub App from a manifest", docs.github.com), each permission is one
//!   of the `app-permissions` schema of GitHub's REST API description with a
//!   level it allows, and each event one GitHub's webhook description
//!   delivers to Apps (`tests/fixtures/github-app/`, extracted from
//!   `@octokit/openapi` and `@octokit/openapi-webhooks`, see its README);
//! - its events are exactly those intake acts on, found by feeding intake
//!   every real payload of `tests/fixtures/github-webhooks/`;
//! - every REST call the product makes (found in its source) is an operation
//!   of GitHub's description, and the permission GitHub requires for it
//!   ("Permissions required for GitHub Apps", docs.github.com, mapped by
//!   hand below: the description carries no permission data) is granted,
//!   and nothing more is.
//!
//! Reads the checkout's files only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agent_zero_github::{IgnoreReason, Intake, IntakeOptions, parse_delivery};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn manifest() -> Value {
    serde_json::from_str(&read("github-app.json")).unwrap()
}

/// The manifest's parameters, as GitHub documents them ("GitHub App
/// manifest parameters").
const MANIFEST_PARAMETERS: &[&str] = &[
    "name",
    "url",
    "hook_attributes",
    "redirect_url",
    "callback_urls",
    "setup_url",
    "description",
    "public",
    "default_events",
    "default_permissions",
    "request_oauth_on_install",
    "setup_on_update",
];

/// Events GitHub delivers to every App without a subscription: `ping` when
/// the webhook is created, `installation` and `installation_repositories`
/// (App-only in GitHub's webhook description) when it is installed.
const ALWAYS_DELIVERED: &[&str] = &["ping", "installation", "installation_repositories"];

/// The repository permission GitHub requires to subscribe an App to an event
/// ("Webhook events and payloads", each event's availability).
const EVENT_PERMISSION: &[(&str, &str)] = &[
    ("issue_comment", "issues"),
    ("issues", "issues"),
    ("pull_request", "pull_requests"),
    ("pull_request_review", "pull_requests"),
    ("pull_request_review_comment", "pull_requests"),
];

#[test]
fn every_parameter_permission_and_event_is_one_github_defines() {
    let manifest = manifest();
    for key in manifest.as_object().unwrap().keys() {
        assert!(MANIFEST_PARAMETERS.contains(&key.as_str()), "`{key}` is not a manifest parameter GitHub documents");
    }
    for key in ["url", "hook_attributes", "default_permissions", "default_events"] {
        assert!(manifest.get(key).is_some(), "the manifest needs `{key}`");
    }
    let hook = manifest["hook_attributes"].as_object().unwrap();
    assert!(hook.keys().all(|k| k == "url" || k == "active"), "hook_attributes: only `url` and `active`");
    assert!(manifest["callback_urls"].as_array().unwrap().len() <= 10, "GitHub takes at most 10 callback URLs");
    assert_eq!(manifest["public"], false, "the App is the deployment's own");

    let schema: Value = serde_json::from_str(&read("tests/fixtures/github-app/app-permissions.json")).unwrap();
    for (permission, level) in manifest["default_permissions"].as_object().unwrap() {
        let defined = &schema["properties"][permission];
        assert!(defined.is_object(), "`{permission}` is not a permission GitHub defines (app-permissions)");
        let levels: Vec<&str> = defined["enum"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(levels.contains(&level.as_str().unwrap()), "{permission}: `{level}` is not one of {levels:?}");
    }

    let events: BTreeMap<&str, &str> = read_static("tests/fixtures/github-app/webhook-events.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .collect();
    let permissions = manifest["default_permissions"].as_object().unwrap();
    for event in manifest["default_events"].as_array().unwrap() {
        let event = event.as_str().unwrap();
        let kinds = events.get(event).unwrap_or_else(|| panic!("`{event}` is not a webhook event GitHub defines"));
        assert!(kinds.split(',').any(|k| k == "app"), "GitHub does not deliver `{event}` to Apps");
        let (_, needs) = EVENT_PERMISSION.iter().find(|(e, _)| *e == event).expect("each event's permission is listed");
        assert!(permissions.contains_key(*needs), "`{event}` needs the `{needs}` permission");
    }
}

/// `read`, leaked: the event table borrows from it for the whole test.
fn read_static(path: &str) -> &'static str {
    Box::leak(read(path).into_boxed_str())
}

#[test]
fn the_events_are_exactly_those_intake_acts_on() {
    let fixtures = root().join("tests/fixtures/github-webhooks");
    let mut acted_on = BTreeSet::new();
    for folder in std::fs::read_dir(&fixtures).unwrap() {
        let folder = folder.unwrap().path();
        if !folder.is_dir() {
            continue;
        }
        let event = folder.file_name().unwrap().to_str().unwrap().to_owned();
        for file in std::fs::read_dir(&folder).unwrap() {
            let body = std::fs::read(file.unwrap().path()).unwrap();
            let delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
            let unsupported = matches!(
                parse_delivery(&event, delivery, &body, &IntakeOptions::default()),
                Ok(Intake::Ignored { reason: IgnoreReason::UnsupportedEvent { .. } })
            );
            if !unsupported {
                acted_on.insert(event.clone());
            }
        }
    }
    let subscribed: BTreeSet<String> =
        acted_on.into_iter().filter(|e| !ALWAYS_DELIVERED.contains(&e.as_str())).collect();
    let listed: BTreeSet<String> =
        manifest()["default_events"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_owned()).collect();
    assert_eq!(listed, subscribed, "default_events must be exactly the events intake acts on");
}

/// What a call needs from GitHub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// A repository permission of the App's installation, at least this level.
    Permission(&'static str, &'static str),
    /// The App's JWT (no installation permission).
    AppJwt,
    /// A person's token: `GITHUB_TOKEN`, or the dashboard's signed-in user.
    UserToken,
}
use Needs::{AppJwt, Permission, UserToken};

/// Every REST call the product makes: the path as the source builds it
/// (placeholders as `*`, `{owner}/{repo}` as `*/*`), GitHub's operation,
/// and what it needs per "Permissions required for GitHub Apps"
/// (docs.github.com/en/rest/authentication/permissions-required-for-github-apps).
/// Issue comments are listed under both "Issues" and "Pull requests" there;
/// `issues` is the one named here.
const CALLS: &[(&str, &str, &str, Needs)] = &[
    ("/repos/*/*", "GET", "/repos/{owner}/{repo}", Permission("metadata", "read")),
    ("/repos/*/*/git/ref/heads/*", "GET", "/repos/{owner}/{repo}/git/ref/{ref}", Permission("contents", "read")),
    ("/repos/*/*/contents/*", "GET", "/repos/{owner}/{repo}/contents/{path}", Permission("contents", "read")),
    ("/repos/*/*/tarball/*", "GET", "/repos/{owner}/{repo}/tarball/{ref}", Permission("contents", "read")),
    ("/repos/*/*/compare/*", "GET", "/repos/{owner}/{repo}/compare/{basehead}", Permission("contents", "read")),
    ("/repos/*/*/git/blobs", "POST", "/repos/{owner}/{repo}/git/blobs", Permission("contents", "write")),
    ("/repos/*/*/git/trees", "POST", "/repos/{owner}/{repo}/git/trees", Permission("contents", "write")),
    ("/repos/*/*/git/commits", "POST", "/repos/{owner}/{repo}/git/commits", Permission("contents", "write")),
    (
        "/repos/*/*/git/commits/*",
        "GET",
        "/repos/{owner}/{repo}/git/commits/{commit_sha}",
        Permission("contents", "read"),
    ),
    ("/repos/*/*/git/refs", "POST", "/repos/{owner}/{repo}/git/refs", Permission("contents", "write")),
    ("/repos/*/*/pulls", "GET", "/repos/{owner}/{repo}/pulls", Permission("pull_requests", "read")),
    ("/repos/*/*/pulls", "POST", "/repos/{owner}/{repo}/pulls", Permission("pull_requests", "write")),
    ("/repos/*/*/pulls/*", "GET", "/repos/{owner}/{repo}/pulls/{pull_number}", Permission("pull_requests", "read")),
    (
        "/repos/*/*/pulls/*/files",
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/files",
        Permission("pull_requests", "read"),
    ),
    (
        "/repos/*/*/pulls/*/reviews",
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        Permission("pull_requests", "read"),
    ),
    (
        "/repos/*/*/pulls/*/reviews",
        "POST",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        Permission("pull_requests", "write"),
    ),
    (
        "/repos/*/*/pulls/*/comments",
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
        Permission("pull_requests", "read"),
    ),
    (
        "/repos/*/*/pulls/*/comments/*/replies",
        "POST",
        "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies",
        Permission("pull_requests", "write"),
    ),
    (
        "/repos/*/*/pulls/comments/*",
        "PATCH",
        "/repos/{owner}/{repo}/pulls/comments/{comment_id}",
        Permission("pull_requests", "write"),
    ),
    // An issue task's issue, read at creation (`agent-zero fix`, docs/task-api.md).
    ("/repos/*/*/issues/*", "GET", "/repos/{owner}/{repo}/issues/{issue_number}", Permission("issues", "read")),
    (
        "/repos/*/*/issues/*/comments",
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        Permission("issues", "read"),
    ),
    (
        "/repos/*/*/issues/*/comments",
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        Permission("issues", "write"),
    ),
    (
        "/repos/*/*/issues/comments/*",
        "PATCH",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        Permission("issues", "write"),
    ),
    (
        "/repos/*/*/issues/comments/*",
        "DELETE",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        Permission("issues", "write"),
    ),
    (
        "/repos/*/*/issues/comments/*/reactions",
        "POST",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
        Permission("issues", "write"),
    ),
    ("/repos/*/*/check-runs", "POST", "/repos/{owner}/{repo}/check-runs", Permission("checks", "write")),
    (
        "/repos/*/*/check-runs/*",
        "PATCH",
        "/repos/{owner}/{repo}/check-runs/{check_run_id}",
        Permission("checks", "write"),
    ),
    (
        "/repos/*/*/commits/*/check-runs",
        "GET",
        "/repos/{owner}/{repo}/commits/{ref}/check-runs",
        Permission("checks", "read"),
    ),
    // A deployment with `GITHUB_TOKEN` reports a commit status where an
    // App writes its check run (GitHub lets only Apps write checks).
    ("/repos/*/*/statuses/*", "POST", "/repos/{owner}/{repo}/statuses/{sha}", UserToken),
    ("/app", "GET", "/app", AppJwt),
    ("/app/installations/*/access_tokens", "POST", "/app/installations/{installation_id}/access_tokens", AppJwt),
    // An API task's installation, looked up at creation (docs/task-api.md).
    ("/repos/*/*/installation", "GET", "/repos/{owner}/{repo}/installation", AppJwt),
    // Who `GITHUB_TOKEN` is; and the dashboard's signed-in person.
    ("/user", "GET", "/user", UserToken),
    // The dashboard's organisation grants. GitHub answers an App's user
    // token an empty list here (docs/github.md, "Dashboard sign-in with the same App").
    ("/user/orgs", "GET", "/user/orgs", UserToken),
];

/// Operations the product calls with an installation token that GitHub's
/// description marks `enabledForGitHubApps: false`. Listed so the test
/// fails when the mark changes (or another such call appears); the known
/// fallback for a reply refused to an App is `POST .../pulls/{n}/comments`
/// with `in_reply_to`, which is marked enabled (docs/github.md).
const MARKED_NOT_FOR_APPS: &[(&str, &str)] =
    &[("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies")];

/// The REST paths the product's source builds: each string literal of
/// `shared/` (outside comments and test modules) holding a GitHub API path,
/// normalised like [`CALLS`]'s first column.
fn paths_in_source() -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root().join("shared")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                // shared/forges reads GitLab's and Gitea's payloads by JSON
                // pointer (`/user/username`) and calls no GitHub API.
                if !path.ends_with("tests") && !path.ends_with("benches") && !path.ends_with("forges") {
                    stack.push(path);
                }
                continue;
            }
            let name = path.file_name().unwrap().to_str().unwrap();
            if !name.ends_with(".rs") || name.ends_with("_tests.rs") || name == "tests.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (index, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("#[cfg(test)]") {
                    break;
                }
                if line.trim_start().starts_with("//") {
                    continue;
                }
                for literal in line.split('"').skip(1).step_by(2) {
                    if let Some(normal) = normalise(literal) {
                        let place = format!("{}:{}", path.strip_prefix(root()).unwrap().display(), index + 1);
                        found.entry(normal).or_insert(place);
                    }
                }
            }
        }
    }
    found
}

/// `literal`'s GitHub API path with placeholders as `*`, if it holds one.
fn normalise(literal: &str) -> Option<String> {
    let literal = literal.strip_prefix("{}").unwrap_or(literal);
    let api = ["/repos/", "/app", "/user"].iter().any(|p| literal.starts_with(p));
    if !api || literal.starts_with("/repos/o/") {
        return None;
    }
    let path = literal.split('?').next().unwrap();
    let mut segments: Vec<&str> = Vec::new();
    for (i, segment) in path.split('/').enumerate() {
        match segment {
            // `{repo_path}` and the client's `{}` are `owner/repo`.
            "{}" | "{repo_path}" if i == 2 => segments.extend(["*", "*"]),
            s if s.contains('{') => segments.push("*"),
            s => segments.push(s),
        }
    }
    Some(segments.join("/"))
}

#[test]
fn every_rest_call_the_product_makes_is_covered_by_a_permission_in_the_manifest() {
    let operations: BTreeMap<(String, String), bool> = read("tests/fixtures/github-app/rest-operations.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let columns: Vec<&str> = l.split('\t').collect();
            ((columns[0].to_owned(), columns[1].to_owned()), columns[3] == "apps")
        })
        .collect();

    // The table is the source's calls, no more and no fewer.
    let found = paths_in_source();
    for (path, place) in &found {
        assert!(CALLS.iter().any(|c| c.0 == path), "{place} calls `{path}`, which CALLS does not list");
    }
    for (path, method, ..) in CALLS {
        assert!(found.contains_key(*path), "CALLS lists {method} `{path}`, which the source no longer builds");
    }

    let manifest = manifest();
    let granted = manifest["default_permissions"].as_object().unwrap();
    let mut needed: BTreeMap<&str, &str> = BTreeMap::new();
    for (path, method, operation, needs) in CALLS {
        let key = ((*method).to_owned(), (*operation).to_owned());
        let apps = operations.get(&key);
        assert!(apps.is_some(), "{method} {operation} ({path}) is not an operation of GitHub's REST API");
        if let Permission(permission, level) = needs {
            let marked = MARKED_NOT_FOR_APPS.contains(&(*method, *operation));
            assert_eq!(apps, Some(&!marked), "{method} {operation}: GitHub's enabledForGitHubApps is not {}", !marked);
            let has = granted.get(*permission).and_then(Value::as_str);
            assert!(
                has == Some("write") || has == Some(level),
                "{method} {operation} needs `{permission}: {level}`; the manifest grants {has:?}"
            );
            let entry = needed.entry(permission).or_insert(level);
            if *level == "write" {
                *entry = "write";
            }
        }
    }
    // Exactly: nothing granted that no call needs, no level above the need.
    let granted: BTreeMap<&str, &str> = granted.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap())).collect();
    assert_eq!(granted, needed, "default_permissions must be exactly what the calls need");
}

/// The permission each call above is listed under is GitHub's own: its
/// docs' table of what an installation token needs per operation
/// (`tests/fixtures/github-app/server-to-server-permissions.tsv`) lists the
/// operation under that permission at that access. The loopback GitHub
/// enforces the same table (`tests/fakes/src/github/permissions.rs`).
#[test]
fn each_calls_permission_is_the_one_githubs_table_lists() {
    let table = read("tests/fixtures/github-app/server-to-server-permissions.tsv");
    let rows: Vec<Vec<&str>> = table.lines().skip(1).map(|line| line.split('\t').collect()).collect();
    for (_, method, operation, needs) in CALLS {
        let Permission(permission, level) = needs else { continue };
        let verb = method.to_ascii_lowercase();
        let listed: Vec<(&str, &str)> = rows
            .iter()
            .filter(|r| r[1] == verb && r[2] == *operation && r[4] == "true")
            .map(|r| (r[0], r[3]))
            .collect();
        assert!(
            listed.contains(&(*permission, *level)),
            "{method} {operation}: GitHub's table lists {listed:?}, CALLS says {permission}: {level}"
        );
    }
}
