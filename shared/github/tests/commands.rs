//! Commands from a pull request's conversation through the intake, on the
//! vendored GitHub payloads (octokit/webhooks, `tests/fixtures/github-webhooks`):
//! `issue_comment` `created` and `pull_request_review` `submitted` carrying
//! `/agent-zero review` or `@app resolve`, and what is ignored and why.

use std::path::Path;

use agent_zero_contracts::Trigger;
use agent_zero_github::{
    IgnoreReason, Intake, IntakeOptions, ParsedDelivery, PolicyGate, PolicySwitches, ReviewCommand, Subject,
    parse_delivery,
};
use serde_json::{Value, json};

const DELIVERY: &str = "72d3162e-cc78-11e3-81ab-4c9367dc0958";

fn fixture(event: &str, name: &str) -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/github-webhooks").join(event).join(name);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The vendored `issue_comment` `created`, on a pull request, saying `body`.
fn pr_comment(body: &str) -> Value {
    let mut payload = fixture("issue_comment", "created.payload.json");
    let number = payload["issue"]["number"].clone();
    payload["issue"]["pull_request"] = json!({
        "url": format!("https://api.github.com/repos/Codertocat/Hello-World/pulls/{number}"),
        "html_url": format!("https://github.com/Codertocat/Hello-World/pull/{number}"),
    });
    payload["comment"]["body"] = json!(body);
    payload
}

fn intake(event: &str, payload: &Value) -> Intake {
    parse_delivery(event, DELIVERY, &serde_json::to_vec(payload).unwrap(), &IntakeOptions::default()).unwrap()
}

fn parsed(intake: Intake) -> ParsedDelivery {
    match intake {
        Intake::Task(parsed) => *parsed,
        other => panic!("expected a parsed delivery, got {other:?}"),
    }
}

fn ignored(intake: Intake) -> IgnoreReason {
    match intake {
        Intake::Ignored { reason } => reason,
        other => panic!("expected an ignored delivery, got {other:?}"),
    }
}

fn switches<'a>(associations: &'a [String], bots: &'a [String]) -> PolicySwitches<'a> {
    PolicySwitches {
        proactive_enabled: false,
        issues_enabled: false,
        issues_require_label: "",
        author_associations: associations,
        allowed_bots: bots,
        opt_in_label: "agent-zero",
    }
}

#[test]
fn a_review_command_in_a_pull_request_comment_starts_a_review_of_the_current_head() {
    let payload = pr_comment("Rebased.\n\n/agent-zero review");
    let parsed = parsed(intake("issue_comment", &payload));
    assert_eq!(parsed.trigger, Trigger::Proactive);
    let comment_id = payload["comment"]["id"].as_u64();
    assert_eq!(parsed.gate, PolicyGate::Command { command: ReviewCommand::Review, mention: None, comment_id });
    let Subject::PullRequest(pr) = &parsed.subject else { panic!("{:?}", parsed.subject) };
    assert_eq!(pr.number, payload["issue"]["number"].as_u64().unwrap());
    assert_eq!(pr.head_sha, "", "the payload has no head: admission reads the current one");
    let author = parsed.author.as_ref().expect("the commenter");
    assert_eq!((author.login.as_str(), author.association.as_deref()), ("Codertocat", Some("OWNER")));

    // An explicit request: proactive.enabled is not needed, the author rules are.
    let owners = ["OWNER".to_owned()];
    assert_eq!(parsed.admit(&switches(&owners, &[])), Ok(()));
    let members = ["MEMBER".to_owned(), "COLLABORATOR".to_owned()];
    assert_eq!(
        parsed.admit(&switches(&members, &[])).unwrap_err().code(),
        "author-not-allowed",
        "an outsider's command is declined with its reason"
    );
    let json = serde_json::to_value(&parsed).unwrap();
    assert_eq!(json["gate"], json!({"gate": "command", "command": "review", "comment_id": comment_id}));
}

#[test]
fn a_mention_command_keeps_whom_it_was_addressed_to() {
    let parsed = parsed(intake("issue_comment", &pr_comment("@agent-zero-app[bot] resolve")));
    let PolicyGate::Command { command, mention, .. } = &parsed.gate else { panic!("{:?}", parsed.gate) };
    assert_eq!((*command, mention.as_deref()), (ReviewCommand::Resolve, Some("agent-zero-app[bot]")));
}

#[test]
fn a_review_body_with_a_command_starts_a_review_not_feedback() {
    let mut payload = fixture("pull_request_review", "submitted.payload.json");
    payload["review"]["body"] = json!("/agent-zero review");
    let parsed = parsed(intake("pull_request_review", &payload));
    assert_eq!(parsed.trigger, Trigger::Proactive);
    assert_eq!(parsed.gate, PolicyGate::Command { command: ReviewCommand::Review, mention: None, comment_id: None });
    let Subject::PullRequest(pr) = &parsed.subject else { panic!("{:?}", parsed.subject) };
    assert_eq!(pr.head_sha, payload["pull_request"]["head"]["sha"].as_str().unwrap());
    assert!(parsed.feedback.is_empty());
}

#[test]
fn everything_else_is_ignored_with_its_reason() {
    // Conversation on a pull request.
    assert_eq!(ignored(intake("issue_comment", &pr_comment("LGTM, thanks!"))).code(), "no-command");
    // Another app's command: not ours (admission checks the `@login` against ours).
    assert_eq!(ignored(intake("issue_comment", &pr_comment("@coderabbitai please look"))).code(), "no-command");
    let unknown = ignored(intake("issue_comment", &pr_comment("/agent-zero deploy")));
    assert_eq!(unknown, IgnoreReason::UnknownCommand { word: "deploy".into() });
    assert!(unknown.to_string().contains("`review` and `resolve`"), "{unknown}");
    // A command on an issue that is not a pull request (the vendored payload as is).
    let mut on_issue = fixture("issue_comment", "created.payload.json");
    on_issue["comment"]["body"] = json!("/agent-zero review");
    let number = on_issue["issue"]["number"].as_u64().unwrap();
    assert_eq!(ignored(intake("issue_comment", &on_issue)), IgnoreReason::CommandNotOnPullRequest { number });
    // Edits and deletions carry no new command.
    let mut edited = fixture("issue_comment", "edited.payload.json");
    edited["comment"]["body"] = json!("/agent-zero review");
    assert_eq!(ignored(intake("issue_comment", &edited)).code(), "unsupported-action");
    let mut review = fixture("pull_request_review", "submitted.payload.json");
    review["review"]["body"] = json!("/agent-zero reviw");
    assert_eq!(ignored(intake("pull_request_review", &review)).code(), "unknown-command");
}
