//! A metered tick records what it cost in the entry it commits, first
//! among its facts; the conclusion's evidence adds those counts up through
//! its own tick (with the run's usage), and a replay of the log rebuilds
//! exactly that. Unmetered ticks record nothing and conclude with no cost.

mod harness;

use std::cell::Cell;

use agent_zero_contracts::{RunCost, RunMode, TerminalState};
use agent_zero_engine::{Fact, TickOutcome};
use agent_zero_ports::{Clock, block_on};
use harness::*;

/// Each tick of the driven task "costs" a distinct count, from a counter
/// the engine reads just before its commit.
fn drive_metered(h: &Harness) -> (Option<TickOutcome>, u64) {
    let calls = Cell::new(0u64);
    let counted = || {
        calls.set(calls.get() + 1);
        RunCost { ticks: 1, kv_reads: calls.get(), subrequests: 2, github_requests: 2, ..RunCost::default() }
    };
    let mut last = None;
    loop {
        let next = h.queue.messages.borrow_mut().pop_front();
        let Some((tick, delay)) = next else { break };
        h.clock.advance(delay + h.tick_cost_ms);
        let report = block_on(h.engine().tick_metered(&tick, h.clock.now_ms(), Some(&counted))).expect("tick");
        last = Some(report.outcome);
    }
    (last, calls.get())
}

#[test]
fn each_tick_records_its_cost_and_the_evidence_adds_them_up_to_the_conclusion() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.create(stimulus("t-metered", RunMode::Fix, policy(FIX_POLICY)));
    let (outcome, calls) = drive_metered(&h);
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Completed)));
    let entries = block_on(agent_zero_engine::log::read_log(&h.kv, "t-metered")).unwrap().unwrap();
    let costs: Vec<RunCost> = entries[1..]
        .iter()
        .map(|e| match &e.facts[0] {
            Fact::Metered { cost } => *cost,
            other => panic!("entry {} starts with {other:?}", e.seq),
        })
        .collect();
    assert_eq!(costs.len() as u64, calls, "one count per committed tick");
    assert!(entries.iter().all(|e| e.facts.iter().filter(|f| matches!(f, Fact::Metered { .. })).count() <= 1));

    let at = entries.iter().position(|e| e.facts.iter().any(|f| matches!(f, Fact::Concluded { .. }))).unwrap();
    let Some(Fact::Concluded { evidence, .. }) = entries[at].facts.iter().find(|f| matches!(f, Fact::Concluded { .. }))
    else {
        unreachable!()
    };
    let cost = evidence.cost.expect("a metered run's evidence has its cost");
    // The ticks through the concluding one: 1 + 2 + … + at reads.
    let through = at as u64;
    assert_eq!((cost.ticks, cost.kv_reads, cost.subrequests), (through, through * (through + 1) / 2, 2 * through));
    assert!(through < calls, "the publication ticks follow the conclusion");
    assert_eq!((cost.model_input_tokens, cost.model_cost_usd), (evidence.usage.input_tokens, evidence.usage.cost_usd));
    assert!(cost.model_input_tokens > 0);

    // The replay rebuilds the conclusion, cost included, from the facts.
    let replay = agent_zero_engine::log::replay(&entries).unwrap();
    let (rebuilt, recorded) = (replay.rebuilt.unwrap(), replay.recorded.unwrap());
    assert_eq!(rebuilt.1, recorded.1);
    assert_eq!(replay.resident.cost.map(|c| c.ticks), Some(calls));
}

#[test]
fn unmetered_ticks_record_no_cost() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.run(stimulus("t-unmetered", RunMode::Fix, policy(FIX_POLICY)));
    let entries = block_on(agent_zero_engine::log::read_log(&h.kv, "t-unmetered")).unwrap().unwrap();
    assert!(!entries.iter().flat_map(|e| &e.facts).any(|f| matches!(f, Fact::Metered { .. })));
    let r = h.load("t-unmetered");
    assert_eq!(r.cost, None);
    assert_eq!(r.conclusion.concluded.as_ref().unwrap().1.cost, None);
}
