//! `POST /api/v1/tasks` on a deployment whose only GitHub credentials are
//! an App's, against the loopback GitHub the end-to-end suite uses
//! (`agent_zero_fakes::FakeGitHub`, which verifies the JWT and serves
//! `GET /repos/{o}/{r}/installation` as GitHub publishes it): the task
//! carries the installation the app looked up, and its policy read and
//! checkout act with that installation's token; a repository without the
//! App is a 422 naming it, with nothing stored; a `GITHUB_TOKEN`
//! deployment never asks for an installation.

use agent_zero_engine::Start;
use agent_zero_fakes::{FakeGitHub, TEST_APP_PRIVATE_KEY_PEM, TEST_APP_PUBLIC_KEY_PEM};
use agent_zero_ports::HttpClient;
use agent_zero_runner::CheckoutSource;
use serde_json::{Value, json};

use super::dashboard::signin_tests::{Loopback, agent};
use crate::Settings;
use crate::services::{CheckoutPort as _, GitHubCheckout};
use crate::test_host::{RUNNABLE, TestHost, block_on};

const ALICE: &str = "tok-alice-7d41c2e9f0a8";
const APP_ID: &str = "123456";
const INSTALLATION: u64 = 42;
const GITHUB_TOKEN: &str = "ghp_api_app_tests";

/// A loopback GitHub holding `acme/widgets` (whose policy allows
/// `suggest`) and `other/lib`, the App registered and installed on `acme`
/// only; the test host signs the App's JWTs, reaches that GitHub and
/// keeps the wall clock's time.
pub(super) fn app_world() -> (FakeGitHub, TestHost<Loopback>) {
    let github = FakeGitHub::start();
    github.add_repo(
        "acme",
        "widgets",
        "main",
        &[(".agent-zero.yml", "version: 1\nmode: suggest\n"), ("src/limit.rs", "fn f() {}\n")],
    );
    github.add_repo("other", "lib", "main", &[("README.md", "# lib\n")]);
    github.register_app(APP_ID, Some(TEST_APP_PUBLIC_KEY_PEM));
    github.add_installation(INSTALLATION, "acme");
    let host = TestHost::with_http(Loopback(agent())).signing();
    // The loopback GitHub checks the JWT's `iat` and `exp` against its own
    // clock, the wall clock, as GitHub does.
    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    host.clock.set(u64::try_from(wall.as_millis()).unwrap());
    (github, host)
}

/// The App's settings (`GITHUB_APP_ID` and its key, nothing else for
/// GitHub) pointed at `github`, with the control plane's, and `extra`.
pub(super) fn app_settings(github: &FakeGitHub, extra: &[(&str, &str)]) -> Settings {
    let url = github.url();
    let mut pairs = vec![
        ("GITHUB_API_URL", url.as_str()),
        ("GITHUB_APP_ID", APP_ID),
        ("GITHUB_APP_PRIVATE_KEY", TEST_APP_PRIVATE_KEY_PEM),
        ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "alice:tok-alice-7d41c2e9f0a8"),
        ("AGENT_ZERO_CONTROL_PLANE_MODES", "alice:observe|suggest|fix"),
        ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets,other/lib"),
    ];
    pairs.extend_from_slice(&RUNNABLE);
    pairs.extend_from_slice(extra);
    Settings::from_pairs(pairs)
}

