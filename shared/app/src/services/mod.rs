//! Adapters from the runtime's narrow ports to the real services: models
//! over outbound HTTP, the runner pool over the configured sandbox
//! provider, and the forges (GitHub; GitLab; Gitea and Forgejo). Built per tick from operator
//! configuration and the task's own policy snapshot.

mod admission;
mod decide;
mod decider;
mod forge;
mod forge_of;
mod gitea;
mod gitlab;
mod publishing;
mod sandbox;
mod workspace;

pub(crate) use admission::Gate;
pub(crate) use decider::ModelDecider;
pub(crate) use forge::GitHubForge;
pub(crate) use forge_of::ForgeOf;
#[cfg(test)]
pub(crate) use gitea::gate as admit_gitea;
pub(crate) use gitea::{GiteaCheckout, GiteaForge};
#[cfg(test)]
pub(crate) use gitlab::gate as admit_gitlab;
pub(crate) use gitlab::{GitLabCheckout, GitLabForge};
pub(crate) use sandbox::{AnySandbox, SandboxChoice, built_sandboxes, pool_config, sandbox_choice};
#[cfg(test)]
pub(crate) use workspace::CheckoutPort;
pub(crate) use workspace::{GitHubCheckout, PoolWorkspace};
