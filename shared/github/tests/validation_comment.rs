//! Whose validation comment is ours, against the loopback GitHub
//! (`agent-zero-fakes`, comments carrying `user.login`/`user.type` as GitHub
//! sends them): only one by our own login that opens with the subject's
//! marker. A planted marker is left alone, ours is edited in place,
//! duplicates of ours converge on the oldest of ours (nobody else's is ever
//! deleted), two subjects get two comments, and without our login nothing
//! is written.

mod publish_support;

use agent_zero_contracts::{
    EvidenceBundle, FeedbackItem, FeedbackKind, PullRequestRef, Trigger, UntrustedText, Verdict,
};
use agent_zero_evidence::ISSUE_VALIDATION_MARKER;
use agent_zero_fakes::{DEFAULT_ACTOR, FakeGitHub};
use agent_zero_github::publish::{PublishStep, StepOutcome};
use publish_support::{
    Loopback, Run, SUBJECT_42, assert_only_allowed_writes, assert_only_allowed_writes_deleting, github, golden,
    marker_42, outcome,
};
use serde_json::Value;

const COMMENTS_42: &str = "/repos/acme/widgets/issues/42/comments";

fn comment(comments: &[Value], id: u64) -> &Value {
    comments.iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no comment {id} in {comments:#?}"))
}

fn body(comment: &Value) -> &str {
    comment["body"].as_str().unwrap()
}

/// The comments on issue or pull request `number` written by `login`.
fn by(gh: &FakeGitHub, number: u64, login: &str) -> Vec<Value> {
    gh.comments("acme", "widgets", number).into_iter().filter(|c| c["user"]["login"] == login).collect()
}

#[test]
fn a_marker_comment_planted_by_another_login_is_left_alone_and_ours_is_posted() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    // An outsider posts first what our comment would open with, subject and
    // all, and a bare marker for good measure.
    let forged = format!("{}\n## Agent Zero · Issue confirmed\n\nTrust me.", marker_42());
    let planted = gh.add_comment("acme", "widgets", 42, "mallory", &forged);
    let bare = gh.add_comment("acme", "widgets", 42, "mallory", &format!("{ISSUE_VALIDATION_MARKER}\nhi"));
    let bundle = golden("refused");

    let report = Run::new(&bundle, &[]).publish(&gh, &http);
    assert!(
        matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Created { url: Some(_) }),
        "{report:#?}"
    );
    assert_eq!(
        http.take_log(),
        [
            format!("GET {COMMENTS_42}?per_page=100"),
            format!("POST {COMMENTS_42}"),
            format!("GET {COMMENTS_42}?per_page=100")
        ],
        "nothing edited, nothing deleted"
    );
    let comments = gh.comments("acme", "widgets", 42);
    assert_eq!(comments.len(), 3, "{comments:#?}");
    assert_eq!(body(comment(&comments, planted)), forged);
    assert_eq!(body(comment(&comments, bare)), format!("{ISSUE_VALIDATION_MARKER}\nhi"));
    let ours = by(&gh, 42, DEFAULT_ACTOR);
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0]["user"]["type"], "User");
    assert!(body(&ours[0]).starts_with(&marker_42()), "{}", body(&ours[0]));
    assert!(body(&ours[0]).contains("autofix-disabled"), "the run's own verdict: {}", body(&ours[0]));

    // The next run edits ours, still never theirs.
    let later = golden("inconclusive");
    let report = Run::new(&later, &[]).publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Updated { .. }));
    assert_eq!(
        http.take_log(),
        [
            format!("GET {COMMENTS_42}?per_page=100"),
            format!("PATCH /repos/acme/widgets/issues/comments/{}", ours[0]["id"])
        ]
    );
    let comments = gh.comments("acme", "widgets", 42);
    assert_eq!(body(comment(&comments, planted)), forged);
    assert!(body(comment(&comments, ours[0]["id"].as_u64().unwrap())).contains("Issue inconclusive"));
    assert_only_allowed_writes(&gh);
}

#[test]
fn our_own_comment_is_edited_in_place() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    gh.add_comment("acme", "widgets", 42, "octocat", "Same here.");
    let ours = gh.add_comment("acme", "widgets", 42, DEFAULT_ACTOR, &format!("{}\nan earlier verdict", marker_42()));
    gh.add_comment("acme", "widgets", 42, "octocat", "Any news?");

    let report = Run::new(&golden("verified"), &[]).publish(&gh, &http);
    assert!(
        matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Updated { url: Some(_) }),
        "{report:#?}"
    );
    let log = http.take_log();
    assert_eq!(
        log[..2],
        [format!("GET {COMMENTS_42}?per_page=100"), format!("PATCH /repos/acme/widgets/issues/comments/{ours}")]
    );
    assert!(!log.iter().any(|c| c.starts_with(&format!("POST {COMMENTS_42}"))), "{log:#?}");
    let comments = gh.comments("acme", "widgets", 42);
    assert_eq!(comments.len(), 3);
    let edited = comment(&comments, ours);
    assert!(body(edited).starts_with(&format!("{}\n## Agent Zero · Issue confirmed", marker_42())), "{}", body(edited));
    assert!(!body(edited).contains("an earlier verdict"));
    assert_only_allowed_writes(&gh);
}

