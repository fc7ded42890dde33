//! How much of a pull request's diff the model is shown
//! (`review.diffBudgetBytes`, `review.fileBudgetBytes`): the reference's
//! 100,000 bytes by default, bounded above by what the model's context and
//! the smallest store's value hold. And how a bug claim's witness is run
//! (`review.witness`) and whether a claim needs one to be posted on a line
//! (`review.requireWitness`): `docs/witness.md`.

use serde::Serialize;

/// The default of [`ReviewPolicy::diff_budget_bytes`] and
/// [`ReviewPolicy::file_budget_bytes`]: the reference's 100,000 bytes of
/// diff, with no per-file share below it.
pub const DEFAULT_DIFF_BUDGET_BYTES: u32 = 100_000;

/// The least either budget may be: under it no hunk of an ordinary patch
/// fits, and a review would read nothing.
pub const MIN_DIFF_BUDGET_BYTES: u32 = 1_000;

/// The most either budget may be. At about four bytes a token of code,
/// 200,000 bytes is some 50,000 tokens: with the rest of the prompt (400
/// paths, the feedback) and 16,384 output tokens it stays inside a
/// 128,000-token context window. The diff is also kept in the task's log
/// and checkpoint, each one value of at most 1,000,000 bytes (the smallest
/// store's limit), where JSON escaping may double it.
pub const MAX_DIFF_BUDGET_BYTES: u32 = 200_000;

/// What a pull-request review (and review feedback on a pull request) shows
/// the model of the pull request's diff. What does not fit is listed in the
/// review's coverage ledger, and a review that left anything out never
/// passes its check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ReviewPolicy {
    /// Most bytes of the whole diff shown, file headers included
    /// ([`MIN_DIFF_BUDGET_BYTES`] to [`MAX_DIFF_BUDGET_BYTES`]).
    pub diff_budget_bytes: u32,
    /// Most bytes of one file's patch shown, never more than what is left
    /// of the diff budget (same range).
    pub file_budget_bytes: u32,
    /// How a bug claim's witness runs; no command, no witness is run.
    #[serde(skip_serializing_if = "WitnessPolicy::is_default")]
    pub witness: WitnessPolicy,
    /// Keep a bug claim (a `behavioral` or `high-impact` finding) off the
    /// diff's lines unless its witness reproduced it. Off by default.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub require_witness: bool,
}

impl Default for ReviewPolicy {
    fn default() -> Self {
        Self {
            diff_budget_bytes: DEFAULT_DIFF_BUDGET_BYTES,
            file_budget_bytes: DEFAULT_DIFF_BUDGET_BYTES,
            witness: WitnessPolicy::default(),
            require_witness: false,
        }
    }
}

/// The default of [`WitnessPolicy::timeout_ms`].
pub const DEFAULT_WITNESS_TIMEOUT_MS: u64 = 60_000;
/// The most [`WitnessPolicy::timeout_ms`] may be: a witness is a small test.
pub const MAX_WITNESS_TIMEOUT_MS: u64 = 300_000;

/// How a witness runs (`review.witness`): the repository's command, never
/// the model's, with the witness's path as its last argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct WitnessPolicy {
    /// The argv the witness's path is appended to (`[python3]`,
    /// `[python3, -m, pytest, -q]`); empty: witnesses are not run.
    pub command: Vec<String>,
    /// Bound on one run of the witness (1 to [`MAX_WITNESS_TIMEOUT_MS`]).
    pub timeout_ms: u64,
    /// May a witness replace a file the checkout has? Off: a witness is a
    /// new file only, so it never changes the code it judges.
    pub allow_overwrite: bool,
}

impl Default for WitnessPolicy {
    fn default() -> Self {
        Self { command: Vec::new(), timeout_ms: DEFAULT_WITNESS_TIMEOUT_MS, allow_overwrite: false }
    }
}

impl WitnessPolicy {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Whether witnesses are run at all.
    pub fn enabled(&self) -> bool {
        !self.command.is_empty()
    }
}

impl ReviewPolicy {
    pub(super) fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The range rule of both budgets, naming the field.
    pub(super) fn check(&self) -> Result<(), super::PolicyError> {
        for (field, value) in
            [("review.diffBudgetBytes", self.diff_budget_bytes), ("review.fileBudgetBytes", self.file_budget_bytes)]
        {
            if !(MIN_DIFF_BUDGET_BYTES..=MAX_DIFF_BUDGET_BYTES).contains(&value) {
                return Err(super::PolicyError::invalid(
                    field,
                    format!(
                        "must be between {MIN_DIFF_BUDGET_BYTES} and {MAX_DIFF_BUDGET_BYTES} bytes (the model's \
                         context and the task store's value limit), got {value}"
                    ),
                ));
            }
        }
        let witness = &self.witness;
        if !(1..=MAX_WITNESS_TIMEOUT_MS).contains(&witness.timeout_ms) {
            return Err(super::PolicyError::invalid(
                "review.witness.timeoutMs",
                format!("must be between 1 and {MAX_WITNESS_TIMEOUT_MS} ms, got {}", witness.timeout_ms),
            ));
        }
        if witness.enabled() {
            super::checks::check_argv("review.witness.command", &witness.command)?;
        }
        if self.require_witness && !witness.enabled() {
            return Err(super::PolicyError::invalid(
                "review.requireWitness",
                "needs review.witness.command: without a command no witness can reproduce a claim",
            ));
        }
        Ok(())
    }
}
