//! The app learns its own login from the loopback GitHub (`agent-zero-fakes`)
//! over GitHub's documented wire formats: `GET /user` with a token,
//! `GET /app` with the App's JWT (login `{slug}[bot]`), once per credential
//! until the cache's TTL; a credential that cannot say who it is is a clear
//! error that names no secret, and nothing is cached for it.

mod publish_support;

use agent_zero_fakes::{DEFAULT_ACTOR, FakeGitHub, TEST_APP_PRIVATE_KEY_PEM, TEST_APP_PUBLIC_KEY_PEM};
use agent_zero_github::{
    ApiConfig, Credentials, GitHubClient, GitHubError, IDENTITY_TTL_MS, IdentityCache, IdentityError, RsaSigner,
};
use publish_support::{Loopback, block_on};

const TOKEN: &str = "ghp_identityTestToken0123456789";

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

fn learn(
    gh: &FakeGitHub,
    http: &Loopback<'_>,
    credentials: &Credentials,
    cache: &IdentityCache,
    now_ms: u64,
) -> Result<String, IdentityError> {
    let config = ApiConfig::new(Some(&gh.url()), "agent-zero-edge-test").unwrap();
    let client = GitHubClient::new(http, &config);
    block_on(credentials.own_login(&client, &RsaSigner, cache, now_ms))
}

#[test]
fn a_token_is_who_get_user_says_once_per_ttl() {
    let gh = FakeGitHub::start();
    gh.require_token(TOKEN);
    let http = Loopback::new(&gh);
    let cache = IdentityCache::default();
    let token = Credentials::from_env(Some(TOKEN), None, None).unwrap().unwrap();
    let now = 1_700_000_000_000;

    assert_eq!(learn(&gh, &http, &token, &cache, now).unwrap(), DEFAULT_ACTOR);
    assert_eq!(http.take_log(), ["GET /user"]);
    let call = &gh.calls()[0];
    assert_eq!(call.header("authorization"), Some(&*format!("Bearer {TOKEN}")));
    assert_eq!(call.header("accept"), Some("application/vnd.github+json"));
    assert_eq!(call.header("x-github-api-version"), Some("2022-11-28"));

    // Cached: no second request, even when GitHub would answer differently.
    gh.set_actor("renamed-user");
    assert_eq!(learn(&gh, &http, &token, &cache, now + IDENTITY_TTL_MS - 1).unwrap(), DEFAULT_ACTOR);
    assert!(http.take_log().is_empty());
    // Past the TTL GitHub is asked again.
    assert_eq!(learn(&gh, &http, &token, &cache, now + IDENTITY_TTL_MS).unwrap(), "renamed-user");
    assert_eq!(http.take_log(), ["GET /user"]);
    // Another token (or API) is another identity.
    gh.require_token("ghp_second");
    let second = Credentials::from_env(Some("ghp_second"), None, None).unwrap().unwrap();
    learn(&gh, &http, &second, &cache, now + IDENTITY_TTL_MS).unwrap();
    assert_eq!(http.take_log(), ["GET /user"]);
    assert_eq!(cache.len(), 2);
}

