//! The YAML layer: positions and scalar rules, what is refused, and
//! generated documents (every layout a hand-written policy uses, and
//! mutations of real files) that must parse to what they say or fail
//! with a message, never panic.

use proptest::prelude::*;

use super::*;

/// The parser's own message, without the file name every syntax error starts with.
fn syntax(yaml: &str) -> String {
    match err(yaml) {
        PolicyError::Syntax { message } => message,
        other => panic!("{yaml:?}: not a syntax error: {other}"),
    }
}

#[test]
fn errors_carry_the_line_and_column_of_the_node() {
    let m = syntax("mode: fix\nautofix:\n  enabled: true\n  yolo: true\n");
    assert!(m.starts_with("autofix: unknown field `yolo`"), "{m}");
    assert!(m.ends_with("at line 4 column 3"), "{m}");
    let m = syntax("agent:\n  maxAttempts: many\n");
    assert!(m.starts_with("agent.maxAttempts: invalid type: string \"many\""), "{m}");
    assert!(m.ends_with("at line 2 column 16"), "{m}");
    let m = syntax("checks:\n  - [make]\n  - [cargo, [x]]\n");
    assert!(m.starts_with("checks[1][1]: invalid type: sequence") && m.ends_with("line 3 column 13"), "{m}");
    let m = syntax("autofix:\n  enabled: true\n  enabled: false\n");
    assert!(m.contains("autofix") && m.contains("duplicate field `enabled`"), "{m}");
    let m = syntax("mode: [unclosed\n");
    assert!(m.contains("line 2"), "the scanner's position: {m}");
}

#[test]
fn scalars_follow_the_core_schema() {
    let p =
        Policy::parse("issues:\n  requireLabel: 2024\n  branchPrefix: 'true/'\nagent:\n  maxAttempts: 0x10\n").unwrap();
    assert_eq!(p.issues.require_label, "2024", "a string field takes a plain number's text");
    assert_eq!(p.issues.branch_prefix, "true/");
    assert_eq!(p.agent.max_attempts, 16);
    assert!(syntax("agent:\n  maxAttempts: '5'\n").starts_with("agent.maxAttempts: invalid type: string"));
    assert!(syntax("proactive:\n  enabled: yes\n").starts_with("proactive.enabled: invalid type: string \"yes\""));
    let p =
        Policy::parse("proactive: {enabled: True}\nautofix:\n  minConfidence: 9e-1\nrunner:\n  cpus: 1.5\n").unwrap();
    assert!(p.proactive.enabled);
    assert_eq!(p.autofix.min_confidence, 0.9);
    assert_eq!(p.runner.cpus.as_deref(), Some("1.5"));
    let p = Policy::parse("model:\n  name: ~\n  inputCostPerMillionTokens: null\n").unwrap();
    assert_eq!((p.model.name, p.model.input_cost_per_million_tokens), (None, None));
    let p = Policy::parse("checks:\n  - |\n    cargo test\n  - \"make\\tlint\"\n").unwrap();
    assert_eq!(p.checks, [CheckCommand::new(["cargo", "test"]), CheckCommand::new(["make", "lint"])]);
    assert!(syntax("agent:\n  maxAttempts: 99999999999\n").contains("agent.maxAttempts"), "out of u32 range");
}

#[test]
fn what_a_policy_never_needs_is_refused_with_its_line() {
    let m = syntax("base: &b {enabled: true}\nproactive: *b\n");
    assert!(m.starts_with("aliases") && m.ends_with("line 2 column 12"), "{m}");
    assert!(syntax("mode: !!str fix\n").starts_with("tags"));
    assert!(syntax("mode: fix\n---\nmode: observe\n").contains("one YAML document"));
    assert!(syntax(&format!("checks: {}{}\n", "[".repeat(40), "]".repeat(40))).contains("nested deeper"));
    assert!(syntax("? [a]\n: b\n").contains("mapping key must be a scalar"));
    assert!(syntax("'just a string'\n").contains("mapping of policy fields"));
    assert!(syntax("42\n").contains("mapping of policy fields"));
    assert_eq!(Policy::parse("~\n").unwrap(), Policy::default());
    assert_eq!(Policy::parse("--- # a comment\n...\n").unwrap(), Policy::default());
}

#[test]
fn a_deep_document_is_an_error_not_a_stack_overflow() {
    let deep = format!("checks: {}\n", "[".repeat(MAX_POLICY_BYTES / 2));
    let m = syntax(&deep);
    assert!(m.contains("nested deeper than 32 levels") || m.contains("recursion limit"), "{m}");
    let deep: String = (0..200).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect();
    let m = syntax(&deep);
    assert!(m.contains("nested deeper than 32 levels"), "a block mapping nests too: {m}");
}

/// How a generated string is written.
#[derive(Debug, Clone, Copy)]
enum Style {
    Plain,
    Single,
    Double,
}

fn quoted(text: &str, style: Style) -> String {
    match style {
        Style::Plain => text.to_owned(),
        Style::Single => format!("'{}'", text.replace('\'', "''")),
        Style::Double => format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"")),
    }
}

fn style() -> impl Strategy<Value = Style> {
    prop_oneof![Just(Style::Plain), Just(Style::Single), Just(Style::Double)]
}

