//! A pull-request review's reading of the diff: which of the changed files
//! (as the forge lists them, `base...head`) the model is shown, whole or in
//! part, within a per-file and a total budget (the policy's `review`
//! section), and the ledger that says so; then where a supported finding
//! sits on the right side of those hunks. Pure: the listing comes in, text
//! and ledger go out.

use agent_zero_agent::evidence_quotes;
use agent_zero_agent::policy::ReviewPolicy;
use agent_zero_contracts::{
    DiffAnchor, FileCoverage, FileReview, Finding, QuoteRule, ReviewLedger, SkipReason, Verdict,
};

use crate::ports::{ChangedFile, ChangedFiles};
use crate::store::MAX_VALUE_BYTES;

/// How many bytes of diff the model is shown: of the whole diff (file
/// headers included) and of one file's patch. The prompt holds the whole
/// text as [`read`] wrote it, so nothing past the ledger is ever cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub(crate) total: usize,
    pub(crate) file: usize,
}

impl Budget {
    /// The repository policy's budget (`review.diffBudgetBytes`,
    /// `review.fileBudgetBytes`, both bounded when the policy was read).
    pub(crate) fn of(policy: &ReviewPolicy) -> Self {
        Self { total: policy.diff_budget_bytes as usize, file: policy.file_budget_bytes as usize }
    }

    /// This budget, or less where the diff would not fit beside the
    /// repository's file list: the log entry that records both is one
    /// stored value ([`MAX_VALUE_BYTES`]), where JSON escaping may double
    /// the diff. What does not fit is then in the ledger as `diff budget
    /// spent`, rather than a run that fails on its entry's size.
    pub(crate) fn beside(self, files: &[String]) -> Self {
        let listed: usize = files.iter().map(|f| f.len() + 3).sum();
        let room = MAX_VALUE_BYTES.saturating_sub(listed + ENTRY_ROOM_BYTES) / 2;
        Self { total: self.total.min(room), ..self }
    }
}

/// Room kept in the entry that records the diff for everything else it
/// holds (the ledger's paths and hunk headers, the checks, the omissions).
const ENTRY_ROOM_BYTES: usize = 100_000;

/// Most consecutive lines one anchor may span.
const MAX_ANCHOR_LINES: usize = 40;

/// Lockfiles and build outputs nobody writes by hand.
const GENERATED_NAMES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lock",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "Gemfile.lock",
    "composer.lock",
    "go.sum",
    "flake.lock",
    "mix.lock",
    "Podfile.lock",
    "packages.lock.json",
];
const GENERATED_SUFFIXES: &[&str] =
    &[".min.js", ".min.css", ".js.map", ".css.map", ".pb.go", "_pb2.py", "_pb2_grpc.py", ".g.dart", ".designer.cs"];
/// Directories of third-party code kept in a repository.
const VENDORED_DIRS: &[&str] = &["vendor", "vendored", "node_modules", "third_party", "third-party"];

/// The diff text the model is shown and the ledger of what it holds.
pub(crate) fn read(listed: &ChangedFiles, head_sha: Option<&str>, budget: Budget) -> (String, ReviewLedger) {
    let mut text = String::new();
    let mut files = Vec::with_capacity(listed.files.len());
    for file in &listed.files {
        files.push(read_file(file, &mut text, budget));
    }
    let ledger = ReviewLedger {
        head_sha: head_sha.map(str::to_owned),
        files,
        unlisted: listed.cut.clone(),
        anchors: Vec::new(),
        since: listed.since.clone(),
        unchanged: listed.unchanged.clone(),
    };
    (text, ledger)
}

/// The ledger of a review whose changed files could not be listed.
pub(crate) fn unlisted(reason: String, head_sha: Option<&str>) -> ReviewLedger {
    ReviewLedger {
        head_sha: head_sha.map(str::to_owned),
        files: Vec::new(),
        unlisted: Some(reason),
        ..ReviewLedger::default()
    }
}

/// The header of a file's section in the diff text.
fn section_header(path: &str) -> String {
    format!("diff --git a/{path} b/{path}\n")
}

fn skipped(path: &str, reason: SkipReason) -> FileCoverage {
    FileCoverage {
        path: path.to_owned(),
        review: FileReview::Skipped,
        hunks: Vec::new(),
        skipped_hunks: Vec::new(),
        reason: Some(reason),
    }
}

