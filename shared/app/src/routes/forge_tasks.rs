//! `POST /api/v1/tasks` on GitLab and on Gitea/Forgejo (`"forge"` in the
//! body): what the create reads from the forge before it stores anything,
//! as it reads GitHub for a GitHub task. The forge's token is needed
//! (`GITLAB_TOKEN`, `GITEA_TOKEN`): a task on a forge the deployment cannot
//! read is refused (503 naming the variable), never stored to fail later.
//!
//! - the repository policy from the default branch (absent: the safe
//!   defaults; one that does not validate is a 422 naming its field);
//! - an issue task's issue: open, not a pull request, not a confidential
//!   GitLab issue (its text is not for a model), its title and text as
//!   untrusted data with the configured secrets redacted;
//! - a change request's current head (a merge request's `sha`, a pull
//!   request's `head.sha`), filled in when not given and compared when
//!   given, as for GitHub (409 naming `pullRequest.headSha`).
//!
//! The repository is the forge's path: GitLab's `namespace/project` (the
//! namespace may be nested; the publication's owner is the namespace),
//! Gitea's and Forgejo's `owner/name`. A forge's 404 is a 400 naming the
//! field that named the missing thing; any other failure is a 502, and
//! nothing is created.

use agent_zero_agent::Policy;
use agent_zero_contracts::{ForgeKind, IssueRef, PullRequestRef, Sha, UntrustedText};
use agent_zero_forges::gitea::api::{GiteaApi, GiteaClient, GiteaError};
use agent_zero_forges::gitlab::api::{GitLabApi, GitLabClient, GitLabError};
use agent_zero_github::{MAX_POLICY_BYTES, POLICY_PATH};
use agent_zero_ports::HttpClient;

use super::input::{MAX_SHORT, invalid};
use crate::Settings;
use crate::auth::redact;
use crate::error::{ApiError, ErrorCode};

/// Each forge call is bounded by this, as the run path's are.
const TIMEOUT_MS: u64 = 20_000;

/// The forge's own path rules for `repository`, as `(owner, repo)` the
/// task's references carry: GitLab's split at the last `/` (namespace,
/// project), Gitea's and Forgejo's at the only one.
pub(super) fn owner_repo(forge: ForgeKind, repository: &str) -> Result<(&str, &str), ApiError> {
    let split = match forge {
        ForgeKind::GitLab => {
            agent_zero_forges::gitlab::api::is_project_path(repository).then(|| repository.rsplit_once('/')).flatten()
        }
        ForgeKind::Gitea | ForgeKind::Forgejo => repository.split_once('/').filter(|(owner, repo)| {
            use agent_zero_forges::gitea::api::is_plain_name;
            is_plain_name(owner) && is_plain_name(repo)
        }),
        ForgeKind::GitHub => {
            agent_zero_contracts::RepoName::is_valid(repository).then(|| repository.split_once('/')).flatten()
        }
    };
    split.ok_or_else(|| {
        invalid(
            "repository",
            match forge {
                ForgeKind::GitLab => {
                    "expected GitLab's `namespace/project` (the namespace may be nested; letters, digits, `-`, `_`, \
                     `.` in each segment)"
                }
                ForgeKind::Gitea | ForgeKind::Forgejo => "expected `owner/name` (letters, digits, `-`, `_`, `.`)",
                ForgeKind::GitHub => "expected `owner/name` (GitHub's letters, digits, `-`, `_`, `.`)",
            },
        )
    })
}

/// What a forge showed the create: the policy, and the issue or change
/// request the task names.
pub(super) struct Read {
    pub(super) policy: Policy,
    /// An issue task's issue and its text (untrusted, redacted, capped).
    pub(super) issue: Option<(IssueRef, Option<UntrustedText>)>,
    /// The change request at its current head.
    pub(super) pull_request: Option<PullRequestRef>,
}

/// What the create asks a forge for.
pub(super) struct Ask<'a> {
    pub(super) forge: ForgeKind,
    pub(super) repository: &'a str,
    /// An issue task's issue number.
    pub(super) issue: Option<u64>,
    /// The change request's number, the head the caller gave (checked) and
    /// the base the caller gave (kept).
    pub(super) change: Option<(u64, Option<String>, Option<String>)>,
    pub(super) secrets: &'a [String],
}

/// The neutral facts of an issue, as a forge showed them.
pub(super) struct IssueFacts {
    pub(super) title: String,
    pub(super) body: String,
    pub(super) url: Option<String>,
    pub(super) open: bool,
    /// A pull request (GitHub and Gitea list them as issues too).
    pub(super) is_change_request: bool,
    /// A GitLab issue only its members may read.
    pub(super) confidential: bool,
}

/// The neutral facts of a change request.
struct ChangeFacts {
    head: String,
    base: Option<String>,
    open: bool,
}