fn create<H: HttpClient>(host: &TestHost<H>, settings: &Settings, repository: &str) -> (u16, Value) {
    let body = json!({
        "repository": repository,
        "mode": "suggest",
        "trigger": "feedback",
        "feedback": [{ "body": "`limit` of 0 divides by zero", "path": "src/limit.rs", "line": 1 }],
    });
    let request = http::Request::builder()
        .method("POST")
        .uri("/api/v1/tasks")
        .header("authorization", format!("Bearer {ALICE}"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let response = host.send(settings, request);
    (response.status().as_u16(), serde_json::from_slice(response.body()).unwrap_or(Value::Null))
}

/// The installation the task's entry 0 carries.
fn stored_installation<H: HttpClient>(host: &TestHost<H>, id: &str) -> Option<u64> {
    match block_on(agent_zero_engine::start(&host.kv, id)) {
        Ok(Some(Start::Run(stimulus))) => stimulus.input.installation_id,
        _ => panic!("task {id} has no stimulus"),
    }
}

#[test]
fn an_app_task_carries_the_installation_it_looked_up_and_checks_out_with_its_token() {
    let (github, host) = app_world();
    let settings = app_settings(&github, &[]);
    let (status, body) = create(&host, &settings, "acme/widgets");
    assert_eq!(status, 201, "{body}");
    // The policy was read with the installation's token: it allows `suggest`
    // (the default policy, all an App could read before, is `observe`).
    assert_eq!(body["mode"], "suggest", "{body}");
    let id = body["id"].as_str().unwrap();
    assert_eq!(stored_installation(&host, id), Some(INSTALLATION));

    // Asked once, with the App's JWT (three dot-separated parts).
    let asked = github.calls_matching("GET", "/repos/acme/widgets/installation");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let jwt = asked[0].header("authorization").and_then(|a| a.strip_prefix("Bearer ")).unwrap_or_default();
    assert_eq!(jwt.split('.').count(), 3, "{:?}", asked[0]);
    let minted = github.minted_tokens();
    assert_eq!(minted.len(), 1, "one installation token for the policy read: {minted:?}");
    let policy_read = github.calls_matching("GET", "/repos/acme/widgets/contents/.agent-zero.yml");
    let bearer = format!("Bearer {}", minted[0]);
    assert!(policy_read.iter().all(|c| c.header("authorization") == Some(bearer.as_str())), "{policy_read:#?}");

    // The run's checkout acts with the installation the task carries: the
    // default branch's commit, through an archive link asked for with the
    // installation's token.
    let now_ms = agent_zero_ports::Clock::now_ms(&host.clock);
    let head = github.branch_sha("acme", "widgets", "main").unwrap();
    let checkout = |installation| GitHubCheckout {
        settings: &settings,
        http: &host.http,
        signer: &host.signer,
        installation,
        now_ms,
    };
    let (commit, source) = block_on(checkout(stored_installation(&host, id)).source("acme/widgets", "HEAD")).unwrap();
    assert_eq!(commit, head);
    assert!(matches!(source, CheckoutSource::Archive { ref commit, .. } if *commit == head), "{source:?}");
    let tarballs = github.calls_matching("GET", &format!("/repos/acme/widgets/tarball/{head}"));
    assert!(!tarballs.is_empty() && tarballs.iter().all(|c| c.header("authorization") == Some(bearer.as_str())));
    // What every API task did before: no installation, no checkout.
    let without = block_on(checkout(None).source("acme/widgets", "HEAD")).unwrap_err();
    assert!(without.contains("need an installation id"), "{without}");
}

#[test]
fn an_app_not_installed_on_the_repository_is_a_422_naming_it_and_nothing_is_stored() {
    let (github, host) = app_world();
    let settings = app_settings(&github, &[]);
    let (status, body) = create(&host, &settings, "other/lib");
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "app_not_installed", "{body}");
    assert_eq!(body["error"]["field"], "repository", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("not installed on other/lib") && message.contains("nothing was created"), "{message}");

    // No task, no index row, no tick: only the audit entry of the attempt
    // (and the key that schedules its expiry).
    let stored = host.kv.snapshot();
    let audit_only = |k: &String| k.starts_with("audit/") || k.starts_with("retention/");
    assert!(stored.keys().all(audit_only), "{:?}", stored.keys());
    assert!(host.queue.ticks.borrow().is_empty());
    // Nothing else of the repository was read, and no token minted.
    let repository_calls: Vec<String> =
        github.calls().iter().map(|c| c.decoded_path()).filter(|p| p.starts_with("/repos/other/lib")).collect();
    assert_eq!(repository_calls, ["/repos/other/lib/installation"]);
    assert!(github.minted_tokens().is_empty());
    let audit = stored.iter().find(|(k, _)| k.starts_with("audit/")).map(|(_, v)| v).unwrap();
    let audit: Value = serde_json::from_slice(audit).unwrap();
    assert_eq!(
        (audit["status"].as_u64(), audit["outcome"].as_str()),
        (Some(422), Some("app_not_installed")),
        "{audit}"
    );

    // GitHub failing to answer is not "not installed": 502, nothing stored.
    github.fail_next("GET", "/repos/acme/widgets/installation", 503, &[], r#"{"message":"Service Unavailable"}"#);
    let (status, body) = create(&host, &settings, "acme/widgets");
    assert_eq!((status, body["error"]["code"].as_str()), (502, Some("upstream_failed")), "{body}");
    assert!(host.kv.snapshot().keys().all(audit_only));
}

#[test]
fn a_token_deployment_never_asks_for_an_installation() {
    let (github, host) = app_world();
    github.require_token(GITHUB_TOKEN);
    let url = github.url();
    let settings = Settings::from_pairs(
        [
            ("GITHUB_API_URL", url.as_str()),
            ("GITHUB_TOKEN", GITHUB_TOKEN),
            ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "alice:tok-alice-7d41c2e9f0a8"),
            ("AGENT_ZERO_CONTROL_PLANE_MODES", "alice:observe|suggest|fix"),
            ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "acme/widgets,other/lib"),
        ]
        .into_iter()
        .chain(RUNNABLE),
    );
    // Where the App is installed and where it is not: the token reads both.
    for repository in ["acme/widgets", "other/lib"] {
        let (status, body) = create(&host, &settings, repository);
        assert_eq!(status, 201, "{repository}: {body}");
        assert_eq!(stored_installation(&host, body["id"].as_str().unwrap()), None);
    }
    assert!(github.calls().iter().all(|c| !c.decoded_path().ends_with("/installation")), "{:#?}", github.calls());
    assert!(github.minted_tokens().is_empty());
    let bearer = format!("Bearer {GITHUB_TOKEN}");
    assert!(github.calls().iter().all(|c| c.header("authorization") == Some(bearer.as_str())));
}
