//! What a run cost its host, as every report words it: the figures are
//! numbers only (no recorded text), so Markdown and HTML show one string.

use agent_zero_contracts::RunCost;

use crate::format::{count, duration, thousands};

/// What the figures cover: every format says it beside them.
pub(crate) const COVERED: &str = "Counted at the host's ports by each tick up to its commit, through the tick that \
concluded the run. A commit's own writes are counted with the next tick, so the concluding commit's writes and the \
publication that follows are not included here.";

/// `14 ticks · 237 storage operations (150 reads, …) · 33 subrequests (…) · sandbox time 1.2 s`.
pub(crate) fn figures(c: &RunCost) -> String {
    let n = |v: u64, one: &str, many: &str| count(v as usize, one, many);
    format!(
        "{} · {} ({}, {}, {}, {}, {} atomic, {} lease) · {} ({} GitHub, {} model, {} sandbox) · sandbox time {}",
        n(c.ticks, "tick", "ticks"),
        n(c.storage_ops(), "storage operation", "storage operations"),
        n(c.kv_reads, "read", "reads"),
        n(c.kv_writes, "write", "writes"),
        n(c.kv_lists, "list", "lists"),
        n(c.kv_deletes, "delete", "deletes"),
        thousands(c.kv_atomic),
        thousands(c.lease_ops),
        n(c.subrequests, "subrequest", "subrequests"),
        thousands(c.github_requests),
        thousands(c.model_requests),
        thousands(c.sandbox_requests),
        duration(c.sandbox_ms)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_every_figure() {
        let c = RunCost {
            ticks: 14,
            kv_reads: 151,
            kv_writes: 40,
            kv_lists: 1,
            kv_deletes: 13,
            kv_atomic: 28,
            lease_ops: 4,
            subrequests: 33,
            github_requests: 21,
            model_requests: 2,
            sandbox_requests: 10,
            sandbox_ms: 1_250,
            ..RunCost::default()
        };
        assert_eq!(
            figures(&c),
            "14 ticks · 237 storage operations (151 reads, 40 writes, 1 list, 13 deletes, 28 atomic, 4 lease) · \
33 subrequests (21 GitHub, 2 model, 10 sandbox) · sandbox time 1.2 s"
        );
    }
}
