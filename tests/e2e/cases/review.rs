//! Pull-request review on each runtime: a `pull_request` delivery with
//! proactive review enabled reads the pull request's real diff from GitHub
//! (`GET /pulls/{n}/files`), the model sees the added lines, the supported
//! finding is posted as one review with a line comment the loopback GitHub
//! places on the diff (it refuses any line outside the hunks, as GitHub
//! does), and the check run leads with the coverage ledger. A pull request
//! over the diff budget names what it skipped and never passes. A
//! `synchronize` reads only what changed since the reviewed head (compare),
//! does not repeat a posted finding and answers a fixed one "resolved"; a
//! collaborator's `/agent-zero review` comment starts a review of the head
//! (acknowledged with a reaction), an outsider's is ignored with its reason;
//! in `suggest` mode only a change the checks passed on becomes a suggestion.
//! Publication retried after a rate limit finds the task's check run by
//! listing the head's check runs, and updates it rather than adding one.
//! The world is deployed as a GitHub App (only an App's installation may
//! write check runs, and the loopback GitHub enforces it); deployed with a
//! person's token instead, the review's outcome is a commit status.

use std::time::{Duration, Instant};

use agent_zero_e2e::{Reply, Runtime, Server, ServerOptions, repo_root, request};
use agent_zero_fakes::{FakeGitHub, FakeModel, FixtureRepo, TEST_APP_PRIVATE_KEY_PEM, TEST_APP_PUBLIC_KEY_PEM, calc};
use serde_json::{Value, json};
use sha2::Digest as _;

use super::lifecycle::{OPERATOR, Sandbox, read};
use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "review_of_a_pull_request_that_adds_a_bug_comments_on_its_line",
        run: review_of_a_pull_request_that_adds_a_bug_comments_on_its_line,
    },
    Case {
        name: "review_over_the_diff_budget_names_what_it_skipped_and_is_neutral",
        run: review_over_the_diff_budget_names_what_it_skipped_and_is_neutral,
    },
    Case {
        name: "review_of_a_60_kb_pull_request_shows_the_model_the_whole_diff",
        run: review_of_a_60_kb_pull_request_shows_the_model_the_whole_diff,
    },
    Case {
        name: "review_feedback_on_a_pull_request_shows_the_model_its_diff",
        run: review_feedback_on_a_pull_request_shows_the_model_its_diff,
    },
    Case {
        name: "review_command_from_a_collaborator_reviews_the_head_from_an_outsider_is_ignored",
        run: review_command_from_a_collaborator_reviews_the_head_from_an_outsider_is_ignored,
    },
    Case {
        name: "review_in_suggest_mode_suggests_only_a_change_the_checks_passed_on",
        run: review_in_suggest_mode_suggests_only_a_change_the_checks_passed_on,
    },
    Case {
        name: "review_synchronize_reads_what_changed_posts_only_new_findings_resolves_fixed_ones",
        run: review_synchronize_reads_what_changed_posts_only_new_findings_resolves_fixed_ones,
    },
    Case {
        name: "review_started_by_the_cli_follows_the_run_and_exits_as_the_reference",
        run: review_started_by_the_cli_follows_the_run_and_exits_as_the_reference,
    },
    Case {
        name: "review_published_again_after_a_rate_limit_updates_its_check_run_in_place",
        run: review_published_again_after_a_rate_limit_updates_its_check_run_in_place,
    },
    Case {
        name: "review_by_a_token_deployment_publishes_a_commit_status_not_a_check_run",
        run: review_by_a_token_deployment_publishes_a_commit_status_not_a_check_run,
    },
];

pub(super) const SECRET: &str = "e2e-review-secret";
pub(super) const SANDBOX_TOKEN: &str = "e2e-review-sandbox-token";
const GITHUB_TOKEN: &str = "ghp_e2e_review";
const APP_ID: &str = "424242";
const APP_SLUG: &str = "agent-zero-review";
/// The installation the octokit `pull_request` payloads name.
const INSTALLATION: u64 = 1;
const POLICY: &str = "version: 1\nmode: observe\nproactive:\n  enabled: true\nchecks:\n  - [python3, -m, unittest]\n";

pub(super) struct World {
    pub(super) github: FakeGitHub,
    pub(super) model: FakeModel,
    pub(super) fixture: FixtureRepo,
    pub(super) _sandbox: Sandbox,
    pub(super) server: Server,
    pub(super) number: u64,
    pub(super) head: String,
}

/// The fixture's base holds the correct `calc.py`; the pull request's head
/// (a real commit, so the sandbox checks it out) adds the off-by-one and
/// `extra` files.
fn world(runtime: Runtime, extra: &[(&str, &str)]) -> World {
    world_with(runtime, POLICY, extra)
}

/// [`world`] under `policy` (`.agent-zero.yml` on the default branch).
pub(super) fn world_with(runtime: Runtime, policy: &str, extra: &[(&str, &str)]) -> World {
    world_as(runtime, policy, extra, Deployed::App)
}

/// How the deployment calls GitHub.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Deployed {
    /// As the GitHub App's installation.
    App,
    /// With a person's token (`GITHUB_TOKEN`).
    Token,
}

