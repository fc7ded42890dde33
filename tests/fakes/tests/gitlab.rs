//! FakeGitLab over real HTTP: every served route is an operation of the
//! committed definition, every JSON answer conforms to it and to GitLab's
//! public API schemas; authentication, scopes, private projects and access
//! levels; the commits API's rules; merge requests (409 on a duplicate);
//! notes and their pagination; the archive; faults; and the conformance
//! gate (404 for no operation, 400 and a violation for a bad request).

mod support;

use std::io::Read as _;

use agent_zero_fakes::conformance::ApiDescription;
use agent_zero_fakes::{FakeGitLab, FixtureRepo, GITLAB_API_DEFINITION, calc};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use support::{Answer, send};

const TOKEN: &str = "glpat-bot";
const BOT: &str = "agent-zero-bot";
const P: &str = "/api/v4/projects/acme%2Fcalc";

/// `acme/calc` (the calc fixture) with the bot a developer holding `api`.
fn seeded() -> (FakeGitLab, FixtureRepo, String) {
    let gitlab = FakeGitLab::start();
    let fixture = FixtureRepo::calc("acme", "calc").build().expect("the calc fixture builds");
    let sha = gitlab.add_fixture(&fixture);
    gitlab.add_token(BOT, TOKEN, &["api"]);
    gitlab.set_access("acme/calc", BOT, 30);
    (gitlab, fixture, sha)
}

/// Sends a request with `PRIVATE-TOKEN`; a JSON success answer must conform
/// to the definition and GitLab's public schemas.
fn call(gitlab: &FakeGitLab, token: Option<&str>, method: &str, path: &str, body: Option<Value>) -> Answer {
    let headers: Vec<(&str, &str)> = token.map(|t| vec![("private-token", t)]).unwrap_or_default();
    let answer = send(method, &format!("{}{path}", gitlab.url()), &headers, body.as_ref());
    if answer.header("content-type").is_some_and(|t| t.starts_with("application/json")) {
        let bare = path.split('?').next().unwrap_or(path);
        if let Err(e) = FakeGitLab::check_answer(method, bare, answer.status, answer.body.as_bytes()) {
            panic!("the fake's answer: {e}\n{}", answer.body);
        }
    }
    answer
}

fn get(gitlab: &FakeGitLab, path: &str) -> Answer {
    call(gitlab, Some(TOKEN), "GET", path, None)
}

#[test]
fn every_served_route_is_an_operation_of_the_definition() {
    let api = ApiDescription::swagger2(GITLAB_API_DEFINITION).unwrap().with_rest_parameters(&[]);
    for (operation, method, sample) in FakeGitLab::served_operations() {
        let body = (method != "GET" && method != "HEAD").then_some(&b"{}"[..]);
        let found = match api.matched(method, sample, &[], body) {
            Ok(m) => m.operation.as_str().to_owned(),
            Err(
                agent_zero_fakes::conformance::Violation::MissingBody { operation }
                | agent_zero_fakes::conformance::Violation::MissingQuery { operation, .. }
                | agent_zero_fakes::conformance::Violation::InvalidBody { operation, .. },
            ) => operation.as_str().to_owned(),
            Err(e) => panic!("{method} {sample}: {e}"),
        };
        assert_eq!(found, operation, "{method} {sample}");
    }
}

#[test]
fn the_user_and_a_user_by_name() {
    let (gitlab, _fixture, _) = seeded();
    let me = get(&gitlab, "/api/v4/user");
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.json()["username"], BOT);
    assert_eq!(me.json()["id"], gitlab.add_user(BOT));
    let found = get(&gitlab, "/api/v4/users?username=acme");
    assert_eq!(found.json().as_array().unwrap().len(), 1);
    assert_eq!(found.json()[0]["username"], "acme");
    assert_eq!(get(&gitlab, "/api/v4/users?username=nobody").json(), json!([]));
    gitlab.assert_no_violations();
}

