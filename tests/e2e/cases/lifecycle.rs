//! A task from a signed webhook to its terminal state on each runtime, with
//! the reference sandbox server running real git and the fixture's own
//! tests, and a loopback model answering in the OpenAI wire format.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_zero_e2e::{Reply, Runtime, Server, ServerOptions, repo_root};
use agent_zero_fakes::{FakeGitHub, FakeModel, FixtureRepo, calc};
use serde_json::{Value, json};

use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case { name: "issue_fix_runs_to_verified_completion", run: issue_fix_runs_to_verified_completion },
    Case { name: "claim_quoting_absent_text_is_rejected", run: claim_quoting_absent_text_is_rejected },
    Case {
        name: "review_comment_claiming_an_absent_bug_is_not_confirmed",
        run: review_comment_claiming_an_absent_bug_is_not_confirmed,
    },
    Case {
        name: "fix_that_breaks_tests_is_repaired_on_attempt_2",
        run: fix_that_breaks_tests_is_repaired_on_attempt_2,
    },
    Case { name: "high_impact_waits_for_approval_then_completes", run: high_impact_waits_for_approval_then_completes },
    Case {
        name: "approval_covers_only_the_decision_it_was_shown",
        run: an_approval_covers_only_the_decision_it_was_shown,
    },
    Case {
        name: "used_up_repairs_wait_for_a_person_approved_then_rejected",
        run: used_up_repairs_wait_for_a_person_approved_then_rejected,
    },
    Case { name: "lease_quota_holds_under_concurrent_tasks", run: lease_quota_holds_under_concurrent_tasks },
    Case {
        name: "fault_sandbox_unreachable_fails_with_the_reason",
        run: fault_sandbox_unreachable_fails_with_the_reason,
    },
    Case { name: "fault_ticks_delivered_twice_commit_once", run: fault_ticks_delivered_twice_commit_once },
    Case { name: "fault_model_timeout_is_retried_then_completes", run: fault_model_timeout_is_retried_then_completes },
    Case {
        name: "fault_host_killed_mid_tick_resumes_after_restart",
        run: fault_host_killed_mid_tick_resumes_after_restart,
    },
    Case {
        name: "fault_kv_error_on_a_tick_commits_nothing_then_resumes",
        run: fault_kv_error_on_a_tick_commits_nothing_then_resumes,
    },
];

const SECRET: &str = "e2e-lifecycle-secret";
const SANDBOX_TOKEN: &str = "e2e-sandbox-token";
pub(super) const OPERATOR: &str = "e2e-operator-token";
/// The claim margin of every world: short, so a claim left by an
/// interrupted tick expires within a test.
pub(super) const CLAIM_MARGIN_MS: u64 = 2_000;

/// Reads `path` as the operator: the app has GitHub credentials, so task
/// reads need a control-plane token.
pub(super) fn read(server: &Server, path: &str) -> Reply {
    server.send("GET", path, &[("authorization", &format!("Bearer {OPERATOR}"))], b"")
}

/// The reference sandbox server on loopback; killed on drop.
pub(super) struct Sandbox {
    child: Child,
    pub(super) url: String,
}

impl Sandbox {
    fn start(repos: &std::path::Path) -> Self {
        Self::with_token(repos, SANDBOX_TOKEN)
    }

    /// Serves `repos` (`DIR/<owner>/<repo>`) to holders of `token`. The
    /// server binds a free port itself and names it on its first line of
    /// standard error, so no other process can take the port between a
    /// choice and the bind; its later output is passed through to ours.
    pub(super) fn with_token(repos: &std::path::Path, token: &str) -> Self {
        let mut child = Command::new(repo_root().join("target/tools/agent-zero-sandbox"))
            .args(["--listen", "127.0.0.1:0", "--repos"])
            .arg(repos)
            .env("AGENT_ZERO_SANDBOX_TOKEN", token)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("target/tools/agent-zero-sandbox (tests/scripts/test.sh builds it)");
        let stderr = child.stderr.take().expect("piped stderr");
        let (first_line, announced) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr).lines();
            let _ = first_line.send(lines.next().and_then(Result::ok));
            for line in lines.map_while(Result::ok) {
                eprintln!("{line}");
            }
        });
        let line = announced.recv_timeout(Duration::from_secs(20)).ok().flatten().unwrap_or_default();
        let Some(address) = line.strip_prefix("agent-zero-sandbox listening on ") else {
            let _ = child.kill();
            panic!("sandbox server did not announce its address within 20 s ({:?}): {line}", child.wait());
        };
        Self { child, url: format!("http://{address}") }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Everything one scenario needs, started.
pub(super) struct World {
    pub(super) github: FakeGitHub,
    pub(super) model: FakeModel,
    pub(super) fixture: FixtureRepo,
    _sandbox: Sandbox,
    pub(super) server: Server,
}

pub(super) fn policy(mode: &str) -> String {
    format!(
        "version: 1\nmode: {mode}\nissues:\n  enabled: true\n  requireLabel: agent-zero\nchecks:\n  - [python3, -m, unittest]\n\
         autofix:\n  enabled: true\n  minConfidence: 0.8\n  allowedChangeRisks: [mechanical, behavioral]\n  requireIsolated: false\n"
    )
}

pub(super) fn world(runtime: Runtime, policy_text: &str) -> World {
    world_with(runtime, policy_text, None, false)
}

/// `state`: reuse a KV directory (restarts); `dead_sandbox`: point the app at
/// a port where nothing listens.
fn world_with(runtime: Runtime, policy_text: &str, state: Option<std::path::PathBuf>, dead_sandbox: bool) -> World {
    world_of(runtime, FixtureRepo::calc("acme", "calc"), policy_text, &[], state, dead_sandbox, &[])
}

