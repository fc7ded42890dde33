//! `GET /api/v1/doctor`: the deep checks `agent-zero doctor` cannot make
//! from outside, for token holders only:
//!
//! - `github-identity`: the configured credentials are asked who they are
//!   (`GET /user` for a token, `GET /app` with the App's JWT), as
//!   publication does;
//! - `model-reachable`: each configured provider's endpoint answers HTTP
//!   (`GET {base}/models`, sent without a credential, so nothing is spent);
//! - `sandbox-reachable`: the sandbox provider's endpoint answers HTTP
//!   (sent without its token);
//! - `store-atomic`: the store's own atomic operations, observed on a
//!   probe key (on Spin: whether a swap from absent is an upsert, as on its
//!   default SQLite store, and whether `increment` counts 1 then 2, which
//!   every creation relies on).
//!
//! An answer names variables and providers, never a value: no URL, token
//! or key is echoed, and upstream error text is not passed through.

use agent_zero_contracts::ModelProvider;
use agent_zero_github::IdentityCache;
use agent_zero_models::{BASE_URL_VARIABLE, built_providers, default_base_url, missing_adapter};
use agent_zero_ports::{HttpClient, HttpError, RequestTimeout};
use agent_zero_runner::ProviderKind;
use http::StatusCode;
use serde_json::{Value, json};

use super::RouteContext;
use crate::{Host, auth};

/// Bound on each probe: a doctor answers within a few seconds.
const PROBE_TIMEOUT_MS: u64 = 5_000;

/// Model providers by the variable holding their key (as health lists them).
const MODEL_KEYS: &[(ModelProvider, &str)] = &[
    (ModelProvider::OpenAi, "OPENAI_API_KEY"),
    (ModelProvider::Anthropic, "ANTHROPIC_API_KEY"),
    (ModelProvider::Google, "GOOGLE_GENERATIVE_AI_API_KEY"),
    (ModelProvider::AiGateway, "AI_GATEWAY_API_KEY"),
];

/// Sandbox providers whose platform API is fixed, and that API.
const SANDBOX_APIS: &[(&str, &str)] = &[("e2b", "https://api.e2b.app"), ("daytona", "https://app.daytona.io/api")];

fn check(name: &str, status: &str, detail: String, fix: Option<&str>) -> Value {
    json!({ "name": name, "status": status, "detail": detail, "fix": fix })
}

pub(super) async fn get<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    if let Err(e) = auth::principal(context.settings, request.headers()) {
        return e.into_response();
    }
    let mut checks = vec![github_identity(context).await];
    checks.push(model_reachable(context).await);
    checks.push(sandbox_reachable(context).await);
    checks.push(store_atomic(context).await);
    checks.extend(forges(context));
    crate::json_response(StatusCode::OK, &json!({ "checks": checks }))
}

/// One check per forge beside GitHub whose variables are set: its intake
/// is configured (a webhook secret, well-formed) and what the deployment
/// does with its deliveries today. No call is made: nothing uses the
/// forge's API yet (docs/forges.md).
fn forges<H: Host>(context: &RouteContext<'_, H>) -> Vec<Value> {
    let mut checks = Vec::new();
    match context.settings.gitlab() {
        Err(e) => checks.push(check("gitlab-intake", "fail", e.message, Some("fix the variable it names"))),
        Ok(None) => {}
        Ok(Some(gitlab)) => checks.push(match &gitlab.secrets {
            None => check(
                "gitlab-intake",
                "fail",
                "GitLab variables are set, but no webhook secret: /webhooks/gitlab answers 503".into(),
                Some("set GITLAB_WEBHOOK_SECRET (the hook's secret token) or GITLAB_WEBHOOK_SIGNING_TOKEN (whsec_...)"),
            ),
            Some(secrets) => check(
                "gitlab-intake",
                "pass",
                format!(
                    "/webhooks/gitlab checks {}; GITLAB_URL {}, API token {}; issues run (with GITLAB_TOKEN), other \
                     deliveries are recorded",
                    match (secrets.has_token(), secrets.signs()) {
                        (true, true) => "the secret token and the signature",
                        (true, false) => "the secret token",
                        _ => "the signature",
                    },
                    if gitlab.url == crate::forge_settings::DEFAULT_GITLAB_URL { "gitlab.com" } else { "set" },
                    if gitlab.token.is_some() { "set" } else { "not set" },
                ),
                None,
            ),
        }),
    }
    match context.settings.gitea() {
        Err(e) => checks.push(check("gitea-intake", "fail", e.message, Some("fix the variable it names"))),
        Ok(None) => {}
        Ok(Some(gitea)) => checks.push(match &gitea.secret {
            None => check(
                "gitea-intake",
                "fail",
                "Gitea variables are set, but no webhook secret: /webhooks/gitea answers 503".into(),
                Some("set GITEA_WEBHOOK_SECRET (the hook's secret)"),
            ),
            Some(_) => check(
                "gitea-intake",
                "pass",
                format!(
                    "/webhooks/gitea checks the signature (Gitea and Forgejo); GITEA_URL {}, API token {}; \
                     labelled issues run (with GITEA_URL and GITEA_TOKEN), other deliveries are recorded",
                    if gitea.url.is_some() { "set" } else { "not set" },
                    if gitea.token.is_some() { "set" } else { "not set" },
                ),
                None,
            ),
        }),
    }
    checks
}

