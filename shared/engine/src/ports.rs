//! The narrow ports a tick acts through. The host (or the app) adapts the
//! model client, the runner pool, the forge and the queue to these.
//!
//! Every call that has an external effect carries an idempotency key
//! (`{task_id}:{seq}`): a redelivered tick that does reach the port again
//! asks for the same effect, which the adapter may de-duplicate.

use agent_zero_contracts::{CheckResult, EvidenceBundle, NetworkPolicy, ProposedChange, RunMode, TaskResult};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::fact::{Admission, LeaseRecord, ModelOutcome, ModelPurpose, Received, Stimulus};

/// One model request: a fixed system prompt, the rendered (untrusted)
/// context (the answer's schema is the model layer's one definition, per
/// purpose: `agent_zero_models::SchemaName`), and the model's own previous
/// violation when its last answer was unusable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRequest {
    pub purpose: ModelPurpose,
    pub system: String,
    pub context: String,
    pub previous_violation: Option<String>,
    pub idempotency_key: String,
}

/// The model port.
pub trait Decider {
    /// Asks for one decision. Never fails: every answer is a fact.
    async fn decide(&self, request: &ModelRequest) -> ModelOutcome;
}

/// A credential-free request for a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRequest {
    pub task_id: String,
    pub repository: String,
    pub mode: RunMode,
    pub writable: bool,
    pub network: NetworkPolicy,
    pub lease_ms: u64,
    pub idempotency_key: String,
}

/// The working tree's changes, as the sandbox sees them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    pub changed_files: Vec<String>,
    pub patch: String,
}

/// Why the sandbox could not serve a call.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The pool, or the repository's share of it, holds as many leases as
    /// the deployment runs at once (`AGENT_ZERO_MAX_RUNNING`,
    /// `AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY`): a queued task waits in
    /// `queued` ([`crate::Step::Lease`]); the text names the bound.
    #[error("{0}")]
    Full(String),
    /// The pool refused otherwise (the lease ceiling); worth retrying later.
    #[error("sandbox refused: {0}")]
    Refused(String),
    /// The provider failed or could not be reached.
    #[error("sandbox failed: {0}")]
    Failed(String),
    /// The lease is gone (expired or swept).
    #[error("sandbox lease `{0}` is gone")]
    LeaseGone(String),
}

/// Where a background job of checks stands ([`Workspace::poll_checks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChecksPoll {
    /// Still running: poll again later.
    Running,
    /// Every command ended: one result per command, in order.
    Done(Vec<CheckResult>),
    /// The sandbox has no live job of that name and no results for it (its
    /// process was killed, the sandbox restarted): why.
    Lost(String),
}

/// The sandbox port: everything that touches a checkout.
pub trait Workspace {
    /// Leases a sandbox with the repository checked out.
    async fn lease(&self, request: &LeaseRequest) -> Result<LeaseRecord, WorkspaceError>;
    /// Every file path in the checkout (repository-relative).
    async fn list_files(&self, lease: &LeaseRecord) -> Result<Vec<String>, WorkspaceError>;
    /// Contents of `paths`; `None` for a file that does not exist.
    async fn read_files(
        &self,
        lease: &LeaseRecord,
        paths: &[String],
    ) -> Result<Vec<(String, Option<String>)>, WorkspaceError>;
    /// The Git modes of `paths` as the checkout holds them (`100644`,
    /// `100755`, `120000` for a symlink); `None` for a path that is absent.
    async fn file_modes(
        &self,
        lease: &LeaseRecord,
        paths: &[String],
    ) -> Result<Vec<(String, Option<String>)>, WorkspaceError>;
    /// Writes full-content replacements.
    async fn write_files(
        &self,
        lease: &LeaseRecord,
        changes: &[ProposedChange],
        idempotency_key: &str,
    ) -> Result<(), WorkspaceError>;
    /// Runs each argv in order, capturing its result.
    async fn run(
        &self,
        lease: &LeaseRecord,
        commands: &[Vec<String>],
        timeout_ms: u64,
        idempotency_key: &str,
    ) -> Result<Vec<CheckResult>, WorkspaceError>;
    /// Starts `commands` in order as background job `job`, each bounded by
    /// `timeout_ms`, and returns once it is started; starting a job that
    /// exists already starts nothing. For hosts whose invocations are
    /// shorter than a check run ([`crate::Limits::checks_in_background`]).
    async fn start_checks(
        &self,
        lease: &LeaseRecord,
        commands: &[Vec<String>],
        timeout_ms: u64,
        job: &str,
    ) -> Result<(), WorkspaceError> {
        let _ = (lease, commands, timeout_ms, job);
        Err(WorkspaceError::Failed("this sandbox runs no background checks".into()))
    }
    /// Where background job `job` of `commands` stands.
    async fn poll_checks(
        &self,
        lease: &LeaseRecord,
        commands: &[Vec<String>],
        timeout_ms: u64,
        job: &str,
    ) -> Result<ChecksPoll, WorkspaceError> {
        let _ = (lease, commands, timeout_ms, job);
        Err(WorkspaceError::Failed("this sandbox runs no background checks".into()))
    }
    /// The checkout's changes (working tree, or base..head of a pull request).
    async fn diff(&self, lease: &LeaseRecord) -> Result<Diff, WorkspaceError>;
    /// Releases the lease; releasing twice is not an error.
    async fn release(&self, lease: &LeaseRecord) -> Result<(), WorkspaceError>;
}

