//! The answer to another reviewer, in the thread of the review comment
//! that started a feedback run: the verdict in one line, every reason it
//! was not confirmed, and where the full evidence is. Short on purpose: the
//! validation comment on the pull request carries the rest.

use agent_zero_contracts::{EvidenceBundle, TerminalState, Verdict};

use crate::RenderOptions;
use crate::markdown::escape::{inline, prose};
use crate::markdown::limit::fit;
use crate::text::Ctx;

/// Longest reason kept, in bytes.
const REASON_MAX: usize = 1_000;

/// The reply's Markdown (without the caller's marker line).
pub fn render_thread_answer(bundle: &EvidenceBundle, options: &RenderOptions<'_>) -> String {
    let ctx = Ctx::new(options);
    let mut out = match bundle.verdict {
        Verdict::Accepted => "**Agent Zero: confirmed.** The repository supports this comment.".to_owned(),
        Verdict::Rejected => "**Agent Zero: not confirmed.** The repository does not support this comment:".to_owned(),
        Verdict::Inconclusive => {
            "**Agent Zero: inconclusive.** The evidence was not enough to decide either way.".to_owned()
        }
    };
    if let Some(finding) = &bundle.finding {
        if bundle.verdict == Verdict::Rejected {
            for reason in &finding.rejection_reasons {
                out.push_str(&format!("\n- {}", prose(&ctx, reason, REASON_MAX)));
            }
            if finding.rejection_reasons.is_empty() {
                out.push_str("\n- no reason was recorded");
            }
        } else {
            out.push_str(&format!("\n\n{}", inline(&ctx, &finding.claim.title)));
        }
    }
    if bundle.state == TerminalState::Failed {
        out.push_str("\n\nThe run failed before it finished; this answer may be incomplete.");
    }
    out.push_str("\n\nThe evidence is in the Agent Zero comment on this pull request.");
    fit(&ctx, out, options.max_bytes)
}
