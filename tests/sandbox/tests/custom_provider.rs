//! The `custom` adapter against the real `agent-zero-sandbox` server on
//! loopback: a temp git repository is leased, real commands run in it.

use std::process::Command;

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::Secret;
use agent_zero_ports::{ManualClock, block_on};
use agent_zero_runner::providers::CustomSandbox;
use agent_zero_runner::{
    ArchiveAuth, CheckoutSource, Command as Cmd, FileMode, MemoryCoordinator, Provision, RunnerError, RunnerPool,
    RunnerPoolConfig, SandboxProvider, SandboxRef, SandboxRequest,
};

mod common;

use common::{Server, Ureq, fixture_repo, git, start_server};

const TOKEN: &str = "sandbox-test-token-5e1f";

fn agent() -> Ureq {
    Ureq(ureq::Agent::config_builder().http_status_as_error(false).build().into())
}

#[test]
fn custom_provider_end_to_end() {
    let repos = tempfile::tempdir().unwrap();
    fixture_repo(repos.path());
    let server = start_server(repos.path(), TOKEN);
    let provider = CustomSandbox::new(agent(), &server.1, Secret::new(TOKEN));
    let coordinator = MemoryCoordinator::new();
    let clock = ManualClock::new(1_000);
    let config = RunnerPoolConfig { max_output_bytes: 4_000, ..RunnerPoolConfig::default() };
    let pool = RunnerPool::new(&coordinator, &provider, &clock, config);
    block_on(async {
        let request =
            SandboxRequest::new("task-1", "acme/app", "main", RunMode::Fix, true, NetworkPolicy::None, 60_000);
        let runner = pool.acquire(&request, "lease-task-1-0", &CheckoutSource::PublicClone).await.unwrap();
        let description = runner.describe();
        assert_eq!(
            (description.provider.as_str(), description.writable, description.isolated),
            ("custom", true, false)
        );
        // Asked for `none`; the reference server enforces nothing, and the evidence says so.
        assert_eq!(description.network, NetworkPolicy::Full);

        let status = runner.run(&Cmd::new(["git", "status", "--short", "--branch"], 10_000)).await.unwrap();
        assert_eq!(status.exit_code, 0, "{status:?}");
        assert!(status.stdout.contains("HEAD"), "{status:?}");

        let failing = runner.run(&Cmd::new(["git", "no-such-subcommand"], 10_000)).await.unwrap();
        assert_ne!(failing.exit_code, 0);
        assert!(failing.stderr.contains("no-such-subcommand"), "{failing:?}");

        let started = std::time::Instant::now();
        let slow = runner.run(&Cmd::new(["sleep", "30"], 300)).await.unwrap();
        assert!(slow.timed_out && slow.exit_code != 0, "{slow:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));

        // The server's own token never reaches a command's environment.
        let env = runner.run(&Cmd::new(["env"], 10_000)).await.unwrap();
        assert!(!env.stdout.contains(TOKEN));

        let loud = runner.run(&Cmd::new(["seq", "1", "100000"], 10_000)).await.unwrap();
        assert!(loud.stdout.len() + loud.stderr.len() <= 4_000);
        assert!(loud.truncated_bytes > 0 && loud.stdout.ends_with("100000\n"), "{}", loud.truncated_bytes);

        assert_eq!(runner.read_file("README.md").await.unwrap(), "hello\n");
        runner.write_file("src/new.txt", "fresh\n").await.unwrap();
        runner.write_file("README.md", "changed\n").await.unwrap();
        // Modes as the checkout holds them: the executable bit survives a
        // rewrite, a symlink is reported (never followed), absence is `None`.
        runner.write_file("tools/run.sh", "#!/bin/sh\n").await.unwrap();
        assert_eq!(runner.run(&Cmd::new(["chmod", "+x", "tools/run.sh"], 10_000)).await.unwrap().exit_code, 0);
        runner.write_file("tools/run.sh", "#!/bin/sh\necho hi\n").await.unwrap();
        assert_eq!(runner.run(&Cmd::new(["ln", "-s", "README.md", "link"], 10_000)).await.unwrap().exit_code, 0);
        let paths = ["tools/run.sh", "README.md", "link", "missing.txt"].map(String::from);
        assert_eq!(
            runner.file_modes(&paths).await.unwrap(),
            [Some(FileMode::Executable), Some(FileMode::Regular), Some(FileMode::Symlink), None]
        );
        let outside = runner.file_modes(&["../etc/passwd".to_owned()]).await;
        assert!(matches!(outside, Err(RunnerError::PathOutsideCheckout { .. })), "{outside:?}");
        let diff = runner.diff().await.unwrap();
        assert!(diff.contains("+changed") && diff.contains("src/new.txt"), "{diff}");
        let files = runner.list_files().await.unwrap();
        assert!(files.contains(&"src/new.txt".to_owned()) && files.contains(&"README.md".to_owned()), "{files:?}");
        assert!(matches!(runner.read_file("../etc/passwd").await, Err(RunnerError::PathOutsideCheckout { .. })));

        assert!(pool.release("lease-task-1-0").await.unwrap());
        assert!(!pool.release("lease-task-1-0").await.unwrap(), "second release is a no-op");
        assert!(coordinator.snapshot().is_empty());
    });
}

#[test]
fn read_only_lease_refuses_writes_at_both_ends_and_wrong_token_is_refused() {
    let repos = tempfile::tempdir().unwrap();
    fixture_repo(repos.path());
    let server = start_server(repos.path(), TOKEN);
    let provider = CustomSandbox::new(agent(), &server.1, Secret::new(TOKEN));
    let coordinator = MemoryCoordinator::new();
    let clock = ManualClock::new(0);
    let pool = RunnerPool::new(&coordinator, &provider, &clock, RunnerPoolConfig::default());
    block_on(async {
        // Observe asks for write access and does not get it.
        let request =
            SandboxRequest::new("t2", "acme/app", "main", RunMode::Observe, true, NetworkPolicy::Restricted, 60_000);
        let runner = pool.acquire(&request, "lease-t2", &CheckoutSource::PublicClone).await.unwrap();
        assert!(!runner.describe().writable);
        assert!(matches!(runner.write_file("README.md", "x").await, Err(RunnerError::ReadOnly { .. })));
        // The server enforces it too, for a client that skips the runner.
        let sandbox = SandboxRef { external_id: runner.lease().external_id.clone(), root: String::new() };
        let direct = provider.write_file(&sandbox, "README.md", b"x").await.unwrap_err();
        assert!(direct.to_string().contains("403") && direct.to_string().contains("read-only"), "{direct}");
        assert!(pool.release("lease-t2").await.unwrap());

        let wrong = CustomSandbox::new(agent(), &server.1, Secret::new("wrong-token-value"));
        let provision = Provision {
            lease_id: "lease-t2b",
            writable: false,
            source: &CheckoutSource::PublicClone,
            checkout_timeout_ms: 10_000,
        };
        let error = wrong.provision(&request, &provision).await.unwrap_err();
        assert!(error.to_string().contains("401"), "{error}");
        assert!(
            !error.to_string().contains("wrong-token-value") && !format!("{error:?}").contains("wrong-token-value")
        );
        assert!(!format!("{wrong:?}").contains("wrong-token-value"));
        // Unknown repositories and refs are clear errors.
        let missing =
            SandboxRequest::new("t3", "acme/missing", "main", RunMode::Observe, false, NetworkPolicy::None, 60_000);
        let error = pool.acquire(&missing, "lease-t3", &CheckoutSource::PublicClone).await.unwrap_err();
        assert!(error.to_string().contains("`acme/missing` not found"), "{error}");
        assert!(coordinator.snapshot().is_empty(), "a failed provision frees its reservation");
    });
}

/// Serves `archive` once per request at `/_codeload/archive.tar.gz` (any
/// query), like GitHub's codeload: the link is all the server gets.
fn archive_server(archive: Vec<u8>) -> (String, std::thread::JoinHandle<()>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/_codeload/archive.tar.gz?token=LINK-TOKEN-1", server.server_addr().to_ip().unwrap());
    let handle = std::thread::spawn(move || {
        for request in server.incoming_requests().take(2) {
            let ok = request.url().ends_with("token=LINK-TOKEN-1");
            let response = tiny_http::Response::from_data(if ok { archive.clone() } else { Vec::new() })
                .with_status_code(if ok { 200 } else { 404 });
            let _ = request.respond(response);
        }
    });
    (url, handle)
}

fn stats(server: &Server, path: &str) -> serde_json::Value {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut response =
        agent.get(&format!("{}{path}", server.1)).header("authorization", &format!("Bearer {TOKEN}")).call().unwrap();
    serde_json::from_slice(&response.body_mut().read_to_vec().unwrap()).unwrap()
}

/// The archive path: no `--repos` entry for the repository, so the only way
/// to its code is the link; the checkout has a baseline commit (diffs work),
/// the link is in no record, a replay of the same lease id finds the same
/// lease, and the server releases it itself at `leaseMs`.
#[test]
fn archive_checkout_is_idempotent_and_expires_server_side() {
    let source = tempfile::tempdir().unwrap();
    fixture_repo(source.path());
    let repo = source.path().join("acme/app");
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    git(&repo, &["update-index", "--add", "--chmod=+x", "run.sh"]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "--quiet", "-m", "script"]);
    let archive = Command::new("git")
        .args(["archive", "--format=tar.gz", "--prefix=acme-app-0123abc/", "HEAD"])
        .current_dir(&repo)
        .output()
        .unwrap()
        .stdout;
    let (url, served) = archive_server(archive);
    let empty = tempfile::tempdir().unwrap();
    let server = start_server(empty.path(), TOKEN);
    let provider = CustomSandbox::new(agent(), &server.1, Secret::new(TOKEN));
    let request = SandboxRequest::new("t4", "acme/app", "0123abc", RunMode::Fix, true, NetworkPolicy::None, 1_500);
    let source = CheckoutSource::Archive { url: Secret::new(url), commit: "0123abc".into(), authorization: None };
    let provision = Provision { lease_id: "lease-t4", writable: true, source: &source, checkout_timeout_ms: 1_000 };
    block_on(async {
        let first = provider.provision(&request, &provision).await.unwrap();
        let again = provider.provision(&request, &provision).await.unwrap();
        assert_eq!(first.external_id, again.external_id, "a replay finds the lease it made");
        let sandbox = SandboxRef { external_id: first.external_id.clone(), root: String::new() };
        assert_eq!(provider.read_file(&sandbox, "README.md").await.unwrap(), b"hello\n");
        let exec = agent_zero_runner::Exec {
            argv: vec!["./run.sh".into()],
            cwd: String::new(),
            timeout_ms: 5_000,
            max_output_bytes: 1_000,
            env: Default::default(),
        };
        assert_eq!(
            provider.exec(&sandbox, &exec).await.unwrap().stdout,
            "hi\n",
            "the executable bit survives the archive"
        );
        provider.write_file(&sandbox, "README.md", b"changed\n").await.unwrap();
        let diff = provider.diff(&sandbox).await.unwrap();
        assert!(diff.contains("-hello") && diff.contains("+changed"), "{diff}");
        let record = stats(&server, "/v1/record").to_string();
        assert!(!record.contains("LINK-TOKEN-1") && record.contains("[archive link]"), "{record}");
        assert_eq!(stats(&server, "/v1/stats")["created"], 1);
        // Past leaseMs the server has released it, whatever the client does.
        assert_eq!(stats(&server, "/v1/stats")["active"], 1);
        let started = std::time::Instant::now();
        while stats(&server, "/v1/stats")["active"] != 0 {
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "the lease never expired");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(started.elapsed() >= std::time::Duration::from_millis(200), "released at leaseMs, not at once");
        let gone = provider.read_file(&sandbox, "README.md").await.unwrap_err();
        assert!(gone.to_string().contains("not found"), "{gone}");
    });
    drop(server);
    let _ = served;
}

