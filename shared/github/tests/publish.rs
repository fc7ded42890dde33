//! Publication against the loopback GitHub (`agent-zero-fakes`): the exact
//! calls of a verified issue run, a second run, a refused run, a failed
//! publication and a rate limit; whose comment is ours (our login and the
//! subject's marker, never a marker alone); and, on every test, that refs
//! are only ever created fresh (never patched, forced or pointed at the
//! default branch) and that nothing but our own objects is written.

mod publish_support;

use agent_zero_contracts::{ChangeRisk, EvidenceBundle, PullRequestRef, Trigger, Verdict};
use agent_zero_evidence::PULL_REQUEST_MARKER;
use agent_zero_fakes::DEFAULT_ACTOR;
use agent_zero_github::publish::{
    CheckRunStatus, PublishFile, PublishStep, RetryAfter, StepOutcome, publish_check_run,
};
use agent_zero_github::{ApiConfig, GitHubClient};
use agent_zero_ports::Secret;
use publish_support::{
    Loopback, NOW_MS, OLD_PAGE, PERSONAL_TOKEN, Run, TOKEN, assert_only_allowed_writes, block_on, github, golden,
    marker_42, outcome,
};

const NEW_PAGE: &str = "pub fn next_page(items: &[u32], cursor: usize, limit: usize) -> &[u32] {\n    let start = cursor + 1;\n    &items[start..(start + limit).min(items.len())]\n}\n";
const NEW_TEST: &str = "#[test]\nfn no_item_twice() {}\n";
const BRANCH: &str = "agent-zero/42-task-0001";

fn verified_files() -> [PublishFile<'static>; 2] {
    [PublishFile::new("src/page.rs", NEW_PAGE.as_bytes()), PublishFile::new("tests/page.rs", NEW_TEST.as_bytes())]
}

#[test]
fn a_verified_issue_run_posts_one_comment_one_branch_one_pull_request() {
    let (gh, head) = github();
    let http = Loopback::new(&gh);
    let bundle = golden("verified");
    let files = verified_files();
    let report = Run::new(&bundle, &files).publish(&gh, &http);

    let log = http.take_log();
    let pinned: Vec<String> = [
        "GET /repos/acme/widgets/issues/42/comments?per_page=100",
        "POST /repos/acme/widgets/issues/42/comments",
        // Re-listed once to converge concurrent duplicates on one comment.
        "GET /repos/acme/widgets/issues/42/comments?per_page=100",
        "GET /repos/acme/widgets",
        "GET /repos/acme/widgets/git/ref/heads/main",
        &format!("GET /repos/acme/widgets/git/commits/{head}"),
        "POST /repos/acme/widgets/git/blobs",
        "POST /repos/acme/widgets/git/blobs",
        "POST /repos/acme/widgets/git/trees",
        &format!("GET /repos/acme/widgets/git/ref/heads/{BRANCH}"),
        "POST /repos/acme/widgets/git/commits",
        "POST /repos/acme/widgets/git/refs",
        "GET /repos/acme/widgets/pulls?head=acme%3Aagent-zero%2F42-task-0001&state=open",
        "POST /repos/acme/widgets/pulls",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    assert_eq!(log, pinned);

    assert_eq!(
        *outcome(&report, PublishStep::CheckRun),
        StepOutcome::Skipped { reason: "the run has no pull request head".into() }
    );
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Created { url: Some(_) }));
    assert_eq!(*outcome(&report, PublishStep::Branch), StepOutcome::Created { url: None });
    assert!(matches!(outcome(&report, PublishStep::PullRequest), StepOutcome::Created { url: Some(_) }));
    assert_eq!(report.retry_after, None);
    assert_eq!(report.no_pull_request_reason(), None);

    let comments = gh.comments("acme", "widgets", 42);
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0]["user"]["login"], DEFAULT_ACTOR);
    let body = comments[0]["body"].as_str().unwrap();
    assert!(body.starts_with(&format!("{}\n## Agent Zero", marker_42())), "{body}");
    assert!(body.contains("Issue confirmed"));
    assert!(body.len() <= agent_zero_evidence::GITHUB_TEXT_LIMIT);

    let pulls = gh.pulls("acme", "widgets");
    assert_eq!(pulls.len(), 1);
    let pull = &pulls[0];
    assert_eq!((pull["head"]["ref"].as_str(), pull["base"]["ref"].as_str()), (Some(BRANCH), Some("main")));
    assert_eq!(pull["title"], "Agent Zero: Pagination repeats the last item");
    assert!(pull["body"].as_str().unwrap().starts_with(PULL_REQUEST_MARKER));
    assert!(pull["body"].as_str().unwrap().contains("Closes #42"));
    let published = report.pull_request.as_ref().unwrap();
    assert_eq!(
        (published.number, published.url.as_str(), published.branch.as_str()),
        (pull["number"].as_u64().unwrap(), pull["html_url"].as_str().unwrap(), BRANCH)
    );

    // The branch holds exactly the change, on top of main; main is untouched.
    assert_eq!(gh.file("acme", "widgets", BRANCH, "src/page.rs").as_deref(), Some(NEW_PAGE));
    assert_eq!(gh.file("acme", "widgets", BRANCH, "tests/page.rs").as_deref(), Some(NEW_TEST));
    assert_eq!(gh.file("acme", "widgets", BRANCH, "README.md").as_deref(), Some("# widgets\n"));
    assert_eq!(gh.branch_sha("acme", "widgets", "main"), Some(head.clone()));
    assert_eq!(gh.file("acme", "widgets", "main", "src/page.rs").as_deref(), Some(OLD_PAGE));
    let commit = gh.calls_matching("POST", "/repos/acme/widgets/git/commits")[0].json().unwrap();
    assert_eq!(commit["parents"], serde_json::json!([head]));
    assert!(commit["message"].as_str().unwrap().ends_with("Agent-Zero-Task: task-0001"));

    // Every request was authenticated, and the token went nowhere else.
    for call in gh.calls() {
        assert_eq!(call.header("authorization"), Some(&*format!("Bearer {TOKEN}")));
        assert!(!call.body_text().contains(TOKEN) && !call.path.contains(TOKEN));
    }
    assert_only_allowed_writes(&gh);
}

