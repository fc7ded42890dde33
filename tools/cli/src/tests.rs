//! Argument handling and output, without a deployment (the end-to-end
//! cases in tests/e2e/cases/cli.rs run every command against real hosts).

use std::path::Path;

use agent_zero_agent::Policy;

use super::*;

/// Runs `args` in `cwd`: (status, stdout, stderr).
fn cli(args: &[&str], cwd: &Path) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    // No saved login: the developer's own is not read.
    let args = std::iter::once("agent-zero").chain(args.iter().copied());
    let status = run_with(&Env::default(), args, cwd, &mut out, &mut err);
    (status, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

#[test]
fn usage_errors_name_the_argument_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    // Clap's usage status would be 2, which here means "a person decides".
    let (status, _, err) = cli(&["doctor", "--frobnicate"], dir.path());
    assert_eq!(status, EXIT_FAILED, "{err}");
    assert!(err.contains("--frobnicate"), "{err}");
    let (status, _, err) =
        cli(&["tasks", "--url", "http://127.0.0.1:9", "evidence", "t1", "--format", "pdf"], dir.path());
    assert_eq!(status, EXIT_FAILED);
    assert!(err.contains("--format") && err.contains("md"), "{err}");
    let (status, _, err) = cli(&["frobnicate"], dir.path());
    assert_eq!(status, EXIT_FAILED);
    assert!(err.contains("frobnicate"), "{err}");
    let (status, out, _) = cli(&["--help"], dir.path());
    assert_eq!(status, EXIT_OK);
    for command in ["init", "doctor", "tasks", "replay", "review", "fix", "login", "logout"] {
        assert!(out.contains(command), "{out}");
    }
}

#[test]
fn bad_urls_and_tokens_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    for (url, needle) in
        [("ftp://x", "http:// or https://"), ("https://u:p@host", "credentials"), ("https://h/?q", "plain")]
    {
        let (status, _, err) = cli(&["tasks", "--url", url, "list"], dir.path());
        assert_eq!(status, EXIT_FAILED, "{url}");
        assert!(err.contains("--url") && err.contains(needle), "{url}: {err}");
        assert!(!err.contains("u:p"), "{err}");
    }
    let (status, _, err) = cli(&["tasks", "--url", "http://127.0.0.1:9", "--token", "a b", "list"], dir.path());
    assert_eq!(status, EXIT_FAILED);
    assert!(err.contains("--token") && !err.contains("a b"), "{err}");
}

#[test]
fn an_unreachable_deployment_fails_doctor_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let (status, out, _) = cli(&["doctor", "--url", &url, "--json"], dir.path());
    assert_eq!(status, EXIT_FAILED, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["checks"][0]["name"], "reachable");
    assert_eq!(report["checks"][0]["status"], "fail");
    assert!(report["checks"][0]["fix"].as_str().unwrap().contains(&url), "{out}");
}