#[test]
fn a_project_by_path_or_id_its_file_branch_and_commit() {
    let (gitlab, _fixture, sha) = seeded();
    let project = get(&gitlab, P);
    assert_eq!(project.status, 200, "{}", project.body);
    let json = project.json();
    assert_eq!(json["path_with_namespace"], "acme/calc");
    assert_eq!(json["default_branch"], "main");
    assert_eq!(json["visibility"], "public");
    assert_eq!(json["permissions"]["project_access"]["access_level"], 30);
    let id = json["id"].as_u64().unwrap();
    assert_eq!(get(&gitlab, &format!("/api/v4/projects/{id}")).json()["path_with_namespace"], "acme/calc");

    let file = get(&gitlab, &format!("{P}/repository/files/calc.py?ref=main"));
    assert_eq!(file.json()["content"], STANDARD.encode(calc::CALC_PY));
    assert_eq!(file.header("x-gitlab-commit-id"), Some(sha.as_str()));
    let head = call(&gitlab, Some(TOKEN), "HEAD", &format!("{P}/repository/files/calc.py?ref={sha}"), None);
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    assert_eq!(head.header("x-gitlab-blob-id"), file.json()["blob_id"].as_str());
    assert_eq!(head.header("x-gitlab-size"), Some(calc::CALC_PY.len().to_string().as_str()));
    let raw = get(&gitlab, &format!("{P}/repository/files/calc.py/raw?ref=main"));
    assert_eq!(raw.status, 200);
    assert_eq!(raw.body, calc::CALC_PY);
    assert_eq!(raw.header("x-gitlab-last-commit-id"), Some(sha.as_str()));
    assert_eq!(raw.header("x-gitlab-blob-id"), head.header("x-gitlab-blob-id"));
    let missing = get(&gitlab, &format!("{P}/repository/files/nope%2Fx.py/raw?ref=main"));
    assert_eq!((missing.status, missing.json()), (404, json!({"message": "404 File Not Found"})));

    let branch = get(&gitlab, &format!("{P}/repository/branches/main"));
    assert_eq!(branch.json()["commit"]["id"], sha);
    let none = get(&gitlab, &format!("{P}/repository/branches/nope"));
    assert_eq!((none.status, none.json()), (404, json!({"message": "404 Branch Not Found"})));

    let commit = get(&gitlab, &format!("{P}/repository/commits/{sha}"));
    assert_eq!(commit.json()["id"], sha);
    assert_eq!(commit.json()["parent_ids"], json!([]));
    gitlab.assert_no_violations();
}

#[test]
fn authentication_scopes_and_private_projects() {
    let (gitlab, _fixture, _) = seeded();
    let anonymous = call(&gitlab, None, "GET", P, None);
    assert_eq!((anonymous.status, anonymous.json()), (401, json!({"message": "401 Unauthorized"})));
    let unknown = call(&gitlab, Some("glpat-nope"), "GET", P, None);
    assert_eq!(unknown.status, 401);
    let bearer = send("GET", &format!("{}{P}", gitlab.url()), &[("authorization", &format!("Bearer {TOKEN}"))], None);
    assert_eq!(bearer.status, 200);

    gitlab.add_token(BOT, "glpat-read", &["read_api"]);
    assert_eq!(call(&gitlab, Some("glpat-read"), "GET", P, None).status, 200);
    let write = call(&gitlab, Some("glpat-read"), "POST", &format!("{P}/issues/1/notes"), Some(json!({"body": "hi"})));
    assert_eq!(write.status, 403);
    assert_eq!(write.json()["error"], "insufficient_scope");
    assert_eq!(write.json()["scope"], "api");
    gitlab.add_token(BOT, "glpat-repo", &["read_repository"]);
    assert_eq!(call(&gitlab, Some("glpat-repo"), "GET", P, None).status, 403);
    let file = call(&gitlab, Some("glpat-repo"), "GET", &format!("{P}/repository/files/calc.py/raw"), None);
    assert_eq!(file.status, 200, "lib/api/files.rb lets read_repository read files");

    gitlab.add_token("stranger", "glpat-stranger", &["api"]);
    gitlab.set_private("acme/calc", true);
    let hidden = call(&gitlab, Some("glpat-stranger"), "GET", P, None);
    assert_eq!((hidden.status, hidden.json()), (404, json!({"message": "404 Project Not Found"})));
    assert_eq!(get(&gitlab, P).status, 200, "a member still sees it");
    gitlab.assert_no_violations();
}

