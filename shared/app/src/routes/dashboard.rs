//! The dashboard a team acts from, server-rendered and script-free:
//!
//! - `GET /login` sends the browser to GitHub's authorize page with a fresh
//!   `state` bound to a short signed cookie; `GET /login/callback` checks
//!   that `state`, exchanges the `code`, reads `/user` (and `/user/orgs`),
//!   and signs a session cookie when the settings allow the account.
//! - `GET /dashboard`: tasks, filtered by repository and state;
//!   `GET /dashboard/tasks/{id}`: a task's progress and, when it waits for a
//!   person, approve and reject buttons; `POST /dashboard/tasks/{id}/decision`
//!   takes the same path as `POST /api/v1/approvals/{id}` (rules and audit);
//!   `GET /dashboard/audit`: the audit log; `POST /logout`.
//!
//! Every form carries the session's CSRF token, checked in constant time.
//! Dashboard settings that do not parse answer 503 naming the variable, on
//! these routes only.

use agent_zero_contracts::TaskState;
use agent_zero_engine::{ApprovalDecision, Resident};
use agent_zero_evidence::RenderOptions;
use http::{HeaderValue, StatusCode, header};

use super::RouteContext;
use super::approvals::{self, Decision};
use super::tasks::load;
use crate::audit_log::{self, AuditEntry};
use crate::auth::{self, Principal};
use crate::dashboard::pages::{self, DASHBOARD_CSP, Offer, Viewer};
use crate::dashboard::session::{self, SESSION_COOKIE, STATE_COOKIE, Session};
use crate::dashboard::{DashboardSettings, oauth, principal_of, settings};
use crate::error::{ApiError, ErrorCode};
use crate::metering;
use crate::task_index::{self, Filter};
use crate::{Host, Settings};

/// Task rows on one page.
const ROWS: usize = 50;
/// Audit rows on one page.
const AUDIT_ROWS: usize = 50;
/// Largest accepted form body.
const MAX_FORM_BYTES: usize = 8 * 1024;
/// Fewest characters of the host's request id used as an OAuth `state`.
const MIN_STATE_CHARS: usize = 16;

/// A signed-in request: the session, the principal it acts as, its token.
struct SignedIn {
    session: Session,
    principal: Principal,
    csrf: String,
}

/// A request that passed the gate: the dashboard's settings, the signed-in
/// caller, and the secret values its pages redact.
struct Gate<'c> {
    settings: &'c DashboardSettings,
    signed: SignedIn,
    secrets: auth::Secrets<'c>,
}

impl Gate<'_> {
    fn viewer(&self) -> Viewer<'_> {
        Viewer { name: &self.signed.principal.name, csrf: &self.signed.csrf }
    }

    fn options(&self) -> RenderOptions<'_> {
        self.secrets.options()
    }

    /// `error` as a page for this caller.
    fn error(&self, error: &ApiError) -> http::Response<Vec<u8>> {
        error_page(error, Some(self.viewer()), &self.options())
    }
}

fn page(status: StatusCode, body: String) -> http::Response<Vec<u8>> {
    let mut response = http::Response::new(body.into_bytes());
    *response.status_mut() = status;
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(DASHBOARD_CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

fn error_page(error: &ApiError, viewer: Option<Viewer<'_>>, options: &RenderOptions<'_>) -> http::Response<Vec<u8>> {
    let status = error.code.status();
    page(status, pages::error(status, &error.message, viewer, options))
}

/// `303 See Other` to `location`, setting `cookies`.
fn redirect(location: &str, cookies: &[String]) -> http::Response<Vec<u8>> {
    let mut response = page(StatusCode::SEE_OTHER, String::new());
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    for cookie in cookies {
        if let Ok(value) = HeaderValue::from_str(cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

/// The settings, or 503 naming the variable (the dashboard off or broken).
fn settings_of(settings: &Settings) -> Result<&DashboardSettings, ApiError> {
    settings.dashboard()?.ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotConfigured,
            format!(
                "the dashboard is off: set {} and {} (a GitHub OAuth app), {}, and {} or {}",
                settings::CLIENT_ID,
                settings::CLIENT_SECRET,
                settings::SESSION_KEY,
                settings::USERS,
                settings::ORGS
            ),
        )
        .with_field(settings::CLIENT_ID)
    })
}

/// The signed-in caller, if the request carries a valid, unexpired session
/// of an account the settings still allow.
fn signed_in(settings: &DashboardSettings, request: &http::Request<Vec<u8>>, now_ms: u64) -> Option<SignedIn> {
    let value = session::cookie(request.headers(), SESSION_COOKIE)?;
    let session = Session::unseal(&settings.session_key, value, now_ms)?;
    let principal = principal_of(settings, &session)?;
    let csrf = session.csrf_token(&settings.session_key);
    Some(SignedIn { session, principal, csrf })
}

/// The settings and the signed-in caller, or the page to answer instead:
/// 503 when misconfigured, the sign-in page with `signed_out` otherwise.
fn gate<'c, H: Host>(
    context: &RouteContext<'c, H>,
    request: &http::Request<Vec<u8>>,
    signed_out: StatusCode,
) -> Result<Gate<'c>, Box<http::Response<Vec<u8>>>> {
    let secrets = auth::Secrets::of(context.settings);
    let settings = settings_of(context.settings).map_err(|e| Box::new(error_page(&e, None, &secrets.options())))?;
    match signed_in(settings, request, context.invocation.now_ms) {
        Some(signed) => Ok(Gate { settings, signed, secrets }),
        None => Err(Box::new(page(signed_out, pages::sign_in(None, &secrets.options())))),
    }
}

