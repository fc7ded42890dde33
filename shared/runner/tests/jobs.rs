//! Background jobs (`Runner::start_checks`, `Runner::poll_checks`) through
//! the `custom` adapter against the real reference sandbox server
//! (`tests/sandbox`), which runs real processes: started in one call,
//! polled in later ones, as ticks do.
//!
//! The server binary is built here (`cargo build --profile tools -p
//! agent-zero-sandbox`, the build `tests/scripts/test.sh` and the
//! end-to-end harness use; cargo makes it current and answers at once when
//! it is), and started on a port it binds itself, as its own tests start it.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use agent_zero_contracts::{CheckResult, NetworkPolicy, RunMode};
use agent_zero_ports::Secret;
use agent_zero_ports::{HttpClient, HttpError, ManualClock, block_on};
use agent_zero_runner::providers::CustomSandbox;
use agent_zero_runner::{
    CheckoutSource, ChecksPoll, Command as Cmd, MemoryCoordinator, ProviderError, Runner, RunnerError, RunnerPool,
    RunnerPoolConfig, SandboxRequest,
};

const TOKEN: &str = "sandbox-jobs-token-7a31";

/// How long any job of these tests may take to be done.
const DEADLINE: Duration = Duration::from_secs(30);

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

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).build().into()
}

