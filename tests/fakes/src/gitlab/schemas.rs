//! Holds the fake's JSON answers to GitLab's published shapes: the
//! definition's declared response where it has a schema
//! ([`ApiDescription::check_response`]), and GitLab's own public API JSON
//! schemas (`spec/fixtures/api/schemas/public_api/v4/`, committed under
//! `tests/fixtures/gitlab-api/public_api_v4/`) for the operations whose
//! entity the definition excerpt does not carry.
//!
//! GitLab's schemas are read as GitLab's specs use them with one
//! reading of their own: `"type": "date"` (not a JSON Schema type; the
//! Ruby validator ignores it) is a string, a name `required` twice
//! (milestone.json's `state`) counts once, and a `null` is accepted
//! wherever they name a type, since they mark few nullable fields that
//! GitLab answers `null` (`merged_by`, `assignee`, ...). Nulls are not
//! checked; every non-null value is.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::routes::api;
use crate::conformance::Violation;

/// GitLab's public API schemas, by their path under `public_api/v4/`.
const SCHEMAS: &[(&str, &str)] = &[
    ("branch.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/branch.json")),
    ("commit/basic.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/commit/basic.json")),
    ("commit/detail.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/commit/detail.json")),
    ("commit_stats.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/commit_stats.json")),
    ("issue.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/issue.json")),
    ("members.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/members.json")),
    ("merge_request.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/merge_request.json")),
    ("milestone.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/milestone.json")),
    ("notes.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/notes.json")),
    ("user/basic.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/user/basic.json")),
    ("user/public.json", include_str!("../../../fixtures/gitlab-api/public_api_v4/user/public.json")),
];

/// Which public schema holds an operation's answer: `(file, shape)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The answer is one object the file describes.
    One,
    /// The answer is an array of what the file describes.
    Many,
    /// The file describes an array; the answer is one of its items.
    Item,
    /// The file describes an array and so is the answer.
    Whole,
}

fn public_schema(operation: &str) -> Option<(&'static str, Shape)> {
    Some(match operation {
        "getApiV4User" => ("user/public.json", Shape::One),
        "getApiV4Users" => ("user/basic.json", Shape::Many),
        "getApiV4ProjectsIdIssuesIssueIid" => ("issue.json", Shape::One),
        "getApiV4ProjectsIdIssuesNoteableIdNotes" => ("notes.json", Shape::Whole),
        "postApiV4ProjectsIdIssuesNoteableIdNotes"
        | "putApiV4ProjectsIdIssuesNoteableIdNotesNoteId"
        | "postApiV4ProjectsIdMergeRequestsNoteableIdDiscussionsDiscussionIdNotes" => ("notes.json", Shape::Item),
        "getApiV4ProjectsIdRepositoryBranchesBranch" => ("branch.json", Shape::One),
        "getApiV4ProjectsIdMembersAllUserId" => ("members.json", Shape::Item),
        "getApiV4ProjectsIdMergeRequests" => ("merge_request.json", Shape::Many),
        "postApiV4ProjectsIdMergeRequests" | "getApiV4ProjectsIdMergeRequestsMergeRequestIid" => {
            ("merge_request.json", Shape::One)
        }
        "postApiV4ProjectsIdRepositoryCommits" | "getApiV4ProjectsIdRepositoryCommitsSha" => {
            ("commit/detail.json", Shape::One)
        }
        _ => return None,
    })
}

/// The operations whose answers neither the definition nor a public
/// schema describes (their tests assert the fields clients read).
pub(crate) const UNCHECKED: &[&str] = &[
    "getApiV4ProjectsId",
    "getApiV4ProjectsIdRepositoryFilesFilePath",
    "getApiV4ProjectsIdMergeRequestsNoteableIdDiscussions",
    "postApiV4ProjectsIdMergeRequestsNoteableIdDiscussions",
];

