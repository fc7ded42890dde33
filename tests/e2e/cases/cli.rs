//! The `agent-zero` CLI against the real worker in workerd and the Spin
//! component in the Spin host, in-process through `agent_zero_cli::run`:
//!
//! - `init` in a fixture checkout writes the policy the deployment then
//!   runs (the task log's entry 0 holds its checks exactly);
//! - `doctor` passes every check on a healthy deployment, and names each
//!   fault of a misconfigured one with its fix;
//! - `replay` reproduces a verified run's stored evidence byte for byte
//!   from its raw log, and reports a tampered log's first difference;
//! - `tasks list|show|evidence|reject` print the API's answers and errors.

use std::path::Path;

use agent_zero_e2e::{Runtime, Server, ServerOptions, repo_root};
use agent_zero_fakes::{FakeGitHub, FakeModel, FixtureRepo, calc};
use serde_json::{Value, json};

use super::lifecycle::{Sandbox, dead_url, finding};
use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case { name: "cli_init_writes_the_policy_the_deployment_runs", run: init_writes_the_policy_the_deployment_runs },
    Case { name: "cli_doctor_passes_a_healthy_deployment", run: doctor_passes_a_healthy_deployment },
    Case { name: "cli_doctor_names_each_fault_of_a_misconfigured_deployment", run: doctor_names_each_fault },
    Case {
        name: "cli_replay_reproduces_the_evidence_and_finds_a_tampered_log",
        run: replay_reproduces_and_finds_tampering,
    },
    Case {
        name: "cli_reference_policy_runs_with_its_warnings_in_the_evidence",
        run: reference_policy_runs_with_its_warnings,
    },
];

const SECRET: &str = "e2e-cli-webhook-secret";
const SANDBOX_TOKEN: &str = "e2e-cli-sandbox-token";
const OPERATOR: &str = "e2e-cli-operator-token";
const GITHUB_TOKEN: &str = "ghp_e2e_cli_token";
const LOGIN: &str = "acme-cli-machine";

/// What a deployment gets wrong, if anything.
#[derive(Clone, Copy, Default)]
struct Faults {
    /// No model credential or endpoint.
    no_model: bool,
    /// The sandbox URL points where nothing listens.
    dead_sandbox: bool,
    /// GitHub refuses the configured token.
    stale_github_token: bool,
}

struct World {
    _github: FakeGitHub,
    model: FakeModel,
    fixture: FixtureRepo,
    _sandbox: Sandbox,
    server: Server,
}

impl World {
    fn start(runtime: Runtime, policy: &str, extra: &[(&str, &str)], faults: Faults) -> Self {
        let builder = extra.iter().fold(FixtureRepo::calc("acme", "calc"), |b, (path, content)| b.file(path, content));
        let fixture = builder.file(".agent-zero.yml", policy).build().expect("fixture repo");
        let github = FakeGitHub::start();
        github.add_fixture(&fixture);
        github.require_token(GITHUB_TOKEN);
        github.set_actor(LOGIN);
        let model = FakeModel::start();
        let sandbox = Sandbox::with_token(fixture.repos_dir(), SANDBOX_TOKEN);
        let sandbox_url = if faults.dead_sandbox { dead_url() } else { sandbox.url.clone() };
        let github_token = if faults.stale_github_token { "ghp_e2e_cli_revoked" } else { GITHUB_TOKEN };
        let mut vars = vec![
            ("GITHUB_WEBHOOK_SECRET", SECRET.to_owned()),
            ("GITHUB_API_URL", github.url()),
            ("GITHUB_TOKEN", github_token.to_owned()),
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom".to_owned()),
            ("AGENT_ZERO_SANDBOX_URL", sandbox_url),
            ("AGENT_ZERO_SANDBOX_TOKEN", SANDBOX_TOKEN.to_owned()),
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS", format!("operator:{OPERATOR}")),
            ("AGENT_ZERO_CONTROL_PLANE_MODES", "operator:observe|suggest|fix|autonomous".to_owned()),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/calc".to_owned()),
            ("AGENT_ZERO_MODEL_TIMEOUT_MS", "1500".to_owned()),
            ("AGENT_ZERO_CLAIM_MARGIN_MS", "2000".to_owned()),
        ];
        if !faults.no_model {
            vars.push(("AGENT_ZERO_MODEL_BASE_URL", model.base_url()));
            vars.push(("OPENAI_COMPATIBLE_API_KEY", "sk-e2e-cli-model".to_owned()));
        }
        let options = ServerOptions {
            vars: vars.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect(),
            ..ServerOptions::default()
        };
        let server = Server::start(runtime, &options).unwrap_or_else(|e| panic!("{e}"));
        Self { _github: github, model, fixture, _sandbox: sandbox, server }
    }

