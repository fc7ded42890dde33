//! What a run cost its host, counted at the ports: a [`Metered`] host wraps
//! another and counts every key-value operation, every lease (Durable
//! Object on Cloudflare) operation and every subrequest, with the time
//! spent waiting on the sandbox by the host's own clock. Each tick's commit
//! records what it counted up to then in the task log (a `metered` fact,
//! which the evidence adds up); every tick also adds all it spent to the
//! task's record `task/{id}/cost`, which the API, the dashboard and the
//! totals per repository read, and which carries what was spent after a
//! commit into the next tick's fact. The core stays deterministic: the
//! counters are plain cells, time comes from the clock port.

use std::cell::Cell;

use agent_zero_contracts::RunCost;
use agent_zero_ports::{Clock, Expect, HttpClient, HttpError, KeyPage, KeyValue, KvError, Write};
use agent_zero_runner::{Acquired, Coordinator, CoordinatorError, Lease, LeaseLimits, QuotaError};

use serde::{Deserialize, Serialize};

use crate::Host;

/// The key of a task's cost record: under the task's own prefix, so it
/// lives in the task's Durable Object on Cloudflare and retention removes
/// it with the task.
pub(crate) fn cost_key(task_id: &str) -> String {
    format!("task/{task_id}/cost")
}

/// Running counters for one invocation.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    kv_reads: Cell<u64>,
    kv_writes: Cell<u64>,
    kv_lists: Cell<u64>,
    kv_deletes: Cell<u64>,
    kv_atomic: Cell<u64>,
    lease_ops: Cell<u64>,
    subrequests: Cell<u64>,
    github: Cell<u64>,
    model: Cell<u64>,
    sandbox: Cell<u64>,
    sandbox_ms: Cell<u64>,
}

fn bump(cell: &Cell<u64>, by: u64) {
    cell.set(cell.get() + by);
}

impl Meter {
    /// What was counted so far, as one tick.
    pub(crate) fn cost(&self) -> RunCost {
        RunCost {
            ticks: 1,
            kv_reads: self.kv_reads.get(),
            kv_writes: self.kv_writes.get(),
            kv_lists: self.kv_lists.get(),
            kv_deletes: self.kv_deletes.get(),
            kv_atomic: self.kv_atomic.get(),
            lease_ops: self.lease_ops.get(),
            subrequests: self.subrequests.get(),
            github_requests: self.github.get(),
            model_requests: self.model.get(),
            sandbox_requests: self.sandbox.get(),
            sandbox_ms: self.sandbox_ms.get(),
            ..RunCost::default()
        }
    }
}

/// Which kind of service an outbound URL reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Destination {
    GitHub,
    Model,
    Sandbox,
    Other,
}

/// The base URLs that classify subrequests.
#[derive(Debug, Clone, Default)]
pub(crate) struct Destinations {
    pub(crate) github: Vec<String>,
    pub(crate) model: Vec<String>,
    pub(crate) sandbox: Vec<String>,
}

impl Destinations {
    /// From the operator's variables, with each vendor's public API hosts.
    pub(crate) fn of(config: &crate::Config) -> Self {
        let own = |name: &str| config.get(name).map(|u| u.trim().trim_end_matches('/').to_owned());
        let mut github = vec!["https://api.github.com".to_owned(), "https://github.com".to_owned()];
        github.extend(own("GITHUB_API_URL"));
        github.extend(own(crate::dashboard::settings::GITHUB_URL));
        // A GitLab, Gitea or Forgejo task's forge requests count where
        // GitHub's do.
        github.extend(own("GITEA_URL"));
        github.push(crate::forge_settings::DEFAULT_GITLAB_URL.to_owned());
        github.extend(own("GITLAB_URL"));
        let mut model = [
            "https://api.openai.com",
            "https://api.anthropic.com",
            "https://generativelanguage.googleapis.com",
            "https://ai-gateway.vercel.sh",
        ]
        .map(str::to_owned)
        .to_vec();
        model.extend(own("AGENT_ZERO_MODEL_BASE_URL"));
        let mut sandbox =
            ["https://api.e2b.dev", "https://app.daytona.io", "https://api.vercel.com"].map(str::to_owned).to_vec();
        sandbox.extend(own("AGENT_ZERO_SANDBOX_URL"));
        Self { github, model, sandbox }
    }

