//! [`ApiDescription`]: checks a request against a forge's published API
//! definition (Swagger 2.0, as Gitea and Forgejo publish theirs, or OpenAPI
//! 3.0/3.1, as GitHub does): the path and method are an operation of the
//! definition, its required query parameters are there and no undeclared
//! ones, and a JSON body validates against the operation's body schema,
//! with no property the schema does not declare. [`ApiDescription::check_response`]
//! holds an answer to the operation's declared response the same way (how
//! a fake's own shapes are kept honest).
//!
//! Schemas are validated by the `jsonschema` crate (draft 4 for Swagger 2
//! and OpenAPI 3.0, 2020-12 for OpenAPI 3.1), each operation's once, when a
//! request first needs it, with the parts of the definition it references
//! at their own places in the root resource so `#/definitions/X` and
//! `#/components/schemas/X` resolve; nothing is fetched. Unknown properties are this module's own
//! walk over the schema's `properties` (Gitea's option structs allow extra
//! fields, and Gitea drops them silently: a misspelt field is a real bug).
//!
//! Path templates match segment by segment (`{owner}` is one non-empty
//! segment, `{index}.{diffType}` a segment with literal text between
//! parameters); a `type: string` path parameter named `filepath` or `path`
//! (or as [`ApiDescription::with_rest_parameters`] names) in the last
//! position takes the rest of the path, slashes included, as Gitea's router
//! does (`/raw/*`, `/contents/*`, `/branches/*`); one an operation
//! declares `x-multi-segment: true` (GitHub's description marks `{ref}`,
//! `{path}`, `{branch}`, `{basehead}` so) takes one or more segments
//! wherever it is (`/commits/{ref}/statuses`). An integer path
//! parameter must be digits and an `enum` one one of its values, so
//! `/pulls/7` and `/pulls/7.diff` find different operations. When several
//! templates match, the one with the most literal text wins.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};

use crate::record::percent_decode;

/// The `operationId` of the operation a request matched.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OperationId(pub String);

impl OperationId {
    /// The id as text (`repoGetRawFile`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A request that is an operation of the definition.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Matched {
    /// The operation's `operationId`.
    pub operation: OperationId,
    /// The path template, as the definition spells it.
    pub template: String,
    /// The path parameters, percent-decoded.
    pub params: BTreeMap<String, String>,
}

/// What was wrong with a request, against the definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// No path template matches, or none that matches has this method.
    #[error("no operation for {method} {path}")]
    NoOperation {
        /// The request's method.
        method: String,
        /// The request's path, as sent.
        path: String,
    },
    /// A `required: true` query parameter is absent.
    #[error("{operation}: missing query parameter {name}")]
    MissingQuery {
        /// The matched operation.
        operation: OperationId,
        /// The parameter's name.
        name: String,
    },
    /// A query parameter the operation does not declare (nor the
    /// definition's security schemes, e.g. `access_token`).
    #[error("{operation}: unknown query parameter {name}")]
    UnknownQuery {
        /// The matched operation.
        operation: OperationId,
        /// The parameter's name.
        name: String,
    },
    /// A query or path parameter's value is not of its declared type or
    /// not one of its `enum` values.
    #[error("{operation}: parameter {name}: {value:?} is not {expected}")]
    BadParameter {
        /// The matched operation.
        operation: OperationId,
        /// The parameter's name.
        name: String,
        /// The value sent.
        value: String,
        /// What the definition declares.
        expected: String,
    },
    /// The operation requires a body and none was sent.
    #[error("{operation}: body: required, none sent")]
    MissingBody {
        /// The matched operation.
        operation: OperationId,
    },
    /// The body is not JSON.
    #[error("{operation}: body: not JSON: {reason}")]
    BodyNotJson {
        /// The matched operation.
        operation: OperationId,
        /// The parser's message.
        reason: String,
    },
    /// The body does not validate against the schema.
    #[error("{operation}: body: {message} at {pointer:?}")]
    InvalidBody {
        /// The matched operation.
        operation: OperationId,
        /// Where in the body (JSON pointer; empty for the whole body).
        pointer: String,
        /// The validator's message.
        message: String,
    },
    /// A success status the operation does not declare (responses only).
    #[error("{operation}: status {status} is not a declared response")]
    UndeclaredStatus {
        /// The matched operation.
        operation: OperationId,
        /// The status answered.
        status: u16,
    },
    /// The body has a property its schema does not declare.
    #[error("{operation}: body: unknown property {pointer:?} (the schema declares {declared})")]
    UnknownProperty {
        /// The matched operation.
        operation: OperationId,
        /// The property's JSON pointer.
        pointer: String,
        /// The declared properties at that level, comma-separated.
        declared: String,
    },
}