/// Checks a JSON answer to `method path` (as sent, `/api/v4/...`): the
/// definition's declared response (each element when GitLab answers an
/// array where the definition declares one object), then the public
/// schema for the operation if there is one. A HEAD answer has no body to
/// check.
///
/// # Errors
/// What did not conform.
pub(crate) fn check_answer(method: &str, path: &str, status: u16, body: &[u8]) -> Result<(), String> {
    if !(200..300).contains(&status) || method.eq_ignore_ascii_case("HEAD") {
        return Ok(());
    }
    let (path, _) = super::routes::split_format(path);
    let instance: Value = serde_json::from_slice(body).map_err(|e| format!("{method} {path}: not JSON: {e}"))?;
    // Grape answers a POST 201 where the generated definition declares 200
    // (`success code: 200`): a 201 is held to the declared 200.
    let declared =
        |operation_status: u16, bytes: &[u8]| match api().check_response(method, &path, operation_status, bytes) {
            Err(Violation::UndeclaredStatus { .. })
                if operation_status == 201 && method.eq_ignore_ascii_case("POST") =>
            {
                api().check_response(method, &path, 200, bytes)
            }
            other => other,
        };
    let operation = match declared(status, body) {
        Ok(operation) => operation.as_str().to_owned(),
        // openapi_v2 declares one object where GitLab answers an array
        // (`merge_requests/:iid/diffs`): each element is held to it.
        Err(Violation::InvalidBody { operation, .. }) if instance.is_array() => {
            for element in instance.as_array().into_iter().flatten() {
                declared(status, element.to_string().as_bytes())
                    .map_err(|e| format!("{method} {path} (an element): {e}"))?;
            }
            operation.as_str().to_owned()
        }
        Err(e) => return Err(format!("{method} {path}: {e}")),
    };
    let Some((file, shape)) = public_schema(&operation) else { return Ok(()) };
    let schema = compiled(file);
    let check = |value: &Value, schema: &jsonschema::Validator| -> Result<(), String> {
        match schema.iter_errors(value).next() {
            Some(e) => {
                Err(format!("{method} {path}: GitLab's public_api/v4/{file}: {e} at {:?}", e.instance_path().as_str()))
            }
            None => Ok(()),
        }
    };
    match shape {
        Shape::One | Shape::Whole => check(&instance, &schema.whole),
        Shape::Many => instance.as_array().into_iter().flatten().try_for_each(|v| check(v, &schema.whole)),
        Shape::Item => check(&json!([instance]), &schema.whole),
    }
}

struct Compiled {
    whole: jsonschema::Validator,
}

fn compiled(file: &str) -> &'static Compiled {
    static CACHE: OnceLock<Vec<(&'static str, Compiled)>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| {
        SCHEMAS
            .iter()
            .map(|(name, _)| {
                let schema = loosened(&inline(name));
                let whole = jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft4)
                    .build(&schema)
                    .unwrap_or_else(|e| panic!("GitLab's public_api/v4/{name} does not compile: {e}"));
                (*name, Compiled { whole })
            })
            .collect()
    });
    &cache.iter().find(|(name, _)| *name == file).expect("a committed public schema").1
}

/// The schema `name` with its relative `$ref`s (`user/basic.json`,
/// `../commit_stats.json`) replaced by the files they name; a file not
/// committed (`pipeline/detail.json`) becomes `{}`.
fn inline(name: &str) -> Value {
    let text = SCHEMAS.iter().find(|(n, _)| *n == name).map_or("{}", |(_, t)| *t);
    let schema: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("public_api/v4/{name}: {e}"));
    let dir = name.rsplit_once('/').map_or("", |(d, _)| d);
    resolve(&schema, dir)
}

fn resolve(value: &Value, dir: &str) -> Value {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                let mut parts: Vec<&str> = if dir.is_empty() { Vec::new() } else { dir.split('/').collect() };
                for part in target.split('/') {
                    if part == ".." {
                        parts.pop();
                    } else {
                        parts.push(part);
                    }
                }
                let path = parts.join("/");
                return if SCHEMAS.iter().any(|(n, _)| *n == path) { inline(&path) } else { json!({}) };
            }
            Value::Object(map.iter().map(|(k, v)| (k.clone(), resolve(v, dir))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| resolve(v, dir)).collect()),
        other => other.clone(),
    }
}

/// GitLab's schemas as its specs read them: `date` is a string, and null
/// passes wherever a type is named (see the module docs). Walks schema
/// keywords only (`properties` maps names to schemas; a property named
/// `type` is no keyword).
fn loosened(schema: &Value) -> Value {
    let Value::Object(map) = schema else { return schema.clone() };
    let mut out = Map::new();
    for (key, value) in map {
        let value = match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => {
                Value::Object(properties.iter().map(|(name, s)| (name.clone(), loosened(s))).collect())
            }
            ("items" | "additionalProperties" | "not", Value::Object(_)) => loosened(value),
            ("items" | "allOf" | "anyOf", Value::Array(schemas)) => {
                Value::Array(schemas.iter().map(loosened).collect())
            }
            ("oneOf", Value::Array(schemas)) => {
                // `oneOf: [null, X]` would match a null twice once X allows null.
                Value::Array(schemas.iter().filter(|o| o["type"] != "null").map(loosened).collect())
            }
            ("type", kind) => {
                let mut kinds: Vec<String> = match kind {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(items) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
                    _ => Vec::new(),
                };
                for kind in &mut kinds {
                    *kind = kind.trim().to_owned();
                    if kind == "date" {
                        *kind = "string".to_owned();
                    }
                }
                if !kinds.iter().any(|k| k == "null") {
                    kinds.push("null".to_owned());
                }
                kinds.dedup();
                json!(kinds)
            }
            ("required", Value::Array(required)) => {
                // milestone.json lists `state` twice; draft 4 wants unique names.
                let mut names: Vec<Value> = Vec::new();
                for name in required {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
                Value::Array(names)
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}
