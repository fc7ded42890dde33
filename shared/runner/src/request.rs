//! The credential-free lease request, the lease record and the pool limits.

use agent_zero_contracts::{NetworkPolicy, RunMode};
use serde::{Deserialize, Serialize};

/// Which hosted sandbox a lease runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// Our own HTTP protocol (`PROTOCOL.md`), e.g. the `agent-zero-sandbox` server.
    Custom,
    E2b,
    Daytona,
    Vercel,
    Cloudflare,
}

impl ProviderKind {
    /// The name recorded in `RunnerDescription.provider`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Custom => "custom",
            Self::E2b => "e2b",
            Self::Daytona => "daytona",
            Self::Vercel => "vercel",
            Self::Cloudflare => "cloudflare",
        }
    }

    /// Every provider, in declaration order.
    pub const ALL: [Self; 5] = [Self::Custom, Self::E2b, Self::Daytona, Self::Vercel, Self::Cloudflare];

    /// Parses `AGENT_ZERO_SANDBOX_PROVIDER`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// Whether this build has the provider's adapter (the crate feature of
    /// the same name).
    pub const fn is_built(self) -> bool {
        match self {
            Self::Custom => cfg!(feature = "custom"),
            Self::E2b => cfg!(feature = "e2b"),
            Self::Daytona => cfg!(feature = "daytona"),
            Self::Vercel => cfg!(feature = "vercel"),
            Self::Cloudflare => cfg!(feature = "cloudflare"),
        }
    }
}

/// What a task asks of the pool. Carries no credential: it may be logged,
/// recorded and shown to anyone who can read the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SandboxRequest {
    pub task_id: String,
    /// `owner/name`.
    pub repository: String,
    /// Branch, tag or commit to check out.
    pub git_ref: String,
    pub mode: RunMode,
    /// Asked-for write access; the pool forces it off for `observe`/`suggest`.
    pub writable: bool,
    pub network: NetworkPolicy,
    pub lease_ms: u64,
}

impl SandboxRequest {
    /// A request; `writable` is still subject to the mode.
    pub fn new(
        task_id: impl Into<String>,
        repository: impl Into<String>,
        git_ref: impl Into<String>,
        mode: RunMode,
        writable: bool,
        network: NetworkPolicy,
        lease_ms: u64,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            repository: repository.into(),
            git_ref: git_ref.into(),
            mode,
            writable,
            network,
            lease_ms,
        }
    }

    /// Write access after policy: only `fix`/`autonomous` ever write.
    pub fn effective_writable(&self) -> bool {
        self.writable && self.mode.may_write()
    }
}

/// One lease as the coordinator stores it. Credential-free by construction:
/// it names the sandbox, never how to authenticate to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Lease {
    pub id: String,
    pub task_id: String,
    pub repository: String,
    pub git_ref: String,
    pub provider: ProviderKind,
    pub writable: bool,
    /// As asked while provisioning; as the provider enforces it after.
    pub network: NetworkPolicy,
    pub lease_ms: u64,
    pub acquired_at_ms: u64,
    /// The ceiling: past this the sweep stops the sandbox.
    pub expires_at_ms: u64,
    /// The provider's sandbox id; `None` while provisioning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// The checkout's root inside the sandbox (`""` when the provider
    /// resolves paths relative to the checkout itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Whether the provider reported an isolated boundary.
    #[serde(default)]
    pub isolated: bool,
}

impl Lease {
    /// A reservation for `request`, made at `now_ms`.
    pub fn reserve(id: impl Into<String>, request: &SandboxRequest, provider: ProviderKind, now_ms: u64) -> Self {
        Self {
            id: id.into(),
            task_id: request.task_id.clone(),
            repository: request.repository.clone(),
            git_ref: request.git_ref.clone(),
            provider,
            writable: request.effective_writable(),
            network: request.network,
            lease_ms: request.lease_ms,
            acquired_at_ms: now_ms,
            expires_at_ms: now_ms.saturating_add(request.lease_ms),
            external_id: None,
            root: None,
            isolated: false,
        }
    }

    /// Whether the lease is past its ceiling at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms <= now_ms
    }
}

/// A lease whose sandbox exists, as its holder keeps it: everything a
/// [`Runner`](crate::Runner) needs to reach the sandbox, so a later step
/// can attach without asking the coordinator
/// ([`RunnerPool::attach_provisioned`](crate::RunnerPool::attach_provisioned)).
/// Only ever made from a lease our own provisioning filled in
/// ([`Runner::lease`](crate::Runner::lease)) or from the holder's record
/// of one; credential-free like [`Lease`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvisionedLease {
    pub id: String,
    pub provider: ProviderKind,
    pub writable: bool,
    /// As the provider enforces it.
    pub network: NetworkPolicy,
    pub isolated: bool,
    /// The provider's sandbox id.
    pub external_id: String,
    /// The checkout's root inside the sandbox (`""`: checkout-relative paths).
    pub root: String,
    /// The ceiling: past this the lease is gone, whatever the coordinator
    /// still holds.
    pub expires_at_ms: u64,
}

impl ProvisionedLease {
    /// `lease` once provisioned; `None` while it has no sandbox.
    pub fn of(lease: &Lease) -> Option<Self> {
        Some(Self {
            id: lease.id.clone(),
            provider: lease.provider,
            writable: lease.writable,
            network: lease.network,
            isolated: lease.isolated,
            external_id: lease.external_id.clone()?,
            root: lease.root.clone().unwrap_or_default(),
            expires_at_ms: lease.expires_at_ms,
        })
    }

    /// Whether the lease is past its ceiling at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms <= now_ms
    }
}

/// Pool limits. The reference has no pool defaults of its own; these follow
/// its scheduler (4 concurrent, 1 per repository) and its lease length
/// (`agent.timeoutMs`, 30 minutes) so a default lease always fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerPoolConfig {
    pub max_active: u32,
    pub max_active_per_repository: u32,
    pub max_lease_ms: u64,
    /// `runner.maxOutputBytes`: cap on captured output per command.
    pub max_output_bytes: u64,
}

impl Default for RunnerPoolConfig {
    fn default() -> Self {
        Self { max_active: 4, max_active_per_repository: 1, max_lease_ms: 1_800_000, max_output_bytes: 200_000 }
    }
}

/// The limits the coordinator enforces inside its one atomic step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseLimits {
    pub max_active: u32,
    pub max_active_per_repository: u32,
    pub max_lease_ms: u64,
}

impl From<RunnerPoolConfig> for LeaseLimits {
    fn from(config: RunnerPoolConfig) -> Self {
        Self {
            max_active: config.max_active,
            max_active_per_repository: config.max_active_per_repository,
            max_lease_ms: config.max_lease_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_is_camel_case_and_mode_gates_writes() {
        let request = SandboxRequest::new("t1", "acme/app", "main", RunMode::Observe, true, NetworkPolicy::None, 1000);
        let json = serde_json::to_value(&request).unwrap();
        assert_eq!(json["taskId"], "t1");
        assert_eq!(json["gitRef"], "main");
        assert_eq!(json["leaseMs"], 1000);
        assert!(!request.effective_writable());
        let fix = SandboxRequest { mode: RunMode::Fix, ..request };
        assert!(fix.effective_writable());
        assert_eq!(ProviderKind::parse("e2b"), Some(ProviderKind::E2b));
        assert_eq!(ProviderKind::parse("docker"), None);
    }
}