    /// `agent-zero ARGS` in `cwd` against this deployment: (status, stdout, stderr).
    fn cli(&self, args: &[&str], cwd: &Path) -> (u8, String, String) {
        cli(args, cwd)
    }

    fn url(&self) -> String {
        self.server.url("")
    }
}

/// `agent-zero ARGS` in `cwd`: (status, stdout, stderr).
fn cli(args: &[&str], cwd: &Path) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status =
        agent_zero_cli::run(std::iter::once("agent-zero").chain(args.iter().copied()), cwd, &mut out, &mut err);
    (status, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
}

fn init_writes_the_policy_the_deployment_runs(runtime: Runtime) {
    // A checkout of the fixture repository with a Node manifest beside the
    // Python project: `init` runs discovery over it.
    let package_json = r#"{"name":"calc","scripts":{"test":"python3 -m unittest","start":"node ."}}"#;
    let checkout =
        FixtureRepo::calc("acme", "calc").file("package.json", package_json).build().expect("fixture checkout");
    std::fs::remove_file(checkout.path().join(".agent-zero.yml")).unwrap();
    let (status, out, err) = cli(&["init"], &checkout.path());
    assert_eq!(status, 0, "{out}{err}");
    assert!(out.contains("npm run test"), "{out}");
    assert!(out.contains("wrangler deploy") && out.contains("spin deploy"), "{out}");
    let written = std::fs::read_to_string(checkout.path().join(".agent-zero.yml")).unwrap();
    let (status, _, err) = cli(&["init"], &checkout.path());
    assert_eq!(status, 1);
    assert!(err.contains("already exists"), "{err}");

    // The deployment reads that file from the default branch and runs it.
    let world = World::start(runtime, &written, &[("package.json", package_json)], Faults::default());
    let url = world.url();
    let create = json!({
        "repository": "acme/calc",
        "mode": "fix",
        "trigger": "feedback",
        "feedback": [{ "body": "average() is off by one", "path": "calc.py", "line": 11 }]
    });
    let reply = world.server.send(
        "POST",
        "/api/v1/tasks",
        &[("authorization", &format!("Bearer {OPERATOR}")), ("content-type", "application/json")],
        create.to_string().as_bytes(),
    );
    assert_eq!(reply.status, 201, "{}", reply.text());
    let created = reply.json();
    assert_eq!(created["mode"], "observe", "init writes `mode: observe`, and the policy caps the request: {created}");
    let id = created["id"].as_str().unwrap().to_owned();
    // Entry 0 of the raw log holds the policy as parsed: init's checks, exactly.
    let log = world.server.send(
        "GET",
        &format!("/api/v1/tasks/{id}/log"),
        &[("authorization", &format!("Bearer {OPERATOR}"))],
        b"",
    );
    assert_eq!(log.status, 200, "{}", log.text());
    let entry0 = &log.json()["entries"][0];
    assert_eq!(entry0["seq"], 0);
    let policy = &entry0["facts"][0]["stimulus"]["policy"];
    assert_eq!(policy["checks"], json!([["npm", "run", "test"]]), "{entry0}");
    assert_eq!(policy["mode"], "observe");
    // The log is for token holders only, and 404 names the id.
    let anonymous = world.server.send("GET", &format!("/api/v1/tasks/{id}/log"), &[], b"");
    assert_eq!(anonymous.status, 401, "{}", anonymous.text());
    let missing =
        world.server.send("GET", "/api/v1/tasks/gh-nope/log", &[("authorization", &format!("Bearer {OPERATOR}"))], b"");
    assert_eq!((missing.status, missing.json()["error"]["field"].as_str()), (404, Some("id")), "{}", missing.text());
    // `tasks show` prints it.
    let (status, out, err) = world.cli(&["tasks", "--url", &url, "--token", OPERATOR, "show", &id], &checkout.path());
    assert_eq!(status, 0, "{err}");
    assert!(
        out.starts_with(&format!("{id}  ")) && out.contains("feedback on acme/calc (api:operator, mode observe)"),
        "{out}"
    );
}