/// A link that does not answer 200 fails the lease with a reason that
/// never shows the link.
#[test]
fn a_bad_archive_link_is_a_clear_error_without_the_link() {
    let (url, _served) = archive_server(Vec::new());
    let url = url.replace("LINK-TOKEN-1", "EXPIRED-TOKEN-2");
    let empty = tempfile::tempdir().unwrap();
    let server = start_server(empty.path(), TOKEN);
    let provider = CustomSandbox::new(agent(), &server.1, Secret::new(TOKEN));
    let request = SandboxRequest::new("t5", "acme/app", "0123abc", RunMode::Fix, true, NetworkPolicy::None, 60_000);
    let source = CheckoutSource::Archive { url: Secret::new(url), commit: "0123abc".into(), authorization: None };
    let provision = Provision { lease_id: "lease-t5", writable: true, source: &source, checkout_timeout_ms: 5_000 };
    let error = block_on(provider.provision(&request, &provision)).unwrap_err().to_string();
    assert!(error.contains("502") && error.contains("answered 404"), "{error}");
    assert!(!error.contains("EXPIRED-TOKEN-2"), "{error}");
}

/// Serves `archive` like Gitea's archive endpoint: only to a request
/// carrying `authorization: token FORGE-TOKEN-3` (a private repository),
/// `404` otherwise, as Gitea hides what a token may not see; a request
/// with `?moved` is redirected to the archive (as a storage link would be).
/// Answers `requests` requests.
fn forge_archive_server(archive: Vec<u8>, requests: usize) -> (String, std::thread::JoinHandle<()>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/api/v1/repos/acme/app/archive/0123abc.tar.gz", server.server_addr().to_ip().unwrap());
    let handle = std::thread::spawn(move || {
        for request in server.incoming_requests().take(requests) {
            let ok = request
                .headers()
                .iter()
                .any(|h| h.field.equiv("authorization") && h.value.as_str() == "token FORGE-TOKEN-3");
            let response = if request.url().ends_with("?moved") {
                let to = request.url().trim_end_matches("?moved").to_owned();
                tiny_http::Response::from_data(Vec::new())
                    .with_status_code(302)
                    .with_header(tiny_http::Header::from_bytes("location", to).unwrap())
            } else {
                tiny_http::Response::from_data(if ok { archive.clone() } else { b"Not Found".to_vec() })
                    .with_status_code(if ok { 200 } else { 404 })
            };
            let _ = request.respond(response);
        }
    });
    (url, handle)
}

