//! Running ticks and sweeps: the entry points a host's queue consumer,
//! cron trigger or in-invocation driver calls.

use agent_zero_engine::{Engine, Ports, Start, SweepOptions, Tick, TickError, TickReport, TickSweep};
use agent_zero_runner::{LeaseSweep, RunnerPoolConfig};

use crate::services::{
    AnySandbox, ForgeOf, Gate, GitHubCheckout, GitHubForge, GitLabCheckout, GitLabForge, GiteaCheckout, GiteaForge,
    ModelDecider, PoolWorkspace,
};
use crate::{Host, Settings};

/// Why a tick could not run; the host leaves the message for redelivery.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunTickError {
    /// The engine did nothing durable.
    #[error(transparent)]
    Tick(#[from] TickError),
    /// Loading the task's policy failed.
    #[error("loading task `{task_id}`: {reason}")]
    Load { task_id: String, reason: String },
    /// An operator setting is malformed (named); nothing ran.
    #[error("settings: {0}")]
    Settings(String),
}

/// Runs one tick of `tick.task_id` at `now_ms` with the services the
/// operator configured and the task's policy snapshot.
pub async fn run_tick<H: Host>(
    host: &H,
    settings: &Settings,
    tick: &Tick,
    now_ms: u64,
) -> Result<TickReport, RunTickError> {
    // What the tick cost, counted at the ports. What earlier ticks spent
    // after their commits (or without one) is carried into this tick's
    // fact in the log; what this one spends after its commit is carried on.
    let meter = crate::metering::Meter::default();
    let destinations = crate::metering::Destinations::of(settings.variables());
    let metered = crate::metering::Metered::new(host, &meter, &destinations);
    // Everything the tick reads before it decides, in one request where
    // the store allows (`read_ahead`), with its claim where the message
    // says how long its step may take: counted as the tick's.
    let (id, seq) = (tick.task_id.as_str(), tick.expected_seq);
    if agent_zero_engine::is_valid_task_id(id) {
        let keys = [
            crate::metering::cost_key(id),
            crate::task_index::summary_key(id),
            agent_zero_engine::log_key(id, 0),
            agent_zero_engine::log_key(id, 1),
            agent_zero_engine::log_key(id, seq),
            agent_zero_engine::meta_key(id),
            agent_zero_engine::claim_key(id, seq),
        ];
        let claim = agent_zero_engine::ClaimAhead::of(tick, now_ms);
        metered.kv().read(&keys.each_ref().map(String::as_str), claim).await;
    }
    // A record that cannot be read is left as it is (its total is not reset).
    let record = crate::metering::record_of(metered.kv(), &tick.task_id).await;
    let carried = record.as_ref().map(|r| r.unlogged).unwrap_or_default();
    let logged = std::cell::Cell::new(None);
    let counted = || {
        let cost = carried.add(&meter.cost());
        logged.set(Some(cost));
        cost
    };
    // The listing's summary, written with the commit when it changes.
    let index = crate::task_index::TickIndex::read(metered.kv(), &tick.task_id, now_ms).await;
    let mut result = tick_on(&metered, settings, tick, now_ms, &counted, &index).await;
    if let Ok(report) = &mut result {
        let in_log = logged.get().filter(|_| report.outcome != agent_zero_engine::TickOutcome::Stale);
        let usage = report.resident.as_ref().map(|r| &r.usage);
        let recorded = match record {
            Ok(record) => {
                crate::metering::record(host.kv(), &tick.task_id, record, &meter.cost(), in_log, usage).await.map(drop)
            }
            Err(e) => Err(e),
        };
        if let Err(e) = recorded {
            report.warnings.push(format!("cost not recorded: {e}"));
        }
    }
    result
}

