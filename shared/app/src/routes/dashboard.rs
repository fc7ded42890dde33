//! The dashboard a team acts from, server-rendered and script-free:
//!
//! - `GET /login` sends the browser to GitHub's authorize page with a fresh
//!   `state` bound to a short signed cookie (with the dashboard page to
//!   return to, `next`); `GET /login/callback` checks that `state`,
//!   exchanges the `code`, reads `/user` (and `/user/orgs`), and signs a
//!   session cookie when the settings allow the account.
//! - `GET /dashboard`: tasks, filtered by repository and state;
//!   `GET /dashboard/tasks/{id}`: a task's progress and, when it waits for a
//!   person, approve and reject buttons; `POST /dashboard/tasks/{id}/decision`
//!   takes the same path as `POST /api/v1/approvals/{id}` (rules and audit);
//!   `GET /dashboard/audit`: the audit log; `POST /logout` revokes the
//!   session (`crate::dashboard::revocation`).
//!
//! Every page is limited to the repositories the session's grants cover
//! (`crate::dashboard::scope`): a task of another repository is not listed,
//! and its pages and decision answer the same 404 as a task that does not
//! exist, so nobody learns which tasks exist where they may not look. A
//! session resting on organisation membership lapses after its re-check
//! interval; a page then sends the browser through GitHub's sign-in again.
//! Every form carries the session's CSRF token, checked in constant time.
//! Dashboard settings that do not parse answer 503 naming the variable, on
//! these routes only.

#[path = "dashboard_gate.rs"]
mod gate;
#[path = "dashboard_sessions.rs"]
pub(super) mod sessions;

use agent_zero_contracts::{ForgeKind, TaskState};
use agent_zero_engine::ApprovalDecision;
use agent_zero_ports::{KeyValue, KvError};
use http::{HeaderValue, StatusCode, header};

use self::gate::{Denied, authenticate, error_page, form, gate, gate_task, page, redirect, settings_or_page};
use super::RouteContext;
use super::approvals::{self, Decision};
use crate::Host;
use crate::audit_log::{self, AuditAction, AuditEntry};
use crate::auth;
use crate::dashboard::pages::{self, Offer};
use crate::dashboard::scope::Access;
use crate::dashboard::session::{self, SESSION_COOKIE, STATE_COOKIE, Session};
use crate::dashboard::{access_of, oauth, revocation, settings};
use crate::error::{ApiError, ErrorCode};
use crate::metering;
use crate::task_counters::{self, Counters};
use crate::task_index::{self, Filter, Page};

/// Task rows on one page.
const ROWS: usize = 50;
/// Most index pages one task-list page reads for a session that covers
/// only some repositories (the rest are skipped, so a page may be short).
const MAX_SCANS: usize = 4;
/// Audit rows on one page.
const AUDIT_ROWS: usize = 50;
/// Fewest characters of the host's request id used as an OAuth `state`.
const MIN_STATE_CHARS: usize = 16;

pub(super) async fn login<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
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
    // The dashboard page to land on afterwards (a lapsed session's).
    let pairs = oauth::form_pairs(request.uri().query().unwrap_or_default()).unwrap_or_default();
    let next = pairs.iter().find(|(n, v)| n == "next" && session::is_return_path(v)).map_or("", |(_, v)| v.as_str());
    let now_ms = context.invocation.now_ms;
    let cookie = session::seal_state(&settings.session_key, state, now_ms + session::STATE_MS, next);
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
        .and_then(|(cookie, state)| session::state_matches(&settings.session_key, cookie, state, now_ms));
    let Some(next) = bound else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started from this browser, or took longer than 10 minutes (`state`). Sign in again.",
        );
    };
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
    // A session resting on an organisation lapses at its re-check.
    let session = Session::issue(login, user_id, orgs, context.invocation.request_id.clone(), now_ms);
    // A refused sign-in writes nothing: anyone with a GitHub account can
    // try, and must not be able to spend the store.
    if access_of(settings, &session).is_none() {
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
        action: AuditAction::DashboardSignIn,
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
    let next = if session::is_return_path(&next) { next.as_str() } else { "/dashboard" };
    redirect(&context.link(next), &[set, clear_state])
}

