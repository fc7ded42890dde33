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
    // No secret value in any argv, nor in what was printed besides the webhook secret.
    for secret in SECRETS {
        assert!(!argv.iter().any(|a| a.contains(secret)), "{secret} in argv: {argv:#?}");
    }
    // The namespace id went into both configs, the same.
    for config in ["wrangler.toml", "wrangler.ticks.toml"] {
        let text = std::fs::read_to_string(dir.path().join(config)).unwrap();
        assert_eq!(deploy::kv_id(&text).as_deref(), Some("0123456789abcdef0123456789abcdef"), "{config}");
    }
    assert!(out.contains("https://agent-zero-edge.demo.workers.dev/webhooks/github"), "{out}");
    assert!(out.contains("whsec-7f3a9c"), "the secret to paste into GitHub: {out}");
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
        ("GITHUB_APP_ID=1\n", "GITHUB_WEBHOOK_SECRET is required"),
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