/// Appends what fits of `file` to `text`; its ledger entry.
fn read_file(file: &ChangedFile, text: &mut String, budget: Budget) -> FileCoverage {
    let path = file.path.as_str();
    if let Some(reason) = kind_skip(path) {
        return skipped(path, reason);
    }
    let Some(patch) = file.patch.as_deref().filter(|p| !p.trim().is_empty()) else {
        // GitHub sends no patch for a binary file (no lines counted) and for
        // a text diff too large for it.
        let reason = if file.additions + file.deletions == 0 { SkipReason::Binary } else { SkipReason::TooLarge };
        return skipped(path, reason);
    };
    let header = section_header(path);
    let remaining = budget.total.saturating_sub(text.len() + header.len());
    let cap = budget.file.min(remaining);
    let cut_reason =
        if remaining < budget.file && patch.len() > remaining { SkipReason::Budget } else { SkipReason::TooLarge };
    let mut body = String::new();
    let (mut read, mut left) = (Vec::new(), Vec::new());
    for hunk in hunks(patch) {
        let mut hunk_text = hunk.to_owned();
        if !hunk_text.ends_with('\n') {
            hunk_text.push('\n');
        }
        let head = hunk.lines().next().unwrap_or_default().to_owned();
        if body.len() + hunk_text.len() <= cap {
            body.push_str(&hunk_text);
            read.push(head);
        } else {
            left.push(head);
        }
    }
    if read.is_empty() {
        return skipped(path, cut_reason);
    }
    text.push_str(&header);
    text.push_str(&body);
    if left.is_empty() {
        return FileCoverage {
            path: path.to_owned(),
            review: FileReview::Reviewed,
            hunks: Vec::new(),
            skipped_hunks: Vec::new(),
            reason: None,
        };
    }
    FileCoverage {
        path: path.to_owned(),
        review: FileReview::Partial,
        hunks: read,
        skipped_hunks: left,
        reason: Some(cut_reason),
    }
}

/// Why `path` is skipped for what it is, whatever its size.
fn kind_skip(path: &str) -> Option<SkipReason> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let mut dirs = path.split('/').rev().skip(1);
    if dirs.any(|d| VENDORED_DIRS.contains(&d)) {
        return Some(SkipReason::Vendored);
    }
    let generated = GENERATED_NAMES.contains(&name)
        || GENERATED_SUFFIXES.iter().any(|s| name.ends_with(s))
        || name.contains(".generated.");
    generated.then_some(SkipReason::Generated)
}

/// The hunks of a patch: each from its `@@` line to the next one. Text
/// before the first `@@` (none from GitHub) is dropped.
fn hunks(patch: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in patch.split_inclusive('\n') {
        if line.starts_with("@@") {
            starts.push(offset);
        }
        offset += line.len();
    }
    starts.iter().enumerate().map(|(i, &s)| &patch[s..starts.get(i + 1).copied().unwrap_or(patch.len())]).collect()
}

/// One line of the head's version shown by a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RightLine {
    number: u32,
    text: String,
    added: bool,
}

/// The right-side lines of each hunk of `body` (context and additions).
fn right_lines(body: &str) -> Vec<Vec<RightLine>> {
    let mut out = Vec::new();
    for hunk in hunks(body) {
        let mut lines = hunk.lines();
        let header = lines.next().unwrap_or_default();
        let Some(mut number) = right_start(header) else { continue };
        let mut shown = Vec::new();
        for line in lines {
            match line.as_bytes().first() {
                Some(b'+') => {
                    shown.push(RightLine { number, text: line[1..].to_owned(), added: true });
                    number += 1;
                }
                Some(b' ') => {
                    shown.push(RightLine { number, text: line[1..].to_owned(), added: false });
                    number += 1;
                }
                // An empty context line some tools send without its space.
                None => {
                    shown.push(RightLine { number, text: String::new(), added: false });
                    number += 1;
                }
                _ => {} // `-` (left side only) and `\ No newline at end of file`
            }
        }
        out.push(shown);
    }
    out
}

/// `c` of `@@ -a,b +c,d @@`.
fn right_start(header: &str) -> Option<u32> {
    let plus = header.strip_prefix("@@ -")?.split_once(" +")?.1;
    let end = plus.find([',', ' ']).unwrap_or(plus.len());
    plus[..end].parse().ok()
}

