//! The closed list of model providers a policy may name.

/// A model provider, by the name `model.provider` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderKind {
    /// OpenAI Chat Completions, `OPENAI_API_KEY`.
    OpenAi,
    /// Anthropic Messages, `ANTHROPIC_API_KEY`.
    Anthropic,
    /// Google Gemini `generateContent`, `GOOGLE_GENERATIVE_AI_API_KEY`.
    Google,
    /// Vercel AI Gateway's OpenAI-compatible endpoint, `AI_GATEWAY_API_KEY`.
    AiGateway,
    /// Any Chat Completions server at `AGENT_ZERO_MODEL_BASE_URL`.
    OpenAiCompatible,
    /// The Claude Code CLI: needs a subprocess, refused at the edge.
    ClaudeCode,
    /// The Codex CLI: needs a subprocess, refused at the edge.
    CodexCli,
}

impl ProviderKind {
    /// Every provider, in declaration order.
    pub const ALL: &'static [Self] = &[
        Self::OpenAi,
        Self::Anthropic,
        Self::Google,
        Self::AiGateway,
        Self::OpenAiCompatible,
        Self::ClaudeCode,
        Self::CodexCli,
    ];

    /// The policy name of this provider.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Google => "google",
            Self::AiGateway => "ai-gateway",
            Self::OpenAiCompatible => "openai-compatible",
            Self::ClaudeCode => "claude-code",
            Self::CodexCli => "codex-cli",
        }
    }

    /// Parses a policy name; `None` for anything else (exact, case-sensitive).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.as_str() == name)
    }

    /// Whether this provider drives a local CLI, which the edge cannot spawn.
    pub const fn needs_subprocess(self) -> bool {
        matches!(self, Self::ClaudeCode | Self::CodexCli)
    }

    /// The operator variables holding this provider's credential, in the
    /// order they are tried (the reference lets `openai-compatible` reuse
    /// `OPENAI_API_KEY`). Empty for CLI providers.
    pub const fn credential_variables(self) -> &'static [&'static str] {
        match self {
            Self::OpenAi => &["OPENAI_API_KEY"],
            Self::Anthropic => &["ANTHROPIC_API_KEY"],
            Self::Google => &["GOOGLE_GENERATIVE_AI_API_KEY"],
            Self::AiGateway => &["AI_GATEWAY_API_KEY"],
            Self::OpenAiCompatible => &["OPENAI_COMPATIBLE_API_KEY", "OPENAI_API_KEY"],
            Self::ClaudeCode | Self::CodexCli => &[],
        }
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_fail() {
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::parse(kind.as_str()), Some(*kind));
        }
        assert_eq!(ProviderKind::parse("OpenAI"), None);
        assert_eq!(ProviderKind::parse("azure"), None);
        let cli: Vec<_> = ProviderKind::ALL.iter().filter(|k| k.needs_subprocess()).collect();
        assert_eq!(cli, [&ProviderKind::ClaudeCode, &ProviderKind::CodexCli]);
    }
}
