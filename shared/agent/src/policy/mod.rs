//! Repository policy: the typed form of `.agent-zero.yml`.
//!
//! Field names and defaults follow the reference. A policy can only
//! restrict what the operator allows: it never names an endpoint or a
//! credential, and a webhook never raises the mode above it
//! ([`Policy::restrict_mode`]). Parsing lives in `parse.rs` (YAML in `yaml.rs`,
//! the tree to the policy types in `read.rs` over the vocabulary of `de.rs`,
//! which names field paths in its errors), the check
//! command type in `checks.rs`, the git branch prefix rule in `branch.rs`,
//! the diff budget in `review.rs`.

mod branch;
mod checks;
mod de;
#[cfg(test)]
mod de_oracle;
mod error;
mod parse;
mod read;
mod reference;
mod review;
mod yaml;
#[cfg(test)]
mod yaml_oracle;
mod yaml_scan;

use agent_zero_contracts::{ChangeRisk, ModelPolicy, NetworkPolicy, QuoteRule, RunMode};
use serde::Serialize;

pub use branch::check_branch_prefix;
pub use checks::CheckCommand;
pub use error::PolicyError;
pub use parse::{MAX_POLICY_BYTES, record};
pub use reference::{ContainerEngine, PolicyWarning, RunnerIsolation};
pub use review::{
    DEFAULT_DIFF_BUDGET_BYTES, DEFAULT_WITNESS_TIMEOUT_MS, MAX_DIFF_BUDGET_BYTES, MAX_WITNESS_TIMEOUT_MS,
    MIN_DIFF_BUDGET_BYTES, ReviewPolicy, WitnessPolicy,
};

/// The whole repository policy. `Policy::default()` is the policy of a
/// repository without `.agent-zero.yml`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct Policy {
    /// Schema version; only `1` exists.
    pub version: u32,
    /// The most authority any run on this repository may have.
    pub mode: RunMode,
    /// Explicit check commands (argv). Empty: discover the repository's own
    /// lint/typecheck/test/build.
    pub checks: Vec<CheckCommand>,
    pub proactive: ProactivePolicy,
    pub issues: IssuePolicy,
    pub triggers: TriggerPolicy,
    pub autofix: AutofixPolicy,
    pub validation: ValidationPolicy,
    pub agent: AgentLimits,
    pub permissions: Permissions,
    pub runner: RunnerPolicy,
    pub model: ModelPolicy,
    /// The check run posted on a pull request's head. Left out of a record
    /// at its default, so a task's stored policy keeps the shape it had
    /// before it existed.
    #[serde(skip_serializing_if = "CheckRunPolicy::is_default")]
    pub check_run: CheckRunPolicy,
    /// How much of a pull request's diff the model is shown. Left out of a
    /// record at its default, like `check_run`.
    #[serde(skip_serializing_if = "ReviewPolicy::is_default")]
    pub review: ReviewPolicy,
}

/// The check run Agent Zero posts on a pull request's head (a proactive
/// review, review feedback): advisory by default, or a gate a branch
/// protection rule can require.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct CheckRunPolicy {
    /// `false` (the default): every outcome but a verified change or a
    /// failed run concludes `neutral`, which a required check passes.
    /// `true`: an evidence-backed finding left unfixed concludes `failure`,
    /// an inconclusive run or a review that did not read every changed file
    /// `action_required`, so a required check holds the merge until the
    /// finding is fixed or a person looks.
    pub blocking: bool,
}

impl CheckRunPolicy {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            version: 1,
            mode: RunMode::Observe,
            checks: Vec::new(),
            proactive: ProactivePolicy::default(),
            issues: IssuePolicy::default(),
            triggers: TriggerPolicy::default(),
            autofix: AutofixPolicy::default(),
            validation: ValidationPolicy::default(),
            agent: AgentLimits::default(),
            permissions: Permissions::default(),
            runner: RunnerPolicy::default(),
            model: ModelPolicy::default(),
            check_run: CheckRunPolicy::default(),
            review: ReviewPolicy::default(),
        }
    }
}