#[test]
fn access_levels_gate_writes() {
    let (gitlab, _fixture, sha) = seeded();
    gitlab.add_token("reporter", "glpat-reporter", &["api"]);
    gitlab.set_access("acme/calc", "reporter", 20);
    let status = call(
        &gitlab,
        Some("glpat-reporter"),
        "POST",
        &format!("{P}/statuses/{sha}"),
        Some(json!({"state": "pending", "name": "agent-zero"})),
    );
    assert_eq!((status.status, status.json()), (403, json!({"message": "403 Forbidden"})));
    let mr = call(
        &gitlab,
        Some("glpat-reporter"),
        "POST",
        &format!("{P}/merge_requests"),
        Some(json!({"source_branch": "x", "target_branch": "main", "title": "t"})),
    );
    assert_eq!(mr.status, 403);
    let commit = call(
        &gitlab,
        Some("glpat-reporter"),
        "POST",
        &format!("{P}/repository/commits"),
        Some(json!({"branch": "fix", "start_branch": "main", "commit_message": "m", "actions": []})),
    );
    assert_eq!(
        (commit.status, commit.json()),
        (403, json!({"message": "403 Forbidden - You are not allowed to push into this branch"}))
    );
    // A developer may not push to the default (protected) branch.
    let main = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &format!("{P}/repository/commits"),
        Some(
            json!({"branch": "main", "commit_message": "m", "actions": [{"action": "create", "file_path": "x", "content": "y"}]}),
        ),
    );
    assert_eq!(main.status, 403);

    let ok = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &format!("{P}/statuses/{sha}"),
        Some(
            json!({"state": "pending", "name": "agent-zero", "description": "checking", "target_url": "https://example.com/t/1"}),
        ),
    );
    assert_eq!(ok.status, 201, "{}", ok.body);
    assert_eq!(ok.json()["status"], "pending");
    assert_eq!(ok.json()["name"], "agent-zero");
    let again = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &format!("{P}/statuses/{sha}"),
        Some(json!({"state": "success", "name": "agent-zero"})),
    );
    assert_eq!(again.json()["id"], ok.json()["id"], "the same name and ref update one status");
    let statuses = gitlab.statuses("acme/calc", &sha);
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0]["status"], "success");
    gitlab.assert_no_violations();
}

#[test]
fn the_commits_api_creates_a_branch_and_enforces_gitlabs_rules() {
    let (gitlab, _fixture, sha) = seeded();
    let commits = format!("{P}/repository/commits");
    let post = |body: Value| call(&gitlab, Some(TOKEN), "POST", &commits, Some(body));
    let created = post(json!({
        "branch": "agent-zero/issue-1",
        "start_branch": "main",
        "commit_message": "Fix the mean",
        "actions": [
            {"action": "update", "file_path": "calc.py", "content": calc::CALC_PY_FIXED},
            {"action": "create", "file_path": "notes/b64.txt", "content": STANDARD.encode("binary\0ok"), "encoding": "base64"},
        ],
    }));
    assert_eq!(created.status, 201, "{}", created.body);
    let new = created.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(created.json()["parent_ids"], json!([sha]));
    assert_eq!(gitlab.branch_head("acme/calc", "agent-zero/issue-1").as_deref(), Some(new.as_str()));
    assert_eq!(gitlab.file_at("acme/calc", "agent-zero/issue-1", "calc.py").unwrap(), calc::CALC_PY_FIXED.as_bytes());
    assert_eq!(gitlab.file_at("acme/calc", "agent-zero/issue-1", "notes/b64.txt").unwrap(), b"binary\0ok");
    assert_eq!(gitlab.branch_head("acme/calc", "main").as_deref(), Some(sha.as_str()), "main is untouched");

    let message = |answer: Answer| (answer.status, answer.json()["message"].clone());
    let exists = post(json!({"branch": "b2", "start_branch": "main", "commit_message": "m",
        "actions": [{"action": "create", "file_path": "calc.py", "content": "x"}]}));
    assert_eq!(message(exists), (400, json!("A file with this name already exists")));
    let absent = post(json!({"branch": "b3", "start_branch": "main", "commit_message": "m",
        "actions": [{"action": "update", "file_path": "nope.py", "content": "x"}]}));
    assert_eq!(message(absent), (400, json!("A file with this name doesn't exist")));
    let taken = post(json!({"branch": "agent-zero/issue-1", "start_branch": "main", "commit_message": "m",
        "actions": [{"action": "create", "file_path": "n.py", "content": "x"}]}));
    assert_eq!(
        message(taken),
        (
            400,
            json!(
                "A branch called 'agent-zero/issue-1' already exists. Switch to that branch in order to make changes"
            )
        )
    );
    let from_sha = post(json!({"branch": "b4", "start_sha": sha, "commit_message": "m",
        "actions": [{"action": "delete", "file_path": "test_calc.py"}]}));
    assert_eq!(from_sha.status, 201, "{}", from_sha.body);
    assert!(gitlab.file_at("acme/calc", "b4", "test_calc.py").is_none());
    let no_branch = post(json!({"branch": "b5", "commit_message": "m",
        "actions": [{"action": "create", "file_path": "n.py", "content": "x"}]}));
    assert_eq!(message(no_branch), (400, json!("You can only create or edit files when you are on a branch")));
    // On an existing branch, without start_*: a plain commit on top.
    let on_top = post(json!({"branch": "agent-zero/issue-1", "commit_message": "more",
        "actions": [{"action": "create", "file_path": "more.txt", "content": "x"}]}));
    assert_eq!(on_top.status, 201, "{}", on_top.body);
    assert_eq!(on_top.json()["parent_ids"], json!([new]));
    gitlab.assert_no_violations();

    let bad = post(json!({"branch": "b6", "start_branch": "main", "commit_message": "m",
        "actions": [{"action": "rename", "file_path": "n.py"}]}));
    assert_eq!(
        (bad.status, bad.json()),
        (
            400,
            json!({"message": "400 Bad request - actions[0][action] must be one of: create, update, move, delete, chmod"})
        )
    );
    let unknown = post(json!({"branch": "b7", "start_branch": "main", "commit_message": "m",
        "actions": [{"action": "create", "file_path": "n.py", "contents": "x"}]}));
    assert_eq!(unknown.status, 400);
    assert!(unknown.json()["error"].as_str().unwrap().contains("contents"), "{}", unknown.body);
    assert_eq!(gitlab.violations().len(), 2, "{:?}", gitlab.violations());
}