/// Which kind of definition, which decides where body schemas and base
/// paths are and which JSON Schema draft they speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Swagger2,
    OpenApi30,
    OpenApi31,
}

/// A loaded API definition, ready to check requests.
pub struct ApiDescription {
    doc: Arc<Value>,
    flavour: Flavour,
    base_path: String,
    /// `(template segments, template)`, in the definition's order.
    templates: Vec<(Vec<Segment>, String)>,
    /// Query parameters every operation accepts (apiKey security schemes).
    security_query: Vec<String>,
    /// Path parameters that, in the last position, take the rest of the path.
    rest_parameters: Vec<String>,
    validators: Mutex<BTreeMap<String, Arc<jsonschema::Validator>>>,
}

impl fmt::Debug for ApiDescription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiDescription")
            .field("flavour", &self.flavour)
            .field("base_path", &self.base_path)
            .field("paths", &self.templates.len())
            .finish_non_exhaustive()
    }
}

/// Why a definition could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Not JSON.
    #[error("the API definition is not JSON: {0}")]
    NotJson(String),
    /// JSON, but not the kind of definition asked for.
    #[error("the API definition is not {expected}: {reason}")]
    WrongKind {
        /// `Swagger 2.0`, `OpenAPI 3.x`.
        expected: &'static str,
        /// What was found instead.
        reason: String,
    },
}

/// One segment of a path template: literal text and parameters.
#[derive(Debug, Clone)]
enum Segment {
    /// Literal text and `{param}`s, in order.
    Parts(Vec<Part>),
    /// A parameter taking one or more whole segments, slashes included: a
    /// last `{filepath}`/`{path}`, or one declared `x-multi-segment`.
    Rest(String),
}

#[derive(Debug, Clone)]
enum Part {
    Literal(String),
    Param(String),
}

impl ApiDescription {
    /// Loads a Swagger 2.0 definition (Gitea's and Forgejo's
    /// `swagger.v1.json`); its `basePath` (`/api/v1`) prefixes every path.
    ///
    /// # Errors
    /// When `json` is not JSON or not `"swagger": "2.0"`.
    pub fn swagger2(json: &str) -> Result<Self, LoadError> {
        let doc: Value = serde_json::from_str(json).map_err(|e| LoadError::NotJson(e.to_string()))?;
        if doc["swagger"] != "2.0" {
            return Err(LoadError::WrongKind {
                expected: "Swagger 2.0",
                reason: format!("swagger: {}", doc["swagger"]),
            });
        }
        let base_path = doc["basePath"].as_str().unwrap_or("").trim_end_matches('/').to_owned();
        let security_query = doc["securityDefinitions"]
            .as_object()
            .into_iter()
            .flat_map(|defs| defs.values())
            .filter(|d| d["type"] == "apiKey" && d["in"] == "query")
            .filter_map(|d| d["name"].as_str().map(str::to_owned))
            .collect();
        Ok(Self::new(doc, Flavour::Swagger2, base_path, security_query))
    }

