//! `POST /webhooks/gitlab` and `POST /webhooks/gitea` on both runtimes:
//! captured deliveries signed as each forge signs them; every refusal (bad
//! signature, wrong token, stale timestamp, oversize body, the other forge
//! not configured) named and stored nothing, shown by the same delivery id
//! then being recorded as new (202, not a duplicate); an unknown event is
//! answered 202 `ignored`; a retry is answered 200 with the first answer.

use agent_zero_e2e::{Reply, Runtime, Server, ServerOptions, repo_root};
use agent_zero_forges::{gitea, gitlab};

use crate::Case;

pub(crate) const CASES: &[Case] = &[
    Case { name: "forge_gitlab_refusals_store_nothing_then_one_arrival", run: gitlab_intake },
    Case { name: "forge_gitea_forgejo_refusals_store_nothing_then_one_arrival", run: gitea_intake },
];

const TOKEN: &str = "e2e-gitlab-token";
/// `whsec_` and the base64 of 32 bytes, as GitLab generates them.
const SIGNING: &str = "whsec_ZTJlLWdpdGxhYi1zaWduaW5nLWtleS0zMmJ5dGVzIQ==";
const GITEA_SECRET: &str = "e2e-gitea-secret";
/// Small enough that an over-limit body fits the socket's buffers.
const LIMIT: usize = 16 * 1024;

/// What is wrong, the delivery's headers and body, the status and the
/// field the answer names (`a|b`: either).
type Refusal<'b> = (&'static str, Vec<(String, String)>, &'b [u8], u16, &'static str);