#[test]
fn a_commit_and_its_diff() {
    let (gitlab, _fixture, _) = seeded();
    let created = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &format!("{P}/repository/commits"),
        Some(json!({"branch": "fix", "start_branch": "main", "commit_message": "Fix\n\nbody",
            "actions": [{"action": "update", "file_path": "calc.py", "content": calc::CALC_PY_FIXED},
                        {"action": "create", "file_path": "new.txt", "content": "new\n"}]})),
    );
    let sha = created.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(created.json()["title"], "Fix");
    assert_eq!(created.json()["stats"]["additions"], 2);
    let diff = get(&gitlab, &format!("{P}/repository/commits/{sha}/diff"));
    assert_eq!(diff.status, 200);
    let files = diff.json();
    let files = files.as_array().unwrap();
    assert_eq!(files.len(), 2);
    let changed = files.iter().find(|f| f["new_path"] == "calc.py").unwrap();
    assert_eq!(changed["a_mode"], "100644");
    assert!(changed["diff"].as_str().unwrap().starts_with("@@"), "{changed}");
    assert!(changed["diff"].as_str().unwrap().contains("+    return sum(values) / len(values)"), "{changed}");
    let added = files.iter().find(|f| f["new_path"] == "new.txt").unwrap();
    assert_eq!((added["new_file"].clone(), added["a_mode"].clone()), (json!(true), json!("0")));
    assert_eq!(diff.header("x-total"), Some("2"));
    gitlab.assert_no_violations();
}

#[test]
fn merge_requests_and_the_duplicate_409() {
    let (gitlab, _fixture, _) = seeded();
    gitlab.set_file("acme/calc", "fix", "calc.py", calc::CALC_PY_FIXED);
    let body =
        json!({"source_branch": "fix", "target_branch": "main", "title": "Fix the mean", "description": "Closes #1"});
    let created = call(&gitlab, Some(TOKEN), "POST", &format!("{P}/merge_requests"), Some(body.clone()));
    assert_eq!(created.status, 201, "{}", created.body);
    let mr = created.json();
    assert_eq!((mr["iid"].clone(), mr["state"].clone()), (json!(1), json!("opened")));
    assert_eq!(mr["sha"], json!(gitlab.branch_head("acme/calc", "fix").unwrap()));
    assert!(mr["web_url"].as_str().unwrap().ends_with("/acme/calc/-/merge_requests/1"));
    let again = call(&gitlab, Some(TOKEN), "POST", &format!("{P}/merge_requests"), Some(body));
    assert_eq!(
        (again.status, again.json()),
        (409, json!({"message": ["Another open merge request already exists for this source branch: !1"]}))
    );
    let listed = get(&gitlab, &format!("{P}/merge_requests?source_branch=fix&target_branch=main&state=opened"));
    assert_eq!(listed.json().as_array().unwrap().len(), 1);
    assert_eq!(get(&gitlab, &format!("{P}/merge_requests?source_branch=other")).json(), json!([]));
    let one = get(&gitlab, &format!("{P}/merge_requests/1"));
    assert_eq!(one.json()["diff_refs"]["head_sha"], mr["sha"]);
    let diffs = get(&gitlab, &format!("{P}/merge_requests/1/diffs"));
    assert_eq!(diffs.json()[0]["new_path"], "calc.py");
    let missing = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &format!("{P}/merge_requests"),
        Some(json!({"source_branch": "nope", "target_branch": "main", "title": "t"})),
    );
    assert_eq!((missing.status, missing.json()), (400, json!({"message": {"source_branch": ["does not exist"]}})));
    assert_eq!(gitlab.merge_requests("acme/calc").len(), 1);
    gitlab.assert_no_violations();
}

