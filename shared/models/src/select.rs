//! Provider selection from operator configuration and the policy's `model`.
//!
//! The policy names a provider and a model, and may state prices; it can
//! never name an endpoint or a credential. Those come only from operator
//! variables, read through a lookup function (the host's env/secrets).

use agent_zero_ports::{Clock, HttpClient};

use crate::config::{ConfigError, Pricing, ProviderConfig, default_base_url};
use crate::{FallbackProvider, HttpProvider, credential_variables, missing_adapter};
use agent_zero_contracts::ModelPolicy;
use agent_zero_contracts::ModelProvider;
use agent_zero_ports::Secret;

/// Overrides the policy provider's endpoint; `openai-compatible` always uses it.
pub const BASE_URL_VARIABLE: &str = "AGENT_ZERO_MODEL_BASE_URL";
pub const FALLBACK_PROVIDER_VARIABLE: &str = "AGENT_ZERO_MODEL_FALLBACK_PROVIDER";
pub const FALLBACK_MODEL_VARIABLE: &str = "AGENT_ZERO_MODEL_FALLBACK_MODEL";
/// Names the model of a policy that names none, as in the reference.
pub const MODEL_VARIABLE: &str = "AGENT_ZERO_MODEL";

/// The model a policy without `model.name` runs: the operator's
/// `AGENT_ZERO_MODEL` when set and not blank, else the reference's `gpt-5`.
pub fn default_model(mut env: impl FnMut(&str) -> Option<String>) -> String {
    env(MODEL_VARIABLE)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| agent_zero_contracts::DEFAULT_MODEL.to_owned())
}

/// The primary provider and the operator's optional fallback.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSelection {
    pub primary: ProviderConfig,
    /// Priced as unknown: the policy's prices are for the policy's model.
    pub fallback: Option<ProviderConfig>,
}

impl ModelSelection {
    /// The provider to call: the primary, falling back when it is unavailable.
    pub fn provider<'a, C: HttpClient, K: Clock>(
        &'a self,
        http: &'a C,
        clock: &'a K,
    ) -> FallbackProvider<HttpProvider<'a, C, K>, HttpProvider<'a, C, K>> {
        FallbackProvider::new(
            HttpProvider::new(&self.primary, http, clock),
            self.fallback.as_ref().map(|f| HttpProvider::new(f, http, clock)),
        )
    }
}

