//! The one definition of what a decision looks like, emitted per wire
//! dialect. The validator in `decode` walks the same tree, so what we ask
//! providers for and what we accept cannot drift apart.
//!
//! Emitted schemas stay in the subset every provider enforces: every field
//! required, `additionalProperties: false`, no numeric bounds in JSON Schema
//! (OpenAI strict mode, Anthropic tools and local grammars differ there); the
//! confidence range is stated in its description and checked by us.

use agent_zero_contracts::{ChangeRisk, Severity, inserted};
use serde_json::{Map, Value, json};

/// A node of the decision schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape {
    Object(Vec<Field>),
    Array(Box<Self>),
    String,
    /// A string that must name a file inside the checkout.
    Path,
    Number {
        min: f64,
        max: f64,
    },
    Boolean,
    Enum(Vec<&'static str>),
}

/// A property of an object node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) shape: Shape,
    /// Emitted as required (strict modes insist) but accepted when missing.
    pub(crate) optional: bool,
}

fn field(name: &'static str, description: &'static str, shape: Shape) -> Field {
    Field { name, description, shape, optional: false }
}

fn strings() -> Shape {
    Shape::Array(Box::new(Shape::String))
}

/// The `AgentDecision` contract as a schema tree.
pub(crate) fn decision_shape() -> Shape {
    let finding = Shape::Object(vec![
        field("title", "One line naming the problem.", Shape::String),
        field("explanation", "Why the claim holds or does not, citing the evidence.", Shape::String),
        field(
            "severity",
            "Impact if the claim holds.",
            Shape::Enum(Severity::ALL.iter().map(|s| s.as_str()).collect()),
        ),
        field(
            "confidence",
            "Confidence that the claim holds, a number between 0 and 1.",
            Shape::Number { min: 0.0, max: 1.0 },
        ),
        field("valid", "True only when repository evidence supports the claim.", Shape::Boolean),
        field("evidence", "Exact repository text quoted in backticks.", strings()),
        field("files", "Repository-relative paths the claim is about.", strings()),
        field(
            "changeRisk",
            "mechanical: routine, semantics-preserving; behavioral: runtime behaviour changes; high-impact: security, data, dependencies, public API or architecture.",
            Shape::Enum(ChangeRisk::ALL.iter().map(|r| r.as_str()).collect()),
        ),
    ]);
    let change = Shape::Object(vec![
        field("path", "Repository-relative path of the file to replace.", Shape::Path),
        field("content", "The complete new file content.", Shape::String),
        field("reason", "Why this file changes.", Shape::String),
    ]);
    let witness = Shape::Object(vec![
        field("path", "Repository-relative path of a new test file.", Shape::Path),
        field("content", "The complete test file, at most 16 KiB.", Shape::String),
    ]);
    Shape::Object(vec![
        field("finding", "The single most important finding.", finding),
        field("plan", "Ordered steps of the fix; empty when nothing should change.", strings()),
        Field {
            optional: true,
            ..field(
                "acceptanceCriteria",
                "Verifiable conditions for done (at most 20, each at most 500 characters).",
                strings(),
            )
        },
        Field {
            optional: true,
            ..field(
                "changes",
                "Full-content replacements of files named in the context.",
                Shape::Array(Box::new(change)),
            )
        },
        Field {
            optional: true,
            ..field(
                "witness",
                "For a behavioural bug in a pull request: at most one new test file that fails on its head and passes on its base (the repository runs it with its own command, the path as the last argument); empty otherwise.",
                Shape::Array(Box::new(witness)),
            )
        },
    ])
}

/// JSON Schema for OpenAI-style `response_format` and Anthropic `input_schema`.
pub fn decision_json_schema() -> Value {
    json_schema(&decision_shape(), None)
}

