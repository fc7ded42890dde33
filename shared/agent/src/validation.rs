//! Validation: the verdict on a model's claim comes from repository
//! evidence, never from the reviewer's or the model's assertion.
//!
//! A claim is rejected when the model itself could not support it, its
//! confidence is not a number in `[0, 1]`, it cites no evidence, it names a
//! path outside the checkout, it names no file that exists, or it quotes
//! text that is not in the files it names. Every reason is collected, none
//! short-circuits: the report is the product. A claim with no reason
//! against it but a confidence below `validation.minConfidence` is
//! `inconclusive`.
//!
//! What counts as a quote: the contract says evidence entries are quoted
//! repository text. An entry that contains backtick spans (`` `x` `` or a
//! fenced block) quotes those spans (spans shorter than
//! [`MIN_SPAN_CHARS`] are identifiers in prose and are not checked). A
//! quote appears in a cited file that exists when it does with runs of
//! whitespace collapsed to one space and otherwise exactly. The repository
//! chooses the rule (`validation.quotes`, see `docs/trust.md`):
//!
//! - `all` (the default): an entry without backticks is itself a quote
//!   (the schema asks for exact repository text), and every quote must
//!   appear;
//! - `any` (the reference's rule): an entry without backticks is prose, and
//!   one quote appearing confirms the claim; the others are recorded in
//!   the finding's [`QuoteCheck`], not held against it.
//!
//! Under either rule, with `validation.verifyQuotedEvidence`, at least one
//! quote must verify: a claim whose evidence holds no quote to check is
//! `inconclusive`, never `accepted`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use agent_zero_contracts::{Finding, ModelFinding, QuoteCheck, QuoteRule, Verdict, is_repository_relative_path};

use crate::policy::ValidationPolicy;

/// Shortest backtick span worth checking against the repository (the
/// reference's 8 characters, under either rule).
pub const MIN_SPAN_CHARS: usize = 8;

/// Most required files named in a rejection reason.
const MAX_LISTED_REQUIRED: usize = 10;

/// Longest quote repeated in a rejection reason.
const MAX_QUOTE_CHARS: usize = 120;

/// What the discover step learned about the checkout: every tracked file,
/// and the contents of the files a claim cites (read through the sandbox).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepositoryFacts {
    files: BTreeSet<String>,
    contents: BTreeMap<String, String>,
    /// The files a claim must cite one of (a pull request's changed files,
    /// the reference's `requiredFiles`); `None`: no such rule.
    required: Option<BTreeSet<String>>,
}

impl RepositoryFacts {
    /// Facts for a checkout holding `files` (repository-relative paths).
    pub fn new<I, S>(files: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            files: files.into_iter().map(|f| normalize_path(&f.into())).collect(),
            contents: BTreeMap::new(),
            required: None,
        }
    }

    /// Requires a claim to cite at least one of `files` (a proactive
    /// review's finding must be about a file the pull request changed).
    pub fn require_files<I, S>(&mut self, files: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required = Some(files.into_iter().map(|f| normalize_path(&f.into())).collect());
    }

    /// Records the content of `path` (also adding it to the file list).
    pub fn insert_content(&mut self, path: &str, content: impl Into<String>) {
        let path = normalize_path(path);
        self.files.insert(path.clone());
        self.contents.insert(path, content.into());
    }

    /// Builder form of [`RepositoryFacts::insert_content`].
    #[must_use]
    pub fn with_content(mut self, path: &str, content: impl Into<String>) -> Self {
        self.insert_content(path, content);
        self
    }

    /// Whether `path` names a file in the checkout (`./a` and `a\b` are
    /// read as `a` and `a/b`).
    pub fn has_file(&self, path: &str) -> bool {
        self.files.contains(&normalize_path(path))
    }

    /// The recorded content of `path`, if it was read.
    pub fn content(&self, path: &str) -> Option<&str> {
        self.contents.get(&normalize_path(path)).map(String::as_str)
    }

    /// Every file in the checkout, sorted.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(String::as_str)
    }
}

