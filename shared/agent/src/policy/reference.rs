//! The reference's settings that mean something else, or nothing, at the
//! edge: a `.agent-zero.yml` written for the reference (its
//! `.agent-zero.example.yml`, which its `zero init` copies) is accepted,
//! and what the edge cannot honour is reported as a [`PolicyWarning`] in
//! the run's evidence instead of being silently dropped.
//!
//! - `runner.isolation: container` asks for an isolated execution boundary:
//!   writes then need a sandbox that reports itself isolated
//!   (`autofix.requireIsolated`), whatever else the file says.
//! - `runner.isolation: local`, `engine`, `image`, `workdir`, `cpus`,
//!   `memory` and `network` configure the reference's local container
//!   runner; the operator's hosted sandbox decides them here.
//! - `model.provider: claude-code | codex-cli` drive a local CLI: the model
//!   layer refuses them when a run asks, and the operator's fallback
//!   provider answers instead.

use serde::Serialize;

use super::Policy;

/// Where the reference runs repository commands (`runner.isolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum RunnerIsolation {
    /// On the reference's host: no edge meaning (every command runs in the
    /// hosted sandbox).
    Local,
    /// In a container: at the edge, writes need an isolated sandbox.
    Container,
}

/// The container engine the reference drives (`runner.engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ContainerEngine {
    Docker,
    Podman,
}

/// A setting of the file the edge does not honour as written, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PolicyWarning {
    /// The field path (`runner.engine`).
    pub field: String,
    /// What the edge does instead.
    pub message: String,
}

const SANDBOX_DECIDES: &str = "configures the reference's local container runner; ignored at the edge, \
                               where every command runs in the operator's hosted sandbox, which decides it";

impl Policy {
    /// What this policy asks that the edge does not honour as written, in
    /// field order. Empty for a policy written for the edge.
    pub fn warnings(&self) -> Vec<PolicyWarning> {
        let runner = &self.runner;
        let mut warnings = Vec::new();
        let mut warn = |field: &str, message: &str| {
            warnings.push(PolicyWarning { field: field.to_owned(), message: message.to_owned() });
        };
        if runner.isolation == Some(RunnerIsolation::Local) {
            warn(
                "runner.isolation",
                "`local` runs commands on the reference's host; ignored at the edge, where every command runs \
                 in the operator's hosted sandbox",
            );
        }
        let set = [
            ("runner.engine", runner.engine.is_some()),
            ("runner.image", runner.image.is_some()),
            ("runner.workdir", runner.workdir.is_some()),
            ("runner.cpus", runner.cpus.is_some()),
            ("runner.memory", runner.memory.is_some()),
            ("runner.network", runner.network.is_some()),
        ];
        for (field, _) in set.iter().filter(|(_, set)| *set) {
            warn(field, SANDBOX_DECIDES);
        }
        if self.model.provider.needs_subprocess() {
            warn(
                "model.provider",
                &format!(
                    "`{}` drives a local CLI, which the edge cannot start; each model call is refused and the \
                     operator's fallback provider (AGENT_ZERO_MODEL_FALLBACK_PROVIDER) answers instead",
                    self.model.provider
                ),
            );
        }
        warnings
    }

    /// Applies the settings that have an edge meaning (called by the parser).
    pub(super) fn map_reference_fields(&mut self) {
        if self.runner.isolation == Some(RunnerIsolation::Container) {
            self.autofix.require_isolated = true;
        }
    }
}
