//! The one path from a model's answer to an [`AgentDecision`], whichever
//! provider answered: JSON parsing, a walk of the schema tree with field
//! paths, then serde (`deny_unknown_fields`) for the typed value.
//!
//! The answer is untrusted text: violations quote at most a few characters
//! of it, are redacted, and are short enough to show the model next tick.

use agent_zero_contracts::{AgentDecision, is_repository_relative_path};
use serde_json::Value;
use thiserror::Error;

use crate::UnusableKind;
use crate::redact::{cap, redact_to};
use crate::schema::{Shape, decision_shape};

/// Longest violation description, in characters.
pub const MAX_VIOLATION_CHARS: usize = 600;
/// Violations listed before the rest are counted.
const MAX_LISTED: usize = 5;
/// Characters of model output quoted in a violation.
const MAX_QUOTE: usize = 40;

/// Why an answer is not a decision.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {violation}", kind.as_str())]
pub struct AnswerError {
    pub kind: UnusableKind,
    /// Field paths and reasons, redacted and capped.
    pub violation: String,
}

impl AnswerError {
    fn new(kind: UnusableKind, violation: &str) -> Self {
        Self { kind, violation: redact_to(violation, &[], MAX_VIOLATION_CHARS) }
    }
}

/// Parses and validates a model's text answer (a single JSON object; one
/// surrounding Markdown code fence is tolerated for local models).
pub fn parse_decision(text: &str) -> Result<AgentDecision, AnswerError> {
    let body = strip_fence(text.trim());
    if body.is_empty() {
        return Err(AnswerError::new(UnusableKind::MalformedJson, "the answer was empty"));
    }
    let value: Value = agent_zero_codecs::json::from_str(body)
        .map_err(|e| AnswerError::new(UnusableKind::MalformedJson, &format!("the answer is not JSON: {e}")))?;
    decision_from_value(value)
}

/// Validates an already-parsed answer (Anthropic's tool input).
pub fn decision_from_value(value: Value) -> Result<AgentDecision, AnswerError> {
    let mut violations = Vec::new();
    check(&decision_shape(), &value, "", &mut violations);
    if !violations.is_empty() {
        let extra = violations.len().saturating_sub(MAX_LISTED);
        let mut text = violations.into_iter().take(MAX_LISTED).collect::<Vec<_>>().join("; ");
        if extra > 0 {
            text.push_str(&format!("; and {extra} more"));
        }
        return Err(AnswerError::new(UnusableKind::SchemaViolation, &text));
    }
    // From bytes, not `from_value`: one JSON deserializer for every type
    // keeps the wasm free of a second copy of the decision's.
    serde_json::to_vec(&value)
        .and_then(|bytes| agent_zero_codecs::json::from_slice(&bytes))
        .map_err(|e| AnswerError::new(UnusableKind::SchemaViolation, &e.to_string()))
}

fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(rest) = rest.strip_suffix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.trim()
}