#[test]
fn a_second_run_on_the_issue_edits_the_comment_and_a_retry_reuses_branch_and_pull_request() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    // Someone else quoting our marker, subject and all, is never mistaken for us.
    let impostor = gh.add_comment("acme", "widgets", 42, "mallory", &format!("{}\nfake", marker_42()));
    let bundle = golden("verified");
    let files = verified_files();
    Run::new(&bundle, &files).publish(&gh, &http);
    let ours = gh.comments("acme", "widgets", 42).into_iter().find(|c| c["user"]["login"] == DEFAULT_ACTOR).unwrap();
    http.take_log();

    // A later run on the same issue, inconclusive this time.
    let later = golden("inconclusive");
    let report = Run::new(&later, &[]).publish(&gh, &http);
    assert_eq!(
        http.take_log(),
        [
            "GET /repos/acme/widgets/issues/42/comments?per_page=100".to_owned(),
            format!("PATCH /repos/acme/widgets/issues/comments/{}", ours["id"]),
        ]
    );
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Updated { url: Some(_) }));
    let comments = gh.comments("acme", "widgets", 42);
    assert_eq!(comments.len(), 2, "the impostor and ours, no new one");
    let edited = comments.iter().find(|c| c["id"] == ours["id"]).unwrap();
    assert!(edited["body"].as_str().unwrap().contains("Issue inconclusive"));
    let untouched = comments.iter().find(|c| c["id"] == impostor).unwrap();
    assert_eq!(untouched["body"], format!("{}\nfake", marker_42()));
    assert_eq!(
        *outcome(&report, PublishStep::PullRequest),
        StepOutcome::Skipped { reason: "mode observe does not write".into() }
    );

    // The verified task published again (a retry): nothing is created twice.
    let report = Run::new(&bundle, &files).publish(&gh, &http);
    let log = http.take_log();
    assert!(
        !log.iter()
            .any(|c| c.ends_with("/git/commits") || c.ends_with("/git/refs") || c == "POST /repos/acme/widgets/pulls"),
        "{log:#?}"
    );
    assert_eq!(*outcome(&report, PublishStep::Branch), StepOutcome::Reused { url: None });
    assert!(matches!(outcome(&report, PublishStep::PullRequest), StepOutcome::Reused { url: Some(_) }));
    assert_eq!(report.pull_request.as_ref().unwrap().branch, BRANCH);
    assert_eq!(gh.pulls("acme", "widgets").len(), 1);
    assert_eq!(gh.comments("acme", "widgets", 42).len(), 2);
    assert_only_allowed_writes(&gh);
}

