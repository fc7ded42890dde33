use agent_zero_contracts::{ChangeRisk, DEFAULT_MODEL, ModelProvider, NetworkPolicy, QuoteRule, RunMode};

use super::*;

fn err(yaml: &str) -> PolicyError {
    Policy::parse(yaml).expect_err(yaml)
}

fn message(yaml: &str) -> String {
    err(yaml).to_string()
}

#[test]
fn empty_or_comment_only_is_the_default() {
    for text in ["", "   \n", "# nothing here\n", "---\n"] {
        assert_eq!(Policy::parse(text).unwrap(), Policy::default(), "{text:?}");
    }
    assert_eq!(Policy::from_bytes(b"").unwrap(), Policy::default());
}

#[test]
fn defaults_match_the_reference() {
    let p = Policy::default();
    assert_eq!(p.version, 1);
    assert_eq!(p.mode, RunMode::Observe);
    assert!(p.checks.is_empty());
    assert!(!p.proactive.enabled);
    assert!(!p.issues.enabled);
    assert_eq!(p.issues.require_label, "agent-zero");
    assert_eq!(p.issues.branch_prefix, "agent-zero/");
    assert!(p.issues.validation_comment);
    assert!(!p.autofix.enabled);
    assert_eq!(p.autofix.min_confidence, 0.85);
    assert_eq!(p.autofix.allowed_change_risks, [ChangeRisk::Mechanical]);
    assert!(p.autofix.require_isolated);
    assert_eq!(p.validation.min_confidence, 0.6);
    assert!(p.validation.require_evidence && p.validation.require_known_files);
    assert!(p.validation.verify_quoted_evidence);
    assert_eq!(p.validation.quotes, QuoteRule::All, "ours, not the reference's `any`: docs/trust.md");
    assert_eq!((p.agent.max_attempts, p.agent.timeout_ms, p.agent.max_changed_files), (3, 1_800_000, 10));
    assert_eq!(p.permissions.network, NetworkPolicy::Restricted);
    assert_eq!(p.runner.max_output_bytes, 200_000);
    assert_eq!(p.model.provider, ModelProvider::OpenAiCompatible);
    assert_eq!(p.model.name, None, "the operator's AGENT_ZERO_MODEL, else {DEFAULT_MODEL}");
    assert_eq!(p.model.cost_usd(1, 1), None);
    assert!(p.warnings().is_empty());
}

#[test]
fn parses_every_field() {
    let yaml = r#"
version: 1
mode: fix
proactive: { enabled: true }
issues:
  enabled: true
  requireLabel: bot-fix
  branchPrefix: bots/zero/
  validationComment: false
checks:
  - [cargo, test, --locked]
  - pnpm run lint
autofix:
  enabled: true
  minConfidence: 0.9
  allowedChangeRisks: [mechanical, behavioral]
  requireIsolated: false
validation:
  minConfidence: 0.7
  requireEvidence: false
  requireKnownFiles: false
  verifyQuotedEvidence: false
agent: { maxAttempts: 5, timeoutMs: 60000, maxChangedFiles: 3 }
permissions: { network: none }
runner: { maxOutputBytes: 1024 }
model:
  provider: anthropic
  name: claude-sonnet-4-5
  inputCostPerMillionTokens: 3
  outputCostPerMillionTokens: 15.0
"#;
    let p = Policy::parse(yaml).unwrap();
    assert_eq!(p.mode, RunMode::Fix);
    assert!(p.proactive.enabled);
    assert_eq!(p.issues.require_label, "bot-fix");
    assert_eq!(p.issues.branch_prefix, "bots/zero/");
    assert!(p.issues.enabled && !p.issues.validation_comment);
    assert_eq!(
        p.checks,
        [CheckCommand::new(["cargo", "test", "--locked"]), CheckCommand::new(["pnpm", "run", "lint"])]
    );
    assert!(p.autofix.enabled && !p.autofix.require_isolated);
    assert_eq!(p.autofix.min_confidence, 0.9);
    assert_eq!(p.autofix.allowed_change_risks, [ChangeRisk::Mechanical, ChangeRisk::Behavioral]);
    assert_eq!(p.validation.min_confidence, 0.7);
    assert!(!p.validation.require_evidence && !p.validation.require_known_files);
    assert!(!p.validation.verify_quoted_evidence);
    assert_eq!((p.agent.max_attempts, p.agent.timeout_ms, p.agent.max_changed_files), (5, 60_000, 3));
    assert_eq!(p.permissions.network, NetworkPolicy::None);
    assert_eq!(p.runner.max_output_bytes, 1024);
    assert_eq!(p.model.provider, ModelProvider::Anthropic);
    assert_eq!(p.model.name.as_deref(), Some("claude-sonnet-4-5"));
    assert!(p.warnings().is_empty(), "{:?}", p.warnings());
    assert_eq!(p.model.cost_usd(1_000_000, 2_000_000), Some(33.0));
}