fn world_as(runtime: Runtime, policy: &str, extra: &[(&str, &str)], deployed: Deployed) -> World {
    let mut fixture = FixtureRepo::calc("acme", "calc")
        .file(calc::BUG_PATH, calc::CALC_PY_FIXED)
        .file(".agent-zero.yml", policy)
        .build()
        .expect("fixture repo");
    let github = FakeGitHub::start();
    github.add_fixture(&fixture);
    // Deployed as a GitHub App (only an App's installation may write check
    // runs): installation 1 is the one the octokit payloads name. The test's
    // own calls to the loopback GitHub use a person's token.
    github.require_token(GITHUB_TOKEN);
    agent_zero_e2e::register_our_app(&github, APP_ID, TEST_APP_PUBLIC_KEY_PEM);
    github.set_app_slug(APP_SLUG);
    github.add_installation(INSTALLATION, fixture.owner());
    let mut changes: Vec<(&str, &str)> = vec![(calc::BUG_PATH, calc::CALC_PY)];
    changes.extend_from_slice(extra);
    let head = fixture.commit(&changes, "average: divide by the count plus one").expect("head commit");
    let seeded: Vec<(&str, Option<&str>)> = changes.iter().map(|(p, c)| (*p, Some(*c))).collect();
    let number = github.open_pull_request(fixture.owner(), fixture.name(), "feature", &head, &seeded);
    let model = FakeModel::start();
    let sandbox = Sandbox::with_token(fixture.repos_dir(), SANDBOX_TOKEN);
    let credentials = match deployed {
        Deployed::App => vec![
            ("GITHUB_APP_ID", APP_ID.to_owned()),
            ("GITHUB_APP_PRIVATE_KEY", TEST_APP_PRIVATE_KEY_PEM.trim().replace('\n', "\\n")),
        ],
        Deployed::Token => vec![("GITHUB_TOKEN", GITHUB_TOKEN.to_owned())],
    };
    let vars = [
        ("GITHUB_WEBHOOK_SECRET", SECRET.to_owned()),
        ("GITHUB_API_URL", github.url()),
        ("AGENT_ZERO_MODEL_BASE_URL", model.base_url()),
        ("OPENAI_COMPATIBLE_API_KEY", "sk-e2e-review-key".to_owned()),
        ("AGENT_ZERO_SANDBOX_PROVIDER", "custom".to_owned()),
        ("AGENT_ZERO_SANDBOX_URL", sandbox.url.clone()),
        ("AGENT_ZERO_SANDBOX_TOKEN", SANDBOX_TOKEN.to_owned()),
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", format!("operator:{OPERATOR}")),
        ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/calc".to_owned()),
        ("AGENT_ZERO_MODEL_TIMEOUT_MS", "1500".to_owned()),
        ("AGENT_ZERO_CLAIM_MARGIN_MS", "2000".to_owned()),
    ];
    let options = ServerOptions {
        vars: vars.iter().chain(&credentials).map(|(k, v)| ((*k).to_owned(), v.clone())).collect(),
        ..ServerOptions::default()
    };
    let server = Server::start(runtime, &options).unwrap_or_else(|e| panic!("{e}"));
    World { github, model, fixture, _sandbox: sandbox, server, number, head }
}

/// The real `pull_request` `opened` payload (octokit/webhooks), pointed at
/// the fixture's pull request.
fn opened(world: &World) -> Vec<u8> {
    pull_request_event(world, "opened", &world.head, None)
}

/// The real `pull_request` payload of `action` (octokit/webhooks
/// `opened.payload.json`, `synchronize.payload.json`), pointed at the
/// fixture's pull request with head `head`.
fn pull_request_event(world: &World, action: &str, head: &str, before: Option<&str>) -> Vec<u8> {
    let path = repo_root().join(format!("tests/fixtures/github-webhooks/pull_request/{action}.payload.json"));
    let mut payload: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let point = |repository: &mut Value| {
        repository["name"] = json!(name);
        repository["full_name"] = json!(format!("{owner}/{name}"));
        repository["owner"]["login"] = json!(owner);
        repository["default_branch"] = json!(world.fixture.branch());
    };
    point(&mut payload["repository"]);
    point(&mut payload["pull_request"]["head"]["repo"]);
    point(&mut payload["pull_request"]["base"]["repo"]);
    let pull = &world.github.pulls(owner, name)[0];
    payload["number"] = json!(world.number);
    payload["pull_request"]["number"] = json!(world.number);
    payload["pull_request"]["head"]["sha"] = json!(head);
    if let Some(before) = before {
        payload["before"] = json!(before);
        payload["after"] = json!(head);
    }
    payload["pull_request"]["head"]["ref"] = json!("feature");
    payload["pull_request"]["base"]["sha"] = pull["base"]["sha"].clone();
    payload["pull_request"]["base"]["ref"] = json!(world.fixture.branch());
    serde_json::to_vec(&payload).unwrap()
}

/// The model's answer: the off-by-one the pull request adds, quoting the
/// added line.
fn decision() -> Value {
    json!({
        "finding": {
            "title": "average() divides by one too many",
            "explanation": "The pull request changes the denominator to len(values) + 1.",
            "severity": "high",
            "confidence": 0.95,
            "valid": true,
            "evidence": [format!("`{}`", calc::BUG_QUOTE.trim())],
            "files": [calc::BUG_PATH],
            "changeRisk": "behavioral"
        },
        "plan": ["Divide by len(values)"],
        "acceptanceCriteria": [],
        "changes": []
    })
}

pub(super) fn deliver(world: &World, delivery: &str) -> String {
    let reply: Reply = world.server.deliver_github(SECRET, "pull_request", delivery, &opened(world));
    assert_eq!(reply.status, 202, "{}", reply.text());
    assert_eq!(reply.json()["trigger"], "proactive", "{}", reply.text());
    reply.json()["taskId"].as_str().expect("task id").to_owned()
}

