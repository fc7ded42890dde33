//! The validation comment on an issue (or on the pull request whose review
//! feedback started the run): confirmed, not confirmed (with every reason)
//! or inconclusive. Starts with [`ISSUE_VALIDATION_MARKER`] so the
//! publisher can edit it in place.

use agent_zero_contracts::{EvidenceBundle, TerminalState, Trigger, Verdict};

use crate::markdown::limit::fit;
use crate::markdown::sections;
use crate::outcome::change_status;
use crate::text::Ctx;
use crate::{ISSUE_VALIDATION_MARKER, RenderOptions};

/// Renders the comment posted on the issue after validation.
pub fn render_issue_comment(bundle: &EvidenceBundle, options: &RenderOptions<'_>) -> String {
    let ctx = Ctx::new(options);
    let max_block = options.max_block_bytes;
    // On a pull request, the run answers review feedback: a claim.
    let subject = if bundle.issue.is_none() && bundle.trigger == Trigger::Feedback { "Claim" } else { "Issue" };
    let headline = match bundle.verdict {
        Verdict::Accepted => format!("{subject} confirmed"),
        Verdict::Rejected => format!("{subject} not confirmed"),
        Verdict::Inconclusive => format!("{subject} inconclusive"),
    };
    let explanation = match bundle.verdict {
        Verdict::Accepted => "The claim is supported by evidence found in the repository.",
        Verdict::Rejected => "The claim could not be supported by the repository. Every reason is listed below.",
        Verdict::Inconclusive => "The evidence was not enough to decide either way.",
    };
    let mut intro = format!("## Agent Zero · {headline}\n\n{explanation}");
    if bundle.state == TerminalState::Failed {
        intro.push_str(" The run failed before it finished; this result may be incomplete.");
    }
    if bundle.state == TerminalState::NeedsHuman {
        intro.push_str(" The run is waiting for a person's decision; nothing was written.");
    }
    if bundle.verdict == Verdict::Accepted {
        intro.push_str(&format!(
            "\n\n- **Change:** {}\n- **Next:** {}",
            change_status(bundle),
            sections::next_step(&ctx, bundle)
        ));
    }
    let mut blocks = vec![ISSUE_VALIDATION_MARKER.to_owned() + "\n" + &intro];
    blocks.push(sections::finding(&ctx, bundle, max_block));
    blocks.extend(sections::refusal(&ctx, bundle));
    blocks.push(sections::coverage(&ctx, bundle, Some(sections::GITHUB_GAPS_LISTED)));
    blocks.push(sections::footer(&ctx, bundle));
    fit(&ctx, sections::join(blocks), options.max_bytes)
}
