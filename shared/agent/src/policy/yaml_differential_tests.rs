//! The YAML subset against a full YAML parser: `yaml::load` against
//! `yaml_oracle::load` (the saphyr-parser loader it replaced). Generated
//! documents inside the subset must read to the same tree, positions
//! included; mutated real files and short texts must read the same or be
//! refused, never read differently; and the rules the subset keeps
//! (folding, chomping, positions, refusals) one by one.

use proptest::prelude::*;

use super::*;
use crate::policy::{yaml, yaml_oracle};

const REFERENCE_EXAMPLE: &str = include_str!("testdata/reference.agent-zero.example.yml");

/// What the two parsers made of one text.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Both read the same tree, or both refused.
    Agree,
    /// Ours refused a document YAML reads: something outside the subset.
    OnlyOursRefused,
}

/// Compares the two parsers on `text`; a divergence (different trees, or
/// ours accepting what YAML refuses) is an `Err` naming both results.
fn differential(text: &str) -> Result<Verdict, String> {
    match (yaml::load(text), yaml_oracle::load(text)) {
        (Ok(ours), Ok(oracle)) if ours == oracle => Ok(Verdict::Agree),
        (Err(_), Err(_)) => Ok(Verdict::Agree),
        (Err(_), Ok(_)) => Ok(Verdict::OnlyOursRefused),
        (ours, oracle) => Err(format!("{text:?}\n ours:   {ours:?}\n oracle: {oracle:?}")),
    }
}

/// Cases per differential property: `PROPTEST_CASES`, or 512.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(512)
}

/// A generated YAML node; rendering places it in the text.
#[derive(Debug, Clone)]
enum Gen {
    /// Lines of a plain scalar ("" is a blank line inside it).
    Plain(Vec<String>),
    /// Lines of a quoted scalar's content; `double` picks `"`.
    Quoted {
        double: bool,
        lines: Vec<String>,
        escaped_breaks: bool,
    },
    /// `|` or `>`, chomping (0 clip, 1 strip, 2 keep), an explicit
    /// indentation indicator, and lines as (extra indentation, text).
    Block {
        literal: bool,
        chomp: u8,
        indicator: bool,
        lines: Vec<(usize, String)>,
        blank_after: usize,
    },
    /// Nothing: a null.
    Empty,
    Seq(Vec<Self>, Layout),
    Map(Vec<(Key, Self)>, Layout),
}

#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Block; `true`: compact after `- ` or at the key's indentation.
    Block(bool),
    /// Flow; `true`: one entry per line, with a trailing comma.
    Flow(bool),
}

#[derive(Debug, Clone)]
struct Key(String, u8);

const WORDS: &[&str] =
    &["a", "b1", "x-y", "v.2", "1.5", "~", "null", "true", "é", "a'b", "a\"b", "x!", "x&y", "x*y", "a%b"];
const BLOCK_WORDS: &[&str] = &["a:b", "a#b", "-x", "?x", ":x", "x-", "a]b", "a}b", "a,b", "[a", "{a"];
const DOUBLE: &[&str] = &[
    "x",
    " ",
    "\\n",
    "\\t",
    "\\\\",
    "\\\"",
    "\\x41",
    "\\u00e9",
    "\\U0001F600",
    "\\/",
    "\\ ",
    "\\_",
    "\\N",
    "\\L",
    "\\P",
    "\\0",
    "\\a",
    "\\b",
    "\\e",
    "\\f",
    "\\r",
    "\\v",
    "\\\t",
    "'",
    "#",
    ": ",
    "é",
    "\t",
];
const SINGLE: &[&str] = &["x", " ", "''", "\"", "\\", "#", ": ", "é", "\t", " # "];

fn pick<T: Clone + std::fmt::Debug + 'static>(items: &'static [T]) -> impl Strategy<Value = T> {
    prop::sample::select(items)
}

fn plain_line() -> impl Strategy<Value = String> {
    let rest = prop::collection::vec(prop_oneof![3 => pick(WORDS), 1 => pick(BLOCK_WORDS)], 0..3);
    (pick(WORDS), rest).prop_map(|(first, rest)| [vec![first], rest].concat().join(" "))
}