impl Policy {
    /// The mode a run actually gets: what was requested (by a webhook, an
    /// API call), never more than the policy allows. `None` asks for the
    /// policy's own mode. Order: observe < suggest < fix < autonomous.
    pub fn restrict_mode(&self, requested: Option<RunMode>) -> RunMode {
        requested.map_or(self.mode, |mode| mode.min(self.mode))
    }
}

/// Proactive review of pull request diffs (opt-in).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ProactivePolicy {
    pub enabled: bool,
}

/// Issue-to-pull-request runs (opt-in, scoped by a label).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct IssuePolicy {
    pub enabled: bool,
    /// An issue must carry this label before it becomes a task.
    pub require_label: String,
    /// Prefix of the branch a verified issue task publishes on; a valid git
    /// ref fragment (see [`check_branch_prefix`]).
    pub branch_prefix: String,
    /// Post the validation outcome as a comment on the issue.
    pub validation_comment: bool,
}

impl Default for IssuePolicy {
    fn default() -> Self {
        Self {
            enabled: false,
            require_label: "agent-zero".into(),
            branch_prefix: "agent-zero/".into(),
            validation_comment: true,
        }
    }
}

/// GitHub's `author_association` values, as its REST API spells them.
pub const AUTHOR_ASSOCIATIONS: &[&str] =
    &["COLLABORATOR", "CONTRIBUTOR", "FIRST_TIMER", "FIRST_TIME_CONTRIBUTOR", "MANNEQUIN", "MEMBER", "NONE", "OWNER"];

/// The default of [`TriggerPolicy::max_runs_per_hour`]: one AI review
/// (its body and each inline comment are deliveries of their own) and a
/// few pushes an hour, not a loop.
pub const DEFAULT_MAX_RUNS_PER_HOUR: u32 = 20;

/// The most [`TriggerPolicy::max_runs_per_hour`] may be: intake keeps one
/// start time per run of the hour.
pub const MAX_RUNS_PER_HOUR: u32 = 100;

/// Who may start a run from GitHub: review feedback, pull requests and
/// issues (an issue also starts when someone other than its author adds the
/// label, since applying labels to another's issue needs triage access),
/// and how often. Proactive review is `proactive.enabled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct TriggerPolicy {
    /// `author_association` values whose text starts a run. Default: the
    /// repository's owners, organisation members and collaborators.
    pub author_associations: Vec<String>,
    /// Bot logins (`coderabbitai[bot]`, `Copilot`) whose review feedback
    /// is validated like a person's. Compared case-insensitively; every
    /// other bot is ignored, which also keeps the app from answering itself.
    /// On a pull request whose opener the rules above refuse, their
    /// feedback starts a run only once the pull request is opted in.
    pub allowed_bots: Vec<String>,
    /// A pull request carrying this label passes the author gate whoever
    /// opened it, and adding it starts a proactive review: GitHub lets only
    /// accounts with triage access label a pull request, so they vouch for
    /// it. Compared case-insensitively; empty opts nothing in.
    ///
    /// This and the next are left out of a record at their defaults: they
    /// decide intake, not a run, so a task's stored policy keeps the shape
    /// it had before they existed.
    #[serde(skip_serializing_if = "is_default_opt_in_label")]
    pub opt_in_label: String,
    /// Most runs one pull request or issue starts in a rolling hour,
    /// counted at intake (1 to [`MAX_RUNS_PER_HOUR`]).
    #[serde(skip_serializing_if = "is_default_max_runs_per_hour")]
    pub max_runs_per_hour: u32,
}

/// The default of [`TriggerPolicy::opt_in_label`]: the issues' label.
const DEFAULT_OPT_IN_LABEL: &str = "agent-zero";

fn is_default_opt_in_label(label: &str) -> bool {
    label == DEFAULT_OPT_IN_LABEL
}

fn is_default_max_runs_per_hour(runs: &u32) -> bool {
    *runs == DEFAULT_MAX_RUNS_PER_HOUR
}

impl Default for TriggerPolicy {
    fn default() -> Self {
        Self {
            author_associations: vec!["OWNER".into(), "MEMBER".into(), "COLLABORATOR".into()],
            allowed_bots: Vec::new(),
            opt_in_label: DEFAULT_OPT_IN_LABEL.into(),
            max_runs_per_hour: DEFAULT_MAX_RUNS_PER_HOUR,
        }
    }
}

