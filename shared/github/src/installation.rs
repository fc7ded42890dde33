//! Which installation of the GitHub App covers a repository:
//! `GET /repos/{owner}/{repo}/installation` ("Get a repository installation
//! for the authenticated app", `apps/get-repo-installation`), authenticated
//! with the App's JWT, as GitHub's REST API requires for it. A webhook
//! delivery carries its installation; a task created through the API does
//! not, so the app asks this once, when the task is created.
//!
//! GitHub answers 200 with the installation, or 404 when the App is not
//! installed on the repository (or the repository does not exist, which an
//! App cannot tell apart); 301 for a renamed repository is not followed.

use agent_zero_ports::HttpClient;
use serde::Deserialize;

use crate::client::{GitHubClient, decode, repo_path};
use crate::credentials::Credentials;
use crate::credentials_error::CredentialsError;
use crate::signer::Rs256Signer;

/// The one field of GitHub's `installation` object the app reads.
#[derive(Deserialize)]
struct Installation {
    id: u64,
}

impl Credentials {
    /// The installation id to act on `owner/repo` with: `None` for a
    /// `GITHUB_TOKEN` (it needs none); for an App, GitHub's answer to
    /// `GET /repos/{owner}/{repo}/installation` with the App's JWT (signed
    /// with `signer` at `now_ms`), through `client`'s HTTP port and API (its
    /// own token, if any, is not used). A 404 is
    /// [`CredentialsError::NotInstalled`].
    pub async fn repository_installation<H: HttpClient, S: Rs256Signer>(
        &self,
        client: &GitHubClient<'_, H>,
        signer: &S,
        owner: &str,
        repo: &str,
        now_ms: u64,
    ) -> Result<Option<u64>, CredentialsError> {
        const OP: &str = "get a repository installation for the authenticated app";
        let Self::App { key, .. } = self else { return Ok(None) };
        let (http, config) = client.parts();
        let url = format!("{}/repos/{}/installation", config.base_url(), repo_path(owner, repo)?);
        let client = GitHubClient::new(http, config).with_token(key.jwt(signer, now_ms).await?);
        let response = client.send_authorized(OP, http::Method::GET, &url, None).await?;
        if response.status() == http::StatusCode::NOT_FOUND {
            return Err(CredentialsError::NotInstalled { repository: format!("{owner}/{repo}") });
        }
        // `success` drops a message that would carry the JWT.
        let response = client.success(OP, response)?;
        let installation: Installation = decode(OP, response.body())?;
        Ok(Some(installation.id))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use agent_zero_ports::{HttpError, block_on};

    use super::*;
    use crate::RsaSigner;
    use crate::client::{ApiConfig, GitHubError};

    const KEY: &str = include_str!("../../../tests/fakes/src/data/test-app-key.pkcs1.pem");

    /// A request line and its `Authorization` scheme.
    type Seen = (String, String);

    /// Answers every request with `status` and `body`, recording what it
    /// was asked.
    struct Answer {
        status: u16,
        body: &'static str,
        seen: RefCell<Vec<Seen>>,
    }

    impl HttpClient for Answer {
        async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
            let auth = request.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
            // A JWT is three dot-separated parts.
            let scheme = if auth.starts_with("Bearer ") && auth.matches('.').count() == 2 { "jwt" } else { auth };
            self.seen.borrow_mut().push((format!("{} {}", request.method(), request.uri().path()), scheme.to_owned()));
            let mut response = http::Response::new(self.body.as_bytes().to_vec());
            *response.status_mut() = http::StatusCode::from_u16(self.status).unwrap();
            Ok(response)
        }
    }

    fn lookup(
        credentials: &Credentials,
        status: u16,
        body: &'static str,
    ) -> (Result<Option<u64>, CredentialsError>, Vec<Seen>) {
        let http = Answer { status, body, seen: RefCell::new(Vec::new()) };
        let config = ApiConfig::new(None, "test").unwrap();
        let client = GitHubClient::new(&http, &config);
        let result =
            block_on(credentials.repository_installation(&client, &RsaSigner, "octo", "demo", 1_777_636_800_000));
        (result, http.seen.into_inner())
    }

    #[test]
    fn an_app_asks_github_with_its_jwt_and_a_token_needs_nothing() {
        let app = Credentials::from_env(None, Some("123456"), Some(KEY)).unwrap().unwrap();
        let (found, seen) = lookup(&app, 200, r#"{"id": 42, "account": {"login": "octo"}, "app_id": 123456}"#);
        assert_eq!(found, Ok(Some(42)));
        assert_eq!(seen, [("GET /repos/octo/demo/installation".to_owned(), "jwt".to_owned())]);

        let (missing, _) = lookup(&app, 404, r#"{"message": "Not Found"}"#);
        assert_eq!(missing, Err(CredentialsError::NotInstalled { repository: "octo/demo".into() }));
        assert_eq!(
            missing.unwrap_err().to_string(),
            "the GitHub App is not installed on octo/demo (GitHub answered 404 to GET /repos/octo/demo/installation)"
        );
        let (refused, _) = lookup(&app, 401, r#"{"message": "Integration not found"}"#);
        assert!(matches!(refused, Err(CredentialsError::Api(GitHubError::Status { status: 401, .. }))), "{refused:?}");

        let token = Credentials::from_env(Some("ghp_x"), None, None).unwrap().unwrap();
        let (none, seen) = lookup(&token, 500, "");
        assert_eq!((none, seen.len()), (Ok(None), 0));
    }
}
