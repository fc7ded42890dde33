//! The YAML tree of `yaml.rs` to [`Policy`], one short function per
//! type over the vocabulary of `de.rs`. Each type's field names are
//! listed once, in declaration order (a sequence fills them by position,
//! as serde's derived visitors did); absent fields keep the type's
//! default. Range and shape rules are `parse.rs`'s.

use agent_zero_contracts::{ChangeRisk, NetworkPolicy, QuoteRule, RunMode};

use super::checks::CheckCommand;
use super::de::{
    At, Kind, Path, Read, boolean, error, fields, float, invalid, names, optional_float, optional_string, string,
    strings, text, unsigned32, unsigned64, variant,
};
use agent_zero_contracts::{ModelPolicy, ModelProvider};

use super::yaml::Node;
use super::{
    AgentLimits, AutofixPolicy, CheckRunPolicy, ContainerEngine, IssuePolicy, Permissions, Policy, ProactivePolicy,
    ReviewPolicy, RunnerIsolation, RunnerPolicy, TriggerPolicy, ValidationPolicy, WitnessPolicy,
};

/// The policy of a document's root node (or of a record's JSON tree).
pub(super) fn policy(node: &Node) -> Read<Policy> {
    let mut p = Policy::default();
    let names = &[
        "version",
        "mode",
        "checks",
        "proactive",
        "issues",
        "triggers",
        "autofix",
        "validation",
        "agent",
        "permissions",
        "runner",
        "model",
        "checkRun",
        "review",
    ];
    fields(At { path: &Path::Root, node }, names, "struct Policy", &mut |index, at| {
        match index {
            0 => p.version = unsigned32(at)?,
            1 => p.mode = RunMode::ALL[variant(at, names!(RunMode), "enum RunMode")?],
            2 => p.checks = checks(at)?,
            3 => p.proactive = proactive(at)?,
            4 => p.issues = issues(at)?,
            5 => p.triggers = triggers(at)?,
            6 => p.autofix = autofix(at)?,
            7 => p.validation = validation(at)?,
            8 => p.agent = agent(at)?,
            9 => p.permissions = permissions(at)?,
            10 => p.runner = runner(at)?,
            11 => p.model = model(at)?,
            12 => p.check_run = check_run(at)?,
            _ => p.review = review(at)?,
        }
        Ok(())
    })?;
    Ok(p)
}

/// The checks: each a list of arguments, or one string split on
/// whitespace (quotes refused: nothing would interpret them).
fn checks(at: At<'_>) -> Read<Vec<CheckCommand>> {
    let Kind::Sequence(items) = Kind::of(at.node) else { return Err(invalid(at, "type", "a sequence")) };
    let mut commands = Vec::with_capacity(items.len());
    for (index, node) in items.iter().enumerate() {
        let at = At { path: &Path::Index(at.path, index), node };
        let argv = match Kind::of(node) {
            Kind::Sequence(_) => strings(at)?,
            Kind::Text(line) if line.contains(['"', '\'']) => {
                let message = "quotes are not interpreted in a one-string check; write it as a list of arguments";
                return Err(error(at, format_args!("{message}")));
            }
            Kind::Text(line) => line.split_whitespace().map(str::to_owned).collect(),
            _ => {
                let expected = "a command as a list of arguments, or one string split on whitespace";
                return Err(invalid(at, "type", expected));
            }
        };
        commands.push(CheckCommand { argv });
    }
    Ok(commands)
}

fn proactive(at: At<'_>) -> Read<ProactivePolicy> {
    let mut p = ProactivePolicy::default();
    fields(at, &["enabled"], "struct ProactivePolicy", &mut |_, at| {
        p.enabled = boolean(at)?;
        Ok(())
    })?;
    Ok(p)
}

fn check_run(at: At<'_>) -> Read<CheckRunPolicy> {
    let mut p = CheckRunPolicy::default();
    fields(at, &["blocking"], "struct CheckRunPolicy", &mut |_, at| {
        p.blocking = boolean(at)?;
        Ok(())
    })?;
    Ok(p)
}

