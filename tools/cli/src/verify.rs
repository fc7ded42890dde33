//! `agent-zero verify RECEIPT --keys KEYS [--evidence F] [--log F]`:
//! checks an evidence receipt offline (docs/receipts.md).
//!
//! 1. The receipt's signature, Ed25519 (`ed25519-dalek`, strict) over its
//!    canonical bytes ([`receipt::canonical`]), under the key its `keyId`
//!    names in the key set (`GET /.well-known/agent-zero/keys`, a file or
//!    that URL): a key no longer published, active or retired, verifies
//!    nothing.
//! 2. Given the evidence (`evidence.json` as served): its SHA-256 and
//!    length are the receipt's, and what the receipt claims about the run
//!    (repository, commits, state, verdict, checks) is what it says.
//! 3. Given the log (`GET /api/v1/tasks/{id}/log`): every entry is as the
//!    deployment serves it, the digest of entries `0..=seq` is the
//!    receipt's, and the log folds (the engine's own fold and conclusion,
//!    as `replay`) to exactly the evidence, byte for byte.
//!
//! Every check runs, and each failure names what differs. Pure but for
//! reading the files and fetching a key set URL ([`check`] takes bytes).

use std::path::Path;

use agent_zero_contracts::EvidenceBundle;
use agent_zero_engine::Entry;
use agent_zero_engine::receipt::{self, RECEIPT_TYPE};
use agent_zero_evidence::{RenderOptions, render_json};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::replay::first_difference;
use crate::text::printable;
use crate::{EXIT_FAILED, EXIT_OK};

/// The members a v1 receipt has; any other is reported as not checked.
const KNOWN: &[&str] = &[
    "type",
    "taskId",
    "repository",
    "pullRequest",
    "issue",
    "state",
    "verdict",
    "verified",
    "checks",
    "log",
    "evidence",
    "keyId",
    "algorithm",
    "signature",
];

/// What [`check`] found: one line per check, and whether all passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub lines: Vec<String>,
    pub ok: bool,
}

impl Verdict {
    fn pass(&mut self, line: String) {
        self.lines.push(line);
    }
    fn fail(&mut self, line: String) {
        self.lines.push(format!("FAIL {line}"));
        self.ok = false;
    }
}

pub(crate) fn run(
    receipt: &Path,
    keys: &str,
    evidence: Option<&Path>,
    log: Option<&Path>,
    cwd: &Path,
    out: &mut dyn std::io::Write,
) -> Result<u8, String> {
    let read = |flag: &str, path: &Path| {
        let path = cwd.join(path);
        std::fs::read(&path).map_err(|e| format!("{flag} {}: {e}", path.display()))
    };
    let receipt = read("receipt", receipt)?;
    let keys = if keys.starts_with("https://") || keys.starts_with("http://") {
        let answer = crate::api::Api::new(keys, None)?.get_anonymous("")?;
        if !answer.is_success() {
            return Err(format!("--keys {}: {}", printable(keys), answer.error_line()));
        }
        answer.body
    } else {
        read("--keys", Path::new(keys))?
    };
    let evidence = evidence.map(|p| read("--evidence", p)).transpose()?;
    let log = log.map(|p| read("--log", p)).transpose()?;
    let verdict = check(&receipt, &keys, evidence.as_deref(), log.as_deref())?;
    let mut text = verdict.lines.join("\n");
    text.push('\n');
    text.push_str(if verdict.ok { "ok: the receipt verifies\n" } else { "FAILED: the receipt does not verify\n" });
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(if verdict.ok { EXIT_OK } else { EXIT_FAILED })
}

