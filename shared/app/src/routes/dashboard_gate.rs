//! The dashboard's gate: who is signed in (a valid, unexpired, unrevoked
//! session of an account the settings still allow), what a lapsed
//! membership session gets (GitHub's sign-in again), the 404 of a task
//! outside the session's repositories, CSRF-checked forms, and the page
//! shell every answer is sent in.

use agent_zero_engine::Resident;
use agent_zero_evidence::RenderOptions;
use http::{HeaderValue, StatusCode, header};

use super::super::RouteContext;
use super::super::tasks::load;
use crate::auth;
use crate::dashboard::pages::{self, DASHBOARD_CSP};
use crate::dashboard::scope::Access;
use crate::dashboard::session::{self, SESSION_COOKIE, Session};
use crate::dashboard::{DashboardSettings, access_of, oauth, revocation, settings};
use crate::error::{ApiError, ErrorCode};
use crate::{Host, Settings};
use agent_zero_evidence::Viewer;

/// Largest accepted form body.
const MAX_FORM_BYTES: usize = 8 * 1024;
// The 401 of a lapsed session's form says "30 minutes".
const _: () = assert!(session::MEMBERSHIP_RECHECK_MS == 30 * 60 * 1000);

/// A signed-in request: the session, what it may do, its CSRF token.
pub(super) struct SignedIn<'c> {
    pub(super) session: Session,
    pub(super) access: Access<'c>,
    pub(super) csrf: String,
}

/// A request that passed the gate: the dashboard's settings, the signed-in
/// caller, and the secret values its pages redact.
pub(super) struct Gate<'c> {
    pub(super) settings: &'c DashboardSettings,
    pub(super) signed: SignedIn<'c>,
    pub(super) secrets: auth::Secrets<'c>,
}

impl Gate<'_> {
    pub(super) fn viewer(&self) -> Viewer<'_> {
        Viewer { name: &self.signed.access.name, csrf: &self.signed.csrf }
    }

    pub(super) fn options(&self) -> RenderOptions<'_> {
        self.secrets.options()
    }

    /// `error` as a page for this caller.
    pub(super) fn error(&self, error: &ApiError) -> http::Response<Vec<u8>> {
        error_page(error, Some(self.viewer()), &self.options())
    }

    /// Whether the session's grants cover the repository of `resident`.
    pub(super) fn covers(&self, resident: &Resident) -> bool {
        resident.origin().is_some_and(|origin| self.signed.access.covers(origin.forge, origin.repository))
    }
}

/// What `load` answers for a task that does not exist, word for word: the
/// answer for a task outside the session's repositories too (it names
/// nothing more).
pub(super) fn no_task(id: &str) -> ApiError {
    ApiError::new(ErrorCode::NotFound, format!("no task `{id}`")).with_field("id")
}

