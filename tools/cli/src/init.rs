//! `agent-zero init policy` (plain `init`): a commented `.agent-zero.yml`
//! for the repository in the working directory, its checks found by the
//! deployment's own discovery ([`agent_zero_engine::default_checks`]), then
//! a pointer to `init cloudflare` / `init spin`.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use agent_zero_agent::Policy;

use crate::EXIT_OK;

/// The file `init` writes.
pub(crate) const FILE: &str = ".agent-zero.yml";

pub(crate) fn run(cwd: &Path, force: bool, out: &mut dyn Write) -> Result<u8, String> {
    let target = cwd.join(FILE);
    if target.exists() && !force {
        return Err(format!("{} already exists; pass --force to replace it", target.display()));
    }
    let checks = detect_checks(cwd)?;
    let text = policy_text(&checks);
    // What we write is what the deployment will parse.
    Policy::parse(&text).map_err(|e| format!("internal error: the generated policy does not parse: {e}"))?;
    std::fs::write(&target, &text).map_err(|e| format!("writing {}: {e}", target.display()))?;
    let write = |out: &mut dyn Write, text: &str| out.write_all(text.as_bytes()).map_err(|e| e.to_string());
    let mut summary = format!("Wrote {}\n", target.display());
    if checks.is_empty() {
        summary.push_str(
            "No checks detected: list your test command under `checks`, or a change can never be verified.\n",
        );
    } else {
        summary.push_str("Checks detected (run without a shell in the sandbox):\n");
        for check in &checks {
            let _ = writeln!(summary, "  {}", check.join(" "));
        }
    }
    summary.push('\n');
    summary.push_str(DEPLOY_STEPS);
    write(out, &summary)?;
    Ok(EXIT_OK)
}

/// The checks discovery finds for the checkout at `dir`: its root files
/// and its `package.json`, exactly as the deployment reads them.
pub(crate) fn detect_checks(dir: &Path) -> Result<Vec<Vec<String>>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", dir.display()))?;
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            files.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    files.sort();
    let package_json = files
        .iter()
        .any(|f| f == "package.json")
        .then(|| std::fs::read_to_string(dir.join("package.json")).ok())
        .flatten();
    Ok(agent_zero_engine::default_checks(&files, package_json.as_deref()))
}

/// One argument as a YAML flow scalar: plain when YAML reads it back as
/// the same string, single-quoted otherwise.
fn yaml_scalar(argument: &str) -> String {
    let safe = argument.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/' | b'='));
    let typed = argument.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        || ["true", "false", "null", "yes", "no", "on", "off"].contains(&argument.to_ascii_lowercase().as_str());
    if !argument.is_empty() && safe && !typed {
        argument.to_owned()
    } else {
        format!("'{}'", argument.replace('\'', "''"))
    }
}

/// The commented policy: the edge's defaults (the reference's), with
/// `checks` filled from discovery.
pub(crate) fn policy_text(checks: &[Vec<String>]) -> String {
    let mut checks_yaml = String::new();
    if checks.is_empty() {
        checks_yaml.push_str("checks: []\n");
    } else {
        checks_yaml.push_str("checks:\n");
        for check in checks {
            let args: Vec<String> = check.iter().map(|a| yaml_scalar(a)).collect();
            let _ = writeln!(checks_yaml, "  - [{}]", args.join(", "));
        }
    }
    TEMPLATE.replace("{checks}\n", &checks_yaml)
}

const TEMPLATE: &str = "\
# Agent Zero Edge policy for this repository (written by `agent-zero init`).
# Field names and defaults are the reference's; a file written for the
# reference parses too. The deployment reads this file from the default branch.
version: 1

# The most authority any run may have: observe < suggest < fix < autonomous.
# observe and suggest never write; fix and autonomous also need autofix.enabled.
mode: observe

# Review pull-request diffs when pull_request webhooks arrive (opt-in).
proactive:
  enabled: false

# Turn labelled issues into verified pull requests (opt-in twice: here, and
# the label on the issue). Changes go to a fresh branchPrefix branch.
issues:
  enabled: false
  requireLabel: agent-zero
  branchPrefix: agent-zero/
  # Post the validation verdict on the issue as a comment.
  validationComment: true

# The commands that verify a change, as argv (no shell: &&, |, ; and $() are
# refused). Detected from this repository's manifests, as the deployment's
# discovery would; empty means \"discover at run time\".
{checks}

autofix:
  enabled: false
  # Model confidence needed before files may change.
  minConfidence: 0.85
  # mechanical, behavioral; high-impact always waits for a person.
  allowedChangeRisks:
    - mechanical
  # Writes need a sandbox that reports itself isolated.
  requireIsolated: true

# How a claim is checked against the repository before it is acted on.
validation:
  minConfidence: 0.6
  requireEvidence: true
  requireKnownFiles: true
  verifyQuotedEvidence: true
  # all: every quote must appear in a cited file; any: one of 8+ characters
  # is enough and unquoted evidence is prose (the reference's rule).
  quotes: all

agent:
  # Execute/verify attempts, the first included.
  maxAttempts: 3
  timeoutMs: 1800000
  maxChangedFiles: 10

permissions:
  # none, restricted or full: what sandbox commands may reach.
  network: restricted

runner:
  # Every command runs in the operator's hosted sandbox; the reference's
  # isolation/engine/image/workdir settings are accepted and reported as
  # warnings in the evidence (isolation: container = writes need isolation).
  maxOutputBytes: 200000

model:
  # ai-gateway, anthropic, google, openai or openai-compatible; endpoints and
  # keys come only from the operator's environment. Without `name`, the
  # operator's AGENT_ZERO_MODEL names the model (else gpt-5).
  provider: openai-compatible
  # name: gpt-5
  # Prices (USD per million tokens) turn on cost reporting.
  # inputCostPerMillionTokens: 1.25
  # outputCostPerMillionTokens: 10
";

const DEPLOY_STEPS: &str = "\
Deploy (from the agent-zero-edge checkout, settings in .env.deploy; README, \"Deploy\"):
  Cloudflare Workers:  agent-zero init cloudflare [--dry-run]
                       (wrangler queues create, wrangler secret put, wrangler deploy)
  Fermyon Spin:        agent-zero init spin [--dry-run]
                       (spin deploy --variable name=value ...)
Each prints the webhook URL for GitHub (its secret is GITHUB_WEBHOOK_SECRET in
.env.deploy; an App registered by `agent-zero init github-app` has both); then
  agent-zero doctor --url <deployment> --token <token> --webhook-secret <secret>
";
