//! The product's own GitHub client and webhook verifier against the fakes:
//! proof that the fake's shapes are the ones the product parses.

mod support;

use agent_zero_fakes::{FakeGitHub, FixtureRepo, TEST_APP_PRIVATE_KEY_PEM, TEST_APP_PUBLIC_KEY_PEM, calc, sign_github};
use agent_zero_github::{ApiConfig, AppKey, GitHubClient, RsaSigner, verify};
use agent_zero_ports::Secret;
use agent_zero_ports::block_on;
use support::http;

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

#[test]
fn the_product_client_reads_the_fixture_through_the_fake() {
    let repo = FixtureRepo::calc("octo", "calc").build().unwrap();
    let gh = FakeGitHub::start();
    gh.add_fixture(&repo);
    gh.require_token("ghp_test");
    let http = http();
    let config = ApiConfig::new(Some(&gh.url()), "agent-zero-fakes-test").unwrap();
    let client = GitHubClient::new(&http, &config).with_token(Secret::new("ghp_test"));

    let info = block_on(client.repository("octo", "calc")).unwrap();
    assert_eq!((info.full_name.as_str(), info.default_branch.as_str(), info.private), ("octo/calc", "main", false));
    let head = block_on(client.branch_head("octo", "calc", "main")).unwrap();
    assert_eq!(head, repo.head_sha());
    let file = block_on(client.file_at("octo", "calc", calc::BUG_PATH, &head, 1 << 20)).unwrap().unwrap();
    assert_eq!(file.bytes, calc::CALC_PY.as_bytes());
    assert!(block_on(client.file_at("octo", "calc", "missing.py", &head, 1 << 20)).unwrap().is_none());

    let calls = gh.calls();
    assert!(calls.iter().all(|c| c.header("authorization") == Some("Bearer ghp_test")));
    assert!(calls.iter().all(|c| c.header("x-github-api-version") == Some("2022-11-28")));

    let anonymous = GitHubClient::new(&http, &config);
    gh.set_private("octo", "calc", true);
    assert!(block_on(anonymous.repository("octo", "calc")).is_err());
}

#[test]
fn the_product_app_jwt_mints_an_installation_token() {
    let gh = FakeGitHub::start();
    gh.register_app("4242", Some(TEST_APP_PUBLIC_KEY_PEM));
    gh.add_installation(7, "octo");
    let http = http();
    let config = ApiConfig::new(Some(&gh.url()), "agent-zero-fakes-test").unwrap();
    let client = GitHubClient::new(&http, &config);
    let key = AppKey::from_pem("4242", TEST_APP_PRIVATE_KEY_PEM).unwrap();
    let minted =
        block_on(client.create_installation_token(&block_on(key.jwt(&RsaSigner, now_ms())).unwrap(), 7)).unwrap();
    assert_eq!(gh.minted_tokens(), [minted.token.expose().to_owned()]);
    // A JWT from another App id is refused.
    let stranger = AppKey::from_pem("1", TEST_APP_PRIVATE_KEY_PEM).unwrap();
    assert!(
        block_on(client.create_installation_token(&block_on(stranger.jwt(&RsaSigner, now_ms())).unwrap(), 7)).is_err()
    );
}

#[test]
fn the_product_verifies_sign_github() {
    let body = br#"{"action":"opened","number":1}"#;
    let header = sign_github("whsec", body);
    assert!(verify(b"whsec", Some(&header), body).is_ok());
    assert!(verify(b"other", Some(&header), body).is_err());
}
