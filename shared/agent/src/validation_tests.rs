use agent_zero_contracts::{ChangeRisk, ModelFinding, QuoteCheck, QuoteRule, Severity, Verdict};

use super::*;
use crate::policy::ValidationPolicy;

const LIB: &str =
    "pub fn parse(input: &str) -> Config {\n    let value = input.trim();\n    Config::from(value).unwrap()\n}\n";

fn repo() -> RepositoryFacts {
    RepositoryFacts::new(["src/lib.rs", "README.md", "src/main.rs"])
        .with_content("src/lib.rs", LIB)
        .with_content("README.md", "# Demo\n")
}

fn claim() -> ModelFinding {
    ModelFinding {
        title: "unwrap on user input".into(),
        explanation: "parse panics on bad input".into(),
        severity: Severity::High,
        confidence: 0.9,
        valid: true,
        evidence: vec!["`Config::from(value).unwrap()` panics".into()],
        files: vec!["src/lib.rs".into()],
        change_risk: ChangeRisk::Mechanical,
    }
}

fn policy() -> ValidationPolicy {
    ValidationPolicy::default()
}

fn reasons(finding: &ModelFinding) -> Vec<RejectionReason> {
    let a = assess(finding, &repo(), &policy());
    a.reasons
}

#[test]
fn a_supported_claim_is_accepted() {
    let f = validate(&claim(), &repo(), &policy());
    assert_eq!(f.verdict, Verdict::Accepted);
    assert!(f.rejection_reasons.is_empty());
    assert_eq!(f.claim, claim());
    assert!(f.id.starts_with("finding-") && f.id.len() == 24, "{}", f.id);
}

#[test]
fn model_saying_invalid_counts_against_it() {
    let f = ModelFinding { valid: false, ..claim() };
    assert_eq!(reasons(&f), [RejectionReason::ModelMarkedInvalid]);
}

#[test]
fn confidence_must_be_a_ratio() {
    for confidence in [f64::NAN, -0.1, 1.01, f64::INFINITY] {
        let f = ModelFinding { confidence, ..claim() };
        let a = assess(&f, &repo(), &policy());
        assert_eq!(a.verdict, Verdict::Rejected, "{confidence}");
        assert!(matches!(a.reasons[..], [RejectionReason::ConfidenceOutOfRange { .. }]));
    }
}

#[test]
fn no_evidence_is_rejected_unless_policy_waives_it() {
    let f = ModelFinding { evidence: vec![" ".into(), String::new()], ..claim() };
    assert_eq!(reasons(&f), [RejectionReason::NoEvidence]);
    let lax = ValidationPolicy { require_evidence: false, ..policy() };
    assert_eq!(assess(&f, &repo(), &lax).verdict, Verdict::Accepted);
}

#[test]
fn files_must_exist_in_the_repository() {
    let none = ModelFinding { files: vec![], ..claim() };
    assert_eq!(reasons(&none), [RejectionReason::NoFileNamed]);
    let ghost = ModelFinding { files: vec!["src/ghost.rs".into()], ..claim() };
    assert_eq!(reasons(&ghost), [RejectionReason::NoKnownFile { missing: vec!["src/ghost.rs".into()] }]);
    let mixed = ModelFinding { files: vec!["src/ghost.rs".into(), "./src/lib.rs".into()], ..claim() };
    assert_eq!(assess(&mixed, &repo(), &policy()).verdict, Verdict::Accepted, "one known file suffices");
    let lax = ValidationPolicy { require_known_files: false, ..policy() };
    assert_eq!(assess(&ghost, &repo(), &lax).verdict, Verdict::Accepted);
}

#[test]
fn paths_outside_the_checkout_are_named() {
    let f = ModelFinding { files: vec!["../etc/passwd".into(), "/abs".into(), "src/lib.rs".into()], ..claim() };
    assert_eq!(
        reasons(&f),
        [RejectionReason::PathsOutsideCheckout { paths: vec!["../etc/passwd".into(), "/abs".into()] }]
    );
    let only = ModelFinding { files: vec![".git/config".into()], ..claim() };
    assert_eq!(
        reasons(&only),
        [RejectionReason::PathsOutsideCheckout { paths: vec![".git/config".into()] }, RejectionReason::NoFileNamed,]
    );
}