/// A world whose fixture repository also holds `files`, whose app also has
/// the variables `extra`, and whose Spin host ends each invocation after
/// `wall_clock_secs` (a hosted Spin's limit).
pub(super) fn world_on_platform(
    runtime: Runtime,
    policy_text: &str,
    files: &[(&str, &str)],
    extra: &[(&str, &str)],
    wall_clock_secs: u64,
) -> World {
    let base = FixtureRepo::calc("acme", "calc");
    let options = ServerOptions { wall_clock_secs: Some(wall_clock_secs), ..ServerOptions::default() };
    world_from(runtime, base, policy_text, files, false, extra, options)
}

/// A world whose fixture repository also holds `files`.
pub(super) fn world_with_files(runtime: Runtime, policy_text: &str, files: &[(&str, &str)]) -> World {
    world_of(runtime, FixtureRepo::calc("acme", "calc"), policy_text, files, None, false, &[])
}

/// A world whose app also has the variables `extra`.
pub(super) fn world_with_vars(runtime: Runtime, policy_text: &str, extra: &[(&str, &str)]) -> World {
    world_of(runtime, FixtureRepo::calc("acme", "calc"), policy_text, &[], None, false, extra)
}

/// A world whose fixture repository has no `.gitignore`: what its checks
/// write shows up in the checkout's diff.
pub(super) fn world_without_gitignore(runtime: Runtime, policy_text: &str) -> World {
    world_of(runtime, FixtureRepo::calc("acme", "calc").without(".gitignore"), policy_text, &[], None, false, &[])
}

fn world_of(
    runtime: Runtime,
    base: agent_zero_fakes::FixtureBuilder,
    policy_text: &str,
    files: &[(&str, &str)],
    state: Option<std::path::PathBuf>,
    dead_sandbox: bool,
    extra: &[(&str, &str)],
) -> World {
    let options = ServerOptions { state_dir: state, ..ServerOptions::default() };
    world_from(runtime, base, policy_text, files, dead_sandbox, extra, options)
}