/// Checks `receipt` against the key set `keys` and, when given, the
/// evidence and the log. `Err` only when an input cannot be read at all
/// (not JSON, not a receipt, not a key set).
pub fn check(receipt: &[u8], keys: &[u8], evidence: Option<&[u8]>, log: Option<&[u8]>) -> Result<Verdict, String> {
    let receipt: Value = serde_json::from_slice(receipt).map_err(|e| format!("the receipt is not JSON: {e}"))?;
    if receipt["type"] != RECEIPT_TYPE {
        return Err(format!("not an evidence receipt: `type` is {}, expected \"{RECEIPT_TYPE}\"", receipt["type"]));
    }
    let keys: Value = serde_json::from_slice(keys).map_err(|e| format!("the key set is not JSON: {e}"))?;
    let keys = keys["keys"].as_array().ok_or("the key set has no `keys` list (GET /.well-known/agent-zero/keys)")?;
    let mut verdict = Verdict { lines: Vec::new(), ok: true };
    let task = printable(receipt["taskId"].as_str().unwrap_or("?"));
    verdict.pass(format!(
        "receipt of task {task} on {}: {}, {}{}",
        printable(receipt["repository"].as_str().unwrap_or("?")),
        receipt["state"].as_str().unwrap_or("?"),
        receipt["verdict"].as_str().unwrap_or("?"),
        if receipt["verified"] == true { ", verified" } else { "" }
    ));
    signature(&receipt, keys, &mut verdict);
    if let Some(members) = receipt.as_object() {
        let unknown: Vec<&str> = members.keys().map(String::as_str).filter(|m| !KNOWN.contains(m)).collect();
        if !unknown.is_empty() {
            verdict.pass(format!("note: signed but not checked by this version: {}", unknown.join(", ")));
        }
    }
    if let Some(evidence) = evidence {
        evidence_matches(&receipt, evidence, &mut verdict);
    }
    if let Some(log) = log {
        log_matches(&receipt, log, evidence, &mut verdict);
    }
    Ok(verdict)
}

/// The signature under the key the receipt names, if the set publishes it.
fn signature(receipt: &Value, keys: &[Value], verdict: &mut Verdict) {
    let key_id = receipt["keyId"].as_str().unwrap_or_default();
    if receipt["algorithm"] != receipt::ALGORITHM {
        return verdict.fail(format!("signature: algorithm {} is not Ed25519", receipt["algorithm"]));
    }
    let Some(key) = keys.iter().find(|k| k["kid"] == key_id) else {
        let published: Vec<&str> = keys.iter().filter_map(|k| k["kid"].as_str()).collect();
        return verdict.fail(format!(
            "signature: key `{}` is not published, active or retired (published: {}): a receipt of a key rotated out verifies no more",
            printable(key_id),
            if published.is_empty() { "none".to_owned() } else { printable(&published.join(", ")) }
        ));
    };
    let status = key["status"].as_str().unwrap_or_default();
    if !matches!(status, "active" | "retired") || key["kty"] != "OKP" || key["crv"] != "Ed25519" {
        return verdict.fail(format!(
            "signature: key `{}` is not an active or retired Ed25519 key (status {:?}, crv {})",
            printable(key_id),
            status,
            key["crv"]
        ));
    }
    let public =
        key["x"].as_str().and_then(|x| URL_SAFE_NO_PAD.decode(x).ok()).and_then(|x| <[u8; 32]>::try_from(x).ok());
    let Some(public) = public.and_then(|p| VerifyingKey::from_bytes(&p).ok()) else {
        return verdict.fail(format!("signature: key `{}`'s `x` is not an Ed25519 public key", printable(key_id)));
    };
    let Some(signature) = receipt["signature"]
        .as_str()
        .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
        .and_then(|s| <[u8; 64]>::try_from(s).ok())
    else {
        return verdict.fail("signature: `signature` is not 64 bytes of base64url".into());
    };
    let message = match receipt::canonical(receipt) {
        Ok(message) => message,
        Err(e) => return verdict.fail(format!("signature: {e}")),
    };
    match public.verify_strict(message.as_bytes(), &Signature::from_bytes(&signature)) {
        Ok(()) => verdict.pass(format!("signature: good, key `{}` ({status})", printable(key_id))),
        Err(_) => verdict.fail(format!(
            "signature: does not verify under key `{}`: the receipt was changed after it was signed, or another key signed it",
            printable(key_id)
        )),
    }
}

/// The evidence's digest and length, and the receipt's claims about it.
fn evidence_matches(receipt: &Value, evidence: &[u8], verdict: &mut Verdict) {
    let digest = receipt::sha256_hex(evidence);
    let (signed, bytes) = (&receipt["evidence"]["sha256"], &receipt["evidence"]["bytes"]);
    if *signed == digest.as_str() && *bytes == evidence.len() {
        verdict.pass(format!("evidence: SHA-256 {digest} ({} bytes) is the receipt's", evidence.len()));
    } else {
        verdict.fail(format!(
            "evidence: SHA-256 {digest} ({} bytes) is not the receipt's {} ({bytes} bytes): this is not the evidence that was signed",
            evidence.len(),
            signed.as_str().unwrap_or("?")
        ));
    }
    let bundle = match serde_json::from_slice::<EvidenceBundle>(evidence) {
        Ok(bundle) => bundle,
        Err(e) => return verdict.fail(format!("evidence: not an evidence bundle: {e}")),
    };
    let claims = receipt::evidence_claims(&bundle);
    let differing: Vec<String> = claims
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, value)| receipt[name.as_str()] != **value)
        .map(|(name, value)| format!("`{name}` is {} in the receipt, {value} in the evidence", receipt[name.as_str()]))
        .collect();
    if differing.is_empty() {
        verdict.pass(
            "evidence: the receipt's claims (repository, commits, state, verdict, checks) are the evidence's".into(),
        );
    } else {
        verdict.fail(format!("evidence: {}", printable(&differing.join("; "))));
    }
}

