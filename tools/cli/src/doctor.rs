//! `agent-zero doctor --url URL [--token T] [--webhook-secret S] [--json]`:
//! a deployment checked as a user would hit it. Each check passes, fails
//! with the fix to make, or is skipped with what would run it; any failure
//! makes the exit status non-zero. In text, each check's lines are printed
//! and flushed as it completes (a slow or hanging check shows what passed
//! before it); `--json` prints one document at the end. Values are never
//! printed: the deployment reports names only, and the CLI echoes neither
//! the token nor the secret.

use std::io::Write;

use serde_json::{Value, json};

use crate::api::{Answer, Api};
use crate::text::printable;
use crate::{EXIT_FAILED, EXIT_OK, Target};

/// GitHub's own `ping` delivery (octokit/webhooks `payload-examples`, as
/// in tests/fixtures/github-webhooks, MIT): what a new webhook receives first.
const PING: &str = include_str!("../../../tests/fixtures/github-webhooks/ping/payload.json");

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Pass,
    Fail,
    Skip,
}

impl Status {
    const fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Skip => "skip",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    pub(crate) name: &'static str,
    pub(crate) status: Status,
    pub(crate) detail: String,
    /// What to do about a failure.
    pub(crate) fix: Option<String>,
}

impl Check {
    fn pass(name: &'static str, detail: impl Into<String>) -> Self {
        Self { name, status: Status::Pass, detail: detail.into(), fix: None }
    }

    fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { name, status: Status::Fail, detail: detail.into(), fix: Some(fix.into()) }
    }

    fn skip(name: &'static str, detail: impl Into<String>) -> Self {
        Self { name, status: Status::Skip, detail: detail.into(), fix: None }
    }
}

/// Runs the checks; in text, each check's lines are written (and flushed)
/// as soon as it completes, so a slow check shows what passed before it.
/// `--json` writes one document at the end.
pub(crate) fn run(
    target: &Target,
    webhook_secret: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> Result<u8, String> {
    let api = Api::new(&target.url, target.token.as_deref())?;
    let mut written = Ok(());
    let checks = checks(&api, webhook_secret, &mut |check| {
        if !json && written.is_ok() {
            written = out.write_all(check_lines(check).as_bytes()).and_then(|()| out.flush());
        }
    });
    written.map_err(|e| e.to_string())?;
    let failed = checks.iter().any(|c| c.status == Status::Fail);
    let text = if json { json_report(&api, &checks) } else { summary_line(&checks) };
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| e.to_string())?;
    Ok(if failed { EXIT_FAILED } else { EXIT_OK })
}

/// Every check, in the order a deployment is set up; `done` is called with
/// each as it completes, before the next one starts.
pub(crate) fn checks(api: &Api, webhook_secret: Option<&str>, done: &mut dyn FnMut(&Check)) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut report = |check: Check| {
        done(&check);
        checks.push(check);
    };
    let health = match api.get("/api/v1/health", "application/json") {
        Ok(answer) => answer,
        Err(why) => {
            report(Check::fail(
                "reachable",
                why,
                format!("check that the deployment is running and that {} is its URL", api.base()),
            ));
            return checks;
        }
    };
    let body = match health.json() {
        Ok(body) if body.get("capabilities").is_some() => body,
        _ => {
            report(Check::fail(
                "reachable",
                format!("{} answered {} without an Agent Zero health report", api.base(), health.error_line()),
                "point --url at the deployment's base URL (the one serving /api/v1/health)",
            ));
            return checks;
        }
    };
    report(Check::pass("reachable", format!("{} answers", api.base())));
    report(health_check(&health, &body));
    report(storage_check(api, &body));
    let capabilities = &body["capabilities"];
    report(webhook_secret_check(capabilities));
    report(ping_check(api, webhook_secret));
    report(github_check(capabilities));
    report(model_check(capabilities));
    report(sandbox_check(capabilities));
    report(control_plane_check(api, capabilities));
    for check in deep_checks(api) {
        report(check);
    }
    checks
}

fn health_check(answer: &Answer, body: &Value) -> Check {
    let name = printable(body["name"].as_str().unwrap_or("agent-zero"));
    let version = printable(body["version"].as_str().unwrap_or("?"));
    let host = printable(body["host"].as_str().unwrap_or("?"));
    if answer.status == 200 && body["status"] == "ok" {
        Check::pass("health", format!("{name} {version} on {host}"))
    } else {
        Check::fail(
            "health",
            format!(
                "{name} {version} on {host} is {}: {}",
                printable(body["status"].as_str().unwrap_or("?")),
                answer.error_line()
            ),
            "see the storage line below",
        )
    }
}