    /// Loads an OpenAPI 3.0 or 3.1 definition (GitHub's `api.github.com`
    /// description); the path of its first `servers` URL prefixes every
    /// path.
    ///
    /// # Errors
    /// When `json` is not JSON or its `openapi` is not `3.0.x`/`3.1.x`.
    pub fn openapi3(json: &str) -> Result<Self, LoadError> {
        let doc: Value = serde_json::from_str(json).map_err(|e| LoadError::NotJson(e.to_string()))?;
        let version = doc["openapi"].as_str().unwrap_or_default();
        let flavour = if version.starts_with("3.0") {
            Flavour::OpenApi30
        } else if version.starts_with("3.1") {
            Flavour::OpenApi31
        } else {
            return Err(LoadError::WrongKind {
                expected: "OpenAPI 3.x",
                reason: format!("openapi: {}", doc["openapi"]),
            });
        };
        let server = doc["servers"][0]["url"].as_str().unwrap_or("");
        let after_scheme = server.split_once("://").map_or(server, |(_, rest)| rest);
        let base_path = match after_scheme.find('/') {
            Some(i) if server.contains("://") => after_scheme[i..].trim_end_matches('/').to_owned(),
            _ if !server.contains("://") => server.trim_end_matches('/').to_owned(),
            _ => String::new(),
        };
        let security_query = doc["components"]["securitySchemes"]
            .as_object()
            .into_iter()
            .flat_map(|defs| defs.values())
            .filter(|d| d["type"] == "apiKey" && d["in"] == "query")
            .filter_map(|d| d["name"].as_str().map(str::to_owned))
            .collect();
        Ok(Self::new(doc, flavour, base_path, security_query))
    }

    fn new(doc: Value, flavour: Flavour, base_path: String, security_query: Vec<String>) -> Self {
        let mut description = Self {
            doc: Arc::new(doc),
            flavour,
            base_path,
            templates: Vec::new(),
            security_query,
            rest_parameters: Vec::new(),
            validators: Mutex::default(),
        };
        description.parse_templates(&["filepath", "path"]);
        description
    }

    /// Names the path parameters that, as the last segment of a template
    /// and `type: string`, take the rest of the path, slashes included
    /// (`filepath` and `path` unless set): for a server whose router
    /// serves those templates as `/*`, as Gitea's does for
    /// `/branches/{branch}` and `/archive/{archive}`.
    #[must_use]
    pub fn with_rest_parameters(mut self, names: &[&str]) -> Self {
        self.parse_templates(names);
        self
    }

    fn parse_templates(&mut self, rest: &[&str]) {
        self.rest_parameters = rest.iter().map(|n| (*n).to_owned()).collect();
        self.templates = self.doc["paths"]
            .as_object()
            .into_iter()
            .flat_map(|paths| paths.iter())
            .map(|(template, item)| {
                (parse_template(&self.doc, template, item, &self.rest_parameters), template.clone())
            })
            .collect();
    }

    /// The base path every operation is under (`/api/v1` for Gitea).
    pub fn base_path(&self) -> &str {
        &self.base_path
    }

