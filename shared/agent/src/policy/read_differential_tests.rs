//! The hand-written reader (`read.rs`) against the serde path it
//! replaced (`de_oracle.rs`): for every tree, the same policy or the same
//! message. Trees are generated from the policy's schema (right and wrong
//! types, null, out-of-range and edge-case numbers, quoted and plain
//! scalars, unknown, repeated and non-scalar keys, structs written as
//! sequences), read from mutated real files, and from JSON records.

use proptest::prelude::*;

use super::super::yaml::{self, Node, Value};
use super::super::{de_oracle, read};
use super::*;

/// Both readers' results, as text: `Debug` tells `NaN` and `-0.0` apart
/// where `PartialEq` would not.
fn both(node: &Node) -> (String, String) {
    let new = read::policy(node);
    let old = de_oracle::from_node::<Policy>(node);
    (format!("{new:?}"), format!("{old:?}"))
}

fn assert_same(node: &Node) {
    let (new, old) = both(node);
    assert_eq!(new, old, "{node:?}");
}

/// What a field holds, for the generator.
#[derive(Clone, Copy)]
enum Field {
    Bool,
    Integer,
    Float,
    Text,
    Texts,
    Variant(&'static [&'static str]),
    Variants(&'static [&'static str]),
    Checks,
    Struct(&'static [(&'static str, Self)]),
}

const PROVIDERS: &[&str] = &["openai", "anthropic", "openai-compatible", "claude-code", "ai-gateway"];

const POLICY: &[(&str, Field)] = &[
    ("version", Field::Integer),
    ("mode", Field::Variant(&["observe", "suggest", "fix", "autonomous"])),
    ("checks", Field::Checks),
    ("proactive", Field::Struct(&[("enabled", Field::Bool)])),
    ("checkRun", Field::Struct(&[("blocking", Field::Bool)])),
    ("review", Field::Struct(&[("diffBudgetBytes", Field::Integer), ("fileBudgetBytes", Field::Integer)])),
    (
        "issues",
        Field::Struct(&[
            ("enabled", Field::Bool),
            ("requireLabel", Field::Text),
            ("branchPrefix", Field::Text),
            ("validationComment", Field::Bool),
        ]),
    ),
    (
        "triggers",
        Field::Struct(&[
            ("authorAssociations", Field::Texts),
            ("allowedBots", Field::Texts),
            ("optInLabel", Field::Text),
            ("maxRunsPerHour", Field::Integer),
        ]),
    ),
    (
        "autofix",
        Field::Struct(&[
            ("enabled", Field::Bool),
            ("minConfidence", Field::Float),
            ("allowedChangeRisks", Field::Variants(&["mechanical", "behavioral", "high-impact"])),
            ("requireIsolated", Field::Bool),
            ("allowNewFiles", Field::Bool),
        ]),
    ),
    (
        "validation",
        Field::Struct(&[
            ("minConfidence", Field::Float),
            ("requireEvidence", Field::Bool),
            ("requireKnownFiles", Field::Bool),
            ("verifyQuotedEvidence", Field::Bool),
            ("quotes", Field::Variant(&["all", "any"])),
        ]),
    ),
    (
        "agent",
        Field::Struct(&[
            ("maxAttempts", Field::Integer),
            ("timeoutMs", Field::Integer),
            ("maxChangedFiles", Field::Integer),
        ]),
    ),
    ("permissions", Field::Struct(&[("network", Field::Variant(&["none", "restricted", "full"]))])),
    (
        "runner",
        Field::Struct(&[
            ("maxOutputBytes", Field::Integer),
            ("isolation", Field::Variant(&["local", "container"])),
            ("engine", Field::Variant(&["docker", "podman"])),
            ("image", Field::Text),
            ("workdir", Field::Text),
            ("cpus", Field::Float),
            ("memory", Field::Text),
            ("network", Field::Text),
        ]),
    ),
    (
        "model",
        Field::Struct(&[
            ("provider", Field::Variant(PROVIDERS)),
            ("name", Field::Text),
            ("inputCostPerMillionTokens", Field::Float),
            ("outputCostPerMillionTokens", Field::Float),
        ]),
    ),
];

