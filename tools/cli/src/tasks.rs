//! `agent-zero tasks list|show|approve|reject|watch|evidence|overview`: the
//! task API, with its answers shown as given and its errors as one line
//! each; `watch` shows a running task's progress as it happens (and
//! `review`, `fix` and `tasks create --watch` follow the task they create
//! with it); `overview` prints the dashboard's counters.

use std::fmt::Write as _;
use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use agent_zero_contracts::encode_component as encode;

use crate::api::{Answer, Api};
use crate::text::{printable, printable_block};
use crate::{EXIT_FAILED, EXIT_NEEDS_HUMAN, EXIT_OK, Target, TasksCommand};

pub(crate) fn run(target: &Target, command: TasksCommand, out: &mut dyn Write) -> Result<u8, String> {
    let api = Api::new(&target.url, target.token.as_deref())?;
    let text = match command {
        TasksCommand::List { repository, state, limit, cursor, json } => {
            let mut query = Vec::new();
            if let Some(repository) = &repository {
                query.push(format!("repository={}", encode(repository)));
            }
            if let Some(state) = &state {
                query.push(format!("state={}", encode(state)));
            }
            if let Some(limit) = limit {
                query.push(format!("limit={limit}"));
            }
            if let Some(cursor) = &cursor {
                query.push(format!("cursor={}", encode(cursor)));
            }
            let path = if query.is_empty() {
                "/api/v1/tasks".to_owned()
            } else {
                format!("/api/v1/tasks?{}", query.join("&"))
            };
            let answer = expect_success(api.get(&path, "application/json")?)?;
            if json { pretty(&answer)? } else { list_text(&answer.json()?) }
        }
        TasksCommand::Show { id, json } => {
            let answer = expect_success(api.get(&format!("/api/v1/tasks/{}", encode(&id)), "application/json")?)?;
            if json { pretty(&answer)? } else { show_text(&answer.json()?) }
        }
        TasksCommand::Approve { id, comment } => decide(&api, &id, "approve", comment)?,
        TasksCommand::Reject { id, comment } => decide(&api, &id, "reject", comment)?,
        TasksCommand::Watch { id, follow } => {
            let (timeout, interval) = (Duration::from_secs(follow.timeout), Duration::from_millis(follow.interval_ms));
            return watch(&api, &id, timeout, interval, out);
        }
        TasksCommand::Overview { repository, json } => {
            let path = match &repository {
                Some(repository) => format!("/api/v1/overview?repository={}", encode(repository)),
                None => "/api/v1/overview".to_owned(),
            };
            let answer = expect_success(api.get(&path, "application/json")?)?;
            if json { pretty(&answer)? } else { overview_text(&answer.json()?) }
        }
        // Routed before (it reads a body file from the working directory).
        TasksCommand::Create(_) => return Err("`tasks create` is run by start::create".into()),
        TasksCommand::Evidence { id, format } => {
            let path = format!("/api/v1/tasks/{}/evidence.{}", encode(&id), format.suffix());
            let answer = expect_success(api.get(&path, "*/*")?)?;
            String::from_utf8(answer.body).map_err(|_| "the evidence is not UTF-8".to_owned())?
        }
    };
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(EXIT_OK)
}

/// States a task stops in (until a person decides, for `needs-human`).
const STOPPED: &[&str] = &["completed", "failed", "needs-human", "ignored"];

