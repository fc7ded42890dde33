//! The task API:
//!
//! - `GET /api/v1/tasks`: newest first from the task index
//!   ([`crate::task_index`]), `limit` (1..=100), `cursor`, and the filters
//!   `repository` and `state`.
//! - `GET /api/v1/tasks/{id}`: the task folded from its log, with its
//!   events and (once concluded) its result.
//! - `POST /api/v1/tasks`: create a task as the authenticated principal,
//!   for an allowlisted repository, in a mode granted to the principal.
//! - `GET /api/v1/tasks/{id}/log`: the task's raw log entries in seq order,
//!   for token holders only (what `agent-zero replay` folds).
//!
//! Reads need a token when `AGENT_ZERO_CONTROL_PLANE_READS=token`, the default
//! once GitHub credentials are set ([`crate::auth`]).

use agent_zero_agent::Policy;
use agent_zero_contracts::{
    FeedbackItem, FeedbackKind, ForgeKind, IssueRef, PullRequestRef, RepoName, RunMode, Sha, TaskState, Trigger,
    UntrustedText, is_repository_relative_path,
};
use agent_zero_engine::{Resident, Stimulus, TaskError, TaskInput};
use agent_zero_github::{CredentialsError, GitHubClient, GitHubError, PullRequestInfo};
use agent_zero_ports::HttpClient;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::RouteContext;
use super::input::{MAX_SHORT, invalid, json_body, limit, param, query};
use crate::access::{self, Principal};
use crate::audit_log::{AuditAction, AuditEntry};
use crate::auth::{self, redact};
use crate::error::{ApiError, ErrorCode};
use crate::task_index::{self, DEFAULT_PAGE, Filter, MAX_PAGE, TaskSummary};
use crate::{Host, repository_policy};

/// Largest accepted create body.
pub(crate) const MAX_CREATE_BYTES: usize = 256 * 1024;
/// Most feedback items in one task.
pub(crate) const MAX_FEEDBACK: usize = 20;
/// Most bytes of one feedback body.
pub(crate) const MAX_FEEDBACK_BYTES: usize = 16 * 1024;
/// Most scoped files.
pub(crate) const MAX_FILES: usize = 50;

pub(super) async fn list<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    match list_page(context, request).await {
        Ok(body) => crate::json_response(StatusCode::OK, &body),
        Err(e) => e.into_response(),
    }
}

async fn list_page<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> Result<Value, ApiError> {
    auth::authorize_read(context.settings, request.headers())?;
    let pairs = query(request, &["repository", "state", "limit", "cursor"])?;
    let limit = limit(&pairs, DEFAULT_PAGE, MAX_PAGE)?;
    let repository = param(&pairs, "repository")
        .map(|r| {
            if is_repository(r) {
                Ok(r.to_owned())
            } else {
                Err(invalid("repository", "expected `owner/name` (or GitLab's `namespace/project`)"))
            }
        })
        .transpose()?;
    let state = param(&pairs, "state")
        .map(|s| TaskState::parse(s).ok_or_else(|| invalid("state", &format!("unknown state `{s}`"))))
        .transpose()?;
    let filter = Filter { repository, state };
    let page = task_index::list(context.host.kv(), &filter, param(&pairs, "cursor"), limit).await?;
    Ok(json!({ "items": page.items, "nextCursor": page.next_cursor }))
}

pub(super) async fn get<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    let result = async {
        auth::authorize_read(context.settings, request.headers())?;
        let resident = load(context, id).await?;
        let mut body = detail(&resident, context.invocation.now_ms, &context.link("/api/v1/tasks/"));
        // What the run cost its host so far (absent before its first tick).
        if let Ok(Some(cost)) = crate::metering::read(context.host.kv(), id).await {
            body["cost"] = crate::metering::cost_json(&cost);
        }
        Ok::<_, ApiError>(body)
    };
    match result.await {
        Ok(body) => crate::json_response(StatusCode::OK, &body),
        Err(e) => e.into_response(),
    }
}