#[test]
fn partial_sections_keep_the_other_defaults() {
    let p = Policy::parse("autofix:\n  enabled: true\nagent:\n  maxAttempts: 1\n").unwrap();
    assert!(p.autofix.enabled);
    assert_eq!(p.autofix.min_confidence, 0.85);
    assert_eq!(p.agent.max_attempts, 1);
    assert_eq!(p.agent.timeout_ms, 1_800_000);
    assert_eq!(p.mode, RunMode::Observe);
}

#[test]
fn unknown_keys_are_errors_with_their_path() {
    assert!(message("colour: blue").contains("unknown field `colour`"));
    let m = message("autofix:\n  enabled: true\n  yolo: true\n");
    assert!(m.contains("autofix") && m.contains("unknown field `yolo`"), "{m}");
    let m = message("model:\n  apiKey: sk-123\n");
    assert!(m.contains("model") && m.contains("unknown field `apiKey`"), "{m}");
    assert!(!m.contains("sk-123"), "a value must not be echoed: {m}");
}

#[test]
fn wrong_types_name_the_field() {
    let m = message("agent:\n  maxAttempts: many\n");
    assert!(m.contains("agent.maxAttempts"), "{m}");
    let m = message("mode: root\n");
    assert!(m.contains("mode") && m.contains("root"), "{m}");
    let m = message("checks:\n  - [cargo, [nested]]\n");
    assert!(m.contains("checks[0]"), "{m}");
    assert!(message("- a\n- b\n").contains("mapping"));
    assert!(matches!(err("mode: [unclosed"), PolicyError::Syntax { .. }));
}

#[test]
fn endpoints_are_forbidden() {
    assert_eq!(
        err("model:\n  name: x\n  baseUrl: https://evil.example\n"),
        PolicyError::Forbidden {
            field: "model.baseUrl".into(),
            reason: "the endpoint comes from the operator's AGENT_ZERO_MODEL_BASE_URL".into(),
        }
    );
    assert!(message("model:\n  baseUrl: ~\n").starts_with("model.baseUrl is not allowed"));
}

#[test]
fn version_must_be_one() {
    assert_eq!(message("version: 2"), "version: unsupported version 2; only 1 exists");
    assert!(message("version: 0").starts_with("version:"));
}

#[test]
fn ratios_are_between_zero_and_one() {
    assert_eq!(message("autofix:\n  minConfidence: 1.5\n"), "autofix.minConfidence: must be between 0 and 1, got 1.5");
    assert!(message("autofix:\n  minConfidence: -0.1\n").starts_with("autofix.minConfidence:"));
    assert!(message("autofix:\n  minConfidence: .nan\n").starts_with("autofix.minConfidence:"));
    // Past f64's range: the core schema's float, infinite, not a string.
    assert_eq!(
        message("autofix:\n  minConfidence: 1e400\n"),
        "autofix.minConfidence: must be between 0 and 1, got inf"
    );
    assert_eq!(
        message("autofix:\n  minConfidence: -1e400\n"),
        "autofix.minConfidence: must be between 0 and 1, got -inf"
    );
    let read = Policy::parse("autofix:\n  minConfidence: .75\nvalidation:\n  minConfidence: 5e-1\n").unwrap();
    assert_eq!((read.autofix.min_confidence, read.validation.min_confidence), (0.75, 0.5));
    assert!(message("validation:\n  minConfidence: 2\n").starts_with("validation.minConfidence:"));
    for ok in ["0", "1", "0.5"] {
        assert!(Policy::parse(&format!("validation:\n  minConfidence: {ok}\n")).is_ok(), "{ok}");
    }
}

