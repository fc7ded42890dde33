//! The checkpoint a tick stores under `task/{id}/meta` (the listing summary
//! and the folded [`Resident`]) is stored data: a deployment holds the ones
//! older code wrote. Each golden here was written by the engine before the
//! resident was split into its parts; the current code must write the same
//! JSON and read the old one back to the same state. `BLESS=1` rewrites
//! them: review such a diff as a change of the stored format.

mod harness;

use std::path::PathBuf;

use agent_zero_contracts::{ChangeRisk, RunMode, TaskState};
use agent_zero_engine::{Admission, AdmitError, ApprovalDecision, Meta, meta_key};
use agent_zero_ports::KeyValue as _;
use harness::*;

/// Compares (or with `BLESS=1` writes) the stored checkpoint of `id`.
fn assert_checkpoint(h: &Harness, id: &str, name: &str) {
    let stored = block_on(h.kv.get(&meta_key(id))).expect("kv").expect("a checkpoint");
    let mut stored: serde_json::Value = serde_json::from_slice(&stored).expect("checkpoint JSON");
    // The goldens predate the due time a checkpoint now carries (the next
    // tick's, where the store commits the checkpoint with each entry):
    // present exactly while the task is not quiet, and left out of the
    // comparison so the goldens stay what older code wrote.
    let due = stored.as_object_mut().unwrap().remove("dueMs");
    assert_eq!(due.is_some(), stored["quiet"] == false, "{id}: dueMs {due:?} with quiet {}", stored["quiet"]);
    // Likewise the quote check a finding now records (`quoteCheck`, issue
    // 46): left out of the comparison, and the state read back from the
    // checkpoint as written is compared below.
    let written: Meta = serde_json::from_value(stored.clone()).expect("the written checkpoint decodes");
    assert_eq!(written.resident, h.load(id), "the written checkpoint of {id} decodes to another state");
    let text = stored.to_string();
    assert_eq!(
        text.contains("\"quoteCheck\":{"),
        text.contains("\"rejectionReasons\""),
        "{id}: each finding's quote check"
    );
    strip(&mut stored, "quoteCheck");
    // Likewise the stops a person approved (`lifted`, issue 46: an
    // approval stands in for the stop it was given at, and no other) and
    // where the run resumed (`resumedSeq`, whence the runaway guard counts). An
    // approval also restarts the run's clock: the golden of an approved
    // task holds the approval's time as `startedMs`.
    strip(&mut stored, "lifted");
    strip(&mut stored, "resumedSeq");
    // The received delivery's parsed form is `delivery` since 2026-12-07;
    // older code named it `seed`, which still reads (below).
    rename(&mut stored, "delivery", "seed");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("checkpoint-{name}.json"));
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, serde_json::to_string_pretty(&stored).unwrap() + "\n").unwrap();
        return;
    }
    let golden =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (BLESS=1 writes it)", path.display()));
    let expected: serde_json::Value = serde_json::from_str(&golden).expect("golden JSON");
    assert_eq!(stored, expected, "the stored checkpoint of {id} changed shape (golden {})", path.display());
    // An old checkpoint reads back to the state this code folds, but for
    // the quote check older code did not record.
    let old: Meta = serde_json::from_str(&golden).expect("the golden checkpoint still decodes");
    let now: Meta = serde_json::from_value(stored).expect("the checkpoint without quote checks decodes");
    assert_eq!(old.resident, now.resident, "the golden checkpoint of {id} decodes to another state");
}

/// `value` without any field named `name`, at any depth.
/// Renames every field `from` under `value` to `to`.
fn rename(value: &mut serde_json::Value, from: &str, to: &str) {
    match value {
        serde_json::Value::Object(fields) => {
            if let Some(v) = fields.remove(from) {
                fields.insert(to.to_owned(), v);
            }
            fields.values_mut().for_each(|v| rename(v, from, to));
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| rename(v, from, to)),
        _ => {}
    }
}

fn strip(value: &mut serde_json::Value, name: &str) {
    match value {
        serde_json::Value::Object(fields) => {
            fields.remove(name);
            fields.values_mut().for_each(|v| strip(v, name));
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| strip(v, name)),
        _ => {}
    }
}

#[test]
fn a_verified_fix_stores_the_checkpoint_it_always_did() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.workspace.exits.borrow_mut().push_back(1);
    h.decider.push(decision(claim()));
    h.run(stimulus("t-golden-fix", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(h.load("t-golden-fix").state, TaskState::Completed);
    assert_checkpoint(&h, "t-golden-fix", "fix");
}

#[test]
fn an_admitted_delivery_approved_by_a_person_stores_the_checkpoint_it_always_did() {
    let h = Harness::new();
    let id = "gh-golden-approved";
    let mut admitted = stimulus(id, RunMode::Fix, policy(FIX_POLICY));
    admitted.source = Some(format!("github:{id}"));
    let admissions = [Err(AdmitError::Unavailable("GitHub: 503".into())), Ok(Admission::Admitted(Box::new(admitted)))];
    h.publisher.admissions.borrow_mut().extend(admissions);
    let mut finding = claim();
    finding.change_risk = ChangeRisk::HighImpact;
    h.decider.push(decision(finding));
    h.receive(received(id));
    h.drive();
    assert_eq!(h.load(id).state, TaskState::NeedsHuman);
    let approved = agent_zero_engine::approve(
        &h.kv,
        &h.queue,
        id,
        "alice",
        ApprovalDecision::Approve,
        None,
        None,
        START_MS + 9_000,
    );
    block_on(approved).expect("approved");
    h.drive();
    assert_checkpoint(&h, id, "approved");
}

#[test]
fn a_declined_delivery_stores_the_checkpoint_it_always_did() {
    let h = Harness::new();
    let declined =
        Admission::Declined { reason: "not-enabled".into(), message: "Agent Zero is not enabled here".into() };
    h.publisher.admissions.borrow_mut().push_back(Ok(declined));
    h.receive(received("gh-golden-declined"));
    h.drive();
    assert_eq!(h.load("gh-golden-declined").state, TaskState::Ignored);
    assert_checkpoint(&h, "gh-golden-declined", "declined");
}

/// Delivers queued ticks of the one task in the queue until `until` holds.
fn drive_until(h: &Harness, until: impl Fn(&agent_zero_engine::Resident) -> bool) {
    for _ in 0..100 {
        let (tick, delay) = h.queue.messages.borrow_mut().pop_front().expect("a queued tick");
        h.clock.advance(delay);
        let report = h.tick(&tick).expect("tick");
        if report.resident.as_ref().is_some_and(&until) {
            return;
        }
    }
    panic!("the condition never held");
}

#[test]
fn runs_in_flight_store_the_checkpoints_they_always_did() {
    let h = Harness::new();
    h.receive(received("gh-golden-waiting"));
    drive_until(&h, |r| r.seq == Some(2));
    assert_checkpoint(&h, "gh-golden-waiting", "awaiting-policy");

    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.create(stimulus("t-golden-verifying", RunMode::Fix, policy(FIX_POLICY)));
    drive_until(&h, |r| r.state == TaskState::Verifying);
    assert_checkpoint(&h, "t-golden-verifying", "verifying");
}
