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
//! - `tasks list|show|approve|reject|evidence` over the task API;
//! - `replay` folds a task's raw log with the deployment's own crates and
//!   proves its stored evidence is reproduced byte for byte.
//!
//! I/O boundary: [`run`] takes the arguments, the working directory and the
//! two output streams; HTTP goes through [`api::Api`] (ureq); `init
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
mod replay;
mod tasks;
mod text;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Exit status of a command that did what was asked.
pub const EXIT_OK: u8 = 0;
/// Exit status of a failed check, a reproduced difference, or an API error.
pub const EXIT_FAILED: u8 = 1;
/// Exit status of a command line clap refused.
pub const EXIT_USAGE: u8 = 2;
/// Exit status of `tasks watch` when the task stopped `failed`.
pub const EXIT_TASK_FAILED: u8 = 3;
/// Exit status of `tasks watch` when the task stopped `needs-human` (a
/// person decides next).
pub const EXIT_TASK_NEEDS_HUMAN: u8 = 4;

#[derive(Debug, Parser)]
#[command(name = "agent-zero", version, about = "Set up, check and operate an Agent Zero Edge deployment")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Set up: `init policy` (plain `init`) writes a repository's `.agent-zero.yml`;
    /// `init github-app` registers the GitHub App; `init cloudflare` and `init spin` deploy this checkout.
    Init(InitArgs),
    /// Check a deployment: health, capabilities, webhook secret, GitHub, model, sandbox, storage.
    Doctor(DoctorArgs),
    /// List, show, approve, reject a deployment's tasks, or fetch their evidence.
    Tasks(TasksArgs),
    /// Fold a task's raw log locally and prove its stored evidence is reproduced byte for byte.
    Replay(ReplayArgs),
}

/// Which deployment, and as whom.
#[derive(Debug, Clone, Args)]
struct Target {
    /// The deployment's base URL (`https://zero.example.workers.dev`).
    #[arg(long, env = "AGENT_ZERO_URL")]
    url: String,
    /// A control-plane token (`AGENT_ZERO_CONTROL_PLANE_TOKENS`); sent only as a bearer header.
    #[arg(long, env = "AGENT_ZERO_TOKEN", hide_env_values = true)]
    token: Option<String>,
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
        #[arg(long, env = "AGENT_ZERO_WRANGLER", default_value = "npx wrangler")]
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
    target: Target,
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
    target: Target,
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
    /// Follows a task until it stops (completed, failed, needs-human,
    /// ignored), printing each event as it happens. Exit status: 0 on
    /// completed or ignored, 3 on failed, 4 on needs-human, 1 on an API
    /// error or the timeout.
    Watch {
        id: String,
        /// Most seconds to wait.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
        /// Milliseconds between reads.
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
    },
    /// A concluded task's evidence, as the API renders it.
    Evidence {
        id: String,
        #[arg(long, value_enum, default_value_t = EvidenceFormat::Markdown)]
        format: EvidenceFormat,
    },
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
    target: Target,
    /// Replay this log file (the `GET /api/v1/tasks/{id}/log` JSON) instead of fetching it.
    #[arg(long)]
    log: Option<PathBuf>,
}

/// Runs the command line `args` (program name first) in directory `cwd`,
/// writing results to `out` and diagnostics to `err`; the exit status.
pub fn run<I, T>(args: I, cwd: &Path, out: &mut dyn Write, err: &mut dyn Write) -> u8
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
            return if to_out { EXIT_OK } else { EXIT_USAGE };
        }
    };
    let result = match cli.command {
        Command::Init(args) => match args.command {
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
        Command::Doctor(args) => doctor::run(&args.target, args.webhook_secret.as_deref(), args.json, out),
        Command::Tasks(args) => tasks::run(&args.target, args.command, out),
        Command::Replay(args) => replay::run(&args.target, &args.task, args.log.as_deref(), cwd, out),
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
mod tests;