#[test]
fn init_writes_a_policy_the_parser_accepts_with_the_discovered_checks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    std::fs::write(dir.path().join("package.json"), r#"{"scripts":{"lint":"eslint .","test":"vitest"}}"#).unwrap();
    std::fs::write(dir.path().join("pnpm-lock.yaml"), "").unwrap();
    let (status, out, err) = cli(&["init"], dir.path());
    assert_eq!(status, EXIT_OK, "{err}");
    let text = std::fs::read_to_string(dir.path().join(".agent-zero.yml")).unwrap();
    let policy = Policy::parse(&text).expect("the written file parses");
    let checks: Vec<Vec<String>> = policy.checks.iter().map(|c| c.argv.clone()).collect();
    assert_eq!(checks, [vec!["cargo", "test", "--locked"], vec!["pnpm", "run", "lint"], vec!["pnpm", "run", "test"]]);
    assert_eq!(checks, init::detect_checks(dir.path()).unwrap(), "the same discovery the deployment runs");
    assert!(policy.warnings().is_empty());
    assert!(text.lines().filter(|l| l.trim_start().starts_with('#')).count() > 20, "commented");
    assert!(out.contains("cargo test --locked") && out.contains("Cloudflare") && out.contains("Spin"), "{out}");
    assert!(out.contains("wrangler deploy") && out.contains("agent-zero doctor"), "{out}");
    // Refuses to overwrite, then replaces with --force.
    std::fs::write(dir.path().join(".agent-zero.yml"), "mode: fix\n").unwrap();
    let (status, _, err) = cli(&["init"], dir.path());
    assert_eq!(status, EXIT_FAILED);
    assert!(err.contains("already exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join(".agent-zero.yml")).unwrap(), "mode: fix\n");
    assert_eq!(cli(&["init", "--force"], dir.path()).0, EXIT_OK);
    assert_eq!(std::fs::read_to_string(dir.path().join(".agent-zero.yml")).unwrap(), text);
}

#[test]
fn init_in_a_repository_without_manifests_says_to_list_a_check() {
    let dir = tempfile::tempdir().unwrap();
    let (status, out, _) = cli(&["init"], dir.path());
    assert_eq!(status, EXIT_OK);
    assert!(out.contains("No checks detected"), "{out}");
    let policy = Policy::parse(&std::fs::read_to_string(dir.path().join(".agent-zero.yml")).unwrap()).unwrap();
    assert!(policy.checks.is_empty());
    assert_eq!(policy, Policy::default(), "the written defaults are the parser's defaults");
}

#[test]
fn odd_arguments_are_quoted_so_they_read_back_the_same() {
    let checks =
        vec![vec!["run".to_owned(), "it's".to_owned(), "true".to_owned(), "1.5".to_owned(), "./...".to_owned()]];
    let policy = Policy::parse(&init::policy_text(&checks)).unwrap();
    assert_eq!(policy.checks[0].argv, checks[0]);
}

#[test]
fn the_first_difference_names_the_byte_and_both_lines() {
    assert_eq!(replay::first_difference(b"a\nb\n", b"a\nb\n"), None);
    let d = replay::first_difference(b"one\nexit 0\nend\n", b"one\nexit 1\nend\n").unwrap();
    assert!(d.starts_with("at byte 9 (line 2;"), "{d}");
    assert!(d.contains("stored:   exit 0") && d.contains("replayed: exit 1"), "{d}");
    let d = replay::first_difference(b"abc", b"abcdef").unwrap();
    assert!(d.starts_with("at byte 3 (line 1; 3 bytes stored, 6 replayed)"), "{d}");
    let d = replay::first_difference(b"x\x1b[2J", b"y").unwrap();
    assert!(!d.contains('\u{1b}'), "{d}");
}

#[test]
fn task_output_keeps_untrusted_text_off_the_terminal() {
    let page = serde_json::json!({
        "items": [{ "id": "gh-1", "state": "completed", "verdict": "accepted", "verified": true,
                    "repository": "acme/calc", "title": "evil\u{1b}]0;pwned\u{7}" }],
        "nextCursor": "c2"
    });
    let text = tasks::list_text(&page);
    assert_eq!(text, "gh-1  completed  accepted verified  acme/calc  evil?]0;pwned?\nmore: --cursor c2\n");
    assert_eq!(tasks::list_text(&serde_json::json!({ "items": [] })), "no tasks\n");
    let task = serde_json::json!({
        "id": "gh-1", "state": "failed", "trigger": "issue", "repository": "acme/calc", "source": "github:d1", "mode": "fix",
        "events": [{ "timestamp": "2026-01-01T00:00:00.000Z", "state": "failed", "message": "sandbox\nunreachable" }],
        "failure": "sandbox unreachable", "result": null
    });
    let shown = tasks::show_text(&task);
    assert!(shown.starts_with("gh-1  failed  issue on acme/calc (github:d1, mode fix)\n"), "{shown}");
    assert!(
        shown.contains("failed       sandbox?unreachable\n") && shown.contains("failure: sandbox unreachable"),
        "{shown}"
    );
}

#[test]
fn watch_exits_as_the_reference_0_completed_1_failed_or_refused_2_needs_human() {
    assert_eq!(tasks::watch_status("completed"), crate::EXIT_OK);
    assert_eq!(tasks::watch_status("failed"), crate::EXIT_FAILED);
    // The policy declined it: nothing asked for ran.
    assert_eq!(tasks::watch_status("ignored"), crate::EXIT_FAILED);
    assert_eq!(tasks::watch_status("needs-human"), crate::EXIT_NEEDS_HUMAN);
    assert_eq!((crate::EXIT_OK, crate::EXIT_FAILED, crate::EXIT_NEEDS_HUMAN), (0, 1, 2));
}

#[test]
fn watch_prints_each_new_event_once_and_the_cost() {
    let event =
        |state: &str, message: &str| serde_json::json!({ "state": state, "message": message, "timestamp": "t" });
    let mut task = serde_json::json!({ "id": "t1", "state": "planning", "events": [event("queued", "queued")] });
    let (first, shown) = tasks::progress(&task, 0, std::time::Duration::from_secs(1));
    assert_eq!((first.as_str(), shown), ("[   1 s] queued       queued\n", 1));
    task["events"].as_array_mut().unwrap().push(event("planning", "asking the model\u{1b}[2J"));
    let (second, shown) = tasks::progress(&task, shown, std::time::Duration::from_secs(12));
    // Only the new event; terminal escapes in untrusted text are not passed on.
    assert_eq!(shown, 2);
    assert!(
        second.starts_with("[  12 s] planning") && !second.contains('\u{1b}') && !second.contains("queued"),
        "{second:?}"
    );
    assert_eq!(tasks::progress(&task, shown, std::time::Duration::ZERO).0, "");

    let cost = serde_json::json!({
        "ticks": 14, "storageOps": 237, "kvAtomic": 40, "leaseOps": 14, "subrequests": 33, "githubRequests": 20,
        "modelRequests": 2, "sandboxRequests": 11, "sandboxMs": 1580, "modelInputTokens": 1900,
        "modelOutputTokens": 344, "modelCostUsd": 0.01086,
    });
    let line = tasks::cost_text(&cost).unwrap();
    assert_eq!(
        line,
        "cost: 14 ticks, 237 storage ops (40 atomic, 14 lease), 33 subrequests (20 GitHub, 2 model, 11 sandbox), \
         sandbox 1.6 s, model 1900 in / 344 out tokens, $0.0109\n"
    );
    assert_eq!(tasks::cost_text(&serde_json::Value::Null), None);
    task["cost"] = cost;
    assert!(tasks::show_text(&task).contains("cost: 14 ticks"));
}