fn review(at: At<'_>) -> Read<ReviewPolicy> {
    let mut p = ReviewPolicy::default();
    let names = &["diffBudgetBytes", "fileBudgetBytes", "witness", "requireWitness"];
    fields(at, names, "struct ReviewPolicy", &mut |index, at| {
        match index {
            0 => p.diff_budget_bytes = unsigned32(at)?,
            1 => p.file_budget_bytes = unsigned32(at)?,
            2 => p.witness = witness(at)?,
            _ => p.require_witness = boolean(at)?,
        }
        Ok(())
    })?;
    Ok(p)
}

fn witness(at: At<'_>) -> Read<WitnessPolicy> {
    let mut p = WitnessPolicy::default();
    fields(at, &["command", "timeoutMs", "allowOverwrite"], "struct WitnessPolicy", &mut |index, at| {
        match index {
            0 => p.command = strings(at)?,
            1 => p.timeout_ms = unsigned64(at)?,
            _ => p.allow_overwrite = boolean(at)?,
        }
        Ok(())
    })?;
    Ok(p)
}

fn issues(at: At<'_>) -> Read<IssuePolicy> {
    let mut p = IssuePolicy::default();
    let names = &["enabled", "requireLabel", "branchPrefix", "validationComment"];
    fields(at, names, "struct IssuePolicy", &mut |index, at| {
        match index {
            0 => p.enabled = boolean(at)?,
            1 => p.require_label = string(at)?,
            2 => p.branch_prefix = string(at)?,
            _ => p.validation_comment = boolean(at)?,
        }
        Ok(())
    })?;
    Ok(p)
}

fn triggers(at: At<'_>) -> Read<TriggerPolicy> {
    let mut p = TriggerPolicy::default();
    let names = &["authorAssociations", "allowedBots", "optInLabel", "maxRunsPerHour"];
    fields(at, names, "struct TriggerPolicy", &mut |index, at| {
        match index {
            0 => p.author_associations = strings(at)?,
            1 => p.allowed_bots = strings(at)?,
            2 => p.opt_in_label = string(at)?,
            _ => p.max_runs_per_hour = unsigned32(at)?,
        }
        Ok(())
    })?;
    Ok(p)
}

fn autofix(at: At<'_>) -> Read<AutofixPolicy> {
    let mut p = AutofixPolicy::default();
    let names = &["enabled", "minConfidence", "allowedChangeRisks", "requireIsolated", "allowNewFiles"];
    fields(at, names, "struct AutofixPolicy", &mut |index, at| {
        match index {
            0 => p.enabled = boolean(at)?,
            1 => p.min_confidence = float(at)?,
            2 => p.allowed_change_risks = change_risks(at)?,
            3 => p.require_isolated = boolean(at)?,
            _ => p.allow_new_files = boolean(at)?,
        }
        Ok(())
    })?;
    Ok(p)
}

fn change_risks(at: At<'_>) -> Read<Vec<ChangeRisk>> {
    let Kind::Sequence(items) = Kind::of(at.node) else { return Err(invalid(at, "type", "a sequence")) };
    let mut risks = Vec::with_capacity(items.len());
    for (index, node) in items.iter().enumerate() {
        let at = At { path: &Path::Index(at.path, index), node };
        risks.push(ChangeRisk::ALL[variant(at, names!(ChangeRisk), "enum ChangeRisk")?]);
    }
    Ok(risks)
}

fn validation(at: At<'_>) -> Read<ValidationPolicy> {
    let mut p = ValidationPolicy::default();
    let names = &["minConfidence", "requireEvidence", "requireKnownFiles", "verifyQuotedEvidence", "quotes"];
    fields(at, names, "struct ValidationPolicy", &mut |index, at| {
        match index {
            0 => p.min_confidence = float(at)?,
            1 => p.require_evidence = boolean(at)?,
            2 => p.require_known_files = boolean(at)?,
            3 => p.verify_quoted_evidence = boolean(at)?,
            _ => p.quotes = QuoteRule::ALL[variant(at, names!(QuoteRule), "enum QuoteRule")?],
        }
        Ok(())
    })?;
    Ok(p)
}

