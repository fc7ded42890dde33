//! The app's GitHub credentials, built from the operator's variables with
//! one installation-token cache per isolate (Workers) or component
//! instance (Spin), and the authenticated client built from them: the one
//! place webhook intake, task creation and publication get it from.

use std::rc::Rc;

use agent_zero_github::{ApiConfig, Credentials, CredentialsError, GitHubClient, Rs256Signer, TokenCache};
use agent_zero_ports::HttpClient;

thread_local! {
    /// Installation tokens minted by this isolate or instance, each kept
    /// until 5 minutes before it expires (an hour after minting); never in KV.
    static TOKENS: Rc<TokenCache> = Rc::new(TokenCache::default());
}

/// The deployment's credentials (`GITHUB_APP_ID` + `GITHUB_APP_PRIVATE_KEY`,
/// else `GITHUB_TOKEN`), sharing this isolate's token cache; `Ok(None)`
/// when none is configured.
pub(crate) fn credentials(config: &crate::Config) -> Result<Option<Credentials>, CredentialsError> {
    let credentials = Credentials::from_env(
        config.get("GITHUB_TOKEN"),
        config.get("GITHUB_APP_ID"),
        config.get("GITHUB_APP_PRIVATE_KEY"),
    )?;
    Ok(credentials.map(|c| c.with_cache(TOKENS.with(Rc::clone))))
}

/// A client authenticated for `installation` at `now_ms` with `credentials`
/// (anonymous without them: public repositories are readable); an App's JWT
/// is signed with `signer`.
pub(crate) async fn client<'h, H: HttpClient, S: Rs256Signer>(
    http: &'h H,
    signer: &S,
    api: &'h ApiConfig,
    credentials: Option<&Credentials>,
    installation: Option<u64>,
    now_ms: u64,
) -> Result<GitHubClient<'h, H>, CredentialsError> {
    let anonymous = GitHubClient::new(http, api);
    let Some(credentials) = credentials else { return Ok(anonymous) };
    let token = credentials.token_for(installation, &anonymous, signer, now_ms).await?;
    Ok(GitHubClient::new(http, api).with_token(token))
}