#[test]
fn quotes_must_be_in_the_named_files() {
    let invented = ModelFinding { evidence: vec!["`Config::from(value).expect(\"boom\")` panics".into()], ..claim() };
    assert_eq!(
        reasons(&invented),
        [RejectionReason::QuotesNotFound {
            quotes: vec!["Config::from(value).expect(\"boom\")".into()],
            rule: QuoteRule::All
        }]
    );
    // A real quote in a file the claim does not name does not count.
    let elsewhere = ModelFinding { files: vec!["README.md".into()], ..claim() };
    assert!(matches!(reasons(&elsewhere)[..], [RejectionReason::QuotesNotFound { .. }]));
    // Every quote must be found, not just one.
    let one_real = ModelFinding {
        evidence: vec!["`let value = input.trim();` then `value.parse_or_die()` later".into()],
        ..claim()
    };
    assert_eq!(
        reasons(&one_real),
        [RejectionReason::QuotesNotFound { quotes: vec!["value.parse_or_die()".into()], rule: QuoteRule::All }]
    );
    let lax = ValidationPolicy { verify_quoted_evidence: false, ..policy() };
    assert_eq!(assess(&invented, &repo(), &lax).verdict, Verdict::Accepted);
}

#[test]
fn quote_matching_tolerates_whitespace_only() {
    let reflowed = ModelFinding {
        evidence: vec!["```rust\npub fn parse(input: &str)   -> Config {\n  let value =\tinput.trim();\n```".into()],
        ..claim()
    };
    assert_eq!(reasons(&reflowed), []);
    let bare = ModelFinding { evidence: vec!["  let value = input.trim(); ".into()], ..claim() };
    assert_eq!(reasons(&bare), [], "an entry without backticks is itself the quote");
    let case = ModelFinding { evidence: vec!["LET VALUE = INPUT.TRIM();".into()], ..claim() };
    assert!(matches!(reasons(&case)[..], [RejectionReason::QuotesNotFound { .. }]), "case matters");
    let punct =
        ModelFinding { evidence: vec!["`let value = input.trim()`;".into(), "`input . trim()`".into()], ..claim() };
    assert_eq!(
        reasons(&punct),
        [RejectionReason::QuotesNotFound { quotes: vec!["input . trim()".into()], rule: QuoteRule::All }],
        "whitespace is not inserted where there was none"
    );
    let short = ModelFinding { evidence: vec!["the `value` binding is unchecked: `input.trim()`".into()], ..claim() };
    assert_eq!(reasons(&short), [], "spans under 8 characters are prose identifiers");
}

#[test]
fn quotes_with_no_readable_file_are_unverifiable() {
    let f = ModelFinding { files: vec!["src/main.rs".into()], ..claim() };
    assert_eq!(
        reasons(&f),
        [RejectionReason::QuotesUnverifiable { quotes: vec!["Config::from(value).unwrap()".into()] }]
    );
}

#[test]
fn every_reason_is_collected_in_one_pass() {
    let f = ModelFinding {
        valid: false,
        confidence: 7.0,
        evidence: vec![],
        files: vec!["../x".into(), "nope.rs".into()],
        ..claim()
    };
    let found = validate(&f, &repo(), &policy());
    assert_eq!(found.verdict, Verdict::Rejected);
    assert_eq!(
        found.rejection_reasons,
        [
            "The model could not support the claim with repository evidence.",
            "Reported confidence 7 is outside 0 to 1.",
            "No evidence was cited for the claim.",
            "Cited paths are not inside the checkout: ../x.",
            "None of the cited files exist in the checkout: nope.rs.",
        ]
    );
    let quoted = ModelFinding { valid: false, evidence: vec!["`made up text here`".into()], ..claim() };
    assert_eq!(
        reasons(&quoted),
        [
            RejectionReason::ModelMarkedInvalid,
            RejectionReason::QuotesNotFound { quotes: vec!["made up text here".into()], rule: QuoteRule::All },
        ]
    );
}

