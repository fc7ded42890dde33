//! The clock, the tick queue (Cloudflare Queues) and the lease coordinator
//! (a Durable Object) of the worker.

use agent_zero_app::{Queue, QueueError, Tick};
use agent_zero_ports::Clock;
use agent_zero_runner::{CoordinatorError, CoordinatorOp, CoordinatorReply, CoordinatorTransport, RemoteCoordinator};
use worker::{Date, Env};

/// `Date.now()` (in Workers it advances only across I/O, which is enough
/// for timestamps and latencies of outbound calls).
pub(crate) struct WorkerClock;

impl Clock for WorkerClock {
    fn now_ms(&self) -> u64 {
        Date::now().as_millis()
    }
}

/// The Queues producer binding for ticks.
pub(crate) struct TickQueue {
    queue: Result<worker::Queue, String>,
}

impl TickQueue {
    pub(crate) fn bind(env: &Env, binding: &str) -> Self {
        Self { queue: env.queue(binding).map_err(|e| format!("queue binding `{binding}`: {e}")) }
    }
}

impl Queue for TickQueue {
    async fn enqueue(&self, tick: &Tick, delay_ms: u64) -> Result<(), QueueError> {
        let queue = self.queue.as_ref().map_err(|e| QueueError::Failed(e.clone()))?;
        let delay_seconds = agent_zero_app::hosting::queue_delay_seconds(delay_ms);
        let message = worker::MessageBuilder::new(tick.clone()).delay_seconds(delay_seconds).build();
        queue.send(message).await.map_err(|e| QueueError::Failed(e.to_string()))
    }
}

/// Sends coordinator operations to the `LEASES` Durable Object (one
/// instance, so every lease decision is serialised).
pub(crate) struct DurableObjectTransport {
    stub: Result<worker::Stub, String>,
}

impl DurableObjectTransport {
    pub(crate) fn bind(env: &Env, binding: &str) -> RemoteCoordinator<Self> {
        let stub = env
            .durable_object(binding)
            .and_then(|ns| ns.id_from_name("leases")?.get_stub())
            .map_err(|e| format!("durable object binding `{binding}`: {e}"));
        RemoteCoordinator::new(Self { stub })
    }
}

impl CoordinatorTransport for DurableObjectTransport {
    async fn call(&self, op: &CoordinatorOp) -> Result<CoordinatorReply, CoordinatorError> {
        let unavailable = |e: String| CoordinatorError::Unavailable(e);
        let stub = self.stub.as_ref().map_err(|e| unavailable(e.clone()))?;
        let body = serde_json::to_string(op).map_err(|e| unavailable(e.to_string()))?;
        let request = crate::http_client::new_request("https://leases/op", "POST", None, Some(&body.into()))
            .map_err(unavailable)?;
        let mut response = stub.fetch_with_request(request).await.map_err(|e| unavailable(e.to_string()))?;
        let bytes = response.bytes().await.map_err(|e| unavailable(e.to_string()))?;
        agent_zero_codecs::json::from_slice(&bytes).map_err(|e| unavailable(format!("coordinator reply: {e}")))
    }
}
