//! The REST client, App credentials and the policy source against an
//! in-process fake of the GitHub API.

mod support;

use agent_zero_github::{
    ApiConfig, AppKey, CacheOutcome, Credentials, CredentialsError, GitHubClient, GitHubError, Intake, IntakeOptions,
    POLICY_PATH, PolicySourceError, RsaSigner, Subject, TOKEN_REFRESH_MARGIN_MS, TokenCache, load_policy_text,
    parse_delivery, policy_cache_key,
};
use agent_zero_ports::Secret;
use agent_zero_ports::{KeyValue, MemoryKv, MemoryKvFault};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::pkcs1v15::{Signature, VerifyingKey};
use rsa::pkcs8::DecodePublicKey;
use rsa::sha2::Sha256;
use rsa::signature::Verifier;
use support::{FakeGitHub, access_token_json, block_on, file_json, ref_json, repository_json};

const BASE: &str = "https://ghe.example.com/api/v3";
const PKCS1: &str = include_str!("data/test-app-key.pkcs1.pem");
const PKCS8: &str = include_str!("data/test-app-key.pkcs8.pem");
const PUBLIC: &str = include_str!("data/test-app-key.pub.pem");
const SHA: &str = "aa218f56b14c9653891f9e74264a383fa43fefbd";
/// 2016-07-11T22:14:10Z, GitHub's documented `expires_at`.
const EXPIRES_MS: u64 = 1_468_275_250_000;

fn config() -> ApiConfig {
    ApiConfig::new(Some(BASE), "agent-zero-edge-test").unwrap()
}

/// Verifies a JWT's RS256 signature and returns its header and claims.
fn verify_jwt(jwt: &str) -> (serde_json::Value, serde_json::Value) {
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3, "{jwt}");
    let key = VerifyingKey::<Sha256>::new(rsa::PublicKey::from_public_key_pem(PUBLIC).unwrap());
    let signature = Signature::try_from(URL_SAFE_NO_PAD.decode(parts[2]).unwrap().as_slice()).unwrap();
    key.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).expect("signature verifies");
    let decode = |p: &str| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap();
    (decode(parts[0]), decode(parts[1]))
}

