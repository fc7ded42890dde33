//! `agent-zero init cloudflare` and `agent-zero init spin`: deploy this
//! checkout with the platform's own CLI, its settings read from a local env
//! file (`.env.deploy`).
//!
//! The plan ([`cloudflare_plan`], [`spin_plan`]) is a pure function of the
//! env file's text and the checkout's manifests; [`run`] runs it through
//! the configured program (`AGENT_ZERO_WRANGLER`, `AGENT_ZERO_SPIN`), or
//! prints it with `--dry-run`. On Cloudflare a secret's value goes to
//! `wrangler secret put NAME` on stdin, never in an argument. The summary
//! gives the webhook URL and names where its secret is, never the secret.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::EXIT_OK;
use crate::env_edit::MARKER;

/// The queue the ticks travel on, and where poison messages land.
const QUEUES: [&str; 2] = ["agent-zero-ticks", "agent-zero-ticks-dead"];
/// The KV namespace both workers share.
const KV_NAMESPACE: &str = "agent-zero-edge-kv";
const FRONT_CONFIG: &str = "wrangler.toml";
const TICKS_CONFIG: &str = "wrangler.ticks.toml";

/// One command of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    /// The arguments after the program.
    pub(crate) args: Vec<String>,
    /// What goes on its stdin (a secret's value), if anything.
    pub(crate) stdin: Option<String>,
    /// What a dry run shows in place of the stdin (`the value of NAME`).
    pub(crate) stdin_label: Option<String>,
    /// Shown in place of `args` by a dry run (values masked), if different.
    pub(crate) shown: Option<Vec<String>>,
    /// A failure whose output contains this is fine (`already exists`).
    pub(crate) ok_if: Option<&'static str>,
    /// This step creates the KV namespace: its id is read from the output.
    pub(crate) creates_kv: bool,
}

impl Step {
    fn new(args: &[&str]) -> Self {
        Self {
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            stdin: None,
            stdin_label: None,
            shown: None,
            ok_if: None,
            creates_kv: false,
        }
    }
}

/// Parses a dotenv file: `NAME=value` lines, `#` comments, blank lines,
/// `export ` prefixes; a value in double quotes may span lines and takes
/// `\n` escapes (a PEM key), one in single quotes is literal.
pub(crate) fn parse_env(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            return Err(format!("line {}: expected NAME=value", index + 1));
        };
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') {
            return Err(format!("line {}: `{name}` is not an upper-case variable name", index + 1));
        }
        let value = value.trim();
        let value = if let Some(rest) = value.strip_prefix('"') {
            let mut raw = rest.to_owned();
            while !raw.ends_with('"') || raw.ends_with("\\\"") {
                let Some((_, next)) = lines.next() else {
                    return Err(format!("{name}: the double quote opened on line {} is never closed", index + 1));
                };
                raw.push('\n');
                raw.push_str(next.trim_end());
            }
            raw.pop();
            raw.replace("\\n", "\n").replace("\\\"", "\"")
        } else if let Some(rest) = value.strip_prefix('\'') {
            rest.strip_suffix('\'').ok_or_else(|| format!("{name}: unclosed single quote"))?.to_owned()
        } else {
            value.split(" #").next().unwrap_or_default().trim().to_owned()
        };
        if pairs.iter().any(|(n, _)| n == name) {
            return Err(format!("{name} is set twice"));
        }
        pairs.push((name.to_owned(), value));
    }
    Ok(pairs)
}

/// The names in one `[section]` of a TOML manifest: each line's key
/// before ` = `, up to the next section.
fn section_keys(toml: &str, section: &str) -> Vec<String> {
    let header = format!("[{section}]");
    toml.lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter_map(|l| {
            let l = l.trim();
            (!l.starts_with('#')).then(|| l.split_once(" = ").map(|(k, _)| k.trim().to_owned())).flatten()
        })
        .collect()
}

