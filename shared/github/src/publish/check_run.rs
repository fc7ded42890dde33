//! The `Agent Zero` check run on a pull request's head commit: one per task
//! (`external_id` = task id), created once and edited afterwards.
//!
//! Only a GitHub App's installation may write check runs (GitHub answers
//! anyone else 403, "You must authenticate via a GitHub App"). A deployment
//! with a token (`GITHUB_TOKEN`) publishes a commit status instead, under
//! the same name as its `context`: a state and a line of text, no summary,
//! no annotations. A status has no `neutral`, so an advisory outcome (a
//! review's findings, unless `checkRun.blocking` makes them fail it) is
//! `success` with the outcome named in its description, and one that waits
//! on a person (`action_required`) is `pending` until the run concludes.

use agent_zero_ports::HttpClient;
use serde::Deserialize;
use serde_json::{Value, json};

use agent_zero_forges::publication::{CHECK_RUN_NAME, CheckRunStatus, status_description, status_state};

use super::StepOutcome;
use super::rest::{Halt, Rest};
use crate::client::{Caller, encode, is_sha, repo_path};

#[derive(Deserialize)]
struct CheckRunList {
    check_runs: Vec<CheckRunEntry>,
}

#[derive(Deserialize)]
struct CheckRunEntry {
    id: u64,
    #[serde(default)]
    external_id: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
}

/// Creates or updates the task's check run on `head_sha`.
#[allow(clippy::too_many_arguments)] // one call site per host; the fields are the API's
pub(crate) async fn upsert<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    owner: &str,
    repo: &str,
    head_sha: &str,
    task_id: &str,
    status: CheckRunStatus,
    title: &str,
    summary: &str,
) -> Result<StepOutcome, Halt> {
    if !is_sha(head_sha) {
        return Ok(StepOutcome::failed("the pull request head is not a commit sha"));
    }
    let repo_path = repo_path(owner, repo)?;
    if rest.client.caller() != Caller::Installation {
        return commit_status(rest, &repo_path, head_sha, status, title).await;
    }
    let mut body = json!({
        "name": CHECK_RUN_NAME,
        "external_id": task_id,
        "output": {"title": title, "summary": summary},
    });
    match status {
        CheckRunStatus::InProgress => body["status"] = Value::from("in_progress"),
        CheckRunStatus::Completed(conclusion) => {
            body["status"] = Value::from("completed");
            body["conclusion"] = Value::from(conclusion.as_str());
        }
    }
    if let Some(id) = existing(rest, &repo_path, head_sha, task_id).await? {
        let url = rest.url(&format!("/repos/{repo_path}/check-runs/{id}"));
        let run: CheckRunEntry = rest.json("update check run", http::Method::PATCH, &url, Some(&body)).await?;
        return Ok(StepOutcome::Updated { url: run.html_url });
    }
    body["head_sha"] = Value::from(head_sha);
    let url = rest.url(&format!("/repos/{repo_path}/check-runs"));
    let run: CheckRunEntry = rest.json("create check run", http::Method::POST, &url, Some(&body)).await?;
    Ok(StepOutcome::Created { url: run.html_url })
}

/// The id of this task's check run on `head_sha`, if one exists (`filter=all`:
/// the default `latest` hides an older task's run behind a newer one). A listing
/// GitHub refuses (other than a rate limit) counts as none: a second run
/// is better than no report.
async fn existing<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    repo_path: &str,
    head_sha: &str,
    task_id: &str,
) -> Result<Option<u64>, Halt> {
    let url = rest.url(&format!(
        "/repos/{repo_path}/commits/{head_sha}/check-runs?check_name={}&filter=all&per_page=100",
        encode(CHECK_RUN_NAME, false)
    ));
    let response = rest.call("list check runs", http::Method::GET, &url, None).await?;
    if !response.status().is_success() {
        return Ok(None);
    }
    let Ok(list) = rest.decode::<CheckRunList>("list check runs", response) else {
        return Ok(None);
    };
    Ok(list.check_runs.into_iter().find(|run| run.external_id.as_deref() == Some(task_id)).map(|run| run.id))
}

/// `POST /repos/{o}/{r}/statuses/{sha}` with context [`CHECK_RUN_NAME`]:
/// GitHub shows the newest status of each context, so a later one replaces
/// it on the pull request without an id to update.
async fn commit_status<H: HttpClient>(
    rest: &Rest<'_, '_, H>,
    repo_path: &str,
    head_sha: &str,
    status: CheckRunStatus,
    title: &str,
) -> Result<StepOutcome, Halt> {
    let body = json!({
        "state": status_state(status),
        "description": status_description(status, title),
        "context": CHECK_RUN_NAME,
    });
    let url = rest.url(&format!("/repos/{repo_path}/statuses/{head_sha}"));
    let _: Value = rest.json("create commit status", http::Method::POST, &url, Some(&body)).await?;
    Ok(StepOutcome::Created { url: None })
}
