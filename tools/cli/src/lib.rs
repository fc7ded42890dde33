//! `agent-zero`, the operator's command line:
//!
//! - `init policy` (plain `init`) writes a commented `.agent-zero.yml` for
//!   the repository in the current directory (checks detected by the
//!   deployment's own discovery);
//! - `init cloudflare` and `init spin` deploy this checkout with the
//!   platform's own CLI, settings from a local env file (`.env.deploy`);
//! - `init github-app` registers the deployment's GitHub App from
//!   `github-app.json` (GitHub's manifest flow) and writes its credentials
//!   into that env file;
//! - `doctor` checks a deployment as a user would hit it, one line per
//!   check with the fix to make;
//! - `tasks list|show|create|approve|reject|evidence|watch|overview` over
//!   the task API;
//! - `review <pr-url>` and `fix <issue-url>` start a run on the deployment
//!   and follow it, exiting 0 when it completes, 1 when it fails or is
//!   refused, 2 when a person must decide (the reference's exit codes);
//! - `login` and `logout` save and forget a deployment and its token;
//! - `replay` folds a task's raw log with the deployment's own crates and
//!   proves its stored evidence is reproduced byte for byte;
//! - `verify` checks an evidence receipt offline against the deployment's
//!   published keys, the evidence and the log (docs/receipts.md).
//!
//! I/O boundary: [`run_with`] takes the arguments, the working directory,
//! where a saved login lives ([`Env`]) and the two output streams
//! ([`run`] reads that place from the process's environment); HTTP goes through [`api::Api`] (ureq); `init
//! cloudflare|spin` runs the configured wrangler or spin program; `init
//! github-app` listens on 127.0.0.1 for GitHub's redirect. Every command
//! is a function of those, so the tests drive it in-process.

#![forbid(unsafe_code)]

pub mod api;
mod deploy;
mod doctor;
mod env_edit;
mod github_app;
mod init;
mod login;
mod page_url;
mod replay;
mod start;
mod tasks;
mod text;
pub mod verify;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use agent_zero_contracts::ForgeKind;
use clap::{Args, Parser, Subcommand, ValueEnum};

// One scheme for every command, the reference's (`zero`): 0 done, 1 failed
// or refused, 2 a person decides next (docs/cli.md, "Exit status").

/// Exit status of a command that did what was asked, and of a followed
/// task that `completed`.
pub const EXIT_OK: u8 = 0;
/// Exit status of anything that failed or was refused: a followed task
/// that stopped `failed` or `ignored` (the policy declined it), a create
/// the API refused, a failed check, a reproduced difference, an API error,
/// a timeout, a command line that does not parse.
pub const EXIT_FAILED: u8 = 1;
/// Exit status of a followed task that stopped `needs-human`: a person
/// decides next (`tasks approve|reject`, or the dashboard).
pub const EXIT_NEEDS_HUMAN: u8 = 2;

/// What a command reads from its surroundings besides its arguments: the
/// directory of the saved login.
#[derive(Debug, Clone, Default)]
pub struct Env {
    config_dir: Option<PathBuf>,
}

impl Env {
    /// `$XDG_CONFIG_HOME/agent-zero`, else `$HOME/.config/agent-zero`.
    pub fn from_process() -> Self {
        let var = |name: &str| std::env::var(name).ok();
        Self { config_dir: login::config_dir(var("XDG_CONFIG_HOME").as_deref(), var("HOME").as_deref()) }
    }

    /// The saved login lives in `dir`.
    pub fn with_config_dir(dir: &Path) -> Self {
        Self { config_dir: Some(dir.to_owned()) }
    }
}

#[derive(Debug, Parser)]
#[command(name = "agent-zero", version, about = "Set up, check and operate an Agent Zero Edge deployment")]
struct Cli {
    #[command(subcommand)]
    command: CliCommand,
}