fn fixture(dir: &str, name: &str) -> Vec<u8> {
    let path = repo_root().join("tests/fixtures").join(dir).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn start(runtime: Runtime, vars: &[(&str, &str)]) -> Server {
    let mut vars: Vec<(String, String)> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    vars.push(("AGENT_ZERO_WEBHOOK_MAX_BYTES".to_owned(), LIMIT.to_string()));
    Server::start(runtime, &ServerOptions { vars, ..ServerOptions::default() }).unwrap_or_else(|e| panic!("{e}"))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs()
}

fn field(reply: &Reply) -> String {
    reply.json()["error"]["field"].as_str().unwrap_or_default().to_owned()
}

/// A GitLab delivery: the secret token and the Standard Webhooks signature
/// over `id.timestamp.body`, as GitLab sends them.
fn gitlab_headers(event: &str, id: &str, at: u64, body: &[u8]) -> Vec<(String, String)> {
    vec![
        ("content-type".into(), "application/json".into()),
        ("x-gitlab-event".into(), event.into()),
        ("x-gitlab-token".into(), TOKEN.into()),
        ("x-gitlab-event-uuid".into(), format!("{id}-uuid")),
        ("idempotency-key".into(), id.into()),
        ("webhook-id".into(), id.into()),
        ("webhook-timestamp".into(), at.to_string()),
        ("webhook-signature".into(), gitlab::sign(SIGNING, id, at, body).expect("a whsec_ token")),
    ]
}

fn post(server: &Server, path: &str, headers: &[(String, String)], body: &[u8]) -> Reply {
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    server.send("POST", path, &headers, body)
}

/// Only the head of a request declaring `body`'s length, over a raw
/// connection, as `webhooks.rs` sends GitHub's oversize delivery: the host
/// refuses a declared oversize body before reading it, and may close at
/// once; a body still being written, or left unread, turns that close
/// into a reset that loses the answer (seen on workerd).
fn post_oversize(server: &Server, path: &str, headers: &[(String, String)], body: &[u8]) -> Reply {
    use super::limits::{Body, exchange, host_of};
    let mut head = format!("POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n", host_of(server), body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    exchange(server, head, Body::None)
}

fn set(headers: &mut [(String, String)], name: &str, value: &str) {
    headers.iter_mut().find(|(k, _)| k == name).unwrap_or_else(|| panic!("{name}")).1 = value.to_owned();
}

fn gitlab_intake(runtime: Runtime) {
    let server = start(runtime, &[("GITLAB_WEBHOOK_SECRET", TOKEN), ("GITLAB_WEBHOOK_SIGNING_TOKEN", SIGNING)]);
    let body = fixture("gitlab-webhooks", "woodpecker.HookPullRequestUpdated.json");
    let event = "Merge Request Hook";
    let id = "msg_e2e_1";
    let now = now_secs();
    let good = || gitlab_headers(event, id, now, &body);

    let mut wrong_token = good();
    set(&mut wrong_token, "x-gitlab-token", "not-the-token");
    let mut other_key = good();
    let forged = gitlab::sign("whsec_b3RoZXItc2lnbmluZy1rZXktb2YtMzItYnl0ZXMhIQ==", id, now, &body).unwrap();
    set(&mut other_key, "webhook-signature", &forged);
    let mut altered = body.clone();
    altered[20] ^= 1;
    let mut oversize = body.clone();
    oversize.resize(LIMIT + 1, b' ');
    let cases: Vec<Refusal<'_>> = vec![
        ("wrong token", wrong_token, &body, 401, "X-Gitlab-Token"),
        ("bad signature", other_key, &body, 401, "webhook-signature"),
        ("altered body", good(), &altered, 401, "webhook-signature"),
        ("stale timestamp", gitlab_headers(event, id, now - 600, &body), &body, 401, "webhook-timestamp"),
        ("future timestamp", gitlab_headers(event, id, now + 600, &body), &body, 401, "webhook-timestamp"),
        ("oversize body", gitlab_headers(event, id, now, &oversize), &oversize, 413, "Content-Length|body"),
    ];
    for (what, headers, body, status, named) in cases {
        let send = if status == 413 { post_oversize } else { post };
        let reply = send(&server, "/webhooks/gitlab", &headers, body);
        assert_eq!(reply.status, status, "{what}: {}", reply.text());
        // The host refuses a declared oversize body before the route runs.
        assert!(named.split('|').any(|n| n == field(&reply)), "{what}: {}", reply.text());
    }
    // Gitea is not configured here: 503 naming its variable.
    let gitea_body = fixture("gitea-webhooks", "go-scm.issues_opened.json");
    let reply = post(&server, "/webhooks/gitea", &gitea_headers(false, "issues", "g-1", &gitea_body), &gitea_body);
    assert_eq!((reply.status, field(&reply).as_str()), (503, "GITEA_WEBHOOK_SECRET"), "{}", reply.text());
    // An event intake does not read: 202 ignored, as GitHub's route answers.
    let push = fixture("gitlab-webhooks", "go-scm.push.json");
    let reply = post(&server, "/webhooks/gitlab", &gitlab_headers("Push Hook", id, now, &push), &push);
    assert_eq!((reply.status, reply.json()["reason"].as_str()), (202, Some("unsupported-event")), "{}", reply.text());

    // Health names the configured forge (names only).
    let health = server.send("GET", "/api/v1/health", &[], b"").json();
    let forges = &health["capabilities"]["forges"];
    assert_eq!(
        (forges["gitlab"]["intake"].as_bool(), forges["gitea"]["configured"].as_bool()),
        (Some(true), Some(false))
    );

    // Nothing was stored: the same delivery, well formed, is new.
    let first = post(&server, "/webhooks/gitlab", &good(), &body);
    assert_eq!(first.status, 202, "{}", first.text());
    let answer = first.json();
    // A merge request given new commits is a proactive review's task.
    assert_eq!((answer["taskId"].as_str(), answer["trigger"].as_str()), (Some("gl-msg_e2e_1"), Some("proactive")));
    assert!(answer.get("duplicate").is_none(), "{answer}");
    assert_eq!(answer["arrival"]["arrival"], "change-request-updated", "{answer}");
    assert_eq!(answer["arrival"]["repository"], "anbraten/woodpecker");
    // GitLab's retry keeps the id: the same task, 200.
    let again = post(&server, "/webhooks/gitlab", &gitlab_headers(event, id, now + 1, &body), &body);
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(
        (again.json()["duplicate"].as_bool(), again.json()["taskId"].as_str()),
        (Some(true), Some("gl-msg_e2e_1"))
    );
}

fn gitea_headers(forgejo: bool, event_type: &str, id: &str, body: &[u8]) -> Vec<(String, String)> {
    let signature = gitea::sign(GITEA_SECRET.as_bytes(), body);
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("x-gitea-event-type".to_owned(), event_type.to_owned()),
        ("x-gitea-delivery".to_owned(), id.to_owned()),
        ("x-gitea-signature".to_owned(), signature.clone()),
    ];
    if forgejo {
        headers.push(("x-forgejo-event-type".to_owned(), event_type.to_owned()));
        headers.push(("x-forgejo-delivery".to_owned(), id.to_owned()));
        headers.push(("x-forgejo-signature".to_owned(), signature));
    }
    headers
}

