//! A review-feedback run's verified change on Gitea, against the loopback
//! Gitea (held to Gitea's swagger): published as one commit on a side
//! branch made from the pull request's head, named in the thread answer;
//! a retry reuses it; a branch of that name holding anything else is never
//! forced; a run whose change may not be written (observe mode,
//! unverified) writes no branch; a change to an executable file is left
//! to a person.

use agent_zero_contracts::{
    EvidenceBundle, FeedbackItem, FeedbackKind, PullRequestRef, RunMode, TreeFile, Trigger, UntrustedText,
};
use agent_zero_evidence::RenderOptions;
use agent_zero_fakes::{FakeGitea, LoopbackHttp};
use agent_zero_forges::gitea::api::{GiteaApi, GiteaClient};
use agent_zero_forges::gitea::publish::{GiteaReport, publish};
use agent_zero_forges::publication::{PublishFile, PublishPolicy, PublishRequest, PublishStep, StepOutcome};
use agent_zero_ports::{Secret, block_on};

mod support;

const TOKEN: &str = "gitea-side-branch-token-7c3d";
const BOT: &str = "zero-bot";
const OLD_PAGE: &str = "pub fn next_page() {}\n";
const HEAD_PAGE: &str = "pub fn next_page() { repeat() }\n";
const NEW_PAGE: &str = "pub fn next_page() { /* fixed */ }\n";
const NEW_TEST: &str = "#[test]\nfn no_item_twice() {}\n";
/// The side branch of pull request 1 (the first the fake numbers) for the
/// golden bundle's task.
const SIDE: &str = "agent-zero/pr-1-task-0001";

/// A repository with a pull request (`review-1` into `main`) whose head
/// changed `src/page.rs`, and the feedback run on it: the golden verified
/// bundle, triggered by a reviewer's line comment.
struct World {
    gitea: FakeGitea,
    head: String,
    base: String,
    number: u64,
    bundle: EvidenceBundle,
    feedback: Vec<FeedbackItem>,
}

fn seeded() -> World {
    let gitea = FakeGitea::start();
    let base = gitea.add_repo("acme", "widgets", "main", &[("README.md", "# widgets\n"), ("src/page.rs", OLD_PAGE)]);
    gitea.add_user_token(BOT, TOKEN, &["write:repository", "write:issue", "read:user"]);
    gitea.set_permission("acme", "widgets", BOT, "write");
    let head = gitea.set_file("acme", "widgets", "review-1", "src/page.rs", HEAD_PAGE);
    let number = gitea.add_pull("acme", "widgets", "review-1", "main", "maintainer", "Fix paging");
    assert_eq!(number, 1, "SIDE names pull request 1");
    let (_, ids) = gitea.add_review(
        "acme",
        "widgets",
        number,
        "maintainer",
        "COMMENT",
        &[("src/page.rs", 1, "This repeats the last item.")],
    );
    let mut bundle = support::golden_bundle();
    bundle.trigger = Trigger::Feedback;
    bundle.issue = None;
    bundle.pull_request = Some(PullRequestRef {
        owner: "acme".into(),
        repo: "widgets".into(),
        number,
        head_sha: head.clone(),
        base_sha: Some(base.clone()),
    });
    let feedback = vec![FeedbackItem {
        id: format!("review-comment:{}", ids[0]),
        kind: FeedbackKind::ReviewComment,
        body: UntrustedText::capped("This repeats the last item.", 1_000),
        author: "maintainer".into(),
        requested_changes: false,
        path: Some("src/page.rs".into()),
        line: Some(1),
    }];
    World { gitea, head, base, number, bundle, feedback }
}

fn run(world: &World, bundle: &EvidenceBundle) -> GiteaReport {
    let files =
        [PublishFile::new("src/page.rs", NEW_PAGE.as_bytes()), PublishFile::new("tests/page.rs", NEW_TEST.as_bytes())];
    let result = support::result_of(bundle);
    let token = Secret::new(TOKEN);
    let api = GiteaApi::new(&world.gitea.url(), 10_000);
    let http = LoopbackHttp::new();
    let client = GiteaClient::new(&http, &api, Some(&token));
    let secrets = [TOKEN];
    let request = PublishRequest {
        bundle,
        result: &result,
        task_id: &bundle.task_id,
        owner: "acme",
        repo: "widgets",
        default_branch: None,
        head_sha: Some(&world.head),
        issue: None,
        policy: PublishPolicy::default(),
        files: &files,
        feedback: &world.feedback,
        bot_login: Some(BOT),
        render: RenderOptions { secrets: &secrets, ..RenderOptions::default() },
        now_ms: 1_700_000_000_000,
    };
    block_on(publish(&client, &request))
}

fn outcome(report: &GiteaReport, step: PublishStep) -> StepOutcome {
    report.report.outcome(step).cloned().unwrap_or_else(|| panic!("no {step:?} step: {:?}", report.report))
}

/// Every write so far, `METHOD path`.
fn writes(gitea: &FakeGitea) -> Vec<String> {
    gitea.calls().iter().filter(|c| c.method != "GET").map(|c| format!("{} {}", c.method, c.path)).collect()
}

