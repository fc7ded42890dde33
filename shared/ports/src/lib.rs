//! Ports: the small async traits through which the core reaches the world.
//!
//! Each host crate implements them over its own SDK (Cloudflare KV, Spin
//! key-value, `Fetch`, `spin_sdk::http::send`); tests use the in-memory
//! implementations here. The traits have no `Send` bound: both guests are
//! single-threaded.

#![forbid(unsafe_code)]
#![allow(async_fn_in_trait)]

mod clock;
mod counting;
mod http_client;
mod kv;
mod memory;
mod ready;
mod secret;

pub use clock::{Clock, ManualClock};
pub use counting::CountingKv;
pub use http_client::{BoundedResponseBody, HttpClient, HttpError, RequestTimeout, ResponseLimit, enforce_limit};
pub use kv::{Expect, KeyPage, KeyValue, KvError, MAX_KEY_BYTES, Write, check_key};
pub use memory::{MemoryKv, MemoryKvFault, page_of};
pub use ready::block_on;
pub use secret::{
    CREDENTIAL_PREFIXES, MIN_STORED_BODY, REDACTED, Secret, credential_at, order_secrets, redact,
    scrub_credential_shapes, starts_word,
};
