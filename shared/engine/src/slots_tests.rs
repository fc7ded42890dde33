//! The slots over both stores: a task's Durable Object (one read, one
//! transaction) and Spin's (one key per request, conditional writes).

use agent_zero_contracts::{RunMode, Trigger};
use agent_zero_ports::{Expect, KeyPage, MemoryKv, Write, block_on};

use super::*;
use crate::fact::{Entry, Fact, Stimulus, TaskInput};

const NOW: u64 = 1_000_000;

fn resident(id: &str, repository: &str) -> Resident {
    let stimulus = Stimulus {
        task_id: id.into(),
        repository: repository.into(),
        trigger: Trigger::Feedback,
        mode: RunMode::Observe,
        source: None,
        input: TaskInput::default(),
        policy: agent_zero_agent::Policy::default(),
    };
    let mut r = Resident::default();
    r.apply(&Entry { seq: 0, at_ms: NOW, facts: vec![Fact::Created { stimulus: Box::new(stimulus) }] }).unwrap();
    r
}

fn stores() -> [MemoryKv; 2] {
    [MemoryKv::new(), MemoryKv::one_key_per_request()]
}

fn bounds(max_running: u32, per_repository: u32) -> Bounds {
    Bounds { max_running, max_running_per_repository: per_repository, ..Bounds::default() }
}

fn gate_of(kv: &MemoryKv, bounds: &Bounds, r: &Resident, now: u64) -> Gate {
    block_on(gate(&Store::new(kv), bounds, r, now)).unwrap()
}

fn holders(kv: &MemoryKv, now: u64) -> Vec<(String, String)> {
    kv.snapshot()
        .into_iter()
        .filter(|(key, _)| key.starts_with(SLOTS_PREFIX))
        .filter_map(|(key, value)| holder(Some(&value), now).map(|slot| (key, slot.task_id)))
        .collect()
}

fn waits_for(gate: Gate, setting: &str) {
    match gate {
        Gate::Wait { reason, delay_ms } => {
            assert!(reason.contains(setting), "{reason}");
            assert!(delay_ms >= Bounds::default().wait_ms);
        }
        Gate::Start => panic!("started over {setting}"),
    }
}

#[test]
fn a_repository_runs_one_task_at_a_time_and_the_deployment_four() {
    for kv in stores() {
        let b = Bounds::default();
        assert_eq!(gate_of(&kv, &b, &resident("a1", "acme/app"), NOW), Gate::Start);
        // Its own tick again (a redelivery): still its slots, no second pair.
        assert_eq!(gate_of(&kv, &b, &resident("a1", "acme/app"), NOW), Gate::Start);
        assert_eq!(holders(&kv, NOW).len(), 2);
        // GitHub's names are case-insensitive: so is the repository's slot.
        waits_for(gate_of(&kv, &b, &resident("a2", "Acme/App"), NOW), "AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY");
        for n in 2..=4 {
            assert_eq!(gate_of(&kv, &b, &resident(&format!("t{n}"), &format!("acme/r{n}")), NOW), Gate::Start);
        }
        waits_for(gate_of(&kv, &b, &resident("t5", "acme/r5"), NOW), "AGENT_ZERO_MAX_RUNNING");
        assert_eq!(holders(&kv, NOW).len(), 8, "4 running slots, 4 repositories'");
    }
}

#[test]
fn a_wait_grows_with_the_time_waited_up_to_a_minute() {
    let kv = MemoryKv::new();
    let b = bounds(1, 1);
    gate_of(&kv, &b, &resident("a", "acme/app"), NOW);
    let waiting = resident("b", "acme/other");
    let delay = |now| match gate_of(&kv, &b, &waiting, now) {
        Gate::Wait { delay_ms, .. } => delay_ms,
        Gate::Start => panic!("started"),
    };
    assert_eq!(delay(NOW), b.wait_ms);
    assert_eq!(delay(NOW + 120_000), 20_000);
    assert_eq!(delay(NOW + 600_000), MAX_WAIT_MS);
}

/// A store where another task takes `key` between a gate's read and its
/// write: the race two ticks of one repository run.
struct Racing {
    kv: MemoryKv,
    key: String,
    rival: Vec<u8>,
    raced: std::cell::Cell<bool>,
}

impl Racing {
    fn interleave(&self) {
        if !self.raced.replace(true) {
            block_on(self.kv.put(&self.key, &self.rival)).unwrap();
        }
    }
}

impl KeyValue for Racing {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let value = self.kv.get(key).await;
        if key == self.key {
            self.interleave();
        }
        value
    }
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        let values = self.kv.get_many(keys).await;
        self.interleave();
        values
    }
    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        self.kv.reads_in_one_request(keys)
    }
    fn transacts(&self, keys: &[&str]) -> bool {
        self.kv.transacts(keys)
    }
    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        self.kv.transact(expect, writes).await
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.kv.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), KvError> {
        self.kv.delete(key).await
    }
    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        self.kv.list(prefix, cursor, limit).await
    }
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        self.kv.put_if_absent(key, value).await
    }
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        self.kv.compare_and_swap(key, expected, value).await
    }
}