/// Reads what `ask` needs from its forge, with the deployment's token for it.
pub(super) async fn read<H: HttpClient>(settings: &Settings, http: &H, ask: &Ask<'_>) -> Result<Read, ApiError> {
    let (owner, repo) = owner_repo(ask.forge, ask.repository)?;
    let (policy_bytes, default_branch, issue, change) = match ask.forge {
        ForgeKind::GitLab => gitlab(settings, http, ask).await?,
        ForgeKind::Gitea | ForgeKind::Forgejo => gitea(settings, http, ask, owner, repo).await?,
        ForgeKind::GitHub => return Err(ApiError::new(ErrorCode::Internal, "GitHub tasks are read from GitHub")),
    };
    let policy = policy_of(policy_bytes, &default_branch)?;
    let issue = match (ask.issue, issue) {
        (Some(number), Some(facts)) => {
            let at = IssueAt { repository: ask.repository, owner, repo, number };
            Some(issue_of(&at, facts, ask.secrets)?)
        }
        _ => None,
    };
    let pull_request = match (&ask.change, change) {
        (Some((number, given, base)), Some(facts)) => {
            let head = facts.head.to_ascii_lowercase();
            if !facts.open {
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    format!("pullRequest.number: change request #{number} in {} is not open", ask.repository),
                )
                .with_field("pullRequest.number"));
            }
            if let Some(given) = given.as_deref().filter(|g| !g.eq_ignore_ascii_case(&head)) {
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    format!(
                        "pullRequest.headSha: change request #{number} is at {head}, not {given}; create the task \
                         for its current head"
                    ),
                )
                .with_field("pullRequest.headSha"));
            }
            Some(PullRequestRef {
                owner: owner.to_owned(),
                repo: repo.to_owned(),
                number: *number,
                head_sha: head,
                base_sha: base.clone().or(facts.base).map(|b| b.to_ascii_lowercase()),
            })
        }
        _ => None,
    };
    Ok(Read { policy, issue, pull_request })
}

/// The policy file's bytes as the policy, or the 422 naming its field.
fn policy_of(bytes: Option<Vec<u8>>, branch: &str) -> Result<Policy, ApiError> {
    let Some(bytes) = bytes else { return Ok(Policy::default()) };
    let bad = |why: String| ApiError::new(ErrorCode::InvalidPolicy, why).with_field("repository");
    let text = String::from_utf8(bytes).map_err(|_| bad(format!("{POLICY_PATH} on {branch} is not UTF-8")))?;
    Policy::parse(&text).map_err(|e| bad(format!("{POLICY_PATH} on {branch}: {e}")))
}

/// Where an issue is: its repository's path, and the owner and name its
/// reference carries.
pub(super) struct IssueAt<'a> {
    pub(super) repository: &'a str,
    pub(super) owner: &'a str,
    pub(super) repo: &'a str,
    pub(super) number: u64,
}

/// An issue as the task's reference and text (redacted, capped), or why
/// the task cannot work on it: the same rules on every forge.
pub(super) fn issue_of(
    at: &IssueAt<'_>,
    facts: IssueFacts,
    secrets: &[String],
) -> Result<(IssueRef, Option<UntrustedText>), ApiError> {
    let IssueAt { repository, owner, repo, number } = *at;
    if facts.is_change_request {
        return Err(invalid(
            "issue.number",
            &format!("#{number} in {repository} is a pull request: review it with `trigger: proactive`"),
        ));
    }
    if facts.confidential {
        return Err(invalid(
            "issue.number",
            &format!("issue #{number} in {repository} is confidential: its text is not sent to a model"),
        ));
    }
    if !facts.open {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!("issue.number: issue #{number} in {repository} is closed"),
        )
        .with_field("issue.number"));
    }
    let title = redact(facts.title.trim(), secrets);
    if title.is_empty() {
        return Err(invalid("issue.number", &format!("issue #{number} has an empty title")));
    }
    let body = Some(facts.body)
        .filter(|b| !b.is_empty())
        // As a webhook delivery's.
        .map(|b| UntrustedText::capped(&redact(&b, secrets), agent_zero_github::MAX_BODY_BYTES));
    let reference = IssueRef {
        owner: owner.to_owned(),
        repo: repo.to_owned(),
        number,
        title: UntrustedText::capped(&title, MAX_SHORT),
        url: facts.url.filter(|u| u.starts_with("https://") && u.len() <= 2048).map(|u| redact(&u, secrets)),
    };
    Ok((reference, body))
}

/// A forge not configured for reading: 503 naming what to set.
fn not_configured(variables: &str, forge: ForgeKind) -> ApiError {
    ApiError::new(
        ErrorCode::NotConfigured,
        format!("a {} task is read from the forge when it is created: set {variables}", forge.as_str()),
    )
    .with_field("forge")
}

