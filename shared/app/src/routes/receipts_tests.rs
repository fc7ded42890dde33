//! The receipt and keys routes over the in-memory host: a task the app's
//! own ticks concluded (no sandbox configured: it fails) gets a receipt
//! whose signature verifies under the published key, and whose digests are
//! those of the evidence and the log these routes serve.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{Value, json};

use crate::Settings;
use crate::test_host::{TestHost, block_on};

const TOKEN: &str = "tok-alice-5e0c1b2a9d8f";
// RFC 8032, section 7.1, TEST 1.
const SEED: &str = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";
const PUBLIC: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";

fn settings(receipt_key: Option<&str>) -> Settings {
    let key = receipt_key.map(|k| ("AGENT_ZERO_RECEIPT_KEY", k));
    Settings::from_pairs(
        [
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "alice:tok-alice-5e0c1b2a9d8f"),
            ("AGENT_ZERO_CONTROL_PLANE_MODES", "alice:observe|suggest|fix"),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "octo/widgets"),
            ("AGENT_ZERO_RECEIPT_RETIRED_KEYS", "2025-06:Kn0pQ8D1sMkmbVH6yJ2gYB1T6nO4cLpA7xWq9ZrE3s8"),
        ]
        .into_iter()
        .chain(key)
        .chain(crate::test_host::RUNNABLE),
    )
}

fn get(host: &TestHost, settings: &Settings, path: &str, token: bool) -> (u16, String) {
    let mut request = http::Request::builder().uri(path);
    if token {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {TOKEN}"));
    }
    let response = host.send(settings, request.body(Vec::new()).unwrap());
    (response.status().as_u16(), String::from_utf8(response.body().clone()).unwrap())
}

/// A task created through the API and ticked until it concluded.
fn concluded(host: &TestHost, settings: &Settings) -> String {
    let body = json!({
        "repository": "octo/widgets", "mode": "observe", "trigger": "feedback",
        "feedback": [{ "body": "`limit` of 0 divides by zero", "path": "src/limit.rs", "line": 3 }],
        "pullRequest": { "number": 7, "headSha": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c" },
    });
    let request = http::Request::builder()
        .method("POST")
        .uri("/api/v1/tasks")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let response = host.send(settings, request);
    assert_eq!(response.status(), 201);
    let id = serde_json::from_slice::<Value>(response.body()).unwrap()["id"].as_str().unwrap().to_owned();
    for _ in 0..40 {
        let resident = block_on(agent_zero_engine::load(&host.kv, &id)).unwrap().unwrap();
        if resident.conclusion.concluded.is_some() {
            return id;
        }
        let next = agent_zero_engine::Tick::new(id.clone(), resident.seq.map_or(0, |s| s + 1));
        host.clock.advance(60_000);
        let _ = block_on(crate::run_tick(host, settings, &next, host.invocation().now_ms));
    }
    panic!("task {id} did not conclude");
}

#[test]
fn the_keys_are_published_without_a_token() {
    let host = TestHost::new();
    let (status, body) = get(&host, &settings(Some(&format!("2026-12:{SEED}"))), "/.well-known/agent-zero/keys", false);
    assert_eq!(status, 200, "{body}");
    let keys: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        keys["keys"][0],
        json!({"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": "2026-12", "x": PUBLIC, "status": "active"})
    );
    assert_eq!((&keys["keys"][1]["kid"], &keys["keys"][1]["status"]), (&json!("2025-06"), &json!("retired")));
    // Without an active key only the retired ones are listed.
    let (status, body) = get(&host, &settings(None), "/.well-known/agent-zero/keys", false);
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["keys"].as_array().unwrap().len(), 1);
}

