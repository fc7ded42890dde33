//! `GET /api/v1/health`: version, configured capabilities (names only) and
//! a storage probe.
//!
//! Anonymous callers cost no write: their probe is one read of a key that is
//! never written (Cloudflare's free plan allows 1,000 writes a day, and
//! health is polled). A caller presenting a valid control-plane token gets
//! the full probe, which writes, reads back and deletes a key.

use agent_zero_ports::KeyValue;
use http::StatusCode;
use serde_json::{Value, json};

use super::RouteContext;
use crate::error::{ApiError, ErrorCode};
use crate::{Config, Host, PRODUCT, VERSION, auth};

/// Model providers and the variable holding each one's credential.
const MODEL_CREDENTIALS: &[(&str, &str)] = &[
    ("openai", "OPENAI_API_KEY"),
    ("anthropic", "ANTHROPIC_API_KEY"),
    ("google", "GOOGLE_GENERATIVE_AI_API_KEY"),
    ("ai-gateway", "AI_GATEWAY_API_KEY"),
];

/// The key the anonymous probe reads. Nothing writes it.
const READ_PROBE_KEY: &str = "health/read-probe";

/// Which storage probe ran, as the report names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// One read (anonymous callers).
    Read,
    /// Write, read back, delete (control-plane token holders).
    ReadWrite,
}

impl Probe {
    const fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::ReadWrite => "read-write",
        }
    }
}

pub(super) async fn get<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    // A missing, wrong or malformed credential is simply anonymous here:
    // health stays answerable, and the report says which probe ran.
    let probe =
        if auth::principal(context.settings, request.headers()).is_ok() { Probe::ReadWrite } else { Probe::Read };
    let storage = match probe {
        Probe::Read => read_storage(context).await,
        Probe::ReadWrite => probe_storage(context).await,
    };
    let mut body = json!({
        "status": if storage.is_ok() { "ok" } else { "degraded" },
        "name": PRODUCT,
        "version": VERSION,
        "host": context.host.name(),
        "capabilities": capabilities(context.settings.variables()),
        "platform": platform(context),
        // Malformed variables, by name (never a value): the routes that
        // need them answer 503 with the same message.
        "settings": {
            "problems": context.settings.problems().iter().map(|e| json!({
                "variable": e.field,
                "message": e.message,
            })).collect::<Vec<_>>(),
        },
    });
    let status = match storage {
        Ok(()) => {
            body["storage"] = json!({ "ok": true, "probe": probe.as_str() });
            StatusCode::OK
        }
        Err(message) => {
            let error = ApiError::new(ErrorCode::StorageUnavailable, message.clone());
            body["storage"] = json!({ "ok": false, "probe": probe.as_str(), "message": message });
            body["error"] = error.body()["error"].clone();
            StatusCode::SERVICE_UNAVAILABLE
        }
    };
    crate::json_response(status, &body)
}

/// The platform whose limits this deployment keeps inside
/// (`AGENT_ZERO_PLATFORM`, else the host's default), its published limits,
/// the longest a tick may take there, and what in the configuration cannot
/// fit (each naming its setting; task creation answers 503 with the same).
fn platform<H: Host>(context: &RouteContext<'_, H>) -> Value {
    let host = context.host.name();
    let Ok(run) = context.settings.run() else { return Value::Null };
    let Some(platform) = run.platform_on(host) else { return Value::Null };
    let calls = context
        .settings
        .model_selection(&agent_zero_agent::Policy::default())
        .map_or(1, |selection| crate::settings::model_calls_per_step(&selection));
    let allowed = context.host.allowed_outbound_hosts();
    let conflicts: Vec<Value> = crate::settings::platform_conflicts(context.settings, run, host, calls, allowed)
        .into_iter()
        .map(|(variable, message)| json!({ "variable": variable, "message": message }))
        .collect();
    json!({
        "name": platform.name(),
        "chosenBy": if run.platform.is_some() { "AGENT_ZERO_PLATFORM" } else { "default" },
        "limits": platform.limits(),
        "tickBudgetMs": run.wall_clock_on(host).map(|(_, tick)| tick),
        "modelTimeoutMs": run.model_timeout_on(host, calls),
        "checks": "started in the sandbox and polled by later ticks",
        "conflicts": conflicts,
    })
}

/// Reads a key nothing writes: the store answers, and nothing is spent
/// but one read.
async fn read_storage<H: Host>(context: &RouteContext<'_, H>) -> Result<(), String> {
    context.host.kv().get(READ_PROBE_KEY).await.map(|_| ()).map_err(|e| format!("read failed: {e}"))
}