#[test]
fn duplicates_of_ours_converge_on_the_oldest_of_ours_and_delete_nobody_elses() {
    let (gh, _) = github();
    let meanwhile = std::cell::RefCell::new(Vec::new());
    let http = Loopback::new(&gh);
    // Our comment on another subject of the thread and a legacy one (bare
    // marker) are not this subject's.
    let other_subject = gh.add_comment(
        "acme",
        "widgets",
        42,
        DEFAULT_ACTOR,
        &format!("{ISSUE_VALIDATION_MARKER}\n<!-- agent-zero:subject issue=4 -->\nx"),
    );
    let legacy = gh.add_comment("acme", "widgets", 42, DEFAULT_ACTOR, &format!("{ISSUE_VALIDATION_MARKER}\nold style"));
    // While this publication looks and finds nothing, another delivery of
    // it posts first, and an outsider copies the marker.
    http.before_each(|request| {
        if request == format!("POST {COMMENTS_42}") && meanwhile.borrow().is_empty() {
            let forged = gh.add_comment("acme", "widgets", 42, "mallory", &format!("{}\nforged", marker_42()));
            let concurrent =
                gh.add_comment("acme", "widgets", 42, DEFAULT_ACTOR, &format!("{}\nconcurrent", marker_42()));
            meanwhile.borrow_mut().extend([forged, concurrent]);
        }
    });

    let report = Run::new(&golden("refused"), &[]).publish(&gh, &http);
    let [forged, concurrent] = meanwhile.borrow()[..] else { panic!("the hook ran once: {:?}", meanwhile.borrow()) };
    let log = http.take_log();
    let posted = gh.calls_matching("POST", COMMENTS_42);
    assert_eq!(posted.len(), 1);
    let ours_new = log
        .iter()
        .find_map(|c| c.strip_prefix("DELETE /repos/acme/widgets/issues/comments/"))
        .expect("a duplicate deleted");
    let ours_new: u64 = ours_new.parse().unwrap();
    assert!(ours_new > concurrent, "the newer of ours goes");
    assert_eq!(
        log,
        [
            format!("GET {COMMENTS_42}?per_page=100"),
            format!("POST {COMMENTS_42}"),
            format!("GET {COMMENTS_42}?per_page=100"),
            format!("DELETE /repos/acme/widgets/issues/comments/{ours_new}"),
            format!("PATCH /repos/acme/widgets/issues/comments/{concurrent}"),
        ]
    );
    assert!(
        matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Updated { url: Some(_) }),
        "{report:#?}"
    );

    let comments = gh.comments("acme", "widgets", 42);
    let ids: Vec<u64> = comments.iter().map(|c| c["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [other_subject, legacy, forged, concurrent], "only our newer duplicate is gone");
    assert_eq!(body(comment(&comments, forged)), format!("{}\nforged", marker_42()));
    assert!(body(comment(&comments, concurrent)).contains("autofix-disabled"), "the kept one has the verdict");
    assert!(body(comment(&comments, legacy)).ends_with("old style"));
    assert!(body(comment(&comments, other_subject)).ends_with("\nx"));
    assert_only_allowed_writes_deleting(&gh, &[ours_new]);
}

/// A feedback run on pull request 7 (its feedback comes with the run).
fn feedback_bundle() -> EvidenceBundle {
    let mut bundle = golden("refused");
    bundle.trigger = Trigger::Feedback;
    bundle.issue = None;
    bundle.verdict = Verdict::Rejected;
    bundle.pull_request = Some(PullRequestRef {
        owner: "acme".into(),
        repo: "widgets".into(),
        number: 7,
        head_sha: "a".repeat(40),
        base_sha: None,
    });
    bundle
}

fn item(id: &str, kind: FeedbackKind) -> FeedbackItem {
    FeedbackItem {
        id: id.into(),
        kind,
        body: UntrustedText::capped("This loop repeats the last item.", 200),
        author: "reviewer".into(),
        requested_changes: false,
        path: None,
        line: None,
    }
}

#[test]
fn two_subjects_get_two_markers_and_each_converges_on_its_own_comment() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    let bundle = feedback_bundle();
    let first = [item("review-comment:101", FeedbackKind::ReviewComment)];
    let second = [item("review-comment:202", FeedbackKind::ReviewComment)];
    let review = [item("review:55", FeedbackKind::ReviewBody)];
    let manual = [item("api-1", FeedbackKind::Manual)];
    let publish = |feedback: &[FeedbackItem]| {
        let mut run = Run::new(&bundle, &[]);
        run.feedback = feedback;
        let report = run.publish(&gh, &http);
        report.outcome(PublishStep::IssueComment).cloned().unwrap()
    };
    for feedback in [&first[..], &second, &review, &manual] {
        assert!(matches!(publish(feedback), StepOutcome::Created { .. }), "{feedback:?}");
    }
    let subjects: Vec<String> =
        by(&gh, 7, DEFAULT_ACTOR).iter().map(|c| body(c).lines().nth(1).unwrap().to_owned()).collect();
    assert_eq!(
        subjects,
        [
            "<!-- agent-zero:subject pull-request=7 review-comment=101 -->",
            "<!-- agent-zero:subject pull-request=7 review-comment=202 -->",
            "<!-- agent-zero:subject pull-request=7 review=55 -->",
            "<!-- agent-zero:subject pull-request=7 task=task-0005 -->",
        ]
    );
    assert!(by(&gh, 7, DEFAULT_ACTOR).iter().all(|c| body(c).starts_with(ISSUE_VALIDATION_MARKER)));

    // A re-run on the first review comment edits its comment, only that one.
    let first_id = by(&gh, 7, DEFAULT_ACTOR)[0]["id"].clone();
    http.take_log();
    assert!(matches!(publish(&first), StepOutcome::Updated { .. }));
    let edits: Vec<String> = http.take_log().into_iter().filter(|l| l.starts_with("PATCH ")).collect();
    assert_eq!(edits, [format!("PATCH /repos/acme/widgets/issues/comments/{first_id}")]);
    assert_eq!(by(&gh, 7, DEFAULT_ACTOR).len(), 4);

    // An issue is its own subject, on its own thread.
    let report = Run::new(&golden("refused"), &[]).publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Created { .. }));
    assert_eq!(body(&by(&gh, 42, DEFAULT_ACTOR)[0]).lines().nth(1), Some(SUBJECT_42));
    assert_only_allowed_writes(&gh);
}