fn gitea_intake(runtime: Runtime) {
    let server = start(runtime, &[("GITEA_WEBHOOK_SECRET", GITEA_SECRET)]);
    let review = fixture("gitea-webhooks", "woodpecker.HookPullRequestReviewComment.json");
    let event = "pull_request_review_comment";
    let id = "7c7a3b0e-e2e-gitea-1";

    let mut forged = gitea_headers(false, event, id, &review);
    set(&mut forged, "x-gitea-signature", &gitea::sign(b"not-the-secret", &review));
    let mut altered = review.clone();
    altered[30] ^= 1;
    let mut oversize = review.clone();
    oversize.resize(LIMIT + 1, b' ');
    let cases: Vec<Refusal<'_>> = vec![
        ("bad signature", forged, &review, 401, "X-Gitea-Signature"),
        ("altered body", gitea_headers(false, event, id, &review), &altered, 401, "X-Gitea-Signature"),
        ("oversize body", gitea_headers(false, event, id, &oversize), &oversize, 413, "Content-Length|body"),
    ];
    for (what, headers, body, status, named) in cases {
        let send = if status == 413 { post_oversize } else { post };
        let reply = send(&server, "/webhooks/gitea", &headers, body);
        assert_eq!(reply.status, status, "{what}: {}", reply.text());
        // The host refuses a declared oversize body before the route runs.
        assert!(named.split('|').any(|n| n == field(&reply)), "{what}: {}", reply.text());
    }
    let gitlab_body = fixture("gitlab-webhooks", "go-scm.issue_create.json");
    let reply =
        post(&server, "/webhooks/gitlab", &gitlab_headers("Issue Hook", "m", now_secs(), &gitlab_body), &gitlab_body);
    assert_eq!((reply.status, field(&reply).as_str()), (503, "GITLAB_WEBHOOK_SECRET"), "{}", reply.text());
    let push = fixture("gitea-webhooks", "go-scm.push.json");
    let reply = post(&server, "/webhooks/gitea", &gitea_headers(false, "push", id, &push), &push);
    assert_eq!((reply.status, reply.json()["reason"].as_str()), (202, Some("unsupported-event")), "{}", reply.text());

    let health = server.send("GET", "/api/v1/health", &[], b"").json();
    let forges = &health["capabilities"]["forges"];
    assert_eq!(
        (forges["gitea"]["intake"].as_bool(), forges["gitlab"]["configured"].as_bool()),
        (Some(true), Some(false))
    );

    let first = post(&server, "/webhooks/gitea", &gitea_headers(false, event, id, &review), &review);
    assert_eq!(first.status, 202, "{}", first.text());
    let answer = first.json();
    // A review with line comments is review feedback: a task, its gate the first tick.
    assert_eq!((answer["forge"].as_str(), answer["trigger"].as_str()), (Some("gitea"), Some("feedback")), "{answer}");
    assert_eq!(answer["arrival"]["arrival"], "review-comment");
    let again = post(&server, "/webhooks/gitea", &gitea_headers(false, event, id, &review), &review);
    assert_eq!((again.status, again.json()["duplicate"].as_bool()), (200, Some(true)), "{}", again.text());

    // Forgejo, on the same route, told apart by its headers.
    let opened = fixture("forgejo-webhooks", "woodpecker.HookPullRequest.json");
    let reply = post(&server, "/webhooks/gitea", &gitea_headers(true, "pull_request", "f-e2e-1", &opened), &opened);
    assert_eq!(reply.status, 202, "{}", reply.text());
    assert_eq!(
        (reply.json()["forge"].as_str(), reply.json()["arrival"]["arrival"].as_str()),
        (Some("forgejo"), Some("change-request-opened"))
    );
}