/// Writes a per-request key (Cloudflare allows one write per second per
/// key, so a shared key would throttle health checks), reads it back, then
/// deletes it.
async fn probe_storage<H: Host>(context: &RouteContext<'_, H>) -> Result<(), String> {
    let kv = context.host.kv();
    let key = format!("health/probe/{}", context.invocation.request_id);
    let value = context.invocation.now_ms.to_string();
    kv.put(&key, value.as_bytes()).await.map_err(|e| format!("write failed: {e}"))?;
    let read = kv.get(&key).await.map_err(|e| format!("read failed: {e}"))?;
    kv.delete(&key).await.map_err(|e| format!("delete failed: {e}"))?;
    match read {
        Some(bytes) if bytes == value.as_bytes() => Ok(()),
        Some(_) => Err("read back a different value than was written".into()),
        None => Err("a written key was not readable".into()),
    }
}

/// Which capabilities are configured: variable and provider names only,
/// never a value.
fn forges(config: &Config) -> Value {
    use crate::forge_settings::{GITEA_VARIABLES, GITLAB_VARIABLES};
    // Issues run once the instance and its token are known (gitlab.com
    // when `GITLAB_URL` is not set; Gitea has no default instance).
    let report = |variables: &[&str], intake: &[&str], token: &str, runs: bool| -> Value {
        let set: Vec<&str> = variables.iter().copied().filter(|n| config.is_set(n)).collect();
        if set.is_empty() {
            return json!({ "configured": false });
        }
        json!({
            "configured": true,
            "intake": intake.iter().any(|n| config.is_set(n)),
            "apiToken": config.is_set(token),
            "runs": runs,
            "variables": set,
        })
    };
    json!({
        "gitlab": report(
            &GITLAB_VARIABLES,
            &["GITLAB_WEBHOOK_SECRET", "GITLAB_WEBHOOK_SIGNING_TOKEN"],
            "GITLAB_TOKEN",
            config.is_set("GITLAB_TOKEN")
        ),
        "gitea": report(
            &GITEA_VARIABLES,
            &["GITEA_WEBHOOK_SECRET"],
            "GITEA_TOKEN",
            config.is_set("GITEA_URL") && config.is_set("GITEA_TOKEN")
        ),
    })
}

fn capabilities(config: &Config) -> Value {
    let set = |names: &[&str]| -> Vec<String> {
        names.iter().filter(|n| config.is_set(n)).map(|n| (*n).to_owned()).collect()
    };

    let github = if config.is_set("GITHUB_APP_ID") && config.is_set("GITHUB_APP_PRIVATE_KEY") {
        Some("app")
    } else if config.is_set("GITHUB_TOKEN") {
        Some("token")
    } else {
        None
    };

    let mut model_providers: Vec<&str> =
        MODEL_CREDENTIALS.iter().filter(|(_, var)| config.is_set(var)).map(|(p, _)| *p).collect();
    if config.is_set("AGENT_ZERO_MODEL_BASE_URL") {
        model_providers.push("openai-compatible");
    }

    let sandbox = config.get("AGENT_ZERO_SANDBOX_PROVIDER");
    let sandbox_missing: Vec<&str> = match sandbox {
        Some("custom") => {
            ["AGENT_ZERO_SANDBOX_URL", "AGENT_ZERO_SANDBOX_TOKEN"].into_iter().filter(|n| !config.is_set(n)).collect()
        }
        _ => Vec::new(),
    };

    json!({
        "webhookSecret": {
            "configured": config.is_set("GITHUB_WEBHOOK_SECRET"),
            "variables": set(&["GITHUB_WEBHOOK_SECRET"]),
        },
        // Each forge beside GitHub, when any of its variables is set
        // (docs/forges.md): intake is live, the run path is GitHub's.
        "forges": forges(config),
        "githubCredentials": {
            "configured": github.is_some(),
            "kind": github,
            "variables": set(&["GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY", "GITHUB_TOKEN", "GITHUB_API_URL"]),
        },
        "modelProvider": {
            "configured": !model_providers.is_empty(),
            "providers": model_providers,
            "fallback": config.get("AGENT_ZERO_MODEL_FALLBACK_PROVIDER"),
        },
        "sandboxProvider": {
            "configured": sandbox.is_some() && sandbox_missing.is_empty(),
            "provider": sandbox,
            "missing": sandbox_missing,
        },
        "controlPlane": {
            "configured": config.is_set("AGENT_ZERO_CONTROL_PLANE_TOKENS"),
            "variables": set(&[
                "AGENT_ZERO_CONTROL_PLANE_TOKENS",
                "AGENT_ZERO_CONTROL_PLANE_REPOSITORIES",
                "AGENT_ZERO_CONTROL_PLANE_MODES",
                "AGENT_ZERO_CONTROL_PLANE_ORIGINS",
            ]),
        },
    })
}