#[test]
fn a_receipt_is_signed_over_the_served_evidence_and_log() {
    let host = TestHost::new();
    let settings = settings(Some(&format!("2026-12:{SEED}")));
    let id = concluded(&host, &settings);
    let (status, body) = get(&host, &settings, &format!("/api/v1/tasks/{id}/receipt"), true);
    assert_eq!(status, 200, "{body}");
    let receipt: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((&receipt["keyId"], &receipt["algorithm"]), (&json!("2026-12"), &json!("Ed25519")));
    assert_eq!((&receipt["taskId"], &receipt["state"]), (&json!(id), &json!("failed")));
    assert_eq!(receipt["pullRequest"]["head"], "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c");

    // The signature verifies under the published key, over the canonical bytes.
    let public: [u8; 32] = URL_SAFE_NO_PAD.decode(PUBLIC).unwrap().try_into().unwrap();
    let signature: [u8; 64] =
        URL_SAFE_NO_PAD.decode(receipt["signature"].as_str().unwrap()).unwrap().try_into().unwrap();
    let message = agent_zero_engine::receipt::canonical(&receipt).unwrap();
    VerifyingKey::from_bytes(&public)
        .unwrap()
        .verify_strict(message.as_bytes(), &Signature::from_bytes(&signature))
        .expect("the receipt verifies");

    // The digests are those of what the evidence and log routes serve.
    let (_, evidence) = get(&host, &settings, &format!("/api/v1/tasks/{id}/evidence.json"), true);
    assert_eq!(receipt["evidence"]["sha256"], agent_zero_engine::receipt::sha256_hex(evidence.as_bytes()));
    let (_, log) = get(&host, &settings, &format!("/api/v1/tasks/{id}/log"), true);
    let log: Value = serde_json::from_str(&log).unwrap();
    let seq = receipt["log"]["seq"].as_u64().unwrap() as usize;
    // Read back as the engine's entries (a `Value` would reorder their members).
    let entries: Vec<agent_zero_engine::Entry> = serde_json::from_value(log["entries"].clone()).unwrap();
    let served: String = entries[..=seq].iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    assert_eq!(receipt["log"]["sha256"], agent_zero_engine::receipt::sha256_hex(served.as_bytes()));

    // Deterministic: the same receipt at every read.
    assert_eq!(get(&host, &settings, &format!("/api/v1/tasks/{id}/receipt"), true).1, body);
    // Reads need what evidence reads need (here, with no GitHub credentials, no token).
    assert_eq!(
        get(&host, &settings, &format!("/api/v1/tasks/{id}/receipt"), false).0,
        get(&host, &settings, &format!("/api/v1/tasks/{id}/evidence.json"), false).0
    );
}

#[test]
fn no_key_no_task_or_no_conclusion_is_said_plainly() {
    let host = TestHost::new();
    let unsigned = settings(None);
    let id = concluded(&host, &unsigned);
    let (status, body) = get(&host, &unsigned, &format!("/api/v1/tasks/{id}/receipt"), true);
    assert_eq!(status, 503);
    assert!(body.contains("receipts are not configured: AGENT_ZERO_RECEIPT_KEY is not set"), "{body}");
    let signed = settings(Some(&format!("2026-12:{SEED}")));
    assert_eq!(get(&host, &signed, "/api/v1/tasks/no-such-task/receipt", true).0, 404);
    let malformed = Settings::from_pairs([("AGENT_ZERO_RECEIPT_KEY", "2026-12:short")]);
    let (status, body) = get(&host, &malformed, "/.well-known/agent-zero/keys", false);
    assert_eq!(status, 503);
    assert!(body.contains("AGENT_ZERO_RECEIPT_KEY is malformed") && !body.contains("short"), "{body}");
}

/// A concluded task's receipt, key set, evidence and log, as served.
struct Served {
    receipt: String,
    keys: String,
    evidence: String,
    log: String,
}

fn served(host: &TestHost, settings: &Settings) -> Served {
    let id = concluded(host, settings);
    let read = |path: String| {
        let (status, body) = get(host, settings, &path, true);
        assert_eq!(status, 200, "{path}: {body}");
        body
    };
    Served {
        receipt: read(format!("/api/v1/tasks/{id}/receipt")),
        keys: read("/.well-known/agent-zero/keys".into()),
        evidence: read(format!("/api/v1/tasks/{id}/evidence.json")),
        log: read(format!("/api/v1/tasks/{id}/log")),
    }
}

fn verify(receipt: &str, keys: &str, evidence: Option<&str>, log: Option<&str>) -> (bool, String) {
    let verdict = agent_zero_cli::verify::check(
        receipt.as_bytes(),
        keys.as_bytes(),
        evidence.map(str::as_bytes),
        log.map(str::as_bytes),
    )
    .unwrap();
    (verdict.ok, verdict.lines.join("\n"))
}

/// `text` with the byte at the first occurrence of `anchor` (plus `offset`) changed.
fn one_byte(text: &str, anchor: &str, offset: usize) -> String {
    let at = text.find(anchor).unwrap_or_else(|| panic!("`{anchor}` in {text}")) + offset;
    let mut bytes = text.as_bytes().to_vec();
    bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
    String::from_utf8(bytes).unwrap()
}

#[test]
fn agent_zero_verify_passes_the_untouched_receipt_evidence_and_log() {
    let host = TestHost::new();
    let s = served(&host, &settings(Some(&format!("2026-12:{SEED}"))));
    let (ok, lines) = verify(&s.receipt, &s.keys, Some(&s.evidence), Some(&s.log));
    assert!(ok, "{lines}");
    assert!(lines.contains("signature: good, key `2026-12` (active)"), "{lines}");
    assert!(lines.contains("replay: the log folds to this evidence byte for byte"), "{lines}");
    // The log alone also names the signed evidence.
    let (ok, lines) = verify(&s.receipt, &s.keys, None, Some(&s.log));
    assert!(ok && lines.contains("replay: the log folds to the evidence the receipt names"), "{lines}");
}