fn storage_check(api: &Api, body: &Value) -> Check {
    let storage = &body["storage"];
    let probe = printable(storage["probe"].as_str().unwrap_or("?"));
    if storage["ok"] == true {
        let detail = if api.has_token() && probe == "read-write" {
            "written, read back and deleted a key".to_owned()
        } else if api.has_token() {
            format!("only a {probe} probe ran: the token was not accepted (see control-plane)")
        } else {
            format!("{probe} probe passed (give --token for the write probe)")
        };
        Check::pass("storage", detail)
    } else {
        Check::fail(
            "storage",
            format!("{probe} probe failed: {}", printable(storage["message"].as_str().unwrap_or("no reason given"))),
            "check the storage bindings: on Cloudflare the KV namespace `KV` and the `TASKS` Durable Object in wrangler.toml; \
             on Spin the `default` key-value store (key_value_stores in spin.toml)",
        )
    }
}

fn webhook_secret_check(capabilities: &Value) -> Check {
    if capabilities["webhookSecret"]["configured"] == true {
        Check::pass("webhook-secret", "GITHUB_WEBHOOK_SECRET is set")
    } else {
        Check::fail(
            "webhook-secret",
            "GITHUB_WEBHOOK_SECRET is not set: every webhook is refused",
            "set GITHUB_WEBHOOK_SECRET to the webhook's secret (`wrangler secret put GITHUB_WEBHOOK_SECRET`; \
             on Spin the `github_webhook_secret` variable)",
        )
    }
}

fn ping_check(api: &Api, secret: Option<&str>) -> Check {
    let Some(secret) = secret else { return Check::skip("signed-ping", "give --webhook-secret to send a signed ping") };
    let body = PING.as_bytes().to_vec();
    let signature = agent_zero_github::signature::sign(secret.as_bytes(), &body);
    let delivery = delivery_id();
    let headers = [
        ("content-type", "application/json"),
        ("x-github-event", "ping"),
        ("x-github-delivery", delivery.as_str()),
        ("x-hub-signature-256", signature.as_str()),
        ("user-agent", "GitHub-Hookshot/agent-zero-doctor"),
    ];
    let answer = match api.post_raw("/webhooks/github", &headers, body) {
        Ok(answer) => answer,
        Err(why) => return Check::fail("signed-ping", why, "check that /webhooks/github is reachable at --url"),
    };
    let pong = answer.json().ok().is_some_and(|v| v["pong"] == true);
    match answer.status {
        200 if pong => Check::pass("signed-ping", "a ping signed with the given secret was accepted"),
        401 => Check::fail(
            "signed-ping",
            format!("the signed ping was refused: {}", answer.error_line()),
            "the given secret is not the deployment's GITHUB_WEBHOOK_SECRET: set the same value on the deployment and on \
             the GitHub webhook",
        ),
        _ => Check::fail(
            "signed-ping",
            format!("the signed ping was not accepted: {}", answer.error_line()),
            "set GITHUB_WEBHOOK_SECRET on the deployment",
        ),
    }
}

/// A delivery id the webhook route accepts and no other delivery used.
fn delivery_id() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("doctor-{nanos:x}-{:x}", std::process::id())
}

fn github_check(capabilities: &Value) -> Check {
    let github = &capabilities["githubCredentials"];
    if github["configured"] == true {
        Check::pass(
            "github-credentials",
            format!("a GitHub {} is set", printable(github["kind"].as_str().unwrap_or("credential"))),
        )
    } else {
        Check::fail(
            "github-credentials",
            "no GitHub credentials: policies cannot be read and nothing is published",
            "set GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY (a GitHub App), or GITHUB_TOKEN",
        )
    }
}

fn model_check(capabilities: &Value) -> Check {
    let model = &capabilities["modelProvider"];
    let providers: Vec<String> =
        model["providers"].as_array().into_iter().flatten().filter_map(Value::as_str).map(printable).collect();
    if model["configured"] == true {
        let fallback = model["fallback"].as_str().map(|f| format!(", fallback {}", printable(f))).unwrap_or_default();
        Check::pass("model-provider", format!("{}{fallback}", providers.join(", ")))
    } else {
        Check::fail(
            "model-provider",
            "no model provider credential is set: every model call fails",
            "set OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_GENERATIVE_AI_API_KEY or AI_GATEWAY_API_KEY, or \
             AGENT_ZERO_MODEL_BASE_URL (+ OPENAI_COMPATIBLE_API_KEY) for an OpenAI-compatible server",
        )
    }
}

