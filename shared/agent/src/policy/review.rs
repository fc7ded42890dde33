//! How much of a pull request's diff the model is shown
//! (`review.diffBudgetBytes`, `review.fileBudgetBytes`): the reference's
//! 100,000 bytes by default, bounded above by what the model's context and
//! the smallest store's value hold.

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
}

impl Default for ReviewPolicy {
    fn default() -> Self {
        Self { diff_budget_bytes: DEFAULT_DIFF_BUDGET_BYTES, file_budget_bytes: DEFAULT_DIFF_BUDGET_BYTES }
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
        Ok(())
    }
}
