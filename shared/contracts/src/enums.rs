//! Closed vocabularies. Each serialises as the kebab-case string the
//! reference uses; parsing an unknown value is an error, not a default.

use serde::{Deserialize, Serialize};

macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The wire name of this value.
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }

            /// Parses a wire name; `None` for anything else.
            pub fn parse(text: &str) -> Option<Self> {
                match text { $($text => Some(Self::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// How much authority a run has over the target checkout.
    RunMode {
        /// Inspect and report; never write.
        Observe = "observe",
        /// Report with proposed changes; never write.
        Suggest = "suggest",
        /// May write a verified change when policy allows.
        Fix = "fix",
        /// Like `fix`, for proactive work.
        Autonomous = "autonomous",
    }
}

impl RunMode {
    /// Whether this mode may ever write to a checkout.
    pub const fn may_write(self) -> bool {
        matches!(self, Self::Fix | Self::Autonomous)
    }
}

vocabulary! {
    /// What asked for the run.
    Trigger {
        /// Review feedback (comments, review bodies) to validate.
        Feedback = "feedback",
        /// A proactive review of a pull request's diff.
        Proactive = "proactive",
        /// An issue to turn into a verified pull request.
        Issue = "issue",
    }
}

vocabulary! {
    /// Reported impact of a finding.
    Severity { Critical = "critical", High = "high", Medium = "medium", Low = "low" }
}

vocabulary! {
    /// How risky a proposed change is. `high-impact` never writes without a human.
    ChangeRisk {
        /// Formatting, typos, obvious one-line fixes.
        Mechanical = "mechanical",
        /// Changes behaviour in a contained way.
        Behavioral = "behavioral",
        /// Security, data, public API or wide changes.
        HighImpact = "high-impact",
    }
}

vocabulary! {
    /// Outcome of validating a claim against the repository. Never decided
    /// by the reviewer's or the model's assertion.
    Verdict {
        /// Supported by repository evidence.
        Accepted = "accepted",
        /// Contradicted or unsupported.
        Rejected = "rejected",
        /// The evidence was not enough to decide.
        Inconclusive = "inconclusive",
    }
}

vocabulary! {
    /// Egress policy for commands run in the sandbox.
    NetworkPolicy { None = "none", Restricted = "restricted", Full = "full" }
}

vocabulary! {
    /// How a claim's quoted evidence must appear in the files it cites
    /// (`validation.quotes`).
    #[derive(Default)]
    QuoteRule {
        /// Every quote must appear: a paraphrase offered as evidence is not
        /// evidence. The default.
        #[default]
        All = "all",
        /// One quote of at least 8 characters must appear (the reference's
        /// rule); the others are reported, not held against the claim.
        Any = "any",
    }
}

vocabulary! {
    /// Where one piece of untrusted feedback came from.
    FeedbackKind { ReviewComment = "review-comment", ReviewBody = "review-body", Manual = "manual" }
}

vocabulary! {
    /// Every state of the discover-to-review lifecycle, terminal states included.
    TaskState {
        Queued = "queued",
        Discovering = "discovering",
        Understanding = "understanding",
        Validating = "validating",
        Planning = "planning",
        Executing = "executing",
        Verifying = "verifying",
        Reviewing = "reviewing",
        Completed = "completed",
        NeedsHuman = "needs-human",
        Failed = "failed",
        /// A delivery the repository's policy does not act on (never ran).
        Ignored = "ignored",
    }
}

impl TaskState {
    /// Whether a task in this state is finished (`needs-human` waits for an
    /// approval but no tick moves it on its own).
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::NeedsHuman | Self::Failed | Self::Ignored)
    }

    /// The terminal state this is, if any.
    pub const fn terminal(self) -> Option<TerminalState> {
        match self {
            Self::Completed => Some(TerminalState::Completed),
            Self::NeedsHuman => Some(TerminalState::NeedsHuman),
            Self::Failed => Some(TerminalState::Failed),
            Self::Ignored => Some(TerminalState::Ignored),
            _ => None,
        }
    }
}

vocabulary! {
    /// The states a run can finish in.
    TerminalState {
        Completed = "completed",
        NeedsHuman = "needs-human",
        Failed = "failed",
        /// The policy gate declined the delivery before anything ran.
        Ignored = "ignored",
    }
}

impl From<TerminalState> for TaskState {
    fn from(state: TerminalState) -> Self {
        match state {
            TerminalState::Completed => Self::Completed,
            TerminalState::NeedsHuman => Self::NeedsHuman,
            TerminalState::Failed => Self::Failed,
            TerminalState::Ignored => Self::Ignored,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip() {
        for state in TaskState::ALL {
            let json = serde_json::to_string(state).unwrap();
            assert_eq!(json, format!("\"{}\"", state.as_str()));
            assert_eq!(serde_json::from_str::<TaskState>(&json).unwrap(), *state);
            assert_eq!(TaskState::parse(state.as_str()), Some(*state));
        }
        assert_eq!(serde_json::to_string(&ChangeRisk::HighImpact).unwrap(), "\"high-impact\"");
        assert!(serde_json::from_str::<RunMode>("\"root\"").is_err());
        assert_eq!(RunMode::parse("FIX"), None);
    }

    #[test]
    fn terminal_states() {
        let terminal: Vec<_> = TaskState::ALL.iter().filter(|s| s.is_terminal()).collect();
        assert_eq!(terminal, [&TaskState::Completed, &TaskState::NeedsHuman, &TaskState::Failed, &TaskState::Ignored]);
        for t in TerminalState::ALL {
            assert_eq!(TaskState::from(*t).terminal(), Some(*t));
        }
        assert!(RunMode::Fix.may_write() && !RunMode::Suggest.may_write());
    }
}