/// The raw log of task `id`, for token holders only whatever
/// `AGENT_ZERO_CONTROL_PLANE_READS` says (it holds the whole record: model
/// answers, command output, the policy), with configured secret values
/// redacted as in every other answer.
pub(super) async fn log<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    let result = async {
        auth::principal(context.settings, request.headers())?;
        let entries = match agent_zero_engine::log::read_log(context.host.kv(), id).await {
            Ok(Some(entries)) => entries,
            Ok(None) | Err(TaskError::InvalidTaskId(_)) => {
                return Err(ApiError::new(ErrorCode::NotFound, format!("no task `{id}`")).with_field("id"));
            }
            Err(e) => return Err(e.into()),
        };
        // Written straight to text with the serializer the store itself
        // uses (no `Value` in between: a second copy of every fact's
        // serializer would cost the worker ~5 KB gzip).
        let entries = serde_json::to_string(&entries).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        let id = serde_json::to_string(id).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        Ok(redact(&format!("{{\"taskId\":{id},\"entries\":{entries}}}"), auth::secrets(context.settings)))
    };
    match result.await {
        Ok(body) => {
            let mut response = crate::json_response(StatusCode::OK, &Value::Null);
            *response.body_mut() = body.into_bytes();
            response
        }
        Err(e) => e.into_response(),
    }
}

/// The task, or 404 (also for an id that cannot name a task).
pub(super) async fn load<H: Host>(context: &RouteContext<'_, H>, id: &str) -> Result<Resident, ApiError> {
    match agent_zero_engine::load(context.host.kv(), id).await {
        Ok(Some(resident)) => Ok(resident),
        Ok(None) | Err(TaskError::InvalidTaskId(_)) => {
            Err(ApiError::new(ErrorCode::NotFound, format!("no task `{id}`")).with_field("id"))
        }
        Err(e) => Err(e.into()),
    }
}

/// The task as the API shows it.
/// The task's detail; its links start with `tasks` (`{base}/api/v1/tasks/`).
fn detail(resident: &Resident, now_ms: u64, tasks: &str) -> Value {
    let mut body = serde_json::to_value(TaskSummary::of_resident(resident, now_ms)).unwrap_or_default();
    // Updated when the last event happened, not when it was read.
    let updated = resident.events.last().map_or_else(|| body["createdAt"].clone(), |e| json!(e.timestamp));
    body["updatedAt"] = updated;
    body["events"] = json!(resident.events);
    body["result"] = json!(resident.conclusion.concluded.as_deref().map(|c| &c.0));
    body["attempts"] = json!(resident.attempts());
    if let Some(stimulus) = resident.stimulus.as_deref() {
        body["forge"] = json!(stimulus.input.forge.as_str());
        if let Some(pr) = &stimulus.input.pull_request {
            body["pullRequest"] = json!(pr);
        }
        if let Some(issue) = &stimulus.input.issue {
            body["issue"] = json!(issue);
        }
    }
    if let Some((reason, message)) = &resident.intake.declined {
        body["ignored"] = json!({ "reason": reason, "message": message });
    }
    if resident.stimulus.is_none()
        && let Some(error) = &resident.intake.last_error
    {
        // Waiting for GitHub: what the last policy read said, and how often.
        body["admission"] = json!({ "errors": resident.intake.errors, "lastError": error });
    }
    if let Some(by) = &resident.approval.approved_by {
        body["approvedBy"] = json!(by);
    }
    // What an approval would cover: every path and content of the decision
    // waiting for a person, and its digest to approve it by.
    if resident.state == agent_zero_contracts::TaskState::NeedsHuman
        && let Some(decision) = &resident.attempt.decision
    {
        body["pendingDecision"] = json!({
            "decisionDigest": agent_zero_engine::decision_digest(decision),
            "changes": decision.changes.iter().map(|c| json!({ "path": c.path, "content": c.content })).collect::<Vec<_>>(),
        });
        if let Some((stop, effect)) = agent_zero_engine::awaiting(resident) {
            body["pendingDecision"]["stop"] = json!({ "code": stop.code, "message": stop.message });
            body["pendingDecision"]["approving"] = json!(effect.as_str());
        }
    }
    if let Some(reason) = &resident.conclusion.failure {
        body["failure"] = json!(reason);
    }
    let id = resident.origin().map_or("", |o| o.task_id);
    body["links"] = json!({
        "self": format!("{tasks}{id}"),
        "evidence": format!("{tasks}{id}/evidence"),
    });
    body
}

