//! What a run cost its host: the operations counted at the host's ports
//! (key-value, leases, subrequests, time waiting on the sandbox) and the
//! model's tokens and dollars.

use serde::{Deserialize, Serialize};

/// The operations a run (or one tick of it) cost. A count left out reads
/// as 0 (a log entry stores only the counts that are not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
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
    /// The model's tokens (the run's usage; zero in a tick's own count).
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

    /// The operations of `self` not in `o` (each count at least zero); the
    /// model's figures are left out.
    #[must_use]
    pub fn operations_after(&self, o: &Self) -> Self {
        Self {
            ticks: self.ticks.saturating_sub(o.ticks),
            kv_reads: self.kv_reads.saturating_sub(o.kv_reads),
            kv_writes: self.kv_writes.saturating_sub(o.kv_writes),
            kv_lists: self.kv_lists.saturating_sub(o.kv_lists),
            kv_deletes: self.kv_deletes.saturating_sub(o.kv_deletes),
            kv_atomic: self.kv_atomic.saturating_sub(o.kv_atomic),
            lease_ops: self.lease_ops.saturating_sub(o.lease_ops),
            subrequests: self.subrequests.saturating_sub(o.subrequests),
            github_requests: self.github_requests.saturating_sub(o.github_requests),
            model_requests: self.model_requests.saturating_sub(o.model_requests),
            sandbox_requests: self.sandbox_requests.saturating_sub(o.sandbox_requests),
            sandbox_ms: self.sandbox_ms.saturating_sub(o.sandbox_ms),
            ..Self::default()
        }
    }

    /// Every storage operation (key-value, atomic and lease).
    pub fn storage_ops(&self) -> u64 {
        self.kv_reads + self.kv_writes + self.kv_lists + self.kv_deletes + self.kv_atomic + self.lease_ops
    }

    /// These operations with the model's figures of `usage`.
    #[must_use]
    pub fn with_usage(&self, usage: &crate::Usage) -> Self {
        Self {
            model_input_tokens: usage.input_tokens,
            model_output_tokens: usage.output_tokens,
            model_cost_usd: usage.cost_usd,
            ..*self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cost written into a checkpoint and read back is the same float, so
    /// a run folded across ticks sums to what one fold of its log does
    /// (`agent-zero replay`, receipts). serde_json reads these back one ulp
    /// off without its `float_roundtrip` feature (the workspace turns it on).
    #[test]
    fn a_cost_read_back_is_the_cost_written() {
        let mut sum = 0.0_f64;
        for step in [0.003_909, 1.1e-6, 3.0e-7, 0.000_042, 0.003_909, 0.003_909] {
            sum += step;
            let written = RunCost { model_cost_usd: Some(sum), ..RunCost::default() };
            let text = serde_json::to_string(&written).unwrap();
            let read: RunCost = agent_zero_codecs::json::from_str(&text).unwrap();
            assert_eq!(read.model_cost_usd.map(f64::to_bits), Some(sum.to_bits()), "{text}");
        }
        for text in ["1.4000000000000001e-6", "0.011727000000000001"] {
            let value: f64 = agent_zero_codecs::json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&value).unwrap(), text, "{text} reads back as itself");
        }
    }

    #[test]
    fn adds_subtracts_and_takes_the_model_figures_from_usage() {
        let tick =
            RunCost { ticks: 1, kv_reads: 3, kv_atomic: 1, subrequests: 2, github_requests: 2, ..RunCost::default() };
        let two = tick.add(&tick);
        assert_eq!((two.ticks, two.kv_reads, two.storage_ops(), two.model_cost_usd), (2, 6, 8, None));
        assert_eq!(two.operations_after(&tick), tick);
        assert_eq!(tick.operations_after(&two), RunCost::default());
        let usage = crate::Usage { input_tokens: 10, output_tokens: 2, latency_ms: 5, cost_usd: Some(0.5) };
        let priced = two.with_usage(&usage);
        assert_eq!((priced.model_input_tokens, priced.model_output_tokens, priced.model_cost_usd), (10, 2, Some(0.5)));
        assert_eq!(priced.add(&tick).model_cost_usd, Some(0.5));
        assert_eq!(priced.operations_after(&tick).model_cost_usd, None);
    }
}