async fn store_atomic<H: Host>(context: &RouteContext<'_, H>) -> Value {
    use agent_zero_ports::KeyValue as _;
    match context.host.kv().probe_atomicity().await {
        Ok(detail) => check("store-atomic", "pass", detail, None),
        Err(detail) => check(
            "store-atomic",
            "fail",
            detail,
            Some("use a key-value store whose wasi:keyvalue atomics are atomic (Spin's default SQLite store, Redis)"),
        ),
    }
}

async fn github_identity<H: Host>(context: &RouteContext<'_, H>) -> Value {
    const NAME: &str = "github-identity";
    let fix_credentials = "set GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY, or GITHUB_TOKEN (a user's token)";
    let github = match context.settings.github() {
        Ok(github) => github,
        Err(e) if e.field.as_deref() == Some("GITHUB_API_URL") => {
            return check(
                NAME,
                "fail",
                e.message,
                Some("fix GITHUB_API_URL (https://HOST/api/v3 for Enterprise Server)"),
            );
        }
        Err(e) => return check(NAME, "fail", redacted(context, &e.message), Some(fix_credentials)),
    };
    let Some(credentials) = &github.credentials else {
        return check(NAME, "fail", "no GitHub credentials are configured".into(), Some(fix_credentials));
    };
    let anonymous = github.anonymous(context.host.http());
    let cache = IdentityCache::default();
    match credentials.own_login(&anonymous, context.host.signer(), &cache, context.invocation.now_ms).await {
        Ok(login) => check(NAME, "pass", format!("GitHub knows the credentials as `{login}`"), None),
        Err(e) => check(
            NAME,
            "fail",
            redacted(context, &e.to_string()),
            Some("check that the credentials are current and GITHUB_API_URL points at their GitHub"),
        ),
    }
}

async fn model_reachable<H: Host>(context: &RouteContext<'_, H>) -> Value {
    const NAME: &str = "model-reachable";
    let settings = context.settings.variables();
    let mut targets: Vec<(ModelProvider, String, &str)> = Vec::new();
    if let Some(base) = settings.get(BASE_URL_VARIABLE) {
        targets.push((
            ModelProvider::OpenAiCompatible,
            base.trim().trim_end_matches('/').to_owned(),
            BASE_URL_VARIABLE,
        ));
    }
    // AGENT_ZERO_MODEL_BASE_URL overrides every provider's endpoint.
    for (kind, key) in MODEL_KEYS {
        if settings.is_set(key)
            && !settings.is_set(BASE_URL_VARIABLE)
            && let Some(base) = default_base_url(*kind)
        {
            targets.push((*kind, base.to_owned(), key));
        }
    }
    if targets.is_empty() {
        return check(
            NAME,
            "fail",
            "no model provider is configured".into(),
            Some("set a provider's key (OPENAI_API_KEY, ...)"),
        );
    }
    let mut reached = Vec::new();
    for (kind, base, variable) in &targets {
        let provider = kind.as_str();
        if missing_adapter(*kind).is_some() {
            let built = built_providers().join(", ");
            return check(
                NAME,
                "fail",
                format!("{provider} (from {variable}) is left out of this build (it has {built})"),
                Some("rebuild with the provider in AGENT_ZERO_PROVIDERS"),
            );
        }
        match probe(context, &format!("{base}/models")).await {
            Ok(status) => reached.push(format!("{provider} answered HTTP {status}")),
            Err(why) => {
                return check(
                    NAME,
                    "fail",
                    format!("{provider} (from {variable}) is unreachable: {why}"),
                    Some("check the provider's endpoint (AGENT_ZERO_MODEL_BASE_URL) and that the host may reach it"),
                );
            }
        }
    }
    check(NAME, "pass", reached.join("; "), None)
}

