//! Starting a run on the deployment: `review <pr-url>`, `fix <issue-url>`
//! and `tasks create` build the body of `POST /api/v1/tasks`
//! (docs/task-api.md), create the task, and follow it as `tasks watch`
//! does, each event as it happens, ending with the reference's exit status
//! ([`tasks::watch_status`]): 0 completed, 1 failed or refused, 2 needs a
//! person. A create the API refuses is its error line and status 1.
//!
//! `review` asks for a proactive review of the pull request (a GitLab merge
//! request) at its current head (the deployment reads it from the forge,
//! named in the body unless GitHub: [`page_url`]), in mode `observe` unless
//! `--mode`; `fix` asks for an issue task in mode `fix` unless `--mode`
//! (the deployment reads the issue, and the run takes the lower of the
//! mode and the repository's policy).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use agent_zero_contracts::ForgeKind;
use serde_json::{Value, json};

use crate::api::Api;
use crate::page_url::{self, Kind};
use crate::tasks::{self, expect_success};
use crate::text::printable;
use crate::{CreateArgs, EXIT_OK, Env, FollowArgs, StartArgs, Target};

/// `agent-zero review <pr-url>`.
pub(crate) fn review(args: &StartArgs, env: &Env, out: &mut dyn Write) -> Result<u8, String> {
    start(args, env, out, Kind::PullRequest, ("proactive", "observe", "pullRequest"))
}

/// `agent-zero fix <issue-url>`.
pub(crate) fn fix(args: &StartArgs, env: &Env, out: &mut dyn Write) -> Result<u8, String> {
    start(args, env, out, Kind::Issue, ("issue", "fix", "issue"))
}

/// Creates the task of the page `args.page` (a `kind` page): its forge
/// unless GitHub, its trigger, the mode unless `--mode` says otherwise, and
/// the field naming its number; then follows it.
fn start(
    args: &StartArgs,
    env: &Env,
    out: &mut dyn Write,
    kind: Kind,
    (trigger, mode, field): (&str, &str, &str),
) -> Result<u8, String> {
    let page = page_url::parse(&args.page, kind, args.forge.map(ForgeKind::from))?;
    let mut body = json!({
        "repository": page.repository,
        "trigger": trigger,
        "mode": args.mode.as_deref().unwrap_or(mode),
        field: { "number": page.number },
    });
    if !page.forge.is_github() {
        body["forge"] = json!(page.forge.as_str());
    }
    create_and_follow(&args.target.resolve(env)?, &body, Some(args.follow), out)
}

/// `agent-zero tasks create`: the body from `--body FILE` (relative to
/// `cwd`) as given, else from the flags.
pub(crate) fn create(target: &Target, args: &CreateArgs, cwd: &Path, out: &mut dyn Write) -> Result<u8, String> {
    let body = match &args.body {
        Some(file) => {
            let path = cwd.join(file);
            let bytes = std::fs::read(&path).map_err(|e| format!("--body {}: {e}", path.display()))?;
            serde_json::from_slice(&bytes).map_err(|e| format!("--body {}: not JSON: {e}", path.display()))?
        }
        None => body_of(args),
    };
    create_and_follow(target, &body, args.watch.then_some(args.follow), out)
}

/// The create body the flags describe; the API checks it. GitHub, the
/// API's default forge, is left out, so such a body is as it always was.
pub(crate) fn body_of(args: &CreateArgs) -> Value {
    let mut body = json!({ "repository": args.repository, "trigger": args.trigger });
    if let Some(forge) = args.forge.map(ForgeKind::from).filter(|forge| !forge.is_github()) {
        body["forge"] = json!(forge.as_str());
    }
    if let Some(mode) = &args.mode {
        body["mode"] = json!(mode);
    }
    if !args.feedback.is_empty() {
        body["feedback"] = args.feedback.iter().map(|text| json!({ "body": text })).collect();
    }
    if let Some(number) = args.pull_request {
        body["pullRequest"] = json!({ "number": number });
        if let Some(head) = &args.head {
            body["pullRequest"]["headSha"] = json!(head);
        }
    }
    if let Some(number) = args.issue {
        body["issue"] = json!({ "number": number });
    }
    if !args.files.is_empty() {
        body["files"] = json!(args.files);
    }
    body
}

/// Creates the task `body` describes and, with `follow`, follows it to the
/// state it stops in.
fn create_and_follow(
    target: &Target,
    body: &Value,
    follow: Option<FollowArgs>,
    out: &mut dyn Write,
) -> Result<u8, String> {
    let api = Api::new(&target.url, target.token.as_deref())?;
    if !api.has_token() {
        return Err("creating a task needs a token: --token, AGENT_ZERO_TOKEN, or `agent-zero login`".into());
    }
    let created = expect_success(api.post_json("/api/v1/tasks", body)?)
        .map_err(|e| format!("the deployment refused the task: {e}"))?
        .json()?;
    let id = created["id"].as_str().ok_or("the deployment's answer names no task id")?;
    let field = |name: &str| printable(created[name].as_str().unwrap_or("-"));
    let requested = created["requestedMode"].as_str().filter(|r| Some(*r) != created["mode"].as_str());
    let capped = requested.map(|r| format!(" (asked {}; the policy allows no more)", printable(r))).unwrap_or_default();
    writeln!(
        out,
        "created {} on {}: {}, mode {}{capped}",
        printable(id),
        field("repository"),
        field("trigger"),
        field("mode")
    )
    .and_then(|()| out.flush())
    .map_err(|e| e.to_string())?;
    match follow {
        None => Ok(EXIT_OK),
        Some(follow) => {
            tasks::watch(&api, id, Duration::from_secs(follow.timeout), Duration::from_millis(follow.interval_ms), out)
        }
    }
}
