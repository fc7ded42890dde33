//! The pure decision core of a run: repository policy (`.agent-zero.yml`),
//! the lifecycle machine, evidence validation, change risk from paths and
//! the write authorisation chain.
//!
//! No I/O of any kind: the policy is parsed from bytes the caller fetched,
//! repository facts (file list, cited file contents) come from the sandbox
//! through the caller, and every decision is a plain value. The tick engine
//! (`agent-zero-engine`) owns the ports and calls in here to decide.

#![forbid(unsafe_code)]

pub mod authorization;
pub mod lifecycle;
pub mod policy;
pub mod risk;
pub mod validation;

pub use authorization::{RefusalCode, WriteDecision, WriteRequest, authorize_write};
pub use lifecycle::{Edge, LifecycleMachine, TransitionError, can_transition, edge, successors};
pub use policy::{
    AgentLimits, AutofixPolicy, CheckCommand, CheckRunPolicy, IssuePolicy, MAX_POLICY_BYTES, Permissions, Policy,
    PolicyError, ProactivePolicy, RunnerPolicy, TriggerPolicy, ValidationPolicy, WitnessPolicy,
};
pub use risk::{
    DocUse, HighImpactKind, PathClass, RiskAssessment, classify_change_risk, classify_change_risk_in, classify_path,
};
pub use validation::{
    Assessment, RejectionReason, RepositoryFacts, assess, evidence_quotes, names_path, quoted_files, validate,
};
