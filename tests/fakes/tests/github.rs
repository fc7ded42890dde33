//! FakeGitHub over real HTTP: shapes, the git data flow, auth, App tokens,
//! who the caller is (`GET /user`, `GET /app`, authors of writes), check
//! runs, paginated comments, pull requests, faults and recording.

mod support;

use agent_zero_fakes::{DEFAULT_ACTOR, FakeGitHub, TEST_APP_PRIVATE_KEY_PEM, TEST_APP_PUBLIC_KEY_PEM};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rsa::pkcs1::DecodeRsaPrivateKey as _;
use rsa::signature::{SignatureEncoding as _, Signer as _};
use serde_json::{Value, json};
use support::send;

const LONG: &str = "def long_function_name(argument_one, argument_two, argument_three):\n    return argument_one\n";

fn seeded() -> (FakeGitHub, String) {
    let gh = FakeGitHub::start();
    let sha = gh.add_repo(
        "octo",
        "demo",
        "main",
        &[("README.md", "# demo\n"), ("src/app.py", LONG), ("src/lib/util.py", "X = 1\n")],
    );
    (gh, sha)
}

fn get(gh: &FakeGitHub, path: &str) -> support::Answer {
    send("GET", &format!("{}{path}", gh.url()), &[], None)
}

fn post(gh: &FakeGitHub, method: &str, path: &str, body: Value) -> support::Answer {
    send(method, &format!("{}{path}", gh.url()), &[], Some(&body))
}

/// An installation token's shape (`ghs_`): the only kind GitHub lets write
/// check runs.
const INSTALLATION_TOKEN: &str = "ghs_fakeInstallationToken";

fn post_as(gh: &FakeGitHub, token: &str, method: &str, path: &str, body: Value) -> support::Answer {
    post_as_opt(gh, token, method, path, Some(body))
}

