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

use agent_zero_e2e::Runtime;
use agent_zero_fakes::calc;
use serde_json::{Value, json};

use super::lifecycle::read;
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
    assert_eq!(witness_runs(&world).len(), 2, "at the head, then at the base");

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
