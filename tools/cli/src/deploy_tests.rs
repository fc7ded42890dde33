//! `init cloudflare` and `init spin` against a stand-in for wrangler and
//! spin that records each invocation (its argv and its stdin), in a copy of
//! this checkout's manifests: the documented order, no secret in any argv,
//! and only `spin deploy`'s documented flags.

use std::path::{Path, PathBuf};

use super::*;

/// The checkout's root (this crate is tools/cli).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch checkout: the real spin.toml and wrangler configs, an env
/// file, and `stand-in`, a program that appends one record per call to
/// `calls.log` (argv joined by tabs, then its stdin) and answers like the
/// real CLI where the plan reads the answer.
fn checkout(env: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in ["spin.toml", "wrangler.toml", "wrangler.ticks.toml"] {
        std::fs::copy(root().join(file), dir.path().join(file)).unwrap();
    }
    std::fs::write(dir.path().join(".env.deploy"), env).unwrap();
    let script = dir.path().join("stand-in");
    std::fs::write(
        &script,
        r#"#!/bin/sh
log="$(dirname "$0")/calls.log"
{
  printf 'ARGV'
  for a in "$@"; do printf '\t%s' "$a"; done
  printf '\nSTDIN\t'
  cat
  printf '\nEND\n'
} >>"$log"
case "$1 $2" in
  "kv namespace") echo 'kv_namespaces = [ { binding = "KV", id = "0123456789abcdef0123456789abcdef" } ]' ;;
  "queues create") [ "$3" = agent-zero-ticks-dead ] && { echo "Queue already exists" >&2; exit 1; } ;;
  "deploy --config") [ "$3" = wrangler.toml ] && echo "Deployed agent-zero-edge triggers https://agent-zero-edge.demo.workers.dev" ;;
  "deploy --from") echo "Available Routes: agent-zero: https://agent-zero-edge-x.fermyon.app (wildcard)" ;;
esac
exit 0
"#,
    )
    .unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    dir
}

/// Each recorded call: (argv, stdin).
fn calls(dir: &Path) -> Vec<(Vec<String>, String)> {
    let log = std::fs::read_to_string(dir.join("calls.log")).unwrap_or_default();
    log.split("\nEND\n")
        .filter(|r| !r.is_empty())
        .map(|record| {
            let (argv, stdin) = record.split_once("\nSTDIN\t").unwrap();
            let argv = argv.strip_prefix("ARGV").unwrap().split('\t').skip(1).map(str::to_owned).collect();
            (argv, stdin.to_owned())
        })
        .collect()
}