fn is_sha(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn repository_and_contents_have_githubs_shapes() {
    let (gh, _) = seeded();
    let repo = get(&gh, "/repos/octo/demo");
    assert_eq!(repo.status, 200);
    let repo = repo.json();
    assert_eq!((repo["default_branch"].as_str(), repo["full_name"].as_str()), (Some("main"), Some("octo/demo")));
    assert_eq!((repo["private"].as_bool(), repo["owner"]["login"].as_str()), (Some(false), Some("octo")));

    let file = get(&gh, "/repos/octo/demo/contents/src/app.py?ref=main");
    assert_eq!(file.status, 200);
    assert!(file.header("x-ratelimit-remaining").is_some(), "{:?}", file.headers);
    let file = file.json();
    assert_eq!((file["type"].as_str(), file["encoding"].as_str()), (Some("file"), Some("base64")));
    assert_eq!(
        (file["path"].as_str(), file["name"].as_str(), file["size"].as_u64()),
        (Some("src/app.py"), Some("app.py"), Some(LONG.len() as u64))
    );
    assert!(is_sha(&file["sha"]));
    let content = file["content"].as_str().unwrap();
    let lines: Vec<&str> = content.split_terminator('\n').collect();
    assert!(lines.len() > 1 && lines[..lines.len() - 1].iter().all(|l| l.len() == 60), "{content:?}");
    assert_eq!(STANDARD.decode(lines.concat()).unwrap(), LONG.as_bytes());

    // The same blob through the git data API, by the sha the contents API gave.
    let blob = get(&gh, &format!("/repos/octo/demo/git/blobs/{}", file["sha"].as_str().unwrap())).json();
    assert_eq!(blob["size"].as_u64(), Some(LONG.len() as u64));

    let encoded = get(&gh, "/repos/octo/demo/contents/src%2Flib%2Futil.py?ref=main");
    assert_eq!(encoded.status, 200, "percent-encoded paths resolve");

    let dir = get(&gh, "/repos/octo/demo/contents/src").json();
    let names: Vec<(&str, &str)> =
        dir.as_array().unwrap().iter().map(|e| (e["path"].as_str().unwrap(), e["type"].as_str().unwrap())).collect();
    assert_eq!(names, [("src/app.py", "file"), ("src/lib", "dir")]);

    for path in ["/repos/octo/demo/contents/missing.txt", "/repos/octo/nope", "/repos/octo/demo/no-such-route"] {
        let missing = get(&gh, path);
        assert_eq!(missing.status, 404, "{path}");
        assert_eq!(missing.json()["message"], "Not Found", "{path}");
        assert!(missing.json()["documentation_url"].as_str().unwrap().starts_with("https://docs.github.com/"));
    }
    // An operation of GitHub's description the fake does not model: a gap
    // in the fake, said so, not GitHub's answer.
    let unmodelled = get(&gh, "/gists/1");
    assert_eq!(
        (unmodelled.status, unmodelled.json()["message"].as_str()),
        (501, Some("the fake GitHub does not serve gists/get"))
    );
    let bad_ref = get(&gh, "/repos/octo/demo/contents/README.md?ref=nope");
    assert_eq!(bad_ref.status, 404);
}

#[test]
fn commits_and_refs_follow_the_branch() {
    let (gh, first) = seeded();
    let commit = get(&gh, "/repos/octo/demo/commits/main").json();
    assert_eq!(commit["sha"].as_str(), Some(first.as_str()));
    assert!(is_sha(&commit["commit"]["tree"]["sha"]));
    let reference = get(&gh, "/repos/octo/demo/git/ref/heads/main").json();
    assert_eq!(
        (reference["ref"].as_str(), reference["object"]["sha"].as_str()),
        (Some("refs/heads/main"), Some(first.as_str()))
    );
    assert_eq!(reference["object"]["type"], "commit");
    assert_eq!(get(&gh, "/repos/octo/demo/git/ref/heads/nope").status, 404);
    assert_eq!(get(&gh, "/repos/octo/demo/commits/nope").status, 422);

    let second = gh.set_file("octo", "demo", "main", "src/app.py", "print('hi')\n");
    assert_ne!(second, first);
    let commit = get(&gh, &format!("/repos/octo/demo/commits/{}", &second[..7])).json();
    assert_eq!(commit["sha"].as_str(), Some(second.as_str()), "abbreviated shas resolve");
    assert_eq!(commit["parents"][0]["sha"].as_str(), Some(first.as_str()));
    assert_eq!(
        commit["files"],
        json!([{"filename": "src/app.py", "status": "modified", "sha": commit["files"][0]["sha"]}])
    );
    assert_eq!(gh.file("octo", "demo", &first, "src/app.py").as_deref(), Some(LONG));
    assert_eq!(gh.file("octo", "demo", "main", "src/app.py").as_deref(), Some("print('hi')\n"));
}

#[test]
fn git_data_flow_creates_a_branch_and_refuses_an_existing_ref() {
    let (gh, base) = seeded();
    let blob = post(
        &gh,
        "POST",
        "/repos/octo/demo/git/blobs",
        json!({"content": STANDARD.encode("fixed\n"), "encoding": "base64"}),
    );
    assert_eq!(blob.status, 201);
    let blob_sha = blob.json()["sha"].as_str().unwrap().to_owned();
    let base_tree =
        get(&gh, &format!("/repos/octo/demo/git/commits/{base}")).json()["tree"]["sha"].as_str().unwrap().to_owned();
    let tree = post(
        &gh,
        "POST",
        "/repos/octo/demo/git/trees",
        json!({"base_tree": base_tree, "tree": [
            {"path": "src/app.py", "mode": "100644", "type": "blob", "sha": blob_sha},
            {"path": "docs/new.md", "mode": "100644", "type": "blob", "content": "new\n"},
            {"path": "README.md", "mode": "100644", "type": "blob", "sha": null},
        ]}),
    );
    assert_eq!(tree.status, 201, "{}", tree.body);
    let tree_sha = tree.json()["sha"].as_str().unwrap().to_owned();
    let top: Vec<String> =
        tree.json()["tree"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap().to_owned()).collect();
    assert_eq!(top, ["docs", "src"]);
    let recursive = get(&gh, &format!("/repos/octo/demo/git/trees/{tree_sha}?recursive=1")).json();
    assert_eq!(recursive["tree"].as_array().unwrap().len(), 6, "{recursive}");

    let commit = post(
        &gh,
        "POST",
        "/repos/octo/demo/git/commits",
        json!({"message": "Fix app", "tree": tree_sha, "parents": [base]}),
    );
    assert_eq!(commit.status, 201);
    let commit_sha = commit.json()["sha"].as_str().unwrap().to_owned();
    assert_eq!(commit.json()["parents"][0]["sha"].as_str(), Some(base.as_str()));
    assert_eq!(
        post(&gh, "POST", "/repos/octo/demo/git/commits", json!({"message": "x", "tree": "0".repeat(40)})).status,
        422
    );

    let create = json!({"ref": "refs/heads/agent-zero/issue-7", "sha": commit_sha});
    let created = post(&gh, "POST", "/repos/octo/demo/git/refs", create.clone());
    assert_eq!(created.status, 201);
    assert_eq!(created.json()["object"]["sha"].as_str(), Some(commit_sha.as_str()));
    let again = post(&gh, "POST", "/repos/octo/demo/git/refs", create);
    assert_eq!(again.status, 422);
    assert_eq!(again.json()["message"], "Reference already exists");
    assert_eq!(gh.file("octo", "demo", "agent-zero/issue-7", "src/app.py").as_deref(), Some("fixed\n"));
    assert_eq!(gh.file("octo", "demo", "agent-zero/issue-7", "README.md"), None);

    // Moving the branch back is not a fast forward unless forced.
    let path = "/repos/octo/demo/git/refs/heads/agent-zero/issue-7";
    let back = post(&gh, "PATCH", path, json!({"sha": base}));
    assert_eq!((back.status, back.json()["message"].as_str()), (422, Some("Update is not a fast forward")));
    assert_eq!(post(&gh, "PATCH", path, json!({"sha": base, "force": true})).status, 200);
    assert_eq!(post(&gh, "PATCH", path, json!({"sha": commit_sha})).status, 200);
    assert_eq!(gh.branch_sha("octo", "demo", "agent-zero/issue-7"), Some(commit_sha));
    assert_eq!(gh.calls_matching("PATCH", "/repos/octo/demo/git/refs/heads/").len(), 3);
}

#[test]
fn tokens_are_required_when_configured() {
    let (gh, _) = seeded();
    gh.require_token("ghp_test");
    let url = format!("{}/repos/octo/demo/issues/1/comments", gh.url());
    let body = json!({"body": "hello"});
    let anonymous = send("POST", &url, &[], Some(&body));
    assert_eq!((anonymous.status, anonymous.json()["message"].as_str()), (401, Some("Requires authentication")));
    let wrong = send("POST", &url, &[("authorization", "Bearer nope")], Some(&body));
    assert_eq!((wrong.status, wrong.json()["message"].as_str()), (401, Some("Bad credentials")));
    assert_eq!(send("POST", &url, &[("authorization", "token ghp_test")], Some(&body)).status, 201);
    assert_eq!(send("POST", &url, &[("authorization", "Bearer ghp_test")], Some(&body)).status, 201);
    // Anonymous reads of a public repository pass; a private one hides.
    assert_eq!(get(&gh, "/repos/octo/demo").status, 200);
    assert_eq!(
        send("GET", &format!("{}/repos/octo/demo", gh.url()), &[("authorization", "Bearer nope")], None).status,
        401
    );
    gh.set_private("octo", "demo", true);
    assert_eq!(get(&gh, "/repos/octo/demo").status, 404);
    let private = send("GET", &format!("{}/repos/octo/demo", gh.url()), &[("authorization", "Bearer ghp_test")], None);
    assert_eq!(private.json()["private"], true);
}

fn jwt(claims: &Value) -> String {
    let key = rsa::PrivateKey::from_pkcs1_pem(TEST_APP_PRIVATE_KEY_PEM).unwrap();
    let signer = rsa::pkcs1v15::SigningKey::<rsa::sha2::Sha256>::new(key);
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = signer.sign(input.as_bytes()).to_vec();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

#[test]
fn the_caller_is_known_and_writes_carry_its_login() {
    let (gh, _) = seeded();
    gh.require_token("ghp_test");
    gh.register_app("12345", Some(TEST_APP_PUBLIC_KEY_PEM));
    gh.add_installation(42, "octo");
    let with = |method: &str, path: &str, auth: &str, body: Option<&Value>| {
        send(method, &format!("{}{path}", gh.url()), &[("authorization", auth)], body)
    };

    // GET /user: the token's user, a plain account.
    let user = with("GET", "/user", "Bearer ghp_test", None);
    assert_eq!(user.status, 200, "{}", user.body);
    let user = user.json();
    assert_eq!((user["login"].as_str(), user["type"].as_str()), (Some(DEFAULT_ACTOR), Some("User")));
    assert!(user["id"].is_u64() && user["node_id"].is_string() && user["created_at"].is_string(), "{user}");
    let anonymous = get(&gh, "/user");
    assert_eq!((anonymous.status, anonymous.json()["message"].as_str()), (401, Some("Requires authentication")));
    let wrong = with("GET", "/user", "Bearer nope", None);
    assert_eq!((wrong.status, wrong.json()["message"].as_str()), (401, Some("Bad credentials")));

    // GET /app: the App of the JWT, with its slug; anything but a valid JWT is 401.
    let good = format!("Bearer {}", jwt(&json!({"iat": now() - 60, "exp": now() + 540, "iss": 12345})));
    let app = with("GET", "/app", &good, None);
    assert_eq!(app.status, 200, "{}", app.body);
    let app = app.json();
    assert_eq!((app["id"].as_u64(), app["slug"].as_str()), (Some(12345), Some("agent-zero-edge")));
    assert_eq!(app["html_url"], "https://github.com/apps/agent-zero-edge");
    assert_eq!(gh.app_login(), "agent-zero-edge[bot]");
    let expired = format!("Bearer {}", jwt(&json!({"iat": now() - 700, "exp": now() - 100, "iss": 12345})));
    let stranger = format!("Bearer {}", jwt(&json!({"iat": now() - 60, "exp": now() + 540, "iss": 999})));
    for auth in ["Bearer ghp_test", expired.as_str(), stranger.as_str()] {
        assert_eq!(with("GET", "/app", auth, None).status, 401, "{auth}");
    }

    // An installation token writes as the App's bot and may not read GET /user.
    let minted = with("POST", "/app/installations/42/access_tokens", &good, None).json();
    let installation = format!("token {}", minted["token"].as_str().unwrap());
    let refused = with("GET", "/user", &installation, None);
    assert_eq!(
        (refused.status, refused.json()["message"].as_str()),
        (403, Some("Resource not accessible by integration"))
    );
    let body = json!({"body": "from the app"});
    let by_app = with("POST", "/repos/octo/demo/issues/3/comments", &installation, Some(&body)).json();
    assert_eq!(
        (by_app["user"]["login"].as_str(), by_app["user"]["type"].as_str()),
        (Some("agent-zero-edge[bot]"), Some("Bot"))
    );
    let body = json!({"body": "from the token"});
    let by_token = with("POST", "/repos/octo/demo/issues/3/comments", "Bearer ghp_test", Some(&body)).json();
    assert_eq!(
        (by_token["user"]["login"].as_str(), by_token["user"]["type"].as_str()),
        (Some(DEFAULT_ACTOR), Some("User"))
    );
    // A comment a test plants is by whoever it names.
    gh.add_comment("octo", "demo", 3, "mallory", "planted");
    let authors: Vec<(String, String)> = gh
        .comments("octo", "demo", 3)
        .iter()
        .map(|c| (c["user"]["login"].as_str().unwrap().to_owned(), c["user"]["type"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(
        authors,
        [
            ("agent-zero-edge[bot]".to_owned(), "Bot".to_owned()),
            (DEFAULT_ACTOR.to_owned(), "User".to_owned()),
            ("mallory".to_owned(), "User".to_owned()),
        ]
    );

    // A renamed App and another token user show up everywhere at once.
    gh.set_app_slug("zero-two");
    gh.set_actor("machine-user");
    assert_eq!(with("GET", "/app", &good, None).json()["slug"], "zero-two");
    assert_eq!(with("GET", "/user", "Bearer ghp_test", None).json()["login"], "machine-user");
    let body = json!({"body": "again"});
    let renamed = with("POST", "/repos/octo/demo/issues/3/comments", &installation, Some(&body)).json();
    assert_eq!(renamed["user"]["login"], "zero-two[bot]");
    let fix = gh.set_file("octo", "demo", "agent-zero/issue-3", "src/app.py", "fixed\n");
    assert!(!fix.is_empty());
    let open = json!({"title": "Fix #3", "head": "agent-zero/issue-3", "base": "main", "body": "Fixes #3"});
    let pull = with("POST", "/repos/octo/demo/pulls", &installation, Some(&open));
    assert_eq!(pull.status, 201, "{}", pull.body);
    assert_eq!(pull.json()["user"]["login"], "zero-two[bot]");
}

#[test]
fn installation_tokens_need_a_valid_app_jwt() {
    let (gh, _) = seeded();
    gh.require_token("ghp_unused");
    gh.register_app("12345", Some(TEST_APP_PUBLIC_KEY_PEM));
    gh.add_installation(42, "octo");
    let url = |id: u64| format!("{}/app/installations/{id}/access_tokens", gh.url());
    let good = jwt(&json!({"iat": now() - 60, "exp": now() + 540, "iss": 12345}));
    let bearer = format!("Bearer {good}");

    let minted = send("POST", &url(42), &[("authorization", &bearer)], None);
    assert_eq!(minted.status, 201, "{}", minted.body);
    let token = minted.json()["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("ghs_") && minted.json()["expires_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(gh.minted_tokens(), std::slice::from_ref(&token));
    // The minted token opens the REST routes.
    let auth = format!("token {token}");
    let comment = send(
        "POST",
        &format!("{}/repos/octo/demo/issues/3/comments", gh.url()),
        &[("authorization", &auth)],
        Some(&json!({"body": "x"})),
    );
    assert_eq!(comment.status, 201);

    assert_eq!(send("POST", &url(7), &[("authorization", &bearer)], None).status, 404, "unknown installation");
    let mut tampered = good.clone();
    tampered.replace_range(good.len() - 6.., "AAAAAA");
    let cases = [
        (format!("Bearer {tampered}"), "bad signature"),
        (format!("Bearer {}", jwt(&json!({"iat": now() - 700, "exp": now() - 100, "iss": 12345}))), "expired"),
        (format!("Bearer {}", jwt(&json!({"iat": now(), "exp": now() + 3600, "iss": 12345}))), "exp too far"),
        (format!("Bearer {}", jwt(&json!({"iat": now(), "exp": now() + 60, "iss": 999}))), "other app"),
        ("token ghp_unused".to_owned(), "not a JWT"),
    ];
    for (header, why) in cases {
        assert_eq!(send("POST", &url(42), &[("authorization", &header)], None).status, 401, "{why}");
    }
    assert_eq!(send("POST", &url(42), &[], None).status, 401, "no credentials");
}

#[test]
fn check_runs_are_created_and_completed() {
    let (gh, sha) = seeded();
    let created = post_as(
        &gh,
        INSTALLATION_TOKEN,
        "POST",
        "/repos/octo/demo/check-runs",
        json!({"name": "Agent Zero", "head_sha": sha, "status": "in_progress"}),
    );
    assert_eq!(created.status, 201);
    let run = created.json();
    assert_eq!((run["status"].as_str(), run["head_sha"].as_str()), (Some("in_progress"), Some(sha.as_str())));
    assert!(run["conclusion"].is_null());
    let id = run["id"].as_u64().unwrap();
    let done = post_as(
        &gh,
        INSTALLATION_TOKEN,
        "PATCH",
        &format!("/repos/octo/demo/check-runs/{id}"),
        json!({
            "conclusion": "neutral",
            "output": {"title": "1 finding", "summary": "See details", "annotations": [{"path": "src/app.py", "start_line": 1, "end_line": 1, "annotation_level": "warning", "message": "m"}]},
        }),
    );
    assert_eq!(done.status, 200);
    let run = done.json();
    assert_eq!((run["status"].as_str(), run["conclusion"].as_str()), (Some("completed"), Some("neutral")));
    assert_eq!(
        (run["output"]["title"].as_str(), run["output"]["annotations_count"].as_u64()),
        (Some("1 finding"), Some(1))
    );
    assert!(run["completed_at"].as_str().is_some());
    assert_eq!(gh.check_runs("octo", "demo"), [run]);
    assert_eq!(
        post_as(
            &gh,
            INSTALLATION_TOKEN,
            "POST",
            "/repos/octo/demo/check-runs",
            json!({"name": "x", "head_sha": "f".repeat(40)})
        )
        .status,
        422
    );
    assert_eq!(
        post_as(
            &gh,
            INSTALLATION_TOKEN,
            "PATCH",
            "/repos/octo/demo/check-runs/999999",
            json!({"conclusion": "success"})
        )
        .status,
        404
    );

    // Listed on the commit as GitHub lists them: by name, newest first.
    let listed = get(&gh, &format!("/repos/octo/demo/commits/{sha}/check-runs?check_name=Agent%20Zero&filter=all"));
    assert_eq!(listed.status, 200);
    assert_eq!(
        (listed.json()["total_count"].as_u64(), listed.json()["check_runs"][0]["id"].as_u64()),
        (Some(1), Some(id))
    );
    let none = get(&gh, &format!("/repos/octo/demo/commits/{sha}/check-runs?check_name=Other"));
    assert_eq!(none.json()["total_count"], 0);
    assert_eq!(get(&gh, "/repos/octo/demo/commits/nope/check-runs").status, 422);

    // Only an App's installation writes check runs: a person's token, or
    // none, is refused as GitHub refuses it.
    for token in [Some("ghp_a_person"), None] {
        let headers: Vec<(&str, String)> =
            token.map(|t| ("authorization", format!("Bearer {t}"))).into_iter().collect();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let url = format!("{}/repos/octo/demo/check-runs", gh.url());
        let refused = send("POST", &url, &headers, Some(&json!({"name": "Agent Zero", "head_sha": sha})));
        assert_eq!(refused.status, 403, "{token:?}");
        assert!(refused.body.contains("You must authenticate via a GitHub App."), "{token:?}");
    }
    assert_eq!(gh.check_runs("octo", "demo").len(), 1);
}

#[test]
fn comments_paginate_with_link_headers_and_can_be_edited() {
    let (gh, _) = seeded();
    let ids: Vec<u64> = (1..=5).map(|i| gh.add_comment("octo", "demo", 9, "alice", &format!("comment {i}"))).collect();
    gh.add_comment("octo", "demo", 10, "bob", "elsewhere");

    let first = get(&gh, "/repos/octo/demo/issues/9/comments?per_page=2");
    let bodies = |a: &support::Answer| {
        a.json().as_array().unwrap().iter().map(|c| c["body"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(bodies(&first), ["comment 1", "comment 2"]);
    let link = first.header("link").unwrap();
    assert!(link.contains("page=2>; rel=\"next\"") && link.contains("page=3>; rel=\"last\""), "{link}");
    assert!(!link.contains("rel=\"prev\""), "{link}");

    let last = get(&gh, "/repos/octo/demo/issues/9/comments?per_page=2&page=3");
    assert_eq!(bodies(&last), ["comment 5"]);
    let link = last.header("link").unwrap();
    assert!(
        link.contains("page=2>; rel=\"prev\"") && link.contains("page=1>; rel=\"first\"") && !link.contains("next"),
        "{link}"
    );
    let all = get(&gh, "/repos/octo/demo/issues/9/comments");
    assert_eq!(bodies(&all).len(), 5);
    assert!(all.header("link").is_none(), "one page has no Link");

    let posted =
        post(&gh, "POST", "/repos/octo/demo/issues/9/comments", json!({"body": "<!-- agent-zero -->\nreport"}));
    assert_eq!(posted.status, 201);
    assert_eq!(posted.json()["user"]["login"].as_str(), Some(DEFAULT_ACTOR));
    assert_eq!(posted.json()["user"]["type"].as_str(), Some("User"));
    let id = posted.json()["id"].as_u64().unwrap();
    assert!(!ids.contains(&id));
    let edited = post(&gh, "PATCH", &format!("/repos/octo/demo/issues/comments/{id}"), json!({"body": "updated"}));
    assert_eq!((edited.status, edited.json()["body"].as_str()), (200, Some("updated")));
    assert_eq!(gh.comments("octo", "demo", 9).last().unwrap()["body"], "updated");
    assert_eq!(post(&gh, "POST", "/repos/octo/demo/issues/9/comments", json!({"text": "x"})).status, 422);
}

#[test]
fn pull_requests_open_once_per_branch() {
    let (gh, _) = seeded();
    gh.add_comment("octo", "demo", 4, "alice", "the issue");
    let fix = gh.set_file("octo", "demo", "agent-zero/issue-4", "src/app.py", "fixed\n");
    let open =
        json!({"title": "Fix #4", "head": "agent-zero/issue-4", "base": "main", "body": "Fixes #4", "draft": true});
    let created = post(&gh, "POST", "/repos/octo/demo/pulls", open.clone());
    assert_eq!(created.status, 201, "{}", created.body);
    let pull = created.json();
    assert_eq!(pull["number"].as_u64(), Some(5), "numbers follow the highest issue seen");
    assert_eq!(
        (pull["head"]["ref"].as_str(), pull["head"]["sha"].as_str()),
        (Some("agent-zero/issue-4"), Some(fix.as_str()))
    );
    assert_eq!((pull["state"].as_str(), pull["draft"].as_bool()), (Some("open"), Some(true)));
    assert_eq!(get(&gh, "/repos/octo/demo/pulls/5").json(), pull);
    let duplicate = post(&gh, "POST", "/repos/octo/demo/pulls", open);
    assert_eq!((duplicate.status, duplicate.json()["message"].as_str()), (422, Some("Validation Failed")));
    let missing = post(&gh, "POST", "/repos/octo/demo/pulls", json!({"title": "x", "head": "nope", "base": "main"}));
    assert_eq!(missing.status, 422);
    assert_eq!(gh.pulls("octo", "demo").len(), 1);
    // Listed by head (`user:branch`) and state, as the adapter asks; a
    // state GitHub does not take is its 422.
    let listed = get(&gh, "/repos/octo/demo/pulls?head=octo%3Aagent-zero%2Fissue-4&state=open");
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(
        listed.json().as_array().map(|a| a.iter().map(|p| p["number"].clone()).collect::<Vec<_>>()),
        Some(vec![json!(5)])
    );
    let other = get(&gh, "/repos/octo/demo/pulls?head=someone%3Aagent-zero%2Fissue-4");
    assert_eq!(other.json(), json!([]), "another user's branch of that name is not this one");
    assert_eq!(get(&gh, "/repos/octo/demo/pulls?state=closed").json(), json!([]));
    assert_eq!(get(&gh, "/repos/octo/demo/pulls?state=merged").status, 422, "state is open, closed or all");
}

#[test]
fn faults_answer_once_and_every_call_is_recorded() {
    let (gh, _) = seeded();
    let reset = (now() + 60).to_string();
    gh.fail_next(
        "GET",
        "/repos/octo/demo",
        403,
        &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", &reset)],
        r#"{"message":"API rate limit exceeded"}"#,
    );
    gh.fail_next("GET", "/repos/octo/demo/contents", 429, &[("retry-after", "3")], r#"{"message":"slow down"}"#);
    gh.fail_next("POST", "/repos/octo/demo/check-runs", 500, &[], "oops");

    let limited = get(&gh, "/repos/octo/demo/contents/README.md");
    assert_eq!((limited.status, limited.header("x-ratelimit-remaining")), (403, Some("0")));
    assert_eq!(limited.header("x-ratelimit-reset"), Some(reset.as_str()));
    let retry = get(&gh, "/repos/octo/demo/contents/README.md");
    assert_eq!((retry.status, retry.header("retry-after")), (429, Some("3")));
    assert_eq!(get(&gh, "/repos/octo/demo/contents/README.md").status, 200, "faults fire once");
    assert_eq!(post(&gh, "POST", "/repos/octo/demo/check-runs", json!({})).status, 500);

    let calls = gh.calls();
    assert_eq!(calls.len(), 4);
    assert_eq!(gh.calls_matching("GET", "/repos/octo/demo/contents/").len(), 3);
    let last = calls.last().unwrap();
    assert_eq!((last.method.as_str(), last.path.as_str()), ("POST", "/repos/octo/demo/check-runs"));
    assert_eq!(last.json(), Some(json!({})));
    assert_eq!(last.header("content-type"), Some("application/json"));

    send(
        "GET",
        &format!("{}/repos/octo/demo/contents/README.md?ref=main", gh.url()),
        &[("authorization", "Bearer s3cret")],
        None,
    );
    let recorded = gh.calls().pop().unwrap();
    assert_eq!(recorded.query_param("ref"), Some("main"));
    assert!(recorded.contains("s3cret") && !calls.iter().any(|c| c.contains("s3cret")));
    gh.clear_calls();
    assert!(gh.calls().is_empty());
}

#[test]
fn repository_installation_needs_the_app_jwt_and_is_404_where_not_installed() {
    let (gh, _) = seeded();
    gh.add_repo("elsewhere", "lib", "main", &[("README.md", "# lib\n")]);
    gh.add_repo("octo", "private-notes", "main", &[("README.md", "# notes\n")]);
    gh.register_app("12345", Some(TEST_APP_PUBLIC_KEY_PEM));
    gh.add_installation(42, "octo");
    let good = format!("Bearer {}", jwt(&json!({"iat": now() - 60, "exp": now() + 540, "iss": 12345})));
    let lookup = |path: &str, auth: Option<&str>| {
        let headers: Vec<(&str, &str)> = auth.map(|a| vec![("authorization", a)]).unwrap_or_default();
        send("GET", &format!("{}/repos/{path}/installation", gh.url()), &headers, None)
    };

    // GitHub's `installation` object (`apps/get-repo-installation`, 200).
    let found = lookup("octo/demo", Some(&good));
    assert_eq!(found.status, 200, "{}", found.body);
    let installation = found.json();
    for field in [
        "id",
        "account",
        "repository_selection",
        "access_tokens_url",
        "repositories_url",
        "html_url",
        "app_id",
        "target_id",
        "target_type",
        "permissions",
        "events",
        "created_at",
        "updated_at",
        "single_file_name",
        "app_slug",
        "suspended_by",
        "suspended_at",
    ] {
        assert!(installation.get(field).is_some(), "{field} missing: {installation}");
    }
    assert_eq!((installation["id"].as_u64(), installation["app_id"].as_u64()), (Some(42), Some(12345)));
    assert_eq!(installation["account"]["login"], "octo");
    assert_eq!(installation["repository_selection"], "all");
    assert!(installation["access_tokens_url"].as_str().unwrap().ends_with("/app/installations/42/access_tokens"));
    // Owner names are case-insensitive, as the repository's are.
    assert_eq!(lookup("OCTO/Demo", Some(&good)).json()["id"], 42);

    // Not installed on the account, or no such repository: 404 alike.
    for path in ["elsewhere/lib", "octo/nope"] {
        let missing = lookup(path, Some(&good));
        assert_eq!((missing.status, missing.json()["message"].as_str()), (404, Some("Not Found")), "{path}");
    }
    // An installation limited to some repositories covers only those.
    gh.set_installation_repositories(42, &["octo/demo"]);
    assert_eq!(lookup("octo/private-notes", Some(&good)).status, 404);
    assert_eq!(lookup("octo/demo", Some(&good)).json()["repository_selection"], "selected");

    // Only the App's JWT opens it: no credential, a token, an installation
    // token, an expired or foreign JWT are GitHub's 401.
    let minted = send(
        "POST",
        &format!("{}/app/installations/42/access_tokens", gh.url()),
        &[("authorization", good.as_str())],
        None,
    );
    let installation_token = format!("token {}", minted.json()["token"].as_str().unwrap());
    let expired = format!("Bearer {}", jwt(&json!({"iat": now() - 700, "exp": now() - 100, "iss": 12345})));
    let foreign = format!("Bearer {}", jwt(&json!({"iat": now() - 60, "exp": now() + 540, "iss": 999})));
    for auth in [None, Some("Bearer ghp_whatever"), Some(installation_token.as_str()), Some(&expired), Some(&foreign)] {
        let refused = lookup("octo/demo", auth);
        assert_eq!(refused.status, 401, "{auth:?}: {}", refused.body);
    }
    // And the JWT opens no other repository route once an App is registered:
    // those take an installation token.
    let with_jwt =
        send("GET", &format!("{}/repos/octo/demo/contents/README.md", gh.url()), &[("authorization", &good)], None);
    assert_eq!((with_jwt.status, with_jwt.json()["message"].as_str()), (401, Some("Bad credentials")));
    let with_installation = send(
        "GET",
        &format!("{}/repos/octo/demo/contents/README.md", gh.url()),
        &[("authorization", &installation_token)],
        None,
    );
    assert_eq!(with_installation.status, 200, "{}", with_installation.body);
}

/// An App's installation tokens may do what the App was granted: a token
/// asking for more is refused 422, a token narrowed to reading is refused
/// 403 "Resource not accessible by integration" on every write route and
/// on what it was not granted, and one with the grant writes. An expired
/// token is 401 on every route.
#[test]
fn installation_tokens_may_do_what_the_app_was_granted_and_expire() {
    let (gh, sha) = seeded();
    gh.register_app("12345", Some(TEST_APP_PUBLIC_KEY_PEM));
    gh.grant_app_permissions(&[("contents", "write"), ("issues", "write"), ("pull_requests", "read")]);
    gh.add_installation(42, "octo");
    let app = format!("Bearer {}", jwt(&json!({"iat": now() - 60, "exp": now() + 540, "iss": 12345})));
    let mint = |permissions: Option<Value>| {
        let body = permissions.map(|p| json!({ "permissions": p }));
        send(
            "POST",
            &format!("{}/app/installations/42/access_tokens", gh.url()),
            &[("authorization", &app)],
            body.as_ref(),
        )
    };

    let beyond = mint(Some(json!({"checks": "write"})));
    assert_eq!(beyond.status, 422, "{}", beyond.body);
    assert!(beyond.json()["message"].as_str().unwrap().contains("checks"), "{}", beyond.body);

    let reading = mint(Some(json!({"contents": "read", "issues": "read"}))).json();
    assert_eq!(reading["permissions"], json!({"contents": "read", "issues": "read"}));
    let reader = reading["token"].as_str().unwrap().to_owned();
    let full = mint(None).json();
    assert_eq!(full["permissions"]["contents"], "write", "{full}");
    let writer = full["token"].as_str().unwrap().to_owned();

    let blob = json!({"content": "x", "encoding": "utf-8"});
    let comment = json!({"body": "hello"});
    let status = json!({"state": "success", "context": "Agent Zero"});
    for (token, method, path, body, expected) in [
        (&reader, "GET", "/repos/octo/demo/contents/README.md".to_owned(), Value::Null, 200),
        (&reader, "POST", "/repos/octo/demo/git/blobs".to_owned(), blob.clone(), 403),
        (&reader, "POST", "/repos/octo/demo/issues/1/comments".to_owned(), comment.clone(), 403),
        (&reader, "GET", "/repos/octo/demo/pulls/1/files".to_owned(), Value::Null, 403),
        (&writer, "POST", "/repos/octo/demo/git/blobs".to_owned(), blob, 201),
        (&writer, "POST", "/repos/octo/demo/issues/1/comments".to_owned(), comment, 201),
        (&writer, "POST", format!("/repos/octo/demo/statuses/{sha}"), status, 403),
    ] {
        let body = (!body.is_null()).then_some(body);
        let answer = post_as_opt(&gh, token, method, &path, body);
        assert_eq!(answer.status, expected, "{method} {path}: {}", answer.body);
        if expected == 403 {
            assert_eq!(answer.json()["message"], "Resource not accessible by integration", "{method} {path}");
        }
    }

    gh.expire_installation_tokens();
    let expired = post_as_opt(&gh, &writer, "GET", "/repos/octo/demo/contents/README.md", None);
    assert_eq!((expired.status, expired.json()["message"].as_str()), (401, Some("Bad credentials")));
    let fresh = mint(None).json()["token"].as_str().unwrap().to_owned();
    assert_eq!(post_as_opt(&gh, &fresh, "GET", "/repos/octo/demo/contents/README.md", None).status, 200);
}

/// A request with `token`, and a JSON body when given.
fn post_as_opt(gh: &FakeGitHub, token: &str, method: &str, path: &str, body: Option<Value>) -> support::Answer {
    let bearer = format!("Bearer {token}");
    send(method, &format!("{}{path}", gh.url()), &[("authorization", &bearer)], body.as_ref())
}