/// A word that is a plain YAML scalar in any context.
fn word() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9._/-]{0,8}"
}

#[derive(Debug, Clone)]
struct Generated {
    mode: RunMode,
    label: (String, Style),
    checks: Vec<Vec<String>>,
    attempts: u32,
    confidence: u32,
    bots: Vec<String>,
    model: Option<(String, Style)>,
    flow: bool,
    comments: bool,
}

fn generated() -> impl Strategy<Value = Generated> {
    (
        prop::sample::select(RunMode::ALL),
        (word(), style()),
        prop::collection::vec(prop::collection::vec(word(), 1..4), 0..4),
        1..1000u32,
        0..=100u32,
        prop::collection::vec("[a-z][a-z0-9-]{0,10}(\\[bot\\])?", 0..3),
        prop::option::of(("[a-z][a-z0-9.-]{0,6}(:[a-z0-9]{1,5})?", style())),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(mode, label, checks, attempts, confidence, bots, model, flow, comments)| Generated {
            mode,
            label,
            checks,
            attempts,
            confidence,
            bots,
            model,
            flow,
            comments,
        })
}

impl Generated {
    /// The document, in block or flow layout, optionally with comments.
    fn render(&self) -> String {
        let note = if self.comments { "  # a note" } else { "" };
        let mut out = format!("# generated\nversion: 1{note}\nmode: {}\n", self.mode);
        let label = quoted(&self.label.0, self.label.1);
        let confidence = format!("0.{:02}", self.confidence).replace("0.100", "1.0");
        if self.flow {
            out += &format!("issues: {{ enabled: true, requireLabel: {label} }}\n");
            let checks: Vec<String> = self.checks.iter().map(|argv| format!("[{}]", argv.join(", "))).collect();
            out += &format!("checks: [{}]\n", checks.join(", "));
            out += &format!("agent: {{maxAttempts: {}}}\nautofix: {{minConfidence: {confidence}}}\n", self.attempts);
            out += &format!(
                "triggers: {{ allowedBots: [{}] }}\n",
                self.bots.iter().map(|b| quoted(b, Style::Single)).collect::<Vec<_>>().join(", ")
            );
        } else {
            out += &format!("issues:\n  enabled: true{note}\n  requireLabel: {label}\n");
            if !self.checks.is_empty() {
                out += "checks:\n";
                for (index, argv) in self.checks.iter().enumerate() {
                    if index % 2 == 0 {
                        out += &format!("  - {}\n", argv.join(" "));
                    } else {
                        out += &format!("  -\n{}", argv.iter().map(|a| format!("    - {a}\n")).collect::<String>());
                    }
                }
            }
            out += &format!("agent:\n  maxAttempts: {}\nautofix:\n  minConfidence: {confidence}\n", self.attempts);
            if !self.bots.is_empty() {
                out += "triggers:\n  allowedBots:\n";
                for bot in &self.bots {
                    out += &format!("    - \"{bot}\"\n");
                }
            }
        }
        if let Some((name, style)) = &self.model {
            out += &format!("model:\n  name: {}\n", quoted(name, *style));
        }
        out
    }

    fn expected(&self) -> Policy {
        let mut p = Policy { mode: self.mode, ..Policy::default() };
        p.issues.enabled = true;
        p.issues.require_label = self.label.0.clone();
        p.checks = self.checks.iter().map(|argv| CheckCommand::new(argv.iter().cloned())).collect();
        p.agent.max_attempts = self.attempts;
        p.autofix.min_confidence = f64::from(self.confidence) / 100.0;
        p.triggers.allowed_bots = self.bots.clone();
        p.model.name = self.model.as_ref().map(|(name, _)| name.clone());
        p
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn generated_policies_parse_to_what_they_say(generated in generated()) {
        let text = generated.render();
        let parsed = Policy::parse(&text);
        prop_assert_eq!(parsed, Ok(generated.expected()), "{}", text);
        // And as a task's record holds it.
        let record = serde_json::to_value(generated.expected()).unwrap();
        prop_assert_eq!(Policy::from_record(&record), Ok(generated.expected()));
    }

    /// Any edit of a real file (a byte replaced, removed or inserted, the
    /// rest cut off) parses or fails with a message; it never panics.
    #[test]
    fn mutated_real_files_never_panic(
        at in 0..REFERENCE_EXAMPLE.len(),
        byte in prop::sample::select(b" \t\n-:#[]{},'\"|>&*!?%@`\\x0".to_vec()),
        edit in 0..4u8,
    ) {
        let mut bytes = REFERENCE_EXAMPLE.as_bytes().to_vec();
        match edit {
            0 => bytes[at] = byte,
            1 => { bytes.remove(at); }
            2 => bytes.insert(at, byte),
            _ => bytes.truncate(at),
        }
        if let Err(error) = Policy::from_bytes(&bytes) {
            prop_assert!(!error.to_string().is_empty());
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "[ -~\n\t]{0,200}") {
        let _ = Policy::parse(&text);
    }
}

const REFERENCE_EXAMPLE: &str = include_str!("testdata/reference.agent-zero.example.yml");
