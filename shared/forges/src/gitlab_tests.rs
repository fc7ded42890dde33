use super::*;

/// A signing token in GitLab's form: `whsec_` and the base64 of 32 bytes.
const SIGNING: &str = "whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVzdHRlc3Q=";
const TOKEN: &str = "gitlab-secret-token";
const NOW: u64 = 1_765_000_000;

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gitlab-webhooks").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn signed(body: &[u8], id: &str, at: u64) -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    headers.insert(TOKEN_HEADER, TOKEN.parse().unwrap());
    headers.insert(ID_HEADER, id.parse().unwrap());
    headers.insert(TIMESTAMP_HEADER, at.to_string().parse().unwrap());
    headers.insert(SIGNATURE_HEADER, sign(SIGNING, id, at, body).unwrap().parse().unwrap());
    headers
}

fn both() -> GitLabSecrets {
    GitLabSecrets::new(Some(TOKEN), Some(SIGNING)).unwrap().unwrap()
}

#[test]
fn a_signed_delivery_with_the_token_verifies() {
    let body = fixture("go-scm.issue_create.json");
    assert_eq!(verify(&both(), &signed(&body, "msg_1", NOW), &body, NOW), Ok(()));
    // Within the tolerance either way.
    assert_eq!(verify(&both(), &signed(&body, "msg_1", NOW - 300), &body, NOW), Ok(()));
    assert_eq!(verify(&both(), &signed(&body, "msg_1", NOW + 300), &body, NOW), Ok(()));
    // Only a token, only a signing token.
    let token_only = GitLabSecrets::new(Some(TOKEN), None).unwrap().unwrap();
    let mut headers = http::HeaderMap::new();
    headers.insert(TOKEN_HEADER, TOKEN.parse().unwrap());
    assert_eq!(verify(&token_only, &headers, &body, NOW), Ok(()));
    let signing_only = GitLabSecrets::new(None, Some(SIGNING)).unwrap().unwrap();
    let mut headers = signed(&body, "msg_2", NOW);
    headers.remove(TOKEN_HEADER);
    assert_eq!(verify(&signing_only, &headers, &body, NOW), Ok(()));
    assert!(GitLabSecrets::new(None, None).unwrap().is_none());
    assert!(GitLabSecrets::new(Some(""), None).unwrap().is_none());
}

#[test]
fn each_refusal_names_its_header() {
    let body = fixture("go-scm.issue_create.json");
    let secrets = both();
    let refuse = |headers: http::HeaderMap, body: &[u8]| verify(&secrets, &headers, body, NOW).unwrap_err();

    let mut wrong = signed(&body, "m", NOW);
    wrong.insert(TOKEN_HEADER, "gitlab-secret-tokem".parse().unwrap());
    assert_eq!(refuse(wrong, &body), AuthError::WrongToken { header: "X-Gitlab-Token" });
    let mut none = signed(&body, "m", NOW);
    none.remove(TOKEN_HEADER);
    assert_eq!(refuse(none, &body), AuthError::Missing { header: "X-Gitlab-Token" });

    let mut altered = body.clone();
    altered[10] ^= 1;
    assert_eq!(refuse(signed(&body, "m", NOW), &altered), AuthError::Mismatch { header: "webhook-signature" });
    // The id and the timestamp are signed too.
    let mut other_id = signed(&body, "m", NOW);
    other_id.insert(ID_HEADER, "n".parse().unwrap());
    assert_eq!(refuse(other_id, &body), AuthError::Mismatch { header: "webhook-signature" });
    let stale = refuse(signed(&body, "m", NOW - 301), &body);
    assert!(matches!(stale, AuthError::Stale { skew_secs: 301, .. }), "{stale:?}");
    let future = refuse(signed(&body, "m", NOW + 3_600), &body);
    assert_eq!(future.header(), "webhook-timestamp");
    let mut junk = signed(&body, "m", NOW);
    junk.insert(SIGNATURE_HEADER, "v2,abc".parse().unwrap());
    assert!(matches!(refuse(junk, &body), AuthError::Malformed { header: "webhook-signature", .. }));
    let mut unsigned = signed(&body, "m", NOW);
    unsigned.remove(SIGNATURE_HEADER);
    assert_eq!(refuse(unsigned, &body), AuthError::Missing { header: "webhook-signature" });
}

#[test]
fn one_matching_signature_among_several_verifies() {
    let body = fixture("go-scm.pull_request_create.json");
    let mut headers = signed(&body, "m", NOW);
    let good = headers[SIGNATURE_HEADER].to_str().unwrap().to_owned();
    let other = sign("whsec_b3RoZXJvdGhlcm90aGVyb3RoZXJvdGhlcm90aGVyMTI=", "m", NOW, &body).unwrap();
    headers.insert(SIGNATURE_HEADER, format!("v1a,xyz {other} {good}").parse().unwrap());
    assert_eq!(verify(&both(), &headers, &body, NOW), Ok(()));
}