fn leaf() -> impl Strategy<Value = Gen> {
    let quoted = |pieces: &'static [&'static str]| {
        prop::collection::vec(prop::collection::vec(pick(pieces), 0..5).prop_map(|p| p.concat()), 1..4)
    };
    prop_oneof![
        4 => prop::collection::vec(prop_oneof![6 => plain_line(), 1 => Just(String::new())], 1..4)
            .prop_filter("a plain scalar starts and ends with text", |l| !l[0].is_empty() && !l[l.len() - 1].is_empty())
            .prop_map(Gen::Plain),
        2 => (quoted(DOUBLE), any::<bool>()).prop_map(|(lines, escaped_breaks)| Gen::Quoted { double: true, lines, escaped_breaks }),
        2 => quoted(SINGLE).prop_map(|lines| Gen::Quoted { double: false, lines, escaped_breaks: false }),
        2 => (
            any::<bool>(),
            0..3u8,
            any::<bool>(),
            prop::collection::vec((prop_oneof![4 => Just(0usize), 1 => 1..3usize], prop_oneof![3 => plain_line(), 1 => Just(String::new())]), 0..5),
            0..3usize,
        )
            .prop_map(|(literal, chomp, indicator, lines, blank_after)| Gen::Block { literal, chomp, indicator, lines, blank_after }),
        1 => Just(Gen::Empty),
    ]
}

fn key() -> impl Strategy<Value = Key> {
    ("[a-z][a-z0-9_-]{0,6}", 0..5u8).prop_map(|(text, style)| Key(text, style))
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![3 => any::<bool>().prop_map(Layout::Block), 1 => any::<bool>().prop_map(Layout::Flow)]
}

fn tree() -> impl Strategy<Value = Gen> {
    leaf().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            (prop::collection::vec(inner.clone(), 1..4), layout()).prop_map(|(items, l)| Gen::Seq(items, l)),
            (prop::collection::vec((key(), inner), 1..4), layout()).prop_map(|(entries, l)| Gen::Map(entries, l)),
        ]
    })
}

/// Where a node is written.
#[derive(Clone, Copy, PartialEq)]
enum After {
    /// After `key:`.
    Key,
    /// After `-`.
    Dash,
    /// At the start of the document.
    Top,
}

fn spaces(n: usize) -> String {
    " ".repeat(n)
}

/// Writes `node` as the value of a block collection indented at `parent`.
fn block(node: &Gen, out: &mut String, parent: isize, after: After, comments: bool) {
    let inner = (parent + 2) as usize;
    let note = if comments { " # note" } else { "" };
    let lead = if after == After::Top { "" } else { " " };
    match node {
        Gen::Plain(lines) => {
            *out += &format!("{lead}{}", lines[0]);
            for line in &lines[1..] {
                *out += &if line.is_empty() { "\n".to_owned() } else { format!("\n{}{line}", spaces(inner)) };
            }
            *out += &format!("{note}\n");
        }
        Gen::Quoted { double, lines, escaped_breaks } => {
            let q = if *double { '"' } else { '\'' };
            let joint = if *escaped_breaks { "\\\n" } else { "\n" };
            let body: Vec<String> = lines
                .iter()
                .enumerate()
                .map(|(i, l)| if i == 0 { l.clone() } else { format!("{}{l}", spaces(inner)) })
                .collect();
            *out += &format!("{lead}{q}{}{q}{note}\n", body.join(joint));
        }
        Gen::Block { literal, chomp, indicator, lines, blank_after } => {
            // At the top an indicator makes a following `...` mis-indented.
            let indicator = &(*indicator && parent >= 0);
            let content = if after == After::Top { 1 } else { inner };
            let digit = if parent >= 0 { content - parent as usize } else { content };
            let header = format!(
                "{}{}{}",
                if *literal { '|' } else { '>' },
                ["", "-", "+"][*chomp as usize],
                if *indicator { digit.to_string() } else { String::new() }
            );
            *out += &format!("{lead}{header}{note}\n");
            let first = lines.iter().position(|(_, l)| !l.is_empty());
            for (i, (extra, line)) in lines.iter().enumerate() {
                let extra = if *indicator || first.is_some_and(|f| i > f) { *extra } else { 0 };
                *out += &if line.is_empty() { "\n".to_owned() } else { format!("{}{line}\n", spaces(content + extra)) };
            }
            *out += &"\n".repeat(*blank_after);
        }
        Gen::Empty => *out += &format!("{note}\n"),
        Gen::Seq(items, Layout::Block(compact)) => {
            let (indent, mut first) = match after {
                After::Top => (0, true),
                After::Key if *compact => {
                    *out += &format!("{note}\n");
                    (parent as usize, true)
                }
                After::Dash if *compact => {
                    *out += " ";
                    (inner, false)
                }
                _ => {
                    *out += &format!("{note}\n");
                    (inner, true)
                }
            };
            for item in items {
                if first {
                    *out += &spaces(indent);
                }
                first = true;
                *out += "-";
                block(item, out, indent as isize, After::Dash, comments);
            }
        }
        Gen::Map(entries, Layout::Block(compact)) => {
            let (indent, mut first) = match after {
                After::Top => (0, true),
                After::Dash if *compact => {
                    *out += " ";
                    (inner, false)
                }
                _ => {
                    *out += &format!("{note}\n");
                    (inner, true)
                }
            };
            for (i, (key, value)) in entries.iter().enumerate() {
                if comments && i > 0 {
                    *out += &format!("\n{}# between\n", spaces(if i % 2 == 0 { 0 } else { indent }));
                }
                if first {
                    *out += &spaces(indent);
                }
                first = true;
                *out += &format!("{}:", render_key(key));
                block(value, out, indent as isize, After::Key, comments);
            }
        }
        Gen::Seq(_, Layout::Flow(lines)) | Gen::Map(_, Layout::Flow(lines)) => {
            *out += lead;
            flow(node, out, if *lines { Some(inner) } else { None });
            *out += &format!("{note}\n");
        }
    }
}