#[test]
fn a_refused_run_comments_and_opens_no_branch() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    let bundle = golden("refused");
    let report = Run::new(&bundle, &[]).publish(&gh, &http);
    assert_eq!(
        http.take_log(),
        [
            "GET /repos/acme/widgets/issues/42/comments?per_page=100",
            "POST /repos/acme/widgets/issues/42/comments",
            "GET /repos/acme/widgets/issues/42/comments?per_page=100",
        ]
    );
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Created { .. }));
    assert_eq!(report.outcome(PublishStep::Branch), None);
    let reason = report.no_pull_request_reason().unwrap();
    assert_eq!(reason, "the write was refused by policy (autofix-disabled)");
    assert!(gh.calls().iter().all(|c| !c.path.contains("/git/") && !c.path.contains("/pulls")));
    assert!(gh.pulls("acme", "widgets").is_empty());
    assert_only_allowed_writes(&gh);
}

#[test]
fn an_existing_branch_is_a_recorded_failure_never_overwritten() {
    let (gh, head) = github();
    let http = Loopback::new(&gh);
    // Someone (or something) already has the branch, with other content.
    let theirs = gh.set_file("acme", "widgets", BRANCH, "src/page.rs", "// not ours\n");
    let bundle = golden("verified");
    let files = verified_files();
    let report = Run::new(&bundle, &files).publish(&gh, &http);

    let reason = format!("branch {BRANCH} already exists with other content; it is never overwritten");
    assert_eq!(*outcome(&report, PublishStep::Branch), StepOutcome::Failed { reason: reason.clone() });
    assert_eq!(
        *outcome(&report, PublishStep::PullRequest),
        StepOutcome::Skipped { reason: "no branch was published".into() }
    );
    assert_eq!(report.pull_request, None);
    assert_eq!(report.no_pull_request_reason(), Some(reason));
    // The comment still went out: a failed publication does not fail the rest.
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Created { .. }));
    assert!(gh.calls_matching("POST", "/repos/acme/widgets/git/refs").is_empty());
    assert!(gh.calls_matching("POST", "/repos/acme/widgets/git/commits").is_empty());
    assert_eq!(gh.branch_sha("acme", "widgets", BRANCH), Some(theirs));
    assert_eq!(gh.branch_sha("acme", "widgets", "main"), Some(head));
    assert!(gh.pulls("acme", "widgets").is_empty());
    assert_only_allowed_writes(&gh);
}

#[test]
fn a_ref_created_concurrently_is_a_recorded_failure_without_force() {
    let (gh, head) = github();
    let http = Loopback::new(&gh);
    gh.fail_next(
        "POST",
        "/repos/acme/widgets/git/refs",
        422,
        &[],
        r#"{"message":"Reference already exists","documentation_url":"https://docs.github.com/rest","status":"422"}"#,
    );
    let bundle = golden("verified");
    let files = verified_files();
    let report = Run::new(&bundle, &files).publish(&gh, &http);
    assert_eq!(
        *outcome(&report, PublishStep::Branch),
        StepOutcome::Failed {
            reason: format!("branch {BRANCH} already exists (created concurrently); it is never overwritten")
        }
    );
    let log = http.take_log();
    let after_ref: Vec<&String> = log.iter().skip_while(|c| !c.ends_with("/git/refs")).collect();
    assert_eq!(after_ref, ["POST /repos/acme/widgets/git/refs"], "nothing after the refused ref: {log:#?}");
    assert_eq!(gh.calls_matching("POST", "/repos/acme/widgets/git/refs").len(), 1);
    assert!(gh.pulls("acme", "widgets").is_empty());
    assert_eq!(gh.branch_sha("acme", "widgets", "main"), Some(head));
    assert_only_allowed_writes(&gh);
}