async fn tick_on<H: Host>(
    host: &H,
    settings: &Settings,
    tick: &Tick,
    now_ms: u64,
    counted: &dyn Fn() -> agent_zero_contracts::RunCost,
    index: &crate::task_index::TickIndex,
) -> Result<TickReport, RunTickError> {
    let run = settings.run().map_err(|e| RunTickError::Settings(e.message))?;
    // Entry 0 (and an admission): the engine folds the rest of the log itself.
    let start = agent_zero_engine::start(host.kv(), &tick.task_id)
        .await
        .map_err(|e| RunTickError::Load { task_id: tick.task_id.clone(), reason: e.to_string() })?
        .ok_or_else(|| RunTickError::Tick(TickError::UnknownTask(tick.task_id.clone())))?;
    // A delivery awaiting its gate has no policy yet: its one step (admit)
    // uses the forge port only, so the others are built from the defaults.
    let awaiting = agent_zero_agent::Policy::default();
    let (policy, pull_request) = match &start {
        Start::Run(stimulus) => (&stimulus.policy, stimulus.input.pull_request.as_ref()),
        Start::Awaiting(_) => (&awaiting, None),
        _ => (&awaiting, None),
    };

    // Each model call fits the platform's wall clock (`AGENT_ZERO_PLATFORM`).
    let calls =
        settings.model_selection(policy).map_or(1, |selection| crate::settings::model_calls_per_step(&selection));
    let model_timeout = run.model_timeout_on(host.name(), calls);
    let decider = ModelDecider::new(policy, settings, model_timeout, host.http(), host.clock());
    let provider: Result<AnySandbox<&H::Http>, String> = settings.sandbox(host.http());
    let pool_config = settings.pool(policy.runner.max_output_bytes);
    let git_ref = pull_request.map_or_else(|| "HEAD".to_owned(), |pr| pr.head_sha.clone());
    let (installation, forge) = match &start {
        Start::Run(stimulus) => (stimulus.input.installation_id, stimulus.input.forge),
        Start::Awaiting(received) => (None, received.forge()),
        _ => (None, agent_zero_contracts::ForgeKind::GitHub),
    };
    // The adapter of the forge the repository lives on.
    let (checkout, inner) = if forge.speaks_gitea() {
        (
            ForgeOf::Gitea(GiteaCheckout { settings, http: host.http() }),
            ForgeOf::Gitea(GiteaForge { settings, http: host.http(), now_ms }),
        )
    } else if forge == agent_zero_contracts::ForgeKind::GitLab {
        (
            ForgeOf::GitLab(GitLabCheckout { settings, http: host.http() }),
            ForgeOf::GitLab(GitLabForge { settings, http: host.http(), now_ms }),
        )
    } else {
        (
            ForgeOf::GitHub(GitHubCheckout {
                settings,
                http: host.http(),
                signer: host.signer(),
                installation,
                now_ms,
            }),
            ForgeOf::GitHub(GitHubForge::new(settings, host.http(), host.signer(), now_ms)),
        )
    };
    let workspace =
        PoolWorkspace::new(host.leases(), provider.as_ref().map_err(Clone::clone), host.clock(), pool_config, git_ref)
            .with_checkout(checkout);
    let publisher = Gate::new(host, settings, now_ms, inner);
    let engine = Engine {
        kv: host.kv(),
        ports: Ports { decider: &decider, workspace: &workspace, publisher: &publisher },
        queue: host.queue(),
        limits: run.limits,
    };
    let views = |after: &agent_zero_engine::Resident| index.view(after);
    let hooks = agent_zero_engine::TickHooks { meter: Some(counted), views: Some(&views) };
    let mut report = engine.tick_with(tick, now_ms, hooks).await?;
    if let Some(after) = &report.resident {
        if let Err(e) = index.after(host.kv(), after).await {
            report.warnings.push(e.to_string());
        }
        // Finished: its lifetime starts (the same key however often this runs).
        if matches!(report.outcome, agent_zero_engine::TickOutcome::Terminal(_))
            && let Err(e) = crate::retention::schedule_finished(host.kv(), &run.lifetimes, after).await
        {
            report.warnings.push(format!("retention not scheduled: {e}"));
        }
    }
    Ok(report)
}

/// What one sweep did: overdue ticks re-enqueued, expired leases stopped.
#[derive(Debug, Default)]
pub struct SweepOutcome {
    pub ticks: Option<TickSweep>,
    pub leases: Option<LeaseSweep>,
    /// What the retention pass removed.
    pub retention: Option<crate::retention_pass::RetentionReport>,
    pub errors: Vec<String>,
}

/// Re-enqueues overdue ticks (a crash between commit and enqueue, a lost
/// message) and stops sandbox leases past their ceiling.
pub async fn sweep<H: Host>(host: &H, settings: &Settings, now_ms: u64, grace_ms: u64) -> SweepOutcome {
    let mut outcome = SweepOutcome::default();
    let options = SweepOptions { grace_ms, ..SweepOptions::default() };
    match agent_zero_engine::sweep(host.kv(), host.queue(), now_ms, options).await {
        Ok(report) => outcome.ticks = Some(report),
        Err(e) => outcome.errors.push(format!("ticks: {e}")),
    }
    if let Ok(provider) = settings.sandbox(host.http()) {
        match settings.pool(RunnerPoolConfig::default().max_output_bytes) {
            Ok(limits) => {
                match agent_zero_runner::RunnerPool::new(host.leases(), &provider, host.clock(), limits).sweep().await {
                    Ok(report) => outcome.leases = Some(report),
                    Err(e) => outcome.errors.push(format!("leases: {e}")),
                }
            }
            Err(e) => outcome.errors.push(format!("leases: {e}")),
        }
    }
    match crate::retention_pass::pass(host.kv(), now_ms).await {
        Ok(report) => outcome.retention = Some(report),
        Err(e) => outcome.errors.push(format!("retention: {e}")),
    }
    outcome
}