#[test]
fn a_signing_token_must_be_whsec_base64() {
    assert!(GitLabSecrets::new(None, Some("dGVzdA==")).is_err());
    assert!(GitLabSecrets::new(None, Some("whsec_not base64!")).is_err());
    assert!(GitLabSecrets::new(None, Some("whsec_")).is_err());
}

fn arrival_of(event: &str, name: &str) -> Arrival {
    match parse(event, "d-1", &fixture(name)).unwrap() {
        Parsed::Arrival(arrival) => *arrival,
        Parsed::Ignored(reason) => panic!("{name}: ignored: {reason}"),
    }
}

fn ignored_of(event: &str, name: &str) -> Ignored {
    match parse(event, "d-1", &fixture(name)).unwrap() {
        Parsed::Ignored(reason) => reason,
        Parsed::Arrival(arrival) => panic!("{name}: {arrival:?}"),
    }
}

#[test]
fn every_fixture_parses_to_its_arrival_or_reason() {
    let opened = arrival_of("Issue Hook", "go-scm.issue_create.json");
    assert_eq!((opened.kind.name(), opened.number), ("issue-opened", 1));
    assert_eq!(opened.repository, "gitlab-org/hello-world");
    assert_eq!(opened.delivery_id, "d-1");

    let labelled = arrival_of("Issue Hook", "go-scm.issue_labeled.json");
    assert_eq!(labelled.kind, ArrivalKind::IssueLabelled { added: vec!["critical".into()] });
    assert_eq!(labelled.labels, ["critical"]);
    assert_eq!(ignored_of("Issue Hook", "go-scm.issue_closed.json").code(), "unsupported-action");

    for name in ["go-scm.pull_request_create.json", "woodpecker.HookPullRequestOpened.json"] {
        let mr = arrival_of("Merge Request Hook", name);
        assert_eq!(mr.kind, ArrivalKind::ChangeRequestOpened, "{name}");
        assert!(mr.head.as_deref().is_some_and(|h| h.len() == 40), "{name}: {:?}", mr.head);
    }
    let updated = arrival_of("Merge Request Hook", "woodpecker.HookPullRequestUpdated.json");
    assert_eq!(
        updated.kind,
        ArrivalKind::ChangeRequestUpdated { previous_head: Some("8b641937b7340066d882b9d8a8cc5b0573a207de".into()) }
    );
    assert_eq!(updated.head.as_deref(), Some("c136499ec574e1034b24c5d306de9acda3005367"));
    // A label added to a merge request is an update without new commits.
    let labels = ignored_of("Merge Request Hook", "woodpecker.HookPullRequestLabelsAdded.json");
    assert!(labels.to_string().contains("oldrev"), "{labels}");
    assert_eq!(ignored_of("Merge Request Hook", "woodpecker.HookPullRequestClosed.json").code(), "unsupported-action");

    let note = arrival_of("Note Hook", "go-scm.review_comment_create.json");
    let ArrivalKind::ReviewComment { path, line, discussion, body_bytes, .. } = &note.kind else { panic!("{note:?}") };
    assert_eq!((path.as_deref(), *line, *body_bytes), (Some("README.md"), Some(1), "check spelling".len()));
    assert_eq!(discussion.as_deref(), Some("e2d22c5e7bc2dda3d55f3ddc6d48b65326e2612b"));
    assert_eq!((note.number, note.head.as_deref()), (1, Some("c4c79227ed610f1151f05bbc5be33b4f340d39c8")));
    // A note in the merge request's conversation is not a diff note.
    assert_eq!(ignored_of("Note Hook", "go-scm.merge_request_comment_create.json").code(), "unsupported-action");

    assert_eq!(ignored_of("Push Hook", "go-scm.push.json"), Ignored::UnsupportedEvent { event: "Push Hook".into() });
}

#[test]
fn a_body_not_of_the_event_shape_is_a_payload_error() {
    let e = parse("Issue Hook", "d", b"{\"object_kind\":\"issue\"}").unwrap_err();
    assert!(e.to_string().contains("Issue Hook") && e.to_string().contains("object_attributes.iid"), "{e}");
    let no_project = br#"{"object_kind":"issue","object_attributes":{"iid":1,"action":"open"}}"#;
    let e = parse("Issue Hook", "d", no_project).unwrap_err();
    assert!(e.to_string().contains("`project.path_with_namespace` must be a string"), "{e}");
    assert!(parse("Note Hook", "d", b"[1]").unwrap_err().to_string().contains("JSON object"));
    assert!(parse("Merge Request Hook", "d", b"not json").is_err());
}

#[test]
fn the_delivery_id_is_the_signed_one_first() {
    let mut headers = http::HeaderMap::new();
    assert!(delivery_id(&headers).is_err());
    headers.insert("x-gitlab-event-uuid", "e-1".parse().unwrap());
    assert_eq!(delivery_id(&headers), Ok("e-1"));
    headers.insert("idempotency-key", "i-1".parse().unwrap());
    assert_eq!(delivery_id(&headers), Ok("i-1"));
    headers.insert(ID_HEADER, "w/1".parse().unwrap());
    assert!(delivery_id(&headers).unwrap_err().to_string().contains("webhook-id"));
}
