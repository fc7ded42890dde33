//! A deterministic harness: scripted model and sandbox, in-memory KV and
//! queue, a manual clock. `drive()` steps a task until the queue is quiet
//! (like quinn's `Pair::drive()`).

#![allow(dead_code, unreachable_pub)]

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};

use agent_zero_agent::Policy;
use agent_zero_contracts::{
    AgentDecision, ChangeRisk, CheckResult, ModelFinding, NetworkPolicy, ProposedChange, RunMode, RunnerDescription,
    Severity, Trigger, Usage,
};
use agent_zero_engine::{
    Admission, AdmitError, ChangedFiles, ChecksPoll, Decider, Diff, Engine, Forge, ForgeError, LeaseRecord,
    LeaseRequest, Limits, ModelOutcome, ModelRequest, Ports, Publication, Queue, QueueError, Received, Stimulus,
    TaskInput, Tick, TickError, TickOutcome, TickReport, Workspace, WorkspaceError,
};
use agent_zero_ports::{Clock, ManualClock, MemoryKv};

pub use agent_zero_ports::block_on;

pub const LIB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n";
pub const FIXED: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";

/// A model that answers from a script, recording every request.
#[derive(Debug, Default)]
pub struct ScriptedDecider {
    pub answers: RefCell<VecDeque<ModelOutcome>>,
    pub requests: RefCell<Vec<ModelRequest>>,
}

impl ScriptedDecider {
    pub fn push(&self, outcome: ModelOutcome) {
        self.answers.borrow_mut().push_back(outcome);
    }
    pub fn calls(&self) -> usize {
        self.requests.borrow().len()
    }
}

impl Decider for ScriptedDecider {
    async fn decide(&self, request: &ModelRequest) -> ModelOutcome {
        self.requests.borrow_mut().push(request.clone());
        self.answers.borrow_mut().pop_front().unwrap_or(ModelOutcome::Unavailable { reason: "script exhausted".into() })
    }
}

/// A sandbox over an in-memory checkout.
#[derive(Debug)]
pub struct ScriptedWorkspace {
    pub original: BTreeMap<String, String>,
    pub tree: RefCell<BTreeMap<String, String>>,
    pub isolated: bool,
    /// Exit codes per `run` batch (each check of the batch gets it); empty = 0.
    pub exits: RefCell<VecDeque<i32>>,
    pub fail_leases: Cell<u32>,
    /// The pool's bounds, as the lease coordinator keeps them: leases
    /// active at once, and of one repository (`None`: unbounded).
    pub pool: Cell<Option<(u32, u32)>>,
    /// Active leases: id and repository.
    pub active: RefCell<BTreeMap<String, String>>,
    pub leases: Cell<u32>,
    pub releases: Cell<u32>,
    pub writes: Cell<u32>,
    pub runs: Cell<u32>,
    /// A file the "checks" touch behind the agent's back.
    pub stray_change: RefCell<Option<String>>,
    /// A path each `run` deletes (a check that removes a file).
    pub removed_by_checks: RefCell<Option<String>>,
    /// Background jobs by name: polls left before they are done, and
    /// their results.
    pub jobs: RefCell<BTreeMap<String, (u32, Vec<CheckResult>)>>,
    /// Every job started, in order (a name started twice appears once).
    pub started: RefCell<Vec<String>>,
    /// Polls a new job answers `Running` before it is done.
    pub polls_before_done: Cell<u32>,
    /// Polls answered so far.
    pub polls: Cell<u32>,
    /// The next this many polls find their job lost (its process killed).
    pub lose_jobs: Cell<u32>,
    /// The timeout each check run was given, in order.
    pub check_timeouts: RefCell<Vec<u64>>,
    /// The tree each run of a witness saw.
    pub witness_runs: RefCell<Vec<BTreeMap<String, String>>>,
}