#[test]
fn limits_are_positive() {
    for field in ["maxAttempts", "timeoutMs", "maxChangedFiles"] {
        let m = message(&format!("agent:\n  {field}: 0\n"));
        assert_eq!(m, format!("agent.{field}: must be a positive integer"));
    }
    assert_eq!(message("runner:\n  maxOutputBytes: 0\n"), "runner.maxOutputBytes: must be a positive integer");
    assert!(message("agent:\n  maxAttempts: -1\n").contains("agent.maxAttempts"));
}

#[test]
fn high_impact_can_never_be_allowed() {
    assert_eq!(
        message("autofix:\n  allowedChangeRisks: [mechanical, high-impact]\n"),
        "autofix.allowedChangeRisks[1]: high-impact changes always need a human and cannot be allowed"
    );
    assert!(message("autofix:\n  allowedChangeRisks: [reckless]\n").contains("autofix.allowedChangeRisks"));
    assert!(Policy::parse("autofix:\n  allowedChangeRisks: []\n").unwrap().autofix.allowed_change_risks.is_empty());
}

#[test]
fn issues_fields_are_checked() {
    assert!(message("issues:\n  requireLabel: '  '\n").starts_with("issues.requireLabel:"));
    let long = "x".repeat(51);
    assert!(message(&format!("issues:\n  requireLabel: {long}\n")).contains("at most 50"));
    for bad in ["'a..b/'", "'x.lock'", "'has space/'", "'a~b'", "''"] {
        let m = message(&format!("issues:\n  branchPrefix: {bad}\n"));
        assert!(m.starts_with("issues.branchPrefix:"), "{bad}: {m}");
    }
    let long = "a".repeat(101);
    assert!(message(&format!("issues:\n  branchPrefix: {long}\n")).contains("at most 100"));
}

#[test]
fn trigger_fields_parse_and_are_checked() {
    let p = Policy::default();
    assert_eq!(p.triggers.opt_in_label, "agent-zero", "the issues' label opts a pull request in too");
    assert_eq!(p.triggers.max_runs_per_hour, DEFAULT_MAX_RUNS_PER_HOUR);
    let p = Policy::parse("triggers:\n  optInLabel: ok-to-review\n  maxRunsPerHour: 3\n").unwrap();
    assert_eq!((p.triggers.opt_in_label.as_str(), p.triggers.max_runs_per_hour), ("ok-to-review", 3));
    assert_eq!(p.triggers.author_associations, TriggerPolicy::default().author_associations, "kept");
    let off = Policy::parse("triggers: {optInLabel: ''}\n").unwrap();
    assert_eq!(off.triggers.opt_in_label, "", "empty opts nothing in");

    assert_eq!(
        message("triggers: {optInLabel: '  '}\n"),
        "triggers.optInLabel: must be a label name, or empty to opt no pull request in"
    );
    let long = "x".repeat(51);
    assert!(
        message(&format!("triggers:\n  optInLabel: {long}\n")).starts_with("triggers.optInLabel: must be at most 50")
    );
    for bad in ["0", "101"] {
        let e = err(&format!("triggers: {{maxRunsPerHour: {bad}}}\n"));
        assert_eq!(e.field(), Some("triggers.maxRunsPerHour"), "{bad}");
        assert_eq!(e.to_string(), format!("triggers.maxRunsPerHour: must be between 1 and 100, got {bad}"));
    }
    let m = message("triggers: {maxRunsPerHour: many}\n");
    assert!(m.contains("triggers.maxRunsPerHour: invalid type: string \"many\", expected u32"), "{m}");
    assert!(message("triggers: {maxRunsPerHour: -1}\n").contains("triggers.maxRunsPerHour"));

    // A record leaves them out at their defaults (a task's stored policy
    // keeps its shape) and reads them back either way.
    let json = serde_json::to_value(Policy::default()).unwrap();
    assert_eq!(json["triggers"].as_object().unwrap().len(), 2, "{json}");
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(
        (json["triggers"]["optInLabel"].as_str(), json["triggers"]["maxRunsPerHour"].as_u64()),
        (Some("ok-to-review"), Some(3))
    );
    assert_eq!(Policy::from_record(&json).unwrap(), p);
    assert_eq!(Policy::from_record(&serde_json::to_value(&off).unwrap()).unwrap(), off);
}