/// The checks of a `doctor --json` report by name: (status, detail, fix).
fn report(out: &str) -> (bool, Vec<(String, String, String, String)>) {
    let value: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("doctor --json is JSON ({e}): {out}"));
    let checks = value["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (s("name"), s("status"), s("detail"), s("fix"))
        })
        .collect();
    (value["ok"] == true, checks)
}

fn doctor_passes_a_healthy_deployment(runtime: Runtime) {
    let world = World::start(runtime, calc::POLICY_YML, &[], Faults::default());
    let url = world.url();
    let here = repo_root();
    let args = ["doctor", "--url", &url, "--token", OPERATOR, "--webhook-secret", SECRET, "--json"];
    let (status, out, err) = world.cli(&args, &here);
    let (ok, checks) = report(&out);
    assert_eq!(status, 0, "{out}{err}");
    assert!(ok, "{out}");
    let names: Vec<&str> = checks.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "reachable",
            "health",
            "storage",
            "webhook-secret",
            "signed-ping",
            "github-credentials",
            "model-provider",
            "sandbox-provider",
            "control-plane",
            "github-identity",
            "model-reachable",
            "sandbox-reachable"
        ],
        "{out}"
    );
    assert!(checks.iter().all(|c| c.1 == "pass"), "{out}");
    let detail = |name: &str| checks.iter().find(|c| c.0 == name).unwrap().2.clone();
    assert!(detail("health").starts_with("agent-zero-edge "), "{out}");
    assert_eq!(detail("storage"), "written, read back and deleted a key");
    assert!(detail("github-identity").contains(LOGIN), "{out}");
    for value in [OPERATOR, SECRET, GITHUB_TOKEN, SANDBOX_TOKEN, "sk-e2e-cli-model"] {
        assert!(!out.contains(value) && !err.contains(value), "{value} echoed: {out}");
    }
    // The lines form says the same.
    let (status, text, _) = world.cli(&args[..args.len() - 1], &here);
    assert_eq!(status, 0, "{text}");
    assert!(text.contains("PASS  signed-ping") && text.ends_with("all checks passed\n"), "{text}");
}

fn doctor_names_each_fault(runtime: Runtime) {
    let faults = Faults { no_model: true, dead_sandbox: true, stale_github_token: true };
    let world = World::start(runtime, calc::POLICY_YML, &[], faults);
    let url = world.url();
    let here = repo_root();
    let (status, out, err) = world
        .cli(&["doctor", "--url", &url, "--token", OPERATOR, "--webhook-secret", "not-the-secret", "--json"], &here);
    assert_eq!(status, 1, "{out}{err}");
    let (ok, checks) = report(&out);
    assert!(!ok, "{out}");
    let failed: Vec<&str> = checks.iter().filter(|c| c.1 == "fail").map(|c| c.0.as_str()).collect();
    assert_eq!(
        failed,
        ["signed-ping", "model-provider", "github-identity", "model-reachable", "sandbox-reachable"],
        "{out}"
    );
    let fix = |name: &str| checks.iter().find(|c| c.0 == name).unwrap().3.clone();
    assert!(fix("signed-ping").contains("GITHUB_WEBHOOK_SECRET"), "{out}");
    assert!(fix("model-provider").contains("OPENAI_API_KEY"), "{out}");
    assert!(fix("github-identity").contains("credentials"), "{out}");
    assert!(fix("sandbox-reachable").contains("AGENT_ZERO_SANDBOX_URL"), "{out}");
    for value in [OPERATOR, SECRET, "not-the-secret", "ghp_e2e_cli_revoked", SANDBOX_TOKEN] {
        assert!(!out.contains(value), "{value} echoed: {out}");
    }
    // A wrong token is its own fault; the deep checks then cannot run.
    let (status, out, _) = world.cli(&["doctor", "--url", &url, "--token", "wrong-token", "--json"], &here);
    assert_eq!(status, 1, "{out}");
    let (_, checks) = report(&out);
    let control = checks.iter().find(|c| c.0 == "control-plane").unwrap();
    assert_eq!(control.1, "fail", "{out}");
    assert!(control.3.contains("AGENT_ZERO_CONTROL_PLANE_TOKENS"), "{out}");
    // Nothing listens at --url: one failing line with the fix.
    let nowhere = dead_url();
    let (status, text, _) = world.cli(&["doctor", "--url", &nowhere], &here);
    assert_eq!(status, 1);
    assert!(
        text.starts_with("FAIL  reachable") && text.contains("fix: check that the deployment is running"),
        "{text}"
    );
}

