//! What a forge's commit status says for a run: the state and the
//! description every adapter writes under the context [`CHECK_RUN_NAME`]
//! (GitHub's check run carries the same name).

use agent_zero_evidence::CheckConclusion;

/// The check run's name, as the reference app calls it.
pub const CHECK_RUN_NAME: &str = "Agent Zero";

/// What a check run says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckRunStatus {
    /// `in_progress`: the task is still moving.
    InProgress,
    /// `completed` with this conclusion (see [`agent_zero_evidence::outcome`]).
    Completed(CheckConclusion),
}

/// Most characters a commit status's `description` carries (GitHub's limit,
/// the lowest of the forges').
const STATUS_DESCRIPTION_CHARS: usize = 140;

/// The commit status a forge's statuses API takes for `status`: `pending`,
/// `success` or `failure`: a status never passes what a check run would not
/// (an action-required run stays `pending`; an advisory one passes, and
/// its description says so).
pub fn status_state(status: CheckRunStatus) -> &'static str {
    match status {
        CheckRunStatus::InProgress | CheckRunStatus::Completed(CheckConclusion::ActionRequired) => "pending",
        CheckRunStatus::Completed(CheckConclusion::Success | CheckConclusion::Neutral) => "success",
        CheckRunStatus::Completed(CheckConclusion::Failure) => "failure",
    }
}

/// `title` as a status's description: the advisory outcome named, at most
/// [`STATUS_DESCRIPTION_CHARS`] characters (cut with an ellipsis).
pub fn status_description(status: CheckRunStatus, title: &str) -> String {
    let text = match status {
        CheckRunStatus::Completed(CheckConclusion::Neutral) => format!("Advisory: {title}"),
        CheckRunStatus::Completed(CheckConclusion::ActionRequired) => format!("Needs a person: {title}"),
        _ => title.to_owned(),
    };
    if text.chars().count() <= STATUS_DESCRIPTION_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(STATUS_DESCRIPTION_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_never_passes_what_a_check_run_would_not() {
        use CheckConclusion as C;
        let cases = [
            (CheckRunStatus::InProgress, "pending"),
            (CheckRunStatus::Completed(C::Success), "success"),
            (CheckRunStatus::Completed(C::Neutral), "success"),
            (CheckRunStatus::Completed(C::Failure), "failure"),
            (CheckRunStatus::Completed(C::ActionRequired), "pending"),
        ];
        for (status, state) in cases {
            assert_eq!(status_state(status), state, "{status:?}");
        }
        // The advisory outcome is named, so a green status says what it is.
        let advisory = status_description(CheckRunStatus::Completed(C::Neutral), "1 finding confirmed");
        assert_eq!(advisory, "Advisory: 1 finding confirmed");
    }

    #[test]
    fn a_long_description_is_cut_to_what_github_takes() {
        let long = "é".repeat(200);
        let cut = status_description(CheckRunStatus::Completed(CheckConclusion::Success), &long);
        assert_eq!(cut.chars().count(), STATUS_DESCRIPTION_CHARS);
        assert!(cut.ends_with('…'));
        assert_eq!(status_description(CheckRunStatus::InProgress, "short"), "short");
    }
}
