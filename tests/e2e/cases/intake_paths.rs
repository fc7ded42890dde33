//! `POST /webhooks/github` answers the same on both of the worker's intake
//! paths. On workerd a delivery with a `Content-Length` (once the isolate
//! has imported the webhook key) is read and its MAC checked by the entry
//! module (which refuses a wrong one itself when the signature is
//! `sha256=` and 64 hex digits) and answered by one synchronous wasm call
//! (functions/cloudflare/src/front/intake.rs); a chunked one (no length) always
//! takes the async `fetch`. Every answer the synchronous path gives is sent
//! both ways and compared: status, headers and body, byte for byte. A
//! delivery that creates a task is checked and parsed by that call too and
//! stored by `webhookAct`, without a second check: its answers (the first,
//! and a redelivery's through the other path) are compared the same way,
//! but for the task id, which is the delivery's own. On Spin both are the
//! one path, so the case checks framing makes no difference.

use agent_zero_e2e::{Reply, Runtime, Server, ServerOptions};
use agent_zero_fakes::sign_github;

use crate::Case;

pub(crate) const CASES: &[Case] = &[Case {
    name: "webhook_answers_alike_with_and_without_content_length",
    run: webhook_answers_alike_with_and_without_content_length,
}];

const SECRET: &str = "e2e-intake-paths-secret";

fn fixture(event: &str, file: &str) -> Vec<u8> {
    let path = agent_zero_e2e::repo_root().join("tests/fixtures/github-webhooks").join(event).join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Sends `body` chunked (`Transfer-Encoding: chunked`, no `Content-Length`).
fn send_chunked(server: &Server, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut request = agent.post(server.url("/webhooks/github"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut reader = body;
    let response =
        request.send(ureq::SendBody::from_reader(&mut reader)).unwrap_or_else(|e| panic!("chunked POST: {e}"));
    Reply::read(response).unwrap_or_else(|e| panic!("chunked POST's answer: {e}"))
}

/// The headers that are the answer's own (not the connection's framing),
/// without `X-Request-Id` (each request's own; every answer has one).
fn answer_headers(reply: &Reply) -> Vec<(String, String)> {
    let id = reply.header("x-request-id").unwrap_or_default();
    assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "X-Request-Id {id:?}");
    let mut headers: Vec<(String, String)> = reply
        .headers
        .iter()
        .filter(|(name, _)| {
            !matches!(name.as_str(), "date" | "connection" | "keep-alive" | "transfer-encoding" | "x-request-id")
        })
        .cloned()
        .collect();
    headers.sort();
    headers
}

/// One delivery, sent both ways.
struct Variant<'b> {
    what: &'static str,
    /// Empty: no `X-GitHub-Event` header.
    event: &'static str,
    delivery: &'static str,
    content_type: &'static str,
    signature: String,
    body: &'b [u8],
    /// The answer's status, with `Content-Length`.
    status: u16,
}

const JSON: Variant<'static> = Variant {
    what: "",
    event: "",
    delivery: "",
    content_type: "application/json",
    signature: String::new(),
    body: b"",
    status: 0,
};