#[test]
fn of_two_tasks_racing_for_a_repositorys_slot_one_starts() {
    for (kv, which) in stores().into_iter().zip(["the repository's", "the deployment's"]) {
        let b = bounds(4, 1);
        // The rival takes the repository's slot (or, the second time, the
        // last running slot) after the gate read it free.
        let key = if which == "the repository's" {
            repository_keys(&b, "acme/app").remove(0)
        } else {
            running_keys(&b).remove(0)
        };
        let rival =
            serde_json::to_vec(&Slot { task_id: "rival".into(), since_ms: NOW, until_ms: NOW + 60_000 }).unwrap();
        let racing = Racing { kv, key: key.clone(), rival: rival.clone(), raced: Default::default() };
        let b = if which == "the repository's" { b } else { bounds(1, 1) };
        let gated = block_on(gate(&Store::new(&racing), &b, &resident("mine", "acme/app"), NOW)).unwrap();
        assert!(
            matches!(&gated, Gate::Wait { reason, .. } if reason.contains("took a free running slot first")),
            "{gated:?}"
        );
        let held = holders(&racing.kv, NOW);
        assert_eq!(held, vec![(key, "rival".to_owned())], "the loser holds nothing, {which} slot is the rival's");
    }
}

#[test]
fn a_quiet_task_gives_its_slots_back_and_the_next_starts() {
    for kv in stores() {
        let b = bounds(4, 1);
        let first = resident("first", "acme/app");
        assert_eq!(gate_of(&kv, &b, &first, NOW), Gate::Start);
        let second = resident("second", "acme/app");
        waits_for(gate_of(&kv, &b, &second, NOW), "AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY");
        assert_eq!(block_on(release(&Store::new(&kv), &b, &first, NOW)).unwrap(), 2);
        assert_eq!(holders(&kv, NOW), vec![], "nothing held");
        assert_eq!(block_on(release(&Store::new(&kv), &b, &first, NOW)).unwrap(), 0, "released once");
        assert_eq!(gate_of(&kv, &b, &second, NOW), Gate::Start);
    }
}

#[test]
fn a_crashed_holders_slot_expires_after_its_run_could_have_ended() {
    for kv in stores() {
        let b = bounds(4, 1);
        let crashed = resident("crashed", "acme/app");
        assert_eq!(gate_of(&kv, &b, &crashed, NOW), Gate::Start);
        let timeout = crashed.stimulus.as_ref().unwrap().policy.agent.timeout_ms;
        let until = NOW + timeout + HOLD_GRACE_MS;
        let next = resident("next", "acme/app");
        waits_for(gate_of(&kv, &b, &next, until - 1), "AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY");
        assert_eq!(gate_of(&kv, &b, &next, until), Gate::Start);
        assert!(holders(&kv, until).iter().all(|(_, id)| id == "next"));
    }
}

#[test]
fn the_sweep_frees_the_slots_of_a_quiet_or_vanished_holder_and_no_other() {
    for kv in stores() {
        let b = bounds(4, 1);
        for (id, repository) in [("done", "acme/a"), ("running", "acme/b"), ("gone", "acme/c")] {
            assert_eq!(gate_of(&kv, &b, &resident(id, repository), NOW), Gate::Start);
        }
        let meta = |id: &str, quiet: bool| {
            let r = resident(id, "acme/x");
            let mut meta = crate::tick::meta_of(&r, NOW, (!quiet).then_some(NOW));
            meta.quiet = quiet;
            block_on(kv.put(&crate::store::meta_key(id), &serde_json::to_vec(&meta).unwrap())).unwrap();
        };
        meta("done", true);
        meta("running", false);
        // `gone` has no checkpoint: left alone within the grace.
        let swept = block_on(reconcile(&kv, NOW + 1, 90_000)).unwrap();
        assert_eq!(swept.freed.len(), 2, "{swept:?}");
        let held: Vec<String> = holders(&kv, NOW + 1).into_iter().map(|(_, id)| id).collect();
        assert_eq!(held.iter().filter(|id| *id == "done").count(), 0);
        assert_eq!(held.iter().filter(|id| *id == "running").count(), 2);
        assert_eq!(held.iter().filter(|id| *id == "gone").count(), 2);
        let swept = block_on(reconcile(&kv, NOW + 90_000, 90_000)).unwrap();
        assert_eq!(swept.freed.len(), 2, "past the grace: {swept:?}");
        let held: Vec<String> = holders(&kv, NOW + 90_000).into_iter().map(|(_, id)| id).collect();
        assert_eq!(held, vec!["running".to_owned(), "running".to_owned()]);
    }
}

/// The usual run: one request at each end where the store has
/// transactions; on Spin's, a read of each slot and a write of each taken
/// at the start, and no read at the end.
#[test]
fn the_usual_start_and_end_cost_what_the_store_allows() {
    for (kv, start, end) in [(MemoryKv::new(), 1, 1), (MemoryKv::one_key_per_request(), 5 + 2, 2)] {
        let (b, r) = (Bounds::default(), resident("solo", "acme/app"));
        let before = kv.operations();
        assert_eq!(gate_of(&kv, &b, &r, NOW), Gate::Start);
        assert_eq!(kv.operations() - before, start, "the start");
        let before = kv.operations();
        assert_eq!(block_on(release(&Store::new(&kv), &b, &r, NOW)).unwrap(), 2);
        assert_eq!(kv.operations() - before, end, "the end");
        assert_eq!(holders(&kv, NOW), vec![]);
    }
}

#[test]
fn a_task_holding_other_than_the_first_slots_gives_them_back_too() {
    for kv in stores() {
        let b = Bounds::default();
        let (first, second) = (resident("first", "acme/a"), resident("second", "acme/b"));
        assert_eq!(gate_of(&kv, &b, &first, NOW), Gate::Start);
        assert_eq!(gate_of(&kv, &b, &second, NOW), Gate::Start);
        block_on(release(&Store::new(&kv), &b, &second, NOW)).unwrap();
        let held: Vec<String> = holders(&kv, NOW).into_iter().map(|(_, id)| id).collect();
        assert_eq!(held, vec!["first".to_owned(), "first".to_owned()], "the second's slots are free");
    }
}