impl ScriptedWorkspace {
    pub fn new() -> Self {
        let original: BTreeMap<String, String> = [
            ("Cargo.toml".to_owned(), "[package]\nname = \"demo\"\n".to_owned()),
            ("src/lib.rs".to_owned(), LIB.to_owned()),
        ]
        .into();
        Self {
            tree: RefCell::new(original.clone()),
            original,
            isolated: true,
            exits: RefCell::default(),
            fail_leases: Cell::new(0),
            pool: Cell::new(None),
            active: RefCell::default(),
            leases: Cell::new(0),
            releases: Cell::new(0),
            writes: Cell::new(0),
            runs: Cell::new(0),
            stray_change: RefCell::default(),
            removed_by_checks: RefCell::default(),
            jobs: RefCell::default(),
            started: RefCell::default(),
            polls_before_done: Cell::new(2),
            polls: Cell::new(0),
            lose_jobs: Cell::new(0),
            check_timeouts: RefCell::new(Vec::new()),
            witness_runs: RefCell::default(),
        }
    }
}

impl ScriptedWorkspace {
    /// The commands a witness step runs, run against the in-memory tree:
    /// `rm -f -- paths` removes them; `check-add FILE` fails while
    /// `src/lib.rs` subtracts (2 when FILE is not in the tree), `pass` and
    /// `fail` do what they say, `hang` times out. `None` for anything else.
    fn witness_command(&self, commands: &[Vec<String>]) -> Option<Vec<CheckResult>> {
        let argv = commands.first()?;
        let program = argv.first()?.as_str();
        let mut tree = self.tree.borrow_mut();
        let (code, timed_out) = match program {
            "rm" => {
                for path in &argv[3..] {
                    tree.remove(path);
                }
                (0, false)
            }
            "check-add" | "pass" | "fail" | "hang" => {
                self.witness_runs.borrow_mut().push(tree.clone());
                let file = argv.last().expect("the witness path");
                match program {
                    _ if !tree.contains_key(file) => (2, false),
                    "check-add" if tree.get("src/lib.rs").is_some_and(|c| c.contains("a - b")) => (1, false),
                    "check-add" | "pass" => (0, false),
                    "fail" => (1, false),
                    _ => (-1, true),
                }
            }
            _ => return None,
        };
        Some(vec![CheckResult {
            command: argv.clone(),
            exit_code: code,
            stdout: format!("{program} exited {code}"),
            stderr: String::new(),
            duration_ms: 5,
            truncated_bytes: 0,
            timed_out,
        }])
    }
}

