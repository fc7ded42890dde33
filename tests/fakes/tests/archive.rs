//! The fake's repository archives through the product's own GitHub client
//! (`archive_link`): a private repository is a 404 to an anonymous caller,
//! the tarball endpoint is a 302 to a short-lived link that needs no
//! `Authorization`, and the archive unpacks with `tar` to the commit's files.

use agent_zero_fakes::{FakeGitHub, FixtureRepo, calc};
use agent_zero_github::{ApiConfig, GitHubClient, GitHubError};
use agent_zero_ports::Secret;
use agent_zero_ports::{HttpClient, HttpError, block_on};

/// A client that does not follow redirects (what both hosts' ports do).
struct NoRedirects(ureq::Agent);

impl HttpClient for NoRedirects {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let response = self.0.run(request).map_err(|e| HttpError::Transport(e.to_string()))?;
        let (parts, mut body) = response.into_parts();
        let bytes = body.read_to_vec().map_err(|e| HttpError::Transport(e.to_string()))?;
        Ok(http::Response::from_parts(parts, bytes))
    }
}

fn client() -> NoRedirects {
    NoRedirects(ureq::Agent::config_builder().http_status_as_error(false).max_redirects(0).build().into())
}

fn get(http: &NoRedirects, url: &str) -> http::Response<Vec<u8>> {
    block_on(http.send(http::Request::get(url).body(Vec::new()).unwrap())).unwrap()
}

#[test]
fn private_archive_links_are_short_lived_scoped_and_unpack_to_the_commit() {
    let repo = FixtureRepo::calc("acme", "secret-calc").build().unwrap();
    let gh = FakeGitHub::start();
    gh.add_fixture(&repo);
    gh.set_private("acme", "secret-calc", true);
    gh.require_token("ghp_archive");
    let http = client();
    let config = ApiConfig::new(Some(&gh.url()), "agent-zero-fakes-test").unwrap();
    let head = repo.head_sha();

    let anonymous = GitHubClient::new(&http, &config);
    let refused = block_on(anonymous.archive_link("acme", "secret-calc", &head)).unwrap_err();
    assert!(matches!(refused, GitHubError::Status { status: 404, .. }), "{refused}");

    let client = GitHubClient::new(&http, &config).with_token(Secret::new("ghp_archive"));
    let link = block_on(client.archive_link("acme", "secret-calc", &head)).unwrap();
    assert!(link.expose().contains("token=") && !link.expose().contains("ghp_archive"));
    assert_eq!(format!("{link:?}"), "Secret([redacted])");

    // The link alone downloads the archive: no Authorization header.
    let archive = get(&http, link.expose());
    assert_eq!(archive.status(), 200);
    assert_eq!(archive.headers()["content-type"], "application/x-gzip");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.tar.gz");
    std::fs::write(&file, archive.body()).unwrap();
    let status = std::process::Command::new("tar").arg("-xzf").arg(&file).arg("-C").arg(dir.path()).status().unwrap();
    assert!(status.success());
    let root = dir.path().join(format!("acme-secret-calc-{}", &head[..7]));
    assert_eq!(std::fs::read_to_string(root.join(calc::BUG_PATH)).unwrap(), calc::CALC_PY);

    // Scoped: the same token for another commit is refused; a forged one too.
    let fork_head = gh.add_pull_head("acme", "secret-calc", 7, &[(calc::BUG_PATH, calc::CALC_PY_FIXED)]);
    let other = link.expose().replace(&head, &fork_head);
    assert_eq!(get(&http, &other).status(), 404);
    let forged = format!("{}0", link.expose());
    assert_eq!(get(&http, &forged).status(), 404);

    // A fork's head is served through the base repository.
    let fork_link = block_on(client.archive_link("acme", "secret-calc", &fork_head)).unwrap();
    let fork_archive = get(&http, fork_link.expose());
    assert_eq!(fork_archive.status(), 200);
    assert!(
        gh.branch_sha("acme", "secret-calc", "main") != Some(fork_head.clone()),
        "no branch points at the fork head"
    );
}