#[test]
fn a_primary_rate_limit_stops_and_asks_to_retry_then_the_retry_completes() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    let reset = (NOW_MS / 1000 + 120).to_string();
    gh.fail_next(
        "POST",
        "/repos/acme/widgets/issues/42/comments",
        403,
        &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", &reset)],
        r#"{"message":"API rate limit exceeded for installation ID 7.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api","status":"403"}"#,
    );
    let bundle = golden("verified");
    let files = verified_files();
    let report = Run::new(&bundle, &files).publish(&gh, &http);
    assert_eq!(report.retry_after, Some(RetryAfter { ms: 120_000 }));
    assert_eq!(
        http.take_log(),
        ["GET /repos/acme/widgets/issues/42/comments?per_page=100", "POST /repos/acme/widgets/issues/42/comments"],
        "nothing after the rate limit"
    );
    assert_eq!(report.steps.len(), 1, "{report:#?}");
    assert_eq!(report.outcome(PublishStep::IssueComment), None);
    assert!(report.no_pull_request_reason().unwrap().contains("rate limit"));
    assert!(gh.comments("acme", "widgets", 42).is_empty());

    // Re-enqueued later: it completes, once.
    let report = Run::new(&bundle, &files).publish(&gh, &http);
    assert_eq!(report.retry_after, None);
    assert_eq!(gh.comments("acme", "widgets", 42).len(), 1);
    assert_eq!(gh.pulls("acme", "widgets").len(), 1);
    assert_only_allowed_writes(&gh);
}

#[test]
fn a_secondary_rate_limit_honours_retry_after() {
    let (gh, head) = github();
    let http = Loopback::new(&gh);
    gh.fail_next(
        "POST",
        "/repos/acme/widgets/git/blobs",
        429,
        &[("retry-after", "30")],
        r#"{"message":"You have exceeded a secondary rate limit."}"#,
    );
    let bundle = golden("verified");
    let files = verified_files();
    let report = Run::new(&bundle, &files).publish(&gh, &http);
    assert_eq!(report.retry_after, Some(RetryAfter { ms: 30_000 }));
    assert_eq!(http.take_log().last().unwrap(), "POST /repos/acme/widgets/git/blobs");
    assert_eq!(report.outcome(PublishStep::Branch), None);
    assert_eq!(gh.branch_sha("acme", "widgets", "main"), Some(head));
    assert_only_allowed_writes(&gh);
}

#[test]
fn a_blocking_check_run_fails_on_a_finding_left_unfixed() {
    // A review confirmed a finding and changed nothing: advisory by
    // default (neutral passes a required check), failure when blocking.
    for (blocking, expected) in [(false, "neutral"), (true, "failure")] {
        let (gh, head) = github();
        let http = Loopback::new(&gh);
        let bundle = golden("review-whole");
        let mut run = Run::new(&bundle, &[]);
        run.head_sha = Some(&head);
        run.policy.blocking_check_run = blocking;
        run.publish(&gh, &http);
        let runs = gh.check_runs("acme", "widgets");
        assert_eq!(runs[0]["conclusion"], expected, "blocking: {blocking}");
    }
}