#[test]
fn model_fields_are_checked() {
    assert_eq!(message("model:\n  name: ' '\n"), "model.name: must be a non-empty string");
    let m = message("model:\n  provider: skynet\n");
    assert!(m.contains("model.provider") && m.contains("openai-compatible"), "{m}");
    assert!(message("model:\n  inputCostPerMillionTokens: -1\n").starts_with("model.inputCostPerMillionTokens:"));
    assert!(message("model:\n  outputCostPerMillionTokens: .inf\n").starts_with("model.outputCostPerMillionTokens:"));
    let priced_once = Policy::parse("model:\n  inputCostPerMillionTokens: 2\n").unwrap();
    assert_eq!(priced_once.model.cost_usd(10, 10), None, "cost needs both prices");
}

#[test]
fn checks_reject_shell_operators_with_the_argument_path() {
    let cases = [
        ("[[make, test], [sh, -c, 'a && b']]", "checks[1][2]", "&&"),
        ("[[a, 'x || y']]", "checks[0][1]", "||"),
        ("[[a, '|']]", "checks[0][1]", "|"),
        ("[[a, 'b;c']]", "checks[0][1]", ";"),
        ("[[echo, '$(id)']]", "checks[0][1]", "$("),
        ("[[echo, '${HOME}']]", "checks[0][1]", "${"),
        ("[[echo, '`id`']]", "checks[0][1]", "`"),
        ("[[a, '>out']]", "checks[0][1]", ">"),
        ("[[a, '<in']]", "checks[0][1]", "<"),
        ("[[a, '>>log']]", "checks[0][1]", ">>"),
        ("[[a, '2>err']]", "checks[0][1]", "2>"),
        ("[[a, 'bg &']]", "checks[0][1]", "&"),
        ("[[a, \"x\\ny\"]]", "checks[0][1]", "\\n"),
        ("['pnpm lint && rm']", "checks[0][2]", "&&"),
        ("[['a;b']]", "checks[0][0]", ";"),
    ];
    for (checks, field, operator) in cases {
        let e = err(&format!("checks: {checks}\n"));
        assert_eq!(e, PolicyError::ShellOperator { field: field.into(), operator: operator.into() }, "{checks}");
        assert!(e.to_string().starts_with(field));
    }
    assert!(Policy::parse("checks: [[cargo, test, '--', 'tests::*']]\n").is_ok(), "globs stay allowed");
}

#[test]
fn checks_reject_empty_commands_and_quoted_strings() {
    assert_eq!(err("checks: [[]]\n"), PolicyError::EmptyCommand { field: "checks[0]".into() });
    assert_eq!(err("checks: [[make], '   ']\n"), PolicyError::EmptyCommand { field: "checks[1]".into() });
    assert_eq!(err("checks: [['', x]]\n"), PolicyError::EmptyCommand { field: "checks[0][0]".into() });
    let m = message("checks:\n  - pytest -k \"a b\"\n");
    assert!(m.contains("checks[0]") && m.contains("quotes"), "{m}");
    assert!(message("checks: make test\n").contains("checks"), "checks must be a list");
}

#[test]
fn oversized_and_non_utf8_files_are_refused() {
    let big = format!("# {}\n", "x".repeat(MAX_POLICY_BYTES));
    assert!(matches!(Policy::parse(&big), Err(PolicyError::TooLarge { .. })));
    assert!(matches!(Policy::from_bytes(big.as_bytes()), Err(PolicyError::TooLarge { .. })));
    assert_eq!(Policy::from_bytes(b"mode: \xff"), Err(PolicyError::NotUtf8));
}

#[test]
fn webhooks_never_raise_the_mode() {
    let mut policy = Policy::default();
    for requested in RunMode::ALL {
        assert_eq!(policy.restrict_mode(Some(*requested)), RunMode::Observe);
    }
    policy.mode = RunMode::Fix;
    assert_eq!(policy.restrict_mode(None), RunMode::Fix);
    assert_eq!(policy.restrict_mode(Some(RunMode::Autonomous)), RunMode::Fix);
    assert_eq!(policy.restrict_mode(Some(RunMode::Suggest)), RunMode::Suggest);
    policy.mode = RunMode::Autonomous;
    for requested in RunMode::ALL {
        assert_eq!(policy.restrict_mode(Some(*requested)), *requested);
    }
}