fn json_schema(shape: &Shape, description: Option<&str>) -> Value {
    let mut node = match shape {
        Shape::Object(fields) => {
            let properties: Map<String, Value> =
                inserted(fields.iter().map(|f| (f.name.to_owned(), json_schema(&f.shape, Some(f.description)))));
            let required: Vec<&str> = fields.iter().map(|f| f.name).collect();
            json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
        }
        Shape::Array(items) => json!({"type": "array", "items": json_schema(items, None)}),
        Shape::String | Shape::Path => json!({"type": "string"}),
        Shape::Number { .. } => json!({"type": "number"}),
        Shape::Boolean => json!({"type": "boolean"}),
        Shape::Enum(values) => json!({"type": "string", "enum": values}),
    };
    if let (Some(text), Some(map)) = (description, node.as_object_mut()) {
        map.insert("description".into(), Value::from(text));
    }
    node
}

/// Gemini `responseSchema`: the OpenAPI 3.0 subset (upper-case types,
/// `propertyOrdering`, `format: enum`, numeric bounds; no
/// `additionalProperties`).
pub fn decision_gemini_schema() -> Value {
    gemini_schema(&decision_shape(), None)
}

fn gemini_schema(shape: &Shape, description: Option<&str>) -> Value {
    let mut node = match shape {
        Shape::Object(fields) => {
            let properties: Map<String, Value> =
                inserted(fields.iter().map(|f| (f.name.to_owned(), gemini_schema(&f.shape, Some(f.description)))));
            let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
            json!({"type": "OBJECT", "properties": properties, "required": names, "propertyOrdering": names})
        }
        Shape::Array(items) => json!({"type": "ARRAY", "items": gemini_schema(items, None)}),
        Shape::String | Shape::Path => json!({"type": "STRING"}),
        Shape::Number { min, max } => json!({"type": "NUMBER", "minimum": min, "maximum": max}),
        Shape::Boolean => json!({"type": "BOOLEAN"}),
        Shape::Enum(values) => json!({"type": "STRING", "format": "enum", "enum": values}),
    };
    if let (Some(text), Some(map)) = (description, node.as_object_mut()) {
        map.insert("description".into(), Value::from(text));
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_schema_is_strict_everywhere() {
        let schema = decision_json_schema();
        assert_eq!(schema["required"], json!(["finding", "plan", "acceptanceCriteria", "changes", "witness"]));
        assert_eq!(schema["additionalProperties"], false);
        let finding = &schema["properties"]["finding"];
        assert_eq!(finding["additionalProperties"], false);
        assert_eq!(finding["properties"]["severity"]["enum"], json!(["critical", "high", "medium", "low"]));
        assert_eq!(finding["properties"]["changeRisk"]["enum"], json!(["mechanical", "behavioral", "high-impact"]));
        assert_eq!(finding["properties"]["confidence"]["type"], "number");
        assert!(finding["properties"]["confidence"].get("minimum").is_none());
        let change = &schema["properties"]["changes"]["items"];
        assert_eq!(change["required"], json!(["path", "content", "reason"]));
        assert_eq!(change["additionalProperties"], false);
        // Every object node is closed and lists all its properties as required.
        fn walk(v: &Value) {
            if v["type"] == "object" {
                let props: Vec<&String> = v["properties"].as_object().unwrap().keys().collect();
                let req: Vec<&str> = v["required"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
                assert_eq!(props.len(), req.len());
                assert_eq!(v["additionalProperties"], false);
                v["properties"].as_object().unwrap().values().for_each(walk);
            }
            if v["type"] == "array" {
                walk(&v["items"]);
            }
        }
        walk(&schema);
    }

    #[test]
    fn gemini_schema_uses_openapi_types() {
        let schema = decision_gemini_schema();
        assert_eq!(schema["type"], "OBJECT");
        assert!(schema.get("additionalProperties").is_none());
        assert_eq!(schema["propertyOrdering"], json!(["finding", "plan", "acceptanceCriteria", "changes", "witness"]));
        let confidence = &schema["properties"]["finding"]["properties"]["confidence"];
        assert_eq!(
            confidence,
            &json!({"type": "NUMBER", "minimum": 0.0, "maximum": 1.0, "description": "Confidence that the claim holds, a number between 0 and 1."})
        );
        assert_eq!(schema["properties"]["finding"]["properties"]["severity"]["format"], "enum");
        assert_eq!(schema["properties"]["plan"]["items"]["type"], "STRING");
    }
}
