//! `agent-zero verify` on the command line: files in, a line per check,
//! exit 0 or 1. (Receipts of real runs, with their evidence and log, each
//! tampered with: `shared/app/src/routes/receipts_tests.rs` and the
//! end-to-end case `receipt_of_a_verified_fix_verifies_offline`.)

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::Signer as _;
use serde_json::json;

use super::*;

// RFC 8032, section 7.1, TEST 1.
const SEED: [u8; 32] = [
    0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4, 0x44, 0x49, 0xc5,
    0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
];

fn cli(args: &[&str], cwd: &Path) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let args = std::iter::once("agent-zero").chain(args.iter().copied());
    let status = run_with(&Env::default(), args, cwd, &mut out, &mut err);
    (status, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

/// A receipt signed with the RFC's key, and the key set publishing it.
fn signed(dir: &Path, status: &str) {
    let key = ed25519_dalek::SigningKey::from_bytes(&SEED);
    let mut receipt = json!({
        "type": "agent-zero-receipt/v1", "taskId": "gh-1", "repository": "acme/calc",
        "pullRequest": null, "issue": {"number": 1}, "state": "completed", "verdict": "accepted",
        "verified": true, "checks": [], "log": {"seq": 3, "concludedAtMs": 1, "sha256": "00"},
        "evidence": {"sha256": "00", "bytes": 1}, "keyId": "k1", "algorithm": "Ed25519",
    });
    let message = agent_zero_engine::receipt::canonical(&receipt).unwrap();
    receipt["signature"] = json!(URL_SAFE_NO_PAD.encode(key.sign(message.as_bytes()).to_bytes()));
    std::fs::write(dir.join("receipt.json"), serde_json::to_string_pretty(&receipt).unwrap()).unwrap();
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes());
    let keys = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k1", "x": x, "status": status}]});
    std::fs::write(dir.join("keys.json"), keys.to_string()).unwrap();
}

#[test]
fn a_good_receipt_exits_0_and_a_changed_one_exits_1_naming_the_signature() {
    let dir = tempfile::tempdir().unwrap();
    signed(dir.path(), "retired");
    let (status, out, err) = cli(&["verify", "receipt.json", "--keys", "keys.json"], dir.path());
    assert_eq!(status, EXIT_OK, "{out}{err}");
    assert!(
        out.contains("signature: good, key `k1` (retired)") && out.ends_with("ok: the receipt verifies\n"),
        "{out}"
    );

    let path = dir.path().join("receipt.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"accepted\"", "\"acceptee\"", 1)).unwrap();
    let (status, out, _) = cli(&["verify", "receipt.json", "--keys", "keys.json"], dir.path());
    assert_eq!(status, EXIT_FAILED, "{out}");
    assert!(out.contains("FAIL signature: does not verify under key `k1`"), "{out}");
    assert!(out.ends_with("FAILED: the receipt does not verify\n"), "{out}");
}

#[test]
fn unreadable_inputs_exit_1_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    signed(dir.path(), "active");
    let (status, _, err) = cli(&["verify", "receipt.json", "--keys", "absent.json"], dir.path());
    assert_eq!(status, EXIT_FAILED);
    assert!(err.contains("--keys") && err.contains("absent.json"), "{err}");
    std::fs::write(dir.path().join("other.json"), r#"{"type": "something-else"}"#).unwrap();
    let (status, _, err) = cli(&["verify", "other.json", "--keys", "keys.json"], dir.path());
    assert_eq!(status, EXIT_FAILED);
    assert!(err.contains("not an evidence receipt: `type` is \"something-else\""), "{err}");
    let (status, _, err) = cli(&["verify", "receipt.json", "--keys", "receipt.json"], dir.path());
    assert_eq!(status, EXIT_FAILED);
    assert!(err.contains("the key set has no `keys` list"), "{err}");
}

#[test]
fn the_key_set_may_be_fetched_from_its_url() {
    let dir = tempfile::tempdir().unwrap();
    signed(dir.path(), "active");
    let keys = std::fs::read(dir.path().join("keys.json")).unwrap();
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/.well-known/agent-zero/keys", server.server_addr().to_ip().unwrap());
    let serving = std::thread::spawn(move || {
        let request = server.recv().unwrap();
        let path = request.url().to_owned();
        request.respond(tiny_http::Response::from_data(keys)).unwrap();
        path
    });
    let (status, out, err) = cli(&["verify", "receipt.json", "--keys", &url], dir.path());
    assert_eq!(status, EXIT_OK, "{out}{err}");
    assert!(out.contains("signature: good, key `k1` (active)"), "{out}");
    assert_eq!(serving.join().unwrap(), "/.well-known/agent-zero/keys");
}