fn cli(args: &[&str], cwd: &Path) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = run(std::iter::once("agent-zero").chain(args.iter().copied()), cwd, &mut out, &mut err);
    (status, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

const KEY: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAsecretkeymaterial\n-----END RSA PRIVATE KEY-----";

/// The README's example env file, with values a test can look for.
fn env_file() -> String {
    format!(
        "# settings for agent-zero init\n\
         GITHUB_WEBHOOK_SECRET=whsec-7f3a9c\n\
         GITHUB_APP_ID=123456\n\
         GITHUB_APP_PRIVATE_KEY=\"{KEY}\"\n\
         OPENAI_API_KEY='sk-test-abc123'\n\
         AGENT_ZERO_SANDBOX_PROVIDER=e2b\n\
         E2B_API_KEY=e2b_live_42\n\
         AGENT_ZERO_CONTROL_PLANE_TOKENS=ops:tok-99\n\
         AGENT_ZERO_MODEL_FALLBACK_MODEL=\n"
    )
}

const SECRETS: [&str; 6] =
    ["whsec-7f3a9c", "sk-test-abc123", "e2b_live_42", "tok-99", "secretkeymaterial", "BEGIN RSA"];

#[test]
fn cloudflare_creates_the_queues_and_namespace_and_puts_secrets_before_deploying() {
    let dir = checkout(&env_file());
    let stand_in = dir.path().join("stand-in");
    let (status, out, err) = cli(&["init", "cloudflare", "--wrangler", stand_in.to_str().unwrap()], dir.path());
    assert_eq!(status, EXIT_OK, "{err}\n{out}");
    let calls = calls(dir.path());
    let argv: Vec<String> = calls.iter().map(|(a, _)| a.join(" ")).collect();
    let position =
        |prefix: &str| argv.iter().position(|a| a.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {argv:#?}"));
    // The order: queues, namespace, secrets, front worker, tick worker.
    let queue = position("queues create agent-zero-ticks");
    assert_eq!(argv[queue + 1], "queues create agent-zero-ticks-dead");
    let kv = position("kv namespace create agent-zero-edge-kv");
    let first_secret = position("secret put");
    let last_secret = argv.iter().rposition(|a| a.starts_with("secret put")).unwrap();
    let front = position("deploy --config wrangler.toml");
    let ticks = position("deploy --config wrangler.ticks.toml");
    assert!(queue < kv && kv < first_secret && last_secret < front && front < ticks, "{argv:#?}");
    assert_eq!(ticks, argv.len() - 1);
    // Every set setting on the front worker; on the tick worker only what the tick role reads.
    let put = |name: &str, config: &str| {
        calls
            .iter()
            .find(|(a, _)| a.join(" ") == format!("secret put {name} --config {config}"))
            .map(|(_, s)| s.clone())
    };
    assert_eq!(put("GITHUB_WEBHOOK_SECRET", "wrangler.toml").as_deref(), Some("whsec-7f3a9c"));
    assert_eq!(put("GITHUB_APP_PRIVATE_KEY", "wrangler.toml").as_deref(), Some(KEY), "multi-line, on stdin");
    assert_eq!(put("GITHUB_APP_PRIVATE_KEY", "wrangler.ticks.toml").as_deref(), Some(KEY));
    assert_eq!(put("E2B_API_KEY", "wrangler.ticks.toml").as_deref(), Some("e2b_live_42"));
    assert_eq!(put("GITHUB_WEBHOOK_SECRET", "wrangler.ticks.toml"), None, "the front's own secret");
    assert_eq!(put("AGENT_ZERO_CONTROL_PLANE_TOKENS", "wrangler.ticks.toml"), None);
    assert!(!argv.iter().any(|a| a.contains("AGENT_ZERO_MODEL_FALLBACK_MODEL")), "empty values are left out");
    // No secret value in any argv, nor in what was printed: the summary
    // names where the webhook secret is.
    for secret in SECRETS {
        assert!(!argv.iter().any(|a| a.contains(secret)), "{secret} in argv: {argv:#?}");
        assert!(!out.contains(secret), "{secret} printed: {out}");
    }
    // The namespace id went into both configs, the same.
    for config in ["wrangler.toml", "wrangler.ticks.toml"] {
        let text = std::fs::read_to_string(dir.path().join(config)).unwrap();
        assert_eq!(deploy::kv_id(&text).as_deref(), Some("0123456789abcdef0123456789abcdef"), "{config}");
    }
    assert!(out.contains("https://agent-zero-edge.demo.workers.dev/webhooks/github"), "{out}");
    assert!(out.contains("Secret:        GITHUB_WEBHOOK_SECRET in .env.deploy (not shown here)"), "{out}");
    // Again: the namespace is known now, and an existing queue is no failure.
    std::fs::remove_file(dir.path().join("calls.log")).unwrap();
    let (status, _, err) = cli(&["init", "cloudflare", "--wrangler", stand_in.to_str().unwrap()], dir.path());
    assert_eq!(status, EXIT_OK, "{err}");
    assert!(!self::calls(dir.path()).iter().any(|(a, _)| a[0] == "kv"));
}

#[test]
fn cloudflare_dry_run_prints_the_plan_and_runs_nothing() {
    let dir = checkout(&env_file());
    let stand_in = dir.path().join("stand-in");
    let (status, out, err) =
        cli(&["init", "cloudflare", "--dry-run", "--wrangler", stand_in.to_str().unwrap()], dir.path());
    assert_eq!(status, EXIT_OK, "{err}");
    assert!(calls(dir.path()).is_empty());
    for secret in SECRETS {
        assert!(!out.contains(secret), "{secret}: {out}");
    }
    let queue = out.find("queues create agent-zero-ticks").unwrap();
    let secret = out.find("secret put GITHUB_WEBHOOK_SECRET --config wrangler.toml").unwrap();
    let deploy = out.find("deploy --config wrangler.toml").unwrap();
    assert!(queue < secret && secret < deploy, "{out}");
    assert!(out.contains("# stdin: the value of GITHUB_WEBHOOK_SECRET"), "{out}");
    assert!(deploy::kv_id(&std::fs::read_to_string(dir.path().join("wrangler.toml")).unwrap()).is_none());
}

/// After `init github-app`, GitHub made the webhook secret and has it: the
/// summary says so, asks for nothing to be pasted and prints no secret
/// (without the App's block, the first test's summary asks for both).
#[test]
fn a_webhook_secret_the_app_manifest_registered_is_not_asked_for_again() {
    let created = crate::github_app::Created {
        id: 123_456,
        slug: "agent-zero-demo".into(),
        html_url: "https://github.com/apps/agent-zero-demo".into(),
        owner: "octo".into(),
        pem: KEY.into(),
        webhook_secret: "whsec-from-github-0a1b".into(),
        client_id: "Iv1.c1d2".into(),
        client_secret: "cs-secret-77".into(),
    };
    let lines = crate::github_app::env_lines(&created, &[], None, "session-key-99");
    let env = crate::env_edit::with_settings(&env_file(), &lines);
    let dir = checkout(&env);
    let stand_in = dir.path().join("stand-in");
    for platform in [["cloudflare", "--wrangler"], ["spin", "--spin"]] {
        let (status, out, err) = cli(&["init", platform[0], platform[1], stand_in.to_str().unwrap()], dir.path());
        assert_eq!(status, EXIT_OK, "{err}\n{out}");
        assert!(out.contains("GitHub has the webhook already: GitHub App agent-zero-demo (id 123456)"), "{out}");
        assert!(!out.contains("Payload URL") && !out.contains("whsec-from-github-0a1b"), "{out}");
        assert!(out.contains("--webhook-secret <GITHUB_WEBHOOK_SECRET in .env.deploy>"), "{out}");
    }
}

/// A deployment that takes GitLab's and Gitea's deliveries only needs no
/// GitHub secret: `init` deploys it, puts each forge's secret on the front
/// worker only, and says where to connect each forge, naming each secret
/// without its value.
#[test]
fn a_deployment_for_gitlab_and_gitea_only_deploys_and_says_where_to_connect_each() {
    let env = "GITLAB_WEBHOOK_SECRET=glsec-51b2\nGITLAB_TOKEN=glpat-77aa\nGITEA_WEBHOOK_SECRET=gtsec-9c0d\n\
               GITEA_URL=https://git.example.org\nOPENAI_API_KEY=sk-test-abc123\n";
    let dir = checkout(env);
    let stand_in = dir.path().join("stand-in");
    let (status, out, err) = cli(&["init", "cloudflare", "--wrangler", stand_in.to_str().unwrap()], dir.path());
    assert_eq!(status, EXIT_OK, "{err}\n{out}");
    let calls = calls(dir.path());
    let argv: Vec<String> = calls.iter().map(|(a, _)| a.join(" ")).collect();
    for (name, on_ticks) in [("GITLAB_WEBHOOK_SECRET", false), ("GITEA_WEBHOOK_SECRET", false), ("GITLAB_TOKEN", true)]
    {
        assert!(argv.contains(&format!("secret put {name} --config wrangler.toml")), "{name}: {argv:#?}");
        assert_eq!(argv.contains(&format!("secret put {name} --config wrangler.ticks.toml")), on_ticks, "{name}");
    }
    assert!(
        out.contains("Connect GitLab") && out.contains("https://agent-zero-edge.demo.workers.dev/webhooks/gitlab"),
        "{out}"
    );
    assert!(out.contains("Connect Gitea or Forgejo") && out.contains("/webhooks/gitea"), "{out}");
    assert!(
        out.contains("GITLAB_WEBHOOK_SECRET in .env.deploy") && out.contains("GITEA_WEBHOOK_SECRET in .env.deploy"),
        "{out}"
    );
    assert!(!out.contains("Connect GitHub") && !out.contains("--webhook-secret"), "{out}");
    for secret in ["glsec-51b2", "glpat-77aa", "gtsec-9c0d", "sk-test-abc123"] {
        assert!(!out.contains(secret) && !argv.iter().any(|a| a.contains(secret)), "{secret}");
    }
}

/// `spin deploy`'s documented options (Fermyon Cloud's `spin deploy` /
/// `spin cloud deploy`: `--from`, `--build`, `--variable name=value`).
const SPIN_DEPLOY_FLAGS: [&str; 3] = ["--from", "--build", "--variable"];

#[test]
fn spin_deploys_with_one_documented_variable_flag_per_setting() {
    let dir = checkout(&env_file());
    let stand_in = dir.path().join("stand-in");
    let (status, out, err) = cli(&["init", "spin", "--spin", stand_in.to_str().unwrap()], dir.path());
    assert_eq!(status, EXIT_OK, "{err}\n{out}");
    let calls = calls(dir.path());
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let argv = &calls[0].0;
    assert_eq!(argv[0], "deploy");
    let spin_toml = std::fs::read_to_string(root().join("spin.toml")).unwrap();
    let mut variables = Vec::new();
    let mut args = argv[1..].iter();
    while let Some(flag) = args.next() {
        assert!(SPIN_DEPLOY_FLAGS.contains(&flag.as_str()), "undocumented flag {flag}");
        match flag.as_str() {
            "--from" => assert_eq!(args.next().map(String::as_str), Some("spin.toml")),
            "--variable" => {
                let pair = args.next().unwrap();
                let (name, _) = pair.split_once('=').expect("name=value");
                assert!(spin_toml.contains(&format!("\n{name} = {{")), "{name} is a spin.toml variable");
                variables.push(pair.clone());
            }
            _ => {}
        }
    }
    assert!(variables.contains(&"github_webhook_secret=whsec-7f3a9c".to_owned()), "{variables:?}");
    assert!(variables.contains(&format!("github_app_private_key={KEY}")), "{variables:?}");
    assert!(variables.contains(&"agent_zero_sandbox_provider=e2b".to_owned()));
    assert_eq!(variables.len(), 7, "one per non-empty setting: {variables:?}");
    assert!(out.contains("https://agent-zero-edge-x.fermyon.app/webhooks/github"), "{out}");
    // The dry run masks the secret ones.
    let (status, out, _) = cli(&["init", "spin", "--dry-run", "--spin", stand_in.to_str().unwrap()], dir.path());
    assert_eq!(status, EXIT_OK);
    assert!(
        out.contains("--variable github_webhook_secret=<secret>") && out.contains("agent_zero_sandbox_provider=e2b")
    );
    for secret in SECRETS {
        assert!(!out.contains(secret), "{secret}: {out}");
    }
}

#[test]
fn an_env_file_is_checked_before_anything_runs() {
    for (env, needle) in [
        ("GITHUB_APP_ID=1\n", "a forge's webhook secret is required"),
        ("GITHUB_WEBHOOK_SECRET=\nGITLAB_TOKEN=glpat-1\n", "GITLAB_WEBHOOK_SECRET or GITLAB_WEBHOOK_SIGNING_TOKEN"),
        ("GITHUB_WEBHOOK_SECRET=x\nGITHUB_TOKNE=y\n", "GITHUB_TOKNE is not a setting"),
        ("GITHUB_WEBHOOK_SECRET=x\nGITHUB_API_URL=https://ghe/api/v3\n", "[vars]"),
        ("GITHUB_WEBHOOK_SECRET=x\nGITHUB_APP_PRIVATE_KEY=\"-----BEGIN\n", "never closed"),
        ("GITHUB_WEBHOOK_SECRET=x\ngarbage\n", "line 2"),
    ] {
        let dir = checkout(env);
        let stand_in = dir.path().join("stand-in");
        let (status, _, err) = cli(&["init", "cloudflare", "--wrangler", stand_in.to_str().unwrap()], dir.path());
        assert_eq!(status, EXIT_FAILED, "{env}");
        assert!(err.contains(needle), "{env}: {err}");
        assert!(!err.contains("https://ghe"), "no value in the error");
        assert!(calls(dir.path()).is_empty(), "{env}");
    }
    let dir = tempfile::tempdir().unwrap();
    let (status, _, err) = cli(&["init", "spin"], dir.path());
    assert_eq!(status, EXIT_FAILED);
    assert!(err.contains(".env.deploy"), "{err}");
}

#[test]
fn init_policy_is_plain_init() {
    let dir = tempfile::tempdir().unwrap();
    let (status, out, err) = cli(&["init", "policy"], dir.path());
    assert_eq!(status, EXIT_OK, "{err}");
    assert!(dir.path().join(".agent-zero.yml").exists());
    assert!(out.contains("agent-zero init cloudflare") && out.contains("agent-zero init spin"), "{out}");
    assert_eq!(cli(&["init", "policy"], dir.path()).0, EXIT_FAILED);
    assert_eq!(cli(&["init", "policy", "--force"], dir.path()).0, EXIT_OK);
}

/// README's "Deploy" section names the commands in the order the plan
/// runs them, and `spin deploy` with the flags the plan passes.
#[test]
fn the_readme_documents_the_steps_in_the_order_they_run() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("\n## Deploy\n").expect("a Deploy section");
    let section = &readme[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)];
    let cloudflare =
        &section[section.find("### Cloudflare Workers").unwrap()..section.find("### Fermyon Spin").unwrap()];
    let spin = &section[section.find("### Fermyon Spin").unwrap()..];
    assert!(cloudflare.contains("agent-zero init cloudflare") && spin.contains("agent-zero init spin"));
    let dir = checkout(&env_file());
    let stand_in = dir.path().join("stand-in");
    assert_eq!(cli(&["init", "cloudflare", "--wrangler", stand_in.to_str().unwrap()], dir.path()).0, EXIT_OK);
    // Each command's first mention in README, in the order the stand-in saw them.
    let mut last = 0;
    for (argv, _) in calls(dir.path()) {
        let documented = match argv[0].as_str() {
            "secret" => format!("wrangler secret put NAME --config {}", argv[4]),
            "deploy" => format!("wrangler deploy --config {}", argv[2]),
            "queues" if argv[2] == "agent-zero-ticks-dead" => "`agent-zero-ticks-dead`".to_owned(),
            _ => format!("wrangler {}", argv.join(" ")),
        };
        let flat = cloudflare.split_whitespace().collect::<Vec<_>>().join(" ");
        let found = flat.find(&documented).unwrap_or_else(|| panic!("README does not document `{documented}`"));
        assert!(found >= last, "`{documented}` is documented out of order");
        last = found;
    }
    let flat = spin.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("spin deploy --from spin.toml --build --variable name=value"), "{spin}");
}

