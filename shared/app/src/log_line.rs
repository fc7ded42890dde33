//! The one JSON log line a host prints per request, per tick and per sweep
//! (Workers Logs on Cloudflare, stdout on Spin): what an operator filters on.
//!
//! Sans-IO: the host passes the ids, the outcome and the duration it
//! measured, and prints the string it gets back. Every line is one JSON
//! object on one line with `agent_zero` (the kind: `request`, `tick`,
//! `sweep`, `host`), `request_id`, `task_id` (when there is one), `seq` (a
//! tick's), `step`, `outcome` and `duration_ms`; a `message` when there is
//! something to say. Every text is redacted with the configured secrets
//! (`auth::redact`) before it is written: no line carries a secret.

use crate::{Invocation, Settings, TickOutcome, TickReport};

/// The response header that carries the invocation's request id.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// One log line, before it is rendered.
#[derive(Debug, Clone, Default)]
pub struct LogLine<'a> {
    /// `request`, `tick`, `sweep` or `host`.
    pub kind: &'a str,
    pub request_id: &'a str,
    pub task_id: Option<&'a str>,
    pub seq: Option<u64>,
    /// What ran: the route (`GET /api/v1/tasks/{id}`), or the state a tick
    /// left its task in.
    pub step: &'a str,
    /// How it ended: a status code, or a tick's outcome.
    pub outcome: &'a str,
    pub duration_ms: u64,
    /// Warnings and errors, joined; redacted like every other text.
    pub message: Option<&'a str>,
}

impl LogLine<'_> {
    /// The line as one JSON object, every text redacted with the settings'
    /// secrets.
    pub fn render(&self, settings: &Settings) -> String {
        let secrets = crate::auth::secrets(settings);
        let clean = |text: &str| crate::auth::redact(text, secrets);
        let mut line = serde_json::Map::new();
        line.insert("agent_zero".into(), clean(self.kind).into());
        line.insert("request_id".into(), clean(self.request_id).into());
        if let Some(task) = self.task_id {
            line.insert("task_id".into(), clean(task).into());
        }
        if let Some(seq) = self.seq {
            line.insert("seq".into(), seq.into());
        }
        line.insert("step".into(), clean(self.step).into());
        line.insert("outcome".into(), clean(self.outcome).into());
        line.insert("duration_ms".into(), self.duration_ms.into());
        if let Some(message) = self.message.filter(|m| !m.is_empty()) {
            line.insert("message".into(), clean(message).into());
        }
        serde_json::Value::Object(line).to_string()
    }
}