#[test]
fn check_runs_are_created_once_per_task_and_then_updated() {
    let (gh, head) = github();
    let http = Loopback::new(&gh);
    let bundle = golden("refused");
    let mut run = Run::new(&bundle, &[]);
    run.head_sha = Some(&head);
    let report = run.publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::CheckRun), StepOutcome::Created { url: Some(_) }));
    let log = http.take_log();
    assert_eq!(
        log[..2],
        [
            format!(
                "GET /repos/acme/widgets/commits/{head}/check-runs?check_name=Agent%20Zero&filter=all&per_page=100"
            ),
            "POST /repos/acme/widgets/check-runs".to_owned(),
        ]
    );
    let runs = gh.check_runs("acme", "widgets");
    assert_eq!(runs.len(), 1);
    let id = runs[0]["id"].clone();
    assert_eq!(
        (runs[0]["name"].as_str(), runs[0]["external_id"].as_str(), runs[0]["head_sha"].as_str()),
        (Some("Agent Zero"), Some("task-0005"), Some(head.as_str()))
    );
    assert_eq!((runs[0]["status"].as_str(), runs[0]["conclusion"].as_str()), (Some("completed"), Some("neutral")));

    // The same task reports again: the run is edited, not duplicated.
    let report = run.publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::CheckRun), StepOutcome::Updated { .. }));
    assert_eq!(http.take_log()[1], format!("PATCH /repos/acme/widgets/check-runs/{id}"));
    assert_eq!(gh.check_runs("acme", "widgets").len(), 1);

    // Another task on the same head gets its own run.
    let other = golden("verified");
    let mut second = Run::new(&other, &[]);
    second.head_sha = Some(&head);
    second.policy.validation_comment = false;
    let report = second.publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::CheckRun), StepOutcome::Created { .. }));
    let runs = gh.check_runs("acme", "widgets");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["conclusion"], "success");
    // Without the changed files' contents the verified run opens nothing.
    assert_eq!(
        report.no_pull_request_reason().as_deref(),
        Some("the content of changed file `src/page.rs` was not provided")
    );
    assert_eq!(
        *outcome(&report, PublishStep::IssueComment),
        StepOutcome::Skipped { reason: "issues.validationComment is off".into() }
    );
    assert_only_allowed_writes(&gh);
}

#[test]
fn when_the_listings_fail_the_adapter_still_creates_once() {
    // GitHub refuses the check-run and pull-request listings: the adapter
    // creates, and GitHub's own duplicate refusal keeps a second pull
    // request out.
    let (gh, head) = github();
    let http = Loopback::new(&gh);
    let bundle = golden("verified");
    let files = verified_files();
    let mut run = Run::new(&bundle, &files);
    run.head_sha = Some(&head);
    let refuse_listings = || {
        let failed = r#"{"message":"Server Error"}"#;
        gh.fail_next("GET", &format!("/repos/acme/widgets/commits/{head}/check-runs"), 422, &[], failed);
        gh.fail_next("GET", "/repos/acme/widgets/pulls", 404, &[], r#"{"message":"Not Found"}"#);
    };
    refuse_listings();
    let first = run.publish(&gh, &http);
    assert!(matches!(outcome(&first, PublishStep::CheckRun), StepOutcome::Created { .. }));
    assert!(matches!(outcome(&first, PublishStep::PullRequest), StepOutcome::Created { .. }));
    refuse_listings();
    let again = run.publish(&gh, &http);
    assert_eq!(*outcome(&again, PublishStep::Branch), StepOutcome::Reused { url: None });
    assert_eq!(
        *outcome(&again, PublishStep::PullRequest),
        StepOutcome::Skipped { reason: format!("an open pull request for {BRANCH} already exists") }
    );
    assert_eq!(gh.pulls("acme", "widgets").len(), 1);
    assert_only_allowed_writes(&gh);
}

#[test]
fn review_feedback_on_a_pull_request_hears_the_verdict_in_its_conversation() {
    let (gh, head) = github();
    let http = Loopback::new(&gh);
    let mut bundle = golden("refused");
    bundle.trigger = Trigger::Feedback;
    bundle.issue = None;
    bundle.verdict = Verdict::Rejected;
    bundle.pull_request = Some(PullRequestRef {
        owner: "acme".into(),
        repo: "widgets".into(),
        number: 7,
        head_sha: head.clone(),
        base_sha: None,
    });
    let mut run = Run::new(&bundle, &[]);
    run.head_sha = Some(&head);
    let report = run.publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Created { .. }), "{report:?}");
    let comments = gh.comments("acme", "widgets", 7);
    assert_eq!(comments.len(), 1, "one comment on the pull request's conversation");
    let body = comments[0]["body"].as_str().unwrap();
    assert!(body.contains("Claim not confirmed"), "{body}");
    // Feedback never becomes a new branch or pull request.
    assert!(gh.calls().iter().all(|c| !c.path.contains("/git/") && !c.path.contains("/pulls")));
    assert_only_allowed_writes(&gh);

    // A pull request run that is not answering feedback (proactive review)
    // reports through its check run only.
    let (gh, head) = github();
    let http = Loopback::new(&gh);
    bundle.trigger = Trigger::Proactive;
    let mut run = Run::new(&bundle, &[]);
    run.head_sha = Some(&head);
    let report = run.publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Skipped { .. }), "{report:?}");
    assert!(gh.comments("acme", "widgets", 7).is_empty());
}

