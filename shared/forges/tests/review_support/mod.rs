//! What the GitLab and Gitea review publication tests share: the evidence
//! crate's proactive-review golden bundle pointed at a change request of
//! `acme/pages`, and the publication request of a review run on it. Its
//! own module, included by those two tests only, so the other tests that
//! include `support` compile no code they do not use.

use agent_zero_contracts::{EvidenceBundle, TaskResult};
use agent_zero_evidence::RenderOptions;
use agent_zero_forges::publication::{PublishFile, PublishPolicy, PublishRequest};

/// The account the tests' tokens belong to.
pub(crate) const BOT: &str = "zero-bot";

/// The proactive review golden bundle, about change request `number` at
/// `head`, its finding anchored at each of `lines` of `src/page.rs` (the
/// first quoting the changed line).
pub(crate) fn review_bundle(number: u64, head: &str, lines: &[u32]) -> EvidenceBundle {
    let path = format!("{}/../evidence/tests/golden/review-since/bundle.json", env!("CARGO_MANIFEST_DIR"));
    let mut bundle: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    bundle["pullRequest"]["number"] = number.into();
    bundle["pullRequest"]["headSha"] = head.into();
    bundle["pullRequest"]["owner"] = "acme".into();
    bundle["pullRequest"]["repo"] = "pages".into();
    bundle["review"]["headSha"] = head.into();
    bundle["review"].as_object_mut().unwrap().remove("since");
    let anchors: Vec<serde_json::Value> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let quote = if i == 0 { "let start = cursor + 1;".to_owned() } else { format!("line {line}") };
            serde_json::json!({ "findingId": "finding-0001", "path": "src/page.rs", "line": line, "quote": quote })
        })
        .collect();
    bundle["review"]["anchors"] = anchors.into();
    serde_json::from_value(bundle).unwrap()
}

/// The publication of a review run on `bundle`'s change request in
/// `acme/pages`, at its head, with `files` verified.
pub(crate) fn review_request<'a>(
    bundle: &'a EvidenceBundle,
    result: &'a TaskResult,
    files: &'a [PublishFile<'a>],
) -> PublishRequest<'a> {
    let pr = bundle.pull_request.as_ref().unwrap();
    PublishRequest {
        bundle,
        result,
        task_id: &bundle.task_id,
        owner: "acme",
        repo: "pages",
        default_branch: None,
        head_sha: Some(&pr.head_sha),
        issue: None,
        policy: PublishPolicy::default(),
        files,
        feedback: &[],
        bot_login: Some(BOT),
        render: RenderOptions::default(),
        now_ms: 1_700_000_000_000,
    }
}