#[derive(Debug, Subcommand)]
enum CliCommand {
    /// Set up: `init policy` (plain `init`) writes a repository's `.agent-zero.yml`;
    /// `init github-app` registers the GitHub App; `init cloudflare` and `init spin` deploy this checkout.
    Init(InitArgs),
    /// Check a deployment: health, capabilities, webhook secret, GitHub, model, sandbox, storage.
    Doctor(DoctorArgs),
    /// List, show, create, watch, approve, reject a deployment's tasks, fetch their evidence, count them.
    Tasks(TasksArgs),
    /// Fold a task's raw log locally and prove its stored evidence is reproduced byte for byte.
    Replay(ReplayArgs),
    /// Check an evidence receipt offline: its signature under the deployment's published keys and,
    /// given them, that the evidence and the log are the ones signed and the log folds to the evidence.
    Verify(VerifyArgs),
    /// Review a pull request (a GitLab merge request) on the deployment and follow the run. Exit
    /// status: 0 completed, 1 failed or refused, 2 needs a person.
    Review(StartArgs),
    /// Work on an issue on the deployment (mode `fix` unless --mode) and
    /// follow the run. Exit status: 0 completed, 1 failed or refused, 2
    /// needs a person.
    Fix(StartArgs),
    /// Check a deployment's URL and token and save them for the commands
    /// given neither (owner-only file in the config directory).
    Login {
        /// The deployment's base URL.
        #[arg(long, env = "AGENT_ZERO_URL")]
        url: String,
        /// A control-plane token; prefer AGENT_ZERO_TOKEN (keeps it out of shell history).
        #[arg(long, env = "AGENT_ZERO_TOKEN", hide_env_values = true)]
        token: String,
    },
    /// Forget the saved login.
    Logout,
}

