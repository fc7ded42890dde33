use std::collections::BTreeSet;

use agent_zero_contracts::{RunMode, TaskState, Trigger, Verdict};
use serde_json::{Value, json};

use super::*;
use crate::router::ROUTES;

fn document() -> Value {
    serde_json::from_str(DOCUMENT).expect("openapi.json is JSON")
}

/// The served document is the repository's, token for token: the same
/// JSON value (strings and their spaces and escapes kept), on one line.
#[test]
fn the_served_document_is_the_source_without_its_indentation() {
    let source: Value = serde_json::from_slice(SOURCE).unwrap();
    assert_eq!(document(), source);
    assert!(!DOCUMENT.contains('\n'), "indentation left in");
    assert!(DOCUMENT.len() < SOURCE.len() * 3 / 4, "{} of {} bytes", DOCUMENT.len(), SOURCE.len());
    // Whitespace and escaped quotes inside strings are kept as written.
    let text = r#"{ "a" : "x \" y\\" , "b" : [ 1 , "  " ]
}"#;
    let mut out = [0; 64];
    let len = minify(text.as_bytes(), &mut out);
    assert_eq!(std::str::from_utf8(&out[..len]).unwrap(), r#"{"a":"x \" y\\","b":[1,"  "]}"#);
    assert_eq!(minify(text.as_bytes(), &mut []), len);
}

/// A small JSON Schema checker for the keywords the document uses:
/// `$ref`, `type` (one or several), `enum`, `required`, `properties`,
/// `additionalProperties: false`, `items`, `minLength`/`maxLength`,
/// `minimum`/`maximum`, `minItems`/`maxItems`. (`pattern` and `format`
/// are descriptive here.)
fn check(document: &Value, schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    let schema = resolve(document, schema);
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let actual = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let ok = types.iter().any(|t| *t == actual || (*t == "number" && actual == "integer"));
        if !ok {
            errors.push(format!("{path}: {actual} is not {types:?}"));
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        errors.push(format!("{path}: {value} not in {allowed:?}"));
    }
    match value {
        Value::String(s) => {
            let len = s.chars().count() as u64;
            if schema.get("minLength").and_then(Value::as_u64).is_some_and(|m| len < m) {
                errors.push(format!("{path}: shorter than minLength"));
            }
            if schema.get("maxLength").and_then(Value::as_u64).is_some_and(|m| len > m) {
                errors.push(format!("{path}: longer than maxLength"));
            }
        }
        Value::Number(n) => {
            let n = n.as_f64().unwrap_or_default();
            if schema.get("minimum").and_then(Value::as_f64).is_some_and(|m| n < m) {
                errors.push(format!("{path}: below minimum"));
            }
            if schema.get("maximum").and_then(Value::as_f64).is_some_and(|m| n > m) {
                errors.push(format!("{path}: above maximum"));
            }
        }
        Value::Array(items) => {
            if schema.get("minItems").and_then(Value::as_u64).is_some_and(|m| (items.len() as u64) < m) {
                errors.push(format!("{path}: fewer than minItems"));
            }
            if schema.get("maxItems").and_then(Value::as_u64).is_some_and(|m| items.len() as u64 > m) {
                errors.push(format!("{path}: more than maxItems"));
            }
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(document, item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
        }
        Value::Object(map) => {
            for name in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                if !map.contains_key(name) {
                    errors.push(format!("{path}: missing required `{name}`"));
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            for (name, field) in map {
                match properties.and_then(|p| p.get(name)) {
                    Some(field_schema) => check(document, field_schema, field, &format!("{path}.{name}"), errors),
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        errors.push(format!("{path}: unknown property `{name}`"));
                    }
                    None => {}
                }
            }
        }
        _ => {}
    }
}

fn errors_of(document: &Value, schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(document, schema, value, "$", &mut errors);
    errors
}

fn schema(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

#[test]
fn every_route_and_method_is_documented_and_nothing_else() {
    let doc = document();
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| item.as_object().unwrap().keys().map(move |m| (path.clone(), m.clone())))
        .collect();
    let routed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .flat_map(|r| r.methods.iter().map(move |(m, _)| (r.pattern.to_owned(), m.as_str().to_ascii_lowercase())))
        .collect();
    assert_eq!(documented, routed);
    let ids: Vec<&str> = documented.iter().map(|(p, m)| doc["paths"][p][m]["operationId"].as_str().unwrap()).collect();
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), ids.len(), "operationIds are unique");
}

