//! `GET /api/v1/health`: version, configured capabilities (names only) and
//! a storage probe that writes, reads back and deletes a KV key.

use agent_zero_ports::KeyValue;
use http::StatusCode;
use serde_json::{Value, json};

use super::Context;
use crate::error::{ApiError, ErrorCode};
use crate::{Config, Host, PRODUCT, VERSION};

/// Model providers and the variable holding each one's credential.
const MODEL_CREDENTIALS: &[(&str, &str)] = &[
    ("openai", "OPENAI_API_KEY"),
    ("anthropic", "ANTHROPIC_API_KEY"),
    ("google", "GOOGLE_GENERATIVE_AI_API_KEY"),
    ("ai-gateway", "AI_GATEWAY_API_KEY"),
];

pub(super) async fn get<H: Host>(context: &Context<'_, H>) -> http::Response<Vec<u8>> {
    let storage = probe_storage(context).await;
    let mut body = json!({
        "status": if storage.is_ok() { "ok" } else { "degraded" },
        "name": PRODUCT,
        "version": VERSION,
        "host": context.host.name(),
        "capabilities": capabilities(context.config),
    });
    let status = match storage {
        Ok(()) => {
            body["storage"] = json!({ "ok": true });
            StatusCode::OK
        }
        Err(message) => {
            let error = ApiError::new(ErrorCode::StorageUnavailable, message.clone());
            body["storage"] = json!({ "ok": false, "message": message });
            body["error"] = error.body()["error"].clone();
            StatusCode::SERVICE_UNAVAILABLE
        }
    };
    crate::json_response(status, &body)
}

/// Writes a per-request key (Cloudflare allows one write per second per
/// key, so a shared key would throttle health checks), reads it back, then
/// deletes it.
async fn probe_storage<H: Host>(context: &Context<'_, H>) -> Result<(), String> {
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
        Some("custom") => ["AGENT_ZERO_SANDBOX_URL", "AGENT_ZERO_SANDBOX_TOKEN"]
            .into_iter()
            .filter(|n| !config.is_set(n))
            .collect(),
        _ => Vec::new(),
    };

    json!({
        "webhookSecret": {
            "configured": config.is_set("GITHUB_WEBHOOK_SECRET"),
            "variables": set(&["GITHUB_WEBHOOK_SECRET"]),
        },
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
