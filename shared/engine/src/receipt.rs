//! Evidence receipts (docs/receipts.md): what a receipt of a concluded run
//! claims, the digest of the task log it was folded from, and the canonical
//! bytes the deployment signs.
//!
//! Nothing here signs or verifies: the host signs [`canonical`] of
//! [`claims`] with its Ed25519 key (WebCrypto on Cloudflare,
//! `ed25519-dalek` on Spin), and `agent-zero verify` checks the signature
//! and recomputes every digest with these same functions. Pure: entries and
//! rendered evidence in, JSON out.

use agent_zero_contracts::EvidenceBundle;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::fact::{Entry, Fact};

/// The `type` of every receipt of this format. A later format (a `witness`
/// member, say) adds members: they are signed like the rest, and a
/// verifier that does not know one says so rather than ignoring it.
pub const RECEIPT_TYPE: &str = "agent-zero-receipt/v1";

/// The signature algorithm, the only one receipts use.
pub const ALGORITHM: &str = "Ed25519";

/// Why a receipt could not be built or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiptError {
    /// The log holds no conclusion: there is no evidence to sign.
    #[error("the log has no conclusion: there is no evidence to sign")]
    NotConcluded,
    /// A value the canonical form cannot hold (a fraction or an exponent:
    /// receipts carry integers only).
    #[error("`{path}` is {value}: a receipt holds integers only, never fractions")]
    NotCanonical { path: String, value: String },
    /// A log entry that could not be written as JSON.
    #[error("log entry {seq} cannot be written as JSON: {reason}")]
    Entry { seq: u64, reason: String },
}

/// The index in `entries` of the last entry holding a `concluded` fact,
/// and its bundle (a `needs-human` task that a person then decided
/// concludes again: the receipt is of the latest conclusion).
pub fn last_conclusion(entries: &[Entry]) -> Option<(usize, &EvidenceBundle)> {
    entries.iter().enumerate().rev().find_map(|(index, entry)| {
        entry.facts.iter().find_map(|fact| match fact {
            Fact::Concluded { evidence, .. } => Some((index, &**evidence)),
            _ => None,
        })
    })
}

/// One entry as `GET /api/v1/tasks/{id}/log` serves it in `entries`: the
/// engine's own serializer (compact, the store's bytes), `secrets` redacted.
pub fn entry_json<S: AsRef<str>>(entry: &Entry, secrets: &[S]) -> Result<String, ReceiptError> {
    let text =
        serde_json::to_string(entry).map_err(|e| ReceiptError::Entry { seq: entry.seq, reason: e.to_string() })?;
    Ok(agent_zero_ports::redact(&text, secrets).into_owned())
}

/// The log digest: SHA-256 over `entries` (seq order, from entry 0), each
/// entry's [`entry_json`] followed by one line feed, as lowercase hex.
pub fn log_sha256<S: AsRef<str>>(entries: &[Entry], secrets: &[S]) -> Result<String, ReceiptError> {
    let mut hash = Sha256::new();
    for entry in entries {
        hash.update(entry_json(entry, secrets)?.as_bytes());
        hash.update(b"\n");
    }
    Ok(hex::encode(hash.finalize()))
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// What a receipt says that the evidence alone shows: the task, the
/// repository, the pull request's number and commits (`base`, `head`) or
/// the issue's number (`null` when the run had none), the state, the verdict, whether it was
/// verified, and each check's outcome. `agent-zero verify` compares these
/// with the evidence it is given.
pub fn evidence_claims(bundle: &EvidenceBundle) -> Value {
    let pull_request = bundle.pull_request.as_ref().map(|pr| {
        let mut commits = Map::new();
        commits.insert("number".into(), json!(pr.number));
        if let Some(base) = &pr.base_sha {
            commits.insert("base".into(), Value::String(base.clone()));
        }
        commits.insert("head".into(), Value::String(pr.head_sha.clone()));
        Value::Object(commits)
    });
    let checks: Vec<Value> = bundle
        .checks
        .iter()
        .map(|check| {
            let outcome = if check.timed_out {
                "timed-out"
            } else if check.passed() {
                "passed"
            } else {
                "failed"
            };
            json!({ "command": check.command, "exitCode": check.exit_code, "outcome": outcome })
        })
        .collect();
    json!({
        "taskId": bundle.task_id,
        "repository": bundle.repository,
        "pullRequest": pull_request,
        "issue": bundle.issue.as_ref().map(|issue| json!({ "number": issue.number })),
        "state": bundle.state,
        "verdict": bundle.verdict,
        "verified": bundle.verified,
        "checks": checks,
    })
}

/// Everything a receipt of `entries`' last conclusion signs but the key
/// id: [`evidence_claims`], the log (the concluding entry's seq and time,
/// [`log_sha256`] over entries `0..=seq`) and the evidence
/// (`evidence_json`: the bytes `GET /api/v1/tasks/{id}/evidence.json`
/// serves, their SHA-256 and length).
pub fn claims<S: AsRef<str>>(entries: &[Entry], evidence_json: &str, secrets: &[S]) -> Result<Value, ReceiptError> {
    let (index, bundle) = last_conclusion(entries).ok_or(ReceiptError::NotConcluded)?;
    let concluding = &entries[index];
    let mut claims = evidence_claims(bundle);
    let object = claims.as_object_mut().expect("evidence_claims is an object");
    object.insert("type".into(), Value::String(RECEIPT_TYPE.into()));
    object.insert(
        "log".into(),
        json!({
            "seq": concluding.seq,
            "concludedAtMs": concluding.at_ms,
            "sha256": log_sha256(&entries[..=index], secrets)?,
        }),
    );
    object.insert(
        "evidence".into(),
        json!({ "sha256": sha256_hex(evidence_json.as_bytes()), "bytes": evidence_json.len() }),
    );
    Ok(claims)
}

/// The signed bytes of `receipt`: the receipt without its `signature`
/// member, as RFC 8785 (JCS) writes it. A receipt holds only objects,
/// arrays, strings, integers, booleans and null, so JCS is: no whitespace,
/// object members sorted by name, strings escaped as `serde_json` (and
/// ECMAScript) escape them, integers in decimal. A fraction is refused.
pub fn canonical(receipt: &Value) -> Result<String, ReceiptError> {
    let mut out = String::new();
    match receipt {
        Value::Object(members) => {
            let unsigned: Map<String, Value> =
                members.iter().filter(|(name, _)| *name != "signature").map(|(k, v)| (k.clone(), v.clone())).collect();
            write_canonical(&Value::Object(unsigned), "", &mut out)?;
        }
        other => write_canonical(other, "", &mut out)?,
    }
    Ok(out)
}

fn write_canonical(value: &Value, path: &str, out: &mut String) -> Result<(), ReceiptError> {
    match value {
        Value::Null | Value::Bool(_) | Value::String(_) => out.push_str(&value.to_string()),
        Value::Number(n) => {
            if n.is_f64() {
                return Err(ReceiptError::NotCanonical { path: path.to_owned(), value: n.to_string() });
            }
            out.push_str(&n.to_string());
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, &format!("{path}[{i}]"), out)?;
            }
            out.push(']');
        }
        Value::Object(members) => {
            // Names are ASCII here, where UTF-16 order (JCS) is byte order.
            let mut names: Vec<&String> = members.keys().collect();
            names.sort_unstable_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, name) in names.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                write_canonical(&members[name], &format!("{path}.{name}"), out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "receipt_tests.rs"]
mod tests;
