//! The lifecycle machine: the transition table and the guards on it.
//!
//! ```text
//! queued -> discovering -> understanding -> validating -> planning -> executing
//!        -> verifying -> reviewing -> completed
//!                           verifying -> planning      (repair, while attempts remain)
//! ```
//!
//! The table is the reference's. Runs that need no write end early and on
//! purpose: `validating -> completed` once the verdict is all there is to
//! report (a rejected or inconclusive finding, an observe-mode review), and
//! `planning -> completed` once a plan is recorded but nothing may be
//! executed (suggest mode, a refused write) — but only while no attempt has
//! executed, so a change that failed verification can never end as
//! `completed`. `executing` reaches `completed` only through `verifying`
//! and `reviewing`. `needs-human` is reachable from `validating` onwards;
//! every non-terminal state can reach `failed`; `queued -> ignored` is the
//! policy gate declining a delivery before anything ran. The only ways out of
//! `needs-human` are a human's: [`LifecycleMachine::approve`] (back to
//! `planning`) and [`LifecycleMachine::deny`] (`failed`).

use agent_zero_contracts::{TaskState, TerminalState};

use TaskState::{
    Completed, Discovering, Executing, Failed, Ignored, NeedsHuman, Planning, Queued, Reviewing, Understanding,
    Validating, Verifying,
};

/// What kind of move a defined transition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Edge {
    /// The next stage of the normal flow, or an early `completed`.
    Forward,
    /// `verifying -> planning`: another attempt with the failing output.
    Repair,
    /// Into `needs-human` or `failed` from a running state.
    Stop,
    /// Out of `needs-human`, on a recorded human decision only.
    Human,
}

/// The transition table: the kind of move `from -> to` is, or `None` when
/// the machine does not define it.
pub const fn edge(from: TaskState, to: TaskState) -> Option<Edge> {
    match (from, to) {
        (Queued, Discovering)
        | (Discovering, Understanding)
        | (Understanding, Validating)
        | (Validating, Planning | Completed)
        | (Planning, Executing | Completed)
        | (Executing, Verifying)
        | (Verifying, Reviewing)
        | (Reviewing, Completed) => Some(Edge::Forward),
        (Verifying, Planning) => Some(Edge::Repair),
        // The policy gate, at admission: nothing ran.
        (Queued, Ignored) => Some(Edge::Stop),
        (Validating | Planning | Executing | Verifying | Reviewing, NeedsHuman) => Some(Edge::Stop),
        (Queued | Discovering | Understanding | Validating | Planning | Executing | Verifying | Reviewing, Failed) => {
            Some(Edge::Stop)
        }
        (NeedsHuman, Planning | Failed) => Some(Edge::Human),
        _ => None,
    }
}

/// Whether the table defines `from -> to` (guards aside).
pub const fn can_transition(from: TaskState, to: TaskState) -> bool {
    edge(from, to).is_some()
}

/// Every state the table allows after `from`, in declaration order.
pub fn successors(from: TaskState) -> Vec<TaskState> {
    TaskState::ALL.iter().copied().filter(|to| can_transition(from, *to)).collect()
}

/// A move the machine refused. The task stays where it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransitionError {
    /// The table has no such edge (a bug in the caller, or a corrupt log).
    #[error("invalid lifecycle transition: {from} -> {to}")]
    Undefined { from: TaskState, to: TaskState },
    /// Another execute/repair attempt was asked for with none left.
    #[error("no attempt left: {attempts} of {max_attempts} used ({from} -> {to})")]
    AttemptsExhausted { from: TaskState, to: TaskState, attempts: u32, max_attempts: u32 },
    /// `planning -> completed` after a change was executed: it did not pass
    /// verification, so the run cannot call itself complete.
    #[error("planning -> completed after {attempts} executed attempt(s) would skip verification")]
    UnverifiedCompletion { attempts: u32 },
    /// Leaving `needs-human` through [`LifecycleMachine::to`]; only
    /// `approve` or `deny` (a recorded human decision) may.
    #[error("needs-human -> {to} needs a human decision (approve or deny)")]
    HumanDecisionRequired { to: TaskState },
    /// `approve`/`deny` while the task is not waiting for a human.
    #[error("the task is {state}, not waiting for a human decision")]
    NotAwaitingHuman { state: TaskState },
}