#[cfg(test)]
mod tests {
    use agent_zero_ports::MemoryKvFault;

    use crate::Settings;
    use crate::test_host::TestHost;

    const TOKEN: &str = "tok-health-0c9a7d2b";

    fn health(host: &TestHost, settings: &Settings, authorization: Option<&str>) -> (u16, serde_json::Value) {
        let mut request = http::Request::get("/api/v1/health");
        if let Some(value) = authorization {
            request = request.header(http::header::AUTHORIZATION, value);
        }
        let response = host.send(settings, request.body(Vec::new()).unwrap());
        (response.status().as_u16(), serde_json::from_slice(response.body()).unwrap())
    }

    #[test]
    fn anonymous_health_costs_one_read_and_no_write() {
        let host = TestHost::new();
        let config = Settings::from_pairs([("AGENT_ZERO_CONTROL_PLANE_TOKENS", "ops:tok-health-0c9a7d2b")]);
        // Writes fail, reads work: anonymous health is still fine.
        host.kv.set_fault(Some(MemoryKvFault::Writes));
        let wrong = format!("Bearer {TOKEN}x");
        for authorization in [None, Some("Bearer "), Some(wrong.as_str())] {
            let before = host.kv.operations();
            let (status, body) = health(&host, &config, authorization);
            assert_eq!(status, 200, "{authorization:?}: {body}");
            assert_eq!(body["storage"], serde_json::json!({ "ok": true, "probe": "read" }));
            assert_eq!(host.kv.operations() - before, 1, "{authorization:?}: one read");
        }
        // Malformed access variables do not make health fail either.
        let malformed = Settings::from_pairs([("AGENT_ZERO_CONTROL_PLANE_TOKENS", "no-colon")]);
        assert_eq!(health(&host, &malformed, Some(&format!("Bearer {TOKEN}"))).0, 200);
        // A broken store is still 503.
        host.kv.set_fault(Some(MemoryKvFault::All));
        let (status, body) = health(&host, &config, None);
        assert_eq!((status, body["error"]["code"].as_str()), (503, Some("storage_unavailable")), "{body}");
        assert_eq!(body["storage"]["probe"], "read");
    }

    #[test]
    fn a_token_holder_gets_the_write_probe() {
        let host = TestHost::new();
        let config = Settings::from_pairs([("AGENT_ZERO_CONTROL_PLANE_TOKENS", "ops:tok-health-0c9a7d2b")]);
        let bearer = format!("Bearer {TOKEN}");
        let (status, body) = health(&host, &config, Some(&bearer));
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["storage"], serde_json::json!({ "ok": true, "probe": "read-write" }));
        assert!(host.kv.snapshot().is_empty(), "the probe deletes its key");
        host.kv.set_fault(Some(MemoryKvFault::Writes));
        let (status, body) = health(&host, &config, Some(&bearer));
        assert_eq!((status, body["storage"]["probe"].as_str()), (503, Some("read-write")), "{body}");
        assert!(body["storage"]["message"].as_str().unwrap_or_default().starts_with("write failed"), "{body}");
    }

    #[test]
    fn anonymous_listings_read_one_page_and_write_nothing() {
        let host = TestHost::new();
        let config = Settings::from_pairs(
            [
                ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "ops:tok-health-0c9a7d2b"),
                ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets"),
            ]
            .into_iter()
            .chain(crate::test_host::RUNNABLE),
        );
        let task = serde_json::json!({
            "repository": "acme/widgets",
            "trigger": "proactive",
            "pullRequest": { "number": 1, "headSha": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c" },
        });
        let create = http::Request::post("/api/v1/tasks")
            .header(http::header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&task).unwrap())
            .unwrap();
        let created = host.send(&config, create);
        assert_eq!(created.status(), 201, "{}", String::from_utf8_lossy(created.body()));
        host.kv.set_fault(Some(MemoryKvFault::Writes));
        for path in ["/api/v1/tasks", "/"] {
            let before = host.kv.operations();
            let response = host.send(&config, http::Request::get(path).body(Vec::new()).unwrap());
            assert_eq!(response.status(), 200, "{path}: {}", String::from_utf8_lossy(response.body()));
            assert_eq!(host.kv.operations() - before, 2, "{path}: one list and one read for the one row");
        }
    }
}