fn world_from(
    runtime: Runtime,
    base: agent_zero_fakes::FixtureBuilder,
    policy_text: &str,
    files: &[(&str, &str)],
    dead_sandbox: bool,
    extra: &[(&str, &str)],
    options: ServerOptions,
) -> World {
    let builder = files.iter().fold(base, |b, (path, content)| b.file(path, content));
    let fixture = builder.file(".agent-zero.yml", policy_text).build().expect("fixture repo");
    let github = FakeGitHub::start();
    github.add_fixture(&fixture);
    let model = FakeModel::start();
    let sandbox = Sandbox::start(fixture.repos_dir());
    let vars = [
        ("GITHUB_WEBHOOK_SECRET", SECRET.to_owned()),
        ("GITHUB_API_URL", github.url()),
        ("GITHUB_TOKEN", "ghp_e2e_lifecycle".to_owned()),
        ("AGENT_ZERO_MODEL_BASE_URL", model.base_url()),
        ("OPENAI_COMPATIBLE_API_KEY", "sk-e2e-model-key".to_owned()),
        ("AGENT_ZERO_SANDBOX_PROVIDER", "custom".to_owned()),
        ("AGENT_ZERO_SANDBOX_URL", if dead_sandbox { dead_url() } else { sandbox.url.clone() }),
        ("AGENT_ZERO_SANDBOX_TOKEN", SANDBOX_TOKEN.to_owned()),
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", format!("operator:{OPERATOR}")),
        ("AGENT_ZERO_CONTROL_PLANE_MODES", "operator:observe|suggest|fix|autonomous".to_owned()),
        ("AGENT_ZERO_MODEL_TIMEOUT_MS", "1500".to_owned()),
        // Claims last a step's own bound plus this margin (30 s in production).
        ("AGENT_ZERO_CLAIM_MARGIN_MS", CLAIM_MARGIN_MS.to_string()),
    ];
    // `extra` comes last: a variable named twice takes its value there.
    let options = ServerOptions {
        vars: vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .chain(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
            .collect(),
        ..options
    };
    let server = Server::start(runtime, &options).unwrap_or_else(|e| panic!("{e}"));
    World { github, model, fixture, _sandbox: sandbox, server }
}

/// The real `issues.labeled` payload, pointed at the fixture repository.
pub(super) fn labeled_issue(world: &World) -> Vec<u8> {
    let path = repo_root().join("tests/fixtures/github-webhooks/issues/labeled.payload.json");
    let mut payload: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    payload["repository"]["name"] = json!(name);
    payload["repository"]["full_name"] = json!(format!("{owner}/{name}"));
    payload["repository"]["owner"]["login"] = json!(owner);
    payload["repository"]["default_branch"] = json!(world.fixture.branch());
    payload["label"]["name"] = json!("agent-zero");
    payload["issue"]["labels"] = json!([{ "name": "agent-zero" }]);
    payload["issue"]["title"] = json!("average() is wrong for every input");
    payload["issue"]["body"] = json!("`average([2, 4])` returns 2, not 3. @octocat please look <script>x</script>");
    serde_json::to_vec(&payload).unwrap()
}

pub(super) fn deliver(world: &World, delivery: &str, event: &str, body: &[u8]) -> Reply {
    world.server.deliver_github(SECRET, event, delivery, body)
}

/// Delivers the labelled issue as `delivery`; the task it created.
pub(super) fn file_issue(world: &World, delivery: &str) -> String {
    let reply = deliver(world, delivery, "issues", &labeled_issue(world));
    assert_eq!(reply.status, 202, "{}", reply.text());
    reply.json()["taskId"].as_str().unwrap().to_owned()
}

/// Waits until the task has asked the model (its tick is in the call).
pub(super) fn wait_for_model_call(world: &World) {
    let started = Instant::now();
    while world.model.calls().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "the model was never called");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `done` holds for the fake GitHub (publication runs after the
/// task concludes).
pub(super) fn wait_github(world: &World, what: &str, done: impl Fn(&FakeGitHub) -> bool) {
    let started = Instant::now();
    while !done(&world.github) {
        assert!(started.elapsed() < Duration::from_secs(90), "GitHub never saw {what}: {:#?}", world.github.calls());
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Polls the task until it reaches a terminal (or waiting) state.
pub(super) fn wait_terminal(world: &World, task_id: &str) -> Value {
    wait_task(&world.server, task_id)
}

/// Polls `GET /api/v1/tasks/{id}` (as the operator) until the task is
/// terminal or waits for a person.
pub(super) fn wait_task(server: &Server, task_id: &str) -> Value {
    let started = Instant::now();
    loop {
        let reply = read(server, &format!("/api/v1/tasks/{task_id}"));
        if reply.status == 200 {
            let task = reply.json();
            let state = task["state"].as_str().unwrap_or_default().to_owned();
            if ["completed", "failed", "needs-human", "ignored"].contains(&state.as_str()) {
                return task;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(180), "task {task_id} did not finish: {}", reply.text());
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `POST /api/v1/approvals/{id}` with `body` (a decision naming no digest),
/// as a client does it: the stop's publication may still commit after
/// `needs-human` shows, and the API then answers 409 "changed while
/// deciding; reload and retry", so the task is reloaded (still waiting for
/// a person) and the decision sent again, a few times at most.
pub(super) fn decide_reloading(server: &Server, task_id: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let path = format!("/api/v1/approvals/{task_id}");
    let mut reply = server.send("POST", &path, headers, body);
    for _ in 0..10 {
        if reply.status != 409 || reply.json()["error"]["code"] != "conflict" {
            break;
        }
        let reloaded = read(server, &format!("/api/v1/tasks/{task_id}")).json();
        assert_eq!(reloaded["state"], "needs-human", "{reloaded}");
        reply = server.send("POST", &path, headers, body);
    }
    reply
}

pub(super) fn finding(evidence: &str, confidence: f64) -> Value {
    json!({
        "title": "average() divides by one too many",
        "explanation": "The denominator adds one to the length.",
        "severity": "high",
        "confidence": confidence,
        "valid": true,
        "evidence": [evidence],
        "files": [calc::BUG_PATH],
        "changeRisk": "mechanical"
    })
}

fn issue_fix_runs_to_verified_completion(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    // 25 acceptance criteria: the reference's cap keeps the first 20.
    let mut criteria = vec![json!("python3 -m unittest passes")];
    criteria.extend((1..25).map(|i| json!(format!("criterion {i} holds"))));
    world.model.push_decision(json!({
        "finding": finding(calc::BUG_QUOTE, 0.95),
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": criteria,
        "changes": [{ "path": calc::BUG_PATH, "content": calc::CALC_PY_FIXED, "reason": "fix the denominator" }]
    }));
    let task_id = file_issue(&world, "lifecycle-fix-1");

    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    let result = &task["result"];
    assert_eq!(result["verified"], true, "{text}");
    assert_eq!(result["verdict"], "accepted", "{text}");
    assert_eq!(result["changedFiles"], json!([calc::BUG_PATH]), "{text}");
    let checks = result["checks"].as_array().expect("checks");
    assert!(!checks.is_empty() && checks.iter().all(|c| c["exitCode"] == 0), "{text}");
    assert_eq!(result["runner"]["provider"], "custom");
    // The model saw the issue as untrusted data and never a credential.
    let calls = world.model.calls();
    assert_eq!(calls.len(), 1, "one model call for a run that verifies on the first attempt");
    assert!(calls[0].body_text().contains("average([2, 4])"));
    for call in &calls {
        for secret in [SECRET, SANDBOX_TOKEN, OPERATOR, "ghp_e2e_lifecycle"] {
            assert!(!call.contains(secret), "model request leaked a secret");
        }
    }
    // Evidence is served and says verified.
    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.md"));
    assert_eq!(evidence.status, 200);
    assert!(evidence.text().to_lowercase().contains("verified"), "{}", evidence.text());
    // The criteria past the cap are left out, and the evidence says so.
    let bundle = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence")).json();
    assert_eq!(bundle["acceptanceCriteria"].as_array().map(Vec::len), Some(20), "{bundle}");
    let omitted = bundle["coverage"]["omitted"].as_array().expect("the coverage's omissions");
    let criteria = omitted.iter().find(|o| o["subject"] == "acceptance criteria").expect("the cap listed");
    assert!(criteria["reason"].as_str().unwrap_or_default().starts_with("5 criteria past the first 20"), "{criteria}");
    // No credential reached stored state (KV, Durable Object) or the host's log.
    let leaks =
        world.server.files_containing(&[SECRET, SANDBOX_TOKEN, OPERATOR, "ghp_e2e_lifecycle", "sk-e2e-model-key"]);
    assert!(leaks.is_empty(), "{leaks:?}");
    // Every line the app logged is JSON with its ids, requests and ticks;
    // the delivery's line and each tick's name the task.
    world.server.assert_app_log(true);
    let lines = world.server.app_log_lines().unwrap_or_default();
    let of_task =
        |kind: &str| lines.iter().filter(|l| l["agent_zero"] == kind && l["task_id"] == task_id.as_str()).count();
    let delivered = lines.iter().any(|l| l["step"] == "POST /webhooks/github" && l["task_id"] == task_id.as_str());
    assert!(delivered && of_task("tick") >= 3, "{lines:?}");
    // Published: one confirmed comment, one fresh branch, one pull request
    // carrying the evidence; nothing forced, the default branch untouched.
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(&world, "a pull request", |g| !g.pulls(owner, name).is_empty());
    let pulls = world.github.pulls(owner, name);
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let head = pulls[0]["head"]["ref"].as_str().unwrap_or_default().to_owned();
    assert!(head.starts_with("agent-zero/1-") && head.ends_with(&task_id), "{head}");
    assert_eq!(pulls[0]["base"]["ref"], world.fixture.branch());
    let pr_body = pulls[0]["body"].as_str().unwrap_or_default();
    assert!(pr_body.contains("python3 -m unittest passes"), "acceptance criteria in the PR body: {pr_body}");
    assert_eq!(world.github.file(owner, name, &head, calc::BUG_PATH).as_deref(), Some(calc::CALC_PY_FIXED));
    wait_github(&world, "the validation comment", |g| !g.comments(owner, name, 1).is_empty());
    let comments = world.github.comments(owner, name, 1);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(comments[0]["body"].as_str().unwrap_or_default().starts_with("<!-- agent-zero:issue-validation -->"));
    let ref_writes: Vec<_> =
        world.github.calls().into_iter().filter(|c| c.path.contains("/git/refs") && c.method != "GET").collect();
    assert!(ref_writes.iter().all(|c| c.method == "POST"), "only fresh refs: {ref_writes:?}");
    assert_eq!(world.github.branch_sha(owner, name, world.fixture.branch()), Some(world.fixture.head_sha()));
    // Every request the run sent to GitHub is an operation of its REST description.
    world.github.assert_no_violations();
}

fn claim_quoting_absent_text_is_rejected(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    world.model.push_decision(json!({
        "finding": finding("return sum(values) // 0", 0.9),
        "plan": ["Nothing to change"],
        "acceptanceCriteria": [],
        "changes": []
    }));
    let task_id = file_issue(&world, "lifecycle-reject-1");
    // The issue (#1) hears "not confirmed" with the reason.
    let comment = assert_not_confirmed(&world, &task_id, 1);
    assert!(comment.contains("Issue not confirmed"), "{comment}");
}

/// A task rejected because its quote is not in the file: the verdict and
/// reason recorded, nothing written, the reason in the validation comment
/// on `number` (issue or pull request), no branch, no pull request.
/// Returns the comment.
pub(super) fn assert_not_confirmed(world: &World, task_id: &str, number: u64) -> String {
    let task = wait_terminal(world, task_id);
    let text = task.to_string();
    assert_eq!(task["result"]["verdict"], "rejected", "{text}");
    assert_eq!(task["result"]["verified"], false, "{text}");
    let reasons = task["result"]["finding"]["rejectionReasons"].as_array().expect("reasons");
    assert!(
        reasons.iter().any(|r| r.as_str().unwrap_or_default().contains("does not appear in the cited files")),
        "{text}"
    );
    assert!(task["result"]["changedFiles"].as_array().is_some_and(Vec::is_empty), "nothing was written: {text}");
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(world, "the validation comment", |g| !g.comments(owner, name, number).is_empty());
    let comment = world.github.comments(owner, name, number)[0]["body"].as_str().unwrap_or_default().to_owned();
    assert!(comment.to_lowercase().contains("not confirmed"), "{comment}");
    assert!(comment.contains("does not appear in the cited files"), "{comment}");
    assert!(world.github.calls_matching("POST", &format!("/repos/{owner}/{name}/git/refs")).is_empty(), "no branch");
    let opened = format!("/repos/{owner}/{name}/pulls");
    let created: Vec<_> =
        world.github.calls().into_iter().filter(|c| c.method == "POST" && c.decoded_path() == opened).collect();
    assert!(created.is_empty(), "no pull request opened: {created:#?}");
    comment
}

/// The real `pull_request_review_comment` `created` payload, on a pull
/// request of the fixture repository whose head is the fixture's commit.
pub(super) fn review_comment(world: &World, body: &str) -> Vec<u8> {
    let path = repo_root().join("tests/fixtures/github-webhooks/pull_request_review_comment/created.payload.json");
    let mut payload: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let full_name = format!("{owner}/{name}");
    let point = |repository: &mut Value| {
        repository["name"] = json!(name);
        repository["full_name"] = json!(full_name);
        repository["owner"]["login"] = json!(owner);
        repository["default_branch"] = json!(world.fixture.branch());
    };
    point(&mut payload["repository"]);
    point(&mut payload["pull_request"]["head"]["repo"]);
    point(&mut payload["pull_request"]["base"]["repo"]);
    payload["pull_request"]["head"]["sha"] = json!(world.fixture.head_sha());
    payload["pull_request"]["base"]["ref"] = json!(world.fixture.branch());
    payload["pull_request"]["base"]["sha"] = json!(world.fixture.head_sha());
    payload["comment"]["path"] = json!(calc::BUG_PATH);
    payload["comment"]["body"] = json!(body);
    serde_json::to_vec(&payload).unwrap()
}

fn review_comment_claiming_an_absent_bug_is_not_confirmed(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    // The reviewer claims a division by zero; the model repeats the claim,
    // quoting a line that is not in the file.
    world.model.push_decision(json!({
        "finding": finding("return sum(values) // 0", 0.9),
        "plan": ["Guard the division"],
        "acceptanceCriteria": [],
        "changes": [{ "path": calc::BUG_PATH, "content": calc::CALC_PY_FIXED, "reason": "avoid dividing by zero" }]
    }));
    // Another reviewer's line comment on an open pull request.
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let text = "This divides by zero: `return sum(values) // 0`. Please fix.";
    let number = world.github.open_pull_request(owner, name, "review-feedback", REVIEWED_HEAD, &[]);
    let comment_id = world.github.add_review_comment(owner, name, number, "coderabbitai[bot]", calc::BUG_PATH, 3, text);
    let mut payload: Value = serde_json::from_slice(&review_comment(&world, text)).unwrap();
    payload["pull_request"]["number"] = json!(number);
    payload["comment"]["id"] = json!(comment_id);
    let body = serde_json::to_vec(&payload).unwrap();
    let reply = deliver(&world, "review-absent-1", "pull_request_review_comment", &body);
    assert_eq!(reply.status, 202, "{}", reply.text());
    assert_eq!(reply.json()["trigger"], "feedback", "{}", reply.text());
    let task_id = reply.json()["taskId"].as_str().unwrap().to_owned();
    // The pull request hears "not confirmed" with the reason.
    let comment = assert_not_confirmed(&world, &task_id, number);
    assert!(comment.contains("Claim not confirmed"), "{comment}");

    // And so does the reviewer, in the comment's own thread.
    let answers = |g: &agent_zero_fakes::FakeGitHub| -> Vec<Value> {
        g.review_comments(owner, name, number).into_iter().filter(|c| c["in_reply_to_id"] == comment_id).collect()
    };
    wait_github(&world, "the answer in the reviewer's thread", |g| !answers(g).is_empty());
    let thread = answers(&world.github);
    assert_eq!(thread.len(), 1, "{thread:#?}");
    let answer = thread[0]["body"].as_str().unwrap_or_default();
    assert!(answer.starts_with(&format!("<!-- agent-zero:answer review-comment={comment_id} -->")), "{answer}");
    assert!(answer.contains("**Agent Zero: not confirmed.**"), "{answer}");
    assert!(answer.contains("does not appear in the cited files"), "every reason is listed: {answer}");
    assert!(published(&world, &task_id).contains("thread-answer: created"), "{}", published(&world, &task_id));

    // The same comment checked again: the one answer stands, nothing piles up.
    world.model.push_decision(json!({
        "finding": finding("return sum(values) // 0", 0.9),
        "plan": ["Guard the division"],
        "acceptanceCriteria": [],
        "changes": []
    }));
    let reply = deliver(&world, "review-absent-2", "pull_request_review_comment", &body);
    assert_eq!(reply.status, 202, "{}", reply.text());
    let second = reply.json()["taskId"].as_str().unwrap().to_owned();
    assert_not_confirmed(&world, &second, number);
    let report = published(&world, &second);
    assert!(report.contains("thread-answer: reused"), "{report}");
    let replies = format!("/repos/{owner}/{name}/pulls/{number}/comments/{comment_id}/replies");
    assert_eq!(world.github.calls_matching("POST", &replies).len(), 1, "one answer per comment");
    assert_eq!(answers(&world.github).len(), 1);
}

/// The publication report the task's log recorded (its `published` fact),
/// once the publication ran.
pub(super) fn published(world: &World, task_id: &str) -> String {
    let started = Instant::now();
    loop {
        let log = read(&world.server, &format!("/api/v1/tasks/{task_id}/log")).json();
        let reference = log["entries"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|e| e["facts"].as_array().cloned().unwrap_or_default())
            .find(|f| f["fact"] == "published")
            .map(|f| f.to_string());
        if let Some(reference) = reference {
            return reference;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "task {task_id} never published: {log}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The head of the pull request the reviewer comments on (the fake's own
/// commit; the run itself checks out the fixture's head the delivery names).
const REVIEWED_HEAD: &str = "5e1f0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f";

pub(super) fn decision(risk: &str, content: &str) -> Value {
    let mut finding = finding(calc::BUG_QUOTE, 0.95);
    finding["changeRisk"] = json!(risk);
    json!({
        "finding": finding,
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": calc::BUG_PATH, "content": content, "reason": "fix the denominator" }]
    })
}

fn fix_that_breaks_tests_is_repaired_on_attempt_2(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    let still_wrong = calc::CALC_PY.replace("(len(values) + 1)", "(len(values) + 2)");
    world.model.push_decision(decision("mechanical", &still_wrong));
    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "lifecycle-repair-1");
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    assert_eq!(task["result"]["attempts"], 2, "{text}");
    let calls = world.model.calls();
    assert_eq!(calls.len(), 2, "understand once, re-plan once");
    // The re-plan saw the failing output of attempt 1.
    assert!(calls[1].body_text().contains("FAIL"), "the repair prompt carries the failing check output");
    // Every request the run sent to GitHub is an operation of its REST description.
    world.github.assert_no_violations();
}

fn high_impact_waits_for_approval_then_completes(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    world.model.push_decision(decision("high-impact", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "lifecycle-approve-1");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "needs-human", "{task}");
    assert!(task["result"].is_null() || task["result"]["verified"] == false, "{task}");

    // Approving needs a token; an anonymous approval changes nothing.
    let path = format!("/api/v1/approvals/{task_id}");
    let body = br#"{"decision":"approve","comment":"reviewed"}"#;
    let anonymous = world.server.send("POST", &path, &[("content-type", "application/json")], body);
    assert_eq!(anonymous.status, 401, "{}", anonymous.text());
    let auth = format!("Bearer {OPERATOR}");
    let approved = decide_reloading(
        &world.server,
        &task_id,
        &[("content-type", "application/json"), ("authorization", &auth)],
        body,
    );
    assert!(approved.status == 200 || approved.status == 202, "{}", approved.text());
    // Deciding again: the task is no longer waiting.
    let task = wait_resumed(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    assert_eq!(task["approvedBy"], "operator", "{text}");
    let again =
        world.server.send("POST", &path, &[("content-type", "application/json"), ("authorization", &auth)], body);
    assert_eq!(again.status, 409, "{}", again.text());
}

/// An approval covers what the person was shown: the approved change fails
/// its checks, the repair's new content stops for a new approval that shows
/// it, the first page's approval is refused (409 naming `decisionDigest`),
/// and nothing unapproved reaches GitHub.
fn an_approval_covers_only_the_decision_it_was_shown(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    let still_wrong = calc::CALC_PY.replace("(len(values) + 1)", "(len(values) + 2)");
    world.model.push_decision(decision("high-impact", &still_wrong));
    world.model.push_decision(decision("high-impact", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "lifecycle-approve-bound-1");
    let pending = |world: &World| -> (String, String) {
        let task = read(&world.server, &format!("/api/v1/tasks/{task_id}")).json();
        let digest = task["pendingDecision"]["decisionDigest"].as_str().unwrap_or_else(|| panic!("{task}")).to_owned();
        let content = task["pendingDecision"]["changes"][0]["content"].as_str().unwrap_or_default().to_owned();
        (digest, content)
    };
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "needs-human", "{task}");
    let (first, shown) = pending(&world);
    assert_eq!(shown, still_wrong, "the approver is shown the content approving writes");

    let auth = format!("Bearer {OPERATOR}");
    let headers = [("content-type", "application/json"), ("authorization", auth.as_str())];
    // Right after `needs-human` shows, the stop's publication may still be
    // committing: a decision is then refused 409 "changed while deciding",
    // and is sent again after a reload, as a client does.
    let approve = |digest: &str| {
        let body = serde_json::to_vec(&json!({ "decision": "approve", "decisionDigest": digest })).unwrap();
        decide_reloading(&world.server, &task_id, &headers, &body)
    };
    let approved = approve(&first);
    assert_eq!(approved.status, 200, "{}", approved.text());

    // The checks fail; the repair's decision waits for a person again.
    let started = Instant::now();
    let (second, repaired) = loop {
        let task = wait_terminal(&world, &task_id);
        if task["state"] == "needs-human" && task["attempts"].as_u64() >= Some(1) {
            let (digest, content) = pending(&world);
            if digest != first {
                break (digest, content);
            }
        }
        assert_ne!(task["state"], "completed", "the repair was published without a new approval: {task}");
        assert!(started.elapsed() < Duration::from_secs(120), "the repair never stopped for a person: {task}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(repaired, calc::CALC_PY_FIXED, "the new approval shows the repair's content");
    let writes: Vec<_> =
        world.github.calls().into_iter().filter(|c| c.path.contains("/git/") && c.method != "GET").collect();
    assert!(writes.is_empty(), "nothing was pushed before the repair's approval: {writes:?}");

    let stale = approve(&first);
    assert_eq!(stale.status, 409, "{}", stale.text());
    assert_eq!(stale.json()["error"]["field"], "decisionDigest", "{}", stale.text());
    assert_eq!(read(&world.server, &format!("/api/v1/tasks/{task_id}")).json()["state"], "needs-human");

    let approved = approve(&second);
    assert_eq!(approved.status, 200, "{}", approved.text());
    let task = wait_resumed(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    assert_eq!(task["result"]["verified"], true, "{task}");
}

/// Used-up repairs stop at `needs-human` (as the reference's do), never
/// reading as a success; the task says why and what approving does. One
/// approved gets one more attempt, which repairs and completes; another,
/// rejected, fails with nothing published.
fn used_up_repairs_wait_for_a_person_approved_then_rejected(runtime: Runtime) {
    let world = world(runtime, &format!("{}agent:\n  maxAttempts: 1\n", policy("fix")));
    let still_wrong = calc::CALC_PY.replace("(len(values) + 1)", "(len(values) + 2)");
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let auth = format!("Bearer {OPERATOR}");
    let headers = [("content-type", "application/json"), ("authorization", auth.as_str())];
    let stop = |delivery: &str| -> (String, String) {
        world.model.push_decision(decision("mechanical", &still_wrong));
        let task_id = file_issue(&world, delivery);
        let task = wait_terminal(&world, &task_id);
        let text = task.to_string();
        assert_eq!(task["state"], "needs-human", "{text}");
        assert_eq!(task["result"]["verified"], false, "{text}");
        let pending = &task["pendingDecision"];
        assert_eq!(pending["stop"]["code"], "repairs-exhausted", "{text}");
        assert_eq!(pending["approving"], "retries", "{text}");
        (task_id, pending["decisionDigest"].as_str().unwrap_or_else(|| panic!("{text}")).to_owned())
    };

    let (approved_id, shown) = stop("lifecycle-exhausted-approve");
    // The issue's comment and the evidence say a person must decide: never a success.
    wait_github(&world, "the stop's comment", |g| !g.comments(owner, name, 1).is_empty());
    let comment = world.github.comments(owner, name, 1)[0]["body"].as_str().unwrap_or_default().to_owned();
    for text in ["waiting for a person's decision", "### Waiting for a person", "<code>repairs-exhausted</code>"] {
        assert!(comment.contains(text), "{text}: {comment}");
    }
    assert!(!comment.contains("Verified change") && !comment.contains("Write refused"), "{comment}");
    let evidence = read(&world.server, &format!("/api/v1/tasks/{approved_id}/evidence")).json();
    assert_eq!(evidence["refusal"]["code"], "repairs-exhausted", "{evidence}");
    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    let body = serde_json::to_vec(&json!({ "decision": "approve", "decisionDigest": shown })).unwrap();
    let approved = world.server.send("POST", &format!("/api/v1/approvals/{approved_id}"), &headers, &body);
    assert_eq!(approved.status, 200, "{}", approved.text());
    let task = wait_resumed(&world, &approved_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!((task["result"]["verified"].as_bool(), task["result"]["attempts"].as_u64()), (Some(true), Some(2)));
    let calls = world.model.calls();
    assert_eq!(calls.len(), 2, "understand once, then the approved try's repair");
    assert!(calls[1].body_text().contains("FAIL"), "the approved try repairs from the failing output");
    wait_github(&world, "a pull request", |g| !g.pulls(owner, name).is_empty());

    let (rejected_id, _) = stop("lifecycle-exhausted-reject");
    let body = br#"{"decision":"reject","comment":"not this way"}"#;
    let rejected = decide_reloading(&world.server, &rejected_id, &headers, body);
    assert_eq!(rejected.status, 200, "{}", rejected.text());
    let task = wait_resumed(&world, &rejected_id);
    assert_eq!(task["state"], "failed", "{task}");
    assert_eq!(task["failure"], "rejected by operator", "{task}");
    assert_eq!(world.github.pulls(owner, name).len(), 1, "the rejected change was never published");
    assert_eq!(world.model.calls().len(), 3, "nothing was asked of the model after the rejection");
}

/// The task once an approval took effect: stopped again in a state other
/// than `needs-human` (at most 120 s).
pub(super) fn wait_resumed(world: &World, task_id: &str) -> Value {
    let started = Instant::now();
    loop {
        let task = wait_terminal(world, task_id);
        if task["state"] != "needs-human" {
            return task;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "approval did not resume the task: {task}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// A loopback URL where nothing listens.
pub(super) fn dead_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}")
}

fn fault_sandbox_unreachable_fails_with_the_reason(runtime: Runtime) {
    let world = world_with(runtime, &policy("fix"), None, true);
    let task_id = file_issue(&world, "fault-sandbox-1");
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "failed", "{text}");
    assert_eq!(task["result"]["verified"], false, "{text}");
    assert!(text.contains("sandbox"), "the failure names the sandbox: {text}");
    assert!(world.model.calls().is_empty(), "no model call without a checkout");
}

fn fault_host_killed_mid_tick_resumes_after_restart(runtime: Runtime) {
    let state = tempfile::tempdir().unwrap();
    let mut world = world_with(runtime, &policy("fix"), Some(state.path().to_path_buf()), false);
    // The first model call hangs; the host is killed while it waits.
    world.model.push_delay(4_000);
    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "fault-kill-1");
    wait_for_model_call(&world);
    world.server.stop();
    std::thread::sleep(Duration::from_millis(4_500));

    // Same state, new process: nothing committed is lost, and the sweep
    // re-drives the interrupted tick.
    let options = ServerOptions {
        vars: vec![
            ("GITHUB_WEBHOOK_SECRET".into(), SECRET.into()),
            ("GITHUB_API_URL".into(), world.github.url()),
            ("GITHUB_TOKEN".into(), "ghp_e2e_lifecycle".into()),
            ("AGENT_ZERO_MODEL_BASE_URL".into(), world.model.base_url()),
            ("OPENAI_COMPATIBLE_API_KEY".into(), "sk-e2e-model-key".into()),
            ("AGENT_ZERO_SANDBOX_PROVIDER".into(), "custom".into()),
            ("AGENT_ZERO_SANDBOX_URL".into(), world._sandbox.url.clone()),
            ("AGENT_ZERO_SANDBOX_TOKEN".into(), SANDBOX_TOKEN.into()),
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS".into(), format!("operator:{OPERATOR}")),
        ],
        state_dir: Some(state.path().to_path_buf()),
        ..ServerOptions::default()
    };
    world.server = Server::start(runtime, &options).unwrap_or_else(|e| panic!("{e}"));
    let before = read(&world.server, &format!("/api/v1/tasks/{task_id}"));
    assert_eq!(before.status, 200, "the task survived the restart: {}", before.text());
    sweep_until_redriven(&world.server);
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
}

/// Delivers `count` labelled issues at once (`{prefix}-{i}`); their task ids.
pub(super) fn file_issues_at_once(world: &World, prefix: &str, count: usize) -> Vec<String> {
    let body = labeled_issue(world);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..count)
            .map(|i| {
                let body = &body;
                scope.spawn(move || deliver(world, &format!("{prefix}-{i}"), "issues", body))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                let reply = h.join().unwrap();
                assert_eq!(reply.status, 202, "{}", reply.text());
                reply.json()["taskId"].as_str().unwrap().to_owned()
            })
            .collect()
    })
}

/// Every transition of the task appears once: no step was committed twice.
pub(super) fn assert_each_step_committed_once(task: &Value) {
    let events: Vec<&str> = task["events"].as_array().unwrap().iter().map(|e| e["state"].as_str().unwrap()).collect();
    let mut deduped = events.clone();
    deduped.dedup();
    assert_eq!(events, deduped, "no transition was committed twice: {events:?}");
}

/// The reference sandbox's counters: leases `created`, `active`, `peak`,
/// commands `runs`.
pub(super) fn sandbox_stats(world: &World) -> Value {
    let auth = format!("Bearer {SANDBOX_TOKEN}");
    agent_zero_e2e::request("GET", &format!("{}/v1/stats", world._sandbox.url), &[("authorization", &auth)], b"")
        .expect("sandbox stats")
        .json()
}

/// How many commands the reference sandbox was asked to run that carry
/// `element` in their argv: the checks run as one background job, so each
/// job start carries every check's argv (a poll carries none of them).
pub(super) fn runs_carrying(world: &World, element: &str) -> usize {
    let record = sandbox_record(world);
    let requests = record["requests"].as_array().cloned().unwrap_or_default();
    requests.iter().filter(|r| r["argv"].as_array().is_some_and(|argv| argv.iter().any(|a| a == element))).count()
}

/// What the reference sandbox acted on (`GET /v1/record`): create bodies
/// and each command's argv, cwd and whole environment.
pub(super) fn sandbox_record(world: &World) -> Value {
    let auth = format!("Bearer {SANDBOX_TOKEN}");
    agent_zero_e2e::request("GET", &format!("{}/v1/record", world._sandbox.url), &[("authorization", &auth)], b"")
        .expect("sandbox record")
        .json()
}

/// Sweeps with no grace until the interrupted tick is re-driven: its claim
/// (two 1.5 s model calls plus the margin) is left alone until it expires,
/// whatever graceMs says.
fn sweep_until_redriven(server: &Server) {
    let auth = format!("Bearer {OPERATOR}");
    let started = Instant::now();
    loop {
        let swept = server.send("POST", "/api/v1/sweep?graceMs=0", &[("authorization", &auth)], b"");
        assert_eq!(swept.status, 200, "{}", swept.text());
        if swept.json()["ticksEnqueued"].as_u64().unwrap_or(0) > 0 {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the interrupted tick was never re-driven: {}",
            swept.text()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn lease_quota_holds_under_concurrent_tasks(runtime: Runtime) {
    // The repository's run bound (1 by default) is the lease
    // coordinator's per-repository quota (docs/tasks.md).
    let world = world(runtime, &policy("fix"));
    for _ in 0..3 {
        world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    }
    // Three deliveries at once for one repository: maxActivePerRepository is 1,
    // so the coordinator (Durable Object / Spin KV) must serialise the leases.
    let ids = file_issues_at_once(&world, "quota", 3);
    for id in &ids {
        let task = wait_terminal(&world, id);
        assert_eq!(task["state"], "completed", "{task}");
        assert_eq!(task["result"]["verified"], true, "{task}");
    }
    let stats = sandbox_stats(&world);
    assert_eq!(stats["created"], 3, "{stats}");
    assert_eq!(stats["peak"], 1, "never more than maxActivePerRepository leases at once: {stats}");
}

fn fault_ticks_delivered_twice_commit_once(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "fault-twice-1");
    // While the task runs, sweep with no grace again and again: every pending
    // tick is delivered a second (third...) time.
    let auth = format!("Bearer {OPERATOR}");
    let started = Instant::now();
    loop {
        let swept = world.server.send("POST", "/api/v1/sweep?graceMs=0", &[("authorization", &auth)], b"");
        assert_eq!(swept.status, 200, "{}", swept.text());
        let task = read(&world.server, &format!("/api/v1/tasks/{task_id}")).json();
        if ["completed", "failed", "needs-human"].contains(&task["state"].as_str().unwrap_or_default()) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{task}");
        std::thread::sleep(Duration::from_millis(150));
    }
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    // Every lifecycle step was committed once.
    assert_each_step_committed_once(&task);
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(&world, "a pull request", |g| !g.pulls(owner, name).is_empty());
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(world.github.pulls(owner, name).len(), 1, "one pull request");
    assert_eq!(world.github.comments(owner, name, 1).len(), 1, "one comment");
    assert_eq!(world.github.calls_matching("POST", &format!("/repos/{owner}/{name}/git/refs")).len(), 1, "one branch");
}

fn fault_model_timeout_is_retried_then_completes(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    // The first model call hangs past AGENT_ZERO_MODEL_TIMEOUT_MS (1.5 s).
    world.model.push_delay(30_000);
    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "fault-timeout-1");
    let started = Instant::now();
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    assert_eq!(world.model.calls().len(), 2, "the timed-out call was retried once");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the client gave up at its timeout, not after the fake's 30 s"
    );
}

fn fault_kv_error_on_a_tick_commits_nothing_then_resumes(runtime: Runtime) {
    // Under target/: the fault needs file attributes, which tmpfs lacks.
    let scratch = repo_root().join("target/e2e-state");
    std::fs::create_dir_all(&scratch).unwrap();
    let state = tempfile::tempdir_in(&scratch).unwrap();
    let world = world_with(runtime, &policy("fix"), Some(state.path().to_path_buf()), false);
    // The first model answer takes 1 s (under the 1.5 s model timeout); the
    // store breaks while the tick waits for it, so that tick cannot commit.
    // Every retry during the outage re-asks the model (its answer cannot be
    // committed), so there are answers to spare.
    world.model.push_delay(1_000);
    for _ in 0..12 {
        world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    }
    let task_id = file_issue(&world, "fault-kv-1");
    wait_for_model_call(&world);
    let fault = world.server.break_storage();
    // Long enough for the answer to arrive, the commit to fail, and the
    // host's own retries (queue redelivery, cron sweep) to fail as well.
    std::thread::sleep(Duration::from_millis(5_000));
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    // The task has not moved past the step whose commit failed; the model's
    // answer is not in it. On Spin the store stays readable; on workerd the
    // task's Durable Object cannot even be read while its storage fails, and
    // says so (503 storage_unavailable) rather than answer a stale state.
    let during = read(&world.server, &format!("/api/v1/tasks/{task_id}"));
    match (runtime, during.status) {
        (_, 200) => {
            let during = during.json();
            assert!(
                !["completed", "failed", "needs-human"].contains(&during["state"].as_str().unwrap_or_default()),
                "{during}"
            );
            assert!(during["result"].is_null() || during["result"]["verified"] != true, "{during}");
        }
        (Runtime::Workerd, 503) => {
            assert_eq!(during.json()["error"]["code"], "storage_unavailable", "{}", during.text())
        }
        (_, status) => panic!("mid-outage read answered {status}: {}", during.text()),
    }
    // A delivery that arrives now is refused whole (GitHub shows it failed
    // and can redeliver it); nothing of it is kept.
    let refused = deliver(&world, "fault-kv-2", "issues", &labeled_issue(&world));
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.json()["error"]["code"], "storage_unavailable", "{}", refused.text());
    assert!(world.github.pulls(owner, name).is_empty(), "nothing was published from an uncommitted step");
    let asked_during_outage = world.model.calls().len();
    // Retries back off (workerd: the redelivery delay grows with the
    // message's age; Spin: the cron sweep's grace), so an outage costs a few
    // model calls, not one per immediate redelivery (max_retries = 10).
    assert!(asked_during_outage <= 5, "{asked_during_outage} model calls in a 5 s outage");
    fault.repair();

    // The interrupted tick is driven again; it re-asks the model (the lost
    // answer was never committed) and the task completes.
    sweep_until_redriven(&world.server);
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    assert!(world.model.calls().len() >= 2, "the lost answer was asked for again");
    assert_each_step_committed_once(&task);
    wait_github(&world, "a pull request", |g| !g.pulls(owner, name).is_empty());
    assert_eq!(world.github.pulls(owner, name).len(), 1, "one pull request");
    // The refused delivery left nothing behind: no task under its id, and
    // the index lists only the one task.
    let refused_task = read(&world.server, "/api/v1/tasks/gh-fault-kv-2");
    assert_eq!(refused_task.status, 404, "the refused delivery created no task: {}", refused_task.text());
    let listed = read(&world.server, "/api/v1/tasks").json();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "{listed}");
}