impl Workspace for ScriptedWorkspace {
    async fn lease(&self, request: &LeaseRequest) -> Result<LeaseRecord, WorkspaceError> {
        if self.fail_leases.get() > 0 {
            self.fail_leases.set(self.fail_leases.get() - 1);
            return Err(WorkspaceError::Refused("quota".into()));
        }
        if let Some((all, per_repository)) = self.pool.get() {
            let active = self.active.borrow();
            let ours = active.values().filter(|r| **r == request.repository).count() as u32;
            if ours >= per_repository {
                let bound = "AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY";
                return Err(WorkspaceError::Full(format!("{ours} task(s) of the repository are running: {bound}")));
            }
            if active.len() as u32 >= all {
                return Err(WorkspaceError::Full(format!(
                    "{} tasks are running: AGENT_ZERO_MAX_RUNNING",
                    active.len()
                )));
            }
        }
        self.leases.set(self.leases.get() + 1);
        self.active.borrow_mut().insert(format!("lease-{}", self.leases.get()), request.repository.clone());
        *self.tree.borrow_mut() = self.original.clone();
        let runner = RunnerDescription {
            provider: "custom".into(),
            isolated: self.isolated,
            writable: request.writable,
            network: NetworkPolicy::Restricted,
        };
        Ok(LeaseRecord { id: format!("lease-{}", self.leases.get()), runner, sandbox: None })
    }
    async fn list_files(&self, _: &LeaseRecord) -> Result<Vec<String>, WorkspaceError> {
        Ok(self.tree.borrow().keys().cloned().collect())
    }
    async fn read_files(
        &self,
        _: &LeaseRecord,
        paths: &[String],
    ) -> Result<Vec<(String, Option<String>)>, WorkspaceError> {
        Ok(paths.iter().map(|p| (p.clone(), self.tree.borrow().get(p).cloned())).collect())
    }
    async fn file_modes(
        &self,
        _: &LeaseRecord,
        paths: &[String],
    ) -> Result<Vec<(String, Option<String>)>, WorkspaceError> {
        // The in-memory tree holds regular files only.
        Ok(paths.iter().map(|p| (p.clone(), self.tree.borrow().contains_key(p).then(|| "100644".to_owned()))).collect())
    }
    async fn write_files(&self, _: &LeaseRecord, changes: &[ProposedChange], _: &str) -> Result<(), WorkspaceError> {
        self.writes.set(self.writes.get() + 1);
        for change in changes {
            self.tree.borrow_mut().insert(change.path.clone(), change.content.clone());
        }
        Ok(())
    }
    async fn start_checks(
        &self,
        lease: &LeaseRecord,
        commands: &[Vec<String>],
        timeout_ms: u64,
        job: &str,
    ) -> Result<(), WorkspaceError> {
        if self.jobs.borrow().contains_key(job) {
            return Ok(());
        }
        // The checks "run" now; their results show after the polls.
        let results = self.run(lease, commands, timeout_ms, job).await?;
        self.started.borrow_mut().push(job.to_owned());
        self.jobs.borrow_mut().insert(job.to_owned(), (self.polls_before_done.get(), results));
        Ok(())
    }
    async fn poll_checks(
        &self,
        _: &LeaseRecord,
        _: &[Vec<String>],
        _: u64,
        job: &str,
    ) -> Result<ChecksPoll, WorkspaceError> {
        self.polls.set(self.polls.get() + 1);
        if self.lose_jobs.get() > 0 {
            self.lose_jobs.set(self.lose_jobs.get() - 1);
            self.jobs.borrow_mut().remove(job);
            return Ok(ChecksPoll::Lost("its process is gone".into()));
        }
        let mut jobs = self.jobs.borrow_mut();
        let Some((left, results)) = jobs.get_mut(job) else {
            return Ok(ChecksPoll::Lost("no such job".into()));
        };
        if *left > 0 {
            *left -= 1;
            return Ok(ChecksPoll::Running);
        }
        Ok(ChecksPoll::Done(results.clone()))
    }
    async fn run(
        &self,
        _: &LeaseRecord,
        commands: &[Vec<String>],
        timeout_ms: u64,
        _: &str,
    ) -> Result<Vec<CheckResult>, WorkspaceError> {
        if let Some(ran) = self.witness_command(commands) {
            return Ok(ran);
        }
        self.runs.set(self.runs.get() + 1);
        self.check_timeouts.borrow_mut().push(timeout_ms);
        if let Some(path) = self.removed_by_checks.borrow().clone() {
            self.tree.borrow_mut().remove(&path);
        }
        if let Some(path) = self.stray_change.borrow().clone() {
            self.tree.borrow_mut().insert(path, "stray".into());
        }
        let code = self.exits.borrow_mut().pop_front().unwrap_or(0);
        Ok(commands
            .iter()
            .map(|argv| CheckResult {
                command: argv.clone(),
                exit_code: code,
                stdout: String::new(),
                stderr: if code == 0 { String::new() } else { "assertion failed: add(1, 1) == 2".into() },
                duration_ms: 3,
                truncated_bytes: 0,
                timed_out: false,
            })
            .collect())
    }
    async fn diff(&self, _: &LeaseRecord) -> Result<Diff, WorkspaceError> {
        let tree = self.tree.borrow();
        let changed = tree.iter().filter(|(p, c)| self.original.get(*p) != Some(*c)).map(|(p, _)| p.clone()).collect();
        Ok(Diff { changed_files: changed, patch: String::new() })
    }
    async fn release(&self, lease: &LeaseRecord) -> Result<(), WorkspaceError> {
        self.releases.set(self.releases.get() + 1);
        self.active.borrow_mut().remove(&lease.id);
        Ok(())
    }
}

#[derive(Debug, Default)]
pub struct RecordingForge {
    pub published: RefCell<Vec<(String, agent_zero_contracts::TerminalState, bool)>>,
    pub fail: Cell<u32>,
    /// What the policy gate answers, in order (then: the policy cannot be read).
    pub admissions: RefCell<VecDeque<Result<Admission, AdmitError>>>,
    /// Every delivery the gate was asked about.
    pub admitted: RefCell<Vec<String>>,
    /// The files of every publication, in order.
    pub files: RefCell<Vec<Vec<ProposedChange>>>,
    /// The pull request's changed files the forge lists (none: it cannot).
    pub changed: RefCell<Option<ChangedFiles>>,
}

