//! A pull-request review: the ledger of what it read of the diff (first in
//! the check run), and the one review a supported finding is posted as
//! (its body, and one line comment per finding anchored in the diff).

use agent_zero_contracts::{EvidenceBundle, FileReview, ReviewLedger, Trigger, Verdict};

use crate::RenderOptions;
use crate::format::confidence;
use crate::markdown::escape::{code, fenced, inline, prose};
use crate::markdown::limit::fit;
use crate::markdown::sections;
use crate::text::{Ctx, Keep};

/// Longest reason shown on one ledger line.
const LINE_MAX: usize = 1_000;
/// Hunk headers named on one ledger line; the rest are counted.
const HUNKS_LISTED: usize = 8;

/// A review as GitHub takes it (`POST /repos/{o}/{r}/pulls/{n}/reviews`
/// with `event: COMMENT`): the body and the line comments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewOutput {
    /// Markdown, at most `RenderOptions::max_bytes` bytes.
    pub body: String,
    pub comments: Vec<ReviewComment>,
}

/// One line comment on the right side of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewComment {
    pub path: String,
    pub line: u32,
    /// First line of a multi-line comment (`start_line < line`).
    pub start_line: Option<u32>,
    /// Markdown, at most `RenderOptions::max_bytes` bytes.
    pub body: String,
    /// The quote the lines hold (untrusted model text, whitespace
    /// collapsed): what marks the finding as already posted, and gone once
    /// the head no longer holds it.
    pub quote: Option<String>,
}

/// `Reviewed 3 of 5 changed files (1 in part, 1 skipped)`: the counts a
/// check run's title leads with. Review feedback on a pull request reads
/// its diff without reviewing it: `Read 3 of 5 changed files`.
pub(crate) fn ledger_counts(ledger: &ReviewLedger, trigger: Trigger) -> String {
    let (whole, part, skipped) = ledger.counts();
    let total = ledger.files.len();
    let plural = if total == 1 { "" } else { "s" };
    let verb = if trigger == Trigger::Proactive { "Reviewed" } else { "Read" };
    let mut out = match ledger.since.as_deref() {
        Some(since) => format!("{verb} {} of {total} file{plural} changed since {}", whole + part, short(since)),
        None => format!("{verb} {} of {total} changed file{plural}", whole + part),
    };
    let mut gaps = Vec::new();
    if !ledger.unchanged.is_empty() {
        gaps.push(format!("{} unchanged", ledger.unchanged.len()));
    }
    if part > 0 {
        gaps.push(format!("{part} in part"));
    }
    if skipped > 0 {
        gaps.push(format!("{skipped} skipped"));
    }
    if ledger.unlisted.is_some() {
        gaps.push("file list incomplete".to_owned());
    }
    if !gaps.is_empty() {
        out.push_str(&format!(" ({})", gaps.join(", ")));
    }
    out
}

/// The first 7 characters of a commit sha (the whole text when shorter).
fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// The ledger section: every changed file, read whole, in part (which
/// hunks) or skipped (why); at most `max_items` listed one by one.
pub(crate) fn ledger(ctx: &Ctx<'_>, b: &EvidenceBundle, max_items: Option<usize>) -> Option<String> {
    let ledger = b.review.as_ref()?;
    let mut out = format!("### Review coverage\n\n{}.", ledger_counts(ledger, b.trigger));
    if !ledger.is_complete() {
        let run = if b.trigger == Trigger::Proactive { "review" } else { "run" };
        out.push_str(&format!(" **This {run} did not read the whole diff**: what it left out is listed here, and it does not pass the pull request."));
    }
    if let Some(reason) = &ledger.unlisted {
        out.push_str(&format!("\n\n**Changed files not listed:** {}", prose(ctx, reason, LINE_MAX)));
    }
    if let Some(since) = ledger.since.as_deref() {
        out.push_str(&format!(
            "\n\nThis review read only what changed since {}, the head an earlier review of this pull request read; {} changed file{} unchanged since then {} not shown again.",
            code(ctx, since),
            ledger.unchanged.len(),
            if ledger.unchanged.len() == 1 { "" } else { "s" },
            if ledger.unchanged.len() == 1 { "was" } else { "were" },
        ));
    }
    // Gaps first: a reader sees what was not read before what was.
    let mut rows: Vec<&agent_zero_contracts::FileCoverage> =
        ledger.files.iter().filter(|f| f.review == FileReview::Skipped).collect();
    rows.extend(ledger.files.iter().filter(|f| f.review == FileReview::Partial));
    rows.extend(ledger.files.iter().filter(|f| f.review == FileReview::Reviewed));
    if rows.is_empty() && ledger.unchanged.is_empty() {
        return Some(out);
    }
    let shown = max_items.unwrap_or(usize::MAX).min(rows.len());
    out.push('\n');
    for f in &rows[..shown] {
        let reason = f.reason.map_or("", |r| r.as_str());
        let line = match f.review {
            FileReview::Skipped => format!("\n- **skipped** ({reason}): {}", code(ctx, &f.path)),
            FileReview::Partial => format!(
                "\n- **reviewed in part** ({reason}): {} · read {} · left out {}",
                code(ctx, &f.path),
                hunk_list(ctx, &f.hunks),
                hunk_list(ctx, &f.skipped_hunks)
            ),
            FileReview::Reviewed => format!("\n- reviewed: {}", code(ctx, &f.path)),
        };
        out.push_str(&line);
    }
    if shown < rows.len() {
        out.push_str(&format!("\n- … and {} more files; the evidence document lists every one.", rows.len() - shown));
    }
    let room = max_items.unwrap_or(usize::MAX).saturating_sub(shown).min(ledger.unchanged.len());
    for path in &ledger.unchanged[..room] {
        out.push_str(&format!("\n- unchanged since the earlier review: {}", code(ctx, path)));
    }
    if room < ledger.unchanged.len() {
        out.push_str(&format!(
            "\n- … and {} more unchanged files; the evidence document lists every one.",
            ledger.unchanged.len() - room
        ));
    }
    Some(out)
}

