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
}