    /// Checks one request: `path` as sent (percent-encoded, with the base
    /// path, without the query), `query` decoded, `body` as sent.
    ///
    /// # Errors
    /// The first [`Violation`] found.
    pub fn check(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<OperationId, Violation> {
        self.matched(method, path, query, body).map(|m| m.operation)
    }

    /// Like [`check`](Self::check), also returning the matched template
    /// and the path parameters (decoded): what a fake routes on.
    ///
    /// # Errors
    /// The first [`Violation`] found.
    pub fn matched(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Matched, Violation> {
        let (name, operation, params) = self.find(method, path)?;
        let method = method.to_ascii_lowercase();
        let id = operation_id(operation, &method, name);
        let item = &self.doc["paths"][name];
        let declared = parameters(&self.doc, item, operation);
        self.check_query(&id, &declared, query)?;
        self.check_body(&id, name, &method, &declared, operation, body)?;
        Ok(Matched { operation: id, template: name.to_owned(), params: params.into_iter().collect() })
    }

    /// The template, operation and path parameters `method path` matches.
    fn find(&self, method: &str, path: &str) -> Result<Found<'_>, Violation> {
        let no_operation = || Violation::NoOperation { method: method.to_ascii_uppercase(), path: path.to_owned() };
        let Some(relative) = path.strip_prefix(&self.base_path).filter(|r| r.starts_with('/')) else {
            return Err(no_operation());
        };
        let segments: Vec<&str> = relative[1..].split('/').collect();
        let method = method.to_ascii_lowercase();
        let mut best: Option<Candidate<'_>> = None;
        for (template, name) in &self.templates {
            let item = &self.doc["paths"][name];
            let Some(operation) = item.get(&method) else { continue };
            let Some(params) = match_template(template, &segments) else { continue };
            let declared = parameters(&self.doc, item, operation);
            let typed = params.iter().all(|(name, value)| {
                declared.iter().find(|p| p["in"] == "path" && p["name"] == name.as_str()).is_none_or(|p| {
                    let schema = param_schema(p);
                    value_fits(&schema, value)
                })
            });
            let score = literal_len(template);
            if typed && best.as_ref().is_none_or(|(s, ..)| score > *s) {
                best = Some((score, name.as_str(), operation, params));
            }
        }
        best.map(|(_, name, operation, params)| (name, operation, params)).ok_or_else(no_operation)
    }

    /// Checks an answer to `method path` against the operation's declared
    /// response for `status`: a 2xx status the operation does not declare is
    /// a violation; a JSON body must validate against the declared schema
    /// and carry no property it does not declare. Nulls are left out before
    /// validating: Gitea's swagger (go-swagger) does not mark the pointer
    /// fields Gitea sends as `null` nullable. Error statuses are not checked
    /// (Gitea declares them loosely).
    ///
    /// # Errors
    /// The first [`Violation`] found.
    pub fn check_response(&self, method: &str, path: &str, status: u16, body: &[u8]) -> Result<OperationId, Violation> {
        let (name, operation, _) = self.find(method, path)?;
        let method = method.to_ascii_lowercase();
        let id = operation_id(operation, &method, name);
        if !(200..300).contains(&status) {
            return Ok(id);
        }
        let declared = &operation["responses"][status.to_string()];
        if declared.is_null() {
            return Err(Violation::UndeclaredStatus { operation: id, status });
        }
        let response = resolve(&self.doc, declared);
        let schema = match self.flavour {
            Flavour::Swagger2 => response["schema"].clone(),
            Flavour::OpenApi30 | Flavour::OpenApi31 => response["content"]["application/json"]["schema"].clone(),
        };
        if schema.is_null() {
            return Ok(id);
        }
        let instance: Value = serde_json::from_slice(body)
            .map_err(|e| Violation::BodyNotJson { operation: id.clone(), reason: e.to_string() })?;
        let instance = without_nulls(&instance);
        let validator = self.validator(&format!("{status} {method} {name}"), &schema);
        if let Some(error) = validator.iter_errors(&instance).next() {
            return Err(Violation::InvalidBody {
                operation: id,
                pointer: error.instance_path().as_str().to_owned(),
                message: error.to_string(),
            });
        }
        match unknown_property(&self.doc, &schema, &instance, "", 0) {
            Some((pointer, declared)) => Err(Violation::UnknownProperty { operation: id, pointer, declared }),
            None => Ok(id),
        }
    }

    fn check_query(&self, id: &OperationId, declared: &[Value], query: &[(&str, &str)]) -> Result<(), Violation> {
        for parameter in declared.iter().filter(|p| p["in"] == "query") {
            let name = parameter["name"].as_str().unwrap_or_default();
            let sent: Vec<&str> = query.iter().filter(|(n, _)| *n == name).map(|(_, v)| *v).collect();
            if sent.is_empty() && parameter["required"] == true {
                return Err(Violation::MissingQuery { operation: id.clone(), name: name.to_owned() });
            }
            let schema = param_schema(parameter);
            let item_schema = if schema["type"] == "array" { schema["items"].clone() } else { schema.clone() };
            for value in sent {
                if !value_fits(&item_schema, value) {
                    return Err(Violation::BadParameter {
                        operation: id.clone(),
                        name: name.to_owned(),
                        value: value.to_owned(),
                        expected: expected(&item_schema),
                    });
                }
            }
        }
        for (name, _) in query {
            let known = declared.iter().any(|p| p["in"] == "query" && p["name"] == *name)
                || self.security_query.iter().any(|s| s == name);
            if !known {
                return Err(Violation::UnknownQuery { operation: id.clone(), name: (*name).to_owned() });
            }
        }
        Ok(())
    }

    fn check_body(
        &self,
        id: &OperationId,
        template: &str,
        method: &str,
        declared: &[Value],
        operation: &Value,
        body: Option<&[u8]>,
    ) -> Result<(), Violation> {
        let (schema, required) = match self.flavour {
            Flavour::Swagger2 => match declared.iter().find(|p| p["in"] == "body") {
                Some(p) => (p["schema"].clone(), p["required"] == true),
                None => (Value::Null, false),
            },
            Flavour::OpenApi30 | Flavour::OpenApi31 => {
                let request_body = resolve(&self.doc, &operation["requestBody"]);
                let schema = request_body["content"]["application/json"]["schema"].clone();
                (schema, request_body["required"] == true)
            }
        };
        let body = body.filter(|b| !b.iter().all(u8::is_ascii_whitespace));
        let Some(body) = body else {
            return if required { Err(Violation::MissingBody { operation: id.clone() }) } else { Ok(()) };
        };
        if schema.is_null() {
            return Ok(());
        }
        let instance: Value = serde_json::from_slice(body)
            .map_err(|e| Violation::BodyNotJson { operation: id.clone(), reason: e.to_string() })?;
        let validator = self.validator(&format!("{method} {template}"), &schema);
        if let Some(error) = validator.iter_errors(&instance).next() {
            return Err(Violation::InvalidBody {
                operation: id.clone(),
                pointer: error.instance_path().as_str().to_owned(),
                message: error.to_string(),
            });
        }
        unknown_property(&self.doc, &schema, &instance, "", 0).map_or(Ok(()), |(pointer, declared)| {
            Err(Violation::UnknownProperty { operation: id.clone(), pointer, declared })
        })
    }

    /// The compiled validator of a body schema, built once per operation:
    /// the schema wrapped in a root holding just the parts of the
    /// definition's `definitions`/`components` it references (transitively),
    /// so its `$ref`s resolve locally and compiling costs what the schema
    /// needs, not what the whole definition holds (GitHub's is 13 MB).
    fn validator(&self, key: &str, schema: &Value) -> Arc<jsonschema::Validator> {
        let mut cache = self.validators.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(validator) = cache.get(key) {
            return Arc::clone(validator);
        }
        let mut root = referenced(&self.doc, schema);
        root.insert("allOf".into(), json!([schema]));
        let (root, draft) = match self.flavour {
            Flavour::Swagger2 => (Value::Object(root), jsonschema::Draft::Draft4),
            Flavour::OpenApi30 => (nullable_to_types(&Value::Object(root)), jsonschema::Draft::Draft4),
            Flavour::OpenApi31 => (Value::Object(root), jsonschema::Draft::Draft202012),
        };
        let validator = jsonschema::options()
            .with_draft(draft)
            .build(&root)
            .unwrap_or_else(|e| panic!("the API definition's schema for {key} does not compile: {e}"));
        let validator = Arc::new(validator);
        cache.insert(key.to_owned(), Arc::clone(&validator));
        validator
    }
}

/// A root object holding, at their own JSON pointers, every part of `doc`
/// that `schema` references through local `$ref`s, transitively.
fn referenced(doc: &Value, schema: &Value) -> Map<String, Value> {
    let mut root = Map::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut pending = vec![schema];
    while let Some(value) = pending.pop() {
        let mut refs = Vec::new();
        local_refs(value, &mut refs);
        for reference in refs {
            let pointer = &reference[1..];
            let Some(target) = doc.pointer(pointer) else { continue };
            if seen.insert(reference.to_owned()) {
                insert_at(&mut root, pointer, target.clone());
                pending.push(target);
            }
        }
    }
    root
}

/// The local `$ref`s (`#/...`) anywhere in `value`.
fn local_refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref")
                && reference.starts_with("#/")
            {
                out.push(reference);
            }
            map.values().for_each(|v| local_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| local_refs(v, out)),
        _ => {}
    }
}