/// README's Cloudflare section: each `wrangler` it shows is the one step 1
/// installed in tests/node, which `init cloudflare` runs by default (a
/// plain `npx wrangler` in this checkout downloads another), and its two
/// `wrangler deploy --dry-run` commands are the ones tests/scripts/test.sh
/// runs on the workers it built, word for word; so is the Spin section's
/// offline build (`spin_build.py`).
#[test]
fn the_readmes_dry_runs_are_what_the_test_suite_runs_with_the_default_wrangler() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let cloudflare = &readme[readme.find("### Cloudflare Workers").unwrap()..readme.find("### Fermyon Spin").unwrap()];
    let init = <Cli as clap::CommandFactory>::command();
    let wrangler = init
        .find_subcommand("init")
        .and_then(|c| c.find_subcommand("cloudflare"))
        .and_then(|c| c.get_arguments().find(|a| a.get_id() == "wrangler"))
        .map(|a| a.get_default_values()[0].to_str().unwrap().to_owned())
        .unwrap();
    assert_eq!(wrangler, "npx --prefix tests/node wrangler");
    assert!(cloudflare.contains(&format!("default `{wrangler}`")), "README names the default: {cloudflare}");
    let commands: Vec<&str> = cloudflare.lines().filter(|l| l.starts_with("npx ")).collect();
    assert!(commands.iter().any(|l| l.starts_with(&format!("{wrangler} login"))), "{cloudflare}");
    for command in &commands {
        assert!(command.starts_with(&format!("{wrangler} ")), "not the wrangler of tests/node: {command}");
    }
    let dry_runs: Vec<&str> = commands
        .iter()
        .filter(|l| l.contains(" deploy --dry-run"))
        .map(|l| l.split('#').next().unwrap().trim())
        .collect();
    assert_eq!(dry_runs.len(), 2, "one per worker: {dry_runs:?}");
    assert!(
        dry_runs.iter().any(|c| c.ends_with("--dry-run"))
            && dry_runs.iter().any(|c| c.ends_with(" -c wrangler.ticks.toml"))
    );
    let test_sh = std::fs::read_to_string(root().join("tests/scripts/test.sh")).unwrap();
    for command in dry_runs {
        let run = test_sh.lines().any(|line| {
            line.strip_prefix("WRANGLER_SEND_METRICS=false ")
                .and_then(|rest| rest.strip_prefix(command))
                .is_some_and(|rest| rest.starts_with(" --outdir "))
        });
        assert!(run, "tests/scripts/test.sh does not run README's `{command}`");
    }
    // Spin's offline build, likewise.
    let spin = &readme[readme.find("### Fermyon Spin").unwrap()..];
    let spin_build = spin.lines().find(|l| l.contains("spin_build.py")).expect("README's Spin build check");
    let spin_build = spin_build.split('#').next().unwrap().trim();
    assert!(test_sh.lines().any(|line| line == spin_build), "tests/scripts/test.sh does not run `{spin_build}`");
}