/// Which deployment, and as whom: a flag, else its environment variable,
/// else the saved login (`agent-zero login`).
#[derive(Debug, Clone, Args)]
struct TargetArgs {
    /// The deployment's base URL (`https://zero.example.workers.dev`); default: the saved login's.
    #[arg(long, env = "AGENT_ZERO_URL")]
    url: Option<String>,
    /// A control-plane token (`AGENT_ZERO_CONTROL_PLANE_TOKENS`); sent only as a bearer header.
    #[arg(long, env = "AGENT_ZERO_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

impl TargetArgs {
    /// The deployment and token to use ([`login::resolve`]); the saved
    /// login is read only when a flag or variable is missing.
    fn resolve(&self, env: &Env) -> Result<Target, String> {
        if let (Some(url), Some(token)) = (&self.url, &self.token) {
            return login::resolve(Some(url), Some(token), None);
        }
        let saved = match &env.config_dir {
            Some(dir) => login::read(dir)?,
            None => None,
        };
        login::resolve(self.url.as_deref(), self.token.as_deref(), saved.as_ref())
    }
}

/// A deployment and token, resolved.
#[derive(Debug, Clone)]
struct Target {
    url: String,
    token: Option<String>,
}

/// How long and how often a followed task is read.
#[derive(Debug, Clone, Copy, Args)]
struct FollowArgs {
    /// Most seconds to wait.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Milliseconds between reads.
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
}

/// `review` and `fix`.
#[derive(Debug, Args)]
struct StartArgs {
    /// The pull request's (`review`) or issue's (`fix`) page: https://github.com/OWNER/REPO/pull/N
    /// or .../issues/N; GitLab's https://HOST/NAMESPACE/PROJECT/-/merge_requests/N or .../-/issues/N;
    /// Gitea's and Forgejo's https://HOST/OWNER/REPO/pulls/N or .../issues/N (with --forge).
    page: String,
    /// The page's forge. Needed for a Gitea or Forgejo page (their pages look alike) and for GitHub
    /// Enterprise Server's; without it github.com is GitHub and a path with `/-/` is GitLab.
    #[arg(long, value_enum)]
    forge: Option<Forge>,
    /// The mode to request (observe, suggest, fix, autonomous); it must be granted to the token,
    /// and the run takes the lower of it and the repository's policy. Default: observe for
    /// `review`, fix for `fix`.
    #[arg(long)]
    mode: Option<String>,
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    follow: FollowArgs,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
struct InitArgs {
    #[command(subcommand)]
    command: Option<InitCommand>,
    /// Replace an existing `.agent-zero.yml` (plain `init` is `init policy`).
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Subcommand)]
enum InitCommand {
    /// Write a commented `.agent-zero.yml` for the repository here.
    Policy {
        /// Replace an existing `.agent-zero.yml`.
        #[arg(long)]
        force: bool,
    },
    /// Deploy this checkout to Cloudflare Workers: queues, KV namespace, secrets, both workers.
    Cloudflare {
        #[command(flatten)]
        deploy: DeployArgs,
        /// The wrangler command to run.
        #[arg(long, env = "AGENT_ZERO_WRANGLER", default_value = "npx --prefix tests/node wrangler")]
        wrangler: String,
    },
    /// Deploy this checkout to Spin (`spin deploy` with `--variable` per setting).
    Spin {
        #[command(flatten)]
        deploy: DeployArgs,
        /// The spin command to run.
        #[arg(long, env = "AGENT_ZERO_SPIN", default_value = "spin")]
        spin: String,
    },
    /// Register the deployment's GitHub App from `github-app.json` (GitHub's
    /// manifest flow, in a browser) and write its id, key, webhook secret and
    /// OAuth client into the env file.
    GithubApp(GithubAppArgs),
}

#[derive(Debug, Args)]
struct GithubAppArgs {
    /// The deployment's base URL (`https://agent-zero-edge.<you>.workers.dev`,
    /// with `AGENT_ZERO_BASE_PATH` when set): webhook and sign-in URLs hang off it.
    #[arg(long, env = "AGENT_ZERO_URL")]
    url: String,
    /// Register the App for this organisation (you must own it), not your account.
    #[arg(long)]
    org: Option<String>,
    /// The App's name, unique on GitHub (default `Agent Zero (<host>)`).
    #[arg(long)]
    name: Option<String>,
    /// `AGENT_ZERO_DASHBOARD_USERS` to set: these people sign in to the dashboard with the App.
    #[arg(long)]
    dashboard_users: Option<String>,
    /// The env file the credentials go into (created when absent).
    #[arg(long, default_value = ".env.deploy")]
    env_file: PathBuf,
    /// Where people sign in to GitHub (`https://HOST` for GitHub Enterprise Server).
    #[arg(long, default_value = "https://github.com")]
    github_url: String,
    /// GitHub's REST API (`https://HOST/api/v3` for GitHub Enterprise Server).
    #[arg(long, env = "GITHUB_API_URL", default_value = "https://api.github.com")]
    api_url: String,
    /// The loopback port GitHub sends the browser back to (0: any free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Most seconds to wait for GitHub's redirect.
    #[arg(long, default_value_t = 900)]
    timeout: u64,
}

/// Where the settings come from, and whether to run the commands.
#[derive(Debug, Args)]
struct DeployArgs {
    /// The env file of settings (`NAME=value` lines; README, "Deploy").
    #[arg(long, default_value = ".env.deploy")]
    env_file: PathBuf,
    /// Print the commands (secret values masked) instead of running them.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Args)]
struct DoctorArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The deployment's `GITHUB_WEBHOOK_SECRET`: sends a signed `ping` delivery with it.
    #[arg(long, env = "AGENT_ZERO_WEBHOOK_SECRET", hide_env_values = true)]
    webhook_secret: Option<String>,
    /// One JSON object for scripts instead of lines.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct TasksArgs {
    #[command(flatten)]
    target: TargetArgs,
    #[command(subcommand)]
    command: TasksCommand,
}

#[derive(Debug, Subcommand)]
enum TasksCommand {
    /// Newest first.
    List {
        /// Only tasks of `owner/name`.
        #[arg(long)]
        repository: Option<String>,
        /// Only tasks in this state (`needs-human`, `completed`, ...).
        #[arg(long)]
        state: Option<String>,
        /// Rows on one page (1 to 100).
        #[arg(long)]
        limit: Option<u32>,
        /// The `nextCursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
        /// The API's JSON as given.
        #[arg(long)]
        json: bool,
    },
    /// One task with its events and result.
    Show {
        id: String,
        /// The API's JSON as given.
        #[arg(long)]
        json: bool,
    },
    /// Approve a `needs-human` task (recorded under the token's principal).
    Approve {
        id: String,
        #[arg(long)]
        comment: Option<String>,
    },
    /// Reject a `needs-human` task.
    Reject {
        id: String,
        #[arg(long)]
        comment: Option<String>,
    },
    /// Creates a task (`POST /api/v1/tasks`) from the flags or a JSON body
    /// file; with --watch, follows it as `watch` does.
    Create(CreateArgs),
    /// Follows a task until it stops (completed, failed, needs-human,
    /// ignored), printing each event as it happens. Exit status: 0 on
    /// completed, 1 on failed or ignored (and on an API error or the
    /// timeout), 2 on needs-human.
    Watch {
        id: String,
        #[command(flatten)]
        follow: FollowArgs,
    },
    /// The dashboard's counters: running, queued, needs-human, failed in the last day.
    Overview {
        /// Only tasks of `owner/name`.
        #[arg(long)]
        repository: Option<String>,
        /// The API's JSON as given.
        #[arg(long)]
        json: bool,
    },
    /// A concluded task's evidence, as the API renders it.
    Evidence {
        id: String,
        #[arg(long, value_enum, default_value_t = EvidenceFormat::Markdown)]
        format: EvidenceFormat,
    },
}

/// `tasks create`: the body of `POST /api/v1/tasks` (docs/task-api.md),
/// from flags or from a file.
#[derive(Debug, Args)]
struct CreateArgs {
    /// The repository's path on its forge: `owner/name` on GitHub, Gitea and Forgejo,
    /// `namespace/project` on GitLab (the namespace may be nested: `group/sub/project`).
    #[arg(long, required_unless_present = "body")]
    repository: Option<String>,
    /// The forge the repository lives on (default github).
    #[arg(long, value_enum, conflicts_with = "body")]
    forge: Option<Forge>,
    /// `feedback`, `proactive` (a pull request's review) or `issue`.
    #[arg(long, required_unless_present = "body")]
    trigger: Option<String>,
    /// The mode to request (default observe).
    #[arg(long, conflicts_with = "body")]
    mode: Option<String>,
    /// One feedback item's text (repeat for more).
    #[arg(long = "feedback", conflicts_with = "body")]
    feedback: Vec<String>,
    /// The pull request's number.
    #[arg(long = "pr", conflicts_with = "body")]
    pull_request: Option<u64>,
    /// The pull request's head commit (default: its current head, read by the deployment).
    #[arg(long, requires = "pull_request")]
    head: Option<String>,
    /// The issue's number.
    #[arg(long, conflicts_with = "body")]
    issue: Option<u64>,
    /// A repository-relative path the task is scoped to (repeat for more).
    #[arg(long = "file", conflicts_with = "body")]
    files: Vec<String>,
    /// The whole request body, a JSON file as the API takes it.
    #[arg(long, conflicts_with_all = ["repository", "trigger"])]
    body: Option<PathBuf>,
    /// Follow the task until it stops, with `watch`'s exit status.
    #[arg(long)]
    watch: bool,
    #[command(flatten)]
    follow: FollowArgs,
}

/// A forge, as `--forge` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Forge {
    Github,
    Gitlab,
    Gitea,
    Forgejo,
}