#[test]
fn round_trips_through_json_for_the_task_log() {
    let p = Policy::parse("mode: suggest\nchecks: [[cargo, test]]\nmodel: { inputCostPerMillionTokens: 1 }\n").unwrap();
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["checks"], serde_json::json!([["cargo", "test"]]));
    assert_eq!(json["autofix"]["minConfidence"], 0.85);
    assert_eq!(json["model"]["provider"], "openai-compatible");
    assert_eq!(Policy::from_record(&json).unwrap(), p);
    assert_eq!(serde_json::from_value::<Policy>(json).unwrap(), p, "what serde's own JSON reading gives");
}

#[test]
fn a_record_is_read_as_serde_would_read_it() {
    // The reference's example sets every section, its verbatim runner
    // fields among them; the others spell each scalar kind once.
    let reference = Policy::parse(include_str!("testdata/reference.agent-zero.example.yml")).unwrap();
    let spelled = Policy::parse(
        "mode: fix\nrunner: {isolation: container, cpus: 1.5, memory: 4g, network: none}\n\
         agent: {maxAttempts: 7}\nautofix: {minConfidence: 0.3333333333333333, allowedChangeRisks: [mechanical]}\n\
         model: {name: m, inputCostPerMillionTokens: 1e-7, outputCostPerMillionTokens: 2.5}\n",
    )
    .unwrap();
    for policy in [Policy::default(), reference, spelled] {
        let json = serde_json::to_value(&policy).unwrap();
        assert_eq!(Policy::from_record(&json).unwrap(), policy);
        assert_eq!(serde_json::from_value::<Policy>(json).unwrap(), policy);
    }
    let m = Policy::from_record(&serde_json::json!({"agent": {"maxAttempts": "three"}})).unwrap_err().to_string();
    assert!(m.contains("agent.maxAttempts: invalid type: string"), "{m}");
    assert!(Policy::from_record(&serde_json::json!({"yolo": true})).is_err(), "unknown fields stay refused");
}

#[path = "reference_tests.rs"]
mod reference;

#[path = "yaml_tests.rs"]
mod yaml;

#[path = "yaml_differential_tests.rs"]
mod yaml_differential;

#[path = "read_differential_tests.rs"]
mod read_differential;

#[test]
fn the_check_run_is_advisory_unless_blocking() {
    assert!(!Policy::default().check_run.blocking);
    let p = Policy::parse("checkRun:\n  blocking: true\n").unwrap();
    assert!(p.check_run.blocking);
    let m = message("checkRun: {blocking: often}\n");
    assert!(m.contains("checkRun.blocking: invalid type: string \"often\", expected a boolean"), "{m}");
    assert!(message("checkRun: {block: true}\n").contains("unknown field `block`, expected `blocking`"));
    // A record leaves it out at its default and reads it back either way.
    let json = serde_json::to_value(Policy::default()).unwrap();
    assert!(json.get("checkRun").is_none(), "{json}");
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["checkRun"]["blocking"], true);
    assert_eq!(Policy::from_record(&json).unwrap(), p);
}

#[test]
fn the_diff_budget_defaults_to_the_references_and_is_bounded() {
    let p = Policy::default();
    assert_eq!((p.review.diff_budget_bytes, p.review.file_budget_bytes), (100_000, 100_000));
    let p = Policy::parse("review:\n  diffBudgetBytes: 30000\n  fileBudgetBytes: 5000\n").unwrap();
    assert_eq!((p.review.diff_budget_bytes, p.review.file_budget_bytes), (30_000, 5_000));
    assert_eq!(Policy::parse("review: {diffBudgetBytes: 200000}\n").unwrap().review.diff_budget_bytes, 200_000);
    for (yaml, field, got) in [
        ("review: {diffBudgetBytes: 200001}\n", "review.diffBudgetBytes", "200001"),
        ("review: {diffBudgetBytes: 999}\n", "review.diffBudgetBytes", "999"),
        ("review: {fileBudgetBytes: 0}\n", "review.fileBudgetBytes", "0"),
        ("review: {fileBudgetBytes: 1000000}\n", "review.fileBudgetBytes", "1000000"),
    ] {
        let e = err(yaml);
        assert_eq!(e.field(), Some(field), "{yaml}");
        assert_eq!(
            e.to_string(),
            format!(
                "{field}: must be between 1000 and 200000 bytes (the model's context and the task store's value \
                 limit), got {got}"
            ),
        );
    }
    let m = message("review: {diffBudgetBytes: lots}\n");
    assert!(m.contains("review.diffBudgetBytes: invalid type: string \"lots\", expected u32"), "{m}");
    let m = message("review: {diffBudgetBytes: -1}\n");
    assert!(m.contains("review.diffBudgetBytes: invalid value: integer `-1`, expected u32"), "{m}");
    let m = message("review: {budget: 1}\n");
    assert!(m.contains("unknown field `budget`, expected one of `diffBudgetBytes`, `fileBudgetBytes`"), "{m}");
    // A record leaves it out at its default and reads it back either way.
    assert!(serde_json::to_value(Policy::default()).unwrap().get("review").is_none());
    let p = Policy::parse("review: {diffBudgetBytes: 4000}\n").unwrap();
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["review"], serde_json::json!({"diffBudgetBytes": 4000, "fileBudgetBytes": 100_000}));
    assert_eq!(Policy::from_record(&json).unwrap(), p);
}

