//! Evidence receipts on each runtime (docs/receipts.md): a verified issue
//! fix's receipt, fetched with the deployment's published keys, its
//! evidence and its raw log, verifies with `agent-zero verify`'s own code;
//! one changed byte of the evidence does not. Signed on Spin by
//! `ed25519-dalek`, on workerd by WebCrypto's Ed25519. The pull request's
//! body, written by the tick role (which never holds the key), links that
//! receipt under the deployment's public URL, and following the link
//! answers the receipt that verifies.

use agent_zero_e2e::{Reply, Runtime};
use agent_zero_fakes::calc;
use serde_json::json;

use super::lifecycle::{OPERATOR, file_issue, finding, policy, wait_github, wait_terminal, world_with_vars};
use crate::Case;

pub(crate) const CASES: &[Case] =
    &[Case { name: "receipt_of_a_verified_fix_verifies_offline", run: receipt_of_a_verified_fix_verifies_offline }];

/// RFC 8032, section 7.1, TEST 1: its public key is `PUBLIC`.
pub(super) const KEY: &str = "e2e-2026:nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";
const PUBLIC: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";

fn receipt_of_a_verified_fix_verifies_offline(runtime: Runtime) {
    let vars = [
        ("AGENT_ZERO_RECEIPT_KEY", KEY),
        ("AGENT_ZERO_PUBLIC_URL", agent_zero_e2e::server::BASE_URL),
        ("AGENT_ZERO_RECEIPT_LINKS", "on"),
    ];
    let world = world_with_vars(runtime, &policy("fix"), &vars);
    world.model.push_decision(json!({
        "finding": finding(calc::BUG_QUOTE, 0.95),
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": calc::BUG_PATH, "content": calc::CALC_PY_FIXED, "reason": "fix the denominator" }]
    }));
    let task_id = file_issue(&world, "receipts-fix-1");
    let task = wait_terminal(&world, &task_id);
    assert_eq!((&task["state"], &task["result"]["verified"]), (&json!("completed"), &json!(true)), "{task}");

    let get = |path: &str, token: bool| -> Reply {
        let auth = format!("Bearer {OPERATOR}");
        let headers: &[(&str, &str)] = if token { &[("authorization", &auth)] } else { &[] };
        let reply = world.server.send("GET", path, headers, b"");
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        reply
    };
    // The keys are public; the receipt, the evidence and the log are read as the operator.
    let keys = get("/.well-known/agent-zero/keys", false);
    assert_eq!(keys.json()["keys"][0]["x"], PUBLIC, "{}", keys.text());
    let receipt = get(&format!("/api/v1/tasks/{task_id}/receipt"), true);
    let evidence = get(&format!("/api/v1/tasks/{task_id}/evidence.json"), true);
    let log = get(&format!("/api/v1/tasks/{task_id}/log"), true);
    eprintln!("a fix without a witness; the run's cost: {}", evidence.json()["cost"]);
    let body = receipt.json();
    assert_eq!(
        (&body["verdict"], &body["verified"], &body["keyId"]),
        (&json!("accepted"), &json!(true), &json!("e2e-2026"))
    );
    assert_eq!(body["checks"][0]["outcome"], "passed", "{body}");

    let verdict = agent_zero_cli::verify::check(&receipt.body, &keys.body, Some(&evidence.body), Some(&log.body))
        .expect("readable inputs");
    let lines = verdict.lines.join("\n");
    assert!(verdict.ok, "{lines}");
    assert!(lines.contains("replay: the log folds to this evidence byte for byte"), "{lines}");
    // Signed once, the same at every read.
    assert_eq!(get(&format!("/api/v1/tasks/{task_id}/receipt"), true).body, receipt.body);

    // One changed byte of the evidence: named.
    let mut edited = evidence.body.clone();
    let at = evidence.text().find("\"summary\": \"").expect("a summary") + 13;
    edited[at] ^= 0x01;
    let verdict = agent_zero_cli::verify::check(&receipt.body, &keys.body, Some(&edited), Some(&log.body)).unwrap();
    let lines = verdict.lines.join("\n");
    assert!(!verdict.ok && lines.contains("FAIL evidence: SHA-256"), "{lines}");

    // The pull request's body links the evidence page and this receipt.
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(&world, "a pull request", |g| !g.pulls(owner, name).is_empty());
    let pulls = world.github.pulls(owner, name);
    let pr_body = pulls[0]["body"].as_str().unwrap_or_default();
    let base = &world.server.base_url;
    let link = format!("{base}/api/v1/tasks/{task_id}/receipt");
    assert!(pr_body.contains(&format!("[signed receipt]({link})")), "{pr_body}");
    assert!(pr_body.contains(&format!("[full evidence]({base}/tasks/{task_id})")), "{pr_body}");
    // Following it answers the receipt that verifies.
    let followed = get(link.strip_prefix(base.as_str()).expect("under the deployment's URL"), true);
    assert_eq!(followed.body, receipt.body);
    let verdict = agent_zero_cli::verify::check(&followed.body, &keys.body, Some(&evidence.body), Some(&log.body))
        .expect("readable inputs");
    assert!(verdict.ok, "{}", verdict.lines.join("\n"));
}