/// Every `agent-zero` command README's Deploy and Connect GitHub sections
/// tell a newcomer to run is one this CLI takes, and what they install
/// first exists: the tool installer with its two modes, the CLI's crate.
#[test]
fn every_command_the_readme_deploys_with_exists() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let deploy = &readme[readme.find("\n## Deploy\n").unwrap()..readme.find("\n## Configure\n").unwrap()];
    let flat = deploy.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut seen = 0;
    for line in deploy.lines().filter(|l| l.starts_with("agent-zero ")) {
        let command = line.split('#').next().unwrap().trim().replace("<your-subdomain>", "demo");
        let argv: Vec<&str> = command.split_whitespace().collect();
        if let Err(e) = <Cli as clap::Parser>::try_parse_from(&argv) {
            panic!("README's `{command}` is not a command of agent-zero: {e}");
        }
        seen += 1;
    }
    assert!(seen >= 4, "init cloudflare, init spin, init github-app: {seen}");
    assert!(flat.contains("`bash tests/scripts/install-tools.sh worker` for Cloudflare, `all` for Spin"));
    let installer = std::fs::read_to_string(root().join("tests/scripts/install-tools.sh")).unwrap();
    assert!(installer.contains("Usage: tests/scripts/install-tools.sh [worker|all]"));
    assert!(installer.contains("npm ci") && installer.contains("tests/node"), "it installs wrangler in tests/node");
    assert!(flat.contains("`cargo install --path tools/cli` (installs `agent-zero`)"));
    let manifest = std::fs::read_to_string(root().join("tools/cli/Cargo.toml")).unwrap();
    assert!(manifest.contains("name = \"agent-zero\""), "tools/cli builds the agent-zero binary");
    // The order a fresh clone takes: tools, the CLI, the env file (the App's
    // lines by `init github-app`), then the deploy.
    let at = |needle: &str| flat.find(needle).unwrap_or_else(|| panic!("README's Deploy has no `{needle}`"));
    assert!(at("install-tools.sh") < at("cargo install --path tools/cli"));
    assert!(at("cargo install --path tools/cli") < at("Write `.env.deploy`"));
    assert!(at("Write `.env.deploy`") < at("agent-zero init cloudflare"));
}