/// One reason a claim was not accepted.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RejectionReason {
    /// The model reported `valid: false`.
    ModelMarkedInvalid,
    /// The self-reported confidence is NaN, infinite or outside `[0, 1]`.
    ConfidenceOutOfRange { confidence: f64 },
    /// No non-blank evidence entry (`validation.requireEvidence`).
    NoEvidence,
    /// Cited paths that cannot be inside the checkout.
    PathsOutsideCheckout { paths: Vec<String> },
    /// No file named at all (`validation.requireKnownFiles`).
    NoFileNamed,
    /// Files named, none of them exists (`validation.requireKnownFiles`).
    NoKnownFile { missing: Vec<String> },
    /// Quotes found in none of the existing cited files
    /// (`validation.verifyQuotedEvidence`): under `all` those missing,
    /// under `any` every quote, since none was found.
    QuotesNotFound { quotes: Vec<String>, rule: QuoteRule },
    /// A pull-request review's claim that cites none of the files the pull
    /// request changed (the reference's `requiredFiles`).
    NoRequiredFile { required: Vec<String> },
    /// Quotes to check, but no existing cited file's content was available.
    QuotesUnverifiable { quotes: Vec<String> },
    /// Nothing checkable was quoted (only spans shorter than
    /// [`MIN_SPAN_CHARS`], or under `any` only prose): `inconclusive`.
    NoQuoteToVerify { rule: QuoteRule },
    /// Supported, but below `validation.minConfidence`: `inconclusive`.
    BelowMinConfidence { confidence: f64, min_confidence: f64 },
}

impl fmt::Display for RejectionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ModelMarkedInvalid => f.write_str("The model could not support the claim with repository evidence."),
            Self::ConfidenceOutOfRange { confidence } => {
                write!(f, "Reported confidence {confidence} is outside 0 to 1.")
            }
            Self::NoEvidence => f.write_str("No evidence was cited for the claim."),
            Self::PathsOutsideCheckout { paths } => {
                write!(f, "Cited paths are not inside the checkout: {}.", paths.join(", "))
            }
            Self::NoFileNamed => f.write_str("The claim does not name any repository file."),
            Self::NoKnownFile { missing } => {
                write!(f, "None of the cited files exist in the checkout: {}.", missing.join(", "))
            }
            Self::NoRequiredFile { required } => {
                let shown: Vec<&str> = required.iter().take(MAX_LISTED_REQUIRED).map(String::as_str).collect();
                let more = required.len().saturating_sub(shown.len());
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                write!(f, "The claim cites none of the files this pull request changed: {}{more}.", shown.join(", "))
            }
            Self::QuotesNotFound { quotes, rule: QuoteRule::All } => write!(
                f,
                "Quoted evidence does not appear in the cited files (`validation.quotes: all`: every quote must): {}.",
                backticked(quotes)
            ),
            Self::QuotesNotFound { quotes, rule: QuoteRule::Any } => write!(
                f,
                "Quoted evidence does not appear in the cited files (`validation.quotes: any`: one quote of at least \
                 {MIN_SPAN_CHARS} characters must, and none does): {}.",
                backticked(quotes)
            ),
            Self::QuotesUnverifiable { quotes } => write!(
                f,
                "Quoted evidence could not be checked: no cited file's content was available: {}.",
                backticked(quotes)
            ),
            Self::NoQuoteToVerify { rule: QuoteRule::All } => write!(
                f,
                "The evidence quotes no repository text that could be checked (every backtick span is shorter than {MIN_SPAN_CHARS} characters)."
            ),
            Self::NoQuoteToVerify { rule: QuoteRule::Any } => write!(
                f,
                "The evidence quotes no repository text that could be checked (`validation.quotes: any` reads only \
                 backtick spans, and none is {MIN_SPAN_CHARS} characters or longer)."
            ),
            Self::BelowMinConfidence { confidence, min_confidence } => {
                write!(f, "Confidence {confidence:.2} is below the {min_confidence:.2} required to act.")
            }
        }
    }
}

/// The verdict and every reason behind it (empty when accepted).
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    pub verdict: Verdict,
    pub reasons: Vec<RejectionReason>,
    /// The quote check, when quotes were checked against read files.
    pub quotes: Option<QuoteCheck>,
}

