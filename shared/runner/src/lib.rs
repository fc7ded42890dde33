//! The runner boundary of Agent Zero Edge: `RunnerPool` leases hosted
//! sandboxes under quotas, and hands out a bounded [`Runner`] (argv
//! commands, checks started in the background and polled, file
//! read/write, diff, file list) over a [`SandboxProvider`].
//!
//! I/O boundary: this crate never runs a process and never opens a socket.
//! Quota bookkeeping goes through the [`Coordinator`] port (a Durable Object
//! on Cloudflare, Spin key-value on Spin), time through
//! [`agent_zero_ports::Clock`], and every provider adapter speaks HTTP only
//! through [`agent_zero_ports::HttpClient`]. Provider credentials are
//! adapter constructor state ([`Secret`]), never part of a request, lease,
//! log line, error or evidence.

#![forbid(unsafe_code)]
#![allow(async_fn_in_trait)]

mod checkout;
mod coordinator;
mod error;
mod kv_coordinator;
mod messages_de;
mod pool;
mod provider;
pub mod providers;
mod request;
mod runner;

pub use checkout::{ArchiveAuth, CHECKOUT_TIMEOUT_MS, CheckoutSource, MAX_ARCHIVE_BYTES, Provision};
pub use coordinator::{
    Acquired, Coordinator, CoordinatorError, CountingCoordinator, MemoryCoordinator, QuotaError, apply_quota,
};
pub use error::RunnerError;
pub use kv_coordinator::{
    CoordinatorOp, CoordinatorReply, CoordinatorTransport, KvCoordinator, LEASES_KEY, RemoteCoordinator, apply_op,
};
pub use pool::{LeaseSweep, RunnerPool, is_repository_name};
pub use provider::{Exec, ExecOutput, FileMode, JobPoll, ProviderError, Provisioned, SandboxProvider, SandboxRef};
pub use request::{Lease, LeaseLimits, ProviderKind, ProvisionedLease, RunnerPoolConfig, SandboxRequest};
pub use runner::{ChecksPoll, Command, ENV_ALLOWLIST, MAX_READ_BYTES, Runner, cap_output, validate_argv};