/// What is published for a concluded task.
#[derive(Debug, Clone, Copy)]
pub struct Publication<'a> {
    pub stimulus: &'a Stimulus,
    pub result: &'a TaskResult,
    pub evidence: &'a EvidenceBundle,
    /// Full contents of the files the run wrote (the applied changes of its
    /// last attempt), for a forge that publishes them as a commit.
    pub changes: &'a [ProposedChange],
    pub idempotency_key: &'a str,
}

/// One file a pull request changes, as the forge lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: String,
    /// `added`, `removed`, `modified`, `renamed`, `copied`, `changed`, `unchanged`.
    pub status: String,
    /// The unified-diff hunks (`@@ ... @@` onwards); `None` when the forge
    /// sends none (a binary file, or a diff too large for it).
    pub patch: Option<String>,
    pub additions: u64,
    pub deletions: u64,
}

/// A pull request's changed files, and whether that is all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedFiles {
    pub files: Vec<ChangedFile>,
    /// Why the list stops early (page limit, the forge's own cap), if it does.
    pub cut: Option<String>,
    /// The head an earlier review read, when `files` are only those changed
    /// since it (the others are in `unchanged`).
    pub since: Option<String>,
    /// Changed files of the pull request that did not change since `since`.
    pub unchanged: Vec<String>,
}

/// Why the forge could not list a pull request's changed files.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ForgeError {
    /// It never will for this task (no credentials, not a forge
    /// repository, no pull request): the review records why.
    #[error("{0}")]
    Unavailable(String),
    /// It failed this time (transport, 5xx, rate limit): retried.
    #[error("{0}")]
    Failed(String),
}

/// Why the policy gate could not decide about a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AdmitError {
    /// The forge could not be reached or answered 5xx: retried with backoff.
    #[error("{0}")]
    Unavailable(String),
    /// The delivery can never be admitted (its policy does not parse, the
    /// recorded seed is not one this host wrote): the task fails with this.
    #[error("{0}")]
    Invalid(String),
}

/// The forge port: the policy gate of a received delivery, and the
/// reports. Publications update in place (a comment found by its marker),
/// so publishing twice does not post twice.
pub trait Forge {
    /// Reports the outcome; `Ok` carries a reference (URL, comment id).
    async fn publish(&self, publication: Publication<'_>) -> Result<String, String>;

    /// Reads the repository's policy for `received` (from its default
    /// branch) and decides whether it becomes a run. Reads only: a repeat
    /// after a crash has no effect of its own.
    async fn admit(&self, received: &Received) -> Result<Admission, AdmitError> {
        let _ = received;
        Err(AdmitError::Invalid("this host admits no webhook deliveries".into()))
    }

    /// The files a pull request changes (`base...head`) with their
    /// patches, as the forge lists them. Reads only.
    async fn changed_files(&self, stimulus: &Stimulus) -> Result<ChangedFiles, ForgeError> {
        let _ = stimulus;
        Err(ForgeError::Unavailable("this host reads no pull request's changed files".into()))
    }
}

/// A tick message: which task, and which log seq this tick will write.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tick {
    pub task_id: String,
    pub expected_seq: u64,
    /// How long the step this tick is expected to take may run, as the
    /// tick that enqueued it computed: with it, a store with transactions
    /// takes the seq's claim in the tick's first request
    /// ([`crate::claim_ahead`]). Absent from a sweep's re-drive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_ms: Option<u64>,
}

impl Tick {
    /// The tick that writes `expected_seq` of `task_id`, with no claim ahead.
    pub fn new(task_id: impl Into<String>, expected_seq: u64) -> Self {
        Self { task_id: task_id.into(), expected_seq, claim_ms: None }
    }
}

/// Why a tick could not be enqueued.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The queue binding or self-call failed.
    #[error("enqueue failed: {0}")]
    Failed(String),
}

/// The work queue.
pub trait Queue {
    /// Delivers `tick` after `delay_ms`, at least once.
    async fn enqueue(&self, tick: &Tick, delay_ms: u64) -> Result<(), QueueError>;
}