/// A forge's failed read: its 404 a 400 naming `field`, anything else a 502.
fn failed(field: &str, what: &str, status: Option<u16>, error: &dyn std::fmt::Display) -> ApiError {
    match status {
        Some(404) => invalid(field, &format!("the forge shows the deployment's token no {what}")),
        _ => ApiError::new(ErrorCode::UpstreamFailed, format!("could not read {what}; nothing was created: {error}")),
    }
}

type Facts = (Option<Vec<u8>>, String, Option<IssueFacts>, Option<ChangeFacts>);

async fn gitlab<H: HttpClient>(settings: &Settings, http: &H, ask: &Ask<'_>) -> Result<Facts, ApiError> {
    let configured = settings.gitlab()?.filter(|g| g.token.is_some());
    let Some(gitlab) = configured else { return Err(not_configured("GITLAB_URL and GITLAB_TOKEN", ask.forge)) };
    let api = GitLabApi::new(&gitlab.url, TIMEOUT_MS);
    let client = GitLabClient::new(http, &api, gitlab.token.as_ref());
    let project = ask.repository;
    let fail = |field: &'static str, what: String| move |e: GitLabError| failed(field, &what, e.status(), &e);
    let info = client.project(project).await.map_err(fail("repository", format!("project `{project}`")))?;
    let max = usize::try_from(MAX_POLICY_BYTES).unwrap_or(usize::MAX);
    let policy = client
        .raw_file(project, POLICY_PATH, &info.default_branch, max)
        .await
        .map_err(fail("repository", format!("{POLICY_PATH} of `{project}`")))?;
    let issue = match ask.issue {
        None => None,
        Some(iid) => {
            let issue = client.issue(project, iid).await.map_err(fail("issue.number", format!("issue #{iid}")))?;
            Some(IssueFacts {
                title: issue.title,
                body: issue.description,
                url: Some(issue.web_url).filter(|u| !u.is_empty()),
                open: issue.state == "opened",
                is_change_request: false,
                confidential: issue.confidential,
            })
        }
    };
    let change = match &ask.change {
        None => None,
        Some((iid, ..)) => {
            let mr = client
                .merge_request(project, *iid)
                .await
                .map_err(fail("pullRequest.number", format!("merge request !{iid}")))?;
            if !Sha::is_valid(&mr.sha) {
                return Err(ApiError::new(
                    ErrorCode::UpstreamFailed,
                    format!("GitLab names no head commit of merge request !{iid} yet; nothing was created"),
                ));
            }
            let base = mr.diff_refs.map(|r| r.base_sha).filter(|s| Sha::is_valid(s));
            Some(ChangeFacts { head: mr.sha, base, open: mr.state == "opened" })
        }
    };
    Ok((policy, info.default_branch, issue, change))
}

async fn gitea<H: HttpClient>(
    settings: &Settings,
    http: &H,
    ask: &Ask<'_>,
    owner: &str,
    repo: &str,
) -> Result<Facts, ApiError> {
    let configured = settings.gitea()?.filter(|g| g.token.is_some());
    let Some((gitea, url)) = configured.and_then(|g| g.url.as_deref().map(|u| (g, u))) else {
        return Err(not_configured("GITEA_URL and GITEA_TOKEN", ask.forge));
    };
    let api = GiteaApi::new(url, TIMEOUT_MS);
    let client = GiteaClient::new(http, &api, gitea.token.as_ref());
    let repository = ask.repository;
    let fail = |field: &'static str, what: String| move |e: GiteaError| failed(field, &what, e.status(), &e);
    let info =
        client.repository(owner, repo).await.map_err(fail("repository", format!("repository `{repository}`")))?;
    let policy = client
        .raw_file(owner, repo, POLICY_PATH, &info.default_branch, MAX_POLICY_BYTES)
        .await
        .map_err(fail("repository", format!("{POLICY_PATH} of `{repository}`")))?;
    let issue = match ask.issue {
        None => None,
        Some(number) => {
            let issue =
                client.issue(owner, repo, number).await.map_err(fail("issue.number", format!("issue #{number}")))?;
            Some(IssueFacts {
                is_change_request: issue.is_pull_request(),
                title: issue.title,
                body: issue.body,
                url: issue.html_url,
                open: issue.state == "open",
                confidential: false,
            })
        }
    };
    let change = match &ask.change {
        None => None,
        Some((number, ..)) => {
            let pr = client
                .pull_request(owner, repo, *number)
                .await
                .map_err(fail("pullRequest.number", format!("pull request #{number}")))?;
            if !Sha::is_valid(&pr.head.sha) {
                return Err(ApiError::new(
                    ErrorCode::UpstreamFailed,
                    format!("the forge names no head commit of pull request #{number}; nothing was created"),
                ));
            }
            let base = Some(pr.base.sha).filter(|s| Sha::is_valid(s));
            Some(ChangeFacts { head: pr.head.sha, base, open: pr.state == "open" && !pr.merged })
        }
    };
    Ok((policy, info.default_branch, issue, change))
}