/// Sets `X-Request-Id` on `response` (every answer carries it, errors and
/// refusals included).
pub fn stamp(response: &mut http::Response<Vec<u8>>, request_id: &str) {
    if let Ok(value) = http::HeaderValue::from_str(request_id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
}

/// The line for one answered request: the route as the table names it
/// (the path itself when no route matched), the task it concerns (a task
/// route's id, or a created task's `Location`), and the status.
pub fn request_line(
    settings: &Settings,
    invocation: &Invocation,
    method: &http::Method,
    path: &str,
    response: &http::Response<Vec<u8>>,
    duration_ms: u64,
) -> String {
    let app_path = settings.base_path().ok().and_then(|base| crate::router::app_path(base, path).ok());
    let matched = app_path.and_then(|p| crate::router::resolve(method, p).ok());
    // Each handler is reached from one pattern.
    let pattern = matched.as_ref().and_then(|m| {
        crate::router::ROUTES.iter().find(|r| r.methods.iter().any(|(_, id)| *id == m.id)).map(|r| r.pattern)
    });
    let step = format!("{method} {}", pattern.unwrap_or(path));
    let task_from_path = matched
        .as_ref()
        .filter(|_| pattern.is_some_and(|p| p.contains("tasks/{id}")))
        .and_then(|m| m.params.first().cloned());
    let created = || {
        let location = response.headers().get(http::header::LOCATION)?.to_str().ok()?;
        let (_, id) = location.rsplit_once("/api/v1/tasks/")?;
        (!id.is_empty() && !id.contains('/')).then(|| id.to_owned())
    };
    // A delivery's answer names the task it created or found (`taskId`).
    let delivered = || {
        let webhook = matched.as_ref().is_some_and(|m| m.id == crate::RouteId::GithubWebhook);
        let answer: serde_json::Value =
            serde_json::from_slice(response.body()).ok().filter(|_| webhook && response.status().is_success())?;
        answer["taskId"].as_str().map(str::to_owned)
    };
    let task = task_from_path.or_else(created).or_else(delivered);
    LogLine {
        kind: "request",
        request_id: &invocation.request_id,
        task_id: task.as_deref(),
        seq: None,
        step: &step,
        outcome: response.status().as_str(),
        duration_ms,
        message: None,
    }
    .render(settings)
}

/// The line for one tick: its task and seq, the state it left the task in
/// (its step), how it ended, and its warnings or error. `request_id` is the
/// host's id for the invocation that ran it.
pub fn tick_line(
    settings: &Settings,
    request_id: &str,
    tick: &crate::Tick,
    result: &Result<TickReport, crate::RunTickError>,
    duration_ms: u64,
) -> String {
    let (step, outcome, message) = match result {
        Ok(report) => {
            let step = report.resident.as_ref().map_or("none", |r| r.state.as_str());
            let outcome = match &report.outcome {
                TickOutcome::Continue { .. } => "continue".to_owned(),
                TickOutcome::Waiting => "waiting".to_owned(),
                TickOutcome::Terminal(state) => format!("terminal:{}", state.as_str()),
                TickOutcome::Stale => "stale".to_owned(),
                TickOutcome::Busy { .. } => "busy".to_owned(),
            };
            (step, outcome, report.warnings.join("; "))
        }
        Err(error) => ("none", "error".to_owned(), error.to_string()),
    };
    LogLine {
        kind: "tick",
        request_id,
        task_id: Some(&tick.task_id),
        seq: Some(tick.expected_seq),
        step,
        outcome: &outcome,
        duration_ms,
        message: Some(&message),
    }
    .render(settings)
}

/// A line the host prints about itself (a failed hand-off, a sweep's
/// errors): `step` names what it was doing.
pub fn host_line(settings: &Settings, request_id: &str, step: &str, outcome: &str, message: &str) -> String {
    LogLine { kind: "host", request_id, step, outcome, message: Some(message), ..LogLine::default() }.render(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings::from_lookup(|name| match name {
            "GITHUB_WEBHOOK_SECRET" => Some("hook-secret-value".to_owned()),
            _ => None,
        })
    }

    #[test]
    fn a_request_line_names_the_route_the_task_and_the_status() {
        let settings = settings();
        let invocation = Invocation { now_ms: 0, request_id: "ab12".into() };
        let mut response = http::Response::builder().status(404).body(Vec::new()).unwrap();
        stamp(&mut response, &invocation.request_id);
        assert_eq!(response.headers()[REQUEST_ID_HEADER], "ab12");
        let line = request_line(&settings, &invocation, &http::Method::GET, "/api/v1/tasks/t-1/log", &response, 7);
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["agent_zero"], "request");
        assert_eq!(value["request_id"], "ab12");
        assert_eq!(value["task_id"], "t-1");
        assert_eq!(value["step"], "GET /api/v1/tasks/{id}/log");
        assert_eq!(value["outcome"], "404");
        assert_eq!(value["duration_ms"], 7);
        assert!(!line.contains('\n'));
    }

    #[test]
    fn every_answer_carries_the_request_id_errors_and_preflights_too() {
        let host = crate::test_host::TestHost::new();
        let settings = settings();
        for (method, path) in
            [("GET", "/nope"), ("DELETE", "/api/v1/health"), ("GET", "/api/v1/health"), ("OPTIONS", "/api/v1/tasks")]
        {
            let request = http::Request::builder().method(method).uri(path).body(Vec::new()).unwrap();
            let response = host.send(&settings, request);
            let id = response.headers().get(REQUEST_ID_HEADER).map(|v| v.to_str().unwrap().to_owned());
            assert!(id.is_some_and(|id| id.len() == 16), "{method} {path}: {:?}", response.headers());
        }
    }

    #[test]
    fn a_tick_line_has_the_task_and_seq_and_its_error_redacted() {
        let settings = settings();
        let tick = crate::Tick::new("t-3", 4);
        let result = Err(crate::RunTickError::Settings("bad value hook-secret-value".into()));
        let line = tick_line(&settings, "msg-1", &tick, &result, 12);
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!((value["agent_zero"].as_str(), value["request_id"].as_str()), (Some("tick"), Some("msg-1")));
        assert_eq!((value["task_id"].as_str(), value["seq"].as_u64()), (Some("t-3"), Some(4)));
        assert_eq!((value["outcome"].as_str(), value["duration_ms"].as_u64()), (Some("error"), Some(12)));
        assert!(line.starts_with(r#"{"agent_zero":"#), "the harness's marker: {line}");
        assert!(!line.contains("hook-secret-value"), "{line}");
    }

    #[test]
    fn a_created_task_is_read_from_location_and_no_secret_is_written() {
        let settings = settings();
        let invocation = Invocation { now_ms: 0, request_id: "cd34".into() };
        let response = http::Response::builder()
            .status(201)
            .header(http::header::LOCATION, "/api/v1/tasks/t-9")
            .body(Vec::new())
            .unwrap();
        let line = request_line(&settings, &invocation, &http::Method::POST, "/api/v1/tasks", &response, 1);
        let delivered = http::Response::builder().status(202).body(br#"{"taskId":"gh-d1","state":"queued"}"#.to_vec());
        let delivered =
            request_line(&settings, &invocation, &http::Method::POST, "/webhooks/github", &delivered.unwrap(), 1);
        let delivered: serde_json::Value = serde_json::from_str(&delivered).unwrap();
        assert_eq!(
            (delivered["task_id"].as_str(), delivered["step"].as_str()),
            (Some("gh-d1"), Some("POST /webhooks/github"))
        );
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["task_id"], "t-9");
        assert_eq!(value["step"], "POST /api/v1/tasks");
        let host = host_line(&settings, "cd34", "hand-off", "failed", "key hook-secret-value refused");
        assert!(!host.contains("hook-secret-value"), "{host}");
        let value: serde_json::Value = serde_json::from_str(&host).unwrap();
        assert_eq!(value["request_id"], "cd34");
    }
}
