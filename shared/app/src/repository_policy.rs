//! Reading a repository's `.agent-zero.yml` for a route: from the default
//! branch (never a pull request's head), through the per-commit cache, parsed
//! and validated; errors in the one error shape. Shared by webhook intake and
//! task creation.

use agent_zero_agent::{Policy, PolicyError};
use agent_zero_github::{GitHubClient, load_policy_text};
use agent_zero_ports::{HttpClient, KeyValue};

use crate::error::{ApiError, ErrorCode};

/// The policy of `owner/repo`, or the safe defaults when it has none.
/// `field` names what a policy that does not validate is reported against.
pub(crate) async fn read<H: HttpClient, K: KeyValue>(
    client: &GitHubClient<'_, H>,
    kv: &K,
    owner: &str,
    repo: &str,
    field: impl FnOnce(&PolicyError) -> String,
) -> Result<Policy, ApiError> {
    let source = load_policy_text(client, kv, owner, repo).await.map_err(|e| {
        ApiError::new(
            ErrorCode::UpstreamFailed,
            format!("could not read the repository policy; nothing was created: {e}"),
        )
    })?;
    match source.text {
        None => Ok(Policy::default()),
        Some(text) => Policy::parse(&text).map_err(|e| {
            ApiError::new(ErrorCode::InvalidPolicy, format!(".agent-zero.yml at {}: {e}", source.commit_sha))
                .with_field(field(&e))
        }),
    }
}