/// Signs out: revokes the session (a copy of its cookie is refused from
/// now on) and clears the cookie. A lapsed or invalid session is cleared
/// without a write, so that the next page does not renew it.
pub(super) async fn logout<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let clear = [session::set_cookie(SESSION_COOKIE, "", &context.link("/"), 0)];
    let gate = match authenticate(context, request).await {
        Ok(gate) => gate,
        Err(Denied::Page(response)) => return *response,
        Err(_) => return redirect(&context.link("/dashboard"), &clear),
    };
    if let Err(e) = form(gate.settings, &gate.signed, request) {
        return gate.error(&e);
    }
    let now_ms = context.invocation.now_ms;
    if let Err(e) = revocation::revoke_session(context.host.kv(), &gate.signed.session, now_ms).await {
        let e = ApiError::new(ErrorCode::StorageUnavailable, format!("the session cannot be revoked: {e}"));
        let mut response = gate.error(&e);
        if let Ok(value) = HeaderValue::from_str(&clear[0]) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
        return response;
    }
    redirect(&context.link("/dashboard"), &clear)
}

pub(super) async fn tasks<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let gate = match gate(context, request, StatusCode::OK).await {
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
    let access = &gate.signed.access;
    // A session limited to one repository reads that repository's index.
    let only = if access.covers_all() { None } else { access.only_repository() };
    let filter = Filter { repository: repository.or(only).map(str::to_owned), state };
    let listed = match filter.repository.as_deref() {
        // Listed as a repository without tasks: nothing says whether it has any.
        Some(r) if !access.covers_path(r) => Ok(Page::default()),
        _ => list_covered(context.host.kv(), access, &filter, param("cursor")).await,
    };
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
    // The counters: of the repository filtered by (nothing in one the
    // session does not cover, as for one without tasks), else of every
    // repository for a session covering all, else of its one repository.
    // A session over several repositories sees none until it filters.
    let (kv, now_ms) = (context.host.kv(), context.invocation.now_ms);
    let counters = match filter.repository.as_deref() {
        Some(r) if !access.covers_path(r) => Ok(Some(Counters::default())),
        Some(r) => task_counters::count(kv, Some(r), now_ms).await.map(Some),
        None if access.covers_all() => task_counters::count(kv, None, now_ms).await.map(Some),
        None => Ok(None),
    };
    let counters = match counters {
        Ok(counters) => counters,
        Err(e) => {
            let e = ApiError::new(ErrorCode::StorageUnavailable, format!("the task counters cannot be read: {e}"));
            return gate.error(&e);
        }
    };
    let counted = pages::Counted { repository: filter.repository.as_deref(), counters };
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
    let html =
        pages::task_list(gate.viewer(), &listing.items, repository, state, next, &totals, counted, &gate.options());
    page(StatusCode::OK, html)
}

/// One page of the tasks `access` covers among those `filter` matches:
/// up to [`MAX_SCANS`] index pages until [`ROWS`] are found, the others
/// skipped (a page may be short; its next cursor continues after what was
/// read). A session that covers all, or a filter by one covered repository,
/// skips nothing: its first index page is usually full.
async fn list_covered<K: KeyValue>(
    kv: &K,
    access: &Access<'_>,
    filter: &Filter,
    cursor: Option<&str>,
) -> Result<Page, task_index::IndexError> {
    let mut page = Page { items: Vec::new(), next_cursor: cursor.map(str::to_owned) };
    for _ in 0..MAX_SCANS {
        let read = task_index::list(kv, filter, page.next_cursor.as_deref(), ROWS - page.items.len()).await?;
        page.items.extend(read.items.into_iter().filter(|t| access.covers(t.forge, &t.repository)));
        page.next_cursor = read.next_cursor;
        if page.next_cursor.is_none() || page.items.len() >= ROWS {
            break;
        }
    }
    Ok(page)
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
    let may_approve = resident
        .stimulus
        .as_deref()
        .is_some_and(|s| gate.signed.access.principal_for(s.input.forge, &s.repository).may_use(s.mode));
    let offer = Offer { viewer: gate.viewer(), may_approve, notice };
    let cost = metering::read(context.host.kv(), id).await.ok().flatten();
    page(StatusCode::OK, pages::task(&resident, cost.as_ref(), offer, context.invocation.now_ms, &gate.options()))
}