#[test]
fn issues_members_and_notes_with_pagination() {
    let (gitlab, _fixture, _) = seeded();
    let iid = gitlab.open_issue("acme/calc", "alice", "mean is wrong", "off by one", &["agent-zero"]);
    let issue = get(&gitlab, &format!("{P}/issues/{iid}"));
    assert_eq!(issue.status, 200, "{}", issue.body);
    let json = issue.json();
    assert_eq!(
        (json["iid"].clone(), json["state"].clone(), json["labels"].clone()),
        (json!(iid), json!("opened"), json!(["agent-zero"]))
    );
    assert_eq!(json["author"]["username"], "alice");
    let missing = get(&gitlab, &format!("{P}/issues/99"));
    assert_eq!((missing.status, missing.json()), (404, json!({"message": "404 Not found"})));
    assert_eq!(get(&gitlab, &format!("{P}/merge_requests/99")).json(), json!({"message": "404 Not found"}));

    let bot = gitlab.add_user(BOT);
    let member = get(&gitlab, &format!("{P}/members/all/{bot}"));
    assert_eq!((member.json()["username"].clone(), member.json()["access_level"].clone()), (json!(BOT), json!(30)));
    let alice = gitlab.add_user("alice");
    let none = get(&gitlab, &format!("{P}/members/all/{alice}"));
    assert_eq!((none.status, none.json()), (404, json!({"message": "404 Not found"})));

    for n in 0..3 {
        gitlab.add_note("acme/calc", iid, "alice", &format!("note {n}"));
    }
    let posted =
        call(&gitlab, Some(TOKEN), "POST", &format!("{P}/issues/{iid}/notes"), Some(json!({"body": "On it."})));
    assert_eq!(posted.status, 201, "{}", posted.body);
    let note_id = posted.json()["id"].as_u64().unwrap();
    let edited =
        call(&gitlab, Some(TOKEN), "PUT", &format!("{P}/issues/{iid}/notes/{note_id}"), Some(json!({"body": "Done."})));
    assert_eq!(edited.json()["body"], "Done.");
    let first = get(&gitlab, &format!("{P}/issues/{iid}/notes?per_page=3"));
    assert_eq!(first.json()[0]["body"], "Done.", "newest first by default");
    assert_eq!(first.header("x-total"), Some("4"));
    assert_eq!(first.header("x-next-page"), Some("2"));
    let second = get(&gitlab, &format!("{P}/issues/{iid}/notes?per_page=3&page=2"));
    assert_eq!(second.json().as_array().unwrap().len(), 1);
    assert_eq!(second.header("x-next-page"), Some(""));
    let asc = get(&gitlab, &format!("{P}/issues/{iid}/notes?sort=asc"));
    assert_eq!(asc.json()[0]["body"], "note 0");
    let others = call(
        &gitlab,
        Some(TOKEN),
        "PUT",
        &format!("{P}/issues/{iid}/notes/{}", asc.json()[0]["id"]),
        Some(json!({"body": "mine now"})),
    );
    assert_eq!(others.status, 403, "only the author edits");
    assert_eq!(gitlab.notes("acme/calc", iid).len(), 4);
    gitlab.assert_no_violations();
}