/// The env file's settings, each checked against spin.toml's `[variables]`
/// (the one list of the app's settings): (NAME, value), empty values left out.
fn settings(env: &str, spin_toml: &str) -> Result<Vec<(String, String)>, String> {
    let known = section_keys(spin_toml, "variables");
    let pairs = parse_env(env)?;
    for (name, _) in &pairs {
        if !known.contains(&name.to_ascii_lowercase()) {
            return Err(format!("{name} is not a setting of the app (spin.toml [variables] lists them, lower-cased)"));
        }
    }
    if connected(&pairs).next().is_none() {
        return Err("a forge's webhook secret is required, each forge signs its deliveries with it: \
             GITHUB_WEBHOOK_SECRET (GitHub), GITLAB_WEBHOOK_SECRET or GITLAB_WEBHOOK_SIGNING_TOKEN (GitLab), \
             GITEA_WEBHOOK_SECRET (Gitea and Forgejo)"
            .to_owned());
    }
    let mut pairs: Vec<(String, String)> = pairs.into_iter().filter(|(_, v)| !v.is_empty()).collect();
    let set = |name: &str| pairs.iter().any(|(n, _)| n == name);
    // The tick role never holds the receipt key; it learns that the front
    // signs from this plain setting, derived here from the key's presence
    // (docs/receipts.md), unless the env file says otherwise.
    if set("AGENT_ZERO_RECEIPT_KEY") && set("AGENT_ZERO_PUBLIC_URL") && !set("AGENT_ZERO_RECEIPT_LINKS") {
        pairs.push(("AGENT_ZERO_RECEIPT_LINKS".to_owned(), "on".to_owned()));
    }
    Ok(pairs)
}

/// Each forge a deployment takes deliveries from: its name, its intake
/// path and the settings that prove a delivery its own (any one set).
const FORGES: [(&str, &str, &[&str]); 3] = [
    ("GitHub", "/webhooks/github", &["GITHUB_WEBHOOK_SECRET"]),
    ("GitLab", "/webhooks/gitlab", &["GITLAB_WEBHOOK_SECRET", "GITLAB_WEBHOOK_SIGNING_TOKEN"]),
    ("Gitea or Forgejo", "/webhooks/gitea", &["GITEA_WEBHOOK_SECRET"]),
];

/// The forges `pairs` sets a webhook secret of, with the names set.
fn connected(pairs: &[(String, String)]) -> impl Iterator<Item = (&'static str, &'static str, Vec<&'static str>)> + '_ {
    FORGES.iter().filter_map(|(forge, path, names)| {
        let set: Vec<&str> =
            names.iter().copied().filter(|name| pairs.iter().any(|(n, v)| n == name && !v.is_empty())).collect();
        (!set.is_empty()).then_some((*forge, *path, set))
    })
}

/// The Cloudflare steps, in order: the queues, the KV namespace (unless
/// `kv_id` is known), each secret on the front worker, those the tick
/// component reads on the tick worker (spin.toml's
/// `[component.agent-zero-ticks.variables]`), then the front worker's
/// deploy (it holds the Durable Object classes) and the tick worker's.
pub(crate) fn cloudflare_plan(
    env: &str,
    spin_toml: &str,
    wrangler_toml: &str,
    kv_id: Option<&str>,
) -> Result<Vec<Step>, String> {
    let settings = settings(env, spin_toml)?;
    let vars = section_keys(wrangler_toml, "vars");
    if let Some((name, _)) = settings.iter().find(|(n, _)| vars.contains(n)) {
        return Err(format!("{name} is a [vars] entry of wrangler.toml and wrangler.ticks.toml: change it there"));
    }
    let ticks_reads = section_keys(spin_toml, "component.agent-zero-ticks.variables");
    let mut steps = Vec::new();
    for queue in QUEUES {
        let mut step = Step::new(&["queues", "create", queue]);
        step.ok_if = Some("already exists");
        steps.push(step);
    }
    if kv_id.is_none() {
        let mut step = Step::new(&["kv", "namespace", "create", KV_NAMESPACE]);
        step.creates_kv = true;
        steps.push(step);
    }
    for config in [FRONT_CONFIG, TICKS_CONFIG] {
        for (name, value) in &settings {
            if config == TICKS_CONFIG && !ticks_reads.contains(&name.to_ascii_lowercase()) {
                continue;
            }
            let mut step = Step::new(&["secret", "put", name, "--config", config]);
            step.stdin = Some(value.clone());
            step.stdin_label = Some(format!("the value of {name}"));
            steps.push(step);
        }
    }
    steps.push(Step::new(&["deploy", "--config", FRONT_CONFIG]));
    steps.push(Step::new(&["deploy", "--config", TICKS_CONFIG]));
    Ok(steps)
}

/// The Spin step: `spin deploy --from spin.toml --build` with one
/// `--variable name=value` per setting (Spin's documented flags; the
/// names are spin.toml's, lower-cased).
pub(crate) fn spin_plan(env: &str, spin_toml: &str) -> Result<Vec<Step>, String> {
    let settings = settings(env, spin_toml)?;
    let secret: Vec<String> = spin_toml
        .lines()
        .filter(|l| l.contains("secret = true"))
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim().to_owned()))
        .collect();
    let mut step = Step::new(&["deploy", "--from", "spin.toml", "--build"]);
    let mut shown = step.args.clone();
    for (name, value) in &settings {
        let name = name.to_ascii_lowercase();
        step.args.push("--variable".to_owned());
        step.args.push(format!("{name}={value}"));
        shown.push("--variable".to_owned());
        shown.push(if secret.contains(&name) { format!("{name}=<secret>") } else { format!("{name}={value}") });
    }
    step.shown = Some(shown);
    Ok(vec![step])
}