fn agent(at: At<'_>) -> Read<AgentLimits> {
    let mut p = AgentLimits::default();
    fields(at, &["maxAttempts", "timeoutMs", "maxChangedFiles"], "struct AgentLimits", &mut |index, at| {
        match index {
            0 => p.max_attempts = unsigned32(at)?,
            1 => p.timeout_ms = unsigned64(at)?,
            _ => p.max_changed_files = unsigned32(at)?,
        }
        Ok(())
    })?;
    Ok(p)
}

fn permissions(at: At<'_>) -> Read<Permissions> {
    let mut p = Permissions::default();
    fields(at, &["network"], "struct Permissions", &mut |_, at| {
        p.network = NetworkPolicy::ALL[variant(at, names!(NetworkPolicy), "enum NetworkPolicy")?];
        Ok(())
    })?;
    Ok(p)
}

fn runner(at: At<'_>) -> Read<RunnerPolicy> {
    let mut p = RunnerPolicy::default();
    let names = &["maxOutputBytes", "isolation", "engine", "image", "workdir", "cpus", "memory", "network"];
    fields(at, names, "struct RunnerPolicy", &mut |index, at| {
        match index {
            0 => p.max_output_bytes = unsigned64(at)?,
            1 if at.node.is_null() => p.isolation = None,
            1 => {
                let isolations = [RunnerIsolation::Local, RunnerIsolation::Container];
                p.isolation = Some(isolations[variant(at, &["local", "container"], "enum RunnerIsolation")?]);
            }
            2 if at.node.is_null() => p.engine = None,
            2 => {
                let engines = [ContainerEngine::Docker, ContainerEngine::Podman];
                p.engine = Some(engines[variant(at, &["docker", "podman"], "enum ContainerEngine")?]);
            }
            3 => p.image = optional_string(at)?,
            4 => p.workdir = optional_string(at)?,
            5 => p.cpus = Some(verbatim(at)?),
            6 => p.memory = Some(verbatim(at)?),
            _ => p.network = optional_string(at)?,
        }
        Ok(())
    })?;
    Ok(p)
}

/// A reference setting passed through verbatim (`cpus: 2`, `memory: 4g`):
/// a string, or a number kept as its text (as Rust writes it). Null is
/// refused, as serde refused it.
fn verbatim(at: At<'_>) -> Read<String> {
    match Kind::of(at.node) {
        Kind::Text(text) => Ok(text.to_owned()),
        Kind::Unsigned(value) => Ok(value.to_string()),
        Kind::Negative(value) => Ok(value.to_string()),
        Kind::Float(value) => Ok(value.to_string()),
        _ => Err(invalid(at, "type", "a string or a number")),
    }
}

fn model(at: At<'_>) -> Read<ModelPolicy> {
    let mut p = ModelPolicy::default();
    let names = &["provider", "name", "inputCostPerMillionTokens", "outputCostPerMillionTokens"];
    fields(at, names, "struct ModelPolicy", &mut |index, at| {
        match index {
            0 => p.provider = provider(at)?,
            1 => p.name = optional_string(at)?,
            2 => p.input_cost_per_million_tokens = optional_float(at)?,
            _ => p.output_cost_per_million_tokens = optional_float(at)?,
        }
        Ok(())
    })?;
    Ok(p)
}

/// A provider's wire name; the message of an unknown one is
/// [`ModelProvider::parse`]'s.
fn provider(at: At<'_>) -> Read<ModelProvider> {
    ModelProvider::parse(text(at, "a model provider name")?).map_err(|message| error(at, format_args!("{message}")))
}