fn render_key(Key(text, style): &Key) -> String {
    match style {
        0 => format!("'{text}'"),
        1 => format!("\"{text}\""),
        _ => text.clone(),
    }
}

/// Writes `node` inside `[]`/`{}`; `lines`: entries one a line at that indentation.
fn flow(node: &Gen, out: &mut String, lines: Option<usize>) {
    let (open, close, count) = match node {
        Gen::Seq(items, _) => ('[', ']', items.len()),
        Gen::Map(entries, _) => ('{', '}', entries.len()),
        _ => {
            *out += &match node {
                Gen::Quoted { double: true, lines, .. } => format!("\"e{}\"", lines.concat().replace('\t', " ")),
                Gen::Quoted { lines, .. } => format!("'e{}'", lines.concat()),
                Gen::Plain(lines) => {
                    lines[0].split(' ').filter(|w| !BLOCK_WORDS.contains(w)).collect::<Vec<_>>().join(" ")
                }
                _ => "~".to_owned(),
            };
            if out.ends_with(['[', '{', ' ']) {
                *out += "w";
            }
            return;
        }
    };
    out.push(open);
    for i in 0..count {
        if let Some(indent) = lines {
            *out += &format!("\n{}", spaces(indent));
        } else if i > 0 {
            *out += " ";
        }
        match node {
            Gen::Seq(items, _) => flow(&items[i], out, lines.map(|n| n + 2)),
            Gen::Map(entries, _) => {
                *out += &format!("{}:", render_key(&entries[i].0));
                if !matches!(entries[i].1, Gen::Empty) {
                    *out += " ";
                    flow(&entries[i].1, out, lines.map(|n| n + 2));
                }
            }
            _ => unreachable!(),
        }
        if i + 1 < count || lines.is_some() {
            out.push(',');
        }
    }
    if let Some(indent) = lines {
        *out += &format!("\n{}", spaces(indent - 1));
    }
    out.push(close);
}

/// A whole document: framing around a tree.
fn document() -> impl Strategy<Value = String> {
    (tree(), any::<bool>(), any::<bool>(), 0..4u8, any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(tree, comments, bom, start, end, crlf, final_newline)| {
            let mut out = String::new();
            if bom {
                out.push('\u{feff}');
            }
            if comments {
                out += "# generated\n\n";
            }
            let bare = matches!(tree, Gen::Empty | Gen::Block { .. });
            match start {
                0 if !bare => {}
                1 => out += "--- # start\n",
                2 if !matches!(tree, Gen::Seq(_, Layout::Block(_)) | Gen::Map(_, Layout::Block(_))) => {
                    out += "---";
                    block(&tree, &mut out, -1, After::Key, comments);
                    return finish_document(out, end, crlf, final_newline);
                }
                _ => out += "---\n",
            }
            block(&tree, &mut out, -1, After::Top, comments);
            finish_document(out, end, crlf, final_newline)
        },
    )
}

