//! What a run cost its host, counted at the ports: a [`Metered`] host wraps
//! another and counts every key-value operation, every lease (Durable
//! Object on Cloudflare) operation and every subrequest, with the time
//! spent waiting on the sandbox by the host's own clock. Ticks add their
//! counts to the task's record `task/{id}/cost`; the API, the dashboard and
//! the totals per repository read it. The core stays deterministic: the
//! counters are plain cells, time comes from the clock port.

use std::cell::Cell;

use agent_zero_ports::{Clock, HttpClient, HttpError, KeyPage, KeyValue, KvError};
use agent_zero_runner::{Acquired, Coordinator, CoordinatorError, Lease, LeaseLimits, QuotaError};
use serde::{Deserialize, Serialize};

use crate::Host;

/// The key of a task's cost record: under the task's own prefix, so it
/// lives in the task's Durable Object on Cloudflare and retention removes
/// it with the task.
pub(crate) fn cost_key(task_id: &str) -> String {
    format!("task/{task_id}/cost")
}

/// The operations a run (or one tick of it) cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunCost {
    /// Ticks that ran.
    pub ticks: u64,
    pub kv_reads: u64,
    pub kv_writes: u64,
    pub kv_lists: u64,
    pub kv_deletes: u64,
    /// Atomic inserts and compare-and-swaps: the task's Durable Object on
    /// Cloudflare, atomic key-value operations on Spin.
    pub kv_atomic: u64,
    /// Lease bookkeeping: the `LeaseCoordinator` Durable Object on
    /// Cloudflare, key-value operations on Spin.
    pub lease_ops: u64,
    /// Every outbound request, whatever it reached.
    pub subrequests: u64,
    pub github_requests: u64,
    pub model_requests: u64,
    pub sandbox_requests: u64,
    /// Time spent waiting on the sandbox provider's answers.
    pub sandbox_ms: u64,
    /// The model's tokens so far (the run's usage).
    #[serde(default)]
    pub model_input_tokens: u64,
    #[serde(default)]
    pub model_output_tokens: u64,
    /// Dollars, only when the policy prices the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_cost_usd: Option<f64>,
}

impl RunCost {
    /// Both added up.
    #[must_use]
    pub fn add(&self, o: &Self) -> Self {
        Self {
            ticks: self.ticks + o.ticks,
            kv_reads: self.kv_reads + o.kv_reads,
            kv_writes: self.kv_writes + o.kv_writes,
            kv_lists: self.kv_lists + o.kv_lists,
            kv_deletes: self.kv_deletes + o.kv_deletes,
            kv_atomic: self.kv_atomic + o.kv_atomic,
            lease_ops: self.lease_ops + o.lease_ops,
            subrequests: self.subrequests + o.subrequests,
            github_requests: self.github_requests + o.github_requests,
            model_requests: self.model_requests + o.model_requests,
            sandbox_requests: self.sandbox_requests + o.sandbox_requests,
            sandbox_ms: self.sandbox_ms + o.sandbox_ms,
            model_input_tokens: self.model_input_tokens + o.model_input_tokens,
            model_output_tokens: self.model_output_tokens + o.model_output_tokens,
            // Dollars of the priced runs (a run the policy did not price adds none).
            model_cost_usd: match (self.model_cost_usd, o.model_cost_usd) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
            },
        }
    }

    /// Every storage operation (key-value, atomic and lease).
    pub fn storage_ops(&self) -> u64 {
        self.kv_reads + self.kv_writes + self.kv_lists + self.kv_deletes + self.kv_atomic + self.lease_ops
    }
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
    async fn release(&self, lease_id: &str) -> Result<Option<Lease>, CoordinatorError> {
        bump(&self.meter.lease_ops, 1);
        self.inner.release(lease_id).await
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
    kv: Counting<'a, H::Kv>,
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
            kv: Counting { inner: host.kv(), meter },
            leases: Counting { inner: host.leases(), meter },
            http: CountingHttp { inner: host.http(), clock: host.clock(), meter, destinations },
        }
    }
}

impl<'a, H: Host> Host for Metered<'a, H> {
    type Kv = Counting<'a, H::Kv>;
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
}

/// Adds one tick's `cost` to the task's record, with the run's model usage
/// after the tick (one read and one write, not counted: ticks of one task
/// never overlap, their claims see to it).
pub(crate) async fn record<K: KeyValue>(
    kv: &K,
    task_id: &str,
    cost: &RunCost,
    usage: Option<&agent_zero_contracts::Usage>,
) -> Result<RunCost, KvError> {
    let key = cost_key(task_id);
    let before: RunCost = kv.get(&key).await?.and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    let mut after = before.add(cost);
    (after.model_input_tokens, after.model_output_tokens, after.model_cost_usd) = match usage {
        Some(u) => (u.input_tokens, u.output_tokens, u.cost_usd),
        None => (before.model_input_tokens, before.model_output_tokens, before.model_cost_usd),
    };
    kv.put(&key, &serde_json::to_vec(&after).unwrap_or_default()).await?;
    Ok(after)
}

/// A task's cost so far, if any tick ran.
pub(crate) async fn read<K: KeyValue>(kv: &K, task_id: &str) -> Result<Option<RunCost>, KvError> {
    Ok(kv.get(&cost_key(task_id)).await?.and_then(|b| serde_json::from_slice(&b).ok()))
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
            record(&store, "t1", &cost, Some(&usage)).await.unwrap();
            let total = record(&store, "t1", &cost, None).await.unwrap();
            assert_eq!((total.ticks, total.kv_reads, total.model_input_tokens, total.model_cost_usd), (2, 4, 10, None));
            assert_eq!(read(&store, "t1").await.unwrap(), Some(total));
            assert_eq!(read(&store, "t2").await.unwrap(), None);
        });
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
    }
}