pub(super) fn wait_terminal(world: &World, task_id: &str) -> Value {
    let started = Instant::now();
    loop {
        let reply = read(&world.server, &format!("/api/v1/tasks/{task_id}"));
        if reply.status == 200
            && ["completed", "failed", "needs-human", "ignored"]
                .contains(&reply.json()["state"].as_str().unwrap_or_default())
        {
            return reply.json();
        }
        assert!(started.elapsed() < Duration::from_secs(180), "task {task_id} did not finish: {}", reply.text());
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The completed check run, once publication has written it.
pub(super) fn completed_check(world: &World) -> Value {
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let started = Instant::now();
    loop {
        if let Some(run) = world.github.check_runs(owner, name).into_iter().find(|r| r["status"] == "completed") {
            return run;
        }
        assert!(started.elapsed() < Duration::from_secs(90), "no completed check run: {:#?}", world.github.calls());
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn review_of_a_pull_request_that_adds_a_bug_comments_on_its_line(runtime: Runtime) {
    let world = world(runtime, &[]);
    world.model.push_decision(decision());
    let task_id = deliver(&world, "review-bug-1");
    let task = wait_terminal(&world, &task_id);
    let text = task.to_string();
    assert_eq!(task["state"], "completed", "{text}");
    assert_eq!(task["result"]["verdict"], "accepted", "{text}");

    // The model was shown the pull request's own diff: the added line.
    let calls = world.model.calls();
    assert_eq!(calls.len(), 1, "one model call");
    let prompt = calls[0].body_text();
    assert!(prompt.contains(&format!("+{}", calc::BUG_QUOTE)), "the added line is in the model's context: {prompt}");
    assert!(
        prompt.contains(&format!("-{}", calc::CALC_PY_FIXED.lines().nth(10).unwrap())),
        "and the removed one: {prompt}"
    );
    assert!(prompt.contains("diff under review (base...head)"), "{prompt}");
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    assert!(
        !world.github.calls_matching("GET", &format!("/repos/{owner}/{name}/pulls/{}/files", world.number)).is_empty()
    );

    // One review, event COMMENT, with one comment on the added line (RIGHT).
    let started = Instant::now();
    while world.github.reviews(owner, name, world.number).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(90), "no review posted: {:#?}", world.github.calls());
        std::thread::sleep(Duration::from_millis(300));
    }
    let reviews = world.github.reviews(owner, name, world.number);
    assert_eq!(reviews.len(), 1, "{reviews:#?}");
    let review = &reviews[0];
    assert_eq!(review["state"], "COMMENTED", "never approves or requests changes: {review}");
    assert_eq!(review["commit_id"], json!(world.head));
    let body = review["body"].as_str().unwrap_or_default();
    assert!(body.starts_with("<!-- agent-zero:review head="), "{body}");
    assert!(body.contains("Reviewed 1 of 1 changed file"), "the ledger is in the review body: {body}");
    let comments = review["comments"].as_array().expect("comments");
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert_eq!(
        (comments[0]["path"].as_str(), comments[0]["line"].as_u64(), comments[0]["side"].as_str()),
        (Some(calc::BUG_PATH), Some(u64::from(calc::BUG_LINE)), Some("RIGHT"))
    );
    assert!(comments[0]["body"].as_str().unwrap_or_default().contains("divides by one too many"));

    // The loopback GitHub places comments as GitHub does: line 1 is not in
    // the diff's hunk (lines 8 to 11), so the same review there is refused.
    let url = format!("{}/repos/{owner}/{name}/pulls/{}/reviews", world.github.url(), world.number);
    let misplaced = json!({"event": "COMMENT", "body": "x", "comments": [{"path": calc::BUG_PATH, "line": 1, "side": "RIGHT", "body": "x"}]});
    let auth = format!("Bearer {GITHUB_TOKEN}");
    let refused = request(
        "POST",
        &url,
        &[("authorization", &auth), ("content-type", "application/json")],
        misplaced.to_string().as_bytes(),
    )
    .expect("fake GitHub");
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert_eq!(refused.json()["errors"][0], "Line could not be resolved", "{}", refused.text());
    assert_eq!(world.github.reviews(owner, name, world.number).len(), 1, "a refused review is not stored");

    // The check run carries the ledger, first, and is neutral (observe mode).
    let check = completed_check(&world);
    let title = check["output"]["title"].as_str().unwrap_or_default();
    assert!(title.starts_with("Reviewed 1 of 1 changed file ·"), "{title}");
    let summary = check["output"]["summary"].as_str().unwrap_or_default();
    let ledger = summary.find("### Review coverage").expect("ledger in the summary");
    assert!(ledger < summary.find("### Finding").expect("finding"), "the ledger comes first: {summary}");
    assert_eq!(check["conclusion"], "neutral", "{check}");
    // The same head delivered again (a `reopened`, a redelivery under a new
    // id): reviewed and published again, but the review is not repeated.
    world.model.push_decision(decision());
    let again = deliver(&world, "review-bug-2");
    assert_ne!(again, task_id);
    assert_eq!(wait_terminal(&world, &again)["state"], "completed");
    let reviews_path = format!("/repos/{owner}/{name}/pulls/{}/reviews", world.number);
    // The second publication is done once its check run completed and it
    // looked for its review (in whichever order its steps ran).
    let published = |g: &agent_zero_fakes::FakeGitHub| {
        g.check_runs(owner, name).iter().filter(|r| r["status"] == "completed").count() >= 2
            && g.calls_matching("GET", &reviews_path).len() >= 4
    };
    let started = Instant::now();
    while !published(&world.github) {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the second run never published: {:#?}",
            world.github.check_runs(owner, name)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(world.github.reviews(owner, name, world.number).len(), 1, "one review per head");
    // Each run read the reviews twice: discovery, for an earlier head to
    // read only the changes since (none: this is the same head), and
    // publication, for its own review before posting one.
    assert_eq!(world.github.calls_matching("GET", &reviews_path).len(), 4, "each run looked for its review first");
    assert_eq!(
        world.github.calls_matching("POST", &reviews_path).len(),
        2,
        "the product posted once (the other is the misplaced one above)"
    );

    // The evidence record holds the ledger and the anchor.
    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.json"));
    assert_eq!(evidence.status, 200, "{}", evidence.text());
    assert_eq!(evidence.json()["review"]["anchors"][0]["line"], calc::BUG_LINE, "{}", evidence.text());
    // Every request the run sent to GitHub is an operation of its REST description.
    world.github.assert_no_violations();
}

fn review_over_the_diff_budget_names_what_it_skipped_and_is_neutral(runtime: Runtime) {
    // Three generated-looking data files of ~7 KB each: the policy's per-file
    // and total budgets (8,000 and 16,000 bytes) cannot hold them beside the
    // bug, and a lockfile is skipped.
    let table = |tag: &str| (0..100).map(|i| format!("{tag} row {i:03} {}\n", "v".repeat(60))).collect::<String>();
    let (a, b, c) = (table("a"), table("b"), table("c"));
    let extra = [
        ("data/a.txt", a.as_str()),
        ("data/b.txt", b.as_str()),
        ("data/c.txt", c.as_str()),
        ("package-lock.json", "{\"lockfileVersion\": 3}\n"),
    ];
    let policy = format!("{POLICY}review:\n  diffBudgetBytes: 16000\n  fileBudgetBytes: 8000\n");
    let world = world_with(runtime, &policy, &extra);
    world.model.push_decision(decision());
    let task_id = deliver(&world, "review-budget-1");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    let check = completed_check(&world);
    assert_eq!(check["conclusion"], "neutral", "a review that skipped anything never passes: {check}");
    let title = check["output"]["title"].as_str().unwrap_or_default();
    let summary = check["output"]["summary"].as_str().unwrap_or_default();
    assert!(
        title.starts_with("Reviewed ") && title.contains(" of 5 changed files (") && title.contains("skipped"),
        "{title}\n{summary}"
    );
    assert!(summary.contains("**This review did not read the whole diff**"), "{summary}");
    assert!(summary.contains("**skipped** (generated): <code>package-lock.json</code>"), "{summary}");
    assert!(summary.contains("**skipped** (diff budget spent): <code>data/c.txt</code>"), "{summary}");
    // What the ledger says was skipped was not shown to the model.
    let prompt = world.model.calls()[0].body_text();
    assert!(!prompt.contains("c row 000"), "a skipped file's lines are not in the prompt");
    assert!(prompt.contains("changed files not shown in full"), "{prompt}");
}

/// Every string of a model request's JSON body, joined: the prompt as the
/// model reads it (the body escapes its newlines).
fn prompt_text(call: &agent_zero_fakes::RecordedCall) -> String {
    fn strings(value: &Value, out: &mut String) {
        match value {
            Value::String(text) => {
                out.push_str(text);
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            Value::Object(fields) => fields.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    strings(&call.json().expect("a JSON model request"), &mut out);
    out
}

/// Four 15 KB text files: with the bug, a pull request of some 61 KB.
fn sixty_kb_of_files() -> Vec<(String, String)> {
    (0..4)
        .map(|f| {
            let text: String = (0..200).map(|i| format!("part {f} line {i:03} {}\n", "w".repeat(60))).collect();
            (format!("docs/part{f}.txt"), text)
        })
        .collect()
}

fn review_of_a_60_kb_pull_request_shows_the_model_the_whole_diff(runtime: Runtime) {
    let files = sixty_kb_of_files();
    let extra: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let size: usize = files.iter().map(|(_, c)| c.len()).sum();
    assert!((60_000..64_000).contains(&size), "{size}");
    let world = world(runtime, &extra);
    world.model.push_decision(decision());
    let task_id = deliver(&world, "review-60kb-1");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    assert_eq!(task["result"]["verdict"], "accepted", "{task}");
    // Every added line of every file is in the model's prompt, in order.
    let calls = world.model.calls();
    assert_eq!(calls.len(), 1, "one model call");
    let prompt = prompt_text(&calls[0]);
    for (path, content) in &files {
        let patch: String = content.lines().map(|l| format!("+{l}\n")).collect();
        assert!(prompt.contains(&format!("diff --git a/{path} b/{path}\n@@ -0,0 +1,200 @@\n{patch}")), "{path} whole");
    }
    assert!(prompt.contains(&format!("+{}", calc::BUG_QUOTE)), "and the bug");
    assert!(!prompt.contains("changed files not shown in full"), "nothing was left out");
    // The ledger says it read all of it, and the check does not say otherwise.
    let check = completed_check(&world);
    let title = check["output"]["title"].as_str().unwrap_or_default();
    let summary = check["output"]["summary"].as_str().unwrap_or_default();
    assert!(title.starts_with("Reviewed 5 of 5 changed files ·"), "{title}");
    assert!(!summary.contains("did not read the whole diff"), "{summary}");
    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.json"));
    let ledger = &evidence.json()["review"];
    let files = ledger["files"].as_array().expect("ledger files");
    assert!(files.iter().all(|f| f["review"] == "reviewed"), "{ledger}");
}

/// The real `pull_request_review_comment` `created` payload: `body` from
/// the repository's owner, on the added line of `calc.py` in the world's
/// pull request, as comment `comment_id`.
fn review_comment(world: &World, comment_id: u64, body: &str) -> Vec<u8> {
    let path = repo_root().join("tests/fixtures/github-webhooks/pull_request_review_comment/created.payload.json");
    let mut payload: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let point = |repository: &mut Value| {
        repository["name"] = json!(name);
        repository["full_name"] = json!(format!("{owner}/{name}"));
        repository["owner"]["login"] = json!(owner);
        repository["default_branch"] = json!(world.fixture.branch());
    };
    point(&mut payload["repository"]);
    point(&mut payload["pull_request"]["head"]["repo"]);
    point(&mut payload["pull_request"]["base"]["repo"]);
    let pull = &world.github.pulls(owner, name)[0];
    payload["pull_request"]["number"] = json!(world.number);
    payload["pull_request"]["head"]["sha"] = json!(world.head);
    payload["pull_request"]["head"]["ref"] = json!("feature");
    payload["pull_request"]["base"]["sha"] = pull["base"]["sha"].clone();
    payload["pull_request"]["base"]["ref"] = json!(world.fixture.branch());
    payload["comment"]["id"] = json!(comment_id);
    payload["comment"]["path"] = json!(calc::BUG_PATH);
    payload["comment"]["line"] = json!(calc::BUG_LINE);
    payload["comment"]["body"] = json!(body);
    serde_json::to_vec(&payload).unwrap()
}

fn review_feedback_on_a_pull_request_shows_the_model_its_diff(runtime: Runtime) {
    // Beside the bug, the pull request adds notes the comment says nothing about.
    let world = world(runtime, &[("NOTES.md", NOTES)]);
    world.model.push_decision(decision());
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let text = "This divides by one too many: `return sum(values) / (len(values) + 1)`.";
    let comment_id = world.github.add_review_comment(owner, name, world.number, "Codertocat", calc::BUG_PATH, 11, text);
    let body = review_comment(&world, comment_id, text);
    let reply = world.server.deliver_github(SECRET, "pull_request_review_comment", "feedback-diff-1", &body);
    assert_eq!(reply.status, 202, "{}", reply.text());
    assert_eq!(reply.json()["trigger"], "feedback", "{}", reply.text());
    let task_id = reply.json()["taskId"].as_str().expect("task id").to_owned();
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    assert_eq!(task["result"]["verdict"], "accepted", "{task}");
    // The prompt holds the reviewer's comment and the pull request's diff:
    // the changed line, the line it replaced, and the file the comment is not on.
    let calls = world.model.calls();
    assert_eq!(calls.len(), 1, "one model call");
    let prompt = prompt_text(&calls[0]);
    assert!(prompt.contains(text), "the feedback: {prompt}");
    assert!(prompt.contains("<untrusted source=\"diff under review (base...head)\">"), "{prompt}");
    assert!(prompt.contains(&format!("+{}", calc::BUG_QUOTE)), "the added line: {prompt}");
    assert!(prompt.contains(&format!("-{}", calc::CALC_PY_FIXED.lines().nth(10).unwrap())), "the removed: {prompt}");
    let notes: String = NOTES.lines().map(|l| format!("+{l}\n")).collect();
    assert!(prompt.contains(&format!("diff --git a/NOTES.md b/NOTES.md\n@@ -0,0 +1,3 @@\n{notes}")), "{prompt}");
    let files_path = format!("/repos/{owner}/{name}/pulls/{}/files", world.number);
    assert_eq!(world.github.calls_matching("GET", &files_path).len(), 1, "read once, from GitHub");
    // The evidence keeps the ledger of what it read; the check says "read",
    // not "reviewed": review feedback does not review the pull request.
    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.json"));
    assert_eq!(evidence.json()["review"]["files"].as_array().map(Vec::len), Some(2), "{}", evidence.text());
    let check = completed_check(&world);
    let title = check["output"]["title"].as_str().unwrap_or_default();
    assert!(title.starts_with("Read 2 of 2 changed files ·"), "{title}");
    assert!(world.github.reviews(owner, name, world.number).is_empty(), "feedback posts no review");
    // Every request the run sent to GitHub is an operation of its REST description.
    world.github.assert_no_violations();
}

/// A file the third head adds, with a bug of its own.
const STATS_PY: &str = "\"\"\"Order statistics.\"\"\"


def median(values):
    \"\"\"Return the middle value of an odd-length list.\"\"\"
    return sorted(values)[len(values) // 2 + 1]
";
const STATS_PATH: &str = "stats.py";
const STATS_QUOTE: &str = "    return sorted(values)[len(values) // 2 + 1]";
const STATS_LINE: u64 = 6;
/// A file the first head adds and no later commit touches.
const NOTES: &str = "# Notes\n\nThe average helper divides the sum by the count.\n";

/// The model's answer: the median's off-by-one in the added `stats.py`.
fn stats_decision() -> Value {
    json!({
        "finding": {
            "title": "median() skips past the middle element",
            "explanation": "The index len(values) // 2 + 1 is one past the middle of an odd-length list.",
            "severity": "high",
            "confidence": 0.9,
            "valid": true,
            "evidence": [format!("`{}`", STATS_QUOTE.trim())],
            "files": [STATS_PATH],
            "changeRisk": "behavioral"
        },
        "plan": ["Index len(values) // 2"],
        "acceptanceCriteria": [],
        "changes": []
    })
}

/// A `synchronize` of the pull request from `before` to `head`.
fn synchronize(world: &World, head: &str, before: &str, delivery: &str) -> String {
    let body = pull_request_event(world, "synchronize", head, Some(before));
    let reply: Reply = world.server.deliver_github(SECRET, "pull_request", delivery, &body);
    assert_eq!(reply.status, 202, "{}", reply.text());
    assert_eq!(reply.json()["trigger"], "proactive", "{}", reply.text());
    reply.json()["taskId"].as_str().expect("task id").to_owned()
}

/// Waits until `done` holds of the loopback GitHub (bounded).
fn wait_github(world: &World, what: &str, done: impl Fn(&FakeGitHub) -> bool) {
    let started = Instant::now();
    while !done(&world.github) {
        assert!(started.elapsed() < Duration::from_secs(90), "{what}: {:#?}", world.github.calls());
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn review_synchronize_reads_what_changed_posts_only_new_findings_resolves_fixed_ones(runtime: Runtime) {
    let mut world = world(runtime, &[("NOTES.md", NOTES)]);
    let (owner, name) = (world.fixture.owner().to_owned(), world.fixture.name().to_owned());
    let (owner, name, number) = (owner.as_str(), name.as_str(), world.number);
    let head_a = world.head.clone();
    let comments_path = format!("/repos/{owner}/{name}/pulls/{number}/comments");
    let completed_checks =
        |g: &FakeGitHub| g.check_runs(owner, name).iter().filter(|r| r["status"] == "completed").count();

    // Head A: the off-by-one in calc.py, posted as one line comment.
    world.model.push_decision(decision());
    let first = deliver(&world, "sync-1");
    assert_eq!(wait_terminal(&world, &first)["state"], "completed");
    wait_github(&world, "the first review", |g| g.review_comments(owner, name, number).len() == 1);
    let posted = world.github.review_comments(owner, name, number);
    let c1 = &posted[0];
    assert_eq!((c1["path"].as_str(), c1["line"].as_u64()), (Some(calc::BUG_PATH), Some(u64::from(calc::BUG_LINE))));
    assert!(
        c1["body"].as_str().unwrap_or_default().starts_with("<!-- agent-zero:finding quote="),
        "our comments carry their quote's marker: {c1}"
    );
    wait_github(&world, "the first publication", |g| completed_checks(g) == 1);

    // Head B, one commit: a new function in calc.py; the bug stays, NOTES.md is untouched.
    let calc_b = format!(
        "{}\n\ndef total(values):\n    \"\"\"Return the sum of the values.\"\"\"\n    return sum(values)\n",
        calc::CALC_PY
    );
    let head_b = world.fixture.commit(&[(calc::BUG_PATH, &calc_b)], "add total()").expect("commit B");
    world.github.push_to_pull_request(owner, name, number, &head_b, &[(calc::BUG_PATH, Some(&calc_b))]);
    // The model reports the finding already posted.
    world.model.push_decision(decision());
    let second = synchronize(&world, &head_b, &head_a, "sync-2");
    assert_eq!(wait_terminal(&world, &second)["state"], "completed");
    // Published once the check run completed and the resolve step read calc.py at B.
    let contents_b = format!("/repos/{owner}/{name}/contents/{}", calc::BUG_PATH);
    wait_github(&world, "the second publication", |g| {
        completed_checks(g) == 2
            && g.calls_matching("GET", &comments_path).len() == 2
            && g.calls()
                .iter()
                .any(|c| c.decoded_path().starts_with(&contents_b) && c.query_param("ref") == Some(head_b.as_str()))
    });
    let compare_ab = format!("/repos/{owner}/{name}/compare/{head_a}...{head_b}");
    assert_eq!(world.github.calls_matching("GET", &compare_ab).len(), 1, "B is compared with the reviewed head A");
    // Only what changed since A was shown: calc.py, not NOTES.md.
    let prompt = world.model.calls()[1].body_text();
    assert!(prompt.contains("+def total(values):"), "the new commit's lines are in the model's context: {prompt}");
    assert!(!prompt.contains("The average helper divides"), "a file unchanged since A is not shown again: {prompt}");
    assert_eq!(
        world.github.review_comments(owner, name, number).len(),
        1,
        "the finding already posted is not repeated"
    );
    assert_eq!(world.github.reviews(owner, name, number).len(), 1, "nothing new, no new review");
    let check =
        world.github.check_runs(owner, name).into_iter().rfind(|r| r["head_sha"] == json!(head_b)).expect("check at B");
    let title = check["output"]["title"].as_str().unwrap_or_default();
    assert!(
        title.starts_with(&format!("Reviewed 1 of 1 file changed since {} (1 unchanged)", &head_a[..7])),
        "{title}"
    );
    let summary = check["output"]["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("unchanged since the earlier review: <code>NOTES.md</code>"), "{summary}");
    let evidence = read(&world.server, &format!("/api/v1/tasks/{second}/evidence.json")).json();
    assert_eq!(evidence["review"]["since"], json!(head_a), "{evidence}");
    assert_eq!(evidence["review"]["unchanged"], json!(["NOTES.md"]), "{evidence}");

    // Head C, one commit: the bug fixed, and stats.py added with a new one.
    let calc_c = calc_b.replace(calc::BUG_QUOTE, "    return sum(values) / len(values)");
    let head_c = world
        .fixture
        .commit(&[(calc::BUG_PATH, &calc_c), (STATS_PATH, STATS_PY)], "fix average, add median")
        .expect("commit C");
    world.github.push_to_pull_request(
        owner,
        name,
        number,
        &head_c,
        &[(calc::BUG_PATH, Some(&calc_c)), (STATS_PATH, Some(STATS_PY))],
    );
    world.model.push_decision(stats_decision());
    let third = synchronize(&world, &head_c, &head_b, "sync-3");
    assert_eq!(wait_terminal(&world, &third)["state"], "completed");
    wait_github(&world, "the third publication", |g| g.review_comments(owner, name, number).len() == 3);
    // The last reviewed head is still A (B posted nothing).
    let compare_ac = format!("/repos/{owner}/{name}/compare/{head_a}...{head_c}");
    assert_eq!(world.github.calls_matching("GET", &compare_ac).len(), 1);
    let reviews = world.github.reviews(owner, name, number);
    assert_eq!(reviews.len(), 2, "{reviews:#?}");
    assert_eq!(reviews[1]["commit_id"], json!(head_c));
    let new_comments = reviews[1]["comments"].as_array().expect("comments");
    assert_eq!(new_comments.len(), 1, "only the new finding: {new_comments:#?}");
    assert_eq!(
        (new_comments[0]["path"].as_str(), new_comments[0]["line"].as_u64()),
        (Some(STATS_PATH), Some(STATS_LINE))
    );
    // The fixed finding's thread is answered: resolved in C.
    let all = world.github.review_comments(owner, name, number);
    let replies: Vec<&Value> = all.iter().filter(|c| c.get("in_reply_to_id").is_some()).collect();
    assert_eq!(replies.len(), 1, "{all:#?}");
    assert_eq!(replies[0]["in_reply_to_id"], c1["id"], "the reply is on the fixed finding's thread");
    let reply = replies[0]["body"].as_str().unwrap_or_default();
    assert!(reply.contains(&format!("Resolved in {head_c}")), "{reply}");
    // Every request the run sent to GitHub is an operation of its REST description.
    world.github.assert_no_violations();
}

/// The real `issue_comment` `created` payload (octokit/webhooks), as a
/// comment `comment_id` by `login` (`association`) on the fixture's pull
/// request saying `body`.
fn pull_request_comment(world: &World, comment_id: u64, login: &str, association: &str, body: &str) -> Vec<u8> {
    let path = repo_root().join("tests/fixtures/github-webhooks/issue_comment/created.payload.json");
    let mut payload: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    payload["repository"]["name"] = json!(name);
    payload["repository"]["full_name"] = json!(format!("{owner}/{name}"));
    payload["repository"]["owner"]["login"] = json!(owner);
    payload["repository"]["default_branch"] = json!(world.fixture.branch());
    let api = format!("{}/repos/{owner}/{name}", world.github.url());
    payload["issue"]["number"] = json!(world.number);
    payload["issue"]["state"] = json!("open");
    payload["issue"]["pull_request"] = json!({
        "url": format!("{api}/pulls/{}", world.number),
        "html_url": format!("https://github.com/{owner}/{name}/pull/{}", world.number),
        "diff_url": format!("https://github.com/{owner}/{name}/pull/{}.diff", world.number),
        "patch_url": format!("https://github.com/{owner}/{name}/pull/{}.patch", world.number),
    });
    payload["comment"]["id"] = json!(comment_id);
    payload["comment"]["body"] = json!(body);
    payload["comment"]["user"]["login"] = json!(login);
    payload["comment"]["author_association"] = json!(association);
    payload["sender"]["login"] = json!(login);
    // The octokit capture is a repository webhook's and names no
    // installation: the gate looks the App's up on the repository.
    serde_json::to_vec(&payload).unwrap()
}

fn review_command_from_a_collaborator_reviews_the_head_from_an_outsider_is_ignored(runtime: Runtime) {
    let world = world(runtime, &[]);
    let (owner, name, number) = (world.fixture.owner(), world.fixture.name(), world.number);
    let command = |comment_id: u64, login: &str, association: &str, delivery: &str| {
        let body = pull_request_comment(&world, comment_id, login, association, "Pushed a fix.\n\n/agent-zero review");
        let reply: Reply = world.server.deliver_github(SECRET, "issue_comment", delivery, &body);
        assert_eq!(reply.status, 202, "{}", reply.text());
        reply.json()["taskId"].as_str().expect("the command is recorded").to_owned()
    };

    // An outside contributor's command: ignored with its reason, nothing ran, no acknowledgement.
    let outsider = world.github.add_comment(owner, name, number, "mallory", "/agent-zero review");
    let ignored = wait_terminal(&world, &command(outsider, "mallory", "NONE", "command-outsider"));
    assert_eq!(ignored["state"], "ignored", "{ignored}");
    assert_eq!(ignored["ignored"]["reason"], "author-not-allowed", "{ignored}");
    let message = ignored["ignored"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("mallory") && message.contains("NONE"), "{message}");
    assert!(world.github.reactions(owner, name, outsider).is_empty(), "an ignored command is not acknowledged");

    // A conversation comment is not a command: ignored at intake, with its reason.
    let chat = pull_request_comment(&world, outsider, "alice", "COLLABORATOR", "Looks good to me.");
    let reply: Reply = world.server.deliver_github(SECRET, "issue_comment", "command-chat", &chat);
    assert_eq!(reply.status, 202, "{}", reply.text());
    assert!(reply.text().contains("no-command"), "{}", reply.text());

    // A collaborator's command: acknowledged, and a review of the current head.
    world.model.push_decision(decision());
    let comment = world.github.add_comment(owner, name, number, "alice", "/agent-zero review");
    let task_id = command(comment, "alice", "COLLABORATOR", "command-collaborator");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    assert_eq!(task["trigger"], "proactive", "{task}");
    // The payload has no head: admission read the pull request's.
    assert!(!world.github.calls_matching("GET", &format!("/repos/{owner}/{name}/pulls/{number}")).is_empty());
    // Nor an installation: the gate asked GitHub for the App's on the
    // repository, and the review was published with that one's token.
    assert!(!world.github.calls_matching("GET", &format!("/repos/{owner}/{name}/installation")).is_empty());
    assert!(
        !world.github.calls_matching("POST", &format!("/app/installations/{INSTALLATION}/access_tokens")).is_empty()
    );
    let reactions = world.github.reactions(owner, name, comment);
    assert_eq!(reactions.len(), 1, "{reactions:#?}");
    assert_eq!(reactions[0]["content"], "eyes");
    wait_github(&world, "the commanded review", |g| g.reviews(owner, name, number).len() == 1);
    let review = &world.github.reviews(owner, name, number)[0];
    assert_eq!(review["commit_id"], json!(world.head), "the current head was reviewed: {review}");
    assert_eq!(review["comments"][0]["line"], calc::BUG_LINE, "{review}");
    assert_eq!(world.model.calls().len(), 1, "only the collaborator's command reached the model");
}

/// `suggest` mode with the writes a suggestion's proof needs (in the
/// sandbox only), one attempt, and the fixture's tests as the check.
const SUGGEST_POLICY: &str = "version: 1\nmode: suggest\nproactive:\n  enabled: true\nagent:\n  maxAttempts: 1\n\
     autofix:\n  enabled: true\n  minConfidence: 0.8\n  allowedChangeRisks: [mechanical, behavioral]\n  requireIsolated: false\n\
     checks:\n  - [python3, -m, unittest]\n";

/// [`decision`] with `calc.py` rewritten to `content`.
fn decision_with_change(content: &str) -> Value {
    let mut decision = decision();
    decision["changes"] = json!([{ "path": calc::BUG_PATH, "content": content, "reason": "fix the denominator" }]);
    decision
}

/// The one line comment of the world's one review, once posted.
fn the_comment(world: &World) -> Value {
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    wait_github(world, "the review", |g| g.reviews(owner, name, world.number).len() == 1);
    let review = world.github.reviews(owner, name, world.number).remove(0);
    let comments = review["comments"].as_array().cloned().unwrap_or_default();
    assert_eq!(comments.len(), 1, "{review:#}");
    comments[0].clone()
}

fn review_in_suggest_mode_suggests_only_a_change_the_checks_passed_on(runtime: Runtime) {
    // A change the repository's tests pass on: the comment suggests exactly it.
    let world = world_with(runtime, SUGGEST_POLICY, &[]);
    world.model.push_decision(decision_with_change(calc::CALC_PY_FIXED));
    let task_id = deliver(&world, "suggest-pass");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    assert_eq!(task["result"]["verified"], true, "the change passed the checks in the sandbox: {task}");
    let comment = the_comment(&world);
    assert_eq!(comment["line"], calc::BUG_LINE, "{comment}");
    let body = comment["body"].as_str().unwrap_or_default();
    let fixed_line = calc::CALC_PY_FIXED.lines().nth(calc::BUG_LINE as usize - 1).unwrap();
    assert!(body.contains(&format!("```suggestion\n{fixed_line}\n```")), "the verified line is suggested: {body}");
    // The suggestion equals what the sandbox verified: the published file's digest.
    let evidence = read(&world.server, &format!("/api/v1/tasks/{task_id}/evidence.json")).json();
    let digest: String =
        sha2::Sha256::digest(calc::CALC_PY_FIXED.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(evidence["tree"][0]["sha256"], json!(digest), "{evidence}");
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    assert!(world.github.pulls(owner, name).len() == 1, "suggest mode never opens a pull request of its own");
    drop(world);

    // A change the tests fail on: the comment explains, without a suggestion.
    let world = world_with(runtime, SUGGEST_POLICY, &[]);
    let wrong = calc::CALC_PY.replace("(len(values) + 1)", "(len(values) - 1)");
    world.model.push_decision(decision_with_change(&wrong));
    let task_id = deliver(&world, "suggest-fail");
    let task = wait_terminal(&world, &task_id);
    assert_ne!(task["result"]["verified"], true, "{task}");
    let comment = the_comment(&world);
    let body = comment["body"].as_str().unwrap_or_default();
    assert!(!body.contains("```suggestion"), "no suggestion for a change that failed: {body}");
    assert!(body.contains("**No suggestion:** the repository's checks failed on the change in the sandbox."), "{body}");
}

/// `agent-zero review <pr-url>` against the deployment (the CLI in-process,
/// no saved login): it creates a proactive task at the head GitHub reports,
/// prints each event as the run moves, and exits 0 once it completes; a
/// pull request GitHub does not show is refused by the API, exit 1, and
/// nothing runs.
fn review_started_by_the_cli_follows_the_run_and_exits_as_the_reference(runtime: Runtime) {
    let world = world(runtime, &[]);
    world.model.push_decision(decision());
    let cli = |page: &str| {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let url = world.server.url("");
        let args = ["agent-zero", "review", page, "--url", &url, "--token", OPERATOR, "--interval-ms", "250"];
        let status = agent_zero_cli::run_with(&agent_zero_cli::Env::default(), args, &repo_root(), &mut out, &mut err);
        (status, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
    };
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let (status, out, err) = cli(&format!("https://github.com/{owner}/{name}/pull/{}", world.number));
    assert_eq!(status, agent_zero_cli::EXIT_OK, "{out}{err}");
    let first = out.lines().next().unwrap_or_default();
    assert!(first.starts_with("created api-") && first.ends_with("on acme/calc: proactive, mode observe"), "{out}");
    let id = first.trim_start_matches("created ").split_whitespace().next().unwrap().to_owned();
    assert!(out.contains(&format!("{id} is completed\n")) && out.contains("cost: "), "{out}");
    let task = read(&world.server, &format!("/api/v1/tasks/{id}")).json();
    assert_eq!((task["state"].as_str(), task["result"]["verdict"].as_str()), (Some("completed"), Some("accepted")));
    assert_eq!(task["pullRequest"]["headSha"], json!(world.head), "the head GitHub reports: {task}");
    // Each event the API shows was printed once.
    for event in task["events"].as_array().unwrap() {
        let message = event["message"].as_str().unwrap();
        assert!(out.contains(message), "{message} not shown: {out}");
    }

    let (status, out, err) = cli(&format!("https://github.com/{owner}/{name}/pull/{}", world.number + 50));
    assert_eq!(status, agent_zero_cli::EXIT_FAILED, "{out}{err}");
    assert!(err.contains("refused the task: 400 invalid_request (pullRequest.number)"), "{err}");
    assert!(out.is_empty(), "{out}");
}

/// GitHub's secondary rate limit on the review's `POST` (403 with
/// `retry-after`, once): the publication stops there, after creating the
/// check run, and runs again a second later. The second time it lists the
/// head's check runs (`GET /commits/{sha}/check-runs?check_name=&filter=all`,
/// which the loopback GitHub answers as GitHub does), finds the task's by its
/// `external_id` and updates it (`PATCH`): one check run for the task, one
/// review.
fn review_published_again_after_a_rate_limit_updates_its_check_run_in_place(runtime: Runtime) {
    let world = world(runtime, &[]);
    world.model.push_decision(decision());
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let reviews = format!("/repos/{owner}/{name}/pulls/{}/reviews", world.number);
    world.github.fail_next(
        "POST",
        &reviews,
        403,
        &[("retry-after", "1")],
        r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"403"}"#,
    );
    let task_id = deliver(&world, "review-rate-limited-1");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");

    let started = Instant::now();
    while world.github.reviews(owner, name, world.number).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(90), "no review posted: {:#?}", world.github.calls());
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(world.github.reviews(owner, name, world.number).len(), 1, "one review, posted on the second try");
    assert_eq!(world.github.calls_matching("POST", &reviews).len(), 2, "refused once, then posted");

    let ours: Vec<Value> =
        world.github.check_runs(owner, name).into_iter().filter(|run| run["external_id"] == json!(task_id)).collect();
    assert_eq!(ours.len(), 1, "one check run for the task: {ours:#?}");
    assert_eq!(ours[0]["head_sha"], json!(world.head));
    assert_eq!(ours[0]["status"], "completed", "{:#}", ours[0]);
    let listed =
        world.github.calls_matching("GET", &format!("/repos/{owner}/{name}/commits/{}/check-runs", world.head));
    assert_eq!(listed.len(), 2, "listed before each write: {listed:#?}");
    assert!(listed.iter().all(|call| call.query_param("filter") == Some("all")), "{listed:#?}");
    let id = ours[0]["id"].as_u64().expect("a check run id");
    assert_eq!(
        world.github.calls_matching("POST", &format!("/repos/{owner}/{name}/check-runs")).len(),
        1,
        "created once"
    );
    assert_eq!(
        world.github.calls_matching("PATCH", &format!("/repos/{owner}/{name}/check-runs/{id}")).len(),
        1,
        "then updated in place"
    );
}

/// Deployed with `GITHUB_TOKEN`: GitHub refuses check runs to a person's
/// token, so the review's outcome is a commit status on the head (context
/// `Agent Zero`, the advisory outcome named in its description), and the
/// product never calls the check-runs API. The review itself is as with
/// an App.
fn review_by_a_token_deployment_publishes_a_commit_status_not_a_check_run(runtime: Runtime) {
    let world = world_as(runtime, POLICY, &[], Deployed::Token);
    world.model.push_decision(decision());
    let task_id = deliver(&world, "review-token-1");
    let task = wait_terminal(&world, &task_id);
    assert_eq!(task["state"], "completed", "{task}");
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let started = Instant::now();
    while world.github.statuses(owner, name).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(90), "no commit status: {:#?}", world.github.calls());
        std::thread::sleep(Duration::from_millis(300));
    }
    let statuses = world.github.statuses(owner, name);
    assert_eq!(statuses.len(), 1, "{statuses:#?}");
    let status = &statuses[0];
    assert_eq!(
        (status["sha"].as_str(), status["context"].as_str(), status["state"].as_str()),
        (Some(world.head.as_str()), Some("Agent Zero"), Some("success")),
        "{status}"
    );
    let description = status["description"].as_str().unwrap_or_default();
    assert!(description.starts_with("Advisory: "), "a finding is advisory, and says so: {description}");
    assert!(description.chars().count() <= 140, "{description}");
    assert!(world.github.check_runs(owner, name).is_empty());
    assert!(
        world.github.calls().iter().all(|call| !call.path.contains("check-runs")),
        "no check-run call with a token: {:#?}",
        world.github.calls()
    );
    // The review and its line comment are published as with an App.
    while world.github.reviews(owner, name, world.number).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(90), "no review posted: {:#?}", world.github.calls());
        std::thread::sleep(Duration::from_millis(300));
    }
    let reviews = world.github.reviews(owner, name, world.number);
    assert_eq!(reviews[0]["comments"].as_array().map(Vec::len), Some(1), "{reviews:#?}");
}