/// The log's form, digest and conclusion, and what it folds to.
fn log_matches(receipt: &Value, log: &[u8], evidence: Option<&[u8]>, verdict: &mut Verdict) {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Log<'a> {
        task_id: Option<String>,
        #[serde(borrow)]
        entries: Vec<&'a RawValue>,
    }
    let log: Log<'_> = match serde_json::from_slice(log) {
        Ok(log) => log,
        Err(e) => return verdict.fail(format!("log: not the JSON of GET /api/v1/tasks/{{id}}/log: {e}")),
    };
    if let Some(id) = &log.task_id
        && receipt["taskId"] != id.as_str()
    {
        return verdict.fail(format!(
            "log: it is task `{}`'s, the receipt is task {}'s",
            printable(id),
            receipt["taskId"]
        ));
    }
    let mut entries = Vec::with_capacity(log.entries.len());
    for (index, raw) in log.entries.iter().enumerate() {
        let entry: Entry = match serde_json::from_str(raw.get()) {
            Ok(entry) => entry,
            Err(e) => return verdict.fail(format!("log: entry {index} is not a task log entry: {e}")),
        };
        if entry.seq != index as u64 {
            return verdict.fail(format!("log: entry {index} has seq {}: entries are in seq order from 0", entry.seq));
        }
        // Exactly as the deployment serves it: an added member, a changed
        // spelling or a re-indentation is not the signed log.
        if serde_json::to_string(&entry).ok().as_deref() != Some(raw.get()) {
            return verdict
                .fail(format!("log: entry {index} is not as the deployment serves it (edited, or re-formatted)"));
        }
        entries.push(entry);
    }
    let Some(seq) = receipt["log"]["seq"].as_u64().filter(|s| (*s as usize) < entries.len()) else {
        return verdict.fail(format!(
            "log: the receipt's conclusion is entry {}, the log has {} entries",
            receipt["log"]["seq"],
            entries.len()
        ));
    };
    let signed = &entries[..=seq as usize];
    let digest = receipt::log_sha256(signed, &[] as &[&str]).unwrap_or_default();
    if receipt["log"]["sha256"] == digest.as_str() {
        verdict.pass(format!("log: SHA-256 {digest} of entries 0..={seq} is the receipt's"));
    } else {
        return verdict.fail(format!(
            "log: SHA-256 {digest} of entries 0..={seq} is not the receipt's {}: this is not the log that was signed",
            receipt["log"]["sha256"].as_str().unwrap_or("?")
        ));
    }
    if receipt["log"]["concludedAtMs"] != signed[seq as usize].at_ms {
        verdict.fail(format!(
            "log: entry {seq} was committed at {} ms, the receipt says {}",
            signed[seq as usize].at_ms, receipt["log"]["concludedAtMs"]
        ));
    }
    let replayed = match agent_zero_engine::log::replay(signed) {
        Ok(replayed) => replayed,
        Err(e) => return verdict.fail(format!("log: does not fold: {e}")),
    };
    let concluded_here = receipt::last_conclusion(signed).is_some_and(|(index, _)| index == seq as usize);
    let (Some(rebuilt), Some(recorded), true) = (replayed.rebuilt, replayed.recorded, concluded_here) else {
        return verdict.fail(format!("log: entry {seq} holds no conclusion"));
    };
    let options = RenderOptions::default();
    let folded = render_json(&rebuilt.1, &options);
    if let Some(difference) = first_difference(render_json(&recorded.1, &options).as_bytes(), folded.as_bytes()) {
        verdict.fail(format!("log: the recorded conclusion is not what the log's facts produce {difference}"));
    }
    match evidence {
        Some(evidence) => match first_difference(evidence, folded.as_bytes()) {
            None => verdict.pass("replay: the log folds to this evidence byte for byte".into()),
            Some(difference) => verdict.fail(format!("replay: the evidence is not what the log folds to {difference}")),
        },
        None if receipt["evidence"]["sha256"] == receipt::sha256_hex(folded.as_bytes()).as_str() => {
            verdict.pass("replay: the log folds to the evidence the receipt names".into());
        }
        None => verdict.fail("replay: the log does not fold to the evidence the receipt names".into()),
    }
}