/// The id of the KV namespace in a wrangler config, if it has one.
pub(crate) fn kv_id(wrangler_toml: &str) -> Option<String> {
    let block = wrangler_toml.split("[[kv_namespaces]]").nth(1)?;
    block
        .lines()
        .take_while(|l| !l.trim_start().starts_with('['))
        .find_map(|l| l.trim().strip_prefix("id = \"").and_then(|r| r.strip_suffix('"')).map(str::to_owned))
}

/// `wrangler_toml` with `id` set under its `binding = "KV"` line.
pub(crate) fn with_kv_id(wrangler_toml: &str, id: &str) -> String {
    let binding = "[[kv_namespaces]]\nbinding = \"KV\"\n";
    wrangler_toml.replacen(binding, &format!("{binding}id = \"{id}\"\n"), 1)
}

/// The first 32-hex-digit word of `output` (`wrangler kv namespace create`
/// prints the new id in a config snippet).
fn first_id(output: &str) -> Option<String> {
    output.split(|c: char| !c.is_ascii_hexdigit()).find(|w| w.len() == 32).map(str::to_owned)
}

/// The first `https://` URL in `output` (the deploy's route).
fn first_url(output: &str, suffix: &str) -> Option<String> {
    output
        .split_whitespace()
        .filter_map(|w| w.find("https://").map(|at| &w[at..]))
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric() && c != '/'))
        .find(|w| w.contains(suffix))
        .map(|w| w.trim_end_matches('/').to_owned())
}

/// Which platform, with the program that drives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Platform {
    Cloudflare,
    Spin,
}

/// Plans, then runs (or prints) the steps for `platform` in `cwd`.
pub(crate) fn run(
    platform: Platform,
    cwd: &Path,
    env_file: &Path,
    program: &str,
    dry_run: bool,
    out: &mut dyn Write,
) -> Result<u8, String> {
    let read = |name: &Path| {
        std::fs::read_to_string(cwd.join(name)).map_err(|e| {
            format!("reading {}: {e} (run this in the agent-zero-edge checkout)", cwd.join(name).display())
        })
    };
    let env = read(env_file).map_err(|e| format!("{e}; see README, \"Deploy\", for its keys"))?;
    let spin_toml = read(Path::new("spin.toml"))?;
    let steps = match platform {
        Platform::Cloudflare => {
            let front = read(Path::new(FRONT_CONFIG))?;
            let ticks = read(Path::new(TICKS_CONFIG))?;
            let (a, b) = (kv_id(&front), kv_id(&ticks));
            if b.is_some() && a != b {
                return Err(format!("{FRONT_CONFIG} and {TICKS_CONFIG} name different KV namespace ids"));
            }
            cloudflare_plan(&env, &spin_toml, &front, a.as_deref())?
        }
        Platform::Spin => spin_plan(&env, &spin_toml)?,
    };
    let words: Vec<&str> = program.split_whitespace().collect();
    let Some((bin, pre)) = words.split_first() else {
        return Err("the program to run is empty (AGENT_ZERO_WRANGLER / AGENT_ZERO_SPIN)".to_owned());
    };
    let emit = |out: &mut dyn Write, text: &str| out.write_all(text.as_bytes()).map_err(|e| e.to_string());
    let mut url = None;
    for step in &steps {
        let shown = step.shown.as_ref().unwrap_or(&step.args).join(" ");
        let mut line = format!("$ {program} {shown}");
        if let Some(label) = &step.stdin_label {
            let _ = write!(line, "   # stdin: {label}");
        }
        line.push('\n');
        emit(out, &line)?;
        if dry_run {
            if step.creates_kv {
                emit(out, &format!("  (then its id goes into {FRONT_CONFIG} and {TICKS_CONFIG})\n"))?;
            }
            continue;
        }
        let mut command = Command::new(bin);
        command.args(pre).args(&step.args).current_dir(cwd).stdin(if step.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|e| format!("running {program}: {e}"))?;
        if let (Some(value), Some(mut stdin)) = (&step.stdin, child.stdin.take()) {
            stdin.write_all(value.as_bytes()).map_err(|e| format!("writing to {program}: {e}"))?;
        }
        let output = child.wait_with_output().map_err(|e| format!("running {program}: {e}"))?;
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        emit(out, &text)?;
        if !output.status.success() && !step.ok_if.is_some_and(|needle| text.contains(needle)) {
            return Err(format!("`{program} {shown}` failed ({}); nothing after it ran", output.status));
        }
        if step.creates_kv {
            let id = first_id(&text).ok_or_else(|| format!("no namespace id in the output of `{shown}`"))?;
            for config in [FRONT_CONFIG, TICKS_CONFIG] {
                let path = cwd.join(config);
                let text = read(Path::new(config))?;
                std::fs::write(&path, with_kv_id(&text, &id))
                    .map_err(|e| format!("writing {}: {e}", path.display()))?;
            }
            emit(out, &format!("Wrote KV namespace id {id} into {FRONT_CONFIG} and {TICKS_CONFIG}: commit them.\n"))?;
        }
        if url.is_none() && step.args.first().is_some_and(|a| a == "deploy") {
            url = first_url(&text, if platform == Platform::Cloudflare { "workers.dev" } else { "" });
        }
    }
    let base = url.unwrap_or_else(|| match platform {
        Platform::Cloudflare => "https://agent-zero-edge.<your-subdomain>.workers.dev".to_owned(),
        Platform::Spin => "https://<your-app-url>".to_owned(),
    });
    emit(out, &summary(&env, &env_file.display().to_string(), &base))?;
    Ok(EXIT_OK)
}