/// The current state of one task and its attempt count, refusing every
/// move the table or its guards do not allow. Rebuilt on each tick by
/// replaying the task log's transitions through [`LifecycleMachine::to`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleMachine {
    state: TaskState,
    attempts: u32,
    max_attempts: u32,
}

impl LifecycleMachine {
    /// A new task in `queued`, allowed `max_attempts` execute attempts
    /// (`agent.maxAttempts`; 0 is treated as 1).
    pub fn new(max_attempts: u32) -> Self {
        Self { state: Queued, attempts: 0, max_attempts: max_attempts.max(1) }
    }

    /// The state the task is in.
    pub fn state(&self) -> TaskState {
        self.state
    }

    /// How many times the task entered `executing`.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The attempt budget.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Whether another execute attempt is allowed.
    pub fn has_attempt_left(&self) -> bool {
        self.attempts < self.max_attempts
    }

    /// Whether the task is in a terminal state.
    pub fn is_terminal(&self) -> bool {
        self.state.is_terminal()
    }

    /// Moves to `next` if the table and the guards allow it. Entering
    /// `executing` starts a new attempt.
    pub fn to(&mut self, next: TaskState) -> Result<TaskState, TransitionError> {
        let from = self.state;
        match edge(from, next) {
            None => return Err(TransitionError::Undefined { from, to: next }),
            Some(Edge::Human) => return Err(TransitionError::HumanDecisionRequired { to: next }),
            Some(Edge::Repair) if !self.has_attempt_left() => {
                return Err(self.exhausted(next));
            }
            Some(_) => {}
        }
        if from == Planning && next == Executing && !self.has_attempt_left() {
            return Err(self.exhausted(next));
        }
        if from == Planning && next == Completed && self.attempts > 0 {
            return Err(TransitionError::UnverifiedCompletion { attempts: self.attempts });
        }
        if next == Executing {
            self.attempts += 1;
        }
        self.state = next;
        Ok(next)
    }

    /// Ends the task in `terminal` from wherever it is; a task already in a
    /// terminal state stays there (the first ending wins, as on redelivery).
    pub fn finish(&mut self, terminal: TerminalState) -> Result<TerminalState, TransitionError> {
        if let Some(current) = self.state.terminal() {
            return Ok(current);
        }
        self.to(terminal.into())?;
        Ok(terminal)
    }

    /// Fails the task from any non-terminal state (always defined).
    pub fn fail(&mut self) -> TaskState {
        if !self.state.is_terminal() {
            self.state = Failed;
        }
        self.state
    }

    /// A human approved a `needs-human` task: back to `planning`. A task
    /// that stopped with every attempt used (its repairs used up) is granted
    /// one more: the person asked for another try, and each approval buys
    /// exactly one.
    pub fn approve(&mut self) -> Result<TaskState, TransitionError> {
        let next = self.human(Planning)?;
        if !self.has_attempt_left() {
            self.max_attempts = self.attempts + 1;
        }
        Ok(next)
    }

    /// A human denied a `needs-human` task: `failed`.
    pub fn deny(&mut self) -> Result<TaskState, TransitionError> {
        self.human(Failed)
    }

    fn human(&mut self, next: TaskState) -> Result<TaskState, TransitionError> {
        if self.state != NeedsHuman {
            return Err(TransitionError::NotAwaitingHuman { state: self.state });
        }
        self.state = next;
        Ok(next)
    }

    fn exhausted(&self, to: TaskState) -> TransitionError {
        TransitionError::AttemptsExhausted {
            from: self.state,
            to,
            attempts: self.attempts,
            max_attempts: self.max_attempts,
        }
    }
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