    fn classify(&self, url: &str) -> Destination {
        let under = |bases: &[String]| {
            bases.iter().any(|b| {
                url.strip_prefix(b.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?']))
            })
        };
        // A sandbox's own hosts (E2B's `*.e2b.app`) are sandbox time too.
        let host = url.split("://").nth(1).and_then(|r| r.split(['/', ':', '?']).next()).unwrap_or_default();
        if under(&self.sandbox) || host.ends_with(".e2b.app") || host.ends_with(".e2b.dev") {
            Destination::Sandbox
        } else if under(&self.model) {
            Destination::Model
        } else if under(&self.github) {
            Destination::GitHub
        } else {
            Destination::Other
        }
    }
}

/// A port wrapped to count into a [`Meter`].
#[derive(Debug)]
pub(crate) struct Counting<'m, P> {
    inner: &'m P,
    meter: &'m Meter,
}

impl<K: KeyValue> KeyValue for Counting<'_, K> {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        bump(&self.meter.kv_reads, 1);
        self.inner.get(key).await
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        bump(&self.meter.kv_writes, 1);
        self.inner.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), KvError> {
        bump(&self.meter.kv_deletes, 1);
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        bump(&self.meter.kv_lists, 1);
        self.inner.list(prefix, cursor, limit).await
    }
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        bump(&self.meter.kv_atomic, 1);
        self.inner.put_if_absent(key, value).await
    }
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        bump(&self.meter.kv_atomic, 1);
        self.inner.compare_and_swap(key, expected, value).await
    }
    async fn put_expiring(&self, key: &str, value: &[u8], ttl_secs: u64) -> Result<(), KvError> {
        bump(&self.meter.kv_writes, 1);
        self.inner.put_expiring(key, value, ttl_secs).await
    }
    fn expires_on_its_own(&self, key: &str) -> bool {
        self.inner.expires_on_its_own(key)
    }
    async fn probe_atomicity(&self) -> Result<String, String> {
        self.inner.probe_atomicity().await
    }
    /// One read when the backend answers the batch in one request,
    /// otherwise one per key, as it reads them.
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        let requests = if self.inner.reads_in_one_request(keys) { 1 } else { keys.len() as u64 };
        bump(&self.meter.kv_reads, requests);
        self.inner.get_many(keys).await
    }
    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        self.inner.reads_in_one_request(keys)
    }
    /// One write when the backend writes the batch in one request,
    /// otherwise one per key.
    async fn put_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        let keys: Vec<&str> = pairs.iter().map(|(key, _)| *key).collect();
        let requests = if self.inner.writes_in_one_request(&keys) { 1 } else { keys.len() as u64 };
        bump(&self.meter.kv_writes, requests);
        self.inner.put_many(pairs).await
    }
    fn writes_in_one_request(&self, keys: &[&str]) -> bool {
        self.inner.writes_in_one_request(keys)
    }
    fn transacts(&self, keys: &[&str]) -> bool {
        self.inner.transacts(keys)
    }
    /// One atomic operation; a store without transactions refuses before
    /// doing anything, and costs nothing.
    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        let result = self.inner.transact(expect, writes).await;
        if !matches!(result, Err(KvError::Unsupported(_))) {
            bump(&self.meter.kv_atomic, 1);
        }
        result
    }
    /// One atomic operation, as [`Self::transact`].
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[Expect<'_>],
        writes: &[Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), KvError> {
        let result = self.inner.read_and_transact(read, expect, writes).await;
        if !matches!(result, Err(KvError::Unsupported(_))) {
            bump(&self.meter.kv_atomic, 1);
        }
        result
    }
}

impl<C: Coordinator> Coordinator for Counting<'_, C> {
    async fn try_acquire(
        &self,
        lease: &Lease,
        limits: &LeaseLimits,
        now_ms: u64,
    ) -> Result<Result<Acquired, QuotaError>, CoordinatorError> {
        bump(&self.meter.lease_ops, 1);
        self.inner.try_acquire(lease, limits, now_ms).await
    }
    async fn update(&self, lease: &Lease) -> Result<(), CoordinatorError> {
        bump(&self.meter.lease_ops, 1);
        self.inner.update(lease).await
    }
    async fn release(&self, lease_id: &str, sandbox: Option<&str>) -> Result<Option<Lease>, CoordinatorError> {
        bump(&self.meter.lease_ops, 1);
        self.inner.release(lease_id, sandbox).await
    }
    async fn expired(&self, now_ms: u64) -> Result<Vec<Lease>, CoordinatorError> {
        bump(&self.meter.lease_ops, 1);
        self.inner.expired(now_ms).await
    }
    async fn get(&self, lease_id: &str) -> Result<Option<Lease>, CoordinatorError> {
        bump(&self.meter.lease_ops, 1);
        self.inner.get(lease_id).await
    }
}