async fn sandbox_reachable<H: Host>(context: &RouteContext<'_, H>) -> Value {
    const NAME: &str = "sandbox-reachable";
    let settings = context.settings.variables();
    let Some(provider) = settings.get("AGENT_ZERO_SANDBOX_PROVIDER") else {
        return check(
            NAME,
            "fail",
            "no sandbox provider is configured".into(),
            Some("set AGENT_ZERO_SANDBOX_PROVIDER"),
        );
    };
    if let Some(kind) = ProviderKind::parse(provider.trim())
        && !kind.is_built()
    {
        let built = crate::services::built_sandboxes().join(", ");
        return check(
            NAME,
            "fail",
            format!("sandbox provider `{provider}` is left out of this build (it has {built})"),
            Some(
                "rebuild with the provider in AGENT_ZERO_PROVIDERS, or set AGENT_ZERO_SANDBOX_PROVIDER to one the build has",
            ),
        );
    }
    let (url, from) = match (settings.get("AGENT_ZERO_SANDBOX_URL"), SANDBOX_APIS.iter().find(|(p, _)| *p == provider))
    {
        (Some(url), _) => (url.trim().trim_end_matches('/').to_owned(), "AGENT_ZERO_SANDBOX_URL"),
        (None, Some((_, api))) => ((*api).to_owned(), "its platform API"),
        (None, None) => {
            return check(
                NAME,
                "fail",
                format!("sandbox provider `{provider}` needs AGENT_ZERO_SANDBOX_URL"),
                Some("set AGENT_ZERO_SANDBOX_URL"),
            );
        }
    };
    match probe(context, &url).await {
        Ok(status) => check(NAME, "pass", format!("{provider} ({from}) answered HTTP {status}"), None),
        Err(why) => check(
            NAME,
            "fail",
            format!("{provider} ({from}) is unreachable: {why}"),
            Some("check AGENT_ZERO_SANDBOX_URL and that the sandbox server is running and reachable from the host"),
        ),
    }
}

/// One credential-less GET: the status, or why there was none (the kind
/// of failure only, never upstream text that could carry the URL).
async fn probe<H: Host>(context: &RouteContext<'_, H>, url: &str) -> Result<u16, String> {
    let mut request = http::Request::get(url).body(Vec::new()).map_err(|_| "not a valid URL".to_owned())?;
    request.extensions_mut().insert(RequestTimeout(PROBE_TIMEOUT_MS));
    match context.host.http().send(request).await {
        Ok(response) => Ok(response.status().as_u16()),
        Err(HttpError::NotAllowed(_)) => Err("the host does not allow this outbound destination".into()),
        Err(HttpError::Timeout(ms)) => Err(format!("no answer within {ms} ms")),
        Err(HttpError::Transport(_)) => Err("the connection failed".into()),
        Err(_) => Err("the request failed".into()),
    }
}

fn redacted<H: Host>(context: &RouteContext<'_, H>, text: &str) -> String {
    auth::redact(text, auth::secrets(context.settings))
}

#[cfg(test)]
mod tests {
    use crate::Settings;
    use crate::test_host::TestHost;

    const TOKEN: &str = "tok-doctor-5d1e";
    const SANDBOX_URL: &str = "http://sandbox.internal.example:8080";

    fn doctor(settings: &Settings, authorization: Option<&str>) -> (u16, serde_json::Value) {
        let mut request = http::Request::get("/api/v1/doctor");
        if let Some(value) = authorization {
            request = request.header(http::header::AUTHORIZATION, value);
        }
        let response = TestHost::new().send(settings, request.body(Vec::new()).unwrap());
        (response.status().as_u16(), serde_json::from_slice(response.body()).unwrap())
    }