pub(super) fn page(status: StatusCode, body: String) -> http::Response<Vec<u8>> {
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

pub(super) fn error_page(
    error: &ApiError,
    viewer: Option<Viewer<'_>>,
    options: &RenderOptions<'_>,
) -> http::Response<Vec<u8>> {
    let status = error.code.status();
    page(status, pages::error(status, &error.message, viewer, options))
}

/// `303 See Other` to `location`, setting `cookies`.
pub(super) fn redirect(location: &str, cookies: &[String]) -> http::Response<Vec<u8>> {
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
pub(super) fn settings_of(settings: &Settings) -> Result<&DashboardSettings, ApiError> {
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

/// Why a request did not pass the gate.
pub(super) enum Denied {
    /// No session, a forged, expired or revoked one, or one the settings
    /// no longer allow.
    SignedOut,
    /// A membership session past its re-check: GitHub may renew it.
    Lapsed,
    /// The page to answer (settings or store unavailable).
    Page(Box<http::Response<Vec<u8>>>),
}

/// The settings and the signed-in caller: a valid session, unexpired, not
/// revoked, of an account the settings still allow.
pub(super) async fn authenticate<'c, H: Host>(
    context: &RouteContext<'c, H>,
    request: &http::Request<Vec<u8>>,
) -> Result<Gate<'c>, Denied> {
    let secrets = auth::Secrets::of(context.settings);
    let settings =
        settings_of(context.settings).map_err(|e| Denied::Page(Box::new(error_page(&e, None, &secrets.options()))))?;
    let now_ms = context.invocation.now_ms;
    let value = session::cookie(request.headers(), SESSION_COOKIE).ok_or(Denied::SignedOut)?;
    let session = Session::open(&settings.session_key, value).ok_or(Denied::SignedOut)?;
    if session.expires_ms <= now_ms {
        return Err(if session.lapsed(now_ms) { Denied::Lapsed } else { Denied::SignedOut });
    }
    let access = access_of(settings, &session).ok_or(Denied::SignedOut)?;
    match revocation::is_revoked(context.host.kv(), &session).await {
        Ok(false) => {}
        Ok(true) => return Err(Denied::SignedOut),
        Err(e) => {
            let e = ApiError::new(ErrorCode::StorageUnavailable, format!("revoked sessions cannot be read: {e}"));
            return Err(Denied::Page(Box::new(error_page(&e, None, &secrets.options()))));
        }
    }
    let csrf = session.csrf_token(&settings.session_key);
    Ok(Gate { settings, signed: SignedIn { session, access, csrf }, secrets })
}

/// The gate, or the page to answer instead: 503 when misconfigured; for a
/// lapsed membership session, a page read sent through GitHub's sign-in
/// (back to this page) and a form refused with 401; the sign-in page with
/// `signed_out` otherwise.
pub(super) async fn gate<'c, H: Host>(
    context: &RouteContext<'c, H>,
    request: &http::Request<Vec<u8>>,
    signed_out: StatusCode,
) -> Result<Gate<'c>, Box<http::Response<Vec<u8>>>> {
    let denied = match authenticate(context, request).await {
        Ok(gate) => return Ok(gate),
        Err(Denied::Page(response)) => return Err(response),
        Err(denied) => denied,
    };
    let secrets = auth::Secrets::of(context.settings);
    let reading = matches!(*request.method(), http::Method::GET | http::Method::HEAD);
    Err(Box::new(match denied {
        Denied::Lapsed if reading => {
            let here = request.uri().path_and_query().map_or("", |p| p.as_str());
            let here = here.strip_prefix(context.base_path()).unwrap_or_default();
            let next = if session::is_return_path(here) {
                format!("?next={}", agent_zero_contracts::encode_component(here))
            } else {
                String::new()
            };
            redirect(&context.link(&format!("/login{next}")), &[])
        }
        Denied::Lapsed => {
            // MEMBERSHIP_RECHECK_MS, in words.
            let message = "Organisation memberships are checked again every 30 minutes: sign in again to send \
                           this form (GitHub answers at once while you are signed in there).";
            page(StatusCode::UNAUTHORIZED, pages::sign_in(Some(message), &secrets.options()))
        }
        _ => page(signed_out, pages::sign_in(None, &secrets.options())),
    }))
}

/// The gate, then task `id` folded when the session covers its
/// repository, or the page to answer instead.
pub(super) async fn gate_task<'c, H: Host>(
    context: &RouteContext<'c, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> Result<(Gate<'c>, Resident), Box<http::Response<Vec<u8>>>> {
    let gate = gate(context, request, StatusCode::UNAUTHORIZED).await?;
    match load(context, id).await {
        Ok(resident) if gate.covers(&resident) => Ok((gate, resident)),
        Ok(_) => Err(Box::new(gate.error(&no_task(id)))),
        Err(e) => Err(Box::new(gate.error(&e))),
    }
}

/// The settings, or the 503 page naming the variable.
pub(super) fn settings_or_page<'c, H: Host>(
    context: &RouteContext<'c, H>,
) -> Result<&'c DashboardSettings, Box<http::Response<Vec<u8>>>> {
    settings_of(context.settings)
        .map_err(|e| Box::new(error_page(&e, None, &auth::Secrets::of(context.settings).options())))
}

/// The decoded fields of a form post, once its CSRF token matches.
pub(super) fn form(
    settings: &DashboardSettings,
    signed: &SignedIn<'_>,
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