/// The ledger a run concludes with: the discovered one, with the
/// validated finding's place in the diff.
pub(crate) fn ledger(resident: &crate::resident::Resident) -> Option<ReviewLedger> {
    let mut ledger = resident.discovery.review.clone()?;
    // `review.requireWitness` keeps a bug claim its witness did not
    // reproduce off the lines (the evidence says why).
    if let (Some(diff), Some(finding)) = (&resident.discovery.diff, &resident.attempt.finding)
        && !crate::witness::withheld(resident)
    {
        ledger.anchors = anchor(&ledger, diff, finding).into_iter().collect();
    }
    Some(ledger)
}

/// The body of each shown file's section of the diff text, in ledger
/// order (the order [`read`] wrote them).
fn sections<'d>(shown: &[&FileCoverage], diff: &'d str) -> Vec<&'d str> {
    let mut found = Vec::new();
    let mut rest = diff;
    for (index, file) in shown.iter().enumerate() {
        let Some(body) = rest.strip_prefix(section_header(&file.path).as_str()) else { break };
        let next = shown.get(index + 1).map(|n| section_header(&n.path));
        // A header only ever starts a line; patch lines start with ` `, `+`, `-` or `\\`.
        let end = next.and_then(|h| body.find(&format!("\n{h}")).map(|at| at + 1)).unwrap_or(body.len());
        found.push(&body[..end]);
        rest = &body[end..];
    }
    found
}

/// Where the supported `finding` sits in the diff: the first of its quotes
/// found on consecutive right-side lines of one hunk of a file it cites
/// (a range with an added line preferred), or nothing. Only quotes
/// validation found count (under `validation.quotes: any` some may not
/// be); with quote checks off, every quote as `all` reads them.
pub(crate) fn anchor(ledger: &ReviewLedger, diff: &str, finding: &Finding) -> Option<DiffAnchor> {
    if finding.verdict != Verdict::Accepted {
        return None;
    }
    let quotes = finding
        .quote_check
        .as_ref()
        .map_or_else(|| evidence_quotes(&finding.claim.evidence, QuoteRule::All), |check| check.found.clone());
    let shown: Vec<&FileCoverage> = ledger.files.iter().filter(|f| f.review != FileReview::Skipped).collect();
    let bodies = sections(&shown, diff);
    for cited in &finding.claim.files {
        let cited = cited.replace('\\', "/");
        let cited = cited.strip_prefix("./").unwrap_or(&cited);
        let Some(index) = shown.iter().position(|f| f.path == cited) else { continue };
        let Some(body) = bodies.get(index) else { continue };
        let hunks = right_lines(body);
        for want_added in [true, false] {
            for quote in &quotes {
                for lines in &hunks {
                    if let Some((start, end)) = find_quote(lines, quote, want_added) {
                        let (first, last) = (lines[start].number, lines[end].number);
                        return Some(DiffAnchor {
                            finding_id: finding.id.clone(),
                            path: cited.to_owned(),
                            line: last,
                            start_line: (first < last).then_some(first),
                            quote: Some(quote.clone()),
                        });
                    }
                }
            }
        }
    }
    None
}

/// The tightest `start..=end` of `lines` whose text, whitespace-collapsed,
/// holds `quote`; with `want_added`, only ranges holding an added line.
fn find_quote(lines: &[RightLine], quote: &str, want_added: bool) -> Option<(usize, usize)> {
    let joined = |range: &[RightLine]| collapse(&range.iter().map(|l| l.text.as_str()).collect::<Vec<_>>().join(" "));
    for end in 0..lines.len() {
        let from = end.saturating_sub(MAX_ANCHOR_LINES - 1);
        // The latest start that still holds the quote is the tightest range ending here.
        let hit = (from..=end).rev().find(|&start| joined(&lines[start..=end]).contains(quote));
        // Tight at both ends: the range without its last line no longer holds it.
        let Some(start) = hit.filter(|&start| start == end || !joined(&lines[start..end]).contains(quote)) else {
            continue;
        };
        if !want_added || lines[start..=end].iter().any(|l| l.added) {
            return Some((start, end));
        }
    }
    None
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "review_tests.rs"]
mod tests;
