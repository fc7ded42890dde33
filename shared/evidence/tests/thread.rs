//! The answer in another reviewer's thread: one verdict line, every reason
//! a comment was not confirmed, untrusted text inert.

mod common;

use agent_zero_evidence::{RenderOptions, render_thread_answer};

#[test]
fn each_verdict_answers_in_one_line_with_every_reason_when_not_confirmed() {
    let options = RenderOptions::default();
    let rejected = render_thread_answer(&common::rejected(), &options);
    assert!(rejected.starts_with("**Agent Zero: not confirmed.**"), "{rejected}");
    for reason in ["No evidence was quoted.", "which does not exist.", "is not in src/page.rs."] {
        assert!(rejected.contains(reason), "{reason}: {rejected}");
    }
    assert_eq!(rejected.matches("\n- ").count(), 3, "{rejected}");
    let confirmed = render_thread_answer(&common::verified(), &options);
    assert!(confirmed.starts_with("**Agent Zero: confirmed.**"), "{confirmed}");
    assert!(!confirmed.contains("\n- "), "no reasons for a confirmed comment: {confirmed}");
    let unsure = render_thread_answer(&common::inconclusive(), &options);
    assert!(unsure.starts_with("**Agent Zero: inconclusive.**"), "{unsure}");
}

#[test]
fn hostile_reasons_mention_no_one_and_secrets_never_leave() {
    let mut bundle = common::rejected();
    let finding = bundle.finding.as_mut().unwrap();
    finding.rejection_reasons = vec!["@octocat see <script>alert(1)</script> and tok-secret-42".into()];
    let secrets = ["tok-secret-42"];
    let text = render_thread_answer(&bundle, &RenderOptions { secrets: &secrets, ..RenderOptions::default() });
    assert!(!text.contains("@octocat") && !text.contains("<script>"), "{text}");
    assert!(!text.contains("tok-secret-42"), "{text}");
}