/// Selects the model providers for the policy's `model` (a policy naming
/// no model runs [`default_model`]). `env` answers operator variables;
/// empty or blank values count as unset.
pub fn select_models(
    policy: &ModelPolicy,
    mut env: impl FnMut(&str) -> Option<String>,
) -> Result<ModelSelection, ConfigError> {
    let name = policy.name.clone().unwrap_or_else(|| default_model(&mut env));
    let mut var = |name: &str| env(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    let base_url = var(BASE_URL_VARIABLE).map(|u| check_base_url(&u)).transpose()?;

    let kind = policy.provider;
    built(kind, "model.provider")?;
    let pricing = pricing(policy)?;
    let mut primary = configure(kind, &name, "model.name", base_url.as_deref(), &mut var)?;
    if let Some(url) = base_url.as_ref().filter(|_| !kind.needs_subprocess()) {
        primary.base_url.clone_from(url);
    }
    primary.pricing = pricing;

    let fallback = match (var(FALLBACK_PROVIDER_VARIABLE), var(FALLBACK_MODEL_VARIABLE)) {
        (None, None) => None,
        (Some(provider), Some(model)) => {
            let kind = ModelProvider::parse(&provider)
                .map_err(|_| ConfigError::UnknownProvider { field: FALLBACK_PROVIDER_VARIABLE, value: provider })?;
            if kind.needs_subprocess() {
                return Err(ConfigError::CliFallback { provider: kind });
            }
            built(kind, FALLBACK_PROVIDER_VARIABLE)?;
            Some(configure(kind, &model, FALLBACK_MODEL_VARIABLE, base_url.as_deref(), &mut var)?)
        }
        _ => return Err(ConfigError::IncompleteFallback),
    };
    Ok(ModelSelection { primary, fallback })
}

/// Refuses a provider whose adapter this build leaves out, naming `field`.
fn built(provider: ModelProvider, field: &'static str) -> Result<(), ConfigError> {
    match missing_adapter(provider) {
        Some(_) => Err(ConfigError::NotBuilt { field, provider, built: crate::built_providers().join(", ") }),
        None => Ok(()),
    }
}

fn configure(
    kind: ModelProvider,
    model: &str,
    field: &'static str,
    base_url: Option<&str>,
    var: &mut impl FnMut(&str) -> Option<String>,
) -> Result<ProviderConfig, ConfigError> {
    let model = check_model_name(kind, model, field)?;
    let mut api_key = None;
    for name in credential_variables(kind) {
        if let Some(value) = var(name) {
            if !value.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(ConfigError::InvalidCredential { variable: name });
            }
            api_key = Some(Secret::new(value));
            break;
        }
    }
    let keyless_local = kind == ModelProvider::OpenAiCompatible && base_url.is_some();
    if api_key.is_none() && !kind.needs_subprocess() && !keyless_local {
        return Err(ConfigError::MissingCredential { provider: kind, variable: credential_variables(kind)[0] });
    }
    let mut config = ProviderConfig::new(kind, model, api_key);
    if kind == ModelProvider::OpenAiCompatible {
        config.base_url = base_url.or(default_base_url(kind)).unwrap_or_default().to_owned();
    }
    Ok(config)
}

fn pricing(policy: &ModelPolicy) -> Result<Option<Pricing>, ConfigError> {
    let check = |value: Option<f64>, field| match value {
        Some(v) if !(v.is_finite() && v >= 0.0) => Err(ConfigError::InvalidCost { field }),
        other => Ok(other),
    };
    let input = check(policy.input_cost_per_million_tokens, "model.inputCostPerMillionTokens")?;
    let output = check(policy.output_cost_per_million_tokens, "model.outputCostPerMillionTokens")?;
    Ok(match (input, output) {
        (Some(i), Some(o)) => Some(Pricing { input_per_million_tokens: i, output_per_million_tokens: o }),
        _ => None,
    })
}

fn check_model_name(kind: ModelProvider, name: &str, field: &'static str) -> Result<String, ConfigError> {
    let name = name.trim();
    let invalid = |reason| Err(ConfigError::InvalidModelName { field, reason });
    if name.is_empty() {
        return invalid("empty");
    }
    if name.len() > 200 {
        return invalid("longer than 200 bytes");
    }
    if name.chars().any(char::is_control) {
        return invalid("contains a control character");
    }
    if kind == ModelProvider::Google {
        // Gemini puts the model in the URL path: one plain segment only.
        let bare = name.strip_prefix("models/").unwrap_or(name);
        if !bare.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)) || bare.starts_with('.') {
            return invalid("a Gemini model name may hold only letters, digits, `-`, `.` and `_`");
        }
        return Ok(bare.to_owned());
    }
    Ok(name.to_owned())
}