/// Judges `finding` against the repository under `policy`.
pub fn assess(finding: &ModelFinding, repo: &RepositoryFacts, policy: &ValidationPolicy) -> Assessment {
    let mut reasons = Vec::new();
    if !finding.valid {
        reasons.push(RejectionReason::ModelMarkedInvalid);
    }
    let confidence = finding.confidence;
    let confidence_ok = confidence.is_finite() && (0.0..=1.0).contains(&confidence);
    if !confidence_ok {
        reasons.push(RejectionReason::ConfidenceOutOfRange { confidence });
    }
    let evidence: Vec<&str> = finding.evidence.iter().map(String::as_str).filter(|e| !e.trim().is_empty()).collect();
    if policy.require_evidence && evidence.is_empty() {
        reasons.push(RejectionReason::NoEvidence);
    }

    let (inside, outside): (Vec<&String>, Vec<&String>) =
        finding.files.iter().partition(|p| is_repository_relative_path(p));
    if !outside.is_empty() {
        let paths = outside.into_iter().cloned().collect();
        reasons.push(RejectionReason::PathsOutsideCheckout { paths });
    }
    let (known, missing): (Vec<&String>, Vec<&String>) = inside.into_iter().partition(|p| repo.has_file(p));
    if policy.require_known_files && known.is_empty() {
        reasons.push(if missing.is_empty() {
            RejectionReason::NoFileNamed
        } else {
            RejectionReason::NoKnownFile { missing: missing.into_iter().cloned().collect() }
        });
    }
    if let Some(required) = &repo.required {
        let cites_one = known.iter().any(|p| required.contains(&normalize_path(p)));
        if !cites_one {
            reasons.push(RejectionReason::NoRequiredFile { required: required.iter().cloned().collect() });
        }
    }

    let mut unsupported = Vec::new();
    let mut check = None;
    if policy.verify_quoted_evidence && !known.is_empty() {
        let rule = policy.quotes;
        let quotes = quotes(&evidence, rule);
        if quotes.is_empty() && !evidence.is_empty() {
            unsupported.push(RejectionReason::NoQuoteToVerify { rule });
        }
        let texts: Vec<String> = known.iter().filter_map(|p| repo.content(p)).map(collapse_whitespace).collect();
        if !quotes.is_empty() && texts.is_empty() {
            reasons.push(RejectionReason::QuotesUnverifiable { quotes });
        } else if !quotes.is_empty() {
            let (found, not_found): (Vec<String>, Vec<String>) =
                quotes.into_iter().partition(|q| texts.iter().any(|t| t.contains(q.as_str())));
            let refused = match rule {
                QuoteRule::All => !not_found.is_empty(),
                QuoteRule::Any => found.is_empty(),
            };
            if refused {
                reasons.push(RejectionReason::QuotesNotFound { quotes: not_found.clone(), rule });
            }
            check = Some(QuoteCheck { rule, found, not_found });
        }
    }

    if !reasons.is_empty() {
        return Assessment { verdict: Verdict::Rejected, reasons, quotes: check };
    }
    if confidence < policy.min_confidence {
        let min_confidence = policy.min_confidence;
        unsupported.push(RejectionReason::BelowMinConfidence { confidence, min_confidence });
    }
    if !unsupported.is_empty() {
        return Assessment { verdict: Verdict::Inconclusive, reasons: unsupported, quotes: check };
    }
    Assessment { verdict: Verdict::Accepted, reasons, quotes: check }
}

/// Validates `finding` into a [`Finding`] whose id is a stable hash of the
/// claim (the same model output gives the same id on a redelivered tick).
pub fn validate(finding: &ModelFinding, repo: &RepositoryFacts, policy: &ValidationPolicy) -> Finding {
    let Assessment { verdict, reasons, quotes } = assess(finding, repo, policy);
    Finding {
        id: finding_id(finding),
        claim: finding.clone(),
        verdict,
        rejection_reasons: reasons.iter().map(ToString::to_string).collect(),
        quote_check: quotes,
    }
}

/// The cited files that earn write scope by their own content: each holds
/// at least one of the claim's verified quotes. One supported quote in
/// one file earns that file, not every file the claim names. Without
/// `validation.verifyQuotedEvidence` the operator chose not to check
/// quotes, and every cited file that exists earns scope as before.
pub fn quoted_files(finding: &ModelFinding, repo: &RepositoryFacts, policy: &ValidationPolicy) -> Vec<String> {
    let known = finding.files.iter().filter(|p| is_repository_relative_path(p) && repo.has_file(p));
    if !policy.verify_quoted_evidence {
        return inserted_in_order(known.map(|p| normalize_path(p)));
    }
    let evidence: Vec<&str> = finding.evidence.iter().map(String::as_str).filter(|e| !e.trim().is_empty()).collect();
    let quotes = quotes(&evidence, policy.quotes);
    let holds_one = |path: &&String| {
        repo.content(path).map(collapse_whitespace).is_some_and(|text| quotes.iter().any(|q| text.contains(q.as_str())))
    };
    inserted_in_order(known.filter(holds_one).map(|p| normalize_path(p)))
}

