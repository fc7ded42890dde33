//! A bug claim's witness on each runtime (issue 47, `docs/witness.md`): the
//! model's answer carries a small Python test in the wire format the
//! product asked for (its schema names `witness`); the reference sandbox
//! really runs it with the policy's `review.witness.command` in a real
//! checkout of the pull request's head, then of its base (the head with the
//! diff undone), without credentials. A witness that fails on the head and
//! passes on the base marks the line comment *Reproduced* with its output;
//! with `review.requireWitness` on, a claim about a bug that is not there
//! (its witness passes on the head) is kept off the lines and the evidence
//! says why.
//!
//! An issue run's witness (fail before the fix, pass after it) is run the
//! same way in two ticks: at the issue's commit before the fix is written,
//! then on the verified fix. A reproduced witness is marked so in the
//! evidence and the pull request body, and is in neither the branch nor the
//! pull request; one that passes before the fix stops the run for a person
//! under `review.requireWitness`, and the evidence says why.

use agent_zero_e2e::Runtime;
use agent_zero_fakes::calc;
use serde_json::{Value, json};

use super::lifecycle::{self, read};
use super::review::{SANDBOX_TOKEN, World, completed_check, deliver, wait_terminal, world_with};
use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "witness_that_fails_on_head_and_passes_on_base_marks_the_comment_reproduced",
        run: witness_that_fails_on_head_and_passes_on_base_marks_the_comment_reproduced,
    },
    Case {
        name: "witness_that_passes_on_head_keeps_the_claim_off_the_lines_when_required",
        run: witness_that_passes_on_head_keeps_the_claim_off_the_lines_when_required,
    },
    Case {
        name: "issue_witness_that_fails_before_the_fix_and_passes_after_is_reproduced_in_the_pr",
        run: issue_witness_that_fails_before_the_fix_and_passes_after_is_reproduced_in_the_pr,
    },
    Case {
        name: "issue_witness_that_passes_before_the_fix_stops_the_run_when_required",
        run: issue_witness_that_passes_before_the_fix_stops_the_run_when_required,
    },
    Case {
        name: "platform_witness_runs_longer_than_one_invocation_fit_hosted_spins_wall_clock",
        run: witness_runs_longer_than_one_invocation_fit_hosted_spins_wall_clock,
    },
];

const POLICY: &str = "version: 1\nmode: observe\nproactive:\n  enabled: true\nchecks:\n  - [python3, -m, unittest]\nreview:\n  requireWitness: true\n  witness:\n    command: [python3]\n    timeoutMs: 20000\n";
const WITNESS_PATH: &str = "witness_test.py";

/// A witness importing `calc` from the checkout's root (its working directory).
fn witness_py(body: &str) -> String {
    format!("import os, sys\nsys.path.insert(0, os.getcwd())\nfrom calc import add, average\n{body}")
}

/// The model's answer: `title` about `calc.py`, quoting the line the pull
/// request adds, with a witness whose body is `witness_body`.
fn decision(title: &str, witness_body: &str) -> Value {
    json!({
        "finding": {
            "title": title,
            "explanation": "The pull request changes calc.py.",
            "severity": "high",
            "confidence": 0.9,
            "valid": true,
            "evidence": [format!("`{}`", calc::BUG_QUOTE.trim())],
            "files": [calc::BUG_PATH],
            "changeRisk": "behavioral"
        },
        "plan": [],
        "acceptanceCriteria": [],
        "changes": [],
        "witness": [{"path": WITNESS_PATH, "content": witness_py(witness_body)}]
    })
}

fn evidence(world: &World, task_id: &str) -> Value {
    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.json"));
    assert_eq!(evidence.status, 200, "{}", evidence.text());
    evidence.json()
}

/// The witness's runs the sandbox recorded: each argv and environment.
fn witness_runs(world: &World) -> Vec<Value> {
    let auth = format!("Bearer {SANDBOX_TOKEN}");
    let url = format!("{}/v1/record", world._sandbox.url);
    let record = agent_zero_e2e::request("GET", &url, &[("authorization", &auth)], b"").expect("sandbox record").json();
    let requests = record["requests"].as_array().cloned().unwrap_or_default();
    requests.into_iter().filter(|r| r["argv"] == json!(["python3", WITNESS_PATH])).collect()
}

/// The product asked for the witness in its answer's schema.
fn asked_for_a_witness(world: &World) {
    let calls = world.model.calls();
    let body = calls[0].body_text();
    assert!(body.contains("\"witness\""), "the request's schema names the witness: {body}");
}