#[test]
fn supported_but_unsure_is_inconclusive() {
    let f = ModelFinding { confidence: 0.4, ..claim() };
    let found = validate(&f, &repo(), &policy());
    assert_eq!(found.verdict, Verdict::Inconclusive);
    assert_eq!(found.rejection_reasons, ["Confidence 0.40 is below the 0.60 required to act."]);
    let at_threshold = ModelFinding { confidence: 0.6, ..claim() };
    assert_eq!(assess(&at_threshold, &repo(), &policy()).verdict, Verdict::Accepted);
    let rejected_and_unsure = ModelFinding { confidence: 0.1, files: vec![], ..claim() };
    assert_eq!(
        assess(&rejected_and_unsure, &repo(), &policy()).verdict,
        Verdict::Rejected,
        "rejection wins over inconclusive"
    );
}

#[test]
fn ids_are_stable_and_distinct() {
    assert_eq!(finding_id(&claim()), finding_id(&claim()));
    let other = ModelFinding { title: "other".into(), ..claim() };
    assert_ne!(finding_id(&claim()), finding_id(&other));
    let moved = ModelFinding { files: vec!["src/lib.r".into(), "s".into()], ..claim() };
    let joined = ModelFinding { files: vec!["src/lib.rs".into()], ..claim() };
    assert_ne!(finding_id(&moved), finding_id(&joined), "field boundaries count");
}

#[test]
fn facts_normalise_paths() {
    let facts = RepositoryFacts::new(["./a/b.rs"]).with_content("c\\d.rs", "x");
    assert!(facts.has_file("a/b.rs") && facts.has_file("./a/b.rs") && facts.has_file("a\\b.rs"));
    assert_eq!(facts.content("./c/d.rs"), Some("x"));
    assert_eq!(facts.files().collect::<Vec<_>>(), ["a/b.rs", "c/d.rs"]);
}

#[test]
fn a_claim_that_quotes_nothing_checkable_is_inconclusive() {
    // Every span is an identifier shorter than MIN_SPAN_CHARS: nothing verifies.
    let short = ModelFinding { evidence: vec!["`parse` calls `unwrap` on `value`".into()], ..claim() };
    let a = assess(&short, &repo(), &policy());
    assert_eq!(a.verdict, Verdict::Inconclusive);
    assert_eq!(a.reasons, [RejectionReason::NoQuoteToVerify { rule: QuoteRule::All }]);
    assert!(a.reasons[0].to_string().contains("shorter than 8 characters"));
    // One verifying quote among short spans supports the claim.
    let one = ModelFinding { evidence: vec!["`parse` calls `Config::from(value).unwrap()`".into()], ..claim() };
    assert_eq!(assess(&one, &repo(), &policy()).verdict, Verdict::Accepted);
    // A rejecting reason still wins over the missing quote.
    let absent = ModelFinding { evidence: vec!["`parse`".into(), "`this text is not in the file`".into()], ..claim() };
    assert_eq!(assess(&absent, &repo(), &policy()).verdict, Verdict::Rejected);
    // Low confidence and no quote: both reasons are reported.
    let low = ModelFinding { confidence: 0.1, ..short.clone() };
    let a = assess(&low, &repo(), &policy());
    assert_eq!(a.verdict, Verdict::Inconclusive);
    assert_eq!(a.reasons.len(), 2, "{:?}", a.reasons);
    // With quote verification off, the rule does not apply.
    let off = ValidationPolicy { verify_quoted_evidence: false, ..policy() };
    assert_eq!(assess(&short, &repo(), &off).verdict, Verdict::Accepted);
}