fn sandbox_check(capabilities: &Value) -> Check {
    let sandbox = &capabilities["sandboxProvider"];
    let missing: Vec<String> =
        sandbox["missing"].as_array().into_iter().flatten().filter_map(Value::as_str).map(printable).collect();
    match sandbox["provider"].as_str() {
        Some(provider) if sandbox["configured"] == true => Check::pass("sandbox-provider", printable(provider)),
        Some(provider) => Check::fail(
            "sandbox-provider",
            format!("sandbox provider `{}` is missing {}", printable(provider), missing.join(", ")),
            format!("set {}", missing.join(" and ")),
        ),
        None => Check::fail(
            "sandbox-provider",
            "AGENT_ZERO_SANDBOX_PROVIDER is not set: no check can run, so nothing is ever verified",
            "set AGENT_ZERO_SANDBOX_PROVIDER (custom, e2b, daytona, vercel or cloudflare) and its variables",
        ),
    }
}

fn control_plane_check(api: &Api, capabilities: &Value) -> Check {
    let configured = capabilities["controlPlane"]["configured"] == true;
    if !api.has_token() {
        return if configured {
            Check::skip("control-plane", "AGENT_ZERO_CONTROL_PLANE_TOKENS is set; give --token to check yours")
        } else {
            Check::fail(
                "control-plane",
                "AGENT_ZERO_CONTROL_PLANE_TOKENS is not set: the task API refuses every change",
                "set AGENT_ZERO_CONTROL_PLANE_TOKENS to `name:token,...`",
            )
        };
    }
    match api.get("/api/v1/audit?limit=1", "application/json") {
        Ok(answer) if answer.is_success() => Check::pass("control-plane", "the token is accepted"),
        Ok(answer) if answer.status == 401 => Check::fail(
            "control-plane",
            format!("the token was refused: {}", answer.error_line()),
            "use a token listed in the deployment's AGENT_ZERO_CONTROL_PLANE_TOKENS (`name:token`)",
        ),
        Ok(answer) => Check::fail(
            "control-plane",
            answer.error_line(),
            "set AGENT_ZERO_CONTROL_PLANE_TOKENS to `name:token,...` (the error names the variable to fix)",
        ),
        Err(why) => Check::fail("control-plane", why, "check the deployment's URL"),
    }
}

/// The deployment's own deep checks (`GET /api/v1/doctor`, token holders):
/// GitHub identity, model and sandbox reachability, and each configured
/// forge's intake settings (GitLab, Gitea/Forgejo), each without a value.
fn deep_checks(api: &Api) -> Vec<Check> {
    const NAMES: &[&str] =
        &["github-identity", "gitlab-intake", "gitea-intake", "model-reachable", "sandbox-reachable"];
    if !api.has_token() {
        return vec![Check::skip("deep-checks", "give --token for GitHub identity, model and sandbox reachability")];
    }
    let answer = match api.get("/api/v1/doctor", "application/json") {
        Ok(answer) => answer,
        Err(why) => return vec![Check::fail("deep-checks", why, "check the deployment's URL")],
    };
    if answer.status == 404 {
        return vec![Check::skip("deep-checks", "this deployment has no /api/v1/doctor route (an older version)")];
    }
    let Some(items) = answer.json().ok().and_then(|v| v["checks"].as_array().cloned()) else {
        return vec![Check::fail("deep-checks", answer.error_line(), "see the control-plane line")];
    };
    items
        .iter()
        .filter_map(|item| {
            let name = NAMES.iter().find(|n| item["name"] == **n)?;
            let detail = printable(item["detail"].as_str().unwrap_or_default());
            Some(match item["status"].as_str() {
                Some("pass") => Check::pass(name, detail),
                Some("skip") => Check::skip(name, detail),
                _ => Check::fail(name, detail, printable(item["fix"].as_str().unwrap_or("see the detail"))),
            })
        })
        .collect()
}

/// The lines of one check: its status, name and detail, and the fix.
fn check_lines(check: &Check) -> String {
    let status = check.status.as_str().to_ascii_uppercase();
    let mut text = format!("{status:<4}  {:<18} {}\n", check.name, check.detail);
    if let Some(fix) = &check.fix {
        text.push_str(&format!("      fix: {fix}\n"));
    }
    text
}

/// The last line of the text report.
fn summary_line(checks: &[Check]) -> String {
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    if failed == 0 { "all checks passed\n".to_owned() } else { format!("{failed} check(s) failed\n") }
}

fn json_report(api: &Api, checks: &[Check]) -> String {
    let items: Vec<Value> = checks
        .iter()
        .map(|c| json!({ "name": c.name, "status": c.status.as_str(), "detail": c.detail, "fix": c.fix }))
        .collect();
    let ok = checks.iter().all(|c| c.status != Status::Fail);
    format!("{}\n", json!({ "url": api.base(), "ok": ok, "checks": items }))
}
