//! FakeGitea over real HTTP: every served route is an operation of Gitea's
//! swagger, auth refusals (401, 403 for a missing scope), reads, the
//! `ChangeFiles` write read back, `CreateBranch`, archives, statuses, comments, pull
//! requests and reviews, and the conformance gate (404, 422, violations).

mod support;

use agent_zero_fakes::conformance::{ApiDescription, Violation};
use agent_zero_fakes::{FakeGitea, FixtureRepo, GITEA_REST_PARAMETERS, GITEA_SWAGGER, calc};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use support::{Answer, send};

const TOKEN: &str = "gta_operator";
const BOT: &str = "agent-zero-bot";
const LONG: &str = "def long_function_name(argument_one, argument_two):\n    return argument_one\n";

/// `octo/demo` with the bot a writer holding every scope the product uses.
fn seeded() -> (FakeGitea, String) {
    let gitea = FakeGitea::start();
    let sha = gitea.add_repo(
        "octo",
        "demo",
        "main",
        &[("README.md", "# demo\n"), ("src/app.py", LONG), ("src/lib/util.py", "X = 1\n")],
    );
    gitea.add_user_token(BOT, TOKEN, &["write:repository", "write:issue", "read:user"]);
    gitea.set_permission("octo", "demo", BOT, "write");
    (gitea, sha)
}

/// Sends a request; a JSON success answer must be the operation's declared
/// response in the swagger (its shape, no undeclared field).
fn call(gitea: &FakeGitea, token: Option<&str>, method: &str, path: &str, body: Option<Value>) -> Answer {
    let header = token.map(|t| format!("token {t}"));
    let headers: Vec<(&str, &str)> = header.as_deref().map(|h| vec![("authorization", h)]).unwrap_or_default();
    let answer = send(method, &format!("{}/api/v1{path}", gitea.url()), &headers, body.as_ref());
    if answer.header("content-type").is_some_and(|t| t.starts_with("application/json")) {
        let bare = format!("/api/v1{}", path.split('?').next().unwrap_or(path));
        // Gitea answers a directory's `contents/{filepath}` with a list of
        // what the swagger declares (its description says so; its schema
        // does not): each entry is checked.
        let listing = bare.contains("/contents/") && answer.body.starts_with('[');
        let bodies: Vec<Vec<u8>> = if listing {
            answer.json().as_array().unwrap().iter().map(|e| e.to_string().into_bytes()).collect()
        } else {
            vec![answer.body.clone().into_bytes()]
        };
        for body in bodies {
            match api().check_response(method, &bare, answer.status, &body) {
                Ok(_) | Err(Violation::NoOperation { .. }) => {}
                Err(other) => panic!("the fake's answer to {method} {path}: {other}\n{}", answer.body),
            }
        }
    }
    answer
}

fn api() -> &'static ApiDescription {
    static API: std::sync::OnceLock<ApiDescription> = std::sync::OnceLock::new();
    API.get_or_init(|| ApiDescription::swagger2(GITEA_SWAGGER).unwrap().with_rest_parameters(&GITEA_REST_PARAMETERS))
}

fn get(gitea: &FakeGitea, path: &str) -> Answer {
    call(gitea, Some(TOKEN), "GET", path, None)
}

fn bytes(url: &str) -> (u16, Vec<u8>) {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut response = agent.get(url).header("authorization", format!("token {TOKEN}")).call().unwrap();
    (response.status().as_u16(), response.body_mut().read_to_vec().unwrap())
}

