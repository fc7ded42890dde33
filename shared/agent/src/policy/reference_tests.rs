//! Files written for the reference parse: its settings with an edge
//! meaning are mapped, the others are listed as warnings naming the field.

use agent_zero_contracts::ModelProvider;

use super::*;

/// The reference's own `.agent-zero.example.yml` (what its `zero init`
/// writes), copied with its licence header and source commit.
const REFERENCE_EXAMPLE: &str = include_str!("testdata/reference.agent-zero.example.yml");

fn fields(policy: &Policy) -> Vec<String> {
    policy.warnings().into_iter().map(|w| w.field).collect()
}

#[test]
fn the_reference_example_parses_with_its_warnings_listed() {
    let p = Policy::parse(REFERENCE_EXAMPLE).expect("the reference's example parses");
    assert_eq!(p.mode, RunMode::Observe);
    assert_eq!(p.runner.isolation, Some(RunnerIsolation::Local));
    assert_eq!(p.runner.engine, Some(ContainerEngine::Docker));
    assert_eq!(p.runner.workdir.as_deref(), Some("/workspace"));
    assert_eq!(p.runner.max_output_bytes, 200_000);
    assert_eq!(p.model.name.as_deref(), Some("gpt-5"));
    let warnings = p.warnings();
    assert_eq!(fields(&p), ["runner.isolation", "runner.engine", "runner.workdir"]);
    assert!(warnings[0].message.contains("hosted sandbox"), "{warnings:?}");
    assert!(warnings[1].message.contains("ignored at the edge"), "{warnings:?}");
    // The rest is the reference's defaults, which are ours.
    let mut edge = p.clone();
    edge.runner = RunnerPolicy::default();
    edge.model.name = None;
    assert_eq!(edge, Policy::default());
}

#[test]
fn every_reference_runner_field_is_a_warning_and_container_means_isolated() {
    let yaml = "autofix:\n  requireIsolated: false\nrunner:\n  isolation: container\n  engine: podman\n  image: node:22-bookworm-slim\n  \
                workdir: /workspace\n  cpus: 2\n  memory: 4g\n  network: agent-zero\n";
    let p = Policy::parse(yaml).unwrap();
    assert!(p.autofix.require_isolated, "container isolation: writes need an isolated sandbox");
    assert_eq!(p.runner.cpus.as_deref(), Some("2"));
    assert_eq!(
        fields(&p),
        ["runner.engine", "runner.image", "runner.workdir", "runner.cpus", "runner.memory", "runner.network"]
    );
    // The warnings ride the task log: the policy snapshot round-trips.
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["runner"]["isolation"], "container");
    assert_eq!(serde_json::from_value::<Policy>(json).unwrap(), p);
    // A policy without them serialises as before.
    assert!(serde_json::to_value(Policy::default()).unwrap()["runner"].get("isolation").is_none());
}

#[test]
fn cli_providers_parse_and_are_refused_at_run_time() {
    for provider in ["claude-code", "codex-cli"] {
        let p = Policy::parse(&format!("model:\n  provider: {provider}\n")).unwrap();
        assert!(p.model.provider.needs_subprocess());
        assert_eq!(p.model.provider.as_str(), provider);
        let warnings = p.warnings();
        assert_eq!(fields(&p), ["model.provider"]);
        assert!(warnings[0].message.contains("AGENT_ZERO_MODEL_FALLBACK_PROVIDER"), "{warnings:?}");
    }
    assert!(!ModelProvider::OpenAi.needs_subprocess());
}

#[test]
fn unknown_keys_and_values_still_name_their_path() {
    let m = message("runner:\n  isolation: vm\n");
    assert!(m.contains("runner.isolation") && m.contains("vm"), "{m}");
    let m = message("runner:\n  engine: lxc\n");
    assert!(m.contains("runner.engine"), "{m}");
    let m = message("runner:\n  gpus: 1\n");
    assert!(m.contains("runner") && m.contains("unknown field `gpus`"), "{m}");
    let m = message("runner:\n  cpus: [2]\n");
    assert!(m.contains("runner.cpus"), "{m}");
}
