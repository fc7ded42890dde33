//! The GitHub check-run output: title, summary and conclusion.

use agent_zero_contracts::{EvidenceBundle, Trigger};

use crate::format::count;
use crate::markdown::limit::fit;
use crate::markdown::sections::{self, Outputs};
use crate::outcome::{CheckConclusion, Outcome, change_detail, outcome};

use crate::RenderOptions;
use crate::text::{Ctx, head, line};

/// What the publisher sends as a check run's `output` and `conclusion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunOutput {
    /// One line, plain text, at most [`TITLE_MAX_BYTES`] bytes.
    pub title: String,
    /// Markdown, at most `RenderOptions::max_bytes` bytes.
    pub summary: String,
    pub conclusion: CheckConclusion,
}

/// Longest check-run title.
pub const TITLE_MAX_BYTES: usize = 200;

/// Renders the check run for a finished run.
pub fn render_check_run(bundle: &EvidenceBundle, options: &RenderOptions<'_>) -> CheckRunOutput {
    let ctx = Ctx::new(options);
    let o = outcome(bundle);
    let max_block = options.max_block_bytes;
    let mut blocks = vec![sections::header(bundle, "Agent Zero · ")];
    // A review leads with what it read: a partial one must not look whole.
    blocks.extend(crate::markdown::review_ledger(&ctx, bundle, Some(sections::GITHUB_GAPS_LISTED)));
    let off_head = verified_off_head(bundle, o);
    if off_head {
        blocks.push(OFF_HEAD_NOTE.to_owned());
    }
    blocks.push(sections::finding(&ctx, bundle, max_block));
    blocks.extend(sections::refusal(&ctx, bundle));
    blocks.push(sections::checks(&ctx, bundle, Outputs::Failing, max_block));
    blocks.push(sections::coverage(&ctx, bundle, Some(sections::GITHUB_GAPS_LISTED)));
    blocks.push(sections::runner(&ctx, bundle));
    blocks.push(sections::usage(bundle));
    blocks.extend(sections::summary(&ctx, bundle, max_block));
    blocks.push(sections::footer(&ctx, bundle));
    let summary = fit(&ctx, sections::join(blocks), options.max_bytes);
    let (title, conclusion) = if off_head {
        let full = format!("Fix verified in the sandbox, not on this head: {}", change_detail(bundle));
        (full, CheckConclusion::Neutral)
    } else {
        (title(&ctx, bundle, o), crate::outcome::conclusion(bundle))
    };
    // The ledger's counts come first, so no cut of the title can drop them.
    let title = match &bundle.review {
        Some(ledger) => format!("{} · {title}", crate::markdown::review::ledger_counts(ledger, bundle.trigger)),
        None => title,
    };
    let title = head(&title, TITLE_MAX_BYTES).0.to_owned();
    CheckRunOutput { title, summary, conclusion }
}

/// What a verified run on a pull request that is not an issue fix says: the
/// change was applied and checked in the sandbox, the pull request's head
/// does not contain it, so the check must not claim the head passes.
const OFF_HEAD_NOTE: &str = "> **Not a result for this head.** The change below was applied and the \
repository's checks passed in the sandbox; this pull request's head does not contain it, so this \
check does not say the head passes. Apply the change to the branch to verify it there.";

/// Whether a verified run's change lives only in the sandbox: review
/// feedback and proactive runs check a change against a head they do not
/// push to (only an issue fix publishes its change, on its own branch).
fn verified_off_head(bundle: &EvidenceBundle, o: Outcome) -> bool {
    o == Outcome::Verified && bundle.trigger != Trigger::Issue
}

/// The one-line title: the outcome and the fact that decides it. Plain
/// text (GitHub does not render Markdown in titles).
fn title(ctx: &Ctx<'_>, b: &EvidenceBundle, o: Outcome) -> String {
    // Only a well-formed code goes in the title; anything else is in the summary.
    let code = || {
        b.refusal
            .as_ref()
            .map(|r| r.code.as_str())
            .filter(|c| {
                !c.is_empty()
                    && c.len() <= 64
                    && c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            })
            .map(|c| line(ctx, c))
    };
    let detail = match o {
        Outcome::Verified | Outcome::Confirmed => Some(change_detail(b)),
        Outcome::Refused => code(),
        Outcome::NotConfirmed => b.finding.as_ref().and_then(|f| {
            (!f.rejection_reasons.is_empty()).then(|| count(f.rejection_reasons.len(), "reason", "reasons"))
        }),
        Outcome::Inconclusive => Some("the evidence was not enough to decide".to_owned()),
        Outcome::NeedsHuman => code(),
        Outcome::Failed => (b.attempts > 1).then(|| format!("after {} attempts", b.attempts)),
    };
    let full = match detail {
        Some(d) => format!("{}: {d}", o.headline()),
        None => o.headline().to_owned(),
    };
    head(&full, TITLE_MAX_BYTES).0.to_owned()
}
