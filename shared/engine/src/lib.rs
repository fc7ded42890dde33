//! The tick engine of Agent Zero Edge: a task is an append-only log of
//! facts in KV, and a tick is a fold of that log plus one bounded step.
//!
//! A tick **syncs** (folds the log from the checkpoint's cursor into the
//! [`Resident`] model: the run's input and lifecycle, and one part per
//! concern: [`Arrival`], [`Sandbox`], [`Discovery`], [`Attempt`],
//! [`Approval`], [`Conclusion`]), **decides** ([`next_step`]: the one step
//! the state needs, carrying the data it acts on, or [`Step::Fail`] naming
//! what an inconsistent log lacks), **acts** (one module per step; exactly
//! one bounded call through a port: a model call, one sandbox batch, one
//! publication), **commits** (one write-once KV
//! entry holding the tick's facts; a present key means another delivery
//! won and nothing is repeated), and **yields** ([`TickOutcome`]). A cold
//! start is the same fold from entry 0: deleting `task/{id}/meta` loses
//! nothing.
//!
//! I/O boundary: KV through [`agent_zero_ports::KeyValue`], and the narrow
//! async ports of [`ports`] (model, sandbox, forge, queue) that the host
//! adapts. Time comes in as `now_ms`; no clock, network or RNG of its own.
//! The decisions (policy, lifecycle, validation, write authorisation) are
//! `agent-zero-agent`'s.

#![forbid(unsafe_code)]
#![allow(async_fn_in_trait)]

mod act;
mod conclude;
mod discover;
mod fact;
mod fact_de;
pub mod log;
pub mod ports;
pub mod receipt;
mod render;
mod resident;
mod review;
mod shown;
mod step;
mod store;
mod sweep;
mod task;
mod tick;
mod witness;

pub use act::Ports;
pub use conclude::{ApprovalEffect, awaiting, conclude};
pub use discover::default_checks;
pub use fact::{
    Admission, ApprovalDecision, Entry, Fact, LeaseRecord, LeasedSandbox, ModelOutcome, ModelPurpose,
    PublicationOutcome, Received, Stimulus, TaskInput, WriteOutcome,
};
pub use ports::{
    AdmitError, ChangedFile, ChangedFiles, ChecksPoll, Decider, Diff, Forge, ForgeError, LeaseRequest, ModelRequest,
    Publication, Queue, QueueError, Tick, Workspace, WorkspaceError,
};
pub use resident::{
    Approval, Arrival, Attempt, ChecksJob, Conclusion, Discovery, FoldError, Origin, Resident, Sandbox, fold,
};
pub use shown::decision_digest;
pub use step::{Limits, Step, next_step};
pub use store::{
    ACTIVE_PREFIX, Claim, ClaimAhead, MAX_CLAIM_AHEAD_MS, MAX_TASK_ID_BYTES, MAX_VALUE_BYTES, Meta, PENDING_PREFIX,
    StoreError, TickStats, active_key, claim_key, is_valid_task_id, log_key, meta_key, pending_key,
};
pub use sweep::{SweepOptions, TickSweep, sweep};
pub use task::{Start, TaskError, approve, create, load, receive, start, stimulus};
pub use tick::{Engine, MAX_FOLD_PER_TICK, TickError, TickHooks, TickOutcome, TickReport, Views};
