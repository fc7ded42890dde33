//! The operator's loop from the `agent-zero` CLI (in-process, no saved
//! login) against the real worker in workerd and the Spin component in the
//! Spin host: `fix <issue-url>` starts an issue task whose issue the
//! deployment reads from GitHub, follows it to `needs-human` and exits 2;
//! `tasks approve` lets it go on and `tasks watch` exits 0 once it
//! completes; `tasks overview` counts it on the way.

use std::path::Path;

use agent_zero_e2e::{Runtime, repo_root};
use agent_zero_fakes::calc;

use super::lifecycle::{OPERATOR, decision, policy, read, world_with_vars};
use crate::Case;

pub(crate) const CASES: &[Case] = &[Case {
    name: "cli_fix_stops_for_a_person_exits_2_and_an_approval_lets_it_complete",
    run: fix_stops_for_a_person_exits_2_and_an_approval_lets_it_complete,
}];

/// `agent-zero ARGS` against `url` as the operator: (status, stdout, stderr).
fn cli(url: &str, args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let target = ["--url", url, "--token", OPERATOR];
    let (command, rest) = args.split_first().expect("a command");
    // `tasks` takes the deployment before its subcommand; the others after.
    let line: Vec<&str> = if *command == "tasks" {
        std::iter::once("agent-zero").chain(["tasks"]).chain(target).chain(rest.iter().copied()).collect()
    } else {
        std::iter::once("agent-zero").chain(args.iter().copied()).chain(target).collect()
    };
    let env = agent_zero_cli::Env::default();
    let status = agent_zero_cli::run_with(&env, line, Path::new(&repo_root()), &mut out, &mut err);
    (status, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
}

fn fix_stops_for_a_person_exits_2_and_an_approval_lets_it_complete(runtime: Runtime) {
    let world = world_with_vars(runtime, &policy("fix"), &[("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/calc")]);
    let (owner, name) = (world.fixture.owner(), world.fixture.name());
    let body = "`average([2, 4])` returns 2, not 3.";
    let number = world.github.open_issue(owner, name, "average() is wrong for every input", Some(body));
    // A high-impact change: the policy lets it through only with a person's approval.
    world.model.push_decision(decision("high-impact", calc::CALC_PY_FIXED));
    let url = world.server.url("");

    let page = format!("https://github.com/{owner}/{name}/issues/{number}");
    let (status, out, err) = cli(&url, &["fix", &page, "--interval-ms", "250"]);
    assert_eq!(status, agent_zero_cli::EXIT_NEEDS_HUMAN, "{out}{err}");
    let first = out.lines().next().unwrap_or_default();
    assert!(first.starts_with("created api-") && first.ends_with("on acme/calc: issue, mode fix"), "{out}");
    let id = first.trim_start_matches("created ").split_whitespace().next().unwrap().to_owned();
    assert!(out.contains(&format!("{id} is needs-human\n")), "{out}");
    // The run worked on the issue GitHub shows: its title and body reached the model.
    let prompt = world.model.calls()[0].body_text();
    assert!(prompt.contains("average() is wrong for every input") && prompt.contains("returns 2, not 3"), "{prompt}");

    let (status, out, err) = cli(&url, &["tasks", "overview", "--repository", "acme/calc"]);
    assert_eq!(status, agent_zero_cli::EXIT_OK, "{err}");
    assert!(out.contains("needs-human  1\n") && out.contains("running      0\n"), "{out}");

    let (status, out, err) = cli(&url, &["tasks", "approve", &id, "--comment", "reviewed"]);
    assert_eq!(status, agent_zero_cli::EXIT_OK, "{out}{err}");
    let (status, out, err) = cli(&url, &["tasks", "watch", &id, "--interval-ms", "250"]);
    assert_eq!(status, agent_zero_cli::EXIT_OK, "{out}{err}");
    assert!(out.contains(&format!("{id} is completed\n")), "{out}");
    let task = read(&world.server, &format!("/api/v1/tasks/{id}")).json();
    assert_eq!((task["result"]["verified"].as_bool(), task["approvedBy"].as_str()), (Some(true), Some("operator")));
    assert_eq!(task["issue"]["number"], number, "{task}");
}
