//! Markdown sections shared by the renderers. Each returns one block (no
//! surrounding blank lines); renderers join blocks with a blank line.

use agent_zero_contracts::{CheckResult, EvidenceBundle, QuoteCheck, QuoteRule, RunMode, TerminalState, WitnessRun};

use crate::coverage::gaps;
use crate::format::{argv, confidence, count, duration, thousands, usd};
use crate::markdown::escape::{code, fenced, in_html, inline, link_target, prose};
use crate::outcome::{change_status, outcome};
use crate::text::{Ctx, Keep};

/// Longest plan step, criterion or reason shown.
const PROSE_MAX: usize = 2_000;

/// Gaps listed one by one in GitHub-bound reports; the rest are counted.
pub(crate) const GITHUB_GAPS_LISTED: usize = 50;

/// `## Agent Zero · <headline>` and the status list.
pub(crate) fn header(b: &EvidenceBundle, prefix: &str) -> String {
    let o = outcome(b);
    format!(
        "## {prefix}{}\n\n- **Change:** {}\n- **Verdict:** {} · **State:** {} · **Mode:** {} · **Trigger:** {} · **Attempts:** {}",
        o.headline(),
        change_status(b),
        b.verdict,
        b.state,
        b.mode,
        b.trigger,
        b.attempts
    )
}