/// The body of `POST /api/v1/tasks`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateTask {
    /// The forge the repository lives on (default GitHub).
    #[serde(default)]
    forge: ForgeKind,
    repository: String,
    #[serde(default)]
    mode: Option<RunMode>,
    trigger: Trigger,
    #[serde(default)]
    feedback: Vec<FeedbackInput>,
    #[serde(default)]
    pull_request: Option<PullRequestInput>,
    #[serde(default)]
    issue: Option<IssueInput>,
    #[serde(default)]
    files: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FeedbackInput {
    body: String,
    #[serde(default)]
    author: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    line: Option<u64>,
    #[serde(default)]
    requested_changes: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PullRequestInput {
    number: u64,
    /// Absent: the pull request's current head, read from GitHub.
    #[serde(default)]
    head_sha: Option<String>,
    #[serde(default)]
    base_sha: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IssueInput {
    number: u64,
    /// Required unless the trigger is `issue` (whose title is GitHub's).
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    url: Option<String>,
}

pub(super) async fn create<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let principal = match auth::principal(context.settings, request.headers()) {
        Ok(principal) => principal,
        Err(e) => return e.into_response(),
    };
    let mut audit = AuditEntry {
        at: String::new(),
        principal: principal.name.clone(),
        action: AuditAction::TasksCreate,
        target: None,
        detail: None,
        status: 0,
        outcome: String::new(),
        field: None,
        request_id: context.invocation.request_id.clone(),
    };
    let result = create_as(context, request, &principal, &mut audit).await;
    let response = match result {
        Ok((summary, requested, forge)) => {
            audit.target = Some(summary.id.clone());
            let mut body = serde_json::to_value(&summary).unwrap_or_default();
            body["requestedMode"] = json!(requested);
            body["forge"] = json!(forge.as_str());
            let mut response = crate::json_response(StatusCode::CREATED, &body);
            if let Ok(location) = http::HeaderValue::from_str(&context.link(&format!("/api/v1/tasks/{}", summary.id))) {
                response.headers_mut().insert(http::header::LOCATION, location);
            }
            response
        }
        Err(e) => {
            audit.field.clone_from(&e.field);
            audit.outcome = e.code.as_str().to_owned();
            e.into_response()
        }
    };
    audit.status = response.status().as_u16();
    if audit.outcome.is_empty() {
        audit.outcome = "ok".into();
    }
    let _ = crate::audit_log::append(context.host.kv(), &audit, context.invocation.now_ms, context.settings).await;
    response
}

async fn create_as<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    principal: &Principal,
    audit: &mut AuditEntry,
) -> Result<(TaskSummary, RunMode, ForgeKind), ApiError> {
    let access = auth::required(context.settings)?;
    let body: CreateTask = json_body(request, MAX_CREATE_BYTES)?;
    let requested = body.mode.unwrap_or(RunMode::Observe);
    let forge = body.forge;
    audit.target = Some(match forge {
        ForgeKind::GitHub => body.repository.clone(),
        other => format!("{}:{}", other.as_str(), body.repository),
    });
    audit.detail = Some(format!("mode {requested}, trigger {}", body.trigger));
    let secrets = auth::secrets(context.settings);
    let (mut input, wanted) = validate(&body, principal, secrets)?;
    if !access.may_target(forge, &body.repository) {
        let grant = match forge {
            ForgeKind::GitHub => String::new(),
            other => format!(" (as `{}:{}`)", other.as_str(), body.repository),
        };
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("repository `{}` is not in {}{grant}", body.repository, access::REPOSITORIES),
        )
        .with_field("repository"));
    }
    if !principal.may_use(requested) {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("mode `{requested}` is not granted to `{}` ({})", principal.name, access::MODES),
        )
        .with_field("mode"));
    }
    // Over the queue's bound: refused before anything is read or stored.
    crate::run_bounds::check_queue(context.host.kv(), context.settings.run()?.max_queued).await?;
    let policy = if forge == ForgeKind::GitHub {
        read_github(context, &body, &mut input, wanted, secrets).await?
    } else {
        let ask = super::forge_tasks::Ask {
            forge,
            repository: &body.repository,
            issue: wanted.issue,
            change: body.pull_request.as_ref().map(|pr| (pr.number, pr.head_sha.clone(), pr.base_sha.clone())),
            secrets,
        };
        let read = super::forge_tasks::read(context.settings, context.host.http(), &ask).await?;
        if read.issue.is_some() && !read.policy.issues.enabled {
            return Err(issues_disabled(&body.repository));
        }
        if let Some((issue, issue_body)) = read.issue {
            (input.issue, input.issue_body) = (Some(issue), issue_body);
        }
        input.pull_request = read.pull_request.or(input.pull_request);
        read.policy
    };
    // A task that could never run is not accepted as if it could.
    crate::settings::check_runnable(
        context.settings,
        &policy,
        context.host.http(),
        context.host.name(),
        context.host.allowed_outbound_hosts(),
    )?;
    let stimulus = Stimulus {
        task_id: task_id(&context.invocation.request_id),
        repository: body.repository.clone(),
        trigger: body.trigger,
        mode: policy.restrict_mode(Some(requested)),
        source: Some(format!("api:{}", principal.name)),
        input,
        policy,
    };
    let kv = context.host.kv();
    let now_ms = context.invocation.now_ms;
    let summary = TaskSummary::of_stimulus(&stimulus, now_ms);
    // Indexed first, so the first tick (which may run before this
    // returns) finds the row to move.
    task_index::record(kv, &summary).await?;
    if let Err(e) = agent_zero_engine::create(kv, context.host.queue(), stimulus, now_ms).await {
        let _ = task_index::forget(kv, &summary).await;
        return Err(tasks_error_on_create(e));
    }
    Ok((summary, requested, forge))
}