/// `<code>@@ … @@</code>, …` for at most [`HUNKS_LISTED`] hunks, then a count.
fn hunk_list(ctx: &Ctx<'_>, hunks: &[String]) -> String {
    let mut shown: Vec<String> = hunks.iter().take(HUNKS_LISTED).map(|h| code(ctx, h)).collect();
    if hunks.len() > HUNKS_LISTED {
        shown.push(format!("and {} more", hunks.len() - HUNKS_LISTED));
    }
    if shown.is_empty() { "none".to_owned() } else { shown.join(", ") }
}

/// The review a pull-request run posts: only for a proactive run whose
/// finding was accepted. `None` otherwise (the check run still reports).
pub fn render_review(bundle: &EvidenceBundle, options: &RenderOptions<'_>) -> Option<ReviewOutput> {
    let ledger = bundle.review.as_ref()?;
    let finding = bundle.finding.as_ref().filter(|f| f.verdict == Verdict::Accepted)?;
    if bundle.trigger != Trigger::Proactive {
        return None;
    }
    let ctx = Ctx::new(options);
    let claim = &finding.claim;
    let anchored: Vec<_> = ledger.anchors.iter().filter(|a| a.finding_id == finding.id).collect();
    let mut blocks = vec![format!(
        "## Agent Zero review · 1 supported finding\n\n**{}** · severity {} · confidence {}",
        inline(&ctx, &claim.title),
        claim.severity,
        confidence(claim.confidence)
    )];
    let witness = bundle.witness.as_ref().filter(|w| w.finding_id == finding.id);
    blocks.push(match (anchored.first(), witness) {
        (Some(a), _) => format!("Commented on {} line {}.", code(&ctx, &a.path), a.line),
        (None, Some(w)) if w.withheld => {
            "Not posted on a line: <code>review.requireWitness</code> is on and the witness below did not reproduce \
             the claim."
                .to_owned()
        }
        (None, _) => {
            "The quoted evidence is not on a line this diff shows, so it is reported here and not on a line.".to_owned()
        }
    });
    blocks.extend(witness.map(|w| sections::witness(&ctx, w, options.max_block_bytes)));
    blocks.push(format!(
        "### Explanation (untrusted model output)\n\n{}",
        fenced(&ctx, &claim.explanation, options.max_block_bytes, Keep::Head)
    ));
    blocks.extend(ledger_block(&ctx, bundle));
    blocks.push("This review only comments: it neither approves nor requests changes.".to_owned());
    blocks.push(sections::footer(&ctx, bundle));
    let body = fit(&ctx, sections::join(blocks), options.max_bytes);
    let comments = anchored
        .into_iter()
        .map(|a| {
            let mark =
                witness.map(|w| format!(" · **{}** by a witness", sections::witness_label(w))).unwrap_or_default();
            let mut text =
                format!("**Agent Zero · {}** (severity {}){mark}\n\n", inline(&ctx, &claim.title), claim.severity);
            text.push_str(&fenced(&ctx, &claim.explanation, options.max_block_bytes, Keep::Head));
            for quote in &claim.evidence {
                text.push_str("\n\nEvidence:\n\n");
                text.push_str(&fenced(&ctx, quote, options.max_block_bytes, Keep::Head));
            }
            if let Some(w) = witness {
                text.push_str(&format!("\n\n{}", sections::witness(&ctx, w, options.max_block_bytes)));
            }
            ReviewComment {
                path: a.path.clone(),
                line: a.line,
                start_line: a.start_line,
                body: fit(&ctx, text, options.max_bytes),
                quote: a.quote.clone(),
            }
        })
        .collect();
    Some(ReviewOutput { body, comments })
}

fn ledger_block(ctx: &Ctx<'_>, b: &EvidenceBundle) -> Option<String> {
    ledger(ctx, b, Some(sections::GITHUB_GAPS_LISTED))
}