/// The issue and pull request the run is about. These links are ours and
/// meant to link; names still pass through the escaper.
pub(crate) fn references(ctx: &Ctx<'_>, b: &EvidenceBundle) -> Option<String> {
    let mut lines = Vec::new();
    if let Some(issue) = &b.issue {
        lines.push(format!(
            "- **Issue:** {}/{}#{} {}",
            inline(ctx, &issue.owner),
            inline(ctx, &issue.repo),
            issue.number,
            inline(ctx, &issue.title.text)
        ));
    }
    if let Some(pr) = &b.pull_request {
        lines.push(format!(
            "- **Pull request:** {}/{}#{} at {}",
            inline(ctx, &pr.owner),
            inline(ctx, &pr.repo),
            pr.number,
            code(ctx, &pr.head_sha)
        ));
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The claim, its quoted evidence (collapsed) and every rejection reason.
pub(crate) fn finding(ctx: &Ctx<'_>, b: &EvidenceBundle, max_block: usize) -> String {
    let Some(f) = &b.finding else {
        return "### Finding\n\nNo finding was recorded.".to_owned();
    };
    let claim = &f.claim;
    let mut out = format!(
        "### Finding\n\n**{}** · severity {} · confidence {} · risk {} · model's own judgement: {}",
        inline(ctx, &claim.title),
        claim.severity,
        confidence(claim.confidence),
        claim.change_risk,
        if claim.valid { "valid" } else { "not valid" }
    );
    if claim.files.is_empty() {
        out.push_str("\n\nFiles: none named.");
    } else {
        let files: Vec<String> = claim.files.iter().map(|p| code(ctx, p)).collect();
        out.push_str(&format!("\n\nFiles: {}", files.join(", ")));
    }
    out.push_str("\n\n<details><summary>Explanation and quoted evidence (untrusted model output)</summary>\n\n");
    out.push_str(&fenced(ctx, &claim.explanation, max_block, Keep::Head));
    if claim.evidence.is_empty() {
        out.push_str("\n\nNo evidence was quoted.");
    }
    for (i, quote) in claim.evidence.iter().enumerate() {
        out.push_str(&format!("\n\nQuoted evidence {} of {}:\n\n", i + 1, claim.evidence.len()));
        out.push_str(&fenced(ctx, quote, max_block, Keep::Head));
    }
    out.push_str("\n\n</details>");
    if let Some(check) = &f.quote_check {
        out.push_str(&format!("\n\n{}", quote_check(ctx, check)));
    }
    if let Some(w) = b.witness.as_ref().filter(|w| w.finding_id == f.id) {
        out.push_str(&format!("\n\n{}", witness(ctx, w, max_block)));
    }
    if !f.rejection_reasons.is_empty() {
        out.push_str(&format!(
            "\n\n### Why it was not accepted\n\n{}",
            list(f.rejection_reasons.iter().map(|r| prose(ctx, r, PROSE_MAX)))
        ));
    }
    out
}

/// `text` with its first letter upper-case (our own reasons start with an
/// ASCII letter; ASCII only keeps Unicode's case tables out of the wasm).
pub(crate) fn sentence(text: &str) -> String {
    let mut out = text.to_owned();
    if let Some(first) = out.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    out
}

/// `Reproduced` or `Not reproduced`: how a witness marks its claim.
pub(crate) fn witness_label(w: &WitnessRun) -> &'static str {
    if w.reproduced() { "Reproduced" } else { "Not reproduced" }
}

/// What a claim's witness showed (`docs/witness.md`): its outcome and why,
/// the file and the commits it ran at, its output at each (their ends),
/// and whether `review.requireWitness` kept the claim off the lines.
pub(crate) fn witness(ctx: &Ctx<'_>, w: &WitnessRun, max_block: usize) -> String {
    let outcome = if w.reproduced() { String::new() } else { format!(" ({})", w.outcome) };
    let mut out =
        format!("### Witness: {}{outcome}\n\n{}.", witness_label(w), prose(ctx, &sentence(&w.reason), PROSE_MAX));
    if let Some(path) = &w.path {
        out.push_str(&format!(
            " The model's test {} (sha256 {}) was run with the repository's <code>review.witness.command</code> in the sandbox, without credentials, and never pushed.",
            code(ctx, path),
            code(ctx, w.sha256.as_deref().map_or("", |d| d.get(..12).unwrap_or(d)))
        ));
    }
    if w.withheld && w.of_a_fix() {
        out.push_str(
            "\n\n**Not completed:** <code>review.requireWitness</code> is on and this bug was not reproduced, so a person decides.",
        );
    } else if w.withheld {
        out.push_str(
            "\n\n**Kept off the diff's lines:** <code>review.requireWitness</code> is on and this bug claim was not reproduced.",
        );
    }
    for (at, sha, run) in witness_runs(w) {
        let Some(run) = run else { continue };
        let commit = sha.as_deref().map(|s| format!(" {}", code(ctx, s.get(..7).unwrap_or(s)))).unwrap_or_default();
        out.push_str(&format!(
            "\n\n{at}{commit}: {} exited {}{} in {}.\n\n",
            code(ctx, &argv(&run.command)),
            run.exit_code,
            if run.timed_out { " (timed out)" } else { "" },
            duration(run.duration_ms)
        ));
        let output = format!("{}{}", run.stdout, run.stderr);
        out.push_str(&fenced(ctx, if output.is_empty() { "(no output)" } else { &output }, max_block, Keep::Tail));
    }
    out
}

/// A witness's runs, each with where it ran and the commit: a review's at
/// the head and the base, an issue run's before and after the fix.
pub(crate) fn witness_runs(w: &WitnessRun) -> [(&'static str, &Option<String>, &Option<CheckResult>); 4] {
    [
        ("On the head", &w.head_sha, &w.head),
        ("On the base", &w.base_sha, &w.base),
        ("Before the fix", &None, &w.before),
        ("After the fix", &None, &w.after),
    ]
}

/// Most quotes a quote-check line names; the evidence document and JSON
/// hold them all.
const MAX_LISTED_QUOTES: usize = 5;

/// Which quote rule applied (`validation.quotes`) and what it found: under
/// `any` an accepted claim may hold quotes no cited file has, and a reader
/// sees them.
fn quote_check(ctx: &Ctx<'_>, check: &QuoteCheck) -> String {
    let total = check.found.len() + check.not_found.len();
    let rule = match check.rule {
        QuoteRule::All => "every quote must appear in a cited file",
        QuoteRule::Any => "one quote of at least 8 characters in a cited file confirms the claim",
    };
    let mut out = format!(
        "Quote check (<code>validation.quotes: {}</code>, {rule}): {} of {total} found.",
        check.rule,
        check.found.len()
    );
    if !check.not_found.is_empty() {
        let shown: Vec<String> = check.not_found.iter().take(MAX_LISTED_QUOTES).map(|q| code(ctx, q)).collect();
        let more = check.not_found.len() - shown.len();
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        out.push_str(&format!(" Not found: {}{more}.", shown.join(", ")));
    }
    out
}

fn list(items: impl Iterator<Item = String>) -> String {
    items.map(|i| format!("- {i}")).collect::<Vec<_>>().join("\n")
}

/// The refused write, if any.
pub(crate) fn refusal(ctx: &Ctx<'_>, b: &EvidenceBundle) -> Option<String> {
    b.refusal
        .as_ref()
        .map(|r| format!("### {}\n\n{}: {}", refusal_heading(b), code(ctx, &r.code), prose(ctx, &r.message, PROSE_MAX)))
}

/// The heading of the refusal: on a `needs-human` stop it is a question
/// for a person, not a refusal.
pub(crate) fn refusal_heading(b: &EvidenceBundle) -> &'static str {
    if b.state == TerminalState::NeedsHuman { "Waiting for a person" } else { "Write refused" }
}

/// Numbered plan and acceptance criteria.
pub(crate) fn plan(ctx: &Ctx<'_>, b: &EvidenceBundle) -> String {
    let steps = if b.plan.is_empty() {
        "No plan was recorded.".to_owned()
    } else {
        b.plan
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {}", i + 1, prose(ctx, s, PROSE_MAX)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let criteria = if b.acceptance_criteria.is_empty() {
        "None were recorded.".to_owned()
    } else {
        list(b.acceptance_criteria.iter().map(|c| prose(ctx, c, PROSE_MAX)))
    };
    format!("### Plan\n\n{steps}\n\n### Acceptance criteria\n\n{criteria}")
}

/// Changed files.
pub(crate) fn changed_files(ctx: &Ctx<'_>, b: &EvidenceBundle) -> String {
    if b.changed_files.is_empty() {
        return "### Changed files\n\nNo file was changed.".to_owned();
    }
    format!("### Changed files ({})\n\n{}", b.changed_files.len(), list(b.changed_files.iter().map(|p| code(ctx, p))))
}

fn check_result(c: &CheckResult) -> &'static str {
    if c.timed_out {
        "**timed out**"
    } else if c.passed() {
        "passed"
    } else {
        "**failed**"
    }
}

