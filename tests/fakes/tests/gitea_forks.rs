//! FakeGitea's pull requests from a fork and labels on pull requests, over
//! real HTTP, each answer checked against Gitea's swagger: a fork's pull
//! request names the fork as its head repository, while its commit is kept
//! and read in the base repository (`refs/pull/{n}/head`), as Gitea does;
//! `POST .../issues/{n}/labels` labels a pull request as it does an issue.

mod support;

use agent_zero_fakes::conformance::{ApiDescription, Violation};
use agent_zero_fakes::{FakeGitea, GITEA_REST_PARAMETERS, GITEA_SWAGGER};
use serde_json::{Value, json};
use support::{Answer, send};

const TOKEN: &str = "gta_maintainer";
const MAINTAINER: &str = "maintainer";
const OUTSIDER_TOKEN: &str = "gta_outsider";
const OUTSIDER: &str = "outsider";

/// `octo/demo`, a maintainer who may write it, and an outsider (no
/// collaborator) with a fork of it whose `feature` branch changes a file.
fn forked() -> FakeGitea {
    let gitea = FakeGitea::start();
    gitea.add_repo("octo", "demo", "main", &[("src/app.py", "print('base')\n")]);
    gitea.add_user_token(MAINTAINER, TOKEN, &["write:repository", "write:issue"]);
    gitea.set_permission("octo", "demo", MAINTAINER, "write");
    gitea.add_user_token(OUTSIDER, OUTSIDER_TOKEN, &["write:repository", "write:issue"]);
    gitea.add_fork("octo", "demo", OUTSIDER);
    gitea.set_file(OUTSIDER, "demo", "feature", "src/app.py", "print('fork')\n");
    gitea
}

/// Sends a request; a JSON success answer must be the operation's declared
/// response in the swagger.
fn call(gitea: &FakeGitea, token: &str, method: &str, path: &str, body: Option<Value>) -> Answer {
    static API: std::sync::OnceLock<ApiDescription> = std::sync::OnceLock::new();
    let api = API
        .get_or_init(|| ApiDescription::swagger2(GITEA_SWAGGER).unwrap().with_rest_parameters(&GITEA_REST_PARAMETERS));
    let header = format!("token {token}");
    let answer = send(method, &format!("{}/api/v1{path}", gitea.url()), &[("authorization", &header)], body.as_ref());
    if answer.header("content-type").is_some_and(|t| t.starts_with("application/json")) {
        let bare = format!("/api/v1{}", path.split('?').next().unwrap_or(path));
        match api.check_response(method, &bare, answer.status, answer.body.as_bytes()) {
            Ok(_) | Err(Violation::NoOperation { .. }) => {}
            Err(other) => panic!("the fake's answer to {method} {path}: {other}\n{}", answer.body),
        }
    }
    answer
}

fn get(gitea: &FakeGitea, path: &str) -> Answer {
    call(gitea, TOKEN, "GET", path, None)
}

#[test]
fn a_fork_is_a_repository_of_its_own_with_its_parent() {
    let gitea = forked();
    let fork = get(&gitea, "/repos/outsider/demo").json();
    assert_eq!((fork["fork"].as_bool(), fork["full_name"].as_str()), (Some(true), Some("outsider/demo")));
    assert_eq!(fork["parent"]["full_name"], "octo/demo");
    let base = get(&gitea, "/repos/octo/demo").json();
    assert_eq!((base["fork"].as_bool(), base["forks_count"].as_u64()), (Some(false), Some(1)));
    assert!(base["parent"].is_null());
    // The branch is the fork's: the base repository has none of it.
    assert!(gitea.branch_sha(OUTSIDER, "demo", "feature").is_some());
    assert_eq!(gitea.branch_sha("octo", "demo", "feature"), None);
    assert!(gitea.violations().is_empty(), "{:?}", gitea.violations());
}