impl Forge for RecordingForge {
    async fn publish(&self, p: Publication<'_>) -> Result<String, String> {
        if self.fail.get() > 0 {
            self.fail.set(self.fail.get() - 1);
            return Err("forge unavailable".into());
        }
        self.published.borrow_mut().push((p.stimulus.task_id.clone(), p.result.state, p.result.verified));
        self.files.borrow_mut().push(p.changes.to_vec());
        Ok(format!("comment:{}", p.stimulus.task_id))
    }

    async fn changed_files(&self, _: &Stimulus) -> Result<ChangedFiles, ForgeError> {
        self.changed.borrow().clone().ok_or_else(|| ForgeError::Unavailable("no forge in this harness".into()))
    }

    async fn admit(&self, received: &Received) -> Result<Admission, AdmitError> {
        self.admitted.borrow_mut().push(received.task_id.clone());
        self.admissions
            .borrow_mut()
            .pop_front()
            .unwrap_or_else(|| Err(AdmitError::Unavailable("GitHub: connection refused".into())))
    }
}

/// An in-memory queue; `drop_next` loses messages as a crashed host would.
#[derive(Debug, Default)]
pub struct MemQueue {
    pub messages: RefCell<VecDeque<(Tick, u64)>>,
    pub fail_next: Cell<u32>,
    pub drop_next: Cell<u32>,
}

impl Queue for MemQueue {
    async fn enqueue(&self, tick: &Tick, delay_ms: u64) -> Result<(), QueueError> {
        if self.fail_next.get() > 0 {
            self.fail_next.set(self.fail_next.get() - 1);
            return Err(QueueError::Failed("queue binding failed".into()));
        }
        if self.drop_next.get() > 0 {
            self.drop_next.set(self.drop_next.get() - 1);
            return Ok(());
        }
        self.messages.borrow_mut().push_back((tick.clone(), delay_ms));
        Ok(())
    }
}

pub struct Harness {
    pub kv: MemoryKv,
    pub decider: ScriptedDecider,
    pub workspace: ScriptedWorkspace,
    pub publisher: RecordingForge,
    pub queue: MemQueue,
    pub clock: ManualClock,
    pub limits: Limits,
    /// Clock advance per tick (the time a step takes).
    pub tick_cost_ms: u64,
    pub reports: RefCell<Vec<TickReport>>,
    /// The delay of every tick that ran its own seq again (a poll of
    /// running checks), in order.
    pub again: RefCell<Vec<u64>>,
}

pub const START_MS: u64 = 1_795_983_333_000;

impl Harness {
    pub fn new() -> Self {
        Self {
            kv: MemoryKv::new(),
            decider: ScriptedDecider::default(),
            workspace: ScriptedWorkspace::new(),
            publisher: RecordingForge::default(),
            queue: MemQueue::default(),
            clock: ManualClock::new(START_MS),
            limits: Limits::default(),
            tick_cost_ms: 10,
            reports: RefCell::default(),
            again: RefCell::default(),
        }
    }

    /// A harness over a store that serves one key per request, so the
    /// engine takes its single-key path: no batch read, no multi-key
    /// commit.
    pub fn one_key_per_request() -> Self {
        Self { kv: MemoryKv::one_key_per_request(), ..Self::new() }
    }

    /// A harness over Spin's store: batch reads (`get-many`), no
    /// multi-key transaction.
    #[allow(dead_code)]
    pub fn spin() -> Self {
        Self { kv: MemoryKv::without_transactions(), ..Self::new() }
    }

    /// Both stores the engine runs over: a task's Durable Object (batched
    /// reads, one-request commits) and Spin's (one key per request).
    pub fn both() -> [Self; 2] {
        [Self::new(), Self::one_key_per_request()]
    }

    /// Whether the store writes a task's keys together (the first of [`Self::both`]).
    #[allow(dead_code)]
    pub fn transacts(&self) -> bool {
        agent_zero_ports::KeyValue::transacts(&self.kv, &["task/t/a", "task/t/b"])
    }

