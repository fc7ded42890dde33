//! Evidence routes and pages:
//!
//! - `GET /api/v1/tasks/{id}/evidence`: the bundle as JSON (default),
//!   Markdown or HTML by `Accept`; 406 when none of them is acceptable.
//! - `.../evidence.json`, `.../evidence.md`, `.../evidence.html`: one format each.
//! - `GET /tasks/{id}`: the evidence page, or an "in progress" page while the
//!   task runs; `GET /`: the task list.
//!
//! A task has evidence only once it concluded: the API answers 409 before.
//! Every renderer gets the configured secret values to redact. HTML answers
//! carry a script-less Content-Security-Policy and `nosniff`.

#[path = "evidence_pages.rs"]
mod pages;

use agent_zero_codecs::decimal;
use agent_zero_contracts::{EvidenceBundle, TerminalState};
use agent_zero_engine::{Resident, StoreError, TaskError};
use agent_zero_evidence::{
    RenderOptions, TaskListItem, render_evidence_html, render_json, render_markdown_document, render_task_list_html,
};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use super::RouteContext;
use crate::error::{ApiError, ErrorCode};
use crate::task_index::{self, Filter, IndexError, TaskSummary};
use crate::{Host, auth};

/// The Content-Security-Policy of every HTML answer: inline styles only, no
/// script, no external anything, no framing, no form posts.
pub(crate) const HTML_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";
/// The Content-Security-Policy of JSON and Markdown answers (opened in a
/// browser they load nothing and run nothing).
pub(super) const DATA_CSP: &str = "default-src 'none'; sandbox; frame-ancestors 'none'";
/// Task-list rows on one page (at most `task_index::MAX_PAGE`).
const LIST_PAGE_ROWS: usize = 50;

/// A representation of a task's evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Markdown,
    Html,
}

impl Format {
    /// Server preference on equal quality: JSON is the default.
    const PREFERENCE: [Self; 3] = [Self::Json, Self::Markdown, Self::Html];

    const fn media_type(self) -> (&'static str, &'static str) {
        match self {
            Self::Json => ("application", "json"),
            Self::Markdown => ("text", "markdown"),
            Self::Html => ("text", "html"),
        }
    }

    const fn content_type(self) -> &'static str {
        match self {
            Self::Json => "application/json; charset=utf-8",
            Self::Markdown => "text/markdown; charset=utf-8",
            Self::Html => "text/html; charset=utf-8",
        }
    }
}

/// Picks the format for an `Accept` header: the supported type with the
/// highest quality (the most specific matching range decides a type's
/// quality), ties broken by [`Format::PREFERENCE`]. No header, or an empty
/// one, means JSON; `None` when nothing supported is acceptable.
fn negotiate(accept: Option<&str>) -> Option<Format> {
    let accept = accept.map(str::trim).filter(|a| !a.is_empty());
    let Some(accept) = accept else { return Some(Format::Json) };
    let ranges: Vec<(String, f64)> = accept.split(',').filter_map(media_range).collect();
    let quality = |format: Format| -> f64 {
        let (kind, sub) = format.media_type();
        let specificity = |range: &str| match range.split_once('/') {
            Some((k, s)) if k == kind && s == sub => 3,
            Some((k, "*")) if k == kind => 2,
            Some(("*", "*")) => 1,
            _ => 0,
        };
        ranges
            .iter()
            .map(|(range, q)| (specificity(range), *q))
            .filter(|(s, _)| *s > 0)
            .max_by_key(|(s, _)| *s)
            .map_or(0.0, |(_, q)| q)
    };
    let mut best: Option<(Format, f64)> = None;
    for format in Format::PREFERENCE {
        let q = quality(format);
        if q > 0.0 && best.is_none_or(|(_, b)| q > b) {
            best = Some((format, q));
        }
    }
    best.map(|(format, _)| format)
}

/// One `Accept` element: its lowercase media range and quality.
fn media_range(element: &str) -> Option<(String, f64)> {
    let mut parts = element.split(';');
    let range = parts.next()?.trim().to_ascii_lowercase();
    if !range.contains('/') {
        return None;
    }
    let mut q = 1.0_f64;
    for param in parts {
        if let Some((name, value)) = param.split_once('=')
            && name.trim().eq_ignore_ascii_case("q")
        {
            q = decimal::parse(value.trim()).map_or(0.0, |q| q.clamp(0.0, 1.0));
        }
    }
    Some((range, q))
}

/// An API error with the headers of these routes.
pub(super) fn api_error(error: ApiError) -> http::Response<Vec<u8>> {
    with_security_headers(error.into_response(), DATA_CSP)
}

/// An API error as a page: the same status, message and extra headers.
fn page_error(error: ApiError) -> http::Response<Vec<u8>> {
    let status = error.code.status();
    let mut response =
        html_response(status, pages::error_page(status, &error.message, &RenderOptions::default()), "no-store");
    for (name, value) in error.headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// Reads and folds task `id`, once the caller may read tasks.
async fn load<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> Result<Resident, ApiError> {
    auth::authorize_read(context.settings, request.headers())?;
    match agent_zero_engine::load(context.host.kv(), id).await {
        Ok(Some(resident)) => Ok(resident),
        Ok(None) => Err(ApiError::new(ErrorCode::NotFound, format!("task `{id}` does not exist")).with_field("id")),
        Err(e @ TaskError::InvalidTaskId(_)) => {
            Err(ApiError::new(ErrorCode::InvalidRequest, e.to_string()).with_field("id"))
        }
        Err(e @ TaskError::Store(StoreError::Kv(_))) => {
            Err(ApiError::new(ErrorCode::StorageUnavailable, e.to_string()))
        }
        Err(e) => Err(ApiError::new(ErrorCode::Internal, e.to_string())),
    }
}

/// The concluded bundle of task `id`, or the error saying why there is none.
async fn bundle<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> Result<EvidenceBundle, ApiError> {
    let resident = load(context, request, id).await?;
    match resident.conclusion.concluded {
        Some(concluded) => Ok(concluded.1),
        None => Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "task `{id}` is {} and has no evidence yet: evidence exists once the task is completed, failed or needs a human",
                resident.state
            ),
        )),
    }
}