#[test]
fn receipt_links_are_derived_from_the_key_for_both_roles_never_the_key_itself() {
    let spin_toml = std::fs::read_to_string(root().join("spin.toml")).unwrap();
    let wrangler_toml = std::fs::read_to_string(root().join("wrangler.toml")).unwrap();
    let signed = format!(
        "{}AGENT_ZERO_PUBLIC_URL=https://az.example.com\nAGENT_ZERO_RECEIPT_KEY=2026-12:secretkeymaterial\n",
        env_file()
    );
    let steps = crate::deploy::cloudflare_plan(&signed, &spin_toml, &wrangler_toml, Some("kv")).unwrap();
    let put = |name: &str, config: &str| {
        steps.iter().find(|s| s.args == ["secret", "put", name, "--config", config]).and_then(|s| s.stdin.clone())
    };
    for config in ["wrangler.toml", "wrangler.ticks.toml"] {
        assert_eq!(put("AGENT_ZERO_RECEIPT_LINKS", config).as_deref(), Some("on"), "{config}");
        assert_eq!(put("AGENT_ZERO_PUBLIC_URL", config).as_deref(), Some("https://az.example.com"), "{config}");
    }
    assert!(put("AGENT_ZERO_RECEIPT_KEY", "wrangler.toml").is_some());
    assert!(put("AGENT_ZERO_RECEIPT_KEY", "wrangler.ticks.toml").is_none(), "the key stays with the front");
    // No key, or links turned off by hand: not derived.
    let unsigned = format!("{}AGENT_ZERO_PUBLIC_URL=https://az.example.com\n", env_file());
    let steps = crate::deploy::cloudflare_plan(&unsigned, &spin_toml, &wrangler_toml, Some("kv")).unwrap();
    assert!(steps.iter().all(|s| !s.args.contains(&"AGENT_ZERO_RECEIPT_LINKS".to_owned())));
    let off = format!("{signed}AGENT_ZERO_RECEIPT_LINKS=off\n");
    let step = &crate::deploy::spin_plan(&off, &spin_toml).unwrap()[0];
    assert!(step.args.contains(&"agent_zero_receipt_links=off".to_owned()), "{:?}", step.args);
    assert!(!step.args.contains(&"agent_zero_receipt_links=on".to_owned()));
}