/// What the create reads from GitHub: the installation, the policy, an
/// issue task's issue and a pull request's current head, each into `input`.
async fn read_github<H: Host>(
    context: &RouteContext<'_, H>,
    body: &CreateTask,
    input: &mut TaskInput,
    wanted: Wanted,
    secrets: &[String],
) -> Result<Policy, ApiError> {
    let (owner, repo) = body.repository.split_once('/').unwrap_or_default();
    // Nothing is read and nothing stored for a repository the App cannot act on.
    input.installation_id = installation_for(context, owner, repo).await?;
    let github = authenticated(context, input.installation_id).await?;
    let policy = policy_for(context, github.as_ref(), owner, repo).await?;
    if let Some(number) = wanted.issue {
        let Some(client) = &github else {
            return Err(invalid(
                "trigger",
                "an issue task needs the deployment's GitHub credentials to read the issue; none are configured",
            ));
        };
        if !policy.issues.enabled {
            return Err(issues_disabled(&body.repository));
        }
        let (issue, issue_body) = read_issue(client, owner, repo, number, secrets).await?;
        (input.issue, input.issue_body) = (Some(issue), issue_body);
    }
    match (wanted.head, &github) {
        (Some(number), Some(client)) => {
            let base = body.pull_request.as_ref().and_then(|pr| pr.base_sha.as_deref());
            input.pull_request = Some(current_head(client, owner, repo, number, base).await?);
        }
        (Some(_), None) => {
            return Err(invalid(
                "pullRequest.headSha",
                "required here: the deployment has no GitHub credentials to read the pull request's current head",
            ));
        }
        (None, Some(client)) => {
            if let Some(pr) = &input.pull_request {
                check_head(client, pr).await?;
            }
        }
        (None, None) => {}
    }
    Ok(policy)
}

/// An issue task on a repository whose policy does not act on issues.
fn issues_disabled(repository: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Forbidden,
        format!("trigger: the policy of {repository} does not act on issues (`issues.enabled` in .agent-zero.yml)"),
    )
    .with_field("trigger")
}

/// The installation of the deployment's GitHub App on `owner/repo`, looked
/// up when the task is created (`GET /repos/{owner}/{repo}/installation`
/// with the App's JWT) and kept in the task's input, where a webhook task
/// keeps the one its delivery named: the policy read, the head check, the
/// checkout and the publication then act with that installation's token.
/// `None` with a `GITHUB_TOKEN` or without credentials. An App not
/// installed there is a 422 naming the repository, before anything is
/// stored; GitHub failing to answer is a 502, nothing stored either.
async fn installation_for<H: Host>(
    context: &RouteContext<'_, H>,
    owner: &str,
    repo: &str,
) -> Result<Option<u64>, ApiError> {
    let github = context.settings.github()?;
    let Some(credentials) = &github.credentials else { return Ok(None) };
    let anonymous = github.anonymous(context.host.http());
    match credentials
        .repository_installation(&anonymous, context.host.signer(), owner, repo, context.invocation.now_ms)
        .await
    {
        Ok(installation) => Ok(installation),
        Err(e @ CredentialsError::NotInstalled { .. }) => Err(ApiError::new(
            ErrorCode::AppNotInstalled,
            format!(
                "repository: {e}; install the App on {owner}/{repo} (or add the repository to its installation) \
                 and create the task again; nothing was created"
            ),
        )
        .with_field("repository")),
        Err(e) => Err(ApiError::new(
            ErrorCode::UpstreamFailed,
            format!("could not look up the GitHub App's installation on {owner}/{repo}; nothing was created: {e}"),
        )),
    }
}