fn finish_document(mut out: String, end: bool, crlf: bool, final_newline: bool) -> String {
    if end {
        out += "...\n";
    }
    if !final_newline && out.ends_with('\n') && !out.ends_with("\n\n") {
        out.pop();
    }
    if crlf { out.replace('\n', "\r\n") } else { out }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Every generated document inside the subset: ours accepts it and
    /// reads the oracle's tree, values and positions.
    #[test]
    fn generated_documents_read_as_the_oracle_reads_them(text in document()) {
        prop_assert!(yaml_oracle::load(&text).is_ok(), "the generator wrote invalid YAML: {text:?} {:?}", yaml_oracle::load(&text));
        prop_assert_eq!(differential(&text), Ok(Verdict::Agree));
    }
}

/// Runs `strategy` through `differential` for `cases()` cases: never a
/// divergence; returns how many only ours refused.
fn never_diverges<S: Strategy<Value = String>>(strategy: S) -> (u32, u32) {
    let mut runner =
        proptest::test_runner::TestRunner::new(ProptestConfig { cases: cases(), ..ProptestConfig::default() });
    let only_ours = std::cell::Cell::new(0);
    runner
        .run(&strategy, |text| {
            if differential(&text).map_err(TestCaseError::fail)? == Verdict::OnlyOursRefused {
                only_ours.set(only_ours.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    (only_ours.get(), cases())
}

fn mutated_real_file() -> impl Strategy<Value = String> {
    (0..REFERENCE_EXAMPLE.len(), prop::sample::select(b" \t\n-:#[]{},'\"|>&*!?%@`\\x0".to_vec()), 0..4u8, 1..4usize)
        .prop_map(|(at, byte, edit, times)| {
            let mut bytes = REFERENCE_EXAMPLE.as_bytes().to_vec();
            for i in 0..times {
                let at = (at + i * 97) % bytes.len();
                match edit {
                    0 => bytes[at] = byte,
                    1 => drop(bytes.remove(at)),
                    2 => bytes.insert(at, byte),
                    _ => bytes.truncate(at.max(1)),
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
}

/// Short texts of YAML's own tokens: where the corners are.
fn token_soup() -> impl Strategy<Value = String> {
    const TOKENS: &[&str] = &[
        "a", "b", "k: ", "- ", "-", ":", "\n", "  ", " ", "[", "]", "{", "}", ", ", "'", "\"", "|", ">", "|-", ">+",
        "# c", "---", "...", "\\", "\t", "?", "&x ", "*x", "!t ", "~", "\"q\"", "'s'", ":x", "#", "\\n", "%", "|2",
    ];
    prop::collection::vec(pick(TOKENS), 0..24).prop_map(|tokens| tokens.concat())
}

#[test]
fn mutated_real_files_read_as_the_oracle_reads_them() {
    let (only_ours, cases) = never_diverges(mutated_real_file());
    eprintln!("mutated real files: {only_ours} of {cases} refused by ours only");
    assert!(only_ours * 4 <= cases, "{only_ours} of {cases}");
}

#[test]
fn short_texts_read_as_the_oracle_reads_them() {
    let (only_ours, cases) = never_diverges("[ -~\n\t]{0,200}");
    eprintln!("arbitrary texts: {only_ours} of {cases} refused by ours only");
    let (only_ours, cases) = never_diverges(token_soup());
    eprintln!("token soup: {only_ours} of {cases} refused by ours only");
}

/// Our tree of `text`, which the oracle must read the same.
fn tree_of(text: &str) -> yaml::Node {
    assert_eq!(differential(text), Ok(Verdict::Agree), "{text:?}");
    yaml::load(text).unwrap().unwrap()
}

fn text_of(node: &yaml::Node) -> &str {
    match &node.value {
        yaml::Value::Scalar { text, .. } => text,
        other => panic!("not a scalar: {other:?}"),
    }
}

/// Our refusal of `text`, which the oracle may accept (outside the subset).
fn refusal(text: &str) -> String {
    match yaml::load(text) {
        Err(PolicyError::Syntax { message }) => message,
        other => panic!("{text:?}: {other:?}"),
    }
}

#[test]
fn scalars_fold_and_chomp_as_yaml_does() {
    let value = |text: &str| text_of(tree_of(text).get("a").unwrap()).to_owned();
    assert_eq!(value("a: b\n  c\n\n  d # note\n"), "b c\nd");
    assert_eq!(value("a: 'x ''y''\n\n   z'\n"), "x 'y'\nz");
    assert_eq!(value("a: \"\\x41\\u00e9\\t\\\n   b \\\"c\\\" \\U0001F600\"\n"), "Aé\tb \"c\" 😀");
    assert_eq!(value("a: |\n  x\n   y\n\n"), "x\n y\n");
    assert_eq!(value("a: |-\n  x\n\n"), "x");
    assert_eq!(value("a: |+\n  x\n\n"), "x\n\n");
    assert_eq!(value("a: >\n  x\n  y\n\n  z\n    more\n"), "x y\nz\n  more\n");
    assert_eq!(value("a: >2\n   x\n  y\n"), " x\ny\n");
    assert_eq!(value("a: b:c#d -e\n"), "b:c#d -e");
    let flow = tree_of("a: [x, 'y', {k: v},]\r\n");
    assert!(matches!(&flow.get("a").unwrap().value, yaml::Value::Sequence(items) if items.len() == 3));
}

#[test]
fn positions_follow_the_oracle() {
    let doc = tree_of("checks:\n- a\n-\nmode:\nlist: [ x ]\nblock: |\n  text\n");
    let at = |key: &str| doc.get(key).map(|n| (n.line, n.column)).unwrap();
    assert_eq!(at("checks"), (2, 3), "a sequence at its key's indentation starts after `- `");
    assert_eq!(at("mode"), (4, 5), "an empty value is at its `:`");
    assert_eq!(at("list"), (5, 7));
    assert_eq!(at("block"), (7, 3), "a block scalar starts at its first line");
    let yaml::Value::Sequence(items) = &doc.get("checks").unwrap().value else { panic!() };
    assert_eq!((items[1].line, items[1].column), (3, 2), "an empty item is after its `-`");
    let doc = tree_of("- k: v\n  k2: v2\n- - a\n");
    let yaml::Value::Sequence(items) = &doc.value else { panic!() };
    assert_eq!((items[0].line, items[0].column, items[1].column), (1, 3, 3));
    assert_eq!(yaml::load("# only\n...\n").unwrap(), None);
    assert!(tree_of("~\n").is_null() && tree_of("---\n").is_null());
}

#[test]
fn what_is_outside_the_subset_is_refused_with_its_position() {
    for (text, message) in [
        ("a: *x\n", "aliases (`*name`) are not supported in a policy file at line 1 column 4"),
        ("a: !t x\n", "tags (`!name`) are not supported in a policy file at line 1 column 4"),
        ("a: &x\n  b: 1\n", "an anchor (`&name`) must be followed by a space and its value at line 1 column 6"),
        ("? [a]\n: b\n", "a mapping key must be a scalar"),
        ("[a]: b\n", "a mapping key must be a scalar at line 1 column 1"),
        ("%YAML 1.2\n---\na: 1\n", "directives (`%`) are not supported in a policy file at line 1 column 1"),
        ("a:\n\tb: 1\n", "a tab indents this line; YAML indentation is spaces at line 2 column 2"),
        ("a: 1\n---\nb: 2\n", "one YAML document; found a second at line 2 column 1"),
        ("mode: [unclosed\n", "the file ends inside `[]` or `{}` at line 2 column 1"),
        ("a: [b: c]\n", "a `key: value` pair inside `[]` is not supported at line 1 column 6"),
        ("a: {b}\n", "a key in `{}` must be followed by `:` on its line at line 1 column 6"),
        ("a: b: c\n", "unexpected `:` after a value at line 1 column 5"),
        ("a: 'open\n", "a quoted scalar without its closing quote at line 1 column 4"),
        ("a: \"\\q\"\n", "an unknown escape in a double-quoted scalar at line 1 column 5"),
        ("a: [\n]\n", "must be indented past its parent at line 2 column 1"),
        ("a: 1\n  b: 2\n", "unexpected `:` after a value at line 2 column 4"),
    ] {
        let m = refusal(text);
        assert!(m.contains(message), "{text:?}: {m}");
    }
}

/// The layouts the README gives for a flow list over several lines: the
/// closing bracket indented past its key reads as YAML reads it; at the
/// key's column it is refused, naming the line.
#[test]
fn the_readme_flow_layouts() {
    let written = "checks: [\n  [cargo, test],\n  ]\n";
    assert_eq!(yaml::load(written).unwrap(), yaml_oracle::load(written).unwrap());
    let policy = Policy::parse(written).unwrap();
    assert_eq!(policy.checks, [CheckCommand::new(["cargo", "test"])]);
    assert_eq!(Policy::parse("checks:\n  - [cargo, test]\n").unwrap(), policy);
    let m = refusal("checks: [\n  [cargo, test],\n]\n");
    assert!(m.contains("must be indented past its parent at line 3 column 1"), "{m}");
}
