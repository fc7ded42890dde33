//! What the forges' publication tests share: the evidence crate's verified
//! golden bundle, and the task result it records (`agent_zero_fakes::task_result_of`).

use agent_zero_contracts::EvidenceBundle;

/// The verified golden bundle of the evidence crate (issue acme/widgets#42).
pub(crate) fn golden_bundle() -> EvidenceBundle {
    let path = format!("{}/../evidence/tests/golden/verified/bundle.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The task result `bundle` records.
pub(crate) use agent_zero_fakes::task_result_of as result_of;
