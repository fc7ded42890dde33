//! The `LeaseCoordinator` Durable Object: the single writer of sandbox-lease
//! bookkeeping. Each request is one `CoordinatorOp`, applied to a
//! `KvCoordinator` over this object's storage; the object's input gate
//! serialises requests, so check-and-insert is atomic.

use agent_zero_ports::{KeyPage, KeyValue, KvError};
use agent_zero_runner::{CoordinatorOp, KvCoordinator, apply_op};
use worker::{DurableObject, Env, Request, Response, State, durable_object};

#[durable_object(fetch)]
pub struct LeaseCoordinator {
    state: State,
}

impl std::fmt::Debug for LeaseCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeaseCoordinator")
    }
}

impl DurableObject for LeaseCoordinator {
    fn new(state: State, _env: Env) -> Self {
        Self { state }
    }

    async fn fetch(&self, mut request: Request) -> worker::Result<Response> {
        let op: CoordinatorOp = match agent_zero_codecs::json::from_slice(&request.bytes().await?) {
            Ok(op) => op,
            Err(e) => return Response::error(format!("invalid coordinator operation: {e}"), 400),
        };
        let coordinator = KvCoordinator::new(ObjectStorage { state: &self.state });
        let reply = apply_op(&coordinator, op).await;
        Response::from_json(&reply)
    }
}

/// The key-value port over this object's transactional storage (values are
/// stored as strings: the coordinator writes JSON).
struct ObjectStorage<'a> {
    state: &'a State,
}

fn backend(e: impl std::fmt::Display) -> KvError {
    KvError::Backend(e.to_string())
}

impl KeyValue for ObjectStorage<'_> {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let value: Option<String> = self.state.storage().get(key).await.map_err(backend)?;
        Ok(value.map(String::into_bytes))
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        let text = std::str::from_utf8(value).map_err(backend)?;
        self.state.storage().put(key, text).await.map_err(backend)
    }

    async fn delete(&self, key: &str) -> Result<(), KvError> {
        self.state.storage().delete(key).await.map(|_| ()).map_err(backend)
    }

    async fn list(&self, _prefix: &str, _cursor: Option<&str>, _limit: usize) -> Result<KeyPage, KvError> {
        Err(KvError::Backend("listing is not used by the lease coordinator".into()))
    }

    /// Atomic: the object's input gate delivers no other event while its
    /// storage operations run, and nothing else is awaited between them.
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        self.compare_and_swap(key, None, value).await
    }

    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        if self.get(key).await?.as_deref() != expected {
            return Ok(false);
        }
        self.put(key, value).await?;
        Ok(true)
    }
}