#[test]
fn runs_that_must_not_open_a_pull_request_do_not() {
    type Edit = fn(&mut EvidenceBundle);
    let cases: [(&str, Edit, &str); 4] = [
        (
            "verified",
            |b| b.finding.as_mut().unwrap().claim.change_risk = ChangeRisk::HighImpact,
            "a high-impact change is left to a human",
        ),
        ("flag-disagrees", |_| {}, "the change is not verified"),
        ("failed-after-repairs", |_| {}, "the run ended failed, not completed"),
        ("needs-human", |_| {}, "the run ended needs-human, not completed"),
    ];
    for (name, edit, expected) in cases {
        let (gh, _) = github();
        let http = Loopback::new(&gh);
        let mut bundle = golden(name);
        edit(&mut bundle);
        let files = verified_files();
        let files = &files[..bundle.changed_files.len().min(2)];
        let report = Run::new(&bundle, files).publish(&gh, &http);
        assert_eq!(report.no_pull_request_reason().as_deref(), Some(expected), "{name}");
        assert!(gh.calls().iter().all(|c| !c.path.contains("/git/") && !c.path.contains("/pulls")), "{name}");
        // Each of these reached a verdict: the issue hears about it once.
        assert_eq!(gh.comments("acme", "widgets", 42).len(), 1, "{name}");
        assert_only_allowed_writes(&gh);
    }
}

#[test]
fn a_run_that_failed_before_a_verdict_posts_nothing() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    let mut bundle = golden("empty");
    bundle.issue = golden("verified").issue;
    let report = Run::new(&bundle, &[]).publish(&gh, &http);
    assert!(http.take_log().is_empty(), "no request at all");
    assert!(gh.calls().is_empty());
    assert_eq!(
        *outcome(&report, PublishStep::IssueComment),
        StepOutcome::Skipped { reason: "the run ended before a verdict".into() }
    );
    assert!(report.no_pull_request_reason().is_some());
}

#[test]
fn our_comment_is_found_on_a_later_page() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    let bundle = golden("inconclusive");
    Run::new(&bundle, &[]).publish(&gh, &http);
    for i in 0..150 {
        gh.add_comment("acme", "widgets", 42, "octocat", &format!("me too {i}"));
    }
    http.take_log();
    let report = Run::new(&bundle, &[]).publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Updated { .. }), "{report:#?}");
    assert_eq!(gh.comments("acme", "widgets", 42).len(), 151);
    // Ours is the first comment, so page 1 already has it.
    assert_eq!(http.take_log().len(), 2);

    // A comment of ours that is not first: seeded after 150 others by a
    // fresh fake, found by following `Link: rel="next"`.
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    for i in 0..150 {
        gh.add_comment("acme", "widgets", 42, "octocat", &format!("me too {i}"));
    }
    let id = gh.add_comment("acme", "widgets", 42, DEFAULT_ACTOR, &format!("{}\nold", marker_42()));
    let report = Run::new(&bundle, &[]).publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Updated { .. }));
    let log = http.take_log();
    assert_eq!(log.len(), 3, "{log:#?}");
    assert!(log[1].contains("page=2"), "{log:#?}");
    assert_eq!(log[2], format!("PATCH /repos/acme/widgets/issues/comments/{id}"));
    assert_only_allowed_writes(&gh);
}

