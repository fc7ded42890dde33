//! A receipt's claims are derived from a real run's log: the log digest is
//! over the entries the log route serves, up to the concluding one, and
//! every claim changes when what it names changes.

mod harness;

use agent_zero_contracts::{RunMode, TerminalState};
use agent_zero_engine::log::read_log;
use agent_zero_engine::receipt::{
    RECEIPT_TYPE, ReceiptError, claims, entry_json, evidence_claims, last_conclusion, log_sha256, sha256_hex,
};
use agent_zero_engine::{Entry, Fact, TickOutcome};
use harness::*;

fn completed_log(id: &str) -> Vec<Entry> {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    assert_eq!(
        h.run(stimulus(id, RunMode::Fix, policy(FIX_POLICY))),
        Some(TickOutcome::Terminal(TerminalState::Completed))
    );
    block_on(read_log(&h.kv, id)).expect("read").expect("exists")
}

const NO_SECRETS: &[&str] = &[];

#[test]
fn claims_name_the_run_its_log_and_its_evidence() {
    let entries = completed_log("t-receipt");
    let (index, bundle) = last_conclusion(&entries).expect("concluded");
    let evidence = "{\"rendered\": true}\n";
    let claims = claims(&entries, evidence, NO_SECRETS).unwrap();
    assert_eq!(claims["type"], RECEIPT_TYPE);
    assert_eq!(claims["taskId"], "t-receipt");
    assert_eq!(claims["repository"], bundle.repository.as_str());
    assert_eq!(claims["state"], "completed");
    assert_eq!(claims["verified"], true);
    assert_eq!(claims["log"]["seq"], entries[index].seq);
    assert_eq!(claims["log"]["concludedAtMs"], entries[index].at_ms);
    assert_eq!(claims["evidence"]["sha256"], sha256_hex(evidence.as_bytes()));
    assert_eq!(claims["evidence"]["bytes"], evidence.len());
    let checks = claims["checks"].as_array().unwrap();
    assert_eq!(checks.len(), bundle.checks.len());
    assert_eq!(checks[0]["outcome"], "passed");
    assert_eq!(checks[0]["command"], serde_json::json!(bundle.checks[0].command));
    // The evidence's own claims are a part of the receipt's.
    for (name, value) in evidence_claims(bundle).as_object().unwrap() {
        assert_eq!(&claims[name], value, "{name}");
    }
}

#[test]
fn the_log_digest_is_over_the_served_entries_up_to_the_conclusion() {
    let mut entries = completed_log("t-digest");
    let (index, _) = last_conclusion(&entries).unwrap();
    let mut served = String::new();
    for entry in &entries[..=index] {
        served.push_str(&serde_json::to_string(entry).unwrap());
        served.push('\n');
    }
    let claims_before = claims(&entries, "{}", NO_SECRETS).unwrap();
    assert_eq!(claims_before["log"]["sha256"], sha256_hex(served.as_bytes()));
    // Entries after the conclusion (a publication) are not covered.
    let after = entries.len() > index + 1;
    assert!(after, "a completed fix run publishes after it concludes");
    entries.truncate(index + 1);
    assert_eq!(claims(&entries, "{}", NO_SECRETS).unwrap(), claims_before);
    // An edited check output changes the digest.
    let checked = entries
        .iter_mut()
        .flat_map(|e| e.facts.iter_mut())
        .find_map(|f| match f {
            Fact::Checked { results, .. } => results.first_mut(),
            _ => None,
        })
        .unwrap();
    checked.stdout.push('!');
    assert_ne!(claims(&entries, "{}", NO_SECRETS).unwrap()["log"]["sha256"], claims_before["log"]["sha256"]);
}

#[test]
fn a_secret_in_the_log_is_digested_as_the_log_route_serves_it() {
    let entries = completed_log("t-secret");
    let secret = "t-secret";
    let redacted = entry_json(&entries[0], &[secret]).unwrap();
    assert!(!redacted.contains(secret) && redacted.contains("[redacted]"), "{redacted}");
    assert_ne!(log_sha256(&entries, &[secret]).unwrap(), log_sha256(&entries, NO_SECRETS).unwrap());
}

#[test]
fn a_log_without_a_conclusion_has_no_receipt() {
    let entries = completed_log("t-open");
    let (index, _) = last_conclusion(&entries).unwrap();
    assert_eq!(claims(&entries[..index], "{}", NO_SECRETS), Err(ReceiptError::NotConcluded));
}