#[test]
fn document_names_this_version_and_the_contract_vocabularies() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], crate::VERSION);
    let names = |all: Vec<&str>| Value::from(all);
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["TaskState"]["enum"], names(TaskState::ALL.iter().map(|s| s.as_str()).collect()));
    assert_eq!(schemas["RunMode"]["enum"], names(RunMode::ALL.iter().map(|s| s.as_str()).collect()));
    assert_eq!(schemas["Trigger"]["enum"], names(Trigger::ALL.iter().map(|s| s.as_str()).collect()));
    assert_eq!(schemas["Verdict"]["enum"], names(Verdict::ALL.iter().map(|s| s.as_str()).collect()));
    let approving = &schemas["TaskDetail"]["properties"]["pendingDecision"]["properties"]["approving"]["enum"];
    let effects = agent_zero_engine::ApprovalEffect::ALL;
    assert_eq!(approving, &names(effects.iter().map(|e| e.as_str()).collect()));
    let actions = crate::audit_log::AuditAction::ALL;
    assert_eq!(
        schemas["AuditEntry"]["properties"]["action"]["enum"],
        names(actions.iter().map(|a| a.as_str()).collect())
    );
    for action in actions {
        assert_eq!(serde_json::to_value(action).unwrap(), json!(action.as_str()));
    }
    assert_eq!(schemas["CreateTask"]["properties"]["feedback"]["maxItems"], json!(crate::routes::tasks::MAX_FEEDBACK));
    assert_eq!(
        schemas["FeedbackInput"]["properties"]["body"]["maxLength"],
        json!(crate::routes::tasks::MAX_FEEDBACK_BYTES)
    );
}

#[test]
fn every_reference_resolves() {
    let doc = document();
    let mut stack = vec![&doc];
    let mut seen = 0;
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    seen += 1;
                    let pointer = r.strip_prefix('#').expect("local reference");
                    assert!(doc.pointer(pointer).is_some(), "{r} does not resolve");
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    assert!(seen > 20, "{seen}");
}

#[test]
fn every_example_validates_against_its_schema() {
    let doc = document();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let mut contents: Vec<&Value> = op
                .pointer("/requestBody/content")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|c| c.values())
                .collect();
            for response in op["responses"].as_object().unwrap().values() {
                contents
                    .extend(response.get("content").and_then(Value::as_object).into_iter().flat_map(|c| c.values()));
            }
            for content in contents {
                if let Some(example) = content.get("example") {
                    let errors = errors_of(&doc, &content["schema"], example);
                    assert!(errors.is_empty(), "{method} {path}: {errors:?}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} examples");
}

#[test]
fn the_checker_rejects_what_the_schemas_forbid() {
    let doc = document();
    let cases = [
        ("CreateTask", json!({"repository": 1, "trigger": "feedback"})),
        ("CreateTask", json!({"repository": "a/b", "trigger": "feedback", "actor": "mallory"})),
        ("CreateTask", json!({"repository": "a/b"})),
        ("CreateTask", json!({"repository": "a/b", "trigger": "review"})),
        ("Decision", json!({"decision": "maybe"})),
        ("TaskList", json!({"items": [{"id": "x"}], "nextCursor": null})),
        ("PullRequestInput", json!({"number": 0, "headSha": "a"})),
    ];
    for (name, value) in cases {
        assert!(!errors_of(&doc, &schema(name), &value).is_empty(), "{name} accepted {value}");
    }
}

#[test]
fn docs_page_renders_every_operation_and_loads_nothing() {
    let doc = document();
    let page = render(&doc, &RenderOptions { base_path: "/az", ..RenderOptions::default() });
    // The app's one page shell, its links under the base path.
    assert!(page.starts_with("<!doctype html>") && page.contains("<header><a href=\"/az/\">"), "{page}");
    assert!(page.contains("href=\"/az/api/v1/openapi.json\""), "{page}");
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            let id = op["operationId"].as_str().unwrap();
            assert!(page.contains(&format!("id=\"{id}\"")), "{id}");
        }
    }
    let lower = page.to_ascii_lowercase();
    for forbidden in ["<script", "src=", "<link", "@import", "url("] {
        assert!(!lower.contains(forbidden), "{forbidden}");
    }
    assert!(page.contains("&lt;token&gt;"), "descriptions are escaped");
}
