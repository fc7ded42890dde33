//! The `custom` adapter against the real `agent-zero-sandbox` server on
//! loopback: a temp git repository is leased, real commands run in it.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use agent_zero_contracts::{NetworkPolicy, RunMode};
use agent_zero_ports::{HttpClient, HttpError, ManualClock};
use agent_zero_runner::providers::CustomSandbox;
use agent_zero_runner::{Command as Cmd, MemoryCoordinator, RunnerError, RunnerPool, RunnerPoolConfig, SandboxRequest, Secret};

const TOKEN: &str = "sandbox-test-token-5e1f";

#[derive(Debug)]
struct Ureq(ureq::Agent);

impl HttpClient for Ureq {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let response = self.0.run(request).map_err(|e| HttpError::Transport(e.to_string()))?;
        let (parts, mut body) = response.into_parts();
        let bytes = body.read_to_vec().map_err(|e| HttpError::Transport(e.to_string()))?;
        Ok(http::Response::from_parts(parts, bytes))
    }
}

use agent_zero_ports::block_on;

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(repos: &Path) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_agent-zero-sandbox"))
        .args(["--listen", &listen, "--repos"])
        .arg(repos)
        .env("AGENT_ZERO_SANDBOX_TOKEN", TOKEN)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if std::net::TcpStream::connect(&listen).is_ok() {
            return Server(child, format!("http://{listen}"));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("sandbox server did not start");
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "git {args:?}");
}

fn fixture_repo(root: &Path) {
    let repo = root.join("acme/app");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "--quiet", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@e", "add", "README.md"]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "--quiet", "-m", "init"]);
}

fn agent() -> Ureq {
    Ureq(ureq::Agent::config_builder().http_status_as_error(false).build().into())
}

#[test]
fn custom_provider_end_to_end() {
    let repos = tempfile::tempdir().unwrap();
    fixture_repo(repos.path());
    let server = start_server(repos.path());
    let provider = CustomSandbox::new(agent(), &server.1, Secret::new(TOKEN));
    let coordinator = MemoryCoordinator::new();
    let clock = ManualClock::new(1_000);
    let config = RunnerPoolConfig { max_output_bytes: 4_000, ..RunnerPoolConfig::default() };
    let pool = RunnerPool::new(&coordinator, &provider, &clock, config);
    block_on(async {
        let request = SandboxRequest::new("task-1", "acme/app", "main", RunMode::Fix, true, NetworkPolicy::None, 60_000);
        let runner = pool.acquire(&request, "lease-task-1-0").await.unwrap();
        let description = runner.describe();
        assert_eq!((description.provider.as_str(), description.writable, description.isolated), ("custom", true, false));
        assert_eq!(description.network, NetworkPolicy::None);

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
    let server = start_server(repos.path());
    let provider = CustomSandbox::new(agent(), &server.1, Secret::new(TOKEN));
    let coordinator = MemoryCoordinator::new();
    let clock = ManualClock::new(0);
    let pool = RunnerPool::new(&coordinator, &provider, &clock, RunnerPoolConfig::default());
    block_on(async {
        // Observe asks for write access and does not get it.
        let request = SandboxRequest::new("t2", "acme/app", "main", RunMode::Observe, true, NetworkPolicy::Restricted, 60_000);
        let runner = pool.acquire(&request, "lease-t2").await.unwrap();
        assert!(!runner.describe().writable);
        assert!(matches!(runner.write_file("README.md", "x").await, Err(RunnerError::ReadOnly { .. })));
        // The server enforces it too, for a client that skips the runner.
        let sandbox = agent_zero_runner::SandboxRef { external_id: runner.lease().external_id.clone().unwrap(), root: String::new() };
        use agent_zero_runner::SandboxProvider;
        let direct = provider.write_file(&sandbox, "README.md", b"x").await.unwrap_err();
        assert!(direct.to_string().contains("403") && direct.to_string().contains("read-only"), "{direct}");
        assert!(pool.release("lease-t2").await.unwrap());

        let wrong = CustomSandbox::new(agent(), &server.1, Secret::new("wrong-token-value"));
        let error = wrong.provision(&request, false).await.unwrap_err();
        assert!(error.to_string().contains("401"), "{error}");
        assert!(!error.to_string().contains("wrong-token-value") && !format!("{error:?}").contains("wrong-token-value"));
        assert!(!format!("{wrong:?}").contains("wrong-token-value"));
        // Unknown repositories and refs are clear errors.
        let missing = SandboxRequest::new("t3", "acme/missing", "main", RunMode::Observe, false, NetworkPolicy::None, 60_000);
        let error = pool.acquire(&missing, "lease-t3").await.unwrap_err();
        assert!(error.to_string().contains("`acme/missing` not found"), "{error}");
        assert!(coordinator.snapshot().is_empty(), "a failed provision frees its reservation");
    });
}