/// Outbound HTTP counted by destination; sandbox answers timed.
#[derive(Debug)]
pub(crate) struct CountingHttp<'m, H, C> {
    inner: &'m H,
    clock: &'m C,
    meter: &'m Meter,
    destinations: &'m Destinations,
}

impl<H: HttpClient, C: Clock> HttpClient for CountingHttp<'_, H, C> {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let destination = self.destinations.classify(&request.uri().to_string());
        bump(&self.meter.subrequests, 1);
        match destination {
            Destination::GitHub => bump(&self.meter.github, 1),
            Destination::Model => bump(&self.meter.model, 1),
            Destination::Sandbox => bump(&self.meter.sandbox, 1),
            Destination::Other => {}
        }
        let started = self.clock.now_ms();
        let answer = self.inner.send(request).await;
        if destination == Destination::Sandbox {
            bump(&self.meter.sandbox_ms, self.clock.now_ms().saturating_sub(started));
        }
        answer
    }
}

/// A host whose key-value, lease and HTTP ports count into a [`Meter`].
pub(crate) struct Metered<'a, H: Host> {
    host: &'a H,
    kv: crate::read_ahead::ReadAhead<Counting<'a, H::Kv>>,
    leases: Counting<'a, H::Leases>,
    http: CountingHttp<'a, H::Http, H::Clock>,
}

impl<H: Host> std::fmt::Debug for Metered<'_, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metered").field("host", &self.host.name()).finish_non_exhaustive()
    }
}

impl<'a, H: Host> Metered<'a, H> {
    pub(crate) fn new(host: &'a H, meter: &'a Meter, destinations: &'a Destinations) -> Self {
        Self {
            host,
            kv: crate::read_ahead::ReadAhead::new(Counting { inner: host.kv(), meter }),
            leases: Counting { inner: host.leases(), meter },
            http: CountingHttp { inner: host.http(), clock: host.clock(), meter, destinations },
        }
    }
}

impl<'a, H: Host> Host for Metered<'a, H> {
    type Kv = crate::read_ahead::ReadAhead<Counting<'a, H::Kv>>;
    type Http = CountingHttp<'a, H::Http, H::Clock>;
    type Clock = H::Clock;
    type Queue = H::Queue;
    type Leases = Counting<'a, H::Leases>;
    type Signer = H::Signer;

    fn name(&self) -> &'static str {
        self.host.name()
    }
    fn kv(&self) -> &Self::Kv {
        &self.kv
    }
    fn http(&self) -> &Self::Http {
        &self.http
    }
    fn clock(&self) -> &Self::Clock {
        self.host.clock()
    }
    fn queue(&self) -> &Self::Queue {
        self.host.queue()
    }
    fn leases(&self) -> &Self::Leases {
        &self.leases
    }
    fn signer(&self) -> &Self::Signer {
        self.host.signer()
    }

    fn allowed_outbound_hosts(&self) -> Option<&[&'static str]> {
        self.host.allowed_outbound_hosts()
    }
    fn ed25519(&self, seed: &[u8; 32], message: Option<&[u8]>) -> impl Future<Output = Result<crate::Ed25519, String>> {
        self.host.ed25519(seed, message)
    }
}

/// A task's cost record: the run's total so far, and the operations not
/// yet in its log (spent after a commit, or by a tick that committed
/// nothing), which the next tick's [`agent_zero_engine::Fact::Metered`]
/// carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CostRecord {
    #[serde(flatten)]
    pub(crate) total: RunCost,
    pub(crate) unlogged: RunCost,
}

impl CostRecord {
    /// Reads a stored record in two passes, the total (a [`RunCost`]
    /// ignores the `unlogged` key) and then `unlogged`: serde's reader of a
    /// flattened field would buffer the object and read it a second time
    /// with a second copy of every field's deserializer.
    fn from_slice(bytes: &[u8]) -> Option<Self> {
        #[derive(Deserialize)]
        struct Unlogged {
            #[serde(default)]
            unlogged: RunCost,
        }
        let total = agent_zero_codecs::json::from_slice::<RunCost>(bytes).ok()?;
        let Unlogged { unlogged } = agent_zero_codecs::json::from_slice(bytes).ok()?;
        Some(Self { total, unlogged })
    }
}