/// A client with the deployment's credentials (the installation's token
/// for an App), or `None` without credentials: nothing is then read from
/// GitHub at creation, and the run's own reads stand in.
async fn authenticated<'c, H: Host>(
    context: &'c RouteContext<'_, H>,
    installation: Option<u64>,
) -> Result<Option<GitHubClient<'c, H::Http>>, ApiError> {
    let github = context.settings.github()?;
    if github.credentials.is_none() {
        return Ok(None);
    }
    let client = github
        .client(context.host.http(), context.host.signer(), installation, context.invocation.now_ms)
        .await
        .map_err(|e| {
            ApiError::new(
                ErrorCode::UpstreamFailed,
                format!("could not authenticate to GitHub; nothing was created: {e}"),
            )
        })?;
    Ok(Some(client))
}

/// The repository policy from its default branch when GitHub credentials
/// are configured (`GITHUB_TOKEN`, or the App's installation token);
/// otherwise the safe defaults (`observe`). A policy that cannot be read or
/// does not parse creates nothing.
async fn policy_for<H: Host>(
    context: &RouteContext<'_, H>,
    client: Option<&GitHubClient<'_, H::Http>>,
    owner: &str,
    repo: &str,
) -> Result<Policy, ApiError> {
    let Some(client) = client else { return Ok(Policy::default()) };
    repository_policy::read(client, context.host.kv(), owner, repo, |_| "repository".to_owned()).await
}

/// With GitHub credentials, a task naming a pull request must name its
/// current head: the run checks out `headSha` and reports on it, so a
/// commit the pull request does not hold (a fork's, an old push's) is
/// refused (409 naming `pullRequest.headSha`, with the head GitHub
/// reports), as is a pull request GitHub does not show these credentials
/// (400 naming `pullRequest.number`). Without credentials nothing can be
/// read, and the run's own reads stand in.
async fn check_head<H: HttpClient>(client: &GitHubClient<'_, H>, pr: &PullRequestRef) -> Result<(), ApiError> {
    let info = read_pull(client, &pr.owner, &pr.repo, pr.number).await?;
    if info.head_sha.eq_ignore_ascii_case(&pr.head_sha) {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "pullRequest.headSha: pull request #{} is at {}, not {}; create the task for its current head",
                pr.number, info.head_sha, pr.head_sha
            ),
        )
        .with_field("pullRequest.headSha"))
    }
}

/// A pull request given without `headSha` names its current head, as
/// GitHub reports it when the task is created (its base too, unless
/// given): `agent-zero review <url>` knows only the number.
async fn current_head<H: HttpClient>(
    client: &GitHubClient<'_, H>,
    owner: &str,
    repo: &str,
    number: u64,
    base: Option<&str>,
) -> Result<PullRequestRef, ApiError> {
    let info = read_pull(client, owner, repo, number).await?;
    Ok(PullRequestRef {
        owner: owner.to_owned(),
        repo: repo.to_owned(),
        number,
        head_sha: info.head_sha.to_ascii_lowercase(),
        base_sha: Some(base.unwrap_or(&info.base_sha).to_ascii_lowercase()),
    })
}

/// `GET /repos/{o}/{r}/pulls/{n}`: 400 naming `pullRequest.number` when
/// GitHub shows these credentials no such pull request, 502 when GitHub
/// does not answer.
async fn read_pull<H: HttpClient>(
    client: &GitHubClient<'_, H>,
    owner: &str,
    repo: &str,
    number: u64,
) -> Result<PullRequestInfo, ApiError> {
    match client.pull_request(owner, repo, number).await {
        Ok(info) => Ok(info),
        Err(GitHubError::Status { status: 404, .. }) => Err(invalid(
            "pullRequest.number",
            &format!("GitHub shows these credentials no pull request #{number} in {owner}/{repo}"),
        )),
        Err(e) => Err(ApiError::new(
            ErrorCode::UpstreamFailed,
            format!("could not read pull request #{number}; nothing was created: {e}"),
        )),
    }
}