impl From<Forge> for ForgeKind {
    fn from(forge: Forge) -> Self {
        match forge {
            Forge::Github => Self::GitHub,
            Forge::Gitlab => Self::GitLab,
            Forge::Gitea => Self::Gitea,
            Forge::Forgejo => Self::Forgejo,
        }
    }
}

/// The evidence representations the API serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EvidenceFormat {
    #[value(name = "md")]
    Markdown,
    Json,
    Html,
}

impl EvidenceFormat {
    const fn suffix(self) -> &'static str {
        match self {
            Self::Markdown => "md",
            Self::Json => "json",
            Self::Html => "html",
        }
    }
}

#[derive(Debug, Args)]
struct ReplayArgs {
    /// The task id.
    task: String,
    #[command(flatten)]
    target: TargetArgs,
    /// Replay this log file (the `GET /api/v1/tasks/{id}/log` JSON) instead of fetching it.
    #[arg(long)]
    log: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct VerifyArgs {
    /// The receipt (`GET /api/v1/tasks/{id}/receipt`), a file.
    receipt: PathBuf,
    /// The deployment's key set: a file, or its URL (`https://HOST/.well-known/agent-zero/keys`).
    #[arg(long)]
    keys: String,
    /// The evidence (`GET /api/v1/tasks/{id}/evidence.json`), a file.
    #[arg(long)]
    evidence: Option<PathBuf>,
    /// The raw log (`GET /api/v1/tasks/{id}/log`), a file: checked and folded.
    #[arg(long)]
    log: Option<PathBuf>,
}

/// Runs the command line `args` (program name first) in directory `cwd`,
/// writing results to `out` and diagnostics to `err`; the exit status. The
/// saved login is the user's ([`Env::from_process`]).
pub fn run<I, T>(args: I, cwd: &Path, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_with(&Env::from_process(), args, cwd, out, err)
}

/// [`run`] with the saved login in `env`'s place.
pub fn run_with<I, T>(env: &Env, args: I, cwd: &Path, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let to_out = !error.use_stderr();
            let rendered = error.render().to_string();
            let _ = if to_out { out.write_all(rendered.as_bytes()) } else { err.write_all(rendered.as_bytes()) };
            // Not clap's 2: that is "a person decides" here.
            return if to_out { EXIT_OK } else { EXIT_FAILED };
        }
    };
    let config_dir = env.config_dir.as_deref();
    let result = match cli.command {
        CliCommand::Init(args) => match args.command {
            None => init::run(cwd, args.force, out),
            Some(InitCommand::Policy { force }) => init::run(cwd, force, out),
            Some(InitCommand::Cloudflare { deploy, wrangler }) => {
                deploy::run(deploy::Platform::Cloudflare, cwd, &deploy.env_file, &wrangler, deploy.dry_run, out)
            }
            Some(InitCommand::Spin { deploy, spin }) => {
                deploy::run(deploy::Platform::Spin, cwd, &deploy.env_file, &spin, deploy.dry_run, out)
            }
            Some(InitCommand::GithubApp(a)) => {
                let options = github_app::Options {
                    url: &a.url,
                    org: a.org.as_deref(),
                    name: a.name.as_deref(),
                    github_url: &a.github_url,
                    api_url: &a.api_url,
                    env_file: &a.env_file,
                    dashboard_users: a.dashboard_users.as_deref(),
                    port: a.port,
                    timeout: std::time::Duration::from_secs(a.timeout),
                };
                github_app::run(&options, cwd, out)
            }
        },
        CliCommand::Doctor(args) => args
            .target
            .resolve(env)
            .and_then(|target| doctor::run(&target, args.webhook_secret.as_deref(), args.json, out)),
        CliCommand::Tasks(args) => args.target.resolve(env).and_then(|target| match args.command {
            TasksCommand::Create(create) => start::create(&target, &create, cwd, out),
            command => tasks::run(&target, command, out),
        }),
        CliCommand::Replay(args) => {
            args.target.resolve(env).and_then(|target| replay::run(&target, &args.task, args.log.as_deref(), cwd, out))
        }
        CliCommand::Verify(args) => {
            verify::run(&args.receipt, &args.keys, args.evidence.as_deref(), args.log.as_deref(), cwd, out)
        }
        CliCommand::Review(args) => start::review(&args, env, out),
        CliCommand::Fix(args) => start::fix(&args, env, out),
        CliCommand::Login { url, token } => login::login(config_dir, &url, &token, out),
        CliCommand::Logout => login::logout(config_dir, out),
    };
    match result {
        Ok(status) => status,
        Err(message) => {
            let _ = writeln!(err, "agent-zero: {message}");
            EXIT_FAILED
        }
    }
}

#[cfg(test)]
mod deploy_tests;
#[cfg(test)]
mod github_app_tests;
#[cfg(test)]
mod start_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod verify_tests;