#[test]
fn the_archive_untars_with_gitlabs_top_directory() {
    let (gitlab, _fixture, sha) = seeded();
    let url = format!("{}{P}/repository/archive.tar.gz?sha={sha}", gitlab.url());
    let response = ureq::get(&url).header("private-token", TOKEN).call().expect("the archive");
    let mut bytes = Vec::new();
    response.into_body().into_reader().read_to_end(&mut bytes).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.tar.gz");
    std::fs::write(&archive, &bytes).unwrap();
    let out = std::process::Command::new("tar").arg("-xzf").arg(&archive).arg("-C").arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let top = dir.path().join(format!("calc-{sha}-{sha}"));
    assert_eq!(std::fs::read_to_string(top.join("calc.py")).unwrap(), calc::CALC_PY);
    assert!(top.join("test_calc.py").exists());
    gitlab.assert_no_violations();
}

#[test]
fn the_conformance_gate_refuses_what_gitlab_would() {
    let (gitlab, _fixture, sha) = seeded();
    let unknown = get(&gitlab, &format!("{P}/wikis"));
    assert_eq!((unknown.status, unknown.json()), (404, json!({"error": "404 Not Found"})));
    let undeclared = get(&gitlab, &format!("{P}/merge_requests?colour=blue"));
    assert_eq!(undeclared.status, 400);
    assert!(undeclared.json()["error"].as_str().unwrap().contains("colour"));
    let bad_state = call(&gitlab, Some(TOKEN), "POST", &format!("{P}/statuses/{sha}"), Some(json!({"state": "done"})));
    assert_eq!(bad_state.status, 400);
    let extra = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &format!("{P}/merge_requests"),
        Some(json!({"source_branch": "a", "target_branch": "main", "title": "t", "body": "x"})),
    );
    assert_eq!(extra.status, 400);
    let violations = gitlab.violations();
    assert_eq!(violations.len(), 4, "{violations:?}");
    assert!(violations[0].starts_with("no operation for GET"), "{violations:?}");
    assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| gitlab.assert_no_violations())).is_err());
}

#[test]
fn faults_rate_limits_and_recorded_requests() {
    let (gitlab, _fixture, _) = seeded();
    gitlab.fail_next(2, 502);
    assert_eq!(get(&gitlab, P).status, 502);
    assert_eq!(get(&gitlab, P).status, 502);
    assert_eq!(get(&gitlab, P).status, 200);
    gitlab.rate_limit_next(1, 7);
    let limited = get(&gitlab, P);
    assert_eq!((limited.status, limited.header("retry-after")), (429, Some("7")));
    assert_eq!(limited.body, "Retry later\n");
    assert_eq!(get(&gitlab, P).status, 200);
    gitlab.set_outage(true);
    assert_eq!(get(&gitlab, P).status, 503);
    gitlab.set_outage(false);
    let seen = gitlab.requests_matching("GET", P);
    assert_eq!(seen.len(), 6);
    assert_eq!(seen[0].header("private-token"), Some(TOKEN));
    gitlab.assert_no_violations();
}

#[test]
fn the_answer_check_catches_a_wrong_shape() {
    let (gitlab, _fixture, _) = seeded();
    let branch = get(&gitlab, &format!("{P}/repository/branches/main")).json();
    let mut extra = branch.clone();
    extra["colour"] = json!("blue");
    let path = format!("{P}/repository/branches/main");
    assert!(FakeGitLab::check_answer("GET", &path, 200, extra.to_string().as_bytes()).is_err());
    let mut wrong = branch;
    wrong["commit"]["parent_ids"] = json!("none");
    assert!(FakeGitLab::check_answer("GET", &path, 200, wrong.to_string().as_bytes()).is_err());
    let iid = gitlab.open_issue("acme/calc", "alice", "t", "d", &[]);
    let mut issue = get(&gitlab, &format!("{P}/issues/{iid}")).json();
    issue.as_object_mut().unwrap().remove("author");
    assert!(FakeGitLab::check_answer("GET", &format!("{P}/issues/{iid}"), 200, issue.to_string().as_bytes()).is_err());
    let mut status = json!({"id": 1, "sha": "x", "status": "success", "name": "n", "colour": "blue"});
    assert!(
        FakeGitLab::check_answer("POST", &format!("{P}/statuses/abc"), 201, status.to_string().as_bytes()).is_err()
    );
    status.as_object_mut().unwrap().remove("colour");
    FakeGitLab::check_answer("POST", &format!("{P}/statuses/abc"), 201, status.to_string().as_bytes()).unwrap();
    // A merge request may carry only the entity's published field names.
    gitlab.set_file("acme/calc", "fix", "calc.py", calc::CALC_PY_FIXED);
    let body = json!({"source_branch": "fix", "target_branch": "main", "title": "t"});
    let mut mr = call(&gitlab, Some(TOKEN), "POST", &format!("{P}/merge_requests"), Some(body)).json();
    mr["pull_request_url"] = json!("x");
    let path = format!("{P}/merge_requests/1");
    let refused = FakeGitLab::check_answer("GET", &path, 200, mr.to_string().as_bytes()).unwrap_err();
    assert!(refused.contains("pull_request_url"), "{refused}");
}