/// The text of our one answer in the reviewer's conversation.
fn answer(world: &World) -> String {
    let ours: Vec<_> = world
        .gitea
        .reviews("acme", "widgets", world.number)
        .into_iter()
        .filter(|r| r["user"]["login"] == BOT)
        .collect();
    assert_eq!(ours.len(), 1, "{ours:?}");
    ours[0]["comments"][0]["body"].as_str().unwrap().to_owned()
}

/// Commit `sha` as Gitea shows it: its parents and its message.
fn commit(world: &World, sha: &str) -> (Vec<String>, String) {
    let token = Secret::new(TOKEN);
    let api = GiteaApi::new(&world.gitea.url(), 10_000);
    let http = LoopbackHttp::new();
    let client = GiteaClient::new(&http, &api, Some(&token));
    let shown = block_on(client.commit_with_message("acme", "widgets", sha)).unwrap();
    (shown.parents.into_iter().map(|p| p.sha).collect(), shown.commit.message)
}

#[test]
fn a_verified_change_is_one_commit_on_a_side_branch_from_the_head_named_in_the_answer_and_a_retry_reuses_it() {
    let world = seeded();
    let gitea = &world.gitea;
    let first = run(&world, &world.bundle);
    assert_eq!(first.retry, None, "{:?}", first.report);
    let url = format!("{}/acme/widgets/src/branch/{SIDE}", gitea.url());
    assert_eq!(outcome(&first, PublishStep::SideBranch), StepOutcome::Created { url: Some(url.clone()) });
    assert!(matches!(outcome(&first, PublishStep::ThreadAnswer), StepOutcome::Created { .. }), "{:?}", first.report);
    // No pull request: the run has no issue; the author takes the commit.
    assert!(matches!(outcome(&first, PublishStep::PullRequest), StepOutcome::Skipped { .. }), "{:?}", first.report);
    assert_eq!(first.report.outcome(PublishStep::Branch), None);

    // One commit of the run's files, on the head the run checked.
    let tip = gitea.branch_sha("acme", "widgets", SIDE).expect("the side branch");
    assert_eq!(gitea.file("acme", "widgets", SIDE, "src/page.rs").as_deref(), Some(NEW_PAGE));
    assert_eq!(gitea.file("acme", "widgets", SIDE, "tests/page.rs").as_deref(), Some(NEW_TEST));
    assert_eq!(gitea.file("acme", "widgets", SIDE, "README.md").as_deref(), Some("# widgets\n"));
    let (parents, message) = commit(&world, &tip);
    assert_eq!(parents, [world.head.as_str()]);
    assert!(message.ends_with("\n\nAgent-Zero-Task: task-0001"), "{message}");
    // The pull request's branch and the default branch are untouched.
    assert_eq!(gitea.branch_sha("acme", "widgets", "review-1").as_deref(), Some(world.head.as_str()));
    assert_eq!(gitea.branch_sha("acme", "widgets", "main").as_deref(), Some(world.base.as_str()));

    // The answer says where the change is.
    let text = answer(&world);
    let said =
        format!("Gitea has no suggestion blocks: the verified change is commit {tip} on branch `{SIDE}` ({url}).");
    assert!(text.contains(&said), "{text}");
    assert!(!text.contains("in the evidence, not here"), "{text}");
    let repo = "/api/v1/repos/acme/widgets";
    let expected = [
        format!("POST {repo}/statuses/{}", world.head),
        format!("POST {repo}/issues/{}/comments", world.number),
        format!("POST {repo}/branches"),
        format!("POST {repo}/contents"),
        format!("POST {repo}/pulls/{}/reviews", world.number),
    ];
    assert_eq!(writes(gitea), expected);

    // Published again: the branch is found, never forced, no second commit.
    let again = run(&world, &world.bundle);
    assert_eq!(again.retry, None, "{:?}", again.report);
    assert_eq!(outcome(&again, PublishStep::SideBranch), StepOutcome::Reused { url: Some(url) });
    assert!(matches!(outcome(&again, PublishStep::ThreadAnswer), StepOutcome::Reused { .. }), "{:?}", again.report);
    assert_eq!(gitea.branch_sha("acme", "widgets", SIDE).as_deref(), Some(tip.as_str()));
    let new_writes = writes(gitea).split_off(expected.len());
    assert_eq!(new_writes, [format!("POST {repo}/statuses/{}", world.head)], "only the status again");
    assert_eq!(gitea.violations(), Vec::<String>::new());
}