/// Scalars any field meets now and then: the core schema's edge cases,
/// names no vocabulary has.
const ANY: &[&str] = &[
    "",
    "~",
    "null",
    "NULL",
    "true",
    "False",
    "yes",
    "0",
    "-0",
    "+0",
    "1",
    "-1",
    "7",
    "0x10",
    "0o17",
    "-0x10",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "1.5",
    "1.0",
    "-2.5",
    "1e3",
    "1e400",
    "-1e400",
    "1e-7",
    ".5",
    "5.",
    "+.inf",
    "-.inf",
    ".nan",
    "0.85",
    "a b",
    "it's",
    "\"x\"",
    "é",
    "tab\there",
    "line\nbreak",
    "root",
    "Fix",
    "open",
    "vm",
    "lxc",
    "skynet",
    "high-impact",
];

/// Values of each type a field holds.
const BOOLS: &[&str] = &["true", "false", "True", "FALSE"];
const INTEGERS: &[&str] = &["1", "3", "16", "0", "-0", "0xff", "0o17", "+5", "4294967295", "99999"];
const FLOATS: &[&str] = &["0", "1", "0.5", "0.85", ".75", "5e-1", "2", "-0", "-0.1", "1e400", ".nan", "-3", "0x10"];
const TEXTS: &[&str] =
    &["agent-zero", "bots/zero/", "2024", "gpt-5", "4g", "OWNER", "MEMBER", "coderabbitai[bot]", "~"];
const COMMANDS: &[&str] = &["cargo test", "pnpm run lint", "make", "   ", "pytest -k \"a b\"", "a && b"];

/// A deterministic generator driven by proptest's seed (the trees are
/// context-dependent, which proptest's combinators make awkward).
/// `noise` is the percentage of values of any type and of bad keys.
struct Gen {
    state: u64,
    line: usize,
    noise: usize,
}

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(1000) < percent * 10
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }

    fn node(&mut self, value: Value) -> Node {
        self.line += 1;
        Node { value, line: self.line, column: 1 + self.below(20) }
    }

    /// A scalar from `from`, quoted `quoted` percent of the time.
    fn scalar(&mut self, from: &[&str], quoted: usize) -> Node {
        let text = self.pick(from).to_owned();
        let plain = !self.chance(quoted);
        self.node(Value::Scalar { text, plain })
    }

    /// Anything at all, `depth` levels at most.
    fn any(&mut self, depth: usize) -> Node {
        match if depth == 0 { 0 } else { self.below(6) } {
            0..=3 => self.scalar(ANY, 25),
            4 => {
                let items = (0..self.below(4)).map(|_| self.any(depth - 1)).collect();
                self.node(Value::Sequence(items))
            }
            _ => {
                let entries = (0..self.below(3)).map(|_| (self.scalar(ANY, 25), self.any(depth - 1))).collect();
                self.node(Value::Mapping(entries))
            }
        }
    }

    /// A value for `field`: of its type, or (by `noise`) anything.
    fn value(&mut self, field: Field, depth: usize) -> Node {
        if self.chance(self.noise) {
            return self.any(depth.min(2));
        }
        match field {
            Field::Bool => self.scalar(BOOLS, self.noise),
            Field::Integer => self.scalar(INTEGERS, self.noise),
            Field::Float => self.scalar(FLOATS, self.noise),
            Field::Text => self.scalar(TEXTS, 25),
            Field::Variant(names) => self.scalar(names, 25),
            Field::Variants(names) => {
                let items = (0..self.below(4)).map(|_| self.value(Field::Variant(names), depth)).collect();
                self.node(Value::Sequence(items))
            }
            Field::Texts => {
                let items = (0..self.below(4)).map(|_| self.value(Field::Text, depth)).collect();
                self.node(Value::Sequence(items))
            }
            Field::Checks => {
                let items = (0..self.below(4))
                    .map(|_| {
                        if self.chance(50) {
                            self.scalar(COMMANDS, 25)
                        } else {
                            let argv = (0..self.below(4)).map(|_| self.value(Field::Text, depth)).collect();
                            self.node(Value::Sequence(argv))
                        }
                    })
                    .collect();
                self.node(Value::Sequence(items))
            }
            Field::Struct(fields) => self.record(fields, depth),
        }
    }

    /// A struct: mostly a mapping of some of its fields in any order
    /// (by `noise`, an unknown, repeated or non-scalar key), sometimes a
    /// sequence by position.
    fn record(&mut self, fields: &[(&str, Field)], depth: usize) -> Node {
        let depth = depth.saturating_sub(1);
        if self.chance(5) {
            let items = (0..self.below(fields.len() + 3))
                .map(|index| match fields.get(index) {
                    Some((_, field)) => self.value(*field, depth),
                    None => self.any(1),
                })
                .collect();
            return self.node(Value::Sequence(items));
        }
        let mut order: Vec<usize> = (0..fields.len()).collect();
        for index in (1..order.len()).rev() {
            order.swap(index, self.below(index + 1));
        }
        order.truncate(self.below(fields.len() + 1));
        if self.chance(self.noise / 2) {
            let again = self.below(fields.len());
            order.insert(self.below(order.len() + 1), again);
        }
        let mut entries = Vec::new();
        for index in order {
            let (name, field) = fields[index];
            let key = self.scalar(&[name], 25);
            let value = self.value(field, depth);
            entries.push((key, value));
        }
        if self.chance(self.noise / 2) {
            let key = if self.chance(10) {
                self.any(1)
            } else {
                self.scalar(&["yolo", "Enabled", "", "~", "1", "apiKey"], 25)
            };
            let value = self.any(1);
            entries.insert(self.below(entries.len() + 1), (key, value));
        }
        self.node(Value::Mapping(entries))
    }
}