pub(super) async fn negotiated<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    let accept = request.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let mut response = match negotiate(accept) {
        Some(format) => evidence(context, request, id, format).await,
        None => {
            let message =
                "none of the acceptable types is available: ask for application/json, text/markdown or text/html";
            let response = crate::json_response(
                StatusCode::NOT_ACCEPTABLE,
                &json!({ "error": { "code": "not_acceptable", "message": message, "field": "Accept" } }),
            );
            with_security_headers(response, DATA_CSP)
        }
    };
    response.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
    response
}

pub(super) async fn markdown<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    evidence(context, request, id, Format::Markdown).await
}

pub(super) async fn json<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    evidence(context, request, id, Format::Json).await
}

pub(super) async fn html<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    evidence(context, request, id, Format::Html).await
}

/// The evidence of task `id` in `format`.
async fn evidence<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
    format: Format,
) -> http::Response<Vec<u8>> {
    let bundle = match bundle(context, request, id).await {
        Ok(bundle) => bundle,
        Err(error) => return api_error(error),
    };
    let secrets = auth::Secrets::of(context.settings);
    let page_url = context.link(&format!("/tasks/{id}"));
    // No receipt link here: these are what `agent-zero replay` reproduces.
    let options = RenderOptions { evidence_url: Some(&page_url), ..secrets.options() };
    let body = match format {
        Format::Json => render_json(&bundle, &options),
        Format::Markdown => render_markdown_document(&bundle, &options),
        Format::Html => render_evidence_html(&bundle, &options),
    };
    let csp = if format == Format::Html { HTML_CSP } else { DATA_CSP };
    respond(StatusCode::OK, format.content_type(), body, evidence_cache(&bundle), csp)
}

/// Completed and failed evidence never changes; a needs-human task's does
/// once a person decides.
pub(super) fn evidence_cache(bundle: &EvidenceBundle) -> &'static str {
    match bundle.state {
        TerminalState::Completed | TerminalState::Failed => "private, max-age=300",
        _ => "no-cache",
    }
}

pub(super) async fn task_page<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    let resident = match load(context, request, id).await {
        Ok(resident) => resident,
        Err(error) => return page_error(error),
    };
    let secrets = auth::Secrets::of(context.settings);
    // The page links the signed receipt where the deployment signs them.
    let receipt_url = context.link(&format!("/api/v1/tasks/{id}/receipt"));
    let signs = context.settings.receipt_keys().is_ok_and(|keys| keys.active.is_some());
    let options = RenderOptions { receipt_url: signs.then_some(receipt_url.as_str()), ..secrets.options() };
    match &resident.conclusion.concluded {
        Some(concluded) => {
            let bundle = &concluded.1;
            html_response(StatusCode::OK, render_evidence_html(bundle, &options), evidence_cache(bundle))
        }
        None => html_response(StatusCode::OK, pages::in_progress_page(&resident, &options), "no-store"),
    }
}

pub(super) async fn task_list_page<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    if let Err(error) = auth::authorize_read(context.settings, request.headers()) {
        return page_error(error);
    }
    let cursor = match cursor(request) {
        Ok(cursor) => cursor,
        Err(error) => return page_error(error),
    };
    let page = match task_index::list(context.host.kv(), &Filter::default(), cursor.as_deref(), LIST_PAGE_ROWS).await {
        Ok(page) => page,
        Err(IndexError::InvalidCursor(why)) => {
            return page_error(ApiError::new(ErrorCode::InvalidRequest, format!("cursor: {why}")).with_field("cursor"));
        }
        Err(e) => {
            return page_error(ApiError::new(
                ErrorCode::StorageUnavailable,
                format!("the task list cannot be read: {e}"),
            ));
        }
    };
    let items: Vec<TaskListItem> = page.items.iter().map(TaskSummary::to_list_item).collect();
    let secrets = auth::Secrets::of(context.settings);
    let options = secrets.options();
    html_response(StatusCode::OK, render_task_list_html(&items, page.next_cursor.as_deref(), &options), "no-store")
}

/// The page's `cursor`, decoded as strictly as the API's query strings.
fn cursor(request: &http::Request<Vec<u8>>) -> Result<Option<String>, ApiError> {
    let pairs = super::input::query(request, &["cursor"])?;
    Ok(super::input::param(&pairs, "cursor").filter(|c| !c.is_empty()).map(str::to_owned))
}

/// A body with its type, cache policy and the security headers.
pub(super) fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: String,
    cache: &'static str,
    csp: &'static str,
) -> http::Response<Vec<u8>> {
    let mut response = http::Response::new(body.into_bytes());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    with_security_headers(response, csp)
}

fn html_response(status: StatusCode, body: String, cache: &'static str) -> http::Response<Vec<u8>> {
    respond(status, Format::Html.content_type(), body, cache, HTML_CSP)
}

fn with_security_headers(mut response: http::Response<Vec<u8>>, csp: &'static str) -> http::Response<Vec<u8>> {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(csp));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

#[cfg(test)]
#[path = "evidence_tests.rs"]
mod tests;