#[test]
fn app_jwt_is_rs256_and_verifies_with_the_public_key() {
    let now_ms = 1_700_000_000_123;
    let pkcs1 = AppKey::from_pem("12345", PKCS1).unwrap();
    let jwt = block_on(pkcs1.jwt(&RsaSigner, now_ms)).unwrap();
    let (header, claims) = verify_jwt(jwt.expose());
    assert_eq!(header, serde_json::json!({"alg": "RS256", "typ": "JWT"}));
    assert_eq!(claims, serde_json::json!({"iat": 1_700_000_000 - 60, "exp": 1_700_000_000 + 540, "iss": 12345}));

    // PKCS#8, and a key pasted into an env var with literal `\n`, are the same key.
    let pkcs8 = AppKey::from_pem("12345", PKCS8).unwrap();
    let escaped = AppKey::from_pem("12345", &PKCS8.trim().replace('\n', "\\n")).unwrap();
    assert_eq!(block_on(pkcs8.jwt(&RsaSigner, now_ms)).unwrap(), jwt);
    assert_eq!(block_on(escaped.jwt(&RsaSigner, now_ms)).unwrap(), jwt);

    // A client id goes out as a string.
    let (_, claims) =
        verify_jwt(block_on(AppKey::from_pem("Iv1.abc123", PKCS1).unwrap().jwt(&RsaSigner, now_ms)).unwrap().expose());
    assert_eq!(claims["iss"], "Iv1.abc123");

    // Tampered claims no longer verify.
    let parts: Vec<&str> = jwt.expose().split('.').collect();
    let forged = URL_SAFE_NO_PAD.encode(br#"{"iat":0,"exp":99999999999,"iss":12345}"#);
    let key = VerifyingKey::<Sha256>::new(rsa::PublicKey::from_public_key_pem(PUBLIC).unwrap());
    let signature = Signature::try_from(URL_SAFE_NO_PAD.decode(parts[2]).unwrap().as_slice()).unwrap();
    assert!(key.verify(format!("{}.{forged}", parts[0]).as_bytes(), &signature).is_err());

    assert!(!format!("{pkcs1:?}").contains("PRIVATE"));
    let truncated = &PKCS1[..PKCS1.len() / 2];
    assert!(matches!(AppKey::from_pem("1", truncated), Err(CredentialsError::InvalidPrivateKey { .. })));
}

#[test]
fn installation_tokens_are_minted_with_the_jwt_and_cached() {
    let fake = FakeGitHub::new(BASE);
    fake.route(
        "POST",
        "/app/installations/42/access_tokens",
        201,
        access_token_json("ghs_16C7e42F292c6912E7710c838347Ae178B4a", "2016-07-11T22:14:10Z"),
    );
    let config = config();
    let client = GitHubClient::new(&fake, &config);
    let credentials = Credentials::from_env(Some("ghp_ignored"), Some("12345"), Some(PKCS1)).unwrap().unwrap();
    let now = EXPIRES_MS - 3_600_000;

    let token = block_on(credentials.token_for(Some(42), &client, &RsaSigner, now)).unwrap();
    assert_eq!(token.expose(), "ghs_16C7e42F292c6912E7710c838347Ae178B4a");
    let seen = fake.seen.borrow()[0].clone();
    assert_eq!(seen.method, "POST");
    let bearer = seen.headers["authorization"].strip_prefix("Bearer ").unwrap();
    let (_, claims) = verify_jwt(bearer);
    assert_eq!(claims["iat"], now / 1000 - 60);
    assert_eq!(seen.headers["accept"], "application/vnd.github+json");
    assert_eq!(seen.headers["x-github-api-version"], "2022-11-28");

    // Cached until 5 minutes before expiry, then minted again.
    block_on(credentials.token_for(Some(42), &client, &RsaSigner, EXPIRES_MS - TOKEN_REFRESH_MARGIN_MS - 1)).unwrap();
    assert_eq!(fake.seen.borrow().len(), 1);
    block_on(credentials.token_for(Some(42), &client, &RsaSigner, EXPIRES_MS - TOKEN_REFRESH_MARGIN_MS)).unwrap();
    assert_eq!(fake.seen.borrow().len(), 2);

    // Another installation is its own token; none at all is an error.
    assert!(matches!(
        block_on(credentials.token_for(Some(7), &client, &RsaSigner, now)),
        Err(CredentialsError::Api(GitHubError::Status { status: 404, .. }))
    ));
    assert_eq!(
        block_on(credentials.token_for(None, &client, &RsaSigner, now)),
        Err(CredentialsError::InstallationRequired)
    );

    let plain = Credentials::from_env(Some("ghp_plain"), None, None).unwrap().unwrap();
    assert_eq!(block_on(plain.token_for(None, &client, &RsaSigner, now)).unwrap().expose(), "ghp_plain");
    assert_eq!(fake.seen.borrow().len(), 3, "a plain token needs no request");
}

#[test]
fn one_installation_token_is_minted_per_hour_per_installation_across_calls() {
    let fake = FakeGitHub::new(BASE);
    fake.route(
        "POST",
        "/app/installations/42/access_tokens",
        201,
        access_token_json("ghs_16C7e42F292c6912E7710c838347Ae178B4a", "2016-07-11T22:14:10Z"),
    );
    let config = config();
    let client = GitHubClient::new(&fake, &config);
    let now = EXPIRES_MS - 3_600_000;
    // Every delivery and publication builds its credentials afresh from the
    // variables; the cache they share is the isolate's.
    let shared = std::rc::Rc::new(TokenCache::default());
    for call in 0..5u64 {
        let credentials = Credentials::from_env(None, Some("12345"), Some(PKCS1))
            .unwrap()
            .unwrap()
            .with_cache(std::rc::Rc::clone(&shared));
        let token = block_on(credentials.token_for(Some(42), &client, &RsaSigner, now + call * 60_000)).unwrap();
        assert_eq!(token.expose(), "ghs_16C7e42F292c6912E7710c838347Ae178B4a");
    }
    assert_eq!(fake.seen.borrow().len(), 1, "five calls within the hour mint one token");
    // Without the shared cache each call would mint its own.
    let alone = Credentials::from_env(None, Some("12345"), Some(PKCS1)).unwrap().unwrap();
    block_on(alone.token_for(Some(42), &client, &RsaSigner, now)).unwrap();
    assert_eq!(fake.seen.borrow().len(), 2);
}

#[test]
fn errors_name_the_operation_but_never_the_token_or_body() {
    let fake = FakeGitHub::new(BASE);
    let config = config();
    let token = "ghp_TopSecretToken000000000000000000000";
    let client = GitHubClient::new(&fake, &config).with_token(Secret::new(token));

    fake.route(
        "GET",
        "/repos/octo/hello",
        401,
        r#"{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}"#,
    );
    let error = block_on(client.repository("octo", "hello")).unwrap_err();
    assert_eq!(error.to_string(), "GitHub get repository answered 401: Bad credentials");

    fake.route("GET", "/repos/octo/hello", 403, format!(r#"{{"message":"token {token} is blocked"}}"#));
    let error = block_on(client.repository("octo", "hello")).unwrap_err();
    assert_eq!(error, GitHubError::Status { operation: "get repository", status: 403, message: None });

    fake.route("GET", "/repos/octo/hello", 502, "<html>upstream secret-body-text</html>");
    let error = block_on(client.repository("octo", "hello")).unwrap_err().to_string();
    assert!(!error.contains("secret-body-text") && !error.contains(token), "{error}");

    fake.route("GET", "/repos/octo/hello", 200, r#"{"full_name":"octo/hello"}"#);
    let error = block_on(client.repository("octo", "hello")).unwrap_err();
    assert!(matches!(&error, GitHubError::Decode { reason, .. } if reason.contains("default_branch")), "{error}");

    for seen in fake.seen.borrow().iter() {
        assert_eq!(seen.headers["authorization"], format!("Bearer {token}"));
        assert_eq!(seen.headers["user-agent"], "agent-zero-edge-test");
        assert_eq!(seen.headers["accept"], "application/vnd.github+json");
        assert_eq!(seen.headers["x-github-api-version"], "2022-11-28");
        assert_eq!(seen.timeout_ms, Some(10_000));
        assert!(seen.uri.starts_with(BASE));
    }
    let debug = format!("{client:?}");
    assert!(!debug.contains(token) && debug.contains("[redacted]"), "{debug}");
    assert!(matches!(block_on(client.repository("..", "x")), Err(GitHubError::InvalidName { what: "owner", .. })));
}

#[test]
fn contents_shapes() {
    let fake = FakeGitHub::new(BASE);
    let config = config();
    let client = GitHubClient::new(&fake, &config);
    let get = |path: &str, max: u64| block_on(client.file_at("octo", "hello", path, SHA, max));

    let text = "version: 1\nmode: suggest\n".repeat(20);
    fake.route(
        "GET",
        &format!("/repos/octo/hello/contents/docs/a%20b.yml?ref={SHA}"),
        200,
        file_json("docs/a b.yml", text.as_bytes()),
    );
    let file = get("docs/a b.yml", 10_000).unwrap().unwrap();
    assert_eq!(file.bytes, text.as_bytes());
    assert_eq!(file.path, "docs/a b.yml");

    assert_eq!(get("absent.yml", 10_000), Ok(None));
    assert!(matches!(get("docs/a b.yml", 10), Err(GitHubError::FileTooLarge { limit: 10, .. })));

    fake.route(
        "GET",
        &format!("/repos/octo/hello/contents/dir?ref={SHA}"),
        200,
        r#"[{"type":"file","name":"x","path":"dir/x","sha":"1","size":1}]"#,
    );
    assert!(matches!(get("dir", 10_000), Err(GitHubError::NotAFile { ref kind, .. }) if kind == "directory"));
    fake.route(
        "GET",
        &format!("/repos/octo/hello/contents/link?ref={SHA}"),
        200,
        r#"{"type":"symlink","target":"/etc/passwd","size":11,"name":"link","path":"link","sha":"2"}"#,
    );
    assert!(matches!(get("link", 10_000), Err(GitHubError::NotAFile { ref kind, .. }) if kind == "symlink"));
    fake.route(
        "GET",
        &format!("/repos/octo/hello/contents/big?ref={SHA}"),
        200,
        r#"{"type":"file","encoding":"none","size":2000000,"name":"big","path":"big","sha":"3","content":""}"#,
    );
    assert!(matches!(get("big", 5_000_000), Err(GitHubError::FileTooLarge { .. })));
    for bad in ["../x", "/etc/passwd", ".git/config", "dir/"] {
        assert!(matches!(get(bad, 10), Err(GitHubError::InvalidName { what: "path", .. })), "{bad}");
    }
}

/// Wires the three calls of a policy load for `octo/hello` at `main`.
fn policy_routes(fake: &FakeGitHub, file: Option<&[u8]>) {
    fake.route("GET", "/repos/octo/hello", 200, repository_json("octo", "hello", "main"));
    fake.route("GET", "/repos/octo/hello/git/ref/heads/main", 200, ref_json("octo", "hello", "main", SHA));
    if let Some(bytes) = file {
        fake.route(
            "GET",
            &format!("/repos/octo/hello/contents/.agent-zero.yml?ref={SHA}"),
            200,
            file_json(POLICY_PATH, bytes),
        );
    }
}

#[test]
fn policy_is_read_from_the_default_branch_head_and_cached_per_commit() {
    let fake = FakeGitHub::new(BASE);
    let config = config();
    let client = GitHubClient::new(&fake, &config).with_token(Secret::new("ghs_x"));
    let kv = MemoryKv::new();
    let yaml = "version: 1\nproactive:\n  enabled: true\n";
    policy_routes(&fake, Some(yaml.as_bytes()));

    let first = block_on(load_policy_text(&client, &kv, "octo", "hello")).unwrap();
    assert_eq!((first.default_branch.as_str(), first.commit_sha.as_str()), ("main", SHA));
    assert_eq!(first.text.as_deref(), Some(yaml));
    assert_eq!(first.cache, CacheOutcome::Stored);
    assert_eq!(
        fake.targets(),
        [
            "GET /repos/octo/hello".to_owned(),
            "GET /repos/octo/hello/git/ref/heads/main".to_owned(),
            format!("GET /repos/octo/hello/contents/.agent-zero.yml?ref={SHA}"),
        ]
    );
    let stored = block_on(kv.get(&policy_cache_key("octo", "hello"))).unwrap().unwrap();
    assert!(!String::from_utf8_lossy(&stored).contains("ghs_x"), "no credential in the cache");

    fake.clear_seen();
    let second = block_on(load_policy_text(&client, &kv, "octo", "hello")).unwrap();
    assert_eq!((second.text.as_deref(), second.cache), (Some(yaml), CacheOutcome::Hit));
    assert_eq!(fake.targets().len(), 2, "a cache hit reads no contents: {:?}", fake.targets());

    // A new commit on the default branch replaces the repository's one entry.
    let next = "bb218f56b14c9653891f9e74264a383fa43fefbd";
    fake.route("GET", "/repos/octo/hello/git/ref/heads/main", 200, ref_json("octo", "hello", "main", next));
    fake.route(
        "GET",
        &format!("/repos/octo/hello/contents/.agent-zero.yml?ref={next}"),
        200,
        file_json(POLICY_PATH, b"mode: fix\n"),
    );
    let third = block_on(load_policy_text(&client, &kv, "octo", "hello")).unwrap();
    assert_eq!((third.text.as_deref(), third.cache), (Some("mode: fix\n"), CacheOutcome::Stored));
    let keys = block_on(kv.list("policy/", None, 100)).unwrap();
    assert_eq!(keys.keys, [policy_cache_key("octo", "hello")], "one key a repository, however many commits");
    let fourth = block_on(load_policy_text(&client, &kv, "octo", "hello")).unwrap();
    assert_eq!((fourth.text.as_deref(), fourth.cache), (Some("mode: fix\n"), CacheOutcome::Hit));
}

#[test]
fn missing_policy_is_cached_as_missing() {
    let fake = FakeGitHub::new(BASE);
    let config = config();
    let client = GitHubClient::new(&fake, &config);
    let kv = MemoryKv::new();
    policy_routes(&fake, None);
    let first = block_on(load_policy_text(&client, &kv, "octo", "hello")).unwrap();
    assert_eq!((first.text, first.cache), (None, CacheOutcome::Stored));
    fake.clear_seen();
    let second = block_on(load_policy_text(&client, &kv, "octo", "hello")).unwrap();
    assert_eq!((second.text, second.cache), (None, CacheOutcome::Hit));
    assert!(fake.targets().iter().all(|t| !t.contains("/contents/")));
}

#[test]
fn pull_request_heads_are_never_read_for_policy() {
    // A delivery whose repository payload says `master` and whose PR head is
    // attacker-controlled: policy comes from what the API says the default
    // branch is, at its own head.
    let body = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/github-webhooks/pull_request/opened.payload.json"),
    )
    .unwrap();
    let Intake::Task(parsed) = parse_delivery("pull_request", "d-1", &body, &IntakeOptions::default()).unwrap() else {
        panic!()
    };
    let Subject::PullRequest(pr) = &parsed.subject else { panic!() };
    let (owner, repo) = (parsed.repository.owner.as_str(), parsed.repository.repo.as_str());

    let fake = FakeGitHub::new(BASE);
    fake.route("GET", &format!("/repos/{owner}/{repo}"), 200, repository_json(owner, repo, "main"));
    fake.route("GET", &format!("/repos/{owner}/{repo}/git/ref/heads/main"), 200, ref_json(owner, repo, "main", SHA));
    fake.route(
        "GET",
        &format!("/repos/{owner}/{repo}/contents/.agent-zero.yml?ref={SHA}"),
        200,
        file_json(POLICY_PATH, b"mode: observe\n"),
    );
    let config = config();
    let client = GitHubClient::new(&fake, &config);
    let source = block_on(load_policy_text(&client, &MemoryKv::new(), owner, repo)).unwrap();
    assert_eq!(source.commit_sha, SHA);
    for target in fake.targets() {
        assert!(!target.contains(&pr.head_sha), "{target} reads the PR head");
        assert!(!target.contains("refs/pull") && !target.contains("/pulls/"), "{target}");
        assert!(!target.contains("master"), "{target} trusted the payload's default branch");
    }
}

#[test]
fn cache_failures_never_fail_the_load() {
    let fake = FakeGitHub::new(BASE);
    let config = config();
    let client = GitHubClient::new(&fake, &config);
    policy_routes(&fake, Some(b"mode: suggest\n"));

    let broken = MemoryKv::new();
    broken.set_fault(Some(MemoryKvFault::All));
    let source = block_on(load_policy_text(&client, &broken, "octo", "hello")).unwrap();
    assert_eq!(source.text.as_deref(), Some("mode: suggest\n"));
    assert!(matches!(source.cache, CacheOutcome::WriteFailed(_)));

    let corrupt = MemoryKv::new();
    block_on(corrupt.put(&policy_cache_key("octo", "hello"), b"\xff not json")).unwrap();
    let source = block_on(load_policy_text(&client, &corrupt, "octo", "hello")).unwrap();
    assert_eq!(source.cache, CacheOutcome::ReadFailed("unreadable cache entry".into()));
    let again = block_on(load_policy_text(&client, &corrupt, "octo", "hello")).unwrap();
    assert_eq!(again.cache, CacheOutcome::Hit, "the corrupt entry was replaced");

    fake.route(
        "GET",
        &format!("/repos/octo/hello/contents/.agent-zero.yml?ref={SHA}"),
        200,
        file_json(POLICY_PATH, b"\xff\xfe"),
    );
    assert_eq!(
        block_on(load_policy_text(&client, &MemoryKv::new(), "octo", "hello")),
        Err(PolicySourceError::NotUtf8 { sha: SHA.into() })
    );
}

#[test]
fn branch_names_are_encoded_and_non_commits_refused() {
    let fake = FakeGitHub::new(BASE);
    let config = config();
    let client = GitHubClient::new(&fake, &config);
    fake.route(
        "GET",
        "/repos/octo/hello/git/ref/heads/release/v1%2B",
        200,
        ref_json("octo", "hello", "release/v1+", SHA),
    );
    assert_eq!(block_on(client.branch_head("octo", "hello", "release/v1+")).unwrap(), SHA);
    fake.route(
        "GET",
        "/repos/octo/hello/git/ref/heads/tagged",
        200,
        r#"{"ref":"refs/heads/tagged","object":{"type":"tag","sha":"aa218f56b14c9653891f9e74264a383fa43fefbd"}}"#,
    );
    assert!(matches!(block_on(client.branch_head("octo", "hello", "tagged")), Err(GitHubError::Decode { .. })));
    assert!(matches!(
        block_on(client.branch_head("octo", "hello", "../x")),
        Err(GitHubError::InvalidName { what: "ref", .. })
    ));
}
