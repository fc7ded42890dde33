//! Behaviour the goldens show, asserted so a re-bless cannot hide a
//! regression: "verified" only when proven, hostile text stays inert,
//! secrets never leave, limits hold with a visible note, JSON is stable.

mod common;

use agent_zero_contracts::{EvidenceBundle, Trigger};
use agent_zero_evidence::{
    GITHUB_TEXT_LIMIT, ISSUE_VALIDATION_MARKER, Outcome, PULL_REQUEST_MARKER, RenderOptions, render_check_run,
    render_evidence_html, render_issue_comment, render_json, render_markdown_document, render_pull_request_body,
    shown_verified,
};

const SECRETS: &[&str] = &[common::SECRET];

fn opts() -> RenderOptions<'static> {
    RenderOptions { secrets: SECRETS, ..RenderOptions::default() }
}

/// Every human-facing rendering of a bundle, named.
fn renders(b: &EvidenceBundle, o: &RenderOptions<'_>) -> Vec<(&'static str, String)> {
    let check = render_check_run(b, o);
    vec![
        ("check-run title", check.title),
        ("check-run", check.summary),
        ("comment", render_issue_comment(b, o)),
        ("pull request", render_pull_request_body(b, o)),
        ("document", render_markdown_document(b, o)),
        ("html", render_evidence_html(b, o)),
    ]
}

/// Lines of Markdown outside code fences (our structure, not untrusted blocks).
fn outside_fences(md: &str) -> Vec<&str> {
    let mut fence: Option<usize> = None;
    let mut out = Vec::new();
    for line in md.lines() {
        let ticks = line.chars().take_while(|&c| c == '`').count();
        match fence {
            Some(n) if ticks >= n && ticks == line.trim_end().len() => fence = None,
            Some(_) => {}
            None if ticks >= 3 => fence = Some(ticks),
            None => out.push(line),
        }
    }
    out
}