/// GitHub lets only an App's installation write check runs; a deployment
/// with a person's token (`GITHUB_TOKEN`) publishes a commit status on the
/// head instead, with the check run's name as its context, and no check-run
/// call at all. Its advisory outcome is named in the description.
#[test]
fn a_token_deployment_publishes_a_commit_status_not_a_check_run() {
    let (gh, head) = github();
    let http = Loopback::new(&gh);
    for (bundle, state, described) in [("refused", "success", "Advisory: "), ("verified", "success", "Verified")] {
        let bundle = golden(bundle);
        let mut run = Run::new(&bundle, &[]);
        run.head_sha = Some(&head);
        run.personal = true;
        run.policy.validation_comment = false;
        let report = run.publish(&gh, &http);
        assert!(matches!(outcome(&report, PublishStep::CheckRun), StepOutcome::Created { url: None }), "{report:#?}");
        let statuses = gh.statuses("acme", "widgets");
        let status = statuses.last().expect("a commit status");
        assert_eq!(
            (status["state"].as_str(), status["context"].as_str(), status["sha"].as_str()),
            (Some(state), Some("Agent Zero"), Some(head.as_str())),
            "{status}"
        );
        let description = status["description"].as_str().unwrap_or_default();
        assert!(description.starts_with(described) && description.chars().count() <= 140, "{description}");
    }
    assert!(gh.check_runs("acme", "widgets").is_empty());
    assert!(gh.calls().iter().all(|call| !call.path.contains("check-runs")), "no check-run call with a token");
    assert_only_allowed_writes(&gh);

    // The loopback GitHub refuses a check run to that token, as GitHub does.
    let config = ApiConfig::new(Some(&gh.url()), "agent-zero-edge-test").unwrap();
    let client = GitHubClient::new(&http, &config).with_installation_token(Secret::new(PERSONAL_TOKEN));
    let refused = block_on(publish_check_run(
        &client,
        "acme",
        "widgets",
        &head,
        "task-0009",
        CheckRunStatus::InProgress,
        "t",
        "s",
        NOW_MS,
    ));
    let Ok(StepOutcome::Failed { reason }) = refused else { panic!("{refused:?}") };
    assert!(reason.contains("403") || reason.contains("GitHub App"), "{reason}");
}

#[test]
fn a_check_run_opened_when_the_task_starts_is_concluded_in_place() {
    let (gh, head) = github();
    let http = Loopback::new(&gh);
    let config = ApiConfig::new(Some(&gh.url()), "agent-zero-edge-test").unwrap();
    let client = GitHubClient::new(&http, &config).with_installation_token(Secret::new(TOKEN));
    let started = block_on(publish_check_run(
        &client,
        "acme",
        "widgets",
        &head,
        "task-0001",
        CheckRunStatus::InProgress,
        "Agent Zero is working",
        "Validating the claim.",
        NOW_MS,
    ));
    assert!(matches!(started, Ok(StepOutcome::Created { url: Some(_) })), "{started:?}");
    let runs = gh.check_runs("acme", "widgets");
    assert_eq!((runs.len(), runs[0]["status"].as_str()), (1, Some("in_progress")));
    assert!(runs[0]["conclusion"].is_null());

    let bundle = golden("verified");
    let mut run = Run::new(&bundle, &[]);
    run.head_sha = Some(&head);
    run.policy.validation_comment = false;
    let report = run.publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::CheckRun), StepOutcome::Updated { .. }));
    let runs = gh.check_runs("acme", "widgets");
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0]["status"].as_str(), runs[0]["conclusion"].as_str()), (Some("completed"), Some("success")));
    assert!(runs[0]["output"]["title"].as_str().unwrap().starts_with("Verified"), "{}", runs[0]["output"]);

    // A bad head sha is refused before any request; a rate limit is `Err`.
    let bad = block_on(publish_check_run(
        &client,
        "acme",
        "widgets",
        "main",
        "t",
        CheckRunStatus::InProgress,
        "t",
        "s",
        NOW_MS,
    ));
    assert!(matches!(bad, Ok(StepOutcome::Failed { .. })));
    gh.fail_next("POST", "/repos/acme/widgets/check-runs", 429, &[("retry-after", "5")], "{}");
    let limited = block_on(publish_check_run(
        &client,
        "acme",
        "widgets",
        &head,
        "t",
        CheckRunStatus::InProgress,
        "t",
        "s",
        NOW_MS,
    ));
    assert_eq!(limited, Err(RetryAfter { ms: 5_000 }));
    assert_only_allowed_writes(&gh);
}