fn check_base_url(url: &str) -> Result<String, ConfigError> {
    let invalid = |reason| Err(ConfigError::InvalidBaseUrl { reason });
    let Some(rest) = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")) else {
        return invalid("must start with https:// or http://");
    };
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return invalid("has no host");
    }
    if authority.contains('@') {
        return invalid("must not carry credentials; use the provider's key variable");
    }
    if url.contains(['?', '#']) || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return invalid("must be a plain URL without query, fragment or spaces");
    }
    Ok(url.trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl FnMut(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    }

    #[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
    fn policy(provider: &str, name: &str) -> ModelPolicy {
        ModelPolicy {
            provider: ModelProvider::parse(provider).unwrap(),
            name: Some(name.into()),
            ..ModelPolicy::default()
        }
    }

    // Selection across every adapter: the default build's.
    #[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
    #[test]
    fn each_provider_reads_its_own_key_and_endpoint() {
        let cases = [
            ("openai", "OPENAI_API_KEY", "https://api.openai.com/v1"),
            ("anthropic", "ANTHROPIC_API_KEY", "https://api.anthropic.com/v1"),
            ("google", "GOOGLE_GENERATIVE_AI_API_KEY", "https://generativelanguage.googleapis.com/v1beta"),
            ("ai-gateway", "AI_GATEWAY_API_KEY", "https://ai-gateway.vercel.sh/v1"),
            ("openai-compatible", "OPENAI_COMPATIBLE_API_KEY", "https://api.openai.com/v1"),
        ];
        for (provider, variable, url) in cases {
            let s = select_models(&policy(provider, "m-1"), env(&[(variable, "key-value-123")])).unwrap();
            assert_eq!(s.primary.kind.as_str(), provider);
            assert_eq!(s.primary.base_url, url);
            assert_eq!(s.primary.api_key, Some(Secret::new("key-value-123")));
            assert_eq!(s.primary.model, "m-1");
            assert_eq!(s.fallback, None);
            let missing = select_models(&policy(provider, "m-1"), env(&[])).unwrap_err();
            assert_eq!(missing, ConfigError::MissingCredential { provider: s.primary.kind, variable });
            assert!(missing.to_string().contains(variable));
        }
        // openai-compatible may reuse OPENAI_API_KEY, as in the reference.
        let s = select_models(&ModelPolicy::default(), env(&[("OPENAI_API_KEY", "k-openai-1")])).unwrap();
        assert_eq!(s.primary.api_key, Some(Secret::new("k-openai-1")));
        assert_eq!(s.primary.model, "gpt-5");
    }

    // Selection across every adapter: the default build's.
    #[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
    #[test]
    fn base_url_is_operator_only_and_local_servers_need_no_key() {
        let s = select_models(
            &policy("openai-compatible", "llama3.1:8b"),
            env(&[(BASE_URL_VARIABLE, "http://127.0.0.1:11434/v1/")]),
        )
        .unwrap();
        assert_eq!(s.primary.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(s.primary.api_key, None);
        for bad in ["ftp://x", "https://user:pw@host/v1", "https://host/v1?key=1", "https://"] {
            let e = select_models(&ModelPolicy::default(), env(&[(BASE_URL_VARIABLE, bad), ("OPENAI_API_KEY", "k")]))
                .unwrap_err();
            assert!(matches!(e, ConfigError::InvalidBaseUrl { .. }), "{bad}: {e}");
            assert!(!e.to_string().contains("pw"), "{e}");
        }
    }

    // Selection across every adapter: the default build's.
    #[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
    #[test]
    fn fallback_rules() {
        let vars = [
            (FALLBACK_PROVIDER_VARIABLE, "anthropic"),
            (FALLBACK_MODEL_VARIABLE, "claude-sonnet-4-5"),
            ("ANTHROPIC_API_KEY", "ant-key-1"),
            (BASE_URL_VARIABLE, "https://gateway.example/v1"),
        ];
        let s = select_models(&policy("claude-code", "sonnet"), env(&vars)).unwrap();
        assert_eq!(s.primary.kind, ModelProvider::ClaudeCode);
        assert_eq!(s.primary.api_key, None);
        let fallback = s.fallback.unwrap();
        assert_eq!(fallback.kind, ModelProvider::Anthropic);
        assert_eq!(fallback.model, "claude-sonnet-4-5");
        assert_eq!(fallback.base_url, "https://api.anthropic.com/v1", "the base URL is the policy provider's");
        assert_eq!(fallback.pricing, None);

        let e = select_models(&policy("openai", "m"), env(&[("OPENAI_API_KEY", "k"), (FALLBACK_MODEL_VARIABLE, "x")]));
        assert_eq!(e.unwrap_err(), ConfigError::IncompleteFallback);
        let e = select_models(
            &policy("openai", "m"),
            env(&[("OPENAI_API_KEY", "k"), (FALLBACK_PROVIDER_VARIABLE, "codex-cli"), (FALLBACK_MODEL_VARIABLE, "x")]),
        );
        assert_eq!(e.unwrap_err(), ConfigError::CliFallback { provider: ModelProvider::CodexCli });
        let e = select_models(
            &policy("openai", "m"),
            env(&[
                ("OPENAI_API_KEY", "k"),
                (FALLBACK_PROVIDER_VARIABLE, "google"),
                (FALLBACK_MODEL_VARIABLE, "gemini-2.5-pro"),
            ]),
        );
        assert_eq!(
            e.unwrap_err(),
            ConfigError::MissingCredential {
                provider: ModelProvider::Google,
                variable: "GOOGLE_GENERATIVE_AI_API_KEY"
            }
        );
    }

    #[test]
    fn agent_zero_model_names_the_default_model() {
        assert_eq!(default_model(env(&[])), "gpt-5");
        assert_eq!(default_model(env(&[(MODEL_VARIABLE, "  ")])), "gpt-5");
        assert_eq!(default_model(env(&[(MODEL_VARIABLE, " claude-sonnet-4-5 ")])), "claude-sonnet-4-5");
    }

    // Selection across every adapter: the default build's.
    #[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
    #[test]
    fn policy_values_are_checked_with_their_field() {
        // The policy's provider is typed (the parser refuses `azure`); the
        // operator's fallback provider is text, checked here.
        let fallback = [(FALLBACK_PROVIDER_VARIABLE, "azure"), (FALLBACK_MODEL_VARIABLE, "m"), ("OPENAI_API_KEY", "k")];
        let e = select_models(&policy("openai", "m"), env(&fallback)).unwrap_err();
        assert_eq!(e.to_string(), "`AGENT_ZERO_MODEL_FALLBACK_PROVIDER`: unknown model provider `azure`");
        let e = select_models(&policy("openai", "  "), env(&[("OPENAI_API_KEY", "k")])).unwrap_err();
        assert_eq!(e, ConfigError::InvalidModelName { field: "model.name", reason: "empty" });
        let e = select_models(&policy("google", "../../v1/files"), env(&[("GOOGLE_GENERATIVE_AI_API_KEY", "k")]));
        assert!(matches!(e, Err(ConfigError::InvalidModelName { .. })));
        let s =
            select_models(&policy("google", "models/gemini-2.5-flash"), env(&[("GOOGLE_GENERATIVE_AI_API_KEY", "k")]));
        assert_eq!(s.unwrap().primary.model, "gemini-2.5-flash");
        let mut p = policy("openai", "m");
        p.input_cost_per_million_tokens = Some(-1.0);
        let e = select_models(&p, env(&[("OPENAI_API_KEY", "k")])).unwrap_err();
        assert_eq!(e.to_string(), "`model.inputCostPerMillionTokens` must be a non-negative number");
        p.input_cost_per_million_tokens = Some(2.5);
        let s = select_models(&p, env(&[("OPENAI_API_KEY", "k")])).unwrap();
        assert_eq!(s.primary.pricing, None, "one price alone is not a cost model");
        p.output_cost_per_million_tokens = Some(10.0);
        let s = select_models(&p, env(&[("OPENAI_API_KEY", "k")])).unwrap();
        assert_eq!(s.primary.pricing.unwrap().cost_usd(1_000_000, 100_000), 3.5);
        let e = select_models(&policy("openai", "m"), env(&[("OPENAI_API_KEY", "k\ney")])).unwrap_err();
        assert_eq!(e, ConfigError::InvalidCredential { variable: "OPENAI_API_KEY" });
    }
}
