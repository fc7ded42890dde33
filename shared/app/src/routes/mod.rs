//! Route handlers. Each takes the invocation context and the request and
//! returns a response; errors use [`crate::ApiError`].

#[cfg(test)]
mod api_app_tests;
#[cfg(test)]
mod api_cli_tests;
#[cfg(test)]
mod api_tests;
mod approvals;
mod audit;
mod dashboard;
mod doctor;
mod evidence;
mod forge_tasks;
#[cfg(test)]
mod forge_tasks_tests;
mod forge_webhooks;
#[cfg(test)]
mod gitea_pull_run_tests;
#[cfg(test)]
mod gitea_run_tests;
#[cfg(test)]
mod gitlab_run_tests;
mod health;
mod input;
mod openapi;
mod overview;
#[cfg(test)]
mod overview_tests;
mod receipts;
#[cfg(test)]
mod receipts_tests;
mod sweep;
mod tasks;
pub(crate) mod webhooks;

pub(crate) use tasks::MAX_CREATE_BYTES;

use crate::router::{Matched, RouteId};
use crate::{Host, Invocation, Settings};

/// Everything a handler may use.
pub(crate) struct RouteContext<'a, H: Host> {
    pub(crate) host: &'a H,
    /// The operator's settings (parsed once per isolate or instance).
    pub(crate) settings: &'a Settings,
    pub(crate) invocation: &'a Invocation,
}

impl<H: Host> RouteContext<'_, H> {
    /// `AGENT_ZERO_BASE_PATH` (`""` at the root). A malformed one answered
    /// the request before any handler ran.
    pub(crate) fn base_path(&self) -> &str {
        self.settings.base_path().unwrap_or_default()
    }

    /// The app's own `path` (`/dashboard`) as a link: under the base path.
    pub(crate) fn link(&self, path: &str) -> String {
        format!("{}{path}", self.base_path())
    }
}

pub(crate) async fn dispatch<H: Host>(
    context: &RouteContext<'_, H>,
    route: Matched,
    request: http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let head = request.method() == http::Method::HEAD;
    let params = route.params;
    let id = || params.first().map(String::as_str).unwrap_or_default();
    let mut response = match route.id {
        RouteId::Health => health::get(context, &request).await,
        RouteId::GithubWebhook => webhooks::github(context, request).await,
        RouteId::GitLabWebhook => forge_webhooks::post(context, &request, forge_webhooks::Route::GitLab).await,
        RouteId::GiteaWebhook => forge_webhooks::post(context, &request, forge_webhooks::Route::Gitea).await,
        RouteId::ListTasks => tasks::list(context, &request).await,
        RouteId::CreateTask => tasks::create(context, &request).await,
        RouteId::GetTask => tasks::get(context, &request, id()).await,
        RouteId::TaskEvidence => evidence::negotiated(context, &request, id()).await,
        RouteId::TaskEvidenceMarkdown => evidence::markdown(context, &request, id()).await,
        RouteId::TaskEvidenceJson => evidence::json(context, &request, id()).await,
        RouteId::TaskEvidenceHtml => evidence::html(context, &request, id()).await,
        RouteId::TaskLog => tasks::log(context, &request, id()).await,
        RouteId::TaskReceipt => receipts::receipt(context, &request, id()).await,
        RouteId::ReceiptKeys => receipts::keys(context, &request).await,
        RouteId::DecideApproval => approvals::decide(context, &request, id()).await,
        RouteId::Audit => audit::list(context, &request).await,
        RouteId::Doctor => doctor::get(context, &request).await,
        RouteId::Overview => overview::get(context, &request).await,
        RouteId::OpenApi => openapi::document(context, &request).await,
        RouteId::Docs => openapi::docs(context, &request).await,
        RouteId::Sweep => sweep::post(context, &request).await,
        RouteId::TaskListPage => evidence::task_list_page(context, &request).await,
        RouteId::TaskPage => evidence::task_page(context, &request, id()).await,
        RouteId::SignIn => dashboard::login(context, &request).await,
        RouteId::SignInCallback => dashboard::callback(context, &request).await,
        RouteId::SignOut => dashboard::logout(context, &request).await,
        RouteId::DashboardTasks => dashboard::tasks(context, &request).await,
        RouteId::DashboardTask => dashboard::task(context, &request, id()).await,
        RouteId::DashboardDecision => dashboard::decide(context, &request, id()).await,
        RouteId::DashboardAudit => dashboard::audit(context, &request).await,
        RouteId::DashboardEvidence => dashboard::evidence(context, &request, id()).await,
        RouteId::RevokeDashboardSessions => dashboard::sessions::revoke(context, &request, id()).await,
    };
    if head {
        response.body_mut().clear();
    }
    response
}
