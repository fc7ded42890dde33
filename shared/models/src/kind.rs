//! The operator variables each model provider's credential is read from.
//! The provider names themselves are [`agent_zero_contracts::ModelProvider`],
//! shared with the policy.

use agent_zero_contracts::ModelProvider;

/// The operator variables holding `provider`'s credential, in the order
/// they are tried (the reference lets `openai-compatible` reuse
/// `OPENAI_API_KEY`). Empty for CLI providers.
pub const fn credential_variables(provider: ModelProvider) -> &'static [&'static str] {
    match provider {
        ModelProvider::OpenAi => &["OPENAI_API_KEY"],
        ModelProvider::Anthropic => &["ANTHROPIC_API_KEY"],
        ModelProvider::Google => &["GOOGLE_GENERATIVE_AI_API_KEY"],
        ModelProvider::AiGateway => &["AI_GATEWAY_API_KEY"],
        ModelProvider::OpenAiCompatible => &["OPENAI_COMPATIBLE_API_KEY", "OPENAI_API_KEY"],
        ModelProvider::ClaudeCode | ModelProvider::CodexCli => &[],
    }
}

/// The adapter `provider` is called through when this build leaves it out
/// (`None` when it is in, and for CLI providers, which have none): one
/// adapter per wire format, `openai` for OpenAI, the AI Gateway and
/// OpenAI-compatible servers.
pub const fn missing_adapter(provider: ModelProvider) -> Option<&'static str> {
    let (adapter, built) = match provider {
        ModelProvider::Anthropic => ("anthropic", cfg!(feature = "anthropic")),
        ModelProvider::Google => ("google", cfg!(feature = "google")),
        ModelProvider::OpenAi | ModelProvider::AiGateway | ModelProvider::OpenAiCompatible => {
            ("openai", cfg!(feature = "openai"))
        }
        ModelProvider::ClaudeCode | ModelProvider::CodexCli => return None,
    };
    if built { None } else { Some(adapter) }
}

/// The providers this build can call, by name (`openai, ai-gateway, ...`).
pub fn built_providers() -> Vec<&'static str> {
    ModelProvider::ALL
        .iter()
        .filter(|kind| !kind.needs_subprocess() && missing_adapter(**kind).is_none())
        .map(|kind| kind.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_only_cli_providers_have_no_credential() {
        for kind in ModelProvider::ALL {
            assert_eq!(ModelProvider::parse(kind.as_str()), Ok(*kind));
            assert_eq!(credential_variables(*kind).is_empty(), kind.needs_subprocess(), "{kind}");
        }
        assert!(ModelProvider::parse("OpenAI").is_err());
        assert!(ModelProvider::parse("azure").is_err());
    }

    #[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
    #[test]
    fn the_default_build_has_every_adapter() {
        assert_eq!(built_providers(), ["ai-gateway", "anthropic", "google", "openai", "openai-compatible"]);
        assert!(ModelProvider::ALL.iter().all(|kind| missing_adapter(*kind).is_none()));
    }

    /// With one adapter, the providers it serves are named and the others
    /// are missing it by its name.
    #[cfg(all(feature = "anthropic", not(feature = "openai"), not(feature = "google")))]
    #[test]
    fn an_anthropic_only_build_names_what_it_leaves_out() {
        assert_eq!(built_providers(), ["anthropic"]);
        assert_eq!(missing_adapter(ModelProvider::Anthropic), None);
        assert_eq!(missing_adapter(ModelProvider::AiGateway), Some("openai"));
        assert_eq!(missing_adapter(ModelProvider::OpenAiCompatible), Some("openai"));
        assert_eq!(missing_adapter(ModelProvider::Google), Some("google"));
        assert_eq!(missing_adapter(ModelProvider::ClaudeCode), None);
    }
}