#[test]
fn a_forks_pull_request_names_the_fork_and_is_read_in_the_base_repository() {
    let gitea = forked();
    let create = json!({"head": "outsider:feature", "base": "main", "title": "From my fork"});
    let made = call(&gitea, OUTSIDER_TOKEN, "POST", "/repos/octo/demo/pulls", Some(create.clone()));
    assert_eq!(made.status, 201, "{}", made.body);
    let pull = made.json();
    let number = pull["number"].as_u64().unwrap();
    let fork_sha = gitea.branch_sha(OUTSIDER, "demo", "feature").unwrap();
    let fork_id = get(&gitea, "/repos/outsider/demo").json()["id"].clone();
    // Gitea's `ToAPIPullRequest`: the head is the fork's branch, by its
    // bare name; the base is the base repository's.
    let head = &pull["head"];
    assert_eq!((head["label"].as_str(), head["ref"].as_str()), (Some("feature"), Some("feature")));
    assert_eq!((head["sha"].as_str(), &head["repo_id"]), (Some(fork_sha.as_str()), &fork_id));
    assert_eq!(
        (head["repo"]["full_name"].as_str(), head["repo"]["fork"].as_bool()),
        (Some("outsider/demo"), Some(true))
    );
    assert_eq!(
        (pull["base"]["repo"]["full_name"].as_str(), pull["base"]["ref"].as_str()),
        (Some("octo/demo"), Some("main"))
    );
    assert_eq!(pull["user"]["login"], OUTSIDER);
    assert_eq!(call(&gitea, OUTSIDER_TOKEN, "POST", "/repos/octo/demo/pulls", Some(create)).status, 409);
    let nobody = json!({"head": "nobody:feature", "base": "main", "title": "x"});
    assert_eq!(call(&gitea, OUTSIDER_TOKEN, "POST", "/repos/octo/demo/pulls", Some(nobody)).status, 404);

    // The base repository keeps the head: its files, diff, contents and
    // archive are read there.
    let files = get(&gitea, &format!("/repos/octo/demo/pulls/{number}/files")).json();
    assert_eq!((files[0]["filename"].as_str(), files[0]["status"].as_str()), (Some("src/app.py"), Some("changed")));
    let diff = get(&gitea, &format!("/repos/octo/demo/pulls/{number}.diff"));
    assert!(diff.body.contains("+print('fork')"), "{}", diff.body);
    let contents = get(&gitea, &format!("/repos/octo/demo/contents/src/app.py?ref={fork_sha}"));
    assert_eq!(contents.status, 200, "{}", contents.body);
    assert_eq!(
        gitea.file("octo", "demo", &format!("refs/pull/{number}/head"), "src/app.py").as_deref(),
        Some("print('fork')\n")
    );
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let archive = format!("{}/api/v1/repos/octo/demo/archive/{fork_sha}.tar.gz", gitea.url());
    let mut tarball = agent.get(&archive).header("authorization", format!("token {TOKEN}")).call().unwrap();
    assert_eq!(tarball.status().as_u16(), 200);
    assert!(!tarball.body_mut().read_to_vec().unwrap().is_empty());

    // A push to the fork's branch moves the pull request's head with it.
    let pushed = gitea.set_file(OUTSIDER, "demo", "feature", "src/app.py", "print('fork, again')\n");
    let pull = get(&gitea, &format!("/repos/octo/demo/pulls/{number}")).json();
    assert_eq!(pull["head"]["sha"].as_str(), Some(pushed.as_str()));
    let diff = get(&gitea, &format!("/repos/octo/demo/pulls/{number}.diff"));
    assert!(diff.body.contains("+print('fork, again')"), "{}", diff.body);
    assert!(gitea.violations().is_empty(), "{:?}", gitea.violations());
}

#[test]
fn a_seeded_fork_pull_request_is_the_same_as_one_opened_through_the_api() {
    let gitea = forked();
    let number = gitea.add_fork_pull("octo", "demo", OUTSIDER, "feature", "main", OUTSIDER, "Seeded");
    let pull = get(&gitea, &format!("/repos/octo/demo/pulls/{number}")).json();
    assert_eq!(pull["head"]["repo"]["full_name"], "outsider/demo");
    assert_eq!(pull["head"]["sha"].as_str(), gitea.branch_sha(OUTSIDER, "demo", "feature").as_deref());
    assert_eq!(pull["changed_files"], 1);
    assert_eq!(gitea.pulls("octo", "demo")[0]["head"]["repo_id"], pull["head"]["repo_id"]);
}

#[test]
fn labels_are_added_to_a_pull_request_as_to_an_issue() {
    let gitea = forked();
    gitea.add_label("octo", "demo", "review-me", "#00ff00");
    let bug = gitea.add_label("octo", "demo", "bug", "#ff0000");
    let number = gitea.add_fork_pull("octo", "demo", OUTSIDER, "feature", "main", OUTSIDER, "From my fork");
    let path = format!("/repos/octo/demo/issues/{number}/labels");
    // The outsider may not label the base repository's pull request.
    let refused = call(&gitea, OUTSIDER_TOKEN, "POST", &path, Some(json!({"labels": ["review-me"]})));
    assert_eq!(refused.status, 403, "{}", refused.body);
    // By name (a name the repository has no label of is left out).
    let added = call(&gitea, TOKEN, "POST", &path, Some(json!({"labels": ["review-me", "no-such-label"]})));
    assert_eq!(added.status, 200, "{}", added.body);
    let names =
        |v: &Value| v.as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(names(&added.json()), ["review-me"]);
    // By id; both at once is refused.
    assert_eq!(names(&call(&gitea, TOKEN, "POST", &path, Some(json!({"labels": [bug]}))).json()), ["review-me", "bug"]);
    assert_eq!(call(&gitea, TOKEN, "POST", &path, Some(json!({"labels": [bug, "bug"]}))).status, 400);
    // The pull request and its issue view both carry them; the timeline
    // shows who added each.
    let pull = get(&gitea, &format!("/repos/octo/demo/pulls/{number}")).json();
    assert_eq!(names(&pull["labels"]), ["review-me", "bug"]);
    assert_eq!(
        names(&get(&gitea, &format!("/repos/octo/demo/issues/{number}")).json()["labels"]),
        ["review-me", "bug"]
    );
    let timeline = get(&gitea, &format!("/repos/octo/demo/issues/{number}/timeline")).json();
    let events: Vec<_> = timeline.as_array().unwrap().iter().filter(|e| e["type"] == "label").collect();
    assert_eq!(events.len(), 2, "{timeline}");
    assert!(events.iter().all(|e| e["user"]["login"] == MAINTAINER && e["body"] == "1"), "{timeline}");
    // Seeding does the same, and takes one off.
    gitea.unlabel_issue("octo", "demo", number, MAINTAINER, "bug");
    assert_eq!(names(&get(&gitea, &format!("/repos/octo/demo/pulls/{number}")).json()["labels"]), ["review-me"]);
    assert!(gitea.violations().is_empty(), "{:?}", gitea.violations());
}