/// The JSON a tree's scalars mean (a plain scalar by the core schema, a
/// quoted one a string), for `Node::from_json`.
fn json(node: &Node) -> serde_json::Value {
    use serde_json::Value as Json;
    match super::super::de::Kind::of(node) {
        super::super::de::Kind::Null => Json::Null,
        super::super::de::Kind::Bool(value) => Json::Bool(value),
        super::super::de::Kind::Unsigned(value) => value.into(),
        super::super::de::Kind::Negative(value) => value.into(),
        super::super::de::Kind::Float(value) => serde_json::Number::from_f64(value).map_or(Json::Null, Json::Number),
        super::super::de::Kind::Text(text) => Json::String(text.to_owned()),
        super::super::de::Kind::Sequence(items) => Json::Array(items.iter().map(json).collect()),
        super::super::de::Kind::Mapping(entries) => Json::Object(
            entries
                .iter()
                .filter_map(|(key, value)| match &key.value {
                    Value::Scalar { text, .. } => Some((text.clone(), json(value))),
                    _ => None,
                })
                .collect(),
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Trees from the policy's schema, as a file (with positions) and as
    /// a record (JSON, no positions).
    #[test]
    fn generated_trees_read_as_serde_read_them(
        seed in any::<u64>(),
        shape in 0..20u8,
        noise in prop::sample::select(vec![0, 1, 3, 10, 30]),
    ) {
        let mut generator = Gen { state: seed | 1, line: 0, noise };
        let root = match shape {
            0 => generator.any(3),
            1 => generator.value(Field::Struct(POLICY), 4),
            _ => generator.record(POLICY, 4),
        };
        let (new, old) = both(&root);
        prop_assert_eq!(new, old, "{:?}", root);
        let record = Node::from_json(&json(&root));
        let (new, old) = both(&record);
        prop_assert_eq!(new, old, "{:?}", record);
    }

    /// The reference's example with one value replaced by an edge case,
    /// or with a byte edited as in `yaml_tests.rs`.
    #[test]
    fn edited_real_files_read_as_serde_read_them(
        line in 0..200usize,
        value in prop::sample::select([ANY, BOOLS, INTEGERS, FLOATS, TEXTS, COMMANDS].concat()),
        quote in any::<bool>(),
        at in 0..REFERENCE_EXAMPLE.len(),
        byte in prop::sample::select(b" \t\n-:#[]{},'\"|>~0".to_vec()),
    ) {
        let lines: Vec<&str> = REFERENCE_EXAMPLE.lines().collect();
        let line = line % lines.len();
        let mut edited = String::new();
        for (index, text) in lines.iter().enumerate() {
            match text.split_once(": ") {
                Some((key, _)) if index == line && !text.trim_start().starts_with('#') => {
                    let value = if quote { format!("'{}'", value.replace('\'', "''")) } else { value.replace('\n', " ") };
                    edited += &format!("{key}: {value}\n");
                }
                _ => edited += &format!("{text}\n"),
            }
        }
        let mut bytes = REFERENCE_EXAMPLE.as_bytes().to_vec();
        bytes[at] = byte;
        for text in [edited, String::from_utf8_lossy(&bytes).into_owned()] {
            if let Ok(Some(node)) = yaml::load(&text) {
                let (new, old) = both(&node);
                prop_assert_eq!(new, old, "{}", text);
            }
        }
    }
}

#[test]
fn the_reference_and_every_default_read_alike() {
    assert_same(&yaml::load(REFERENCE_EXAMPLE).unwrap().unwrap());
    assert_same(&Node::from_json(&serde_json::to_value(Policy::default()).unwrap()));
    for json in ["null", "[]", "[2, \"fix\", [\"make\"], [true]]", "{\"yolo\": 1}", "\"x\"", "1.0"] {
        assert_same(&Node::from_json(&serde_json::from_str(json).unwrap()));
    }
}

/// The messages of each kind, as serde worded them (the generated trees
/// above check them against serde itself).
#[test]
fn each_message_kind_reads_as_serde_worded_it() {
    let cases = [
        (
            "colour: blue\n",
            "unknown field `colour`, expected one of `version`, `mode`, `checks`, `proactive`, `issues`, `triggers`, `autofix`, `validation`, `agent`, `permissions`, `runner`, `model`, `checkRun`, `review` at line 1 column 1",
        ),
        ("proactive: {on: 1}\n", "proactive: unknown field `on`, expected `enabled` at line 1 column 13"),
        (
            "triggers: {x: 1}\n",
            "triggers: unknown field `x`, expected one of `authorAssociations`, `allowedBots`, `optInLabel`, `maxRunsPerHour` at line 1 column 12",
        ),
        ("agent:\n  timeoutMs: 1\n  timeoutMs: 2\n", "agent: duplicate field `timeoutMs` at line 2 column 3"),
        (
            "agent: {maxAttempts: 4294967296}\n",
            "agent.maxAttempts: invalid value: integer `4294967296`, expected u32 at line 1 column 22",
        ),
        ("agent: {timeoutMs: -1}\n", "agent.timeoutMs: invalid value: integer `-1`, expected u64 at line 1 column 20"),
        (
            "agent: {timeoutMs: 1.0}\n",
            "agent.timeoutMs: invalid type: floating point `1.0`, expected u64 at line 1 column 20",
        ),
        (
            "autofix: {minConfidence: yes}\n",
            "autofix.minConfidence: invalid type: string \"yes\", expected f64 at line 1 column 26",
        ),
        ("autofix:\n  enabled:\n", "autofix.enabled: invalid type: unit value, expected a boolean at line 2 column 10"),
        (
            "proactive: 1e3\n",
            "proactive: invalid type: floating point `1000.0`, expected struct ProactivePolicy at line 1 column 12",
        ),
        ("mode: {a: b}\n", "mode: invalid type: map, expected enum RunMode at line 1 column 7"),
        (
            "permissions: {network: open}\n",
            "permissions.network: unknown variant `open`, expected one of `none`, `restricted`, `full` at line 1 column 24",
        ),
        (
            "runner: {isolation: vm}\n",
            "runner.isolation: unknown variant `vm`, expected `local` or `container` at line 1 column 21",
        ),
        (
            "runner: {cpus: ~}\n",
            "runner.cpus: invalid type: unit value, expected a string or a number at line 1 column 16",
        ),
        (
            "model: {provider: [a]}\n",
            "model.provider: invalid type: sequence, expected a model provider name at line 1 column 19",
        ),
        (
            "checks: [true]\n",
            "checks[0]: invalid type: boolean `true`, expected a command as a list of arguments, or one string split on whitespace at line 1 column 10",
        ),
        (
            "triggers: {allowedBots: x}\n",
            "triggers.allowedBots: invalid type: string \"x\", expected a sequence at line 1 column 25",
        ),
        (
            "issues: {requireLabel: [x]}\n",
            "issues.requireLabel: invalid type: sequence, expected a string at line 1 column 24",
        ),
    ];
    for (yaml, expected) in cases {
        let node = yaml::load(yaml).unwrap().unwrap();
        assert_eq!(read::policy(&node).map(|_| ()), Err(expected.to_owned()), "{yaml}");
        assert_same(&node);
    }
    // A struct may be a sequence, by position; elements past the last
    // field are never read.
    let node = yaml::load("agent: [5, 60000]\nproactive: [true, [nested], {x: y}]\n").unwrap().unwrap();
    let policy = read::policy(&node).unwrap();
    assert_eq!((policy.agent.max_attempts, policy.agent.timeout_ms, policy.agent.max_changed_files), (5, 60_000, 10));
    assert!(policy.proactive.enabled);
    assert_same(&node);
}

const REFERENCE_EXAMPLE: &str = include_str!("testdata/reference.agent-zero.example.yml");