/// The real `issues.labeled` payload on the fixture repository.
fn labeled_issue(world: &World) -> Vec<u8> {
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
    payload["issue"]["body"] = json!("`average([2, 4])` returns 2, not 3.");
    serde_json::to_vec(&payload).unwrap()
}

fn replay_reproduces_and_finds_tampering(runtime: Runtime) {
    let policy = "version: 1\nmode: fix\nissues:\n  enabled: true\n  requireLabel: agent-zero\nchecks:\n  - [python3, -m, unittest]\n\
                  autofix:\n  enabled: true\n  minConfidence: 0.8\n  allowedChangeRisks: [mechanical, behavioral]\n  requireIsolated: false\n";
    let world = World::start(runtime, policy, &[], Faults::default());
    world.model.push_decision(json!({
        "finding": finding(calc::BUG_QUOTE, 0.95),
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": calc::BUG_PATH, "content": calc::CALC_PY_FIXED, "reason": "fix the denominator" }]
    }));
    let reply = world.server.deliver_github(SECRET, "issues", "cli-replay-1", &labeled_issue(&world));
    assert_eq!(reply.status, 202, "{}", reply.text());
    let id = reply.json()["taskId"].as_str().unwrap().to_owned();
    let url = world.url();
    let dir = tempfile::tempdir().unwrap();
    let task = wait_concluded(&world, &url, &id, dir.path());
    assert!(task.contains("result: accepted verified=true"), "{task}");

    let (status, out, err) = world.cli(&["replay", &id, "--url", &url, "--token", OPERATOR], dir.path());
    assert_eq!(status, 0, "{out}{err}");
    for format in ["json", "md", "html"] {
        assert!(out.contains(&format!("evidence.{format}: reproduced byte for byte")), "{out}");
    }
    assert!(
        out.contains("completed (accepted, verified)")
            && out.ends_with("ok: the stored evidence is reproduced from the raw log\n"),
        "{out}"
    );

    // A log whose check result was edited (the failing output hidden, the
    // exit code kept) no longer reproduces what the deployment stored.
    let log = world.server.send(
        "GET",
        &format!("/api/v1/tasks/{id}/log"),
        &[("authorization", &format!("Bearer {OPERATOR}"))],
        b"",
    );
    assert_eq!(log.status, 200, "{}", log.text());
    let mut tampered = log.json();
    let checked = tampered["entries"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|e| e["facts"].as_array_mut().unwrap().iter_mut())
        .find(|f| f["fact"] == "checked")
        .expect("a checked fact");
    checked["results"][0]["stdout"] = json!("Ran 99 tests\n\nOK (edited)\n");
    let file = dir.path().join("tampered-log.json");
    std::fs::write(&file, tampered.to_string()).unwrap();
    let (status, out, err) =
        world.cli(&["replay", &id, "--url", &url, "--token", OPERATOR, "--log", "tampered-log.json"], dir.path());
    assert_eq!(status, 1, "{out}{err}");
    assert!(out.contains("evidence.json: DIFFERS from the stored evidence at byte"), "{out}");
    let replayed = out.lines().find(|l| l.starts_with("  replayed: ")).unwrap_or_default();
    assert!(replayed.contains("OK (edited)"), "the first difference shows the edit: {out}");
    assert!(out.contains("log: the recorded conclusion is not what the log's facts produce"), "{out}");
    assert!(out.ends_with("FAILED: the evidence is not reproduced\n"), "{out}");

    // The task commands print the API's answers, and its errors as given.
    let (status, listed, _) =
        world.cli(&["tasks", "--url", &url, "--token", OPERATOR, "list", "--state", "completed"], dir.path());
    assert_eq!(status, 0);
    assert!(
        listed.lines().any(|l| l.starts_with(&format!("{id}  completed  accepted verified  acme/calc"))),
        "{listed}"
    );
    let (status, markdown, _) = world.cli(&["tasks", "--url", &url, "--token", OPERATOR, "evidence", &id], dir.path());
    assert_eq!(status, 0);
    let stored = world.server.send(
        "GET",
        &format!("/api/v1/tasks/{id}/evidence.md"),
        &[("authorization", &format!("Bearer {OPERATOR}"))],
        b"",
    );
    assert_eq!(markdown, stored.text());
    let (status, _, err) = world.cli(&["tasks", "--url", &url, "--token", OPERATOR, "reject", &id], dir.path());
    assert_eq!(status, 1);
    assert!(err.starts_with("agent-zero: 409 conflict:") && err.contains("not needs-human"), "{err}");
    let (status, _, err) = world.cli(&["tasks", "--url", &url, "list"], dir.path());
    assert_eq!(status, 1);
    assert!(err.contains("401 unauthorized (Authorization)"), "{err}");
    let (status, _, err) = world.cli(&["replay", "gh-nope", "--url", &url, "--token", OPERATOR], dir.path());
    assert_eq!(status, 1);
    assert!(err.contains("404 not_found (id)"), "{err}");
}