/// The task's cost record, empty before its first metered tick.
pub(crate) async fn record_of<K: KeyValue>(kv: &K, task_id: &str) -> Result<CostRecord, KvError> {
    Ok(kv.get(&cost_key(task_id)).await?.and_then(|b| CostRecord::from_slice(&b)).unwrap_or_default())
}

/// Adds one tick's `spent` to the task's record `before` (read before the
/// tick), with the run's model usage after the tick. `logged` is what the
/// tick's commit recorded in the log, if it committed: the rest of what
/// was carried and spent stays for the next tick. One write, not counted
/// (the read before the tick is the tick's own, usually part of its one
/// read ahead): ticks of one task never overlap, their claims see to it.
pub(crate) async fn record<K: KeyValue>(
    kv: &K,
    task_id: &str,
    before: CostRecord,
    spent: &RunCost,
    logged: Option<RunCost>,
    usage: Option<&agent_zero_contracts::Usage>,
) -> Result<CostRecord, KvError> {
    let mut total = before.total.add(spent);
    (total.model_input_tokens, total.model_output_tokens, total.model_cost_usd) = match usage {
        Some(u) => (u.input_tokens, u.output_tokens, u.cost_usd),
        None => (before.total.model_input_tokens, before.total.model_output_tokens, before.total.model_cost_usd),
    };
    let carried = before.unlogged.add(spent);
    let unlogged = logged.map_or(carried, |logged| carried.operations_after(&logged));
    let after = CostRecord { total, unlogged };
    kv.put(&cost_key(task_id), &serde_json::to_vec(&after).unwrap_or_default()).await?;
    Ok(after)
}

/// A task's cost so far, if any tick ran.
pub(crate) async fn read<K: KeyValue>(kv: &K, task_id: &str) -> Result<Option<RunCost>, KvError> {
    Ok(kv.get(&cost_key(task_id)).await?.and_then(|b| CostRecord::from_slice(&b)).map(|r| r.total))
}

