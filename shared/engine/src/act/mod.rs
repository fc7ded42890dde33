//! Act: perform one step through exactly one port, and say which facts it
//! produced. Nothing here writes to KV; the tick commits what this returns.
//!
//! One file per step. Each takes the data its [`Step`] carries, which
//! [`crate::next_step`] checked is there: nothing here assumes what the log
//! holds.

use agent_zero_contracts::{RunMode, TaskState, TerminalState, Trigger};

use crate::conclude::conclude;
use crate::fact::{Entry, Fact, ModelOutcome, Stimulus};
use crate::ports::{Decider, Forge, Workspace, WorkspaceError};
use crate::resident::{FoldError, LEASE_REFUSED, Resident};
use crate::step::{Limits, Step, backoff, remaining_ms};
use crate::store::TickStats;

mod admit;
mod discover;
mod execute;
mod lease;
mod plan;
mod publish;
mod release;
mod review;
mod understand;
mod validate;
mod verify;
mod witness;
mod witness_fix;
mod witness_run;

/// What one step produced.
#[derive(Debug)]
pub(crate) struct Acted {
    pub(crate) facts: Vec<Fact>,
    pub(crate) delay_ms: u64,
    /// Nothing happened that the log must hold (running checks polled):
    /// commit nothing, and run this seq's tick again after `delay_ms`.
    pub(crate) again: bool,
    /// Why a queued task waits, when it does (the run bound it is over),
    /// for the tick's report.
    pub(crate) waiting: Option<String>,
}

impl Acted {
    /// `facts`, with the next tick due at once.
    fn now(facts: Vec<Fact>) -> Result<Self, FoldError> {
        Ok(Self { facts, delay_ms: 0, again: false, waiting: None })
    }

    /// `facts`, with the next tick due after `delay_ms`.
    fn after(facts: Vec<Fact>, delay_ms: u64) -> Result<Self, FoldError> {
        Ok(Self { facts, delay_ms, again: false, waiting: None })
    }

    /// Nothing to commit: the same seq's tick runs again after `delay_ms`.
    fn again(delay_ms: u64) -> Result<Self, FoldError> {
        Ok(Self { facts: Vec::new(), delay_ms, again: true, waiting: None })
    }

    /// A queued task over a run bound: nothing to commit, the same seq's
    /// tick runs again after `delay_ms`; `reason` names the bound.
    fn waiting(delay_ms: u64, reason: String) -> Result<Self, FoldError> {
        Ok(Self { facts: Vec::new(), delay_ms, again: true, waiting: Some(reason) })
    }
}

/// The ports one tick may use.
#[derive(Debug, Clone, Copy)]
pub struct Ports<'p, D, W, P> {
    pub decider: &'p D,
    pub workspace: &'p W,
    pub publisher: &'p P,
}

/// Everything `act` needs to know about the tick.
pub(crate) struct StepContext<'a> {
    pub(crate) resident: &'a Resident,
    pub(crate) seq: u64,
    pub(crate) now_ms: u64,
    pub(crate) limits: &'a Limits,
    pub(crate) key: String,
}

/// A tick of an admitted run: the context and the run's stimulus.
struct Run<'a> {
    cx: &'a StepContext<'a>,
    r: &'a Resident,
    stimulus: &'a Stimulus,
}

pub(crate) async fn act<D: Decider, W: Workspace, P: Forge>(
    step: &Step<'_>,
    cx: &StepContext<'_>,
    ports: &Ports<'_, D, W, P>,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let Some(stimulus) = cx.resident.stimulus.as_deref() else {
        return admit::awaiting(step, cx, ports.publisher, stats).await;
    };
    let run = Run { cx, r: cx.resident, stimulus };
    match step {
        Step::Lease => lease::lease(&run, ports.workspace, stats).await,
        Step::Discover { lease } => discover::discover(&run, lease, ports, stats).await,
        Step::Understand => understand::understand(&run, ports.decider, stats).await,
        Step::Validate { lease, claim } => validate::validate(&run, lease, claim, ports.workspace, stats).await,
        Step::Witness { lease } if stimulus.trigger == Trigger::Issue => {
            let side =
                if run.r.state == TaskState::Reviewing { witness_fix::Side::After } else { witness_fix::Side::Before };
            witness_fix::witness_fix(&run, lease, side, ports.workspace, stats).await
        }
        Step::Witness { lease } => witness::witness(&run, lease, ports.workspace, stats).await,
        Step::Plan { replan, decision, finding } => {
            plan::plan(&run, plan::Planned { replan: *replan, decision, finding }, ports.decider, stats).await
        }
        Step::Execute { lease, changes, reapply } => {
            execute::execute(&run, lease, changes, *reapply, ports.workspace, stats).await
        }
        Step::Verify { lease, job } => verify::verify(&run, lease, *job, ports.workspace, stats).await,
        Step::Review { lease } => review::review(&run, lease, ports.workspace, stats).await,
        Step::Fail { reason } => run.finish(Vec::new(), TerminalState::Failed, reason, Some(reason.clone())),
        Step::Release { lease } => release::release(&run, lease, ports.workspace, stats).await,
        Step::Publish { result, evidence } => publish::publish(&run, result, evidence, ports.publisher, stats).await,
        // An admission of an admitted run has nothing left to do.
        Step::Admit { .. } | Step::Quiet(_) => Acted::now(Vec::new()),
    }
}

