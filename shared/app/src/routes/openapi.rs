//! `GET /api/v1/openapi.json` (OpenAPI 3.1) and `GET /api/v1/docs`.
//!
//! The document is `src/openapi.json`, served without its indentation
//! (the same JSON value, on one line). Unit tests hold it to the router
//! (every route and method, nothing else), to the contracts' vocabularies
//! and to its own schemas (every example validates). The docs page is
//! rendered here from the same document: plain HTML, no script, nothing
//! loaded from anywhere.

use std::fmt::Write as _;

use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

use agent_zero_evidence::escape_html as escape;
use agent_zero_evidence::{Nav, RenderOptions, render_page};

use super::RouteContext;
use crate::Host;

/// The OpenAPI document as kept in the repository, indented for review.
const SOURCE: &[u8] = include_bytes!("../openapi.json");

/// The document served: [`SOURCE`] without the whitespace between its
/// tokens, done at compile time (a third of its bytes, which would
/// otherwise ship in each artefact).
pub(crate) static DOCUMENT: &str = match core::str::from_utf8(&MINIFIED) {
    Ok(document) => document,
    Err(_) => panic!("src/openapi.json is not UTF-8"),
};

/// The length of the served document, measured once.
const MINIFIED_LEN: usize = minify(SOURCE, &mut []);

static MINIFIED: [u8; MINIFIED_LEN] = {
    let mut bytes = [0; MINIFIED_LEN];
    minify(SOURCE, &mut bytes);
    bytes
};

/// Copies the JSON text `source` into `out` without the whitespace outside
/// its strings, as far as `out` reaches, and returns the length of the
/// whole result (so an empty `out` measures it).
const fn minify(source: &[u8], out: &mut [u8]) -> usize {
    let (mut i, mut len) = (0, 0);
    let (mut in_string, mut escaped) = (false, false);
    while i < source.len() {
        let byte = source[i];
        i += 1;
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
        } else if matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
            continue;
        } else if byte == b'"' {
            in_string = true;
        }
        if len < out.len() {
            out[len] = byte;
        }
        len += 1;
    }
    len
}

/// No script, no external anything.
const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub(super) async fn document<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let _ = request;
    let mut response = http::Response::new(with_server(DOCUMENT, context.base_path()).into_bytes());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

pub(super) async fn docs<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let _ = request;
    let document: Value = agent_zero_codecs::json::from_str(DOCUMENT).unwrap_or_default();
    let options = RenderOptions { base_path: context.base_path(), ..RenderOptions::default() };
    let mut response = http::Response::new(render(&document, &options).into_bytes());
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// `document` with `servers` naming the base path when there is one: the
/// default server, `/`, would send clients past it. A base path is
/// unreserved characters only (the settings refuse others), so it needs no
/// escaping as a JSON string.
fn with_server(document: &str, base: &str) -> String {
    match document.strip_prefix('{') {
        Some(rest) if !base.is_empty() => format!("{{\"servers\":[{{\"url\":\"{base}\"}}],{rest}"),
        _ => document.to_owned(),
    }
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn pretty(value: &Value) -> String {
    escape(&serde_json::to_string_pretty(value).unwrap_or_default())
}

/// The document as one HTML page in the app's page shell: every operation
/// with its parameters, body schema and responses; the schemas at the end.
fn render(document: &Value, options: &RenderOptions<'_>) -> String {
    let info = &document["info"];
    let mut html = String::new();
    let _ = write!(
        html,
        "<h1>{} <small>{}</small></h1><p>{}</p><p>Machine-readable: <a href=\"{}/api/v1/openapi.json\">openapi.json</a> (OpenAPI {}).</p>",
        escape(text(info, "title")),
        escape(text(info, "version")),
        escape(text(info, "description")),
        escape(options.base_path),
        escape(text(document, "openapi")),
    );
    html.push_str("<h2>Operations</h2>");
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            let _ = write!(
                html,
                "<div class=\"op\" id=\"{}\"><h3><span class=\"method\">{}</span><code>{}</code></h3><p>{}</p>",
                escape(text(op, "operationId")),
                escape(method),
                escape(path),
                escape(text(op, "summary")),
            );
            if !text(op, "description").is_empty() {
                let _ = write!(html, "<p>{}</p>", escape(text(op, "description")));
            }
            if let Some(security) = op.get("security").and_then(Value::as_array) {
                let open = security.iter().any(|s| s.as_object().is_some_and(serde_json::Map::is_empty));
                html.push_str(if open { "<p>Auth: optional bearer token.</p>" } else { "<p>Auth: bearer token.</p>" });
            }
            if let Some(parameters) = op.get("parameters").and_then(Value::as_array) {
                html.push_str("<table><tr><th>parameter</th><th>in</th><th>schema</th><th>description</th></tr>");
                for parameter in parameters {
                    let parameter = resolve(document, parameter);
                    let _ = write!(
                        html,
                        "<tr><td><code>{}</code>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                        escape(text(parameter, "name")),
                        if parameter["required"] == Value::Bool(true) { " (required)" } else { "" },
                        escape(text(parameter, "in")),
                        escape(&parameter["schema"].to_string()),
                        escape(text(parameter, "description")),
                    );
                }
                html.push_str("</table>");
            }
            if let Some(body) = op.pointer("/requestBody/content") {
                for (media, content) in body.as_object().into_iter().flatten() {
                    let _ = write!(
                        html,
                        "<p>Body <code>{}</code>: <code>{}</code></p>",
                        escape(media),
                        escape(&content["schema"].to_string())
                    );
                    if let Some(example) = content.get("example") {
                        let _ = write!(html, "<pre>{}</pre>", pretty(example));
                    }
                }
            }
            html.push_str("<table><tr><th>status</th><th>description</th></tr>");
            for (status, response) in op["responses"].as_object().into_iter().flatten() {
                let _ = write!(
                    html,
                    "<tr><td>{}</td><td>{}</td></tr>",
                    escape(status),
                    escape(text(response, "description"))
                );
            }
            html.push_str("</table></div>");
        }
    }
    html.push_str("<h2>Schemas</h2>");
    for (name, schema) in document["components"]["schemas"].as_object().into_iter().flatten() {
        let _ = write!(html, "<h3 id=\"schema-{0}\">{0}</h3><pre>{1}</pre>", escape(name), pretty(schema));
    }
    render_page(options, &format!("{} API", text(info, "title")), Nav::Public, &html)
}

/// Follows a local `$ref` (one level), or returns the value itself.
fn resolve<'a>(document: &'a Value, value: &'a Value) -> &'a Value {
    value
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| document.pointer(pointer))
        .unwrap_or(value)
}

#[cfg(test)]
#[path = "openapi_tests.rs"]
mod tests;