/// The issue an issue task works on, read when it is created, its title
/// and body untrusted text with configured secrets redacted: 400 naming
/// `issue.number` when GitHub shows no such issue or it is a pull
/// request, 409 when it is closed, 502 when GitHub does not answer.
async fn read_issue<H: HttpClient>(
    client: &GitHubClient<'_, H>,
    owner: &str,
    repo: &str,
    number: u64,
    secrets: &[String],
) -> Result<(IssueRef, Option<UntrustedText>), ApiError> {
    let issue = match client.issue(owner, repo, number).await {
        Ok(issue) => issue,
        Err(GitHubError::Status { status: 404, .. }) => {
            return Err(invalid(
                "issue.number",
                &format!("GitHub shows these credentials no issue #{number} in {owner}/{repo}"),
            ));
        }
        Err(e) => {
            return Err(ApiError::new(
                ErrorCode::UpstreamFailed,
                format!("could not read issue #{number}; nothing was created: {e}"),
            ));
        }
    };
    let repository = format!("{owner}/{repo}");
    let facts = super::forge_tasks::IssueFacts {
        title: issue.title,
        body: issue.body.unwrap_or_default(),
        url: issue.html_url,
        open: issue.open,
        is_change_request: issue.pull_request,
        confidential: false,
    };
    super::forge_tasks::issue_of(
        &super::forge_tasks::IssueAt { repository: &repository, owner, repo, number },
        facts,
        secrets,
    )
}

fn tasks_error_on_create(error: TaskError) -> ApiError {
    match error {
        TaskError::InvalidTaskId(_) => ApiError::new(ErrorCode::Internal, error.to_string()),
        other => other.into(),
    }
}

/// A task id from the invocation's request id.
fn task_id(request_id: &str) -> String {
    let clean: String = request_id.chars().filter(char::is_ascii_alphanumeric).take(64).collect();
    format!("api-{clean}")
}

/// A repository's path on one of the forges: GitHub's `owner/name`
/// ([`RepoName`]), Gitea's and Forgejo's, or GitLab's `namespace/project`
/// with a nested namespace. What a filter may name; creating a task checks
/// its forge's own rule ([`super::forge_tasks::owner_repo`]).
pub(crate) fn is_repository(text: &str) -> bool {
    RepoName::is_valid(text) || agent_zero_forges::gitlab::api::is_project_path(text)
}

fn is_sha(text: &str) -> bool {
    Sha::is_valid(text)
}

/// What the create reads from GitHub before it stores anything.
#[derive(Debug, Default)]
struct Wanted {
    /// A pull request given without its head: its number.
    head: Option<u64>,
    /// An issue task's issue: its number.
    issue: Option<u64>,
}