/// Puts `value` at the JSON pointer `pointer` under `root`, making the
/// objects on the way.
fn insert_at(root: &mut Map<String, Value>, pointer: &str, value: Value) {
    let tokens: Vec<String> =
        pointer.trim_start_matches('/').split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect();
    let Some((last, path)) = tokens.split_last() else { return };
    let mut map = root;
    for token in path {
        let entry = map.entry(token.clone()).or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            return;
        }
        map = entry.as_object_mut().expect("checked to be an object");
    }
    map.insert(last.clone(), value);
}

/// A matched template's name, operation and path parameters.
type Found<'a> = (&'a str, &'a Value, Vec<(String, String)>);

/// A matching template: its literal length (the score), name, operation
/// and path parameters.
type Candidate<'a> = (usize, &'a str, &'a Value, Vec<(String, String)>);

fn operation_id(operation: &Value, method: &str, template: &str) -> OperationId {
    OperationId(operation["operationId"].as_str().map_or_else(|| format!("{method} {template}"), str::to_owned))
}

/// The value with every `null` object member left out (recursively).
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Parses `/repos/{owner}/{repo}/raw/{filepath}` into segments: a whole
/// segment `{name}` takes several segments when it is last, named in
/// `rest` and `type: string`, or anywhere when an operation declares it
/// `x-multi-segment: true` (GitHub's mark for `{ref}`, `{path}`,
/// `{branch}`, ...: `/commits/{ref}/statuses` takes `heads/a/b`).
fn parse_template(doc: &Value, template: &str, item: &Value, rest: &[String]) -> Vec<Segment> {
    let raw: Vec<&str> = template.trim_start_matches('/').split('/').collect();
    let last = raw.len().saturating_sub(1);
    let declared = |name: &str| -> Vec<Value> {
        item.as_object()
            .into_iter()
            .flat_map(|ops| ops.values())
            .filter_map(|op| op["parameters"].as_array())
            .flatten()
            .chain(item["parameters"].as_array().into_iter().flatten())
            .map(|p| resolve(doc, p))
            .filter(|p| p["in"] == "path" && p["name"] == name)
            .collect()
    };
    raw.iter()
        .enumerate()
        .map(|(i, segment)| {
            let whole = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')).filter(|s| !s.contains('{'));
            if let Some(name) = whole {
                let params = declared(name);
                let multi = params.iter().any(|p| p["x-multi-segment"] == true);
                let last_rest = i == last
                    && rest.iter().any(|r| r == name)
                    && params.iter().all(|p| param_schema(p)["type"] == "string");
                if multi || last_rest {
                    return Segment::Rest(name.to_owned());
                }
            }
            let mut parts = Vec::new();
            let mut rest = *segment;
            while let Some(open) = rest.find('{') {
                if open > 0 {
                    parts.push(Part::Literal(rest[..open].to_owned()));
                }
                let close = rest[open..].find('}').map_or(rest.len(), |c| open + c);
                parts.push(Part::Param(rest[open + 1..close].to_owned()));
                rest = rest.get(close + 1..).unwrap_or("");
            }
            if !rest.is_empty() {
                parts.push(Part::Literal(rest.to_owned()));
            }
            Segment::Parts(parts)
        })
        .collect()
}

/// The path parameters when `segments` (as sent) match `template`; a
/// [`Segment::Rest`] takes one or more segments, the first not empty, as
/// many as leave the rest of the template a match (the most first).
fn match_template(template: &[Segment], segments: &[&str]) -> Option<Vec<(String, String)>> {
    match template.split_first() {
        None => segments.is_empty().then(Vec::new),
        Some((Segment::Rest(name), tail)) => (1..=segments.len()).rev().find_map(|take| {
            if segments[0].is_empty() {
                return None;
            }
            let joined = segments[..take].join("/");
            let mut params = match_template(tail, &segments[take..])?;
            params.insert(0, (name.clone(), percent_decode(&joined, false)));
            Some(params)
        }),
        Some((Segment::Parts(parts), tail)) => {
            let (first, others) = segments.split_first()?;
            let mut params = match_parts(parts, &percent_decode(first, false))?;
            params.extend(match_template(tail, others)?);
            Some(params)
        }
    }
}

/// Matches one segment's parts: each parameter takes one or more
/// characters, trying the shortest first (so `{index}.{diffType}` splits
/// `7.diff` at the first dot that lets the rest match).
fn match_parts(parts: &[Part], text: &str) -> Option<Vec<(String, String)>> {
    match parts.split_first() {
        None => text.is_empty().then(Vec::new),
        Some((Part::Literal(literal), rest)) => match_parts(rest, text.strip_prefix(literal.as_str())?),
        Some((Part::Param(name), rest)) => (1..=text.len()).filter(|&end| text.is_char_boundary(end)).find_map(|end| {
            let mut tail = match_parts(rest, &text[end..])?;
            tail.insert(0, (name.clone(), text[..end].to_owned()));
            Some(tail)
        }),
    }
}

fn literal_len(template: &[Segment]) -> usize {
    template
        .iter()
        .map(|s| match s {
            Segment::Rest(_) => 0,
            Segment::Parts(parts) => {
                1 + parts.iter().map(|p| if let Part::Literal(l) = p { l.len() } else { 0 }).sum::<usize>()
            }
        })
        .sum()
}

/// The operation's parameters, path-level ones included, `$ref`s resolved.
fn parameters(doc: &Value, item: &Value, operation: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for p in operation["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(item["parameters"].as_array().into_iter().flatten())
    {
        let p = resolve(doc, p);
        if !out.iter().any(|q| q["name"] == p["name"] && q["in"] == p["in"]) {
            out.push(p);
        }
    }
    out
}

/// A parameter's type: Swagger 2 declares it inline, OpenAPI 3 in `schema`.
fn param_schema(parameter: &Value) -> Value {
    if parameter["schema"].is_object() { parameter["schema"].clone() } else { parameter.clone() }
}

/// Whether a parameter's text fits its declared `type` and `enum`.
fn value_fits(schema: &Value, value: &str) -> bool {
    let typed = match schema["type"].as_str() {
        Some("integer") => value.parse::<i64>().is_ok(),
        Some("number") => value.parse::<f64>().is_ok(),
        Some("boolean") => matches!(value, "true" | "false"),
        _ => true,
    };
    let listed = schema["enum"].as_array().is_none_or(|values| {
        values.iter().any(|v| match v {
            Value::String(s) => s == value,
            other => serde_json::from_str::<Value>(value).is_ok_and(|v| v == *other),
        })
    });
    typed && listed
}

fn expected(schema: &Value) -> String {
    match schema["enum"].as_array() {
        Some(values) => format!("one of {}", Value::Array(values.clone())),
        None => format!("a {}", schema["type"].as_str().unwrap_or("value")),
    }
}

/// Follows `$ref`s (`#/...` JSON pointers into the definition).
fn resolve<'a>(doc: &'a Value, mut value: &'a Value) -> Value {
    for _ in 0..32 {
        let Some(reference) = value["$ref"].as_str() else { break };
        let Some(pointer) = reference.strip_prefix('#') else { break };
        match doc.pointer(pointer) {
            Some(target) => value = target,
            None => break,
        }
    }
    value.clone()
}

/// The first body property its schema does not declare: `(pointer,
/// declared names)`. Objects with `properties` are closed (unless
/// `additionalProperties` is itself a schema); `allOf` members' properties
/// add up; arrays are walked through `items`.
fn unknown_property(doc: &Value, schema: &Value, value: &Value, at: &str, depth: usize) -> Option<(String, String)> {
    if depth > 32 {
        return None;
    }
    let schema = resolve(doc, schema);
    match value {
        Value::Object(fields) => {
            let mut properties = Map::new();
            let mut open = schema["additionalProperties"].is_object();
            for part in std::iter::once(schema.clone())
                .chain(schema["allOf"].as_array().into_iter().flatten().map(|s| resolve(doc, s)))
            {
                if let Some(props) = part["properties"].as_object() {
                    properties.extend(props.clone());
                }
                open |= part["additionalProperties"].is_object();
            }
            if properties.is_empty() {
                return None;
            }
            for (name, field) in fields {
                let pointer = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
                match properties.get(name) {
                    Some(sub) => {
                        if let Some(found) = unknown_property(doc, sub, field, &pointer, depth + 1) {
                            return Some(found);
                        }
                    }
                    None if open => {}
                    None => return Some((pointer, properties.keys().cloned().collect::<Vec<_>>().join(", "))),
                }
            }
            None
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| unknown_property(doc, &schema["items"], item, &format!("{at}/{i}"), depth + 1)),
        _ => None,
    }
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema: `type: [T, "null"]`.
fn nullable_to_types(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out: Map<String, Value> = map.iter().map(|(k, v)| (k.clone(), nullable_to_types(v))).collect();
            if out.remove("nullable") == Some(Value::Bool(true))
                && let Some(Value::String(kind)) = out.get("type").cloned()
            {
                out.insert("type".into(), json!([kind, "null"]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(nullable_to_types).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINI_OPENAPI: &str = r##"{
      "openapi": "3.0.3",
      "servers": [{"url": "https://api.example.com"}],
      "paths": {
        "/repos/{owner}/{repo}/issues/{n}/comments": {
          "post": {
            "operationId": "issues/create-comment",
            "parameters": [
              {"name": "owner", "in": "path", "required": true, "schema": {"type": "string"}},
              {"name": "repo", "in": "path", "required": true, "schema": {"type": "string"}},
              {"name": "n", "in": "path", "required": true, "schema": {"type": "integer"}}
            ],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Comment"}}}}
          }
        }
      },
      "components": {"schemas": {"Comment": {
        "type": "object", "required": ["body"],
        "properties": {"body": {"type": "string"}, "note": {"type": "string", "nullable": true}}
      }}}
    }"##;

    #[test]
    fn openapi3_bodies_refs_and_nullable() {
        let api = ApiDescription::openapi3(MINI_OPENAPI).unwrap();
        assert_eq!(api.base_path(), "");
        let ok = api.check("POST", "/repos/o/r/issues/3/comments", &[], Some(br#"{"body":"hi","note":null}"#));
        assert_eq!(ok.unwrap().as_str(), "issues/create-comment");
        let missing = api.check("POST", "/repos/o/r/issues/3/comments", &[], Some(br#"{"note":"x"}"#)).unwrap_err();
        assert!(matches!(missing, Violation::InvalidBody { .. }), "{missing}");
        let not_number = api.check("POST", "/repos/o/r/issues/x/comments", &[], Some(br#"{"body":"hi"}"#));
        assert!(matches!(not_number, Err(Violation::NoOperation { .. })));
        let no_body = api.check("POST", "/repos/o/r/issues/3/comments", &[], None);
        assert!(matches!(no_body, Err(Violation::MissingBody { .. })));
    }

    #[test]
    fn multi_segment_parameters_take_slashes_anywhere() {
        let doc = json!({
            "openapi": "3.0.3",
            "paths": {
                "/r/commits/{ref}": {"get": {"operationId": "get-commit", "parameters": [{"$ref": "#/components/parameters/ref"}]}},
                "/r/commits/{ref}/statuses": {"get": {"operationId": "statuses", "parameters": [{"$ref": "#/components/parameters/ref"}]}},
                "/r/tags/{tag}": {"get": {"operationId": "tag", "parameters": [{"name": "tag", "in": "path", "schema": {"type": "string"}}]}}
            },
            "components": {"parameters": {"ref": {"name": "ref", "in": "path", "x-multi-segment": true, "schema": {"type": "string"}}}}
        });
        let api = ApiDescription::openapi3(&doc.to_string()).unwrap();
        let statuses = api.matched("GET", "/r/commits/heads/a/b/statuses", &[], None).unwrap();
        assert_eq!((statuses.operation.as_str(), statuses.params["ref"].as_str()), ("statuses", "heads/a/b"));
        let commit = api.matched("GET", "/r/commits/a/b", &[], None).unwrap();
        assert_eq!((commit.operation.as_str(), commit.params["ref"].as_str()), ("get-commit", "a/b"));
        assert!(matches!(api.check("GET", "/r/tags/a/b", &[], None), Err(Violation::NoOperation { .. })));
        assert!(matches!(api.check("GET", "/r/commits//statuses", &[], None), Err(Violation::NoOperation { .. })));
    }

    #[test]
    fn templates_split_mixed_segments() {
        let parts = match &parse_template(&Value::Null, "/p/{index}.{diffType}", &Value::Null, &[])[1] {
            Segment::Parts(parts) => parts.clone(),
            Segment::Rest(_) => unreachable!(),
        };
        let params = match_parts(&parts, "12.diff").unwrap();
        assert_eq!(params, [("index".into(), "12".into()), ("diffType".into(), "diff".into())]);
        assert_eq!(match_parts(&parts, "12"), None);
    }

    #[test]
    fn loading_names_the_wrong_kind() {
        assert!(matches!(ApiDescription::swagger2("{"), Err(LoadError::NotJson(_))));
        assert!(matches!(ApiDescription::swagger2(MINI_OPENAPI), Err(LoadError::WrongKind { .. })));
        assert!(matches!(ApiDescription::openapi3(r#"{"swagger":"2.0"}"#), Err(LoadError::WrongKind { .. })));
    }
}