/// What to do in each forge the env file sets a webhook secret of, after
/// the deploy. No secret is printed: each is named with the env file that
/// holds it, and when `init github-app` put GitHub's there GitHub has it
/// already (the App was registered with it and with the webhook URL).
fn summary(env: &str, env_file: &str, base: &str) -> String {
    let pairs = parse_env(env).unwrap_or_default();
    let forges: Vec<_> = connected(&pairs).collect();
    let mut summary = String::new();
    for (forge, path, names) in &forges {
        if *forge == "GitHub" {
            summary.push_str(&github_summary(env, env_file, base));
            continue;
        }
        let secrets = names.iter().map(|name| format!("{name} in {env_file}")).collect::<Vec<_>>().join(" and ");
        let _ = writeln!(summary, "\nConnect {forge} (the project's, group's or organisation's webhook settings):");
        let _ = writeln!(summary, "  URL:           {base}{path}");
        if *forge == "GitLab" {
            summary.push_str("  Triggers:      issues, merge request and comments events\n");
            let _ = writeln!(summary, "  Secret token / signing token: {secrets} (not shown here)");
        } else {
            summary.push_str("  Content type:  application/json\n");
            summary.push_str("  Events:        issues, pull requests and pull request reviews\n");
            let _ = writeln!(summary, "  Secret:        {secrets} (not shown here)");
        }
    }
    if forges.iter().any(|(forge, _, _)| *forge == "GitHub") {
        let _ = writeln!(
            summary,
            "Then: agent-zero doctor --url {base} --webhook-secret <GITHUB_WEBHOOK_SECRET in {env_file}>"
        );
    } else {
        let _ = writeln!(summary, "Then: agent-zero doctor --url {base}");
    }
    summary
}

/// GitHub's part of [`summary`].
fn github_summary(env: &str, env_file: &str, base: &str) -> String {
    let secret = format!("GITHUB_WEBHOOK_SECRET in {env_file}");
    let mut summary = String::new();
    if let Some(app) = registered_app(env) {
        let _ = writeln!(
            summary,
            "\nGitHub has the webhook already: {app} was registered with it by `agent-zero init github-app`,"
        );
        let _ = writeln!(
            summary,
            "  with the URL given as --url ({base}/webhooks/github here) and the secret now {secret}"
        );
        summary.push_str("  (if you change that secret, change it in the App's settings too).\n");
    } else {
        summary.push_str("\nConnect GitHub (your App's or repository's webhook settings):\n");
        let _ = writeln!(summary, "  Payload URL:   {base}/webhooks/github");
        summary.push_str("  Content type:  application/json\n");
        let _ = writeln!(summary, "  Secret:        {secret} (not shown here)");
    }
    summary
}

/// The GitHub App `init github-app` registered (`GitHub App <slug> (id
/// N)`, from the comment heading the block it wrote into the env file),
/// when the file's webhook secret comes after that comment, as the block
/// sets it: GitHub made that secret and has it. None without the block, or
/// with the secret moved above it.
pub(crate) fn registered_app(env: &str) -> Option<String> {
    let lines: Vec<&str> = env.lines().map(str::trim).collect();
    let block = lines.iter().rposition(|l| l.starts_with('#') && l.ends_with(MARKER))?;
    let secret =
        lines.iter().rposition(|l| l.strip_prefix("export ").unwrap_or(l).starts_with("GITHUB_WEBHOOK_SECRET="))?;
    (secret > block).then(|| lines[block].trim_start_matches('#').trim_end_matches(MARKER).trim().to_owned())
}