#[test]
fn merge_request_discussions_place_diff_notes_on_lines_of_the_diff() {
    let (gitlab, _fixture, base) = seeded();
    let head = gitlab.set_file("acme/calc", "fix", "calc.py", calc::CALC_PY_FIXED);
    let body = json!({"source_branch": "fix", "target_branch": "main", "title": "Fix"});
    assert_eq!(call(&gitlab, Some(TOKEN), "POST", &format!("{P}/merge_requests"), Some(body)).status, 201);
    let diff = get(&gitlab, &format!("{P}/merge_requests/1/diffs")).json();
    let hunk = diff[0]["diff"].as_str().unwrap().to_owned();
    // The fixed line's number on the new side.
    let line = calc::CALC_PY_FIXED.lines().position(|l| l.contains("/ len(values)")).unwrap() + 1;
    assert!(hunk.contains("+    return sum(values) / len(values)"), "{hunk}");
    let position = |new_line: usize| {
        json!({"position_type": "text", "base_sha": base, "start_sha": base, "head_sha": head,
               "old_path": "calc.py", "new_path": "calc.py", "new_line": new_line})
    };
    let discussions = format!("{P}/merge_requests/1/discussions");
    let placed = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &discussions,
        Some(json!({"body": "The mean divides by n.", "position": position(line)})),
    );
    assert_eq!(placed.status, 201, "{}", placed.body);
    let discussion = placed.json();
    assert_eq!(discussion["individual_note"], false);
    let note = &discussion["notes"][0];
    assert_eq!((note["type"].clone(), note["position"]["new_line"].clone()), (json!("DiffNote"), json!(line)));
    let id = discussion["id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 40);
    let off = call(&gitlab, Some(TOKEN), "POST", &discussions, Some(json!({"body": "x", "position": position(999)})));
    assert_eq!(off.status, 400, "a line the diff does not show");
    let reply = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &format!("{discussions}/{id}/notes"),
        Some(json!({"body": "Fixed in the next commit."})),
    );
    assert_eq!(reply.status, 201, "{}", reply.body);
    let unknown = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &format!("{discussions}/{}/notes", "0".repeat(40)),
        Some(json!({"body": "x"})),
    );
    assert_eq!((unknown.status, unknown.json()), (404, json!({"message": "404 Discussion Not Found"})));
    let listed = get(&gitlab, &discussions).json();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["notes"].as_array().unwrap().len(), 2);
    assert_eq!(gitlab.discussions("acme/calc", 1), listed.as_array().unwrap().clone());
    let general = call(&gitlab, Some(TOKEN), "POST", &discussions, Some(json!({"body": "Overall fine."})));
    assert_eq!(general.status, 201);
    gitlab.assert_no_violations();
    let bad = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &discussions,
        Some(
            json!({"body": "x", "position": {"position_type": "line", "base_sha": base, "start_sha": base, "head_sha": head}}),
        ),
    );
    assert_eq!(bad.status, 400);
    assert_eq!(gitlab.violations().len(), 1);
}

/// The fixture's README records the SHA-256 of what it committed, and the
/// definition is what `build.py` makes of its two sources (when Python
/// with PyYAML is at hand; the README's hashes are checked always).
#[test]
fn the_committed_definition_is_what_its_readme_and_build_script_say() {
    use sha2::Digest as _;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/gitlab-api");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    for file in ["openapi_v2.excerpt.yaml", "grape_operations.yaml", "gitlab-api.v4.subset.json"] {
        let digest = hex::encode(sha2::Sha256::digest(std::fs::read(dir.join(file)).unwrap()));
        assert!(
            readme.contains(&format!("| `{file}` | `{digest}` |")),
            "README.md does not record {file}'s sha256 {digest}"
        );
    }
    let yaml = std::process::Command::new("python3").args(["-c", "import yaml"]).output();
    if !yaml.is_ok_and(|o| o.status.success()) {
        eprintln!("python3 with PyYAML is not here: build.py --check skipped");
        return;
    }
    let check =
        std::process::Command::new("python3").arg("build.py").arg("--check").current_dir(&dir).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
}