impl Run<'_> {
    /// What is left of the run's `agent.timeoutMs`.
    fn remaining_ms(&self) -> u64 {
        remaining_ms(self.r, self.cx.now_ms)
    }

    /// What each check of the current attempt may take: what is left of
    /// the run shared evenly with the attempts `agent.maxAttempts` still
    /// allows after it, so a hung check in the first attempt leaves each
    /// repair its share instead of taking the whole run.
    fn check_budget_ms(&self) -> u64 {
        let max_attempts = self.stimulus.policy.agent.max_attempts;
        let attempts_left = max_attempts.saturating_sub(self.r.attempts()).saturating_add(1);
        self.remaining_ms() / u64::from(attempts_left.max(1))
    }

    /// A sandbox error of `operation`, retried after a backoff.
    fn sandbox_failed(&self, operation: &str, error: WorkspaceError) -> Result<Acted, FoldError> {
        let sandbox = &self.r.sandbox;
        let (operation, tries) = match error {
            WorkspaceError::LeaseGone(_) => ("lease-gone", sandbox.errors + 1),
            // A full pool is not a failure: wait for a slot (agent.timeoutMs bounds it).
            WorkspaceError::Refused(_) | WorkspaceError::Full(_) if sandbox.lease.is_none() => {
                (LEASE_REFUSED, sandbox.lease_waits + 1)
            }
            _ => (operation, sandbox.errors + 1),
        };
        let fact = Fact::SandboxError { operation: operation.into(), reason: error.to_string() };
        Acted::after(vec![fact], backoff(self.cx.limits, tries))
    }

    /// The move from the current state to `to`.
    fn transition(&self, to: TaskState, message: &str, attempt: Option<u32>) -> Fact {
        transition(self.r, to, message, attempt)
    }

    /// The delay before retrying a model call that produced `outcome`.
    fn model_delay(&self, outcome: &ModelOutcome) -> u64 {
        match outcome {
            ModelOutcome::Unavailable { .. } => backoff(self.cx.limits, self.r.attempt.model_failures + 1),
            _ => 0,
        }
    }

    /// Ends the run: the transition, the failure reason, and the conclusion
    /// built from the state those facts produce.
    fn finish(
        &self,
        mut facts: Vec<Fact>,
        to: TerminalState,
        summary: &str,
        failure: Option<String>,
    ) -> Result<Acted, FoldError> {
        let cx = self.cx;
        // The facts before the ending carry no transition: the run ends from where it is.
        facts.push(self.transition(to.into(), summary, None));
        if let Some(reason) = failure {
            facts.push(Fact::Failure { reason });
        }
        let mut ended = self.r.clone();
        ended.apply(&Entry { seq: cx.seq, at_ms: cx.now_ms, facts: facts.clone() })?;
        let (result, evidence) = conclude(&ended, self.stimulus, to, summary);
        facts.push(Fact::Concluded { result: Box::new(result), evidence: Box::new(evidence) });
        Acted::now(facts)
    }

    /// Whether this is a review in `suggest` mode.
    fn suggests(&self) -> bool {
        suggests(self.stimulus)
    }
}

fn transition(r: &Resident, to: TaskState, message: &str, attempt: Option<u32>) -> Fact {
    Fact::Transition { from: r.state, to, message: message.to_owned(), attempt }
}

/// A review in `suggest` mode proves its change in the sandbox, as a fix
/// would be, under the same chain; it is posted as a suggestion only, never
/// pushed (publication opens pull requests for issue runs alone).
fn suggests(stimulus: &Stimulus) -> bool {
    stimulus.mode == RunMode::Suggest && stimulus.trigger == Trigger::Proactive
}