#[test]
fn the_quote_rule_is_all_by_default_and_any_on_request() {
    assert_eq!(Policy::parse("validation: {quotes: any}\n").unwrap().validation.quotes, QuoteRule::Any);
    assert_eq!(Policy::parse("validation:\n  quotes: all\n").unwrap().validation.quotes, QuoteRule::All);
    let p = Policy::parse("validation: {minConfidence: 0.7}\n").unwrap();
    assert_eq!(p.validation.quotes, QuoteRule::All, "other validation fields keep the default rule");
    let m = message("validation: {quotes: some}\n");
    assert!(m.contains("validation.quotes: unknown variant `some`, expected `all` or `any`"), "{m}");
    let m = message("validation: {quotes: ANY}\n");
    assert!(m.contains("validation.quotes: unknown variant `ANY`"), "{m}");
    let m = message("validation: {quotes: true}\n");
    assert!(m.contains(": validation.quotes: "), "{m}");
    let m = message("validation: {quotes: [any]}\n");
    assert!(m.contains(": validation.quotes: "), "{m}");
    // A record leaves it out at its default and reads it back either way.
    let json = serde_json::to_value(Policy::default()).unwrap();
    assert!(json["validation"].get("quotes").is_none(), "{json}");
    let p = Policy::parse("validation: {quotes: any}\n").unwrap();
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["validation"]["quotes"], "any");
    assert_eq!(Policy::from_record(&json).unwrap(), p);
}

#[test]
fn a_witness_runs_the_policys_command_and_require_witness_needs_one() {
    let p = Policy::default();
    assert!(!p.review.witness.enabled() && !p.review.require_witness, "off by default");
    assert_eq!(p.review.witness.timeout_ms, 60_000);
    let p = Policy::parse(
        "review:\n  requireWitness: true\n  witness:\n    command: [python3, -m, pytest, -q]\n    timeoutMs: 20000\n",
    )
    .unwrap();
    assert_eq!(p.review.witness.command, ["python3", "-m", "pytest", "-q"]);
    assert_eq!((p.review.witness.timeout_ms, p.review.require_witness), (20_000, true));
    assert!(!p.review.witness.allow_overwrite, "a witness is a new file unless the policy says otherwise");
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["review"]["witness"]["command"], serde_json::json!(["python3", "-m", "pytest", "-q"]));
    assert_eq!(json["review"]["requireWitness"], true);
    assert_eq!(Policy::from_record(&json).unwrap(), p, "a record reads back");
    for (yaml, field) in [
        ("review: {requireWitness: true}\n", "review.requireWitness"),
        ("review: {witness: {command: [python3], timeoutMs: 0}}\n", "review.witness.timeoutMs"),
        ("review: {witness: {command: [python3], timeoutMs: 300001}}\n", "review.witness.timeoutMs"),
        ("review: {witness: {command: ['sh', '-c', 'x; y']}}\n", "review.witness.command[2]"),
        ("review: {witness: {command: ['']}}\n", "review.witness.command[0]"),
    ] {
        assert_eq!(err(yaml).field(), Some(field), "{yaml}");
    }
    let m = message("review: {witness: {cmd: [python3]}}\n");
    assert!(m.contains("review.witness: unknown field `cmd`"), "{m}");
}