    #[test]
    fn token_holders_only() {
        let settings = Settings::from_pairs([("AGENT_ZERO_CONTROL_PLANE_TOKENS", "ops:tok-doctor-5d1e")]);
        let (status, body) = doctor(&settings, None);
        assert_eq!((status, body["error"]["code"].as_str()), (401, Some("unauthorized")), "{body}");
        let (status, body) = doctor(&Settings::from_pairs([("GITHUB_TOKEN", "ghp_x")]), Some("Bearer x"));
        assert_eq!(status, 503, "{body}");
    }

    #[test]
    fn each_fault_is_named_with_its_fix_and_no_value_is_echoed() {
        let settings = Settings::from_pairs([
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "ops:tok-doctor-5d1e"),
            ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
            ("AGENT_ZERO_SANDBOX_URL", SANDBOX_URL),
            ("OPENAI_API_KEY", "sk-doctor-secret"),
        ]);
        let (status, body) = doctor(&settings, Some(&format!("Bearer {TOKEN}")));
        assert_eq!(status, 200, "{body}");
        let checks = body["checks"].as_array().unwrap();
        let named = |name: &str| checks.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("{name}: {body}"));
        assert_eq!(named("github-identity")["status"], "fail");
        assert!(named("github-identity")["fix"].as_str().unwrap().contains("GITHUB_TOKEN"));
        // The test host refuses every outbound request.
        assert_eq!(named("model-reachable")["status"], "fail");
        assert!(
            named("model-reachable")["detail"].as_str().unwrap().contains("openai (from OPENAI_API_KEY)"),
            "{body}"
        );
        assert_eq!(named("sandbox-reachable")["status"], "fail");
        assert!(
            named("sandbox-reachable")["detail"].as_str().unwrap().contains("custom (AGENT_ZERO_SANDBOX_URL)"),
            "{body}"
        );
        let text = body.to_string();
        for value in [TOKEN, SANDBOX_URL, "sandbox.internal", "sk-doctor-secret", "api.openai.com"] {
            assert!(!text.contains(value), "{value} echoed: {text}");
        }
    }

    /// In a build without Vercel and Gemini (test.sh's reduced build),
    /// configuring them fails their checks with what the build has (the
    /// test host refuses every request, so a probe would have said
    /// "unreachable").
    #[cfg(not(any(feature = "sandbox-vercel", feature = "model-google")))]
    #[test]
    fn providers_left_out_of_the_build_fail_their_checks() {
        let settings = Settings::from_pairs([
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "ops:tok-doctor-5d1e"),
            ("AGENT_ZERO_SANDBOX_PROVIDER", "vercel"),
            ("VERCEL_TOKEN", "vercel-doctor-secret"),
            ("GOOGLE_GENERATIVE_AI_API_KEY", "google-doctor-secret"),
        ]);
        let host = TestHost::new();
        let authorization = format!("Bearer {TOKEN}");
        let ask = |path: &str| {
            let request = http::Request::get(path).header(http::header::AUTHORIZATION, &authorization);
            let response = host.send(&settings, request.body(Vec::new()).unwrap());
            (response.status().as_u16(), serde_json::from_slice::<serde_json::Value>(response.body()).unwrap())
        };
        let (status, body) = ask("/api/v1/doctor");
        assert_eq!(status, 200, "{body}");
        let checks = body["checks"].as_array().unwrap();
        let named = |name: &str| checks.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("{name}: {body}"));
        let sandboxes = crate::services::built_sandboxes().join(", ");
        assert_eq!(named("sandbox-reachable")["status"], "fail");
        assert_eq!(
            named("sandbox-reachable")["detail"],
            format!("sandbox provider `vercel` is left out of this build (it has {sandboxes})")
        );
        assert!(named("sandbox-reachable")["fix"].as_str().unwrap().contains("AGENT_ZERO_PROVIDERS"));
        let models = agent_zero_models::built_providers().join(", ");
        assert_eq!(named("model-reachable")["status"], "fail");
        assert_eq!(
            named("model-reachable")["detail"],
            format!("google (from GOOGLE_GENERATIVE_AI_API_KEY) is left out of this build (it has {models})")
        );
        let text = body.to_string();
        for value in ["vercel-doctor-secret", "google-doctor-secret"] {
            assert!(!text.contains(value), "{value} echoed: {text}");
        }
    }
}
