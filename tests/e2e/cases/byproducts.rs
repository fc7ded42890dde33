//! What the checks produce is not the change: a Python repository without
//! a `.gitignore` (its tests write `__pycache__/`) goes from labelled issue
//! to a verified pull request; the byproducts are listed in the evidence
//! and never published; what is published is, byte for byte, what the
//! sandbox held when the checks passed, and the evidence carries its digest
//! and its mode: a script the checks made executable is published 100755.

use agent_zero_e2e::Runtime;
use agent_zero_fakes::calc;
use serde_json::json;
use sha2::Digest as _;

use super::lifecycle::{file_issue, finding, policy, read, wait_github, wait_terminal, world_without_gitignore};
use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "byproducts_of_the_checks_are_listed_never_published",
        run: byproducts_of_the_checks_are_listed_never_published,
    },
    Case {
        name: "a_script_the_checks_made_executable_is_published_100755",
        run: a_script_the_checks_made_executable_is_published_100755,
    },
];

fn byproducts_of_the_checks_are_listed_never_published(runtime: Runtime) {
    let world = world_without_gitignore(runtime, &policy("fix"));
    world.model.push_decision(json!({
        "finding": finding(calc::BUG_QUOTE, 0.95),
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": calc::BUG_PATH, "content": calc::CALC_PY_FIXED, "reason": "fix the denominator" }]
    }));
    let task_id = file_issue(&world, "byproducts-1");
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    assert_eq!(task["result"]["changedFiles"], json!([calc::BUG_PATH]), "only the run's own write is judged: {text}");

    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.json")).json();
    let omitted = evidence["coverage"]["omitted"].as_array().cloned().unwrap_or_default();
    let byproducts: Vec<&str> =
        omitted.iter().filter(|o| o["kind"] == "byproduct").filter_map(|o| o["subject"].as_str()).collect();
    assert!(!byproducts.is_empty() && byproducts.iter().all(|p| p.starts_with("__pycache__/")), "{evidence}");

    // Published: the fix, and nothing the checks wrote.
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(&world, "a pull request", |g| !g.pulls(owner, name).is_empty());
    let writes = world.github.calls_matching("POST", &format!("/repos/{owner}/{name}/git/"));
    assert!(!writes.is_empty(), "the fix was committed");
    for call in &writes {
        assert!(!call.body_text().contains("__pycache__"), "a byproduct was published: {}", call.body_text());
    }
    let pulls = world.github.pulls(owner, name);
    let head = pulls[0]["head"]["ref"].as_str().expect("the pull request's branch");
    let published = world.github.file(owner, name, head, calc::BUG_PATH).expect("the fix on the branch");
    assert_eq!(published, calc::CALC_PY_FIXED, "the published file is the verified one");
    let digest: String = sha2::Sha256::digest(published.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        evidence["tree"],
        json!([{ "path": calc::BUG_PATH, "sha256": digest, "bytes": published.len(), "mode": "100644" }]),
        "{evidence}"
    );
}

/// The fix with a shebang: `calc.py` doubles as a script the checks run.
fn calc_script() -> String {
    format!("#!/usr/bin/env python3\n{}", calc::CALC_PY_FIXED)
}

/// The run's fix makes `calc.py` a script; the repository's checks make it
/// executable and run it. What is published carries the mode the sandbox
/// held after the checks: `calc.py` is 100755 in the pull request's tree
/// (as the loopback GitHub's Git data API answers it), an untouched file
/// stays 100644, and the evidence records the mode.
fn a_script_the_checks_made_executable_is_published_100755(runtime: Runtime) {
    let path = calc::BUG_PATH;
    let policy = format!(
        "version: 1\nmode: fix\nissues:\n  enabled: true\n  requireLabel: agent-zero\nchecks:\n  - [python3, -m, unittest]\n\
         \x20 - [chmod, +x, {path}]\n  - [./{path}]\n\
         autofix:\n  enabled: true\n  minConfidence: 0.8\n  allowedChangeRisks: [mechanical, behavioral]\n  requireIsolated: false\n"
    );
    let world = world_without_gitignore(runtime, &policy);
    let script = calc_script();
    world.model.push_decision(json!({
        "finding": finding(calc::BUG_QUOTE, 0.95),
        "plan": ["Divide by len(values)", "Make the module runnable"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": path, "content": script, "reason": "fix the denominator" }]
    }));
    let task_id = file_issue(&world, "executable-1");
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");

    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.json")).json();
    assert_eq!(evidence["tree"][0]["path"], path, "{evidence}");
    assert_eq!(evidence["tree"][0]["mode"], "100755", "{evidence}");

    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(&world, "a pull request", |g| !g.pulls(owner, name).is_empty());
    let pulls = world.github.pulls(owner, name);
    let head = pulls[0]["head"]["ref"].as_str().expect("the pull request's branch");
    let commit = world.github.branch_sha(owner, name, head).expect("the branch's commit");
    let url = format!("{}/repos/{owner}/{name}/git/trees/{commit}?recursive=1", world.github.url());
    let tree: serde_json::Value =
        serde_json::from_slice(&ureq::get(&url).call().expect("the branch's tree").into_body().read_to_vec().unwrap())
            .unwrap();
    let mode_of = |path: &str| {
        tree["tree"].as_array().and_then(|t| t.iter().find(|e| e["path"] == path)).map(|e| e["mode"].clone())
    };
    assert_eq!(mode_of(path), Some(json!("100755")), "{tree}");
    assert_eq!(mode_of("test_calc.py"), Some(json!("100644")), "{tree}");
    assert_eq!(world.github.file(owner, name, head, path), Some(script));
}