fn at(path: &str) -> &str {
    if path.is_empty() { "answer" } else { path }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn quote(text: &str) -> String {
    format!("{:?}", cap(text, MAX_QUOTE))
}

fn check(shape: &Shape, value: &Value, path: &str, out: &mut Vec<String>) {
    let expected = |what: &str, out: &mut Vec<String>| {
        out.push(format!("`{}`: expected {what}, got {}", at(path), kind_of(value)));
    };
    match shape {
        Shape::Object(fields) => {
            let Some(map) = value.as_object() else {
                return expected("an object", out);
            };
            for key in map.keys() {
                if !fields.iter().any(|f| f.name == key) {
                    out.push(format!("`{}`: unknown field", join(path, &cap(key, MAX_QUOTE))));
                }
            }
            for f in fields {
                match map.get(f.name) {
                    Some(v) => check(&f.shape, v, &join(path, f.name), out),
                    None if f.optional => {}
                    None => out.push(format!("`{}`: missing", join(path, f.name))),
                }
            }
        }
        Shape::Array(items) => {
            let Some(list) = value.as_array() else {
                return expected("an array", out);
            };
            for (i, v) in list.iter().enumerate() {
                check(items, v, &format!("{}[{i}]", at(path)), out);
            }
        }
        Shape::String => {
            if !value.is_string() {
                expected("a string", out);
            }
        }
        Shape::Path => match value.as_str() {
            None => expected("a string", out),
            Some(p) if !is_repository_relative_path(p) => {
                out.push(format!("`{}`: {} is not a path inside the checkout", at(path), quote(p)));
            }
            Some(_) => {}
        },
        Shape::Number { min, max } => match value.as_f64() {
            None => expected("a number", out),
            Some(n) if !(n.is_finite() && *min <= n && n <= *max) => {
                out.push(format!("`{}`: {n} is outside {min}..={max}", at(path)));
            }
            Some(_) => {}
        },
        Shape::Boolean => {
            if !value.is_boolean() {
                expected("a boolean", out);
            }
        }
        Shape::Enum(values) => match value.as_str() {
            Some(s) if values.contains(&s) => {}
            Some(s) => out.push(format!("`{}`: expected one of {}, got {}", at(path), values.join(", "), quote(s))),
            None => expected("a string", out),
        },
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_zero_contracts::{ChangeRisk, Severity};
    use serde_json::json;

    fn good() -> Value {
        json!({
            "finding": {
                "title": "Null return", "explanation": "load() returns null.", "severity": "high",
                "confidence": 0.9, "valid": true, "evidence": ["`return null;`"], "files": ["src/user.ts"],
                "changeRisk": "mechanical"
            },
            "plan": ["Guard the null return"],
            "acceptanceCriteria": ["load() never returns null"],
            "changes": [{"path": "src/user.ts", "content": "export const load = () => ({});\n", "reason": "guard"}]
        })
    }

    #[test]
    fn accepts_a_decision_with_or_without_a_fence() {
        let d = parse_decision(&good().to_string()).unwrap();
        assert_eq!(d.finding.severity, Severity::High);
        assert_eq!(d.finding.change_risk, ChangeRisk::Mechanical);
        assert_eq!(d.changes[0].path, "src/user.ts");
        let fenced = format!("```json\n{}\n```", good());
        assert_eq!(parse_decision(&fenced).unwrap(), d);
        let mut bare = good();
        bare.as_object_mut().unwrap().remove("acceptanceCriteria");
        bare.as_object_mut().unwrap().remove("changes");
        let d = decision_from_value(bare).unwrap();
        assert!(d.acceptance_criteria.is_empty() && d.changes.is_empty() && d.witness.is_empty());
    }

    #[test]
    fn a_witness_is_read_and_its_path_checked() {
        let mut with = good();
        with["witness"] = json!([{"path": "tests/test_witness.py", "content": "assert False\n"}]);
        let d = decision_from_value(with.clone()).unwrap();
        assert_eq!(d.witness[0].path, "tests/test_witness.py");
        with["witness"][0]["path"] = json!("../outside.py");
        let e = decision_from_value(with.clone()).unwrap_err().to_string();
        assert!(e.contains("witness"), "{e}");
        with["witness"][0] = json!({"path": "t.py", "content": "x", "command": "rm -rf /"});
        let e = decision_from_value(with).unwrap_err().to_string();
        assert!(e.contains("command"), "the model cannot name a command: {e}");
    }

    #[test]
    fn malformed_json_is_its_own_kind() {
        let e = parse_decision("sure thing!").unwrap_err();
        assert_eq!(e.kind, UnusableKind::MalformedJson);
        assert!(e.violation.starts_with("the answer is not JSON"), "{}", e.violation);
        assert_eq!(parse_decision("  ").unwrap_err().kind, UnusableKind::MalformedJson);
    }

    #[test]
    fn violations_name_field_paths() {
        let mut v = good();
        v["finding"]["severity"] = json!("catastrophic");
        v["finding"]["confidence"] = json!(1.7);
        v["finding"]["mood"] = json!("x");
        v["finding"].as_object_mut().unwrap().remove("valid");
        v["plan"] = json!("not a list");
        v["changes"][0]["path"] = json!("../etc/passwd");
        let e = decision_from_value(v).unwrap_err();
        assert_eq!(e.kind, UnusableKind::SchemaViolation);
        let text = &e.violation;
        for part in [
            "`finding.mood`: unknown field",
            "`finding.severity`: expected one of critical, high, medium, low, got \"catastrophic\"",
            "`finding.confidence`: 1.7 is outside 0..=1",
            "`finding.valid`: missing",
            "`plan`: expected an array, got a string",
            "and 1 more",
        ] {
            assert!(text.contains(part), "{part} not in {text}");
        }
        let mut v = good();
        v["changes"][0]["path"] = json!("/etc/passwd");
        let e = decision_from_value(v).unwrap_err();
        assert_eq!(e.violation, "`changes[0].path`: \"/etc/passwd\" is not a path inside the checkout");
        assert_eq!(
            decision_from_value(json!([1])).unwrap_err().violation,
            "`answer`: expected an object, got an array"
        );
    }

    #[test]
    fn violations_are_short_and_redacted() {
        let mut v = good();
        let key = format!("sk-{}", "A".repeat(40));
        v["finding"]["severity"] = json!(key);
        for i in 0..50 {
            v[format!("extra{i}_{}", "x".repeat(100))] = json!(1);
        }
        let e = decision_from_value(v).unwrap_err();
        assert!(!e.violation.contains("AAAAAAAAAAAA"), "{}", e.violation);
        assert!(e.violation.chars().count() <= MAX_VIOLATION_CHARS + 1);
        assert!(e.violation.contains("more"));
    }
}
