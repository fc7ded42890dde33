use super::*;

const SECRET: &[u8] = b"gitea-hook-secret";

fn fixture(dir: &str, name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(dir).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    for (name, value) in pairs {
        headers.insert(*name, value.parse().unwrap());
    }
    headers
}

#[test]
fn either_spelling_of_the_signature_verifies_and_each_present_must_match() {
    let body = fixture("gitea-webhooks", "go-scm.pull_request_opened.json");
    let good = sign(SECRET, &body);
    assert_eq!(verify(SECRET, &headers(&[("x-gitea-signature", &good)]), &body), Ok(()));
    assert_eq!(
        verify(SECRET, &headers(&[("x-forgejo-signature", &good), ("x-gitea-signature", &good)]), &body),
        Ok(())
    );
    // Upper-case hex is the same 32 bytes.
    assert_eq!(verify(SECRET, &headers(&[("x-gitea-signature", &good.to_uppercase())]), &body), Ok(()));

    let other = sign(b"another secret", &body);
    assert_eq!(
        verify(SECRET, &headers(&[("x-gitea-signature", &other)]), &body),
        Err(AuthError::Mismatch { header: "X-Gitea-Signature" })
    );
    assert_eq!(
        verify(SECRET, &headers(&[("x-forgejo-signature", &other), ("x-gitea-signature", &good)]), &body),
        Err(AuthError::Mismatch { header: "X-Forgejo-Signature" })
    );
    assert_eq!(verify(SECRET, &headers(&[]), &body), Err(AuthError::Missing { header: "X-Gitea-Signature" }));
    assert!(matches!(
        verify(SECRET, &headers(&[("x-gitea-signature", "sha256=00")]), &body),
        Err(AuthError::Malformed { header: "X-Gitea-Signature", .. })
    ));
    let mut altered = body.clone();
    altered.push(b'\n');
    assert!(verify(SECRET, &headers(&[("x-gitea-signature", &good)]), &altered).is_err());
}

#[test]
fn dispatch_is_on_the_event_type_header() {
    let forgejo =
        headers(&[("x-forgejo-event-type", "pull_request_review_comment"), ("x-gitea-event", "pull_request_comment")]);
    assert_eq!(forge_of(&forgejo), Forge::Forgejo);
    assert_eq!(event_type(&forgejo), Ok("pull_request_review_comment"));
    let gitea = headers(&[("x-gitea-event", "pull_request_comment"), ("x-gitea-delivery", "0b5e2c1a-1")]);
    assert_eq!(forge_of(&gitea), Forge::Gitea);
    assert_eq!(event_type(&gitea), Err(PayloadError::MissingHeader { header: "X-Gitea-Event-Type" }));
    assert_eq!(delivery_id(&gitea), Ok("0b5e2c1a-1"));
    assert!(delivery_id(&headers(&[("x-gitea-delivery", "a b")])).is_err());
}

fn arrival_of(dir: &str, event: &str, name: &str) -> Arrival {
    match parse(Forge::Gitea, event, "d-1", &fixture(dir, name)).unwrap() {
        Parsed::Arrival(arrival) => *arrival,
        Parsed::Ignored(reason) => panic!("{name}: ignored: {reason}"),
    }
}

fn ignored_of(dir: &str, event: &str, name: &str) -> Ignored {
    match parse(Forge::Gitea, event, "d-1", &fixture(dir, name)).unwrap() {
        Parsed::Ignored(reason) => reason,
        Parsed::Arrival(arrival) => panic!("{name}: {arrival:?}"),
    }
}

#[test]
fn every_fixture_parses_to_its_arrival_or_reason() {
    let issue = arrival_of("gitea-webhooks", "issues", "go-scm.issues_opened.json");
    assert_eq!((issue.kind.name(), issue.number, issue.repository.as_str()), ("issue-opened", 1, "gogits/hello-world"));
    assert_eq!(issue.sender.as_deref(), Some("unknwon"));

    let opened = arrival_of("gitea-webhooks", "pull_request", "go-scm.pull_request_opened.json");
    assert_eq!(opened.kind, ArrivalKind::ChangeRequestOpened);
    assert_eq!(opened.head.as_deref(), Some("2eba238e33607c1fa49253182e9fff42baafa1eb"));
    for (dir, name) in [
        ("gitea-webhooks", "go-scm.pull_request_synchronized.json"),
        ("gitea-webhooks", "woodpecker.HookPullRequestUpdated.json"),
        ("forgejo-webhooks", "woodpecker.HookPullRequestUpdated.json"),
    ] {
        let updated = arrival_of(dir, "pull_request_sync", name);
        assert_eq!(updated.kind, ArrivalKind::ChangeRequestUpdated { previous_head: None }, "{dir}/{name}");
    }
    assert_eq!(arrival_of("forgejo-webhooks", "pull_request", "woodpecker.HookPullRequest.json").number, 1);

    for (event, name, state) in [
        ("pull_request_review_comment", "woodpecker.HookPullRequestReviewComment.json", "comment"),
        ("pull_request_review_rejected", "woodpecker.HookPullRequestReviewDeny.json", "rejected"),
    ] {
        let review = arrival_of("gitea-webhooks", event, name);
        let ArrivalKind::ReviewComment { state: got, body_bytes, .. } = &review.kind else { panic!("{review:?}") };
        assert_eq!((got.as_deref(), review.number), (Some(state), 7), "{name}");
        assert!(*body_bytes > 0, "{name}");
        assert_eq!(review.sender.as_deref(), Some("a_nice_user"));
    }
    let approved =
        ignored_of("gitea-webhooks", "pull_request_review_approved", "woodpecker.HookPullRequestReviewAck.json");
    assert_eq!(approved.code(), "review-carries-no-claim");

    assert_eq!(
        ignored_of("gitea-webhooks", "pull_request", "go-scm.pull_request_closed.json").code(),
        "unsupported-action"
    );
    // A pull request's labels are not an issue's: not read in this slice.
    for (dir, name) in [
        ("gitea-webhooks", "woodpecker.HookPullRequestAddLabel.json"),
        ("forgejo-webhooks", "woodpecker.HookPullRequestLabelAdded.json"),
    ] {
        assert_eq!(ignored_of(dir, "pull_request_label", name).code(), "unsupported-event", "{dir}/{name}");
    }
    assert_eq!(ignored_of("gitea-webhooks", "push", "go-scm.push.json").code(), "unsupported-event");
}

#[test]
fn an_issue_labelled_carries_its_labels() {
    // An `issue_label` delivery is the issues payload with the labels the
    // issue now has (here the captured `opened` body, re-actioned).
    let mut body: serde_json::Value =
        serde_json::from_slice(&fixture("gitea-webhooks", "go-scm.issues_opened.json")).unwrap();
    body["action"] = "label_updated".into();
    body["issue"]["labels"] = serde_json::json!([{ "id": 1, "name": "agent-zero", "color": "ee0701" }]);
    let body = body.to_string();
    let Parsed::Arrival(arrival) = parse(Forge::Gitea, "issue_label", "d", body.as_bytes()).unwrap() else { panic!() };
    assert_eq!(arrival.kind, ArrivalKind::IssueLabelled { added: vec![] });
    assert_eq!(arrival.labels, ["agent-zero"]);
}

#[test]
fn a_body_not_of_the_event_shape_is_a_payload_error() {
    let e = parse(Forge::Gitea, "pull_request", "d", b"{\"action\":\"opened\",\"repository\":{\"full_name\":\"a/b\"}}")
        .unwrap_err();
    assert!(e.to_string().contains("pull_request"), "{e}");
}
