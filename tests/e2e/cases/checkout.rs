//! Checkouts that keep credentials out of the sandbox: the edge asks the
//! loopback GitHub for the tarball of the exact commit with its own token,
//! hands the short-lived link to the reference sandbox apart from the
//! recorded request, and the sandbox downloads it without any credential.
//! A private repository (anonymous reads are GitHub's 404) and a fork pull
//! request's head (a commit only the base repository's `refs/pull/N/head`
//! reaches) both run to a verified fix; the sandbox's own record of every
//! request, command and environment holds no credential.

use agent_zero_e2e::{Runtime, request};
use agent_zero_fakes::calc;
use serde_json::{Value, json};

use super::lifecycle::{
    World, decision, deliver, file_issue, finding, policy, review_comment, sandbox_record, wait_terminal, world,
};
use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case { name: "checkout_private_repository_fix_through_an_archive_link", run: private_repository_fix },
    Case { name: "checkout_fork_pull_request_head_through_the_base_repository", run: fork_pull_request_head },
];

/// The lifecycle world's GitHub token, webhook secret, sandbox token,
/// operator token and model key: none may reach the sandbox.
const CREDENTIALS: &[&str] =
    &["ghp_e2e_lifecycle", "e2e-lifecycle-secret", "e2e-sandbox-token", "e2e-operator-token", "sk-e2e-model-key"];

/// Makes the fixture repository private on the loopback GitHub (which then
/// wants the world's token) and moves the reference sandbox's local copy
/// away, so the archive link is the only way to the code. Returns the guard
/// that puts the copy back.
fn private_only_through_github(world: &World) -> impl Drop + '_ {
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    world.github.set_private(owner, name, true);
    world.github.require_token("ghp_e2e_lifecycle");
    let local = world.fixture.repos_dir().join(owner).join(name);
    let hidden = world.fixture.repos_dir().join(owner).join(format!("{name}.hidden"));
    std::fs::rename(&local, &hidden).expect("hide the local copy");
    struct Restore(std::path::PathBuf, std::path::PathBuf);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = std::fs::rename(&self.1, &self.0);
        }
    }
    Restore(local, hidden)
}

/// No credential anywhere in what the sandbox acted on, every lease was an
/// archive checkout of `commit`, and the link itself is not in the record.
fn assert_sandbox_saw_no_credential(world: &World, commit: &str) {
    let record = sandbox_record(world);
    let text = record.to_string();
    let mut secrets: Vec<String> = CREDENTIALS.iter().map(|s| (*s).to_owned()).collect();
    secrets.extend(world.github.minted_tokens());
    for secret in &secrets {
        assert!(!text.contains(secret.as_str()), "the sandbox saw `{secret}`: {text}");
    }
    assert!(!text.contains("token="), "the archive link is never recorded: {text}");
    let requests = record["requests"].as_array().expect("requests");
    let creates: Vec<&Value> = requests.iter().filter_map(|r| r.get("create")).collect();
    assert!(!creates.is_empty(), "{text}");
    for create in creates {
        assert_eq!(create["ref"], commit, "{create}");
        assert_eq!(create["archive"]["url"], "[archive link]", "{create}");
        assert_eq!(create["archive"]["commit"], commit, "{create}");
        assert!(create["archive"]["timeoutMs"].as_u64().is_some_and(|t| t > 0), "{create}");
    }
    let runs: Vec<&Value> = requests.iter().filter(|r| r.get("argv").is_some()).collect();
    assert!(!runs.is_empty(), "the checks ran: {text}");
    for run in runs {
        let env = run["env"].as_object().expect("env");
        assert!(!env.keys().any(|k| k.contains("TOKEN") || k.contains("KEY") || k.starts_with("GITHUB")), "{run}");
    }
}

/// The tarball was asked for with the edge's token; the link was fetched
/// with none.
fn assert_archive_fetched_with_the_link_alone(world: &World, commit: &str) {
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let tarballs = world.github.calls_matching("GET", &format!("/repos/{owner}/{name}/tarball/{commit}"));
    // (The test's own anonymous probe is refused; the edge's carries its token.)
    assert!(tarballs.iter().any(|c| c.header("authorization") == Some("Bearer ghp_e2e_lifecycle")), "{tarballs:#?}");
    let downloads = world.github.calls_matching("GET", &format!("/_codeload/{owner}/{name}/legacy.tar.gz/{commit}"));
    assert!(!downloads.is_empty(), "{:#?}", world.github.calls());
    assert!(downloads.iter().all(|c| c.header("authorization").is_none()), "{downloads:?}");
}