    pub fn engine(&self) -> Engine<'_, MemoryKv, ScriptedDecider, ScriptedWorkspace, RecordingForge, MemQueue> {
        Engine {
            kv: &self.kv,
            ports: Ports { decider: &self.decider, workspace: &self.workspace, publisher: &self.publisher },
            queue: &self.queue,
            limits: self.limits,
        }
    }

    pub fn receive(&self, received: Received) -> Tick {
        block_on(agent_zero_engine::receive(&self.kv, &self.queue, received, self.clock.now_ms())).expect("receive")
    }

    pub fn create(&self, stimulus: Stimulus) -> Tick {
        block_on(agent_zero_engine::create(&self.kv, &self.queue, stimulus, self.clock.now_ms())).expect("create")
    }

    pub fn tick(&self, tick: &Tick) -> Result<TickReport, TickError> {
        self.clock.advance(self.tick_cost_ms);
        let report = block_on(self.engine().tick_with(tick, self.clock.now_ms(), Default::default()));
        if let Ok(report) = &report {
            if let TickOutcome::Continue { next, delay_ms } = &report.outcome
                && (&next.task_id, next.expected_seq) == (&tick.task_id, tick.expected_seq)
            {
                assert_eq!(
                    report.stats.kv_writes, 2,
                    "a poll writes its claim and the claim's release only: {:?}",
                    report.stats
                );
                self.again.borrow_mut().push(*delay_ms);
            }
            self.reports.borrow_mut().push(report.clone());
        }
        report
    }

    /// Delivers queued ticks until none is left; the last outcome.
    pub fn drive(&self) -> Option<TickOutcome> {
        let mut last = None;
        for _ in 0..500 {
            let Some((tick, delay)) = self.queue.messages.borrow_mut().pop_front() else { return last };
            self.clock.advance(delay);
            last = Some(self.tick(&tick).expect("tick").outcome);
        }
        panic!("the task did not go quiet in 500 deliveries");
    }

    pub fn run(&self, stimulus: Stimulus) -> Option<TickOutcome> {
        self.create(stimulus);
        self.drive()
    }

    pub fn load(&self, id: &str) -> agent_zero_engine::Resident {
        block_on(agent_zero_engine::load(&self.kv, id)).expect("load").expect("exists")
    }

    pub fn keys(&self, prefix: &str) -> Vec<String> {
        self.kv.snapshot().keys().filter(|k| k.starts_with(prefix)).cloned().collect()
    }
}

pub fn policy(yaml: &str) -> Policy {
    Policy::parse(yaml).expect("test policy parses")
}

/// A fix policy whose autofix allows source changes (`src/lib.rs` is behavioral).
pub const FIX_POLICY: &str = "mode: fix\nchecks:\n  - [cargo, test]\nautofix:\n  enabled: true\n  allowedChangeRisks: [mechanical, behavioral]\n";

pub fn stimulus(id: &str, mode: RunMode, policy: Policy) -> Stimulus {
    Stimulus {
        task_id: id.into(),
        repository: "acme/demo".into(),
        trigger: Trigger::Feedback,
        mode,
        source: Some("api:tester".into()),
        input: TaskInput::default(),
        policy,
    }
}

/// A webhook delivery awaiting its policy gate.
pub fn received(id: &str) -> Received {
    Received {
        task_id: id.into(),
        repository: "acme/demo".into(),
        trigger: Trigger::Feedback,
        source: Some(format!("github:{id}")),
        title: Some("add subtracts".into()),
        delivery: serde_json::json!({ "opaque": "to the engine" }),
    }
}

pub fn claim() -> ModelFinding {
    ModelFinding {
        title: "add subtracts".into(),
        explanation: "add returns a - b".into(),
        severity: Severity::High,
        confidence: 0.95,
        valid: true,
        evidence: vec!["`pub fn add(a: i32, b: i32) -> i32` returns `a - b`".into()],
        files: vec!["src/lib.rs".into()],
        change_risk: ChangeRisk::Mechanical,
    }
}

pub fn decision(finding: ModelFinding) -> ModelOutcome {
    let changes =
        vec![ProposedChange { path: "src/lib.rs".into(), content: FIXED.into(), reason: "add must add".into() }];
    decided(AgentDecision {
        finding,
        plan: vec!["replace - with +".into()],
        acceptance_criteria: vec!["add(1,1) == 2".into()],
        changes,
        witness: vec![],
    })
}

pub fn decided(decision: AgentDecision) -> ModelOutcome {
    ModelOutcome::Decided {
        decision,
        usage: Usage { input_tokens: 100, output_tokens: 20, latency_ms: 5, cost_usd: None },
    }
}