#[test]
fn a_branch_an_earlier_attempt_made_at_the_head_gets_the_commit() {
    let world = seeded();
    let gitea = &world.gitea;
    // Made and left at the head (the attempt stopped before its commit).
    gitea.fail_next("POST", "/api/v1/repos/acme/widgets/contents", 503, &[], "{\"message\":\"maintenance\"}");
    let first = run(&world, &world.bundle);
    assert!(first.retry.as_deref().is_some_and(|r| r.contains("503")), "{:?}", first.report);
    assert!(matches!(outcome(&first, PublishStep::SideBranch), StepOutcome::Failed { .. }), "{:?}", first.report);
    assert_eq!(gitea.branch_sha("acme", "widgets", SIDE).as_deref(), Some(world.head.as_str()));
    // The answer, posted once and never edited, waits for the branch.
    assert!(matches!(outcome(&first, PublishStep::ThreadAnswer), StepOutcome::Skipped { .. }), "{:?}", first.report);
    let ours = |gitea: &FakeGitea| {
        gitea.reviews("acme", "widgets", world.number).into_iter().filter(|r| r["user"]["login"] == BOT).count()
    };
    assert_eq!(ours(gitea), 0);
    let again = run(&world, &world.bundle);
    assert_eq!(again.retry, None, "{:?}", again.report);
    assert!(matches!(outcome(&again, PublishStep::SideBranch), StepOutcome::Created { .. }), "{:?}", again.report);
    assert_eq!(gitea.file("acme", "widgets", SIDE, "src/page.rs").as_deref(), Some(NEW_PAGE));
    let tip = gitea.branch_sha("acme", "widgets", SIDE).unwrap();
    assert_eq!(commit(&world, &tip).0, [world.head.as_str()], "one commit on the head");
    assert!(answer(&world).contains(&format!("commit {tip} on branch `{SIDE}`")), "{}", answer(&world));
    assert_eq!(gitea.violations(), Vec::<String>::new());
}

#[test]
fn a_branch_of_that_name_holding_anything_else_fails_the_step_and_is_never_forced() {
    let world = seeded();
    let gitea = &world.gitea;
    let foreign = gitea.set_file("acme", "widgets", SIDE, "src/page.rs", "someone else's\n");
    let report = run(&world, &world.bundle);
    let StepOutcome::Failed { reason } = outcome(&report, PublishStep::SideBranch) else {
        panic!("{:?}", report.report)
    };
    assert!(reason.contains(SIDE) && reason.contains("never overwritten"), "{reason}");
    assert_eq!(gitea.branch_sha("acme", "widgets", SIDE).as_deref(), Some(foreign.as_str()), "not forced");
    // The answer keeps today's text and says why there is no side branch.
    let text = answer(&world);
    assert!(text.contains("the proposed change is in the evidence, not here. No side branch: branch "), "{text}");
    assert!(text.contains(SIDE), "{text}");
    assert!(!writes(gitea).iter().any(|w| w.ends_with("/branches") || w.ends_with("/contents")), "{:?}", writes(gitea));

    // A branch holding the run's content, but not this task's commit, is
    // not ours either.
    let other = seeded();
    let tip = other.gitea.set_file("acme", "widgets", SIDE, "src/page.rs", NEW_PAGE);
    let report = run(&other, &other.bundle);
    assert!(matches!(outcome(&report, PublishStep::SideBranch), StepOutcome::Failed { .. }), "{:?}", report.report);
    assert_eq!(other.gitea.branch_sha("acme", "widgets", SIDE).as_deref(), Some(tip.as_str()));
    assert_eq!(gitea.violations(), Vec::<String>::new());
}

#[test]
fn a_change_that_may_not_be_written_gets_no_branch_and_the_answer_says_why() {
    for (why, change) in [
        (
            "mode observe does not write",
            (|b: &mut EvidenceBundle| b.mode = RunMode::Observe) as fn(&mut EvidenceBundle),
        ),
        ("the change is not verified", |b: &mut EvidenceBundle| b.verified = false),
    ] {
        let world = seeded();
        let mut bundle = world.bundle.clone();
        change(&mut bundle);
        let report = run(&world, &bundle);
        assert_eq!(outcome(&report, PublishStep::SideBranch), StepOutcome::skipped(why), "{:?}", report.report);
        assert_eq!(world.gitea.branch_sha("acme", "widgets", SIDE), None);
        let text = answer(&world);
        assert!(text.contains(&format!("in the evidence, not here. No side branch: {why}.")), "{text}");
        let written = writes(&world.gitea);
        assert!(!written.iter().any(|w| w.ends_with("/branches") || w.ends_with("/contents")), "{written:?}");
    }
}

#[test]
fn a_change_to_an_executable_file_is_left_to_a_person_before_any_branch() {
    let world = seeded();
    let mut bundle = world.bundle.clone();
    bundle.tree =
        vec![TreeFile { path: "src/page.rs".into(), sha256: "0".repeat(64), bytes: 1, mode: "100755".into() }];
    let report = run(&world, &bundle);
    let StepOutcome::Failed { reason } = outcome(&report, PublishStep::SideBranch) else {
        panic!("{:?}", report.report)
    };
    assert!(reason.contains("`src/page.rs`") && reason.contains("left to a person"), "{reason}");
    assert_eq!(world.gitea.branch_sha("acme", "widgets", SIDE), None);
    assert!(answer(&world).contains("No side branch: `src/page.rs` is not a regular file"), "{}", answer(&world));
}