/// `target/tools/agent-zero-sandbox`, built (or found current) once per
/// test binary.
fn server_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(cargo)
            .args(["build", "--profile", "tools", "-p", "agent-zero-sandbox", "--message-format=json"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .output()
            .expect("cargo");
        assert!(out.status.success(), "building agent-zero-sandbox: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|message| message["target"]["name"] == "agent-zero-sandbox")
            .find_map(|message| message["executable"].as_str().map(PathBuf::from))
            .expect("cargo names the agent-zero-sandbox executable")
    })
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("agent-zero-jobs-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The reference server; on drop every lease it ran commands in is
/// released first (which ends what they left running), then the server is
/// killed.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(repos: &Path) -> Self {
        let mut child = Command::new(server_binary())
            .args(["--listen", "127.0.0.1:0", "--repos"])
            .arg(repos)
            .env("AGENT_ZERO_SANDBOX_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut server = Self { child, url: String::new() };
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let Some(address) = line.trim_end().strip_prefix("agent-zero-sandbox listening on ") else {
            panic!("sandbox server did not start: {line:?}");
        };
        server.url = format!("http://{address}");
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        server
    }

    fn get(&self, path: &str) -> Option<serde_json::Value> {
        let mut response = agent()
            .get(format!("{}{path}", self.url))
            .header("authorization", format!("Bearer {TOKEN}"))
            .call()
            .ok()?;
        serde_json::from_slice(&response.body_mut().read_to_vec().ok()?).ok()
    }

    /// Commands the server ran (`GET /v1/stats`): one per exec.
    fn runs(&self) -> u64 {
        self.get("/v1/stats").and_then(|stats| stats["runs"].as_u64()).expect("GET /v1/stats")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let record = self.get("/v1/record").unwrap_or_default();
        let mut leases: Vec<&str> =
            record["requests"].as_array().into_iter().flatten().filter_map(|r| r["lease"].as_str()).collect();
        leases.dedup();
        for lease in leases {
            let _ = agent()
                .delete(format!("{}/v1/leases/{lease}", self.url))
                .header("authorization", format!("Bearer {TOKEN}"))
                .call();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A server with `acme/app` (one commit: `README.md`), the adapter, and
/// what a pool needs. Fields drop in order: the server (and its leases)
/// before the repositories.
struct World {
    server: Server,
    provider: CustomSandbox<Ureq>,
    coordinator: MemoryCoordinator,
    clock: ManualClock,
    _repos: TempDir,
}

impl World {
    fn new() -> Self {
        let repos = TempDir::new("repos");
        let repo = repos.0.join("acme/app");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "--quiet", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "hello\n").unwrap();
        git(&repo, &["-c", "user.name=t", "-c", "user.email=t@e", "add", "README.md"]);
        git(&repo, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "--quiet", "-m", "init"]);
        let server = Server::start(&repos.0);
        let provider = CustomSandbox::new(Ureq(agent()), &server.url, Secret::new(TOKEN));
        Self { server, provider, coordinator: MemoryCoordinator::new(), clock: ManualClock::new(1_000), _repos: repos }
    }

    /// A writable lease whose runner caps output at `max_output_bytes`.
    fn runner(&self, max_output_bytes: u64) -> Runner<'_, CustomSandbox<Ureq>> {
        let config = RunnerPoolConfig { max_output_bytes, ..RunnerPoolConfig::default() };
        let pool = RunnerPool::new(&self.coordinator, &self.provider, &self.clock, config);
        let request =
            SandboxRequest::new("task-1", "acme/app", "main", RunMode::Fix, true, NetworkPolicy::None, 600_000);
        block_on(pool.acquire(&request, "lease-task-1", &CheckoutSource::PublicClone)).unwrap()
    }
}

fn sh(script: &str, timeout_ms: u64) -> Cmd {
    Cmd::new(["sh", "-c", script], timeout_ms)
}

/// Waits until `path` exists in the checkout (bounded by the timeout).
const WAIT_FOR_GO: &str = "while [ ! -f go ]; do sleep 0.05; done";

/// Polls until the job is no longer running, within [`DEADLINE`].
fn poll_until_settled(runner: &Runner<'_, CustomSandbox<Ureq>>, job: &str, commands: &[Cmd]) -> ChecksPoll {
    let deadline = Instant::now() + DEADLINE;
    loop {
        match block_on(runner.poll_checks(job, commands)).unwrap() {
            ChecksPoll::Running => assert!(Instant::now() < deadline, "job `{job}` still running after {DEADLINE:?}"),
            settled => return settled,
        }
        // Pacing between polls, as ticks are; nothing waits on it.
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn done(poll: ChecksPoll) -> Vec<CheckResult> {
    match poll {
        ChecksPoll::Done(results) => results,
        other => panic!("expected Done, got {other:?}"),
    }
}

/// Started in one call and polled in later ones: running while its first
/// command waits, then both results in order, the failing first one not
/// stopping the second. A start returns at once; a poll of a running job
/// is one exec.
#[test]
fn a_job_runs_in_the_background_and_reports_each_command_in_order() {
    let world = World::new();
    let runner = world.runner(10_000);
    let first = sh(&format!("{WAIT_FOR_GO}; echo first; echo oops >&2; exit 3"), 30_000);
    let second = sh("echo second", 30_000);
    let commands = [first.clone(), second.clone()];
    let started = Instant::now();
    block_on(runner.start_checks("job-order", &commands)).unwrap();
    assert!(started.elapsed() < Duration::from_secs(1), "the start waited on the job: {:?}", started.elapsed());
    for _ in 0..3 {
        let before = world.server.runs();
        assert_eq!(block_on(runner.poll_checks("job-order", &commands)).unwrap(), ChecksPoll::Running);
        assert_eq!(world.server.runs() - before, 1, "a poll of a running job is one exec");
    }
    block_on(runner.write_file("go", "")).unwrap();
    let results = done(poll_until_settled(&runner, "job-order", &commands));
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].command, first.argv);
    assert_eq!(
        (results[0].exit_code, results[0].stdout.as_str(), results[0].stderr.as_str(), results[0].timed_out),
        (3, "first\n", "oops\n", false)
    );
    assert_eq!(results[1].command, second.argv);
    assert_eq!((results[1].exit_code, results[1].stdout.as_str(), results[1].timed_out), (0, "second\n", false));
    assert!(results[0].duration_ms < DEADLINE.as_millis() as u64, "{results:?}");
    // Done stays done: a later poll reads the same results.
    let again = done(block_on(runner.poll_checks("job-order", &commands)).unwrap());
    assert_eq!(again, results);
}

/// Every argv element and environment value reaches the program as it
/// was, whatever shell syntax it holds, and nothing in one is executed;
/// output that looks like the poll's own markers does not confuse it; the
/// cwd is the command's own.
#[test]
fn arguments_and_environment_reach_the_program_unchanged() {
    let world = World::new();
    let runner = world.runner(10_000);
    block_on(runner.write_file("sub/keep.txt", "")).unwrap();
    let args = [
        "a b",
        "it's",
        "\"dq\"",
        "x; touch pwned-semi",
        "$(touch pwned)",
        "`touch pwned-bq`",
        "line1\nline2",
        "",
        "*",
        "$HOME",
        "-n",
        "\\",
        "'",
        "@end",
        "@cmd 0 1 2 3 4 5",
        "& touch pwned-amp |",
    ];
    let mut printf = vec!["printf", "[%s]\n"];
    printf.extend(args);
    let mut env_cmd = sh("pwd; printf '%s|%s' \"$LANG\" \"$TZ\"", 10_000).in_dir("sub");
    env_cmd.env.insert("LANG".into(), "C'; touch pwned-env; '".into());
    env_cmd.env.insert("TZ".into(), "$(touch pwned-tz)\n`x`".into());
    let commands = [Cmd::new(printf, 10_000), env_cmd];
    block_on(runner.start_checks("job-argv", &commands)).unwrap();
    let results = done(poll_until_settled(&runner, "job-argv", &commands));
    let expected: String = args.iter().map(|a| format!("[{a}]\n")).collect();
    assert_eq!((results[0].exit_code, results[0].stdout.as_str()), (0, expected.as_str()), "{results:?}");
    let (pwd, env) = results[1].stdout.split_once('\n').expect("two lines");
    assert!(pwd.ends_with("/checkout/sub"), "{pwd}");
    assert_eq!(env, "C'; touch pwned-env; '|$(touch pwned-tz)\n`x`");
    let pwned: Vec<String> =
        ["pwned", "pwned-semi", "pwned-bq", "pwned-amp", "pwned-env", "pwned-tz", "sub/pwned", "sub/pwned-env"]
            .map(str::to_owned)
            .into();
    assert_eq!(block_on(runner.file_modes(&pwned)).unwrap(), vec![None; pwned.len()], "something was executed");
    let mut files = block_on(runner.list_files()).unwrap();
    files.sort();
    assert_eq!(files, ["README.md", "sub/keep.txt"], "nothing was created in the checkout");
}

/// A command past its timeout is killed in the sandbox and reported as
/// the synchronous path reports it (`timedOut`, exit -1); the next one
/// still runs.
#[test]
fn a_command_past_its_timeout_is_killed_and_the_next_runs() {
    let world = World::new();
    let runner = world.runner(10_000);
    let commands = [sh("echo before; exec sleep 30", 1_000), sh("echo after", 10_000)];
    block_on(runner.start_checks("job-timeout", &commands)).unwrap();
    let results = done(poll_until_settled(&runner, "job-timeout", &commands));
    assert_eq!((results[0].exit_code, results[0].timed_out), (-1, true), "{results:?}");
    assert_eq!(results[0].stdout, "before\n");
    assert!((1_000..10_000).contains(&results[0].duration_ms), "{results:?}");
    assert_eq!((results[1].exit_code, results[1].timed_out, results[1].stdout.as_str()), (0, false, "after\n"));
    let sync = block_on(runner.run(&commands[0])).unwrap();
    assert_eq!((sync.exit_code, sync.timed_out, sync.stdout.as_str()), (-1, true, "before\n"));
}

/// Output over the cap keeps its tail and counts what was dropped, to the
/// byte the synchronous `run` of the same command reports; bytes that are
/// not UTF-8 do not break the poll.
#[test]
fn output_is_capped_to_its_tail_and_need_not_be_utf8() {
    let world = World::new();
    let runner = world.runner(1_000);
    let loud = sh(
        "i=0; while [ $i -lt 500 ]; do printf 0123456789; i=$((i + 1)); done; printf END; \
         i=0; while [ $i -lt 30 ]; do printf eeeeeeeeee >&2; i=$((i + 1)); done",
        10_000,
    );
    let binary = sh("printf 'ok \\377\\376\\000 done\\n'; printf '\\303\\050' >&2", 10_000);
    let commands = [loud.clone(), binary.clone()];
    block_on(runner.start_checks("job-output", &commands)).unwrap();
    let results = done(poll_until_settled(&runner, "job-output", &commands));
    let loud_result = &results[0];
    assert!(loud_result.stdout.ends_with("789END"), "{loud_result:?}");
    assert!(loud_result.stdout.len() + loud_result.stderr.len() <= 1_000, "{loud_result:?}");
    assert_eq!(loud_result.stdout.len() as u64 + loud_result.stderr.len() as u64 + loud_result.truncated_bytes, 5_303);
    let sync = block_on(runner.run(&loud)).unwrap();
    assert_eq!(
        (&sync.stdout, &sync.stderr, sync.truncated_bytes, sync.exit_code),
        (&loud_result.stdout, &loud_result.stderr, loud_result.truncated_bytes, loud_result.exit_code)
    );
    assert_eq!(results[1].exit_code, 0);
    assert_eq!(results[1].stdout, "ok \u{FFFD}\u{FFFD}\0 done\n");
    assert_eq!(results[1].stderr, "\u{FFFD}(");
}

/// A replayed start runs nothing: the command appends to a file once,
/// whether the second start comes while the job runs or after it is done.
/// The same id with other commands is refused.
#[test]
fn starting_a_job_twice_runs_it_once() {
    let world = World::new();
    let runner = world.runner(10_000);
    let commands = [sh(&format!("{WAIT_FOR_GO}; echo run >> runs.txt"), 30_000)];
    block_on(runner.start_checks("job-once", &commands)).unwrap();
    block_on(runner.start_checks("job-once", &commands)).unwrap();
    assert_eq!(block_on(runner.poll_checks("job-once", &commands)).unwrap(), ChecksPoll::Running);
    block_on(runner.write_file("go", "")).unwrap();
    let first = done(poll_until_settled(&runner, "job-once", &commands));
    assert_eq!(first[0].exit_code, 0, "{first:?}");
    block_on(runner.start_checks("job-once", &commands)).unwrap();
    let again = done(poll_until_settled(&runner, "job-once", &commands));
    assert_eq!(again, first);
    assert_eq!(block_on(runner.read_file("runs.txt")).unwrap(), "run\n");
    let other = [sh("echo other >> runs.txt", 30_000)];
    let refused = block_on(runner.start_checks("job-once", &other)).unwrap_err();
    assert!(matches!(refused, RunnerError::Provider(ProviderError::Refused { .. })), "{refused:?}");
    let refused = block_on(runner.poll_checks("job-once", &other)).unwrap_err();
    assert!(matches!(refused, RunnerError::Provider(ProviderError::Refused { .. })), "{refused:?}");
    assert_eq!(block_on(runner.read_file("runs.txt")).unwrap(), "run\n");
}

/// A job whose process was killed polls as lost; so does one never
/// started.
#[test]
fn a_killed_job_and_an_unknown_job_are_lost() {
    let world = World::new();
    let runner = world.runner(10_000);
    let commands = [sh(WAIT_FOR_GO, 30_000), sh("echo never", 30_000)];
    block_on(runner.start_checks("job-killed", &commands)).unwrap();
    assert_eq!(block_on(runner.poll_checks("job-killed", &commands)).unwrap(), ChecksPoll::Running);
    // The runner leads its own process group (`setsid`): kill the group,
    // found from its pid file in the job directory.
    let kill = Cmd::new(
        ["sh", "-c", r#"kill -KILL "-$(cat "${TMPDIR:-/tmp}/agent-zero-jobs/$1/pid")""#, "kill", "job-killed"],
        10_000,
    );
    let killed = block_on(runner.run(&kill)).unwrap();
    assert_eq!(killed.exit_code, 0, "{killed:?}");
    let ChecksPoll::Lost(reason) = poll_until_settled(&runner, "job-killed", &commands) else {
        panic!("a killed job must be lost")
    };
    assert!(reason.contains("killed"), "{reason}");
    // Its waiting command, in a process group of its own under `timeout`,
    // may still run: creating `go` now finishes nothing.
    block_on(runner.write_file("go", "")).unwrap();
    let still = block_on(runner.poll_checks("job-killed", &commands)).unwrap();
    assert!(matches!(still, ChecksPoll::Lost(_)), "{still:?}");

    let ChecksPoll::Lost(reason) = block_on(runner.poll_checks("job-never-started", &commands)).unwrap() else {
        panic!("a job never started must be lost")
    };
    assert!(reason.contains("no trace"), "{reason}");
}

/// The job's files live outside the checkout: neither the file list nor
/// the diff sees them, though they are there.
#[test]
fn the_job_files_stay_out_of_the_checkout() {
    let world = World::new();
    let runner = world.runner(10_000);
    let before = block_on(runner.list_files()).unwrap();
    let commands = [sh("echo out; echo err >&2", 10_000)];
    block_on(runner.start_checks("job-files", &commands)).unwrap();
    let results = done(poll_until_settled(&runner, "job-files", &commands));
    assert_eq!(results[0].stdout, "out\n");
    let listing = block_on(
        runner.run(&Cmd::new(["sh", "-c", r#"ls "${TMPDIR:-/tmp}/agent-zero-jobs/$1""#, "ls", "job-files"], 10_000)),
    )
    .unwrap();
    for file in ["1.out", "1.err", "1.exit", "done", "pid", "spec"] {
        assert!(listing.stdout.lines().any(|l| l == file), "`{file}` in {listing:?}");
    }
    assert_eq!(block_on(runner.list_files()).unwrap(), before);
    assert_eq!(block_on(runner.diff()).unwrap(), "");
}

/// A job id that cannot name a directory is refused before anything
/// reaches the sandbox, with the field named; commands are validated as
/// `run` validates them.
#[test]
fn invalid_job_ids_and_commands_are_refused() {
    let world = World::new();
    let runner = world.runner(10_000);
    let commands = [sh("true", 10_000)];
    let runs = world.server.runs();
    let long = "x".repeat(65);
    for bad in ["", ".", "..", "a/b", "../up", "a b", "é", "$(x)", "a\nb", long.as_str()] {
        for result in [
            block_on(runner.start_checks(bad, &commands)).map(|()| ChecksPoll::Running),
            block_on(runner.poll_checks(bad, &commands)),
        ] {
            assert!(matches!(result, Err(RunnerError::InvalidCommand { field: "jobId", .. })), "{bad:?}: {result:?}");
        }
    }
    let mut bad_env = sh("true", 10_000);
    bad_env.env.insert("LD_PRELOAD".into(), "x".into());
    let refusals = [(Cmd::new(Vec::<String>::new(), 10_000), "argv"), (sh("true", 0), "timeoutMs"), (bad_env, "env")];
    for (command, field) in refusals {
        let result = block_on(runner.start_checks("job-ok", &[command]));
        assert!(
            matches!(result, Err(RunnerError::InvalidCommand { field: f, .. }) if f == field),
            "{field}: {result:?}"
        );
    }
    let outside = block_on(runner.start_checks("job-ok", &[sh("true", 10_000).in_dir("../x")]));
    assert!(matches!(outside, Err(RunnerError::PathOutsideCheckout { field: "cwd", .. })), "{outside:?}");
    assert_eq!(world.server.runs(), runs, "nothing reached the sandbox");
    let longest = "x".repeat(64);
    block_on(runner.start_checks(&longest, &commands)).unwrap();
    assert_eq!(done(poll_until_settled(&runner, &longest, &commands))[0].exit_code, 0);
}