fn is_sha(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The git blob id of `content`, as `git hash-object` computes it.
fn git_blob_sha(content: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, content).unwrap();
    let out = std::process::Command::new("git").arg("hash-object").arg(&file).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn every_served_route_is_an_operation_of_the_swagger() {
    let api = api();
    let served = FakeGitea::served_operations();
    assert!(served.len() >= 20, "{served:?}");
    for (operation, method, sample) in served {
        let body = (method != "GET").then(|| match operation {
            "repoChangeFiles" => json!({"files": []}),
            "repoCreateBranch" => json!({"new_branch_name": "x"}),
            "issueCreateComment" | "issueEditComment" => json!({"body": "x"}),
            _ => json!({}),
        });
        let body = body.map(|b| b.to_string().into_bytes());
        let got = api.check(method, sample, &[], body.as_deref());
        assert_eq!(got.as_ref().map(|id| id.as_str()), Ok(operation), "{method} {sample}");
    }
}

#[test]
fn tokens_are_checked_and_scopes_enforced_as_gitea_does() {
    let (gitea, _) = seeded();
    gitea.add_user_token("reader", "gta_reader", &["read:repository"]);
    gitea.add_user_token("issues-only", "gta_issues", &["read:issue"]);

    let anonymous = call(&gitea, None, "GET", "/user", None);
    assert_eq!((anonymous.status, anonymous.json()["message"].as_str()), (401, Some("token is required")));
    assert!(anonymous.json()["url"].as_str().unwrap().ends_with("/api/swagger"));
    assert_eq!(call(&gitea, Some("gta_wrong"), "GET", "/repos/octo/demo", None).status, 401);
    let bearer =
        send("GET", &format!("{}/api/v1/user", gitea.url()), &[("authorization", &format!("Bearer {TOKEN}"))], None);
    assert_eq!((bearer.status, bearer.json()["login"].as_str()), (200, Some(BOT)));
    assert!(bearer.json()["id"].is_u64());

    // Reads of a public repository need no token; writes do.
    assert_eq!(call(&gitea, None, "GET", "/repos/octo/demo", None).status, 200);
    let write = call(&gitea, None, "POST", "/repos/octo/demo/issues/1/comments", Some(json!({"body": "x"})));
    assert_eq!(write.status, 401);

    // Scopes per category and level, before the repository is looked up.
    let no_user = call(&gitea, Some("gta_reader"), "GET", "/user", None);
    assert_eq!(no_user.status, 403);
    assert_eq!(no_user.json()["message"], "token does not have at least one of required scope(s): [read:user]");
    let status = json!({"state": "success", "context": "agent-zero"});
    let sha = gitea.branch_sha("octo", "demo", "main").unwrap();
    let read_only = call(&gitea, Some("gta_reader"), "POST", &format!("/repos/octo/demo/statuses/{sha}"), Some(status));
    assert_eq!(
        read_only.json()["message"],
        "token does not have at least one of required scope(s): [write:repository]"
    );
    let issue_scope = call(&gitea, Some("gta_reader"), "GET", "/repos/octo/demo/issues/1", None);
    assert_eq!(issue_scope.json()["message"], "token does not have at least one of required scope(s): [read:issue]");
    let repo_scope = call(&gitea, Some("gta_issues"), "GET", "/repos/nobody/nothing", None);
    assert_eq!(
        (repo_scope.status, repo_scope.json()["message"].as_str().unwrap().ends_with("[read:repository]")),
        (403, true)
    );
    // write: implies read:.
    assert_eq!(get(&gitea, "/repos/octo/demo/contents/README.md").status, 200);

    // Private: a 404 to anyone without access, permissions for the rest.
    gitea.set_private("octo", "demo", true);
    assert_eq!(call(&gitea, None, "GET", "/repos/octo/demo", None).status, 404);
    assert_eq!(call(&gitea, Some("gta_reader"), "GET", "/repos/octo/demo", None).status, 404);
    let repo = get(&gitea, "/repos/octo/demo").json();
    assert_eq!(repo["permissions"], json!({"admin": false, "push": true, "pull": true}));
    assert_eq!(repo["private"], true);
}

#[test]
fn repository_contents_raw_and_branches_have_giteas_shapes() {
    let (gitea, head) = seeded();
    let repo = get(&gitea, "/repos/octo/demo");
    assert_eq!(repo.header("content-type"), Some("application/json; charset=utf-8"));
    let repo = repo.json();
    assert_eq!((repo["full_name"].as_str(), repo["default_branch"].as_str()), (Some("octo/demo"), Some("main")));
    assert_eq!(repo["html_url"].as_str(), Some(format!("{}/octo/demo", gitea.url()).as_str()));
    assert_eq!(repo["owner"]["login"], "octo");

    let file = get(&gitea, "/repos/octo/demo/contents/src/app.py?ref=main").json();
    assert_eq!((file["type"].as_str(), file["encoding"].as_str()), (Some("file"), Some("base64")));
    assert_eq!(file["sha"].as_str(), Some(git_blob_sha(LONG).as_str()), "the git blob sha");
    assert_eq!(STANDARD.decode(file["content"].as_str().unwrap()).unwrap(), LONG.as_bytes());
    assert_eq!(file["last_commit_sha"].as_str(), Some(head.as_str()));
    let listing = get(&gitea, "/repos/octo/demo/contents/src").json();
    let names: Vec<(&str, &str)> = listing
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["type"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("src/app.py", "file"), ("src/lib", "dir")]);
    assert_eq!(get(&gitea, "/repos/octo/demo/contents/missing.txt").status, 404);
    assert_eq!(get(&gitea, "/repos/octo/demo/contents/README.md?ref=nope").status, 404);

    let raw = get(&gitea, "/repos/octo/demo/raw/src/lib/util.py?ref=main");
    assert_eq!((raw.status, raw.body.as_str()), (200, "X = 1\n"));
    assert_eq!(get(&gitea, "/repos/octo/demo/raw/src%2Flib%2Futil.py").body, "X = 1\n");
    let absent = get(&gitea, "/repos/octo/demo/raw/nope.txt");
    assert_eq!((absent.status, absent.json()["message"].as_str()), (404, Some("The target couldn't be found.")));

    let branch = get(&gitea, "/repos/octo/demo/branches/main").json();
    assert_eq!((branch["name"].as_str(), branch["commit"]["id"].as_str()), (Some("main"), Some(head.as_str())));
    assert_eq!(get(&gitea, "/repos/octo/demo/branches/nope").status, 404);
}