/// When a validated change may be written without a human.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct AutofixPolicy {
    pub enabled: bool,
    /// Minimum model confidence, in `[0, 1]`.
    pub min_confidence: f64,
    /// Risk classes that may be written; `high-impact` is refused at parse
    /// time and always ends at `needs-human`.
    pub allowed_change_risks: Vec<ChangeRisk>,
    /// Writes need a runner that reports `isolated: true`.
    pub require_isolated: bool,
    /// A change may create files the validated finding cites but the
    /// leased commit lacks. Off by default: scope is earned by evidence,
    /// and a new file has none.
    pub allow_new_files: bool,
}

impl Default for AutofixPolicy {
    fn default() -> Self {
        Self {
            enabled: false,
            min_confidence: 0.85,
            allowed_change_risks: vec![ChangeRisk::Mechanical],
            require_isolated: true,
            allow_new_files: false,
        }
    }
}

/// How a claim is checked against the repository.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ValidationPolicy {
    /// Below this confidence a supported claim is `inconclusive`.
    pub min_confidence: f64,
    /// At least one non-blank evidence entry.
    pub require_evidence: bool,
    /// At least one cited file exists in the checkout.
    pub require_known_files: bool,
    /// Quoted evidence must appear in a cited file.
    pub verify_quoted_evidence: bool,
    /// With `verify_quoted_evidence`: `all` (the default) checks every
    /// quote, an evidence entry without backticks being one; `any` (the
    /// reference's rule) reads backtick spans only and needs one of at
    /// least 8 characters in a cited file. See `docs/trust.md`. Left out of
    /// a record at its default, like `checkRun`.
    #[serde(skip_serializing_if = "is_default_quote_rule")]
    pub quotes: QuoteRule,
}

fn is_default_quote_rule(rule: &QuoteRule) -> bool {
    *rule == QuoteRule::default()
}

impl Default for ValidationPolicy {
    fn default() -> Self {
        Self {
            min_confidence: 0.6,
            require_evidence: true,
            require_known_files: true,
            verify_quoted_evidence: true,
            quotes: QuoteRule::default(),
        }
    }
}

/// Bounds on one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct AgentLimits {
    /// Execute/verify attempts, the first included (>= 1).
    pub max_attempts: u32,
    /// Wall-clock budget of the whole run, in milliseconds (>= 1).
    pub timeout_ms: u64,
    /// Most files one write may change (>= 1).
    pub max_changed_files: u32,
}

impl Default for AgentLimits {
    fn default() -> Self {
        Self { max_attempts: 3, timeout_ms: 1_800_000, max_changed_files: 10 }
    }
}

/// What commands in the sandbox may reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct Permissions {
    pub network: NetworkPolicy,
}

impl Default for Permissions {
    fn default() -> Self {
        Self { network: NetworkPolicy::Restricted }
    }
}

/// Execution-boundary settings a repository may set. The reference's local
/// container-runner fields are accepted for compatibility: `isolation:
/// container` means writes need an isolated sandbox; the others have no
/// edge meaning and become [`Policy::warnings`] (see `reference.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RunnerPolicy {
    /// Ceiling on captured output per command, in bytes (>= 1).
    pub max_output_bytes: u64,
    /// The reference's `local` or `container`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<RunnerIsolation>,
    /// The reference's `docker` or `podman` (no edge meaning).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<ContainerEngine>,
    /// The reference's container image (no edge meaning).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The reference's mount point of the checkout (no edge meaning).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// The reference's container CPU limit, verbatim (no edge meaning).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(deserialize_with = "de_oracle::verbatim"))]
    pub cpus: Option<String>,
    /// The reference's container memory limit, verbatim (no edge meaning).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(deserialize_with = "de_oracle::verbatim"))]
    pub memory: Option<String>,
    /// The reference's pre-provisioned container network (no edge meaning).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
}

impl Default for RunnerPolicy {
    fn default() -> Self {
        Self {
            max_output_bytes: 200_000,
            isolation: None,
            engine: None,
            image: None,
            workdir: None,
            cpus: None,
            memory: None,
            network: None,
        }
    }
}

#[cfg(test)]
mod tests;