/// The gate, then task `id` folded, or the page to answer instead.
async fn gate_task<'c, H: Host>(
    context: &RouteContext<'c, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> Result<(Gate<'c>, Resident), Box<http::Response<Vec<u8>>>> {
    let gate = gate(context, request, StatusCode::UNAUTHORIZED)?;
    match load(context, id).await {
        Ok(resident) => Ok((gate, resident)),
        Err(e) => Err(Box::new(gate.error(&e))),
    }
}

/// The settings, or the 503 page naming the variable.
fn settings_or_page<'c, H: Host>(
    context: &RouteContext<'c, H>,
) -> Result<&'c DashboardSettings, Box<http::Response<Vec<u8>>>> {
    settings_of(context.settings)
        .map_err(|e| Box::new(error_page(&e, None, &auth::Secrets::of(context.settings).options())))
}

pub(super) async fn login<H: Host>(
    context: &RouteContext<'_, H>,
    _request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let settings = match settings_or_page(context) {
        Ok(settings) => settings,
        Err(response) => return *response,
    };
    let state = &context.invocation.request_id;
    if state.len() < MIN_STATE_CHARS {
        let e = ApiError::new(ErrorCode::Internal, "the host gave no random request id to bind the sign-in to");
        return error_page(&e, None, &auth::Secrets::of(context.settings).options());
    }
    let now_ms = context.invocation.now_ms;
    let cookie = session::seal_state(&settings.session_key, state, now_ms + session::STATE_MS);
    let set = session::set_cookie(STATE_COOKIE, &cookie, &context.link("/login"), session::STATE_MS / 1000);
    redirect(&oauth::authorize_url(settings, state), &[set])
}

pub(super) async fn callback<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let settings = match settings_or_page(context) {
        Ok(settings) => settings,
        Err(response) => return *response,
    };
    let secrets = auth::Secrets::of(context.settings);
    let clear_state = session::set_cookie(STATE_COOKIE, "", &context.link("/login"), 0);
    let refuse = |status: StatusCode, message: &str| {
        let mut response = page(status, pages::sign_in(Some(message), &secrets.options()));
        if let Ok(value) = HeaderValue::from_str(&clear_state) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
        response
    };
    let pairs = oauth::form_pairs(request.uri().query().unwrap_or_default()).unwrap_or_default();
    let param = |name: &str| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let now_ms = context.invocation.now_ms;
    let bound = session::cookie(request.headers(), STATE_COOKIE)
        .zip(param("state"))
        .is_some_and(|(cookie, state)| session::state_matches(&settings.session_key, cookie, state, now_ms));
    if !bound {
        return refuse(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started from this browser, or took longer than 10 minutes (`state`). Sign in again.",
        );
    }
    if let Some(error) = param("error") {
        return refuse(StatusCode::FORBIDDEN, &format!("GitHub did not authorise the sign-in: {error}."));
    }
    let Some(code) = param("code").filter(|c| !c.is_empty()) else {
        return refuse(StatusCode::BAD_REQUEST, "GitHub sent no `code`. Sign in again.");
    };
    let http = context.host.http();
    let identity = match oauth::exchange(http, settings, code).await {
        Ok(token) => oauth::identify(http, settings, &token).await,
        Err(e) => Err(e),
    };
    let (login, user_id, orgs) = match identity {
        Ok(identity) => identity,
        Err(e) => return refuse(e.code.status(), &e.message),
    };
    let session = Session {
        login,
        user_id,
        orgs,
        id: context.invocation.request_id.clone(),
        expires_ms: now_ms + session::SESSION_MS,
    };
    // A refused sign-in writes nothing: anyone with a GitHub account can
    // try, and must not be able to spend the store.
    if principal_of(settings, &session).is_none() {
        let message = format!(
            "`{}` may not use this dashboard: neither {} nor a member organisation in {} lists it.",
            session.login,
            settings::USERS,
            settings::ORGS
        );
        return refuse(StatusCode::FORBIDDEN, &message);
    }
    let audit = AuditEntry {
        at: String::new(),
        principal: format!("github:{}", session.login.to_ascii_lowercase()),
        action: "dashboard.sign-in".into(),
        target: None,
        detail: None,
        status: 303,
        outcome: "ok".into(),
        field: None,
        request_id: context.invocation.request_id.clone(),
    };
    let _ = audit_log::append(context.host.kv(), &audit, now_ms, context.settings).await;
    let sealed = session.seal(&settings.session_key);
    let set = session::set_cookie(SESSION_COOKIE, &sealed, &context.link("/"), session::SESSION_MS / 1000);
    redirect(&context.link("/dashboard"), &[set, clear_state])
}