fn webhook_answers_alike_with_and_without_content_length(runtime: Runtime) {
    let vars = vec![("GITHUB_WEBHOOK_SECRET".to_owned(), SECRET.to_owned())];
    let server =
        Server::start(runtime, &ServerOptions { vars, ..ServerOptions::default() }).unwrap_or_else(|e| panic!("{e}"));
    let ping = fixture("ping", "payload.json");
    let closed = fixture("pull_request", "closed.payload.json");
    // The first verified delivery imports the key (async path on workerd).
    let warm = server.deliver_github(SECRET, "ping", "paths-warm", &ping);
    assert_eq!(warm.status, 200, "{}", warm.text());

    let wrong = format!("sha256={}", "0".repeat(64));
    let not_json = b"{\"zen\": ".to_vec();
    let signed = |body: &[u8]| sign_github(SECRET, body);
    // The entry verifies a `sha256=` and 64 hex digits itself and answers a
    // wrong MAC without wasm; any other value is the wasm side's to parse.
    let upper = |signature: &str| format!("sha256={}", signature["sha256=".len()..].to_ascii_uppercase());
    let variants = [
        Variant {
            what: "a ping",
            event: "ping",
            delivery: "paths-ping",
            signature: signed(&ping),
            body: &ping,
            status: 200,
            ..JSON
        },
        Variant {
            what: "an ignored action",
            event: "pull_request",
            delivery: "paths-closed",
            signature: signed(&closed),
            body: &closed,
            status: 202,
            ..JSON
        },
        Variant {
            what: "a wrong signature",
            event: "pull_request",
            delivery: "paths-wrong",
            signature: wrong,
            body: &closed,
            status: 401,
            ..JSON
        },
        Variant {
            what: "a wrong signature in mixed-case hex",
            event: "pull_request",
            delivery: "paths-wrong-mixed",
            signature: format!("sha256={}", "aB".repeat(32)),
            body: &closed,
            status: 401,
            ..JSON
        },
        Variant {
            what: "a signature in uppercase hex",
            event: "ping",
            delivery: "paths-upper",
            signature: upper(&signed(&ping)),
            body: &ping,
            status: 200,
            ..JSON
        },
        Variant {
            what: "a signature one digit short",
            event: "ping",
            delivery: "paths-short",
            signature: signed(&ping)[..70].to_owned(),
            body: &ping,
            status: 401,
            ..JSON
        },
        Variant {
            what: "a signature with its prefix in capitals",
            event: "ping",
            delivery: "paths-prefix",
            signature: signed(&ping).replacen("sha256", "SHA256", 1),
            body: &ping,
            status: 401,
            ..JSON
        },
        Variant {
            what: "an empty signature",
            event: "ping",
            delivery: "paths-empty",
            signature: String::new(),
            body: &ping,
            status: 401,
            ..JSON
        },
        Variant {
            what: "a form body",
            event: "ping",
            delivery: "paths-form",
            content_type: "application/x-www-form-urlencoded",
            signature: signed(&ping),
            body: &ping,
            status: 400,
        },
        Variant {
            what: "no event header",
            event: "",
            delivery: "paths-no-event",
            signature: signed(&ping),
            body: &ping,
            status: 400,
            ..JSON
        },
        Variant {
            what: "a bad delivery id",
            event: "ping",
            delivery: "paths/bad",
            signature: signed(&ping),
            body: &ping,
            status: 400,
            ..JSON
        },
        Variant {
            what: "a body that is not JSON",
            event: "ping",
            delivery: "paths-not-json",
            signature: signed(&not_json),
            body: &not_json,
            status: 400,
            ..JSON
        },
    ];
    for Variant { what, event, delivery, content_type, signature, body, status } in variants {
        let mut headers = vec![
            ("content-type", content_type),
            ("x-github-delivery", delivery),
            ("x-hub-signature-256", signature.as_str()),
        ];
        if !event.is_empty() {
            headers.push(("x-github-event", event));
        }
        let sized = server.send("POST", "/webhooks/github", &headers, body);
        let chunked = send_chunked(&server, &headers, body);
        assert_eq!(sized.status, status, "{what}, with Content-Length: {}", sized.text());
        assert_eq!(
            (chunked.status, chunked.text()),
            (sized.status, sized.text()),
            "{what}: chunked (async path) against sized ({})",
            server.runtime.name()
        );
        assert_eq!(answer_headers(&chunked), answer_headers(&sized), "{what}: headers");
        // None of these is stored, and the worker's entry keeps the answer to
        // a wrong MAC for the isolate's life: sent again, the same answer.
        let again = server.send("POST", "/webhooks/github", &headers, body);
        assert_eq!((again.status, again.text()), (sized.status, sized.text()), "{what}: sent again");
        assert_eq!(answer_headers(&again), answer_headers(&sized), "{what}: headers, sent again");
    }

    // Deliveries that create a task, one each way, under delivery ids of one
    // length (the answer names the task): two events (the second
    // copy of one signed body would be refused as replayed).
    let created = fixture("pull_request_review_comment", "created.payload.json");
    let comment = agent_zero_e2e::server::fresh_event(&created, "paths-task-sized");
    let other = agent_zero_e2e::server::fresh_event(&created, "paths-task-chunk");
    fn headers<'a>(delivery: &'a str, signature: &'a str) -> [(&'a str, &'a str); 4] {
        [
            ("content-type", "application/json"),
            ("x-github-delivery", delivery),
            ("x-github-event", "pull_request_review_comment"),
            ("x-hub-signature-256", signature),
        ]
    }
    let (comment_signature, other_signature) = (signed(&comment), signed(&other));
    let (comment_signature, other_signature) = (comment_signature.as_str(), other_signature.as_str());
    let sized = server.send("POST", "/webhooks/github", &headers("paths-task-sized", comment_signature), &comment);
    let chunked = send_chunked(&server, &headers("paths-task-chunk", other_signature), &other);
    assert_eq!(sized.status, 202, "a task, with Content-Length: {}", sized.text());
    let without_id = |reply: &Reply, delivery: &str| {
        let id = reply.json()["taskId"].as_str().unwrap_or_else(|| panic!("no taskId: {}", reply.text())).to_owned();
        assert!(id.ends_with(delivery), "task id {id} is not {delivery}'s");
        reply.text().replace(&id, "<task>")
    };
    assert_eq!(
        (chunked.status, without_id(&chunked, "paths-task-chunk")),
        (sized.status, without_id(&sized, "paths-task-sized")),
        "a task: chunked (async path) against sized ({})",
        server.runtime.name()
    );
    assert_eq!(answer_headers(&chunked), answer_headers(&sized), "a task: headers");
    // Each redelivered through the other path: the first answer, once.
    let resized = server.send("POST", "/webhooks/github", &headers("paths-task-chunk", other_signature), &other);
    let rechunked = send_chunked(&server, &headers("paths-task-sized", comment_signature), &comment);
    for (what, first, again) in [("sized", &chunked, &resized), ("chunked", &sized, &rechunked)] {
        assert_eq!(again.status, 200, "a redelivery, {what}: {}", again.text());
        assert_eq!(again.json()["duplicate"], true, "a redelivery, {what}: {}", again.text());
        assert_eq!(again.json()["taskId"], first.json()["taskId"], "a redelivery, {what}");
    }
}