fn private_repository_fix(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    let _hidden = private_only_through_github(&world);
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let head = world.fixture.head_sha();
    // Anonymous reads are refused as GitHub refuses them.
    for path in [format!("/repos/{owner}/{name}"), format!("/repos/{owner}/{name}/tarball/{head}")] {
        let anonymous = request("GET", &format!("{}{path}", world.github.url()), &[], b"").unwrap();
        assert_eq!(anonymous.status, 404, "{path}: {}", anonymous.text());
    }

    world.model.push_decision(decision("mechanical", calc::CALC_PY_FIXED));
    let task_id = file_issue(&world, "checkout-private-1");
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    assert_eq!(task["result"]["changedFiles"], json!([calc::BUG_PATH]), "{text}");
    assert!(
        task["result"]["checks"].as_array().is_some_and(|c| !c.is_empty() && c.iter().all(|c| c["exitCode"] == 0)),
        "{text}"
    );
    // The evidence says what isolation really was: the reference server runs
    // local processes and enforces no network policy, whatever was asked.
    assert_eq!(task["result"]["runner"]["provider"], "custom", "{text}");
    assert_eq!(task["result"]["runner"]["isolated"], false, "{text}");
    assert_eq!(task["result"]["runner"]["network"], "full", "{text}");

    assert_archive_fetched_with_the_link_alone(&world, &head);
    assert_sandbox_saw_no_credential(&world, &head);
    let started = std::time::Instant::now();
    while world.github.pulls(owner, name).is_empty() {
        assert!(started.elapsed() < std::time::Duration::from_secs(90), "no pull request: {:#?}", world.github.calls());
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let pulls = world.github.pulls(owner, name);
    let branch = pulls[0]["head"]["ref"].as_str().unwrap_or_default().to_owned();
    assert_eq!(world.github.file(owner, name, &branch, calc::BUG_PATH).as_deref(), Some(calc::CALC_PY_FIXED));
}

/// A helper the fork adds, with a bug only the fork's head has.
const FORK_BUG: &str = "    return x / 3";

fn fork_pull_request_head(runtime: Runtime) {
    let world = world(runtime, &policy("fix"));
    let _hidden = private_only_through_github(&world);
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let helper =
        |body: &str| format!("{}\n\ndef half(x):\n    \"\"\"Return half of x.\"\"\"\n{body}\n", calc::CALC_PY_FIXED);
    let fork_head = world.github.add_pull_head(owner, name, 2, &[(calc::BUG_PATH, &helper(FORK_BUG))]);
    assert_ne!(world.github.branch_sha(owner, name, world.fixture.branch()), Some(fork_head.clone()));

    // The claim quotes a line that exists only at the fork's head: it is
    // confirmed only if the sandbox holds that commit.
    let mut claim = finding(FORK_BUG, 0.95);
    claim["title"] = json!("half() divides by three");
    claim["changeRisk"] = json!("mechanical");
    world.model.push_decision(json!({
        "finding": claim,
        "plan": ["Divide by two"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": calc::BUG_PATH, "content": helper("    return x / 2"), "reason": "halve" }]
    }));
    let mut payload: Value =
        serde_json::from_slice(&review_comment(&world, "`half` divides by three: `return x / 3`. Please fix."))
            .unwrap();
    let fork = &mut payload["pull_request"]["head"];
    fork["sha"] = json!(fork_head);
    fork["ref"] = json!("patch-1");
    fork["repo"]["full_name"] = json!(format!("fork-author/{name}"));
    fork["repo"]["owner"]["login"] = json!("fork-author");
    fork["repo"]["fork"] = json!(true);
    fork["repo"]["private"] = json!(false);
    let reply =
        deliver(&world, "checkout-fork-1", "pull_request_review_comment", &serde_json::to_vec(&payload).unwrap());
    assert_eq!(reply.status, 202, "{}", reply.text());
    let task_id = reply.json()["taskId"].as_str().unwrap().to_owned();

    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["result"]["verdict"], "accepted", "the fork's line was in the sandbox: {text}");
    assert_eq!(task["result"]["verified"], true, "{text}");
    assert_archive_fetched_with_the_link_alone(&world, &fork_head);
    assert_sandbox_saw_no_credential(&world, &fork_head);
}