#[test]
fn an_app_is_its_slug_as_a_bot_from_get_app_with_its_jwt() {
    let gh = FakeGitHub::start();
    gh.require_token("ghp_unused");
    gh.register_app("4242", Some(TEST_APP_PUBLIC_KEY_PEM));
    gh.add_installation(7, "acme");
    let http = Loopback::new(&gh);
    let cache = IdentityCache::default();
    let app = Credentials::from_env(None, Some("4242"), Some(TEST_APP_PRIVATE_KEY_PEM)).unwrap().unwrap();
    let now = now_ms();

    assert_eq!(learn(&gh, &http, &app, &cache, now).unwrap(), "agent-zero-edge[bot]");
    assert_eq!(learn(&gh, &http, &app, &cache, now + 1_000).unwrap(), "agent-zero-edge[bot]");
    assert_eq!(http.take_log(), ["GET /app"], "asked once, with no installation token minted");
    let bearer = gh.calls()[0].header("authorization").unwrap().to_owned();
    assert_eq!(bearer.matches('.').count(), 2, "a JWT: {bearer}");
    assert!(gh.minted_tokens().is_empty());

    // Another App slug is learned fresh by another isolate (an empty cache).
    gh.set_app_slug("zero-two");
    assert_eq!(learn(&gh, &http, &app, &IdentityCache::default(), now).unwrap(), "zero-two[bot]");

    // A JWT GitHub refuses (another App's id) is an error, and not cached.
    let stranger = Credentials::from_env(None, Some("999"), Some(TEST_APP_PRIVATE_KEY_PEM)).unwrap().unwrap();
    let error = learn(&gh, &http, &stranger, &cache, now).unwrap_err();
    assert!(
        matches!(&error, IdentityError::Api(GitHubError::Status { status: 401, message: Some(m), .. }) if m == "Integration not found"),
        "{error:?}"
    );
    assert!(learn(&gh, &http, &stranger, &cache, now).is_err());
    assert_eq!(http.take_log().iter().filter(|c| *c == "GET /app").count(), 3);
}

#[test]
fn a_credential_that_cannot_say_who_it_is_is_a_clear_error() {
    let gh = FakeGitHub::start();
    gh.require_token(TOKEN);
    gh.register_app("4242", Some(TEST_APP_PUBLIC_KEY_PEM));
    gh.add_installation(7, "acme");
    let http = Loopback::new(&gh);
    let cache = IdentityCache::default();

    // An installation token given as GITHUB_TOKEN: GitHub's 403 for GET /user.
    let config = ApiConfig::new(Some(&gh.url()), "agent-zero-edge-test").unwrap();
    let client = GitHubClient::new(&http, &config);
    let app = Credentials::from_env(None, Some("4242"), Some(TEST_APP_PRIVATE_KEY_PEM)).unwrap().unwrap();
    let minted = block_on(app.token_for(Some(7), &client, &RsaSigner, now_ms())).unwrap();
    let installation = Credentials::from_env(Some(minted.expose()), None, None).unwrap().unwrap();
    let error = learn(&gh, &http, &installation, &cache, now_ms()).unwrap_err();
    let text = error.to_string();
    assert_eq!(
        text,
        "the app's own GitHub login could not be learned: GitHub get the authenticated user answered 403: Resource not accessible by integration"
    );
    assert!(!text.contains(minted.expose()));

    // A token GitHub does not know.
    let unknown = Credentials::from_env(Some("ghp_revoked"), None, None).unwrap().unwrap();
    let text = learn(&gh, &http, &unknown, &cache, now_ms()).unwrap_err().to_string();
    assert!(text.ends_with("answered 401: Bad credentials"), "{text}");
    assert!(!text.contains("ghp_revoked"));

    // An answer without a usable login (a body that is not GitHub's shape).
    let token = Credentials::from_env(Some(TOKEN), None, None).unwrap().unwrap();
    gh.fail_next("GET", "/user", 200, &[], r#"{"login":"x --> <b>","type":"User"}"#);
    let error = learn(&gh, &http, &token, &cache, now_ms()).unwrap_err();
    assert!(matches!(&error, IdentityError::NotALogin { what: "login", .. }), "{error:?}");
    gh.fail_next("GET", "/user", 200, &[], r#"{"id":1,"type":"User"}"#);
    let error = learn(&gh, &http, &token, &cache, now_ms()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the app's own GitHub login could not be learned: GitHub get the authenticated user returned an unexpected body at `login`: missing field `login`"
    );

    // GitHub unreachable.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = ApiConfig::new(Some(&format!("http://127.0.0.1:{dead}")), "agent-zero-edge-test").unwrap();
    let client = GitHubClient::new(&http, &config);
    let error = block_on(token.own_login(&client, &RsaSigner, &cache, now_ms())).unwrap_err();
    assert!(matches!(error, IdentityError::Api(GitHubError::Transport { .. })), "{error:?}");
    assert!(cache.is_empty(), "nothing is cached for a failure");
}