fn witness_that_fails_on_head_and_passes_on_base_marks_the_comment_reproduced(runtime: Runtime) {
    let world = world_with(runtime, POLICY, &[]);
    let fails_on_the_bug =
        "got = average([2, 4])\nassert got == 3, f'average([2, 4]) is {got}, not 3'\nprint('average ok')\n";
    world.model.push_decision(decision("average() divides by one too many", fails_on_the_bug));
    let task_id = deliver(&world, "witness-repro-1");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    asked_for_a_witness(&world);

    // The sandbox really ran it twice, without credentials.
    let runs = witness_runs(&world);
    assert_eq!(runs.len(), 2, "at the head, then at the base: {runs:#?}");
    for run in &runs {
        let env = run["env"].to_string();
        assert!(!env.contains("ghp_") && !env.contains("sk-e2e"), "no credential in its environment: {env}");
    }

    let evidence = evidence(&world, &task_id);
    let witness = &evidence["witness"];
    assert_eq!(witness["outcome"], "reproduced", "{witness:#}");
    assert_ne!(witness["head"]["exitCode"], 0, "{witness:#}");
    assert_eq!(witness["base"]["exitCode"], 0, "{witness:#}");
    assert!(witness["head"]["stderr"].as_str().unwrap_or_default().contains("average([2, 4]) is 2.0, not 3"));
    assert!(witness["base"]["stdout"].as_str().unwrap_or_default().contains("average ok"));
    assert_eq!(witness["headSha"], json!(world.head));
    assert!(witness.get("withheld").is_none(), "{witness:#}");
    assert_eq!(evidence["review"]["anchors"][0]["line"], calc::BUG_LINE);
    // Its sandbox time is in the run's metered cost.
    let ran_ms = witness["head"]["durationMs"].as_u64().unwrap() + witness["base"]["durationMs"].as_u64().unwrap();
    let cost = &evidence["cost"];
    assert!(cost["sandboxMs"].as_u64().unwrap_or_default() >= ran_ms, "{cost} covers {ran_ms} ms of witness");
    eprintln!("witness ran {ran_ms} ms at head and base; the run's cost: {cost}");

    // The line comment is marked reproduced, with the witness's output.
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let started = std::time::Instant::now();
    while world.github.reviews(owner, name, world.number).is_empty() {
        assert!(started.elapsed().as_secs() < 90, "no review posted: {:#?}", world.github.calls());
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let reviews = world.github.reviews(owner, name, world.number);
    let comments = reviews[0]["comments"].as_array().expect("comments").clone();
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let body = comments[0]["body"].as_str().unwrap_or_default();
    assert!(body.contains("**Reproduced** by a witness"), "{body}");
    assert!(body.contains("average([2, 4]) is 2.0, not 3"), "the head's output: {body}");
    // The witness never reaches the repository: no branch, no commit, no file.
    assert!(world.github.calls_matching("POST", &format!("/repos/{owner}/{name}/git/")).is_empty());
}

fn witness_that_passes_on_head_keeps_the_claim_off_the_lines_when_required(runtime: Runtime) {
    let world = world_with(runtime, POLICY, &[]);
    // A bug that is not there: add() adds, and the witness says so.
    let passes = "assert add(2, 3) == 5, 'add() does not add'\nprint('add ok')\n";
    world.model.push_decision(decision("add() subtracts instead of adding", passes));
    let task_id = deliver(&world, "witness-absent-1");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    asked_for_a_witness(&world);
    assert_eq!(witness_runs(&world).len(), 1, "at the head only: it already did not behave as claimed");

    let evidence = evidence(&world, &task_id);
    let witness = &evidence["witness"];
    assert_eq!(witness["outcome"], "passed-on-head", "{witness:#}");
    assert_eq!(witness["withheld"], true, "{witness:#}");
    assert!(witness["reason"].as_str().unwrap_or_default().contains("passed on the head"), "{witness:#}");
    assert!(evidence["review"].get("anchors").is_none(), "no line for it: {:#}", evidence["review"]);

    // The check run says why; no line comment was posted.
    let check = completed_check(&world);
    let summary = check["output"]["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("Witness: Not reproduced (passed-on-head)"), "{summary}");
    assert!(summary.contains("Kept off the diff's lines"), "{summary}");
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let comments: usize = world
        .github
        .reviews(owner, name, world.number)
        .iter()
        .map(|r| r["comments"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(comments, 0, "{:#?}", world.github.reviews(owner, name, world.number));
}

/// An issue run's policy: the lifecycle's fix policy with witnesses on.
fn fix_policy(require: bool) -> String {
    format!(
        "{}review:\n  requireWitness: {require}\n  witness:\n    command: [python3]\n    timeoutMs: 20000\n",
        lifecycle::policy("fix")
    )
}

/// The model's fix of `average()`, claiming the bug, with a witness.
fn fix_decision(witness_body: &str) -> Value {
    let mut finding = lifecycle::finding(calc::BUG_QUOTE, 0.95);
    finding["changeRisk"] = json!("behavioral");
    json!({
        "finding": finding,
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": calc::BUG_PATH, "content": calc::CALC_PY_FIXED, "reason": "fix the denominator" }],
        "witness": [{"path": WITNESS_PATH, "content": witness_py(witness_body)}]
    })
}

/// The witness's runs the lifecycle world's sandbox recorded.
fn issue_witness_runs(world: &lifecycle::World) -> Vec<Value> {
    let record = lifecycle::sandbox_record(world);
    let requests = record["requests"].as_array().cloned().unwrap_or_default();
    requests.into_iter().filter(|r| r["argv"] == json!(["python3", WITNESS_PATH])).collect()
}

fn issue_witness_that_fails_before_the_fix_and_passes_after_is_reproduced_in_the_pr(runtime: Runtime) {
    let signs = [
        ("AGENT_ZERO_RECEIPT_KEY", super::receipts::KEY),
        ("AGENT_ZERO_PUBLIC_URL", agent_zero_e2e::server::BASE_URL),
        ("AGENT_ZERO_RECEIPT_LINKS", "on"),
    ];
    let world = lifecycle::world_with_vars(runtime, &fix_policy(true), &signs);
    let fails_on_the_bug =
        "got = average([2, 4])\nassert got == 3, f'average([2, 4]) is {got}, not 3'\nprint('average ok')\n";
    world.model.push_decision(fix_decision(fails_on_the_bug));
    let task_id = lifecycle::file_issue(&world, "witness-fix-1");
    let task = lifecycle::wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    assert_eq!(task["result"]["verified"], true, "{task}");

    // Really run twice (before the fix, then on it), without credentials.
    let runs = issue_witness_runs(&world);
    assert_eq!(runs.len(), 2, "before the fix, then after it: {runs:#?}");
    for run in &runs {
        let env = run["env"].to_string();
        assert!(!env.contains("ghp_") && !env.contains("sk-e2e"), "no credential in its environment: {env}");
    }
    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.json")).json();
    let witness = &evidence["witness"];
    assert_eq!(witness["outcome"], "reproduced", "{witness:#}");
    assert_ne!(witness["before"]["exitCode"], 0, "{witness:#}");
    assert_eq!(witness["after"]["exitCode"], 0, "{witness:#}");
    assert!(witness["before"]["stderr"].as_str().unwrap_or_default().contains("average([2, 4]) is 2.0, not 3"));
    assert!(witness["after"]["stdout"].as_str().unwrap_or_default().contains("average ok"));
    assert_eq!(evidence["changedFiles"], json!([calc::BUG_PATH]), "the witness is not part of the change");
    let ran_ms = witness["before"]["durationMs"].as_u64().unwrap() + witness["after"]["durationMs"].as_u64().unwrap();
    let cost = &evidence["cost"];
    assert!(cost["sandboxMs"].as_u64().unwrap_or_default() >= ran_ms, "{cost} covers {ran_ms} ms of witness");
    eprintln!("issue witness ran {ran_ms} ms before and after the fix; the run's cost: {cost}");

    // The pull request says so, and holds the fix without the witness.
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    lifecycle::wait_github(&world, "a pull request", |g| !g.pulls(owner, name).is_empty());
    let pulls = world.github.pulls(owner, name);
    let body = pulls[0]["body"].as_str().unwrap_or_default();
    assert!(body.contains("Witness: Reproduced"), "{body}");
    assert!(body.contains("Before the fix") && body.contains("After the fix"), "{body}");
    assert!(body.contains("average([2, 4]) is 2.0, not 3"), "the output before the fix: {body}");
    let head = pulls[0]["head"]["ref"].as_str().unwrap_or_default().to_owned();
    assert_eq!(world.github.file(owner, name, &head, calc::BUG_PATH).as_deref(), Some(calc::CALC_PY_FIXED));
    assert_eq!(world.github.file(owner, name, &head, WITNESS_PATH), None, "never pushed");
    let trees = world.github.calls_matching("POST", &format!("/repos/{owner}/{name}/git/trees"));
    assert!(trees.iter().all(|c| !c.body_text().contains(WITNESS_PATH)), "not in the commit's tree");

    // The body links the receipt; it verifies, and the log replays to this evidence byte for byte.
    let link = format!("{}/api/v1/tasks/{task_id}/receipt", world.server.base_url);
    assert!(body.contains(&format!("[signed receipt]({link})")), "{body}");
    let get = |path: &str| {
        let reply = read(&world.server, path);
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        reply.body
    };
    let receipt = get(link.strip_prefix(world.server.base_url.as_str()).unwrap());
    let keys = get("/.well-known/agent-zero/keys");
    let (evidence, log) =
        (get(&format!("/api/v1/tasks/{task_id}/evidence.json")), get(&format!("/api/v1/tasks/{task_id}/log")));
    let verdict = agent_zero_cli::verify::check(&receipt, &keys, Some(&evidence), Some(&log)).expect("readable inputs");
    let lines = verdict.lines.join("\n");
    assert!(verdict.ok && lines.contains("replay: the log folds to this evidence byte for byte"), "{lines}");
}

fn issue_witness_that_passes_before_the_fix_stops_the_run_when_required(runtime: Runtime) {
    let world = lifecycle::world(runtime, &fix_policy(true));
    // The claimed bug is in average(), but this witness tests add(): it passes before the fix.
    let passes = "assert add(2, 3) == 5, 'add() does not add'\nprint('add ok')\n";
    world.model.push_decision(fix_decision(passes));
    let task_id = lifecycle::file_issue(&world, "witness-fix-2");
    let task = lifecycle::wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "needs-human", "{task}");
    assert_eq!(task["result"]["verified"], false, "{task}");
    assert_eq!(issue_witness_runs(&world).len(), 1, "run before the fix only: it already did not behave as claimed");

    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.json")).json();
    let witness = &evidence["witness"];
    assert_eq!(witness["outcome"], "passed-before-fix", "{witness:#}");
    assert_eq!(witness["withheld"], true, "{witness:#}");
    assert_eq!(evidence["refusal"]["code"], "witness-not-reproduced", "{evidence:#}");
    let message = evidence["refusal"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("review.requireWitness") && message.contains("passed before the fix"), "{message}");
    let page = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.md")).text();
    assert!(page.contains("Witness: Not reproduced (passed-before-fix)"), "{page}");
    // No pull request: a person decides.
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let report = lifecycle::published(&world, &task_id);
    assert!(report.contains("no pull request"), "{report}");
    assert!(world.github.pulls(owner, name).is_empty(), "{:#?}", world.github.pulls(owner, name));
}

/// Fermyon Cloud's wall clock per request handler (docs/platforms.md).
const WALL_CLOCK_SECS: u64 = 30;
/// Each witness run: two of them (before and after the fix) do not fit one
/// invocation, one does.
const WITNESS_SECS: u64 = 16;

/// Under the `fermyon-cloud` profile (a hosted Spin's 30 s per invocation),
/// a witness that takes 16 s per run reproduces the bug: its two runs are
/// two ticks, and no invocation runs past the wall clock.
fn witness_runs_longer_than_one_invocation_fit_hosted_spins_wall_clock(runtime: Runtime) {
    let world = lifecycle::world_on_platform(
        runtime,
        &fix_policy(false),
        &[],
        &[("AGENT_ZERO_PLATFORM", "fermyon-cloud"), ("AGENT_ZERO_MODEL_TIMEOUT_MS", "24000")],
        WALL_CLOCK_SECS,
    );
    let slow = format!(
        "import time\ntime.sleep({WITNESS_SECS})\ngot = average([2, 4])\nassert got == 3, f'average([2, 4]) is {{got}}'\n"
    );
    world.model.push_decision(fix_decision(&slow));
    let task_id = lifecycle::file_issue(&world, "witness-platform-1");
    let task = lifecycle::wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.json")).json();
    let witness = &evidence["witness"];
    assert_eq!(witness["outcome"], "reproduced", "{witness:#}");
    let ran = |at: &str| witness[at]["durationMs"].as_u64().unwrap_or_default();
    assert!(ran("before") >= WITNESS_SECS * 1_000 && ran("after") >= WITNESS_SECS * 1_000, "{witness:#}");

    let walls = world.server.invocation_wall_ms();
    assert!(!walls.is_empty(), "{}: no invocation's wall time was logged", runtime.name());
    let longest = walls.iter().copied().max().unwrap_or(0);
    assert!(
        longest <= WALL_CLOCK_SECS * 1_000,
        "{}: an invocation ran {longest} ms, past the {WALL_CLOCK_SECS} s wall clock: {walls:?}",
        runtime.name()
    );
    assert!(ran("before") + ran("after") > WALL_CLOCK_SECS * 1_000, "together they would not have fit one");
    println!("  {}: {} invocations, longest {longest} ms", runtime.name(), walls.len());
}