pub(super) async fn decide<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    let gate = match gate(context, request, StatusCode::UNAUTHORIZED).await {
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
    // The grants that cover the task's repository (its index summary
    // names it) decide; a task outside them is refused as one that does
    // not exist, before any rule runs. Without a summary (an index write
    // that failed) only a session covering every repository goes on, with
    // the modes of its `*` grants alone.
    let access = &gate.signed.access;
    let mut principal = access.principal_for(ForgeKind::GitHub, "");
    let body = match body {
        Ok(decision) => match task_index::read_summary(context.host.kv(), id).await {
            Ok(Some(summary)) if access.covers(summary.forge, &summary.repository) => {
                principal = access.principal_for(summary.forge, &summary.repository);
                Ok(decision)
            }
            Ok(None) if access.covers_all() => Ok(decision),
            Ok(_) | Err(KvError::InvalidKey { .. }) => Err(gate::no_task(id)),
            Err(e) => Err(ApiError::new(ErrorCode::StorageUnavailable, format!("task `{id}` cannot be read: {e}"))),
        },
        Err(e) => Err(e),
    };
    match approvals::record(context, &principal, id, body).await {
        Ok(answer) => {
            let verb = answer["decision"].as_str().unwrap_or_default();
            redirect(
                &context
                    .link(&format!("/dashboard/tasks/{}?decided={verb}", agent_zero_contracts::encode_component(id))),
                &[],
            )
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
    let gate = match gate(context, request, StatusCode::UNAUTHORIZED).await {
        Ok(gate) => gate,
        Err(response) => return *response,
    };
    let pairs = oauth::form_pairs(request.uri().query().unwrap_or_default()).unwrap_or_default();
    let cursor = pairs.iter().find(|(n, _)| n == "cursor").map(|(_, v)| v.as_str());
    match audit_log::list(context.host.kv(), cursor, AUDIT_ROWS).await {
        Ok((mut entries, next)) => {
            if !gate.signed.access.covers_all() {
                entries = covered_entries(context.host.kv(), &gate.signed.access, entries).await;
            }
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

/// The entries about repositories `access` covers: a task's (one index
/// read each) or a repository named as the target. Entries about no
/// repository (sign-ins, sweeps, revocations) are for sessions that cover
/// every repository.
async fn covered_entries<K: KeyValue>(kv: &K, access: &Access<'_>, entries: Vec<AuditEntry>) -> Vec<AuditEntry> {
    let mut covered = Vec::with_capacity(entries.len());
    for entry in entries {
        let shown = match entry.target.as_deref() {
            // A refused creation's target: `owner/name`, another forge's with its name first.
            Some(repository) if repository.contains('/') => {
                let (forge, path) = repository
                    .split_once(':')
                    .and_then(|(name, path)| Some((ForgeKind::parse(name)?, path)))
                    .unwrap_or((ForgeKind::GitHub, repository));
                access.covers(forge, path)
            }
            Some(id) => {
                let summary = task_index::read_summary(kv, id).await.ok().flatten();
                summary.is_some_and(|s| access.covers(s.forge, &s.repository))
            }
            None => false,
        };
        if shown {
            covered.push(entry);
        }
    }
    covered
}

#[cfg(test)]
#[path = "dashboard_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "dashboard_signin_tests.rs"]
pub(super) mod signin_tests;