/// Checks ranges and combinations the types cannot, and builds the
/// task's input with every free text redacted; and what the create then
/// reads from GitHub.
fn validate(body: &CreateTask, principal: &Principal, secrets: &[String]) -> Result<(TaskInput, Wanted), ApiError> {
    let (owner, repo) = super::forge_tasks::owner_repo(body.forge, &body.repository)?;
    match body.trigger {
        Trigger::Feedback if body.feedback.is_empty() => {
            return Err(invalid("feedback", "a feedback task needs at least one item"));
        }
        Trigger::Proactive if body.pull_request.is_none() => {
            return Err(invalid("pullRequest", "a proactive task reviews a pull request"));
        }
        Trigger::Proactive if !body.feedback.is_empty() => {
            return Err(invalid("feedback", "only a feedback task takes feedback"));
        }
        Trigger::Issue if body.issue.is_none() => return Err(invalid("issue", "an issue task names its issue")),
        Trigger::Issue if !body.feedback.is_empty() => {
            return Err(invalid("feedback", "only a feedback task takes feedback"));
        }
        Trigger::Issue if body.pull_request.is_some() => {
            return Err(invalid("pullRequest", "an issue task works on an issue, not a pull request"));
        }
        _ => {}
    }
    if body.feedback.len() > MAX_FEEDBACK {
        return Err(invalid("feedback", &format!("at most {MAX_FEEDBACK} items")));
    }
    let mut feedback = Vec::with_capacity(body.feedback.len());
    for (i, item) in body.feedback.iter().enumerate() {
        let field = |name: &str| format!("feedback[{i}].{name}");
        if item.body.trim().is_empty() || item.body.len() > MAX_FEEDBACK_BYTES {
            return Err(invalid(&field("body"), &format!("1 to {MAX_FEEDBACK_BYTES} bytes")));
        }
        if item.author.as_ref().is_some_and(|a| a.trim().is_empty() || a.len() > MAX_SHORT) {
            return Err(invalid(&field("author"), &format!("1 to {MAX_SHORT} bytes")));
        }
        if item.path.as_ref().is_some_and(|p| !is_repository_relative_path(p)) {
            return Err(invalid(&field("path"), "a repository-relative path"));
        }
        if item.line == Some(0) || item.line.is_some_and(|l| l > u64::from(u32::MAX)) {
            return Err(invalid(&field("line"), "a line number from 1"));
        }
        if item.line.is_some() && item.path.is_none() {
            return Err(invalid(&field("line"), "a line needs a path"));
        }
        feedback.push(FeedbackItem {
            id: format!("api-{}", i + 1),
            kind: FeedbackKind::Manual,
            body: UntrustedText::capped(&redact(&item.body, secrets), MAX_FEEDBACK_BYTES),
            // The principal, or the caller's name for the author marked as theirs:
            // a request never speaks as someone GitHub did not vouch for.
            author: match item.author.as_deref() {
                Some(named) => format!("{} (caller-supplied, via api:{})", redact(named, secrets), principal.name),
                None => format!("api:{}", principal.name),
            },
            requested_changes: item.requested_changes,
            path: item.path.as_deref().map(|p| redact(p, secrets)),
            line: item.line,
        });
    }
    let mut wanted = Wanted::default();
    let pull_request = match &body.pull_request {
        None => None,
        Some(pr) => {
            if pr.number == 0 || pr.number > u64::from(u32::MAX) {
                return Err(invalid("pullRequest.number", "a pull request number from 1"));
            }
            if pr.head_sha.as_ref().is_some_and(|s| !is_sha(s)) {
                return Err(invalid("pullRequest.headSha", "a 40 or 64 hex digit commit SHA"));
            }
            if pr.base_sha.as_ref().is_some_and(|s| !is_sha(s)) {
                return Err(invalid("pullRequest.baseSha", "a 40 or 64 hex digit commit SHA"));
            }
            if pr.head_sha.is_none() {
                wanted.head = Some(pr.number);
            }
            pr.head_sha.as_ref().map(|head| PullRequestRef {
                owner: owner.to_owned(),
                repo: repo.to_owned(),
                number: pr.number,
                head_sha: head.to_ascii_lowercase(),
                base_sha: pr.base_sha.as_ref().map(|s| s.to_ascii_lowercase()),
            })
        }
    };
    let issue = match &body.issue {
        None => None,
        Some(issue) => {
            if issue.number == 0 || issue.number > u64::from(u32::MAX) {
                return Err(invalid("issue.number", "an issue number from 1"));
            }
            if issue.title.as_ref().is_some_and(|t| t.trim().is_empty() || t.len() > MAX_SHORT) {
                return Err(invalid("issue.title", &format!("1 to {MAX_SHORT} bytes")));
            }
            if issue
                .url
                .as_ref()
                .is_some_and(|u| !u.starts_with("https://") || u.len() > 2048 || u.contains(char::is_whitespace))
            {
                return Err(invalid("issue.url", "an https URL of at most 2048 bytes"));
            }
            if body.trigger == Trigger::Issue {
                // An issue task's title and body are the forge's, read when it is created.
                wanted.issue = Some(issue.number);
                None
            } else {
                let Some(title) = &issue.title else {
                    return Err(invalid(
                        "issue.title",
                        "required unless the trigger is `issue` (whose title is GitHub's)",
                    ));
                };
                Some(IssueRef {
                    owner: owner.to_owned(),
                    repo: repo.to_owned(),
                    number: issue.number,
                    title: UntrustedText::capped(&redact(title, secrets), MAX_SHORT),
                    url: issue.url.as_deref().map(|u| redact(u, secrets)),
                })
            }
        }
    };
    if body.files.len() > MAX_FILES {
        return Err(invalid("files", &format!("at most {MAX_FILES} paths")));
    }
    if let Some(i) = body.files.iter().position(|f| !is_repository_relative_path(f)) {
        return Err(invalid(&format!("files[{i}]"), "a repository-relative path"));
    }
    let input = TaskInput {
        feedback,
        issue,
        issue_body: None,
        pull_request,
        files: body.files.iter().map(|f| redact(f, secrets)).collect(),
        installation_id: None,
        forge: body.forge,
    };
    Ok((input, wanted))
}