#[test]
fn one_changed_byte_anywhere_fails_naming_what_differs() {
    let host = TestHost::new();
    let s = served(&host, &settings(Some(&format!("2026-12:{SEED}"))));
    // The receipt: a claim, a digest, the signature itself.
    for (anchor, offset) in [("\"failed\"", 1), ("\"sha256\": \"", 11), ("\"signature\": \"", 14)] {
        let (ok, lines) = verify(&one_byte(&s.receipt, anchor, offset), &s.keys, Some(&s.evidence), Some(&s.log));
        assert!(!ok, "{anchor}: {lines}");
        assert!(lines.contains("FAIL signature: does not verify under key `2026-12`"), "{anchor}: {lines}");
    }
    // The evidence.
    let evidence = one_byte(&s.evidence, "\"summary\": \"", 13);
    let (ok, lines) = verify(&s.receipt, &s.keys, Some(&evidence), Some(&s.log));
    assert!(!ok, "{lines}");
    assert!(lines.contains("FAIL evidence: SHA-256"), "{lines}");
    assert!(lines.contains("FAIL replay: the evidence is not what the log folds to at byte"), "{lines}");
    // The log: a fact's text, and an added member.
    let log = one_byte(&s.log, "\"message\":\"", 11);
    let (ok, lines) = verify(&s.receipt, &s.keys, Some(&s.evidence), Some(&log));
    assert!(!ok && lines.contains("FAIL log: SHA-256"), "{lines}");
    assert!(lines.contains("this is not the log that was signed"), "{lines}");
    let log = s.log.replacen("\"seq\":0,", "\"seq\":0,\"note\":1,", 1);
    let (ok, lines) = verify(&s.receipt, &s.keys, Some(&s.evidence), Some(&log));
    assert!(!ok && lines.contains("FAIL log: entry 0 is not as the deployment serves it"), "{lines}");
}

#[test]
fn a_rotated_out_key_verifies_only_while_published_as_retired() {
    let host = TestHost::new();
    let s = served(&host, &settings(Some(&format!("2026-12:{SEED}"))));
    // Rotated: a new active key, the old one published as retired.
    let new_seed = URL_SAFE_NO_PAD.encode([42u8; 32]);
    let rotated = Settings::from_pairs([
        ("AGENT_ZERO_RECEIPT_KEY", format!("2027-01:{new_seed}").as_str()),
        ("AGENT_ZERO_RECEIPT_RETIRED_KEYS", format!("2026-12:{PUBLIC}").as_str()),
    ]);
    let (_, keys) = get(&host, &rotated, "/.well-known/agent-zero/keys", false);
    let (ok, lines) = verify(&s.receipt, &keys, Some(&s.evidence), Some(&s.log));
    assert!(ok && lines.contains("signature: good, key `2026-12` (retired)"), "{lines}");
    // No longer published: nothing it signed verifies.
    let dropped = Settings::from_pairs([("AGENT_ZERO_RECEIPT_KEY", format!("2027-01:{new_seed}").as_str())]);
    let (_, keys) = get(&host, &dropped, "/.well-known/agent-zero/keys", false);
    let (ok, lines) = verify(&s.receipt, &keys, Some(&s.evidence), Some(&s.log));
    assert!(!ok, "{lines}");
    assert!(
        lines.contains("FAIL signature: key `2026-12` is not published, active or retired (published: 2027-01)"),
        "{lines}"
    );
}

#[test]
fn the_evidence_page_links_the_receipt_only_where_receipts_are_signed() {
    let host = TestHost::new();
    let signed = settings(Some(&format!("2026-12:{SEED}")));
    let id = concluded(&host, &signed);
    let link = format!("<a href=\"/api/v1/tasks/{id}/receipt\">signed receipt</a>");
    let (status, page) = get(&host, &signed, &format!("/tasks/{id}"), true);
    assert!(status == 200 && page.contains(&link), "{page}");
    let (_, page) = get(&host, &settings(None), &format!("/tasks/{id}"), true);
    assert!(!page.contains("signed receipt"), "{page}");
    // What `replay` reproduces carries no link.
    let (_, html) = get(&host, &signed, &format!("/api/v1/tasks/{id}/evidence.html"), true);
    assert!(!html.contains("signed receipt"));
}