/// Reads the task every `interval` until it stops, printing each new event
/// as it arrives and, between events, nothing: the elapsed time is on each
/// line. The cost line closes it.
pub(crate) fn watch(
    api: &Api,
    id: &str,
    timeout: Duration,
    interval: Duration,
    out: &mut dyn Write,
) -> Result<u8, String> {
    let started = Instant::now();
    let mut shown = 0;
    loop {
        let answer = expect_success(api.get(&format!("/api/v1/tasks/{}", encode(id)), "application/json")?)?;
        let task = answer.json()?;
        let (text, count) = progress(&task, shown, started.elapsed());
        shown = count;
        out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| e.to_string())?;
        let state = task["state"].as_str().unwrap_or_default();
        if STOPPED.contains(&state) {
            let mut end = format!("{} is {}\n", printable(id), printable(state));
            if let Some(cost) = cost_text(&task["cost"]) {
                end.push_str(&cost);
            }
            out.write_all(end.as_bytes()).map_err(|e| e.to_string())?;
            return Ok(watch_status(state));
        }
        if started.elapsed() >= timeout {
            return Err(format!(
                "{} is still {} after {} s; follow it with `agent-zero tasks watch {0}`",
                printable(id),
                printable(state),
                timeout.as_secs()
            ));
        }
        std::thread::sleep(interval);
    }
}

/// The exit status for the state a followed task stopped in, the
/// reference's: 0 `completed`; 2 `needs-human` (a person decides next);
/// 1 `failed`, and `ignored` too: the repository's policy declined the
/// task, so nothing the caller asked for ran (a refusal, not a success).
pub(crate) fn watch_status(state: &str) -> u8 {
    match state {
        "completed" => EXIT_OK,
        "needs-human" => EXIT_NEEDS_HUMAN,
        _ => EXIT_FAILED,
    }
}

/// The overview's counters on one line each (`1000+` when a counter is a
/// lower bound).
pub(crate) fn overview_text(overview: &Value) -> String {
    let count = |name: &str| {
        let c = &overview[name];
        format!("{}{}", c["count"].as_u64().unwrap_or(0), if c["more"] == true { "+" } else { "" })
    };
    let scope = overview["repository"].as_str().map_or_else(|| "every repository".to_owned(), printable);
    format!(
        "{scope}
running      {}
queued       {}
needs-human  {}
failed       {} since {}
",
        count("running"),
        count("queued"),
        count("needsHuman"),
        count("failedLastDay"),
        printable(overview["failedSince"].as_str().unwrap_or("-")),
    )
}

/// The events of `task` after the first `shown`, one line each with the
/// time waited so far; and how many are shown now.
pub(crate) fn progress(task: &Value, shown: usize, waited: Duration) -> (String, usize) {
    let events = task["events"].as_array().cloned().unwrap_or_default();
    let mut text = String::new();
    for event in events.iter().skip(shown) {
        let _ = writeln!(
            text,
            "[{:>4} s] {:<12} {}",
            waited.as_secs(),
            printable(event["state"].as_str().unwrap_or_default()),
            printable(event["message"].as_str().unwrap_or_default())
        );
    }
    (text, events.len().max(shown))
}

/// What the run cost its host, on one line (`cost` of the task API).
pub(crate) fn cost_text(cost: &Value) -> Option<String> {
    let n = |name: &str| cost[name].as_u64().unwrap_or(0);
    if !cost.is_object() {
        return None;
    }
    let dollars = cost["modelCostUsd"].as_f64().map(|d| format!(", ${d:.4}")).unwrap_or_default();
    Some(format!(
        "cost: {} ticks, {} storage ops ({} atomic, {} lease), {} subrequests ({} GitHub, {} model, {} sandbox), \
         sandbox {:.1} s, model {} in / {} out tokens{dollars}\n",
        n("ticks"),
        n("storageOps"),
        n("kvAtomic"),
        n("leaseOps"),
        n("subrequests"),
        n("githubRequests"),
        n("modelRequests"),
        n("sandboxRequests"),
        n("sandboxMs") as f64 / 1000.0,
        n("modelInputTokens"),
        n("modelOutputTokens"),
    ))
}

/// The answer when it is 2xx, else the API's error line.
pub(crate) fn expect_success(answer: Answer) -> Result<Answer, String> {
    if answer.is_success() { Ok(answer) } else { Err(answer.error_line()) }
}

fn pretty(answer: &Answer) -> Result<String, String> {
    let value = answer.json()?;
    Ok(format!("{}\n", serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?))
}