#[test]
fn a_review_claim_must_cite_a_changed_file() {
    // The pull request changed README.md only: a claim about src/lib.rs,
    // however well quoted, is not about this pull request.
    let mut facts = repo();
    facts.require_files(["./README.md"]);
    let a = assess(&claim(), &facts, &policy());
    assert_eq!(a.verdict, Verdict::Rejected);
    assert_eq!(a.reasons, [RejectionReason::NoRequiredFile { required: vec!["README.md".into()] }]);
    assert_eq!(a.reasons[0].to_string(), "The claim cites none of the files this pull request changed: README.md.");
    // Citing a changed file (in any spelling) satisfies the rule.
    facts.require_files(["src\\lib.rs", "README.md"]);
    assert_eq!(assess(&claim(), &facts, &policy()).verdict, Verdict::Accepted);
    // A cited changed file that is not in the checkout does not count.
    let mut gone = repo();
    gone.require_files(["src/removed.rs"]);
    let removed = ModelFinding { files: vec!["src/lib.rs".into(), "src/removed.rs".into()], ..claim() };
    assert_eq!(assess(&removed, &gone, &policy()).verdict, Verdict::Rejected);
}

#[test]
fn evidence_quotes_are_the_checked_spans() {
    let evidence =
        vec!["`parse` calls `Config::from(value).unwrap()`".into(), "  ".into(), "let value = input.trim();".into()];
    assert_eq!(
        evidence_quotes(&evidence, QuoteRule::All),
        ["Config::from(value).unwrap()", "let value = input.trim();"]
    );
}

#[test]
fn only_files_holding_a_verified_quote_earn_scope() {
    let facts = repo().with_content("src/main.rs", "fn main() { demo::parse(\"x\"); }\n");
    let mut both = claim();
    both.files = vec!["src/main.rs".into(), "./src/lib.rs".into(), "ghost.rs".into(), "../etc/passwd".into()];
    assert_eq!(quoted_files(&both, &facts, &policy()), vec!["src/lib.rs".to_owned()]);
    // A quote in neither file earns neither.
    let unsupported = ModelFinding { evidence: vec!["`nowhere in this repository`".into()], ..both.clone() };
    assert!(quoted_files(&unsupported, &facts, &policy()).is_empty());
    // The operator turned quote checks off: every existing cited file, as before.
    let off = ValidationPolicy { verify_quoted_evidence: false, ..policy() };
    assert_eq!(quoted_files(&both, &facts, &off), vec!["src/main.rs".to_owned(), "src/lib.rs".to_owned()]);
}

#[test]
fn a_path_is_named_only_whole() {
    assert!(names_path("The bug is in src/lib.rs.", "src/lib.rs"));
    assert!(names_path("see `src/lib.rs:12`", "./src/lib.rs"));
    assert!(names_path("https://github.com/o/r/blob/main/src/lib.rs#L3", "src/lib.rs"));
    assert!(names_path("src/lib.rs", "src/lib.rs"));
    assert!(!names_path("look at mysrc/lib.rs", "src/lib.rs"));
    assert!(!names_path("src/lib.rs.bak is stale", "src/lib.rs"));
    assert!(!names_path("src/lib.rsx", "src/lib.rs"));
    assert!(!names_path("src/lib.rs/inner", "src/lib.rs"));
    assert!(!names_path("anything", ""));
}

fn any() -> ValidationPolicy {
    ValidationPolicy { quotes: QuoteRule::Any, ..policy() }
}

