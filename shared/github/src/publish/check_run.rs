//! The `Agent Zero` check run on a pull request's head commit: one per task
//! (`external_id` = task id), created once and edited afterwards.

use agent_zero_evidence::CheckConclusion;
use agent_zero_ports::HttpClient;
use serde::Deserialize;
use serde_json::{Value, json};

use super::report::StepOutcome;
use super::rest::{Halt, Rest};
use crate::client::{encode, is_sha, repo_path};

/// The check run's name, as the reference app calls it.
pub const CHECK_RUN_NAME: &str = "Agent Zero";

/// What a check run says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckRunStatus {
    /// `in_progress`: the task is still moving.
    InProgress,
    /// `completed` with this conclusion (see [`agent_zero_evidence::outcome`]).
    Completed(CheckConclusion),
}

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