/// Whether untrusted `text` (an issue, a comment) names `path`: the path
/// appears whole, not inside a longer name (`lib.rs` is not named by
/// `mylib.rs` or `lib.rs.bak`). A sentence's full stop after it still
/// names it.
pub fn names_path(text: &str, path: &str) -> bool {
    let path = normalize_path(path);
    if path.is_empty() {
        return false;
    }
    let part_of_name = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-');
    text.match_indices(path.as_str()).any(|(start, _)| {
        let before = text[..start].chars().next_back();
        let after = &text[start + path.len()..];
        let mut rest = after.chars();
        let whole_after = match rest.next() {
            None => true,
            Some('.') => !rest.next().is_some_and(part_of_name),
            Some(c) => !part_of_name(c) && c != '/',
        };
        !before.is_some_and(|c| part_of_name(c) || c == '.') && whole_after
    })
}

/// `items` without repeats, first occurrence kept.
fn inserted_in_order(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// `finding-` and 16 hex digits of FNV-1a over the claim's text fields.
pub fn finding_id(finding: &ModelFinding) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let fields = [&finding.title, &finding.explanation].into_iter();
    for part in fields.chain(&finding.files).chain(&finding.evidence) {
        for byte in part.bytes().chain([0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("finding-{hash:016x}")
}

/// The quotes a claim's evidence makes, as validation checks them under
/// `rule` (backtick spans of at least [`MIN_SPAN_CHARS`], and under `all` a
/// whole entry without backticks), whitespace-collapsed and de-duplicated.
pub fn evidence_quotes(evidence: &[String], rule: QuoteRule) -> Vec<String> {
    let entries: Vec<&str> = evidence.iter().map(String::as_str).filter(|e| !e.trim().is_empty()).collect();
    quotes(&entries, rule)
}

/// The quotes in `evidence`, whitespace-collapsed and de-duplicated.
fn quotes(evidence: &[&str], rule: QuoteRule) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for entry in evidence {
        let candidates = if entry.contains('`') {
            backtick_spans(entry).into_iter().filter(|s| s.chars().count() >= MIN_SPAN_CHARS).collect()
        } else {
            match rule {
                QuoteRule::All => vec![collapse_whitespace(entry)],
                // Prose, as the reference reads it.
                QuoteRule::Any => Vec::new(),
            }
        };
        for quote in candidates {
            if !quote.is_empty() && !found.contains(&quote) {
                found.push(quote);
            }
        }
    }
    found
}

/// Backtick spans of `text`: fenced blocks (```lang\n...```) and inline
/// `` `code` `` runs, whitespace-collapsed.
fn backtick_spans(text: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let ticks = rest[start..].chars().take_while(|c| *c == '`').count();
        let fence = &rest[start..start + ticks];
        let after = &rest[start + ticks..];
        let Some(end) = after.find(fence) else { break };
        let mut body = &after[..end];
        if ticks >= 3 {
            // Drop the info string (```rust) on the opening line.
            body = body.split_once('\n').map_or(body, |(_, code)| code);
        }
        spans.push(collapse_whitespace(body));
        rest = &after[end + ticks..];
    }
    spans
}

/// Trims and collapses every run of whitespace to one space.
fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `./a\b` -> `a/b`: the spelling the file list uses.
pub(crate) fn normalize_path(path: &str) -> String {
    let path = path.replace('\\', "/");
    path.strip_prefix("./").unwrap_or(&path).to_owned()
}

/// Quotes for a message, each cut to [`MAX_QUOTE_CHARS`] characters: they
/// are untrusted model output and the reason must stay readable.
fn backticked(quotes: &[String]) -> String {
    let cut = |q: &String| {
        if q.chars().count() <= MAX_QUOTE_CHARS {
            format!("`{q}`")
        } else {
            format!("`{}…`", q.chars().take(MAX_QUOTE_CHARS).collect::<String>())
        }
    };
    quotes.iter().map(cut).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
#[path = "validation_tests.rs"]
mod tests;