/// A forge archive that needs the token in a header: the server sends it
/// with the download (the checkout is there), never records it; the same
/// download without it fails `502 archive-failed`, and so does a redirect
/// (not followed with a header); a value that would end the header is
/// refused before any download.
#[test]
fn an_archive_needing_a_header_downloads_with_it_and_fails_without_it() {
    let source = tempfile::tempdir().unwrap();
    fixture_repo(source.path());
    let archive = Command::new("git")
        .args(["archive", "--format=tar.gz", "--prefix=app/", "HEAD"])
        .current_dir(source.path().join("acme/app"))
        .output()
        .unwrap()
        .stdout;
    let (url, served) = forge_archive_server(archive, 3);
    let empty = tempfile::tempdir().unwrap();
    let server = start_server(empty.path(), TOKEN);
    let provider = CustomSandbox::new(agent(), &server.1, Secret::new(TOKEN));
    let request = SandboxRequest::new("t6", "acme/app", "0123abc", RunMode::Fix, true, NetworkPolicy::None, 60_000);
    let archive_source = |authorization| CheckoutSource::Archive {
        url: Secret::new(url.clone()),
        commit: "0123abc".into(),
        authorization,
    };
    let token = |value: &str| Some(ArchiveAuth { name: "authorization", value: Secret::new(value) });
    let with = archive_source(token("token FORGE-TOKEN-3"));
    let without = archive_source(None);
    let bad = archive_source(token("token FORGE-TOKEN-3\r\nx-evil: 1"));
    let moved = CheckoutSource::Archive {
        url: Secret::new(format!("{url}?moved")),
        commit: "0123abc".into(),
        authorization: token("token FORGE-TOKEN-3"),
    };
    let lease = |id, source| Provision { lease_id: id, writable: true, source, checkout_timeout_ms: 5_000 };
    block_on(async {
        let made = provider.provision(&request, &lease("lease-t6", &with)).await.unwrap();
        let sandbox = SandboxRef { external_id: made.external_id, root: String::new() };
        assert_eq!(provider.read_file(&sandbox, "README.md").await.unwrap(), b"hello\n");
        let env = provider
            .exec(
                &sandbox,
                &agent_zero_runner::Exec {
                    argv: vec!["env".into()],
                    cwd: String::new(),
                    timeout_ms: 5_000,
                    max_output_bytes: 10_000,
                    env: Default::default(),
                },
            )
            .await
            .unwrap();
        assert!(!env.stdout.contains("FORGE-TOKEN"), "a command sees no forge token");

        let error = provider.provision(&request, &lease("lease-t7", &without)).await.unwrap_err().to_string();
        assert!(error.contains("502") && error.contains("archive-failed") && error.contains("answered 404"), "{error}");

        // With a header no redirect is followed: the token goes to the link's origin only.
        let error = provider.provision(&request, &lease("lease-t9", &moved)).await.unwrap_err().to_string();
        assert!(error.contains("502") && error.contains("answered 302"), "{error}");

        let error = provider.provision(&request, &lease("lease-t8", &bad)).await.unwrap_err().to_string();
        assert!(error.contains("400") && error.contains("archive.authorization"), "{error}");
        assert!(!error.contains("FORGE-TOKEN"), "{error}");
    });
    let record = stats(&server, "/v1/record");
    let creates: Vec<&serde_json::Value> =
        record["requests"].as_array().unwrap().iter().filter_map(|r| r.get("create")).collect();
    assert_eq!(creates.len(), 4);
    assert_eq!(
        creates[0]["archive"]["authorization"],
        serde_json::json!({"name": "authorization", "value": "[archive authorization]"})
    );
    assert!(creates[1]["archive"].get("authorization").is_none());
    assert!(!record.to_string().contains("FORGE-TOKEN"), "{record}");
    drop(server);
    served.join().unwrap();
}