#[test]
fn read_user_tokens_and_who_may_comment_on_a_private_project() {
    let (gitlab, _fixture, sha) = seeded();
    gitlab.add_token(BOT, "glpat-user", &["read_user"]);
    assert_eq!(call(&gitlab, Some("glpat-user"), "GET", "/api/v4/user", None).status, 200);
    assert_eq!(call(&gitlab, Some("glpat-user"), "GET", "/api/v4/users?username=acme", None).status, 200);
    let project = call(&gitlab, Some("glpat-user"), "GET", P, None);
    assert_eq!((project.status, project.json()["scope"].clone()), (403, json!("api read_api")));

    gitlab.set_private("acme/calc", true);
    let iid = gitlab.open_issue("acme/calc", "acme", "t", "d", &[]);
    gitlab.add_token("guest", "glpat-guest", &["api"]);
    gitlab.set_access("acme/calc", "guest", 10);
    let notes = format!("{P}/issues/{iid}/notes");
    let refused = call(&gitlab, Some("glpat-guest"), "POST", &notes, Some(json!({"body": "hi"})));
    assert_eq!((refused.status, refused.json()), (403, json!({"message": "403 Forbidden"})));
    gitlab.set_access("acme/calc", "guest", 20);
    assert_eq!(call(&gitlab, Some("glpat-guest"), "POST", &notes, Some(json!({"body": "hi"}))).status, 201);
    let empty = call(&gitlab, Some(TOKEN), "POST", &notes, Some(json!({"body": " "})));
    assert_eq!(empty.status, 400);

    let commits = format!("{P}/repository/commits");
    let short = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &commits,
        Some(json!({"branch": "b", "start_sha": "abc123",
        "commit_message": "m", "actions": [{"action": "create", "file_path": "n", "content": "x"}]})),
    );
    assert_eq!(short.json()["message"], "Invalid start_sha 'abc123'");
    let both = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &commits,
        Some(json!({"branch": "b", "start_sha": sha, "start_branch": "main",
        "commit_message": "m", "actions": [{"action": "create", "file_path": "n", "content": "x"}]})),
    );
    assert_eq!(both.json()["message"], "400 Bad request - start_branch, start_sha are mutually exclusive");
    let none = call(
        &gitlab,
        Some(TOKEN),
        "POST",
        &commits,
        Some(json!({"branch": "b", "start_branch": "main", "commit_message": "m"})),
    );
    assert_eq!(none.json()["message"], "400 Bad request - Provide at least one action, or set allow_empty to true");
    assert_eq!(gitlab.violations().len(), 2, "the malformed commits are violations: {:?}", gitlab.violations());
}

#[test]
fn an_issue_hook_reports_the_change_it_makes() {
    let (gitlab, _fixture, _) = seeded();
    let iid = gitlab.open_issue("acme/calc", "alice", "mean is wrong", "off by one", &["bug"]);
    let hook = gitlab.issue_hook("acme/calc", iid, "update", "maintainer", &["agent-zero"]);
    assert_eq!((hook["object_kind"].clone(), hook["event_type"].clone()), (json!("issue"), json!("issue")));
    assert_eq!(hook["object_attributes"]["iid"], iid);
    assert_eq!(hook["object_attributes"]["action"], "update");
    assert_eq!(hook["user"]["username"], "maintainer");
    assert_eq!(hook["project"]["path_with_namespace"], "acme/calc");
    let titles =
        |v: &Value| v.as_array().unwrap().iter().map(|l| l["title"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(titles(&hook["changes"]["labels"]["previous"]), ["bug"]);
    assert_eq!(titles(&hook["changes"]["labels"]["current"]), ["bug", "agent-zero"]);
    let issue = get(&gitlab, &format!("{P}/issues/{iid}")).json();
    assert_eq!(issue["labels"], json!(["bug", "agent-zero"]));
    let closed = gitlab.issue_hook("acme/calc", iid, "close", "alice", &[]);
    assert_eq!(closed["object_attributes"]["state"], "closed");
    assert!(closed["changes"].as_object().unwrap().is_empty());
    assert_eq!(get(&gitlab, &format!("{P}/issues/{iid}")).json()["state"], "closed");
}
