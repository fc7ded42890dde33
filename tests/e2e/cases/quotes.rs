//! Issue 46's reviewer's view: which quotes confirm a claim
//! (`validation.quotes`), and a reopened issue that asks for a run again.

use agent_zero_e2e::{Runtime, repo_root};
use agent_zero_fakes::calc;
use serde_json::{Value, json};

use super::lifecycle::{World, assert_not_confirmed, deliver, policy, read, wait_github, wait_terminal, world};
use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "quote_rule_any_confirms_a_paraphrase_beside_a_real_quote",
        run: quote_rule_any_confirms_a_paraphrase_beside_a_real_quote,
    },
    Case {
        name: "quote_rule_all_by_default_does_not_confirm_a_paraphrase",
        run: quote_rule_all_by_default_does_not_confirm_a_paraphrase,
    },
    Case {
        name: "reopened_labelled_issue_runs_like_an_opened_one",
        run: reopened_labelled_issue_runs_like_an_opened_one,
    },
];

/// What a paraphrasing reviewer's claim looks like: one real quote of the
/// buggy line, one paraphrase in backticks, one sentence of prose.
const PARAPHRASE: &str = "one more than the number of values";
const PROSE: &str = "The average is too small for every input.";

fn paraphrased_decision() -> Value {
    json!({
        "finding": {
            "title": "average() divides by one too many",
            "explanation": "The denominator adds one to the length.",
            "severity": "high",
            "confidence": 0.95,
            "valid": true,
            "evidence": [format!("`{}` divides by `{PARAPHRASE}`", calc::BUG_QUOTE.trim()), PROSE],
            "files": [calc::BUG_PATH],
            "changeRisk": "mechanical"
        },
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": calc::BUG_PATH, "content": calc::CALC_PY_FIXED, "reason": "fix the denominator" }]
    })
}

/// The real `issues` payload of `action` (`labeled`, `reopened`), pointed at
/// the fixture repository, its issue carrying the trigger label.
fn issue_event(world: &World, action: &str) -> Vec<u8> {
    let path = repo_root().join(format!("tests/fixtures/github-webhooks/issues/{action}.payload.json"));
    let mut payload: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    payload["repository"]["name"] = json!(name);
    payload["repository"]["full_name"] = json!(format!("{owner}/{name}"));
    payload["repository"]["owner"]["login"] = json!(owner);
    payload["repository"]["default_branch"] = json!(world.fixture.branch());
    if payload.get("label").is_some() {
        payload["label"]["name"] = json!("agent-zero");
    }
    payload["issue"]["labels"] = json!([{ "name": "agent-zero" }]);
    payload["issue"]["title"] = json!("average() is wrong for every input");
    payload["issue"]["body"] = json!("`average([2, 4])` returns 2, not 3.");
    serde_json::to_vec(&payload).unwrap()
}

/// Files the labelled issue as `delivery`; the task it created.
fn file(world: &World, delivery: &str, action: &str) -> String {
    let reply = deliver(world, delivery, "issues", &issue_event(world, action));
    assert_eq!(reply.status, 202, "{}", reply.text());
    assert_eq!(reply.json()["trigger"], "issue", "{}", reply.text());
    reply.json()["taskId"].as_str().unwrap().to_owned()
}

/// A verified fix: completed, accepted, the fixed file on a new pull request.
fn assert_verified(world: &World, task_id: &str) -> Value {
    let task = wait_terminal(world, task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verdict"], "accepted", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    assert_eq!(task["result"]["changedFiles"], json!([calc::BUG_PATH]), "{text}");
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(world, "a pull request", |g| !g.pulls(owner, name).is_empty());
    task
}

fn quote_rule_any_confirms_a_paraphrase_beside_a_real_quote(runtime: Runtime) {
    let world = world(runtime, &format!("{}validation:\n  quotes: any\n", policy("fix")));
    world.model.push_decision(paraphrased_decision());
    let task_id = file(&world, "quotes-any-1", "labeled");
    let task = assert_verified(&world, &task_id);
    // The rule that applied and the quote that was not found are recorded,
    // not hidden; the prose is not a quote.
    let check = &task["result"]["finding"]["quoteCheck"];
    assert_eq!(*check, json!({ "rule": "any", "found": [calc::BUG_QUOTE.trim()], "notFound": [PARAPHRASE] }), "{task}");
    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.md"));
    assert_eq!(evidence.status, 200);
    let text = evidence.text();
    assert!(text.contains("validation.quotes: any"), "the rule is named: {text}");
    assert!(text.contains("1 of 2 found") && text.contains(PARAPHRASE), "{text}");
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(&world, "the validation comment", |g| !g.comments(owner, name, 1).is_empty());
    let comment = world.github.comments(owner, name, 1)[0]["body"].as_str().unwrap_or_default().to_owned();
    assert!(comment.contains("validation.quotes: any"), "{comment}");
}

fn quote_rule_all_by_default_does_not_confirm_a_paraphrase(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    world.model.push_decision(paraphrased_decision());
    let task_id = file(&world, "quotes-all-1", "labeled");
    let comment = assert_not_confirmed(&world, &task_id, 1);
    assert!(comment.contains("validation.quotes: all"), "the rule is named: {comment}");
    let task = wait_terminal(&world, &task_id);
    let reasons = task["result"]["finding"]["rejectionReasons"].to_string();
    // Every quote must appear; an entry without backticks is one.
    assert!(reasons.contains(PARAPHRASE) && reasons.contains(PROSE), "{reasons}");
    let check = &task["result"]["finding"]["quoteCheck"];
    assert_eq!(check["rule"], "all", "{task}");
    assert_eq!(check["found"], json!([calc::BUG_QUOTE.trim()]), "{task}");
}

fn reopened_labelled_issue_runs_like_an_opened_one(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    world.model.push_decision(json!({
        "finding": super::lifecycle::finding(calc::BUG_QUOTE, 0.95),
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": calc::BUG_PATH, "content": calc::CALC_PY_FIXED, "reason": "fix the denominator" }]
    }));
    // The same real payload closing the issue starts nothing.
    let mut closed: Value = serde_json::from_slice(&issue_event(&world, "reopened")).unwrap();
    closed["action"] = json!("closed");
    closed["issue"]["state"] = json!("closed");
    let reply = deliver(&world, "reopened-0", "issues", &serde_json::to_vec(&closed).unwrap());
    assert!((200..300).contains(&reply.status), "{}", reply.text());
    assert_eq!(reply.json()["ignored"], true, "{}", reply.text());
    assert_eq!(reply.json()["reason"], "unsupported-action", "{}", reply.text());
    // Reopened with the label on it: a task, run to a verified fix.
    let task_id = file(&world, "reopened-1", "reopened");
    let task = assert_verified(&world, &task_id);
    assert_eq!(task["trigger"], "issue", "{task}");
    assert_eq!(world.model.calls().len(), 1, "one run, for the reopened issue");
}