/// The decoded fields of a form post, once its CSRF token matches.
fn form(
    settings: &DashboardSettings,
    signed: &SignedIn,
    request: &http::Request<Vec<u8>>,
) -> Result<Vec<(String, String)>, ApiError> {
    let is_form = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().to_ascii_lowercase().starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "expected a form (application/x-www-form-urlencoded)",
        )
        .with_field("Content-Type"));
    }
    if request.body().len() > MAX_FORM_BYTES {
        return Err(ApiError::new(ErrorCode::PayloadTooLarge, format!("a form is at most {MAX_FORM_BYTES} bytes")));
    }
    let text = std::str::from_utf8(request.body()).ok();
    let pairs = text
        .and_then(oauth::form_pairs)
        .ok_or_else(|| ApiError::new(ErrorCode::InvalidRequest, "the form is not valid percent-encoded UTF-8"))?;
    let csrf = pairs.iter().find(|(n, _)| n == "csrf").map_or("", |(_, v)| v.as_str());
    if !signed.session.csrf_matches(&settings.session_key, csrf) {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "this form was not issued to your session (`csrf`): reload the page and try again",
        )
        .with_field("csrf"));
    }
    Ok(pairs)
}

pub(super) async fn logout<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let gate = match gate(context, request, StatusCode::UNAUTHORIZED) {
        Ok(gate) => gate,
        Err(response) => return *response,
    };
    if let Err(e) = form(gate.settings, &gate.signed, request) {
        return gate.error(&e);
    }
    redirect(&context.link("/dashboard"), &[session::set_cookie(SESSION_COOKIE, "", &context.link("/"), 0)])
}

pub(super) async fn tasks<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let gate = match gate(context, request, StatusCode::OK) {
        Ok(gate) => gate,
        Err(response) => return *response,
    };
    let pairs = match oauth::form_pairs(request.uri().query().unwrap_or_default()) {
        Some(pairs) => pairs,
        None => return gate.error(&ApiError::new(ErrorCode::InvalidRequest, "the query is not valid UTF-8")),
    };
    let param = |name: &str| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.trim()).filter(|v| !v.is_empty());
    let repository = param("repository");
    let state = match param("state").map(|s| TaskState::parse(s).ok_or(s)) {
        None => None,
        Some(Ok(state)) => Some(state),
        Some(Err(bad)) => {
            let e = ApiError::new(ErrorCode::InvalidRequest, format!("state: `{bad}` is not a task state"))
                .with_field("state");
            return gate.error(&e);
        }
    };
    let filter = Filter { repository: repository.map(str::to_owned), state };
    let listed = task_index::list(context.host.kv(), &filter, param("cursor"), ROWS).await;
    let listing = match listed {
        Ok(listing) => listing,
        Err(task_index::IndexError::InvalidCursor(why)) => {
            let e = ApiError::new(ErrorCode::InvalidRequest, format!("cursor: {why}")).with_field("cursor");
            return gate.error(&e);
        }
        Err(e) => {
            let e = ApiError::new(ErrorCode::StorageUnavailable, format!("the task list cannot be read: {e}"));
            return gate.error(&e);
        }
    };
    // Totals per repository over the tasks listed: one read per task.
    let mut totals: Vec<pages::RepositoryTotal> = Vec::new();
    for item in &listing.items {
        let cost = metering::read(context.host.kv(), &item.id).await.ok().flatten().unwrap_or_default();
        let key = item.repository.to_ascii_lowercase();
        match totals.iter_mut().find(|t| t.repository.to_ascii_lowercase() == key) {
            Some(total) => {
                total.tasks += 1;
                total.cost = total.cost.add(&cost);
            }
            None => totals.push(pages::RepositoryTotal { repository: item.repository.clone(), tasks: 1, cost }),
        }
    }
    let next = listing.next_cursor.as_deref();
    let html = pages::task_list(gate.viewer(), &listing.items, repository, state, next, &totals, &gate.options());
    page(StatusCode::OK, html)
}