/// Which check outputs to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outputs {
    /// Only checks that did not pass (GitHub-bound reports).
    Failing,
    /// Every check (the standalone document).
    All,
}

/// The checks table (command, exit code, duration) and collapsed outputs.
pub(crate) fn checks(ctx: &Ctx<'_>, b: &EvidenceBundle, outputs: Outputs, max_block: usize) -> String {
    if b.checks.is_empty() {
        return "### Checks\n\nNo check ran.".to_owned();
    }
    let passed = b.checks.iter().filter(|c| c.passed()).count();
    let mut out = format!(
        "### Checks ({passed} of {} passed)\n\n| Result | Command | Exit | Duration |\n|---|---|---:|---:|",
        b.checks.len()
    );
    for c in &b.checks {
        out.push_str(&format!(
            "\n| {} | {} | {} | {} |",
            check_result(c),
            code(ctx, &argv(&c.command)),
            c.exit_code,
            duration(c.duration_ms)
        ));
    }
    for c in b.checks.iter().filter(|c| outputs == Outputs::All || !c.passed()) {
        out.push_str(&format!(
            "\n\n<details><summary>Output of <code>{}</code> (exit {}{})</summary>\n\n",
            in_html(ctx, &argv(&c.command)),
            c.exit_code,
            if c.timed_out { ", timed out" } else { "" }
        ));
        for (name, stream) in [("stdout", &c.stdout), ("stderr", &c.stderr)] {
            out.push_str(&format!("{name}:\n\n{}\n\n", fenced(ctx, stream, max_block, Keep::Tail)));
        }
        if c.truncated_bytes > 0 {
            out.push_str(&format!(
                "The runner dropped {} bytes of this output at runner.maxOutputBytes.\n\n",
                thousands(c.truncated_bytes)
            ));
        }
        out.push_str("</details>");
    }
    out
}

/// What was not covered; says so when nothing is recorded as left out.
/// With `max_items`, the rest is counted by kind instead of listed.
pub(crate) fn coverage(ctx: &Ctx<'_>, b: &EvidenceBundle, max_items: Option<usize>) -> String {
    let gaps = gaps(b);
    if gaps.is_empty() {
        return "### Not covered\n\nNothing is recorded as left out.".to_owned();
    }
    let shown = max_items.unwrap_or(usize::MAX).min(gaps.len());
    let items = gaps[..shown].iter().map(|g| {
        let subject = if g.subject.is_empty() { String::new() } else { format!(" {}", code(ctx, &g.subject)) };
        format!("**{}**{subject}: {}", inline(ctx, &g.kind), prose(ctx, &g.reason, PROSE_MAX))
    });
    let mut out = format!("### Not covered ({})\n\n{}", gaps.len(), list(items));
    if shown < gaps.len() {
        let mut kinds: Vec<(&str, usize)> = Vec::new();
        for g in &gaps[shown..] {
            match kinds.iter_mut().find(|(k, _)| *k == g.kind) {
                Some((_, n)) => *n += 1,
                None => kinds.push((&g.kind, 1)),
            }
        }
        let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {}", inline(ctx, k))).collect();
        out.push_str(&format!(
            "\n- … and {} more not listed here ({}); the evidence document lists every one.",
            thousands((gaps.len() - shown) as u64),
            kinds.join(", ")
        ));
    }
    out
}