/// The cost as the API gives it: the counts and every storage operation
/// together.
pub(crate) fn cost_json(cost: &RunCost) -> serde_json::Value {
    let mut value = serde_json::to_value(cost).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.insert("storageOps".into(), cost.storage_ops().into());
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_zero_ports::{MemoryKv, block_on};

    /// Records as the derived, flattened reader read them: the total's
    /// fields at the top, `unlogged` beside them or absent.
    #[test]
    fn stored_records_read_back_as_written() {
        let record = CostRecord {
            total: RunCost { ticks: 3, kv_reads: 7, model_cost_usd: Some(0.25), ..RunCost::default() },
            unlogged: RunCost { kv_writes: 2, ..RunCost::default() },
        };
        let bytes = serde_json::to_vec(&record).unwrap();
        assert_eq!(CostRecord::from_slice(&bytes), Some(record));
        let written = br#"{"ticks":1,"kvReads":2,"kvWrites":0,"kvLists":0,"kvDeletes":0,"kvAtomic":0,"leaseOps":0,"subrequests":0,"githubRequests":0,"modelRequests":0,"sandboxRequests":0,"sandboxMs":0}"#;
        let read = CostRecord::from_slice(written).unwrap();
        assert_eq!((read.total.ticks, read.total.kv_reads, read.unlogged), (1, 2, RunCost::default()));
        // A count left out reads as 0, as a log entry's sparse cost does.
        let sparse = CostRecord::from_slice(br#"{"ticks":1}"#).unwrap();
        assert_eq!((sparse.total, sparse.unlogged), (RunCost { ticks: 1, ..RunCost::default() }, RunCost::default()));
        assert_eq!(CostRecord::from_slice(br#"{"ticks":"one"}"#), None, "a count that is not a number is no record");
        assert_eq!(CostRecord::from_slice(&bytes[..bytes.len() - 1]), None);
    }

    /// How many times a day the front worker's cron runs, from the first
    /// `crons` entry of its `wrangler.toml` (minute field `*` or `*/N`,
    /// every other field `*`).
    fn sweeps_per_day(wrangler: &str) -> u64 {
        let line = wrangler.lines().find(|l| l.trim_start().starts_with("crons")).expect("wrangler.toml has crons");
        let cron = line.split('"').nth(1).expect("a quoted cron expression");
        let fields: Vec<&str> = cron.split_whitespace().collect();
        assert_eq!(fields[1..], ["*", "*", "*", "*"], "{cron}: only a minute cadence is counted here");
        match fields[0] {
            "*" => 1_440,
            every => 1_440 / every.strip_prefix("*/").and_then(|n| n.parse::<u64>().ok()).expect("*/N"),
        }
    }

    /// A day of an idle deployment's sweeps, counted at the store (the
    /// overdue-tick index and the retention schedule, both in Workers KV),
    /// at the cadence the front worker's cron sets: inside the free Workers
    /// plan's daily KV quotas, with room left for runs.
    #[test]
    fn an_idle_day_of_sweeps_fits_the_free_workers_plans_kv_quotas() {
        use crate::platform::Platform;
        let meter = Meter::default();
        let store = MemoryKv::new();
        let kv = Counting { inner: &store, meter: &meter };
        let queue = crate::test_host::RecordingQueue::default();
        let now = 1_800_000_000_000;
        block_on(async {
            agent_zero_engine::sweep(&kv, &queue, now, agent_zero_engine::SweepOptions::default()).await.unwrap();
            crate::retention_pass::pass(&kv, now).await.unwrap();
        });
        let sweep = meter.cost();
        assert!(sweep.kv_lists > 0, "a sweep lists its indexes: {sweep:?}");
        let per_day = sweeps_per_day(include_str!("../../../wrangler.toml"));
        // Issue 42's idle day: no KV write or delete, and at most 300 lists.
        assert_eq!((sweep.kv_writes + sweep.kv_atomic, sweep.kv_deletes), (0, 0), "an idle sweep writes nothing");
        assert!(sweep.kv_lists * per_day <= 300, "{per_day} sweeps of {} lists each", sweep.kv_lists);
        let free = Platform::CloudflareFree.limits();
        for (what, per_sweep, quota) in [
            ("lists", sweep.kv_lists, free.kv_lists_per_day),
            ("reads", sweep.kv_reads, free.kv_reads_per_day),
            ("writes", sweep.kv_writes + sweep.kv_atomic, free.kv_writes_per_day),
            ("deletes", sweep.kv_deletes, free.kv_deletes_per_day),
        ] {
            let quota = quota.expect("the free plan publishes its KV quotas").value;
            let used = per_sweep * per_day;
            // At most two thirds of a quota: the rest is the runs'.
            assert!(
                used * 3 <= quota * 2,
                "{per_day} idle sweeps a day spend {used} KV {what} of the free plan's {quota}"
            );
        }
    }

    #[test]
    fn counts_each_operation_and_adds_up_per_task() {
        let meter = Meter::default();
        let store = MemoryKv::new();
        let kv = Counting { inner: &store, meter: &meter };
        block_on(async {
            kv.put("a", b"1").await.unwrap();
            kv.get("a").await.unwrap();
            kv.get("b").await.unwrap();
            kv.put_if_absent("c", b"1").await.unwrap();
            kv.list("", None, 10).await.unwrap();
            kv.delete("a").await.unwrap();
        });
        let cost = meter.cost();
        assert_eq!((cost.kv_writes, cost.kv_reads, cost.kv_atomic, cost.kv_lists, cost.kv_deletes), (1, 2, 1, 1, 1));
        assert_eq!(cost.storage_ops(), 6);
        let store = MemoryKv::new();
        block_on(async {
            let usage = agent_zero_contracts::Usage { input_tokens: 10, output_tokens: 3, ..Default::default() };
            // The first tick commits what it counted before its commit (half
            // of it here); the rest is carried to the next tick's fact.
            let before = record_of(&store, "t1").await.unwrap();
            let logged = RunCost { ticks: 1, kv_reads: 1, ..RunCost::default() };
            let first = record(&store, "t1", before, &cost, Some(logged), Some(&usage)).await.unwrap();
            assert_eq!((first.unlogged.ticks, first.unlogged.kv_reads, first.unlogged.kv_writes), (0, 1, 1));
            // The second committed nothing (stale): all it spent is carried.
            let second = record(&store, "t1", first, &cost, None, None).await.unwrap();
            let total = second.total;
            assert_eq!((total.ticks, total.kv_reads, total.model_input_tokens, total.model_cost_usd), (2, 4, 10, None));
            assert_eq!((second.unlogged.ticks, second.unlogged.kv_reads), (1, 3));
            assert_eq!(record_of(&store, "t1").await.unwrap(), second);
            assert_eq!(read(&store, "t1").await.unwrap(), Some(total));
            assert_eq!(read(&store, "t2").await.unwrap(), None);
            // A record written before the carry was kept reads as a total.
            store.put(&cost_key("t3"), &serde_json::to_vec(&total).unwrap()).await.unwrap();
            assert_eq!(record_of(&store, "t3").await.unwrap(), CostRecord { total, unlogged: RunCost::default() });
        });
    }

    /// Over the app's own ticks (a run that fails for want of a sandbox,
    /// with a duplicate delivery of each tick, which commits nothing):
    /// every operation counted is either in the log's `metered` facts or
    /// still carried in the record, never both, never lost; the evidence
    /// adds up the facts through the conclusion.
    #[test]
    fn every_counted_operation_is_in_the_log_or_carried_and_the_evidence_adds_up_the_log() {
        use crate::test_host::{RUNNABLE, TestHost};
        use agent_zero_engine::{Fact, Tick};
        let host = TestHost::new();
        let settings = crate::Settings::from_pairs(
            [
                ("AGENT_ZERO_CONTROL_PLANE_TOKENS", "alice:tok-alice-5e0c1b2a9d8f"),
                ("AGENT_ZERO_CONTROL_PLANE_REPOSITORIES", "octo/widgets"),
            ]
            .into_iter()
            .chain(RUNNABLE),
        );
        let body = serde_json::json!({
            "repository": "octo/widgets", "mode": "observe", "trigger": "feedback",
            "feedback": [{ "body": "`limit` of 0 divides by zero", "path": "src/limit.rs", "line": 3 }],
        });
        let request = http::Request::post("/api/v1/tasks")
            .header("authorization", "Bearer tok-alice-5e0c1b2a9d8f")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap();
        let created = host.send(&settings, request);
        assert_eq!(created.status(), 201, "{}", String::from_utf8_lossy(created.body()));
        let id =
            serde_json::from_slice::<serde_json::Value>(created.body()).unwrap()["id"].as_str().unwrap().to_owned();
        let mut next = Tick::new(id.clone(), 1);
        for _ in 0..40 {
            host.clock.advance(60_000);
            let now = host.invocation().now_ms;
            let report = block_on(crate::run_tick(&host, &settings, &next, now)).unwrap();
            // The same message again: stale now, its cost carried.
            let again = block_on(crate::run_tick(&host, &settings, &next, now)).unwrap();
            assert_eq!(again.outcome, agent_zero_engine::TickOutcome::Stale);
            match report.outcome {
                agent_zero_engine::TickOutcome::Continue { next: following, .. } => next = following,
                _ => break,
            }
        }
        let entries = block_on(agent_zero_engine::log::read_log(&host.kv, &id)).unwrap().unwrap();
        let mut in_log = RunCost::default();
        let mut through_conclusion = None;
        for entry in &entries {
            for fact in &entry.facts {
                match fact {
                    Fact::Metered { cost } => in_log = in_log.add(cost),
                    Fact::Concluded { evidence, .. } => through_conclusion = Some((in_log, evidence.cost)),
                    _ => {}
                }
            }
        }
        let record = block_on(record_of(&host.kv, &id)).unwrap();
        assert!(in_log.ticks > 2 && record.unlogged.ticks > 0, "{in_log:?} {record:?}");
        assert_eq!(
            in_log.add(&record.unlogged).operations_after(&RunCost::default()),
            record.total.operations_after(&RunCost::default())
        );
        let (logged, evidence) = through_conclusion.expect("the run concluded");
        let evidence = evidence.expect("a metered run's evidence has its cost");
        assert_eq!(evidence.operations_after(&RunCost::default()), logged);
        assert!(evidence.ticks < record.total.ticks && evidence.storage_ops() < record.total.storage_ops());
    }

    #[test]
    fn subrequests_are_classified_by_destination() {
        let d = Destinations {
            github: vec!["http://127.0.0.1:4000".into()],
            model: vec!["http://127.0.0.1:5000/v1".into()],
            sandbox: vec!["http://127.0.0.1:6000".into()],
        };
        assert_eq!(d.classify("http://127.0.0.1:4000/repos/a/b"), Destination::GitHub);
        assert_eq!(d.classify("http://127.0.0.1:40001/x"), Destination::Other);
        assert_eq!(d.classify("http://127.0.0.1:5000/v1/chat/completions"), Destination::Model);
        assert_eq!(d.classify("http://127.0.0.1:6000/sandboxes"), Destination::Sandbox);
        assert_eq!(d.classify("https://49999-abc.e2b.app/files"), Destination::Sandbox);
        // A Gitea instance is the forge, as GitHub is.
        let gitea = Destinations::of(&crate::Config::from_pairs([("GITEA_URL", "https://git.example.org/")]));
        assert_eq!(gitea.classify("https://git.example.org/api/v1/repos/a/b"), Destination::GitHub);
    }
}