/// Polls `tasks show` until the task has a result; its output.
fn wait_concluded(world: &World, url: &str, id: &str, cwd: &Path) -> String {
    let started = std::time::Instant::now();
    loop {
        let (status, out, err) = world.cli(&["tasks", "--url", url, "--token", OPERATOR, "show", id], cwd);
        if status == 0 && out.contains("\nresult: ") {
            return out;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(180), "task {id} did not conclude: {out}{err}");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// The reference's own `.agent-zero.example.yml` as a repository's policy:
/// the deployment accepts it, the run's evidence lists what the edge does
/// not honour, and a replay reproduces that evidence.
fn reference_policy_runs_with_its_warnings(runtime: Runtime) {
    let example =
        std::fs::read_to_string(repo_root().join("shared/agent/src/policy/testdata/reference.agent-zero.example.yml"))
            .expect("the reference example");
    let world = World::start(runtime, &example, &[], Faults::default());
    world.model.push_decision(json!({ "finding": finding(calc::BUG_QUOTE, 0.95), "plan": ["Divide by len(values)"] }));
    let create = json!({
        "repository": "acme/calc",
        "trigger": "feedback",
        "feedback": [{ "body": "average() divides by one too many", "path": "calc.py", "line": 11 }]
    });
    let reply = world.server.send(
        "POST",
        "/api/v1/tasks",
        &[("authorization", &format!("Bearer {OPERATOR}")), ("content-type", "application/json")],
        create.to_string().as_bytes(),
    );
    assert_eq!(reply.status, 201, "the reference's file is accepted: {}", reply.text());
    let id = reply.json()["id"].as_str().unwrap().to_owned();
    let url = world.url();
    let dir = tempfile::tempdir().unwrap();
    wait_concluded(&world, &url, &id, dir.path());
    let evidence = world.server.send(
        "GET",
        &format!("/api/v1/tasks/{id}/evidence.json"),
        &[("authorization", &format!("Bearer {OPERATOR}"))],
        b"",
    );
    assert_eq!(evidence.status, 200, "{}", evidence.text());
    let evidence = evidence.json();
    let warnings: Vec<&str> = evidence["coverage"]["omitted"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "policy")
        .map(|o| o["subject"].as_str().unwrap())
        .collect();
    assert_eq!(warnings, ["runner.isolation", "runner.engine", "runner.workdir"], "{evidence}");
    let (status, markdown, _) = world.cli(&["tasks", "--url", &url, "--token", OPERATOR, "evidence", &id], dir.path());
    assert_eq!(status, 0);
    assert!(markdown.contains("runner.engine"), "the report lists the warnings: {markdown}");
    let (status, out, err) = world.cli(&["replay", &id, "--url", &url, "--token", OPERATOR], dir.path());
    assert_eq!(status, 0, "{out}{err}");
}