/// Decides a waiting task. An approval names the decision it covers: the
/// task is read first, its pending files are printed, and their digest
/// goes with the approval, so a decision a repair replaced in between is
/// refused (409) rather than approved unseen.
fn decide(api: &Api, id: &str, decision: &str, comment: Option<String>) -> Result<String, String> {
    let mut body = json!({ "decision": decision });
    if let Some(comment) = comment {
        body["comment"] = json!(comment);
    }
    let mut text = String::new();
    if decision == "approve" {
        let task = expect_success(api.get(&format!("/api/v1/tasks/{}", encode(id)), "application/json")?)?.json()?;
        let pending = &task["pendingDecision"];
        if let Some(digest) = pending["decisionDigest"].as_str() {
            body["decisionDigest"] = json!(digest);
            let paths: Vec<String> = pending["changes"]
                .as_array()
                .map(|changes| changes.iter().filter_map(|c| c["path"].as_str()).map(printable).collect())
                .unwrap_or_default();
            text.push_str(&format!("approving {} ({}): {}\n", printable(digest), paths.len(), paths.join(", ")));
        }
        // Why it waits, and what the approval does there (writes the files
        // above, accepts the conclusion, or retries).
        if let (Some(code), Some(approving)) = (pending["stop"]["code"].as_str(), pending["approving"].as_str()) {
            text.push_str(&format!("stopped at {}: approving {}\n", printable(code), printable(approving)));
        }
    }
    let answer = expect_success(api.post_json(&format!("/api/v1/approvals/{}", encode(id)), &body)?)?;
    let value = answer.json()?;
    let state = value["state"].as_str().or_else(|| value["task"]["state"].as_str()).unwrap_or("?");
    let verb = if decision == "approve" { "approved" } else { "rejected" };
    text.push_str(&format!("{} {verb}; now {}\n", printable(id), printable(state)));
    Ok(text)
}

/// One row per task: id, state, verdict, repository, title.
pub(crate) fn list_text(page: &Value) -> String {
    let items = page["items"].as_array().cloned().unwrap_or_default();
    let mut text = String::new();
    if items.is_empty() {
        text.push_str("no tasks\n");
    }
    for item in &items {
        let field = |name: &str| printable(item[name].as_str().unwrap_or("-"));
        let verified = if item["verified"] == true { " verified" } else { "" };
        let _ = writeln!(
            text,
            "{}  {}  {}{verified}  {}  {}",
            field("id"),
            field("state"),
            field("verdict"),
            field("repository"),
            field("title")
        );
    }
    if let Some(cursor) = page["nextCursor"].as_str() {
        let _ = writeln!(text, "more: --cursor {}", printable(cursor));
    }
    text
}

/// A task: its summary, then each event, then the result's summary.
pub(crate) fn show_text(task: &Value) -> String {
    let field = |name: &str| printable(task[name].as_str().unwrap_or("-"));
    let mut text = format!(
        "{}  {}  {} on {} ({}, mode {})\n",
        field("id"),
        field("state"),
        field("trigger"),
        field("repository"),
        field("source"),
        field("mode")
    );
    for event in task["events"].as_array().into_iter().flatten() {
        let _ = writeln!(
            text,
            "  {}  {:<12} {}",
            printable(event["timestamp"].as_str().unwrap_or_default()),
            printable(event["state"].as_str().unwrap_or_default()),
            printable(event["message"].as_str().unwrap_or_default())
        );
    }
    if let Some(failure) = task["failure"].as_str() {
        let _ = writeln!(text, "failure: {}", printable(failure));
    }
    if let Some(cost) = cost_text(&task["cost"]) {
        text.push_str(&cost);
    }
    let result = &task["result"];
    if result.is_object() {
        let _ = writeln!(
            text,
            "result: {} verified={} {}",
            printable(result["verdict"].as_str().unwrap_or("-")),
            result["verified"] == true,
            printable_block(result["summary"].as_str().unwrap_or_default())
        );
    }
    text
}