#[test]
fn change_files_commits_a_branch_that_reads_back() {
    let (gitea, head) = seeded();
    let current = get(&gitea, "/repos/octo/demo/contents/src/app.py").json()["sha"].as_str().unwrap().to_owned();
    let change = |sha: &str, new_branch: &str| {
        json!({
            "branch": "main",
            "new_branch": new_branch,
            "message": "Shorten the function",
            "files": [
                {"operation": "update", "path": "src/app.py", "content": STANDARD.encode("print('hi')\n"), "sha": sha},
                {"operation": "create", "path": "docs/notes.md", "content": STANDARD.encode("notes\n")},
                {"operation": "delete", "path": "README.md", "sha": git_blob_sha("# demo\n")},
            ],
        })
    };
    let stale = call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/contents", Some(change(&"0".repeat(40), "fix")));
    assert_eq!(stale.status, 422);
    assert!(stale.json()["message"].as_str().unwrap().starts_with("sha does not match"), "{}", stale.body);

    let made = call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/contents", Some(change(&current, "fix")));
    assert_eq!(made.status, 201, "{}", made.body);
    let made = made.json();
    let commit = made["commit"]["sha"].as_str().unwrap().to_owned();
    assert!(is_sha(&made["commit"]["sha"]));
    assert_eq!(made["commit"]["parents"][0]["sha"].as_str(), Some(head.as_str()));
    assert_eq!(made["files"][0]["path"], "src/app.py");
    assert_eq!(gitea.branch_sha("octo", "demo", "fix").as_deref(), Some(commit.as_str()));
    assert_eq!(gitea.branch_sha("octo", "demo", "main").as_deref(), Some(head.as_str()), "main untouched");
    assert_eq!(get(&gitea, "/repos/octo/demo/raw/src/app.py?ref=fix").body, "print('hi')\n");
    assert_eq!(get(&gitea, "/repos/octo/demo/raw/docs/notes.md?ref=fix").body, "notes\n");
    assert_eq!(get(&gitea, "/repos/octo/demo/raw/README.md?ref=fix").status, 404);
    assert_eq!(gitea.file("octo", "demo", &commit, "src/app.py").as_deref(), Some("print('hi')\n"));

    // A branch name with a slash, as the product names its branches.
    let slashed =
        call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/contents", Some(change(&current, "agent-zero/issue-1")));
    assert_eq!(slashed.status, 201, "{}", slashed.body);
    let branch = get(&gitea, "/repos/octo/demo/branches/agent-zero%2Fissue-1").json();
    assert_eq!(branch["name"], "agent-zero/issue-1");
    // Gitea serves `/branches/*`: the raw slash names the same branch.
    let raw = get(&gitea, "/repos/octo/demo/branches/agent-zero/issue-1").json();
    assert_eq!(raw["commit"]["id"], branch["commit"]["id"]);
    assert_eq!(get(&gitea, "/repos/octo/demo/branches/agent-zero/nope").status, 404);
    assert_eq!(get(&gitea, "/repos/octo/demo/raw/src/app.py?ref=agent-zero/issue-1").body, "print('hi')\n");
    assert_eq!(get(&gitea, "/repos/octo/demo/commits/agent-zero%2Fissue-1/statuses").status, 200);

    // The commit as Gitea shows it: one parent, the files it changed.
    let shown =
        get(&gitea, &format!("/repos/octo/demo/git/commits/{commit}?stat=false&verification=false&files=true")).json();
    assert_eq!(
        (shown["sha"].as_str(), shown["parents"][0]["sha"].as_str()),
        (Some(commit.as_str()), Some(head.as_str()))
    );
    let files: Vec<(&str, &str)> = shown["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["filename"].as_str().unwrap(), f["status"].as_str().unwrap()))
        .collect();
    assert_eq!(files, [("docs/notes.md", "added"), ("README.md", "removed"), ("src/app.py", "modified")]);
    assert_eq!((shown["author"]["login"].as_str(), shown["stats"].is_null()), (Some(BOT), true));
    assert_eq!(get(&gitea, "/repos/octo/demo/git/commits/main").json()["stats"]["total"], 4);
    assert_eq!(get(&gitea, "/repos/octo/demo/git/commits/nope").status, 404);

    let again = call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/contents", Some(change(&current, "fix")));
    assert_eq!((again.status, again.json()["message"].as_str()), (422, Some("branch already exists [name: fix]")));

    gitea.add_user_token("reader", "gta_reader", &["write:repository"]);
    let reader = call(&gitea, Some("gta_reader"), "POST", "/repos/octo/demo/contents", Some(change(&current, "x")));
    assert_eq!(reader.status, 403, "a token with the scope but no write access to the repository");
    assert!(gitea.violations().is_empty(), "{:?}", gitea.violations());
}

/// `CreateBranch` as Gitea 1.22 answers it: 201 and the branch at
/// `old_ref_name` (a commit), 409 when the name exists (never moved), 500
/// for an unknown commit (`GetCommit`), 404 for an unknown
/// `old_branch_name`, 422 for a name Gitea's binding refuses; and a
/// `ChangeFiles` commit on that branch (`new_branch` equal to `branch`).
#[test]
fn create_branch_starts_at_a_commit_and_never_moves_an_existing_one() {
    let (gitea, head) = seeded();
    let tip = gitea.set_file("octo", "demo", "main", "src/lib/util.py", "X = 2\n");
    let create = |body: Value| call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/branches", Some(body));
    let made = create(json!({"new_branch_name": "agent-zero/pr-2-t1", "old_ref_name": head}));
    assert_eq!(made.status, 201, "{}", made.body);
    assert_eq!(
        (made.json()["name"].as_str(), made.json()["commit"]["id"].as_str()),
        (Some("agent-zero/pr-2-t1"), Some(head.as_str()))
    );
    assert_eq!(gitea.branch_sha("octo", "demo", "agent-zero/pr-2-t1").as_deref(), Some(head.as_str()));
    let again = create(json!({"new_branch_name": "agent-zero/pr-2-t1", "old_ref_name": tip}));
    assert_eq!((again.status, again.json()["message"].as_str()), (409, Some("The branch already exists.")));
    assert_eq!(gitea.branch_sha("octo", "demo", "agent-zero/pr-2-t1").as_deref(), Some(head.as_str()), "not moved");
    assert_eq!(create(json!({"new_branch_name": "x", "old_ref_name": "0".repeat(40)})).status, 500);
    assert_eq!(create(json!({"new_branch_name": "x", "old_branch_name": "nope"})).status, 404);
    assert_eq!(create(json!({"new_branch_name": "a..b"})).status, 422);
    assert_eq!(create(json!({"new_branch_name": "x".repeat(101)})).status, 422);
    assert_eq!(gitea.branch_sha("octo", "demo", "x"), None);
    let from_default = create(json!({"new_branch_name": "y"}));
    assert_eq!(from_default.json()["commit"]["id"].as_str(), Some(tip.as_str()));

    // A commit on the branch itself: `new_branch` equal to `branch`.
    let current = git_blob_sha(LONG);
    let body = json!({
        "branch": "agent-zero/pr-2-t1",
        "new_branch": "agent-zero/pr-2-t1",
        "message": "Fix",
        "files": [{"operation": "update", "path": "src/app.py", "content": STANDARD.encode("print(1)\n"), "sha": current}],
    });
    let committed = call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/contents", Some(body));
    assert_eq!(committed.status, 201, "{}", committed.body);
    assert_eq!(committed.json()["commit"]["parents"][0]["sha"].as_str(), Some(head.as_str()));
    assert_eq!(gitea.file("octo", "demo", "agent-zero/pr-2-t1", "src/app.py").as_deref(), Some("print(1)\n"));

    gitea.add_user_token("reader", "gta_reader", &["write:repository"]);
    let body = json!({"new_branch_name": "z", "old_ref_name": head});
    let reader = call(&gitea, Some("gta_reader"), "POST", "/repos/octo/demo/branches", Some(body));
    assert_eq!(reader.status, 403, "a token with the scope but no write access to the repository");
    assert!(gitea.violations().is_empty(), "{:?}", gitea.violations());
}

#[test]
fn archives_unpack_under_the_lower_case_repository_name() {
    let fixture = FixtureRepo::calc("Acme", "Calc").build().unwrap();
    let gitea = FakeGitea::start();
    let head = gitea.add_fixture(&fixture);
    assert_eq!(gitea.branch_sha("Acme", "Calc", "main").as_deref(), Some(head.as_str()), "the real commit");
    gitea.add_user_token(BOT, TOKEN, &["read:repository"]);
    for reference in ["main", head.as_str()] {
        let (status, archive) = bytes(&format!("{}/api/v1/repos/Acme/Calc/archive/{reference}.tar.gz", gitea.url()));
        assert_eq!(status, 200);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.tar.gz");
        std::fs::write(&file, archive).unwrap();
        let status =
            std::process::Command::new("tar").arg("-xzf").arg(&file).arg("-C").arg(dir.path()).status().unwrap();
        assert!(status.success());
        let unpacked = std::fs::read_to_string(dir.path().join("calc").join(calc::BUG_PATH)).unwrap();
        assert_eq!(unpacked, calc::CALC_PY);
    }
    assert_eq!(bytes(&format!("{}/api/v1/repos/Acme/Calc/archive/nope.tar.gz", gitea.url())).0, 404);
}

#[test]
fn statuses_comments_and_permissions() {
    let (gitea, head) = seeded();
    gitea.add_issue("octo", "demo", 1, "Average is wrong", "It divides by n+1", "alice", &["bug"]);
    gitea.set_permission("octo", "demo", "maintainer", "admin");

    let issue = get(&gitea, "/repos/octo/demo/issues/1").json();
    assert_eq!((issue["number"].as_u64(), issue["user"]["login"].as_str()), (Some(1), Some("alice")));
    assert_eq!((issue["labels"][0]["name"].as_str(), issue["pull_request"].is_null()), (Some("bug"), true));
    assert_eq!(issue["html_url"].as_str(), Some(format!("{}/octo/demo/issues/1", gitea.url()).as_str()));
    assert_eq!(get(&gitea, "/repos/octo/demo/issues/2").status, 404);

    let status = json!({"state": "pending", "context": "agent-zero", "description": "Running", "target_url": "https://example.com/r/1"});
    let made = call(&gitea, Some(TOKEN), "POST", &format!("/repos/octo/demo/statuses/{head}"), Some(status));
    assert_eq!(made.status, 201, "{}", made.body);
    assert_eq!(
        (made.json()["status"].as_str(), made.json()["creator"]["login"].as_str()),
        (Some("pending"), Some(BOT))
    );
    let listed = get(&gitea, "/repos/octo/demo/commits/main/statuses");
    assert_eq!((listed.header("x-total-count"), listed.json()[0]["context"].as_str()), (Some("1"), Some("agent-zero")));
    assert_eq!(gitea.statuses("octo", "demo")[0]["sha"].as_str(), Some(head.as_str()));
    for state in ["failure", "success"] {
        let status = json!({"state": state, "context": "agent-zero"});
        assert_eq!(
            call(&gitea, Some(TOKEN), "POST", &format!("/repos/octo/demo/statuses/{head}"), Some(status)).status,
            201
        );
    }
    // Gitea's pagination: newest first, `X-Total-Count`, `Link` to the rest.
    let first = get(&gitea, &format!("/repos/octo/demo/statuses/{head}?limit=2"));
    let page: Value = first.json();
    let states: Vec<&str> = page.as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect();
    assert_eq!((states, first.header("x-total-count")), (vec!["success", "failure"], Some("3")));
    let link = first.header("link").unwrap();
    assert!(link.contains("page=2&limit=2>; rel=\"next\"") && link.contains("rel=\"last\""), "{link}");
    let second = get(&gitea, &format!("/repos/octo/demo/statuses/{head}?limit=2&page=2"));
    assert_eq!(second.json()[0]["status"], "pending");
    assert!(second.header("link").unwrap().contains("rel=\"prev\""));

    let posted =
        call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/issues/1/comments", Some(json!({"body": "On it"})));
    assert_eq!(posted.status, 201);
    let id = posted.json()["id"].as_u64().unwrap();
    let theirs = gitea.add_comment("octo", "demo", 1, "alice", "Thanks");
    let edited = call(
        &gitea,
        Some(TOKEN),
        "PATCH",
        &format!("/repos/octo/demo/issues/comments/{id}"),
        Some(json!({"body": "Done"})),
    );
    assert_eq!((edited.status, edited.json()["body"].as_str()), (200, Some("Done")));
    let comments = get(&gitea, "/repos/octo/demo/issues/1/comments").json();
    let bodies: Vec<&str> = comments.as_array().unwrap().iter().map(|c| c["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["Done", "Thanks"]);
    // A writer may edit anyone's comment; a reader only their own.
    gitea.add_user_token("reader", "gta_reader", &["write:issue"]);
    let refused = call(
        &gitea,
        Some("gta_reader"),
        "PATCH",
        &format!("/repos/octo/demo/issues/comments/{theirs}"),
        Some(json!({"body": "x"})),
    );
    assert_eq!(refused.status, 403);
    assert_eq!(gitea.comments("octo", "demo", 1)[1]["body"], "Thanks");

    // Permissions: your own, or anyone's for a repository admin.
    let own = get(&gitea, &format!("/repos/octo/demo/collaborators/{BOT}/permission")).json();
    assert_eq!((own["permission"].as_str(), own["user"]["login"].as_str()), (Some("write"), Some(BOT)));
    let others = get(&gitea, "/repos/octo/demo/collaborators/alice/permission");
    assert_eq!(others.status, 403);
    gitea.add_user_token("maintainer", "gta_admin", &["read:repository"]);
    let alice = call(&gitea, Some("gta_admin"), "GET", "/repos/octo/demo/collaborators/alice/permission", None).json();
    assert_eq!((alice["permission"].as_str(), alice["role_name"].as_str()), (Some("read"), Some("read")));
    let ghost = call(&gitea, Some("gta_admin"), "GET", "/repos/octo/demo/collaborators/ghost/permission", None);
    assert_eq!(ghost.status, 404);
}

#[test]
fn pull_requests_are_listed_diffed_and_reviewed() {
    let (gitea, _) = seeded();
    gitea.add_issue("octo", "demo", 1, "Issue", "", "alice", &[]);
    gitea.set_file("octo", "demo", "fix", "src/app.py", "print('fixed')\n");
    let create = json!({"head": "fix", "base": "main", "title": "Fix the function", "body": "Closes #1"});
    let made = call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/pulls", Some(create.clone()));
    assert_eq!(made.status, 201, "{}", made.body);
    let pull = made.json();
    assert_eq!(pull["number"].as_u64(), Some(2), "issues and pull requests share the index");
    assert_eq!((pull["head"]["ref"].as_str(), pull["base"]["ref"].as_str()), (Some("fix"), Some("main")));
    assert_eq!(pull["head"]["sha"].as_str(), gitea.branch_sha("octo", "demo", "fix").as_deref());
    assert_eq!(pull["html_url"].as_str(), Some(format!("{}/octo/demo/pulls/2", gitea.url()).as_str()));
    let duplicate = call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/pulls", Some(create));
    assert_eq!(duplicate.status, 409);
    assert!(duplicate.json()["message"].as_str().unwrap().starts_with("pull request already exists"));

    let listed = get(&gitea, "/repos/octo/demo/pulls?state=open&page=1&limit=10");
    assert_eq!((listed.header("x-total-count"), listed.json()[0]["number"].as_u64()), (Some("1"), Some(2)));
    assert_eq!(gitea.pulls("octo", "demo").len(), 1);
    assert!(get(&gitea, "/repos/octo/demo/issues/2").json()["pull_request"].is_object());

    let files = get(&gitea, "/repos/octo/demo/pulls/2/files").json();
    assert_eq!((files[0]["filename"].as_str(), files[0]["status"].as_str()), (Some("src/app.py"), Some("changed")));
    let diff = get(&gitea, "/repos/octo/demo/pulls/2.diff");
    assert_eq!(diff.header("content-type"), Some("text/plain; charset=utf-8"));
    assert!(diff.body.contains("+print('fixed')"), "{}", diff.body);

    let review = json!({"event": "COMMENT", "body": "One finding", "comments": [
        {"path": "src/app.py", "body": "Check this", "new_position": 1, "old_position": 0}
    ]});
    let posted = call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/pulls/2/reviews", Some(review));
    assert_eq!(posted.status, 200, "{}", posted.body);
    let id = posted.json()["id"].as_u64().unwrap();
    let own = json!({"event": "APPROVED"});
    assert_eq!(call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/pulls/2/reviews", Some(own)).status, 422);
    assert_eq!(get(&gitea, "/repos/octo/demo/pulls/2/reviews").json()[0]["comments_count"], 1);
    let lines = get(&gitea, &format!("/repos/octo/demo/pulls/2/reviews/{id}/comments")).json();
    assert_eq!((lines[0]["path"].as_str(), lines[0]["position"].as_u64()), (Some("src/app.py"), Some(1)));
    assert_eq!(gitea.reviews("octo", "demo", 2)[0]["comments"][0]["body"], "Check this");
    assert!(gitea.violations().is_empty(), "{:?}", gitea.violations());
}

#[test]
fn non_conforming_requests_are_refused_and_recorded() {
    let (gitea, _) = seeded();
    gitea.add_issue("octo", "demo", 1, "Issue", "", "alice", &[]);
    let unknown = get(&gitea, "/repos/octo/demo/tarball/main");
    assert_eq!((unknown.status, unknown.json()["message"].as_str()), (404, Some("The target couldn't be found.")));
    let misspelt = json!({"files": [{"operation": "create", "path": "a.txt", "contents": "eA=="}]});
    let refused = call(&gitea, Some(TOKEN), "POST", "/repos/octo/demo/contents", Some(misspelt));
    assert_eq!(refused.status, 422);
    assert!(
        refused.json()["message"].as_str().unwrap().contains("unknown property \"/files/0/contents\""),
        "{}",
        refused.body
    );
    let paged = get(&gitea, "/repos/octo/demo/pulls?per_page=100");
    assert_eq!(paged.status, 422);
    // Gitea's binding reads JSON only when the request says it is JSON.
    let url = format!("{}/api/v1/repos/octo/demo/issues/1/comments", gitea.url());
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let auth = format!("token {TOKEN}");
    let mut plain = agent
        .post(&url)
        .header("authorization", &auth)
        .header("content-type", "text/plain")
        .send(r#"{"body":"x"}"#)
        .unwrap();
    assert_eq!(plain.status().as_u16(), 422);
    assert!(plain.body_mut().read_to_string().unwrap().contains("[]: Unsupported Content-Type"));
    assert_eq!(gitea.branch_sha("octo", "demo", "a"), None, "nothing was written");
    assert!(gitea.comments("octo", "demo", 1).is_empty(), "nothing was written");
    let violations = gitea.violations();
    assert_eq!(violations.len(), 4, "{violations:?}");
    assert_eq!(violations[3], "issueCreateComment: []: Unsupported Content-Type");
    assert_eq!(violations[0], "no operation for GET /api/v1/repos/octo/demo/tarball/main");
    assert!(violations[2].contains("unknown query parameter per_page"), "{violations:?}");
}

#[test]
fn faults_outages_forgejo_and_the_call_log() {
    let (gitea, _) = seeded();
    gitea.fail_next("GET", "/api/v1/repos/octo/demo", 500, &[("retry-after", "1")], r#"{"message":"boom"}"#);
    let failed = get(&gitea, "/repos/octo/demo");
    assert_eq!((failed.status, failed.header("retry-after")), (500, Some("1")));
    assert_eq!(get(&gitea, "/repos/octo/demo").status, 200, "once");
    gitea.set_outage(true);
    assert_eq!(get(&gitea, "/user").status, 503);
    gitea.set_outage(false);
    assert_eq!(get(&gitea, "/version").json()["version"], "1.22.6");
    assert_eq!(gitea.calls_matching("GET", "/api/v1/repos/").len(), 2);
    assert_eq!(gitea.calls()[0].header("authorization"), Some("token gta_operator"));
    gitea.clear_calls();
    assert!(gitea.calls().is_empty());

    let forgejo = FakeGitea::start_forgejo();
    let version = send("GET", &format!("{}/api/v1/version", forgejo.url()), &[], None).json();
    assert!(version["version"].as_str().unwrap().contains("+gitea-"), "{version}");
}
