//! A Gitea review comment on a real bug, run end to end on both runtimes
//! against the loopback Gitea (held to Gitea's swagger): the model confirms
//! the claim with a change, the repository's checks pass on it in the
//! sandbox, and the verified change is published as one commit on a side
//! branch made from the pull request's head (Gitea has no suggestion
//! blocks), named in the answer in the reviewer's conversation. The pull
//! request's branch and the default branch are never written.

use agent_zero_e2e::{Runtime, request};
use agent_zero_fakes::{FixtureRepo, calc};
use serde_json::{Value, json};

use super::gitea::{BOT, MAINTAINER, TOKEN, published, review_task, world_with};
use super::lifecycle::{finding, policy};
use crate::Case;

pub(crate) const CASES: &[Case] = &[Case {
    name: "gitea_review_comment_on_a_real_bug_gets_its_verified_change_on_a_side_branch",
    run: review_comment_gets_a_side_branch,
}];

fn review_comment_gets_a_side_branch(runtime: Runtime) {
    // The base holds the correct `calc.py`; the pull request's one commit
    // adds the off-by-one, which the repository's unit tests catch. `fix`
    // mode: only a mode that writes may publish a change anywhere.
    let fixture = FixtureRepo::calc("acme", "calc")
        .file(calc::BUG_PATH, calc::CALC_PY_FIXED)
        .file(".agent-zero.yml", &policy("fix"));
    let world = world_with(runtime, false, fixture);
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let main = world.fixture.branch();
    let base_before = world.gitea.branch_sha(owner, name, main).expect("default branch");
    let head = world.gitea.set_file(owner, name, "average", calc::BUG_PATH, calc::CALC_PY);
    let number = world.gitea.add_pull(owner, name, "average", main, MAINTAINER, "Average tweak");
    let (_, ids) = world.gitea.add_review(
        owner,
        name,
        number,
        MAINTAINER,
        "COMMENT",
        &[(calc::BUG_PATH, u64::from(calc::BUG_LINE), "This divides by one too many: `average([2, 4])` is 2, not 3.")],
    );
    let comment_id = ids[0];
    world.model.push_decision(json!({
        "finding": finding(calc::BUG_QUOTE, 0.95),
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": ["python3 -m unittest passes"],
        "changes": [{ "path": calc::BUG_PATH, "content": calc::CALC_PY_FIXED, "reason": "fix the denominator" }]
    }));

    let (task_id, task) = review_task(&world, false, "gitea-side-1", number, &head);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verdict"], "accepted", "{text}");
    assert_eq!(task["result"]["verified"], true, "the checks passed on the change: {text}");
    assert_eq!(task["result"]["changedFiles"], json!([calc::BUG_PATH]), "{text}");
    assert!(world.model.calls().iter().all(|c| !c.contains(TOKEN)), "no credential reached the model");

    let report = published(&world.server, &task_id);
    assert!(report.contains("side-branch: created"), "{report}");
    assert!(report.contains("thread-answer: created"), "{report}");

    // The side branch: made at the head, one commit on top of it holding
    // exactly the verified file, marked with the task.
    let side = format!("agent-zero/pr-{number}-{task_id}");
    let tip = world.gitea.branch_sha(owner, name, &side).unwrap_or_else(|| panic!("no branch {side}: {report}"));
    let repo = format!("/api/v1/repos/{owner}/{name}");
    let auth = format!("token {TOKEN}");
    let shown =
        request("GET", &format!("{}{repo}/git/commits/{tip}", world.gitea.url()), &[("authorization", &auth)], b"")
            .expect("the side branch's commit");
    assert_eq!(shown.status, 200, "{}", shown.text());
    let shown = shown.json();
    let parents: Vec<&str> =
        shown["parents"].as_array().into_iter().flatten().filter_map(|p| p["sha"].as_str()).collect();
    assert_eq!(parents, [head.as_str()], "one commit on the head: {shown:#}");
    let message = shown["commit"]["message"].as_str().unwrap_or_default();
    assert!(message.trim_end().ends_with(&format!("Agent-Zero-Task: {task_id}")), "{message}");
    assert_eq!(shown["files"], json!([{ "filename": calc::BUG_PATH, "status": "modified" }]), "{shown:#}");
    for (path, content) in world.fixture.files() {
        let expected = if path == calc::BUG_PATH { calc::CALC_PY_FIXED } else { content.as_str() };
        assert_eq!(world.gitea.file(owner, name, &side, &path).as_deref(), Some(expected), "{path} on {side}");
    }

    // The answer in the reviewer's conversation names the commit and the branch.
    let ours: Vec<Value> =
        world.gitea.reviews(owner, name, number).into_iter().filter(|r| r["user"]["login"] == BOT).collect();
    assert_eq!(ours.len(), 1, "{ours:#?}");
    let lines = ours[0]["comments"].as_array().cloned().unwrap_or_default();
    assert_eq!(lines.len(), 1, "{ours:#?}");
    assert_eq!(
        (lines[0]["path"].as_str(), lines[0]["position"].as_u64()),
        (Some(calc::BUG_PATH), Some(u64::from(calc::BUG_LINE)))
    );
    let thread = lines[0]["body"].as_str().unwrap_or_default();
    assert!(thread.starts_with(&format!("<!-- agent-zero:answer review-comment={comment_id} -->")), "{thread}");
    let url = format!("{}/{owner}/{name}/src/branch/{side}", world.gitea.url());
    let said =
        format!("Gitea has no suggestion blocks: the verified change is commit {tip} on branch `{side}` ({url}).");
    assert!(thread.contains(&said), "{thread}");
    // The verdict on the pull request, once, by the token's account.
    let comments = world.gitea.comments(owner, name, number);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert_eq!(comments[0]["user"]["login"], BOT);
    let subject = format!("<!-- agent-zero:subject pull-request={number} review-comment={comment_id} -->");
    assert!(comments[0]["body"].as_str().unwrap_or_default().contains(&subject), "{comments:#?}");
    let statuses = world.gitea.statuses(owner, name);
    assert!(!statuses.is_empty() && statuses.iter().all(|s| s["sha"] == head.as_str()), "{statuses:#?}");

    // Its only writes: the status, the verdict, the branch, its commit and
    // the answer. No pull request of its own; neither the pull request's
    // branch nor the default branch moved.
    let writes: Vec<String> =
        world.gitea.calls().iter().filter(|c| c.method != "GET").map(|c| format!("{} {}", c.method, c.path)).collect();
    assert_eq!(
        writes,
        [
            format!("POST {repo}/statuses/{head}"),
            format!("POST {repo}/issues/{number}/comments"),
            format!("POST {repo}/branches"),
            format!("POST {repo}/contents"),
            format!("POST {repo}/pulls/{number}/reviews"),
        ]
    );
    assert_eq!(world.gitea.pulls(owner, name).len(), 1);
    assert_eq!(world.gitea.branch_sha(owner, name, "average").as_deref(), Some(head.as_str()));
    assert_eq!(world.gitea.branch_sha(owner, name, main).as_deref(), Some(base_before.as_str()));
    assert_eq!(world.gitea.violations(), Vec::<String>::new());
}
