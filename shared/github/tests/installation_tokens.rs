//! Installation tokens against the loopback GitHub (`agent-zero-fakes`),
//! which expires them as GitHub does (401 "Bad credentials" once past
//! `expires_at`): a token GitHub refuses is forgotten in the cache it came
//! from, so the call that met the 401 fails and the next one mints a fresh
//! token instead of sending the refused one until its own expiry.

mod publish_support;

use std::rc::Rc;

use agent_zero_fakes::{FakeGitHub, TEST_APP_PRIVATE_KEY_PEM, TEST_APP_PUBLIC_KEY_PEM};
use agent_zero_github::{ApiConfig, Credentials, GitHubClient, GitHubError, RsaSigner, TokenCache};
use publish_support::{Loopback, block_on};

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

#[test]
fn an_expired_installation_token_is_refused_forgotten_and_minted_again() {
    let gh = FakeGitHub::start();
    gh.add_repo("acme", "widgets", "main", &[("README.md", "# widgets\n")]);
    gh.register_app("4242", Some(TEST_APP_PUBLIC_KEY_PEM));
    gh.add_installation(7, "acme");
    let http = Loopback::new(&gh);
    let config = ApiConfig::new(Some(&gh.url()), "agent-zero-edge-test").unwrap();
    let cache = Rc::new(TokenCache::default());
    let credentials = Credentials::from_env(None, Some("4242"), Some(TEST_APP_PRIVATE_KEY_PEM))
        .unwrap()
        .unwrap()
        .with_cache(Rc::clone(&cache));
    let client = |now: u64| {
        let anonymous = GitHubClient::new(&http, &config);
        let token = block_on(credentials.token_for(Some(7), &anonymous, &RsaSigner, now)).unwrap();
        (credentials.authorize(GitHubClient::new(&http, &config), token.clone(), Some(7)), token)
    };
    let now = now_ms();

    let (first, token) = client(now);
    assert!(block_on(first.repository("acme", "widgets")).is_ok());
    let (again, same) = client(now + 1_000);
    assert_eq!(same.expose(), token.expose(), "cached within its hour");
    assert!(block_on(again.repository("acme", "widgets")).is_ok());
    assert_eq!(gh.minted_tokens().len(), 1);

    // An hour on for GitHub, not yet for our clock: GitHub refuses it.
    gh.expire_installation_tokens();
    let error = block_on(again.repository("acme", "widgets")).unwrap_err();
    assert!(matches!(&error, GitHubError::Status { status: 401, .. }), "{error:?}");
    assert!(!error.to_string().contains(token.expose()), "{error}");
    assert!(cache.is_empty(), "the refused token is forgotten");

    let (fresh, minted) = client(now + 2_000);
    assert_ne!(minted.expose(), token.expose(), "a fresh token");
    assert!(block_on(fresh.repository("acme", "widgets")).is_ok());
    assert_eq!(gh.minted_tokens().len(), 2);

    // A 401 to a token of one's own (GITHUB_TOKEN) forgets nothing of the
    // App's cache.
    gh.require_token("ghp_person");
    let person = GitHubClient::new(&http, &config).with_token(agent_zero_ports::Secret::new("ghp_wrong"));
    assert!(block_on(person.repository("acme", "widgets")).is_err());
    assert_eq!(cache.len(), 1);
}