/// Headings, the status list and the title: where a verdict is read.
fn verdict_positions(name: &str, text: &str) -> Vec<String> {
    if name == "check-run title" {
        return vec![text.to_owned()];
    }
    if name == "html" {
        let mut out = Vec::new();
        for tag in ["<h1>", "<h2>", "<h3>", "<title>", "<span class=\"badge", "<dt>"] {
            for piece in text.split(tag).skip(1) {
                out.push(piece.split("</").next().unwrap_or("").to_owned());
            }
        }
        return out;
    }
    outside_fences(text)
        .into_iter()
        .filter(|l| l.starts_with('#') || l.starts_with("- **Change:**") || l.starts_with("- **Verdict:**"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn verified_is_written_only_for_a_proven_change() {
    for (name, b) in common::all() {
        let proven = shown_verified(&b);
        for (what, text) in renders(&b, &opts()) {
            let positions = verdict_positions(what, &text);
            let says = positions.iter().any(|p| p.to_lowercase().contains("verified"));
            assert_eq!(says, proven, "{name} {what}: {positions:#?}");
            // Outside untrusted text, a bundle that is not proven never says it at all.
            if !proven && name != "hostile" {
                assert!(!text.to_lowercase().contains("verified"), "{name} {what}");
            }
        }
    }
    // A record whose flag its own checks contradict is not shown verified.
    let b = common::flag_disagrees();
    assert!(b.verified && !shown_verified(&b));
    assert_eq!(agent_zero_evidence::outcome(&b), Outcome::Confirmed);
}

#[test]
fn hostile_text_stays_inert() {
    let b = common::hostile();
    for (what, text) in renders(&b, &opts()) {
        assert!(!text.contains('\0'), "{what}: NUL");
        assert!(!text.contains(['\u{202E}', '\u{202C}', '\u{2066}', '\u{2069}']), "{what}: bidi");
        assert!(!text.contains(common::SECRET), "{what}: secret");
        // Raw HTML only ever inside a code fence, where GitHub shows it as text.
        let structure = if what == "html" { text.clone() } else { outside_fences(&text).join("\n") };
        assert!(
            !structure.contains("<script") && !structure.contains("<img") && !structure.contains("<b>"),
            "{what}: raw HTML"
        );
        if what == "html" {
            assert!(!text.contains("</pre><script") && !text.contains("href=\"javascript"), "{what}");
            continue;
        }
        for pinging in ["@octocat", "@acme", "#123", "#7", "#1 ", "GH-9", "GH-2"] {
            assert!(!structure.contains(pinging), "{what}: {pinging} outside a fence");
        }
        // Every heading is one of ours: untrusted text never makes one.
        for line in outside_fences(&text) {
            if line.starts_with('#') {
                assert!(!line.contains("Verified") && !line.contains('@'), "{what}: fake heading {line:?}");
            }
        }
        assert_eq!(text.matches(ISSUE_VALIDATION_MARKER).count(), usize::from(what == "comment"), "{what}");
    }
    let comment = render_issue_comment(&b, &opts());
    assert!(comment.starts_with(ISSUE_VALIDATION_MARKER));
    let pr = render_pull_request_body(&b, &opts());
    assert!(pr.starts_with(PULL_REQUEST_MARKER));
}

#[test]
fn every_rejection_reason_is_in_the_comment() {
    let mut b = common::rejected();
    // The sample answers review feedback on a pull request: a claim.
    assert_eq!(b.trigger, Trigger::Feedback);
    let comment = render_issue_comment(&b, &opts());
    assert!(comment.contains("Claim not confirmed"), "{comment}");
    // On an issue, the same verdict is about the issue.
    b.trigger = Trigger::Issue;
    b.issue = Some(agent_zero_contracts::IssueRef {
        owner: "acme".into(),
        repo: "widgets".into(),
        number: 42,
        title: agent_zero_contracts::UntrustedText::capped("page skips an item", 256),
        url: None,
    });
    let comment = render_issue_comment(&b, &opts());
    assert!(comment.contains("Issue not confirmed"), "{comment}");
    for reason in ["No evidence was quoted.", "which does not exist.", "is not in src/page.rs."] {
        assert!(comment.contains(reason), "{reason}\n{comment}");
    }
    let c = render_issue_comment(&common::inconclusive(), &opts());
    assert!(c.contains("Issue inconclusive") && c.contains("confidence 0.42"), "{c}");
    let c = render_issue_comment(&common::refused(), &opts());
    assert!(c.contains("Issue confirmed") && c.contains("autofix-disabled"), "{c}");
}

#[test]
fn secrets_never_leave_in_any_format() {
    let mut b = common::hostile();
    b.summary = format!("{}{}", common::SECRET, common::SECRET);
    let json = render_json(&b, &opts());
    assert!(!json.contains(common::SECRET) && json.contains("[redacted][redacted]"));
    for (what, text) in renders(&b, &opts()) {
        assert!(!text.contains(common::SECRET), "{what}");
    }
    // Without the option the JSON is the record as it is.
    assert!(render_json(&b, &RenderOptions::default()).contains(common::SECRET));
}

#[test]
fn huge_output_is_cut_with_a_visible_note() {
    let b = common::huge();
    let o = opts();
    for (what, text) in [
        ("check-run", render_check_run(&b, &o).summary),
        ("comment", render_issue_comment(&b, &o)),
        ("pull request", render_pull_request_body(&b, &o)),
    ] {
        assert!(text.len() <= GITHUB_TEXT_LIMIT, "{what}: {}", text.len());
        assert!(text.chars().count() <= GITHUB_TEXT_LIMIT);
        assert!(text.contains("This report was cut") || text.contains("more not listed here"), "{what}");
        // Fences are balanced: nothing after the cut note is inside a fence.
        assert!(outside_fences(&text).last().is_some_and(|l| !l.is_empty()), "{what}");
    }
    let check = render_check_run(&b, &o).summary;
    assert!(check.contains("The first "), "per-block cut note");
    assert!(check.contains("1,234,567 bytes of output dropped at runner.maxOutputBytes"));
    assert!(check.contains("more not listed here (553 file)"), "gaps are counted beyond the list");
    // The document and page keep a larger block of every output, with a note.
    let doc = render_markdown_document(&b, &o);
    assert!(doc.contains("vendor/generated/module\\_0599.rs"), "every gap in the document");
    assert!(doc.matches("bytes are not shown here").count() >= 6);
    let html = render_evidence_html(&b, &o);
    assert!(html.matches("bytes are not shown here").count() >= 6);
    assert!(html.contains("module_0599.rs"));
}

#[test]
fn small_limits_hold_too() {
    for max in [400, 1_000, 4_096] {
        let o = RenderOptions { max_bytes: max, evidence_url: Some("https://x.test/t?a=1&b=(2)"), ..opts() };
        for (name, b) in common::all() {
            let check = render_check_run(&b, &o).summary;
            let comment = render_issue_comment(&b, &o);
            let pr = render_pull_request_body(&b, &o);
            for text in [&check, &comment, &pr] {
                assert!(text.len() <= max, "{name} {max}: {}", text.len());
            }
            assert!(comment.starts_with(ISSUE_VALIDATION_MARKER), "{name} {max}");
            assert!(pr.starts_with(PULL_REQUEST_MARKER), "{name} {max}: {pr}");
        }
    }
}

#[test]
fn json_round_trips_with_stable_names() {
    for (name, b) in common::all() {
        let json = render_json(&b, &RenderOptions::default());
        let back: EvidenceBundle = serde_json::from_str(&json).unwrap();
        assert_eq!(back, b, "{name}");
    }
    let v: serde_json::Value = serde_json::from_str(&render_json(&common::verified(), &opts())).unwrap();
    for key in ["taskId", "pullRequest", "acceptanceCriteria", "changedFiles", "transitions", "coverage"] {
        assert!(v.get(key).is_some(), "{key}");
    }
    assert_eq!(v["checks"][0]["exitCode"], 0);
    assert_eq!(v["usage"]["costUsd"], 0.0871);
}

#[test]
fn a_minted_installation_token_is_redacted_in_a_redacting_render() {
    let minted = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
    let mut b = common::hostile();
    b.summary = format!("push refused for https://x-access-token:{minted}@github.com/acme/widgets");
    for (what, text) in renders(&b, &opts()) {
        assert!(!text.contains(minted), "{what}");
    }
    assert!(render_json(&b, &opts()).contains("x-access-token:[redacted]@github.com"));
}

#[test]
fn every_rendering_names_the_quote_rule_and_the_quotes_it_did_not_find() {
    use agent_zero_contracts::{QuoteCheck, QuoteRule};
    let mut b = common::confirmed_observe();
    let finding = b.finding.as_mut().expect("a finding");
    finding.quote_check = Some(QuoteCheck {
        rule: QuoteRule::Any,
        found: vec!["items[start..start + limit]".into()],
        not_found: vec!["the cursor @octocat <b>skips</b>".into()],
    });
    for (name, text) in renders(&b, &opts()).into_iter().skip(1) {
        assert!(text.contains("validation.quotes: any"), "{name}: {text}");
        assert!(text.contains("1 of 2 found"), "{name}: {text}");
        assert!(!text.contains("<b>skips</b>"), "{name} keeps the quote inert: {text}");
        // GitHub would notify a mention; the dashboard's page is not GitHub.
        assert!(name == "html" || !text.contains(" @octocat"), "{name} breaks the mention: {text}");
    }
    // Without a quote check (quotes not checked), nothing is said.
    b.finding.as_mut().unwrap().quote_check = None;
    for (name, text) in renders(&b, &opts()) {
        assert!(!text.contains("validation.quotes"), "{name}: {text}");
    }
}