pub(super) async fn task<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    let (gate, resident) = match gate_task(context, request, id).await {
        Ok(gated) => gated,
        Err(response) => return *response,
    };
    let notice = match request.uri().query() {
        Some("decided=approve") => Some("Approved: the task continues."),
        Some("decided=reject") => Some("Rejected: the task fails without writing."),
        _ => None,
    };
    let may_approve = resident.stimulus.as_deref().is_some_and(|s| gate.signed.principal.may_use(s.mode));
    let offer = Offer { viewer: gate.viewer(), may_approve, notice };
    let cost = metering::read(context.host.kv(), id).await.ok().flatten();
    page(StatusCode::OK, pages::task(&resident, cost.as_ref(), offer, context.invocation.now_ms, &gate.options()))
}

pub(super) async fn decide<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    let gate = match gate(context, request, StatusCode::UNAUTHORIZED) {
        Ok(gate) => gate,
        Err(response) => return *response,
    };
    // A forged form is refused before any rule runs, and audited as such.
    let body = form(gate.settings, &gate.signed, request).and_then(|pairs| {
        let field = |name: &str| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let decision = match field("decision").as_deref() {
            Some("approve") => ApprovalDecision::Approve,
            Some("reject") => ApprovalDecision::Reject,
            _ => return Err(super::input::invalid("decision", "`approve` or `reject`")),
        };
        Ok(Decision {
            decision,
            comment: field("comment").filter(|c| !c.trim().is_empty()),
            shown: field("shown").filter(|s| !s.trim().is_empty()),
        })
    });
    match approvals::record(context, &gate.signed.principal, id, body).await {
        Ok(answer) => {
            let verb = answer["decision"].as_str().unwrap_or_default();
            redirect(&context.link(&format!("/dashboard/tasks/{}?decided={verb}", oauth::form_encode(id))), &[])
        }
        Err(e) => gate.error(&e),
    }
}

/// A concluded task's evidence page, for signed-in principals (whatever
/// `AGENT_ZERO_CONTROL_PLANE_READS` says about the public pages).
pub(super) async fn evidence<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    let (gate, resident) = match gate_task(context, request, id).await {
        Ok(gated) => gated,
        Err(response) => return *response,
    };
    let Some(concluded) = resident.conclusion.concluded.as_deref() else {
        let e = ApiError::new(
            ErrorCode::Conflict,
            format!("task `{id}` is {} and has no evidence yet: it appears once the task concludes", resident.state),
        );
        return gate.error(&e);
    };
    page(StatusCode::OK, agent_zero_evidence::render_evidence_html(&concluded.1, &gate.options()))
}

pub(super) async fn audit<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let gate = match gate(context, request, StatusCode::UNAUTHORIZED) {
        Ok(gate) => gate,
        Err(response) => return *response,
    };
    let pairs = oauth::form_pairs(request.uri().query().unwrap_or_default()).unwrap_or_default();
    let cursor = pairs.iter().find(|(n, _)| n == "cursor").map(|(_, v)| v.as_str());
    match audit_log::list(context.host.kv(), cursor, AUDIT_ROWS).await {
        Ok((entries, next)) => {
            page(StatusCode::OK, pages::audit(gate.viewer(), &entries, next.as_deref(), &gate.options()))
        }
        Err(audit_log::ListError::InvalidCursor) => {
            let e = ApiError::new(ErrorCode::InvalidRequest, "cursor: not a cursor this page handed out")
                .with_field("cursor");
            gate.error(&e)
        }
        Err(e) => gate.error(&ApiError::new(ErrorCode::StorageUnavailable, e.to_string())),
    }
}

#[cfg(test)]
#[path = "dashboard_tests.rs"]
mod tests;