/// Where commands ran and what they were allowed to do.
pub(crate) fn runner(ctx: &Ctx<'_>, b: &EvidenceBundle) -> String {
    let r = &b.runner;
    let yes_no = |v: bool| if v { "yes" } else { "no" };
    let mut out = format!(
        "### Runner\n\nProvider {} · isolated: {} · writable: {} · network: {}",
        code(ctx, &r.provider),
        yes_no(r.isolated),
        yes_no(r.writable),
        r.network
    );
    if r.provider == "none" {
        out.push_str("\n\nNo sandbox was leased.");
    } else if !r.isolated {
        out.push_str("\n\n**Commands did not run in an isolated sandbox.**");
    }
    out
}

/// Tokens, model time and dollars (only when priced), then what the run
/// cost its host when its ticks were metered.
pub(crate) fn usage(b: &EvidenceBundle) -> String {
    let u = &b.usage;
    let cost = match u.cost_usd {
        Some(c) => format!("cost {}", usd(c)),
        None => "cost not priced (no model prices configured)".to_owned(),
    };
    let mut out = format!(
        "### Usage\n\n{} input tokens · {} output tokens · model time {} · {cost}",
        thousands(u.input_tokens),
        thousands(u.output_tokens),
        duration(u.latency_ms)
    );
    if let Some(c) = &b.cost {
        out.push_str(&format!("\n\nRun cost: {}\n\n<sub>{}</sub>", crate::cost::figures(c), crate::cost::COVERED));
    }
    out
}

/// The run's own summary (written by the run, may quote model output).
pub(crate) fn summary(ctx: &Ctx<'_>, b: &EvidenceBundle, max_block: usize) -> Option<String> {
    (!b.summary.trim().is_empty()).then(|| format!("### Summary\n\n{}", prose(ctx, &b.summary, max_block)))
}

/// What happens next, for the issue comment.
pub(crate) fn next_step(ctx: &Ctx<'_>, b: &EvidenceBundle) -> String {
    if let Some(r) = &b.refusal {
        if b.state == TerminalState::NeedsHuman {
            return format!(
                "A person decides: {} (see below); nothing is written without their approval.",
                code(ctx, &r.code)
            );
        }
        return format!("No change will be written: {} (see below).", code(ctx, &r.code));
    }
    if let Some(pr) = &b.pull_request {
        return format!(
            "Pull request {}/{}#{} carries the change.",
            inline(ctx, &pr.owner),
            inline(ctx, &pr.repo),
            pr.number
        );
    }
    if !b.mode.may_write() {
        return format!(
            "Mode {} does not write changes{}.",
            b.mode,
            if b.mode == RunMode::Suggest { "; a change may be proposed" } else { "" }
        );
    }
    "No pull request was opened.".to_owned()
}

/// The closing line: task, repository, evidence link.
pub(crate) fn footer(ctx: &Ctx<'_>, b: &EvidenceBundle) -> String {
    let mut out = format!(
        "---\n\n<sub>Agent Zero Edge · task {} · {} · {}",
        code(ctx, &b.task_id),
        code(ctx, &b.repository),
        count(b.transitions.len(), "event", "events")
    );
    if let Some(url) = ctx.opts.evidence_url {
        out.push_str(&format!(" · [full evidence]({})", link_target(ctx, url)));
    }
    if let Some(url) = ctx.opts.receipt_url {
        out.push_str(&format!(" · [signed receipt]({})", link_target(ctx, url)));
    }
    out.push_str("</sub>");
    out
}

/// Joins blocks with blank lines and ends with a newline.
pub(crate) fn join(blocks: impl IntoIterator<Item = String>) -> String {
    let mut out = blocks.into_iter().collect::<Vec<_>>().join("\n\n");
    out.push('\n');
    out
}