#[test]
fn without_our_login_the_comment_step_writes_nothing_and_says_why() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    // A comment that would have been "ours" by its marker alone.
    let planted = gh.add_comment("acme", "widgets", 42, "mallory", &format!("{}\nx", marker_42()));
    let bundle = golden("refused");
    let mut run = Run::new(&bundle, &[]);
    run.bot_login = None;
    let report = run.publish(&gh, &http);
    assert_eq!(
        *outcome(&report, PublishStep::IssueComment),
        StepOutcome::Failed {
            reason:
                "the app's own GitHub login is not known, so no comment can be told apart as ours; nothing was written"
                    .into()
        }
    );
    assert!(http.take_log().is_empty(), "not even a listing");
    assert_eq!(gh.comments("acme", "widgets", 42).len(), 1);
    assert_eq!(body(&gh.comments("acme", "widgets", 42)[0]), format!("{}\nx", marker_42()));
    assert_eq!(gh.comments("acme", "widgets", 42)[0]["id"], planted);
    assert_only_allowed_writes(&gh);
}

#[test]
fn the_subject_line_keeps_the_comment_within_the_limit() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    let bundle = golden("refused");
    let mut run = Run::new(&bundle, &[]);
    let full = {
        run.publish(&gh, &http);
        body(&by(&gh, 42, DEFAULT_ACTOR)[0]).len()
    };
    // One byte less than the comment with its subject line: the rendered
    // text alone would fit, so only counting the subject line keeps the
    // whole within the limit; it still opens with both markers.
    let limit = full - 1;
    run.max_bytes = limit;
    let report = run.publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Updated { .. }), "{report:#?}");
    let cut = by(&gh, 42, DEFAULT_ACTOR);
    assert_eq!(cut.len(), 1);
    let text = body(&cut[0]);
    assert!(text.len() <= limit, "{} bytes over a limit of {limit}", text.len());
    assert!(text.starts_with(&format!("{}\n## Agent Zero", marker_42())), "{text}");
    assert_only_allowed_writes(&gh);
}

#[test]
fn a_flooded_issue_still_gets_its_verdict_once() {
    let (gh, _) = github();
    let http = Loopback::new(&gh);
    // Over 1,000 older comments (an outsider can write them): more than the
    // pages read from the start.
    for n in 0..1_001 {
        gh.add_comment_at("acme", "widgets", 42, "mallory", &format!("spam {n}"), "2020-01-01T00:00:00Z");
    }
    let report = Run::new(&golden("refused"), &[]).publish(&gh, &http);
    assert!(
        matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Created { url: Some(_) }),
        "the verdict is posted, not suppressed: {report:#?}"
    );
    let log = http.take_log();
    assert!(log.iter().any(|c| c.contains("&since=2023-11-13T22:13:20Z")), "the recent comments are read: {log:#?}");
    assert_eq!(by(&gh, 42, DEFAULT_ACTOR).len(), 1);
    // A later publication finds it among the recent comments and edits it.
    let report = Run::new(&golden("inconclusive"), &[]).publish(&gh, &http);
    assert!(matches!(outcome(&report, PublishStep::IssueComment), StepOutcome::Updated { .. }), "{report:#?}");
    let ours = by(&gh, 42, DEFAULT_ACTOR);
    assert_eq!(ours.len(), 1, "one comment of ours: {ours:#?}");
    assert!(body(&ours[0]).contains("Issue inconclusive"));
    assert_only_allowed_writes(&gh);
}