#[test]
fn any_confirms_one_real_quote_beside_a_paraphrase_and_all_does_not() {
    // A reviewer's paraphrase in backticks next to a real citation.
    let paraphrased = ModelFinding {
        evidence: vec!["`Config::from(value).unwrap()` is reached with `input that was never validated`".into()],
        ..claim()
    };
    let strict = validate(&paraphrased, &repo(), &policy());
    assert_eq!(strict.verdict, Verdict::Rejected);
    assert_eq!(
        strict.rejection_reasons,
        ["Quoted evidence does not appear in the cited files (`validation.quotes: all`: every quote must): \
          `input that was never validated`."]
    );
    let lenient = validate(&paraphrased, &repo(), &any());
    assert_eq!(lenient.verdict, Verdict::Accepted, "{:?}", lenient.rejection_reasons);
    // The quote that was not found is still recorded, with the rule.
    assert_eq!(
        lenient.quote_check,
        Some(QuoteCheck {
            rule: QuoteRule::Any,
            found: vec!["Config::from(value).unwrap()".into()],
            not_found: vec!["input that was never validated".into()],
        })
    );
    assert_eq!(strict.quote_check.map(|c| c.rule), Some(QuoteRule::All));
    // Under `any` a file earns write scope only by the quote it holds.
    let facts = repo().with_content("src/main.rs", "fn main() {}\n");
    let both = ModelFinding { files: vec!["src/main.rs".into(), "src/lib.rs".into()], ..paraphrased };
    assert_eq!(quoted_files(&both, &facts, &any()), ["src/lib.rs".to_owned()]);
}

#[test]
fn any_needs_a_quote_of_eight_characters_or_more() {
    // `(value)` is 7 characters and in the file: an identifier, not a quote.
    assert!(LIB.contains("(value)") && "(value)".chars().count() == 7);
    let seven = ModelFinding { evidence: vec!["`(value)` is unwrapped".into()], ..claim() };
    let a = assess(&seven, &repo(), &any());
    assert_eq!(a.verdict, Verdict::Inconclusive);
    assert_eq!(a.reasons, [RejectionReason::NoQuoteToVerify { rule: QuoteRule::Any }]);
    assert!(a.reasons[0].to_string().contains("none is 8 characters or longer"), "{}", a.reasons[0]);
    // Eight characters are enough.
    let eight = ModelFinding { evidence: vec!["`(value).` is unwrapped".into()], ..claim() };
    assert_eq!(assess(&eight, &repo(), &any()).verdict, Verdict::Accepted);
    // Under `any`, no quote found at all is still a rejection, naming every quote and the rule.
    let invented = ModelFinding { evidence: vec!["`not in this file`, `nor is this text`".into()], ..claim() };
    let a = validate(&invented, &repo(), &any());
    assert_eq!(a.verdict, Verdict::Rejected);
    assert_eq!(
        a.rejection_reasons,
        ["Quoted evidence does not appear in the cited files (`validation.quotes: any`: one quote of at least 8 \
          characters must, and none does): `not in this file`, `nor is this text`."]
    );
}

#[test]
fn any_reads_an_entry_without_backticks_as_prose() {
    // Under `all` the bare entry is a quote, and this one is not in the file.
    let prose = ModelFinding {
        evidence: vec!["parse trusts its input and unwraps it".into(), "`Config::from(value).unwrap()`".into()],
        ..claim()
    };
    assert_eq!(
        reasons(&prose),
        [RejectionReason::QuotesNotFound {
            quotes: vec!["parse trusts its input and unwraps it".into()],
            rule: QuoteRule::All
        }]
    );
    // Under `any` it is prose: not checked, not listed as not found.
    let a = validate(&prose, &repo(), &any());
    assert_eq!(a.verdict, Verdict::Accepted);
    assert_eq!(a.quote_check.unwrap().not_found, Vec::<String>::new());
    assert_eq!(evidence_quotes(&prose.evidence, QuoteRule::Any), ["Config::from(value).unwrap()"]);
    // Prose alone quotes nothing: inconclusive, not accepted.
    let only_prose = ModelFinding { evidence: vec!["let value = input.trim();".into()], ..claim() };
    assert_eq!(assess(&only_prose, &repo(), &policy()).verdict, Verdict::Accepted, "`all`: a bare quote");
    let a = assess(&only_prose, &repo(), &any());
    assert_eq!(
        (a.verdict, a.reasons),
        (Verdict::Inconclusive, vec![RejectionReason::NoQuoteToVerify { rule: QuoteRule::Any }])
    );
    // With quote checks off there is no quote check to record.
    let off = ValidationPolicy { verify_quoted_evidence: false, ..any() };
    assert_eq!(validate(&prose, &repo(), &off).quote_check, None);
}
