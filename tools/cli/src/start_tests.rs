//! `review`, `fix`, `tasks create`, `tasks overview`, `login` and `logout`
//! against a loopback deployment (tiny_http) that answers the task API's
//! shapes and records each request: what is sent, and the exit status for
//! each state a task stops in. No sleep: the task's reads are scripted,
//! and the interval between them is zero.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::*;

/// One request as the loopback saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    url: String,
    authorization: Option<String>,
    body: String,
}

/// A loopback deployment: `answer(method, url, reads of the task so far)`
/// gives each answer's status and JSON body.
struct Loopback {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    server: Arc<tiny_http::Server>,
}

type Answer = Box<dyn Fn(&str, &str, usize) -> (u16, Value) + Send>;

impl Loopback {
    fn start(answer: Answer) -> Self {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let url = format!("http://127.0.0.1:{}", server.server_addr().to_ip().unwrap().port());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (serving, log) = (Arc::clone(&server), Arc::clone(&seen));
        std::thread::spawn(move || {
            let mut task_reads = 0;
            while let Ok(mut request) = serving.recv() {
                let mut body = String::new();
                let _ = request.as_reader().read_to_string(&mut body);
                let method = request.method().as_str().to_owned();
                let url = request.url().to_owned();
                let authorization = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("authorization"))
                    .map(|h| h.value.as_str().to_owned());
                log.lock().unwrap().push(Seen { method: method.clone(), url: url.clone(), authorization, body });
                let (status, reply) = answer(&method, &url, task_reads);
                if method == "GET" && url.starts_with("/api/v1/tasks/") {
                    task_reads += 1;
                }
                let header = tiny_http::Header::from_bytes("content-type", "application/json").unwrap();
                let _ = request.respond(
                    tiny_http::Response::from_string(reply.to_string()).with_status_code(status).with_header(header),
                );
            }
        });
        Self { url, seen, server }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

fn event(state: &str, message: &str) -> Value {
    json!({ "state": state, "message": message, "timestamp": "2026-05-01T12:00:00.000Z" })
}

/// A deployment that creates task `api-1` and shows it `planning`, then
/// stopped in `state`; or refuses the create with `refusal`.
fn deployment(state: &'static str, refusal: Option<(u16, Value)>) -> Loopback {
    Loopback::start(Box::new(move |method: &str, url: &str, reads: usize| match (method, url) {
        ("POST", "/api/v1/tasks") => refusal.clone().unwrap_or_else(|| {
            (
                201,
                json!({ "id": "api-1", "repository": "acme/widgets", "trigger": "proactive", "mode": "observe",
                          "requestedMode": "suggest", "state": "queued" }),
            )
        }),
        ("GET", "/api/v1/tasks/api-1") if reads == 0 => {
            (200, json!({ "id": "api-1", "state": "planning", "events": [event("queued", "queued")] }))
        }
        ("GET", "/api/v1/tasks/api-1") => (
            200,
            json!({ "id": "api-1", "state": state,
                    "events": [event("queued", "queued"), event(state, &format!("stopped {state}"))] }),
        ),
        _ => (404, json!({ "error": { "code": "not_found", "message": "no route" } })),
    }))
}

/// `agent-zero ARGS` with the saved login in `config`: (status, stdout, stderr).
fn cli_in(config: &Path, args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let env = Env::with_config_dir(config);
    let status = run_with(&env, std::iter::once("agent-zero").chain(args.iter().copied()), config, &mut out, &mut err);
    (status, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

const PR: &str = "https://github.com/acme/widgets/pull/42";
const ISSUE: &str = "https://github.com/acme/widgets/issues/7";

#[test]
fn review_exits_0_completed_1_failed_or_ignored_2_needs_human() {
    let config = tempfile::tempdir().unwrap();
    for (state, status) in [("completed", 0), ("failed", 1), ("ignored", 1), ("needs-human", 2)] {
        let deployment = deployment(state, None);
        let args = ["review", PR, "--url", &deployment.url, "--token", "t0k", "--interval-ms", "0"];
        let (code, out, err) = cli_in(config.path(), &args);
        assert_eq!(code, status, "{state}: {out}{err}");
        assert!(out.starts_with("created api-1 on acme/widgets: proactive, mode observe (asked suggest"), "{out}");
        // Each event once, as it arrived, then the state it stopped in.
        assert_eq!(out.matches("queued").count(), 2, "{out}");
        assert!(out.contains(&format!("stopped {state}")) && out.ends_with(&format!("api-1 is {state}\n")), "{out}");
        let seen = deployment.seen();
        let create = &seen[0];
        assert_eq!((create.method.as_str(), create.url.as_str()), ("POST", "/api/v1/tasks"));
        assert_eq!(create.authorization.as_deref(), Some("Bearer t0k"));
        let body: Value = serde_json::from_str(&create.body).unwrap();
        assert_eq!(
            body,
            json!({ "repository": "acme/widgets", "trigger": "proactive", "mode": "observe",
                    "pullRequest": { "number": 42 } })
        );
        assert_eq!(seen.len(), 3, "one create, two reads: {seen:#?}");
    }
}

#[test]
fn fix_asks_for_an_issue_task_in_mode_fix_and_a_refusal_exits_1_naming_it() {
    let config = tempfile::tempdir().unwrap();
    let fixing = deployment("completed", None);
    let (code, out, err) =
        cli_in(config.path(), &["fix", ISSUE, "--url", &fixing.url, "--token", "t0k", "--interval-ms", "0"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    let body: Value = serde_json::from_str(&fixing.seen()[0].body).unwrap();
    assert_eq!(
        body,
        json!({ "repository": "acme/widgets", "trigger": "issue", "mode": "fix", "issue": { "number": 7 } })
    );

    let refusal = json!({ "error": { "code": "forbidden", "field": "trigger",
        "message": "trigger: the policy of acme/widgets does not act on issues (`issues.enabled` in .agent-zero.yml)" } });
    let refusing = deployment("completed", Some((403, refusal)));
    let (code, out, err) = cli_in(config.path(), &["fix", ISSUE, "--url", &refusing.url, "--token", "t0k"]);
    assert_eq!(code, EXIT_FAILED, "{out}{err}");
    assert!(err.contains("refused the task: 403 forbidden (trigger): trigger: the policy"), "{err}");
    assert_eq!(refusing.seen().len(), 1, "nothing followed");

    // A URL that is not the command's page: refused before any request.
    let (code, _, err) = cli_in(config.path(), &["fix", PR, "--url", &refusing.url, "--token", "t0k"]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("is a pull request's URL") && err.contains("use `agent-zero review`"), "{err}");
    let (code, _, err) = cli_in(config.path(), &["review", "acme/widgets#42", "--url", &refusing.url]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("does not start with https://"), "{err}");
    assert_eq!(refusing.seen().len(), 1);
}

#[test]
fn other_forges_pages_start_runs_naming_their_forge() {
    let config = tempfile::tempdir().unwrap();
    let deployment = deployment("completed", None);
    let start = |args: &[&str]| {
        let args: Vec<&str> =
            args.iter().copied().chain(["--url", &deployment.url, "--token", "t", "--interval-ms", "0"]).collect();
        cli_in(config.path(), &args)
    };
    // The newest create's body.
    let posted = || {
        let seen = deployment.seen();
        let create = seen.iter().rev().find(|s| s.method == "POST").unwrap();
        serde_json::from_str::<Value>(&create.body).unwrap()
    };

    let (code, out, err) = start(&["review", "https://gitlab.example.org/group/sub/project/-/merge_requests/12/diffs"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert_eq!(
        posted(),
        json!({ "forge": "gitlab", "repository": "group/sub/project", "trigger": "proactive", "mode": "observe",
                "pullRequest": { "number": 12 } })
    );
    let (code, out, err) = start(&["fix", "https://codeberg.org/acme/widgets/issues/7", "--forge", "forgejo"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert_eq!(
        posted(),
        json!({ "forge": "forgejo", "repository": "acme/widgets", "trigger": "issue", "mode": "fix",
                "issue": { "number": 7 } })
    );
    let (code, out, err) = start(&["review", "https://git.example.org/acme/widgets/pulls/9", "--forge", "gitea"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert_eq!((&posted()["forge"], &posted()["pullRequest"]), (&json!("gitea"), &json!({ "number": 9 })));

    // Never guessed: a Gitea-shaped page without --forge, or --forge
    // against the page's shape, sends nothing.
    let sent = deployment.seen().len();
    let (code, _, err) = start(&["review", "https://codeberg.org/acme/widgets/pulls/9"]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("`--forge gitea` or `--forge forgejo`"), "{err}");
    let (code, _, err) = start(&["fix", "https://gitlab.com/g/p/-/issues/3", "--forge", "gitea"]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("`/-/` is not `/issues/`"), "{err}");
    let (code, _, err) = start(&["review", PR, "--forge", "bitbucket"]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("--forge") && err.contains("github, gitlab, gitea, forgejo"), "{err}");
    assert_eq!(deployment.seen().len(), sent);
}

#[test]
fn tasks_create_names_a_forge_other_than_github_and_refuses_an_unknown_one() {
    let config = tempfile::tempdir().unwrap();
    let deployment = deployment("completed", None);
    let create = |forge: &[&str]| {
        let args = ["tasks", "--url", &deployment.url, "--token", "t", "create", "--repository", "group/sub/project"];
        let args: Vec<&str> =
            args.into_iter().chain(["--trigger", "issue", "--issue", "3"]).chain(forge.iter().copied()).collect();
        cli_in(config.path(), &args)
    };
    for (forge, expected) in [
        (
            &["--forge", "gitlab"][..],
            json!({ "forge": "gitlab", "repository": "group/sub/project", "trigger": "issue", "issue": { "number": 3 } }),
        ),
        (
            &["--forge", "forgejo"][..],
            json!({ "forge": "forgejo", "repository": "group/sub/project", "trigger": "issue", "issue": { "number": 3 } }),
        ),
        // GitHub, the API's default, is left out: the body is as before.
        (
            &["--forge", "github"][..],
            json!({ "repository": "group/sub/project", "trigger": "issue", "issue": { "number": 3 } }),
        ),
        (&[][..], json!({ "repository": "group/sub/project", "trigger": "issue", "issue": { "number": 3 } })),
    ] {
        let (code, out, err) = create(forge);
        assert_eq!(code, EXIT_OK, "{forge:?}: {out}{err}");
        let body: Value = serde_json::from_str(&deployment.seen().last().unwrap().body).unwrap();
        assert_eq!(body, expected, "{forge:?}");
    }
    let sent = deployment.seen().len();
    let (code, _, err) = create(&["--forge", "bitbucket"]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("'bitbucket' for '--forge") && err.contains("github, gitlab, gitea, forgejo"), "{err}");
    assert_eq!(deployment.seen().len(), sent, "nothing sent");
}

#[test]
fn a_run_still_going_at_the_timeout_exits_1_naming_how_to_follow_it() {
    let config = tempfile::tempdir().unwrap();
    let deployment = Loopback::start(Box::new(|method: &str, _: &str, _: usize| match method {
        "POST" => {
            (201, json!({ "id": "api-1", "repository": "acme/widgets", "trigger": "proactive", "mode": "observe" }))
        }
        _ => (200, json!({ "id": "api-1", "state": "executing", "events": [] })),
    }));
    let (code, _, err) =
        cli_in(config.path(), &["review", PR, "--url", &deployment.url, "--token", "t", "--timeout", "0"]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("api-1 is still executing after 0 s") && err.contains("tasks watch api-1"), "{err}");
}

#[test]
fn tasks_create_sends_what_the_flags_say_and_follows_only_with_watch() {
    let config = tempfile::tempdir().unwrap();
    let deployment = deployment("needs-human", None);
    let url = deployment.url.clone();
    let args = [
        "tasks",
        "--url",
        &url,
        "--token",
        "t",
        "create",
        "--repository",
        "acme/widgets",
        "--trigger",
        "feedback",
        "--mode",
        "suggest",
        "--feedback",
        "limit 0 divides",
        "--feedback",
        "and overflows",
        "--pr",
        "42",
        "--file",
        "src/limit.rs",
    ];
    let (code, out, err) = cli_in(config.path(), &args);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert_eq!(deployment.seen().len(), 1, "created, not followed");
    let body: Value = serde_json::from_str(&deployment.seen()[0].body).unwrap();
    assert_eq!(
        body,
        json!({ "repository": "acme/widgets", "trigger": "feedback", "mode": "suggest",
                "feedback": [{ "body": "limit 0 divides" }, { "body": "and overflows" }],
                "pullRequest": { "number": 42 }, "files": ["src/limit.rs"] })
    );

    // A body file as given, followed: needs-human exits 2.
    let file = config.path().join("task.json");
    let given = json!({ "repository": "acme/widgets", "trigger": "proactive", "pullRequest": { "number": 1 } });
    std::fs::write(&file, given.to_string()).unwrap();
    let args =
        ["tasks", "--url", &url, "--token", "t", "create", "--body", "task.json", "--watch", "--interval-ms", "0"];
    let (code, out, err) = cli_in(config.path(), &args);
    assert_eq!(code, EXIT_NEEDS_HUMAN, "{out}{err}");
    assert_eq!(serde_json::from_str::<Value>(&deployment.seen()[1].body).unwrap(), given);
    // Without a token nothing is sent.
    let before = deployment.seen().len();
    let (code, _, err) = cli_in(config.path(), &["review", PR, "--url", &url]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("needs a token"), "{err}");
    assert_eq!(deployment.seen().len(), before);
}

#[test]
fn overview_prints_the_counters_and_marks_a_lower_bound() {
    let config = tempfile::tempdir().unwrap();
    let deployment = Loopback::start(Box::new(|_: &str, _: &str, _: usize| {
        (
            200,
            json!({ "repository": "acme/widgets", "running": { "count": 2, "more": false },
                    "queued": { "count": 1000, "more": true }, "needsHuman": { "count": 1, "more": false },
                    "failedLastDay": { "count": 0, "more": false }, "failedSince": "2026-04-30T12:00:00.000Z" }),
        )
    }));
    let args = ["tasks", "--url", &deployment.url, "overview", "--repository", "acme/widgets"];
    let (code, out, err) = cli_in(config.path(), &args);
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(
        out,
        "acme/widgets\nrunning      2\nqueued       1000+\nneeds-human  1\nfailed       0 since 2026-04-30T12:00:00.000Z\n"
    );
    assert_eq!(deployment.seen()[0].url, "/api/v1/overview?repository=acme%2Fwidgets");
}

#[cfg(unix)]
#[test]
fn login_saves_owner_only_and_is_used_only_for_its_own_deployment() {
    use std::os::unix::fs::PermissionsExt as _;
    let config = tempfile::tempdir().unwrap();
    let dir = config.path().join("agent-zero");
    let saved = Loopback::start(Box::new(|_: &str, url: &str, _: usize| match url {
        u if u.starts_with("/api/v1/audit") => (200, json!({ "entries": [] })),
        _ => (200, json!({ "items": [], "nextCursor": null })),
    }));
    let (code, out, err) = cli_in(&dir, &["login", "--url", &format!("{}/", saved.url), "--token", "s3cr3t-t0k"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(!out.contains("s3cr3t") && !err.contains("s3cr3t"), "the token is never printed: {out}{err}");
    let file = dir.join("login.json");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(saved.seen()[0].authorization.as_deref(), Some("Bearer s3cr3t-t0k"), "checked before it is saved");

    // No flag: the saved deployment, with its token.
    let (code, out, err) = cli_in(&dir, &["tasks", "list"]);
    assert_eq!((code, out.as_str()), (EXIT_OK, "no tasks\n"), "{err}");
    assert_eq!(saved.seen().last().unwrap().authorization.as_deref(), Some("Bearer s3cr3t-t0k"));
    // A flag wins: another deployment gets no saved token; a given token wins too.
    let other =
        Loopback::start(Box::new(|_: &str, _: &str, _: usize| (200, json!({ "items": [], "nextCursor": null }))));
    let (code, _, err) = cli_in(&dir, &["tasks", "--url", &other.url, "list"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(other.seen()[0].authorization, None);
    let (code, _, _) = cli_in(&dir, &["tasks", "--token", "given", "list"]);
    assert_eq!(code, EXIT_OK);
    assert_eq!(saved.seen().last().unwrap().authorization.as_deref(), Some("Bearer given"));

    // A file others can read is refused, naming the fix.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, _, err) = cli_in(&dir, &["tasks", "list"]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("readable by others (mode 644)") && err.contains("chmod 600"), "{err}");

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, out, _) = cli_in(&dir, &["logout"]);
    assert_eq!((code, out.as_str()), (EXIT_OK, format!("logged out of {}\n", saved.url).as_str()));
    assert!(!file.exists());
    let (code, _, err) = cli_in(&dir, &["tasks", "list"]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("no deployment") && err.contains("agent-zero login"), "{err}");
    let (_, out, _) = cli_in(&dir, &["logout"]);
    assert_eq!(out, "no saved login\n");
}

#[test]
fn a_refused_token_is_not_saved() {
    let config = tempfile::tempdir().unwrap();
    let refusing = Loopback::start(Box::new(|_: &str, _: &str, _: usize| {
        (401, json!({ "error": { "code": "unauthorized", "message": "unknown token", "field": "Authorization" } }))
    }));
    let (code, _, err) = cli_in(config.path(), &["login", "--url", &refusing.url, "--token", "wrong"]);
    assert_eq!(code, EXIT_FAILED);
    assert!(err.contains("refused the token, nothing saved: 401 unauthorized"), "{err}");
    assert!(!err.contains("wrong"), "{err}");
    assert!(!config.path().join("login.json").exists());
}

#[test]
fn flag_then_environment_then_saved_login() {
    let saved = login::Saved { url: "https://zero.example.dev".into(), token: "saved".into() };
    let resolve = |url, token| login::resolve(url, token, Some(&saved)).map(|t| (t.url, t.token));
    let zero = "https://zero.example.dev".to_owned();
    assert_eq!(resolve(None, None), Ok((zero.clone(), Some("saved".into()))));
    assert_eq!(resolve(None, Some("given")), Ok((zero.clone(), Some("given".into()))));
    // The same deployment, spelt differently: its saved token.
    assert_eq!(
        resolve(Some("https://ZERO.example.dev/"), None),
        Ok(("https://ZERO.example.dev/".into(), Some("saved".into())))
    );
    // Another deployment never gets the saved token.
    assert_eq!(resolve(Some("https://other.example.dev"), None), Ok(("https://other.example.dev".into(), None)));
    assert_eq!(resolve(Some("https://zero.example.dev/az"), None), Ok(("https://zero.example.dev/az".into(), None)));
    assert!(login::resolve(None, Some("t"), None).unwrap_err().contains("no deployment"));
    assert_eq!(
        login::config_dir(Some("/x/config"), Some("/home/u")),
        Some(std::path::PathBuf::from("/x/config/agent-zero"))
    );
    // A relative XDG_CONFIG_HOME is ignored, as the specification says.
    assert_eq!(
        login::config_dir(Some("rel"), Some("/home/u")),
        Some(std::path::PathBuf::from("/home/u/.config/agent-zero"))
    );
    assert_eq!(login::config_dir(None, None), None);
}
