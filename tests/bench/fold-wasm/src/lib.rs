//! The sync half of a tick, in wasm, one piece per export, for a host to
//! time (`fold.mjs` in V8, `fold.py` in wasmtime). The host writes
//! `snapshot.json` of tests/bench/tick-cpu (`{taskId, store: {key: value}}`)
//! into the buffer `input(len)` returns, calls `setup`, then times:
//!
//! - `decode_log`: `read_log`, every entry read from the store and decoded,
//!   as a cold tick's sync does (no checkpoint);
//! - `fold_log`: the engine's `fold` over the decoded entries;
//! - `load_warm`: `load` with the checkpoint present (the meta record
//!   decoded, then one probe past it), as a warm tick's sync does;
//! - `load_cold`: `load` with the checkpoint removed: decode and fold of
//!   every entry.
//!
//! Each returns a count that proves it did the work (entries, or the seq
//! reached), or 0 on failure.

use std::cell::RefCell;

use agent_zero_engine::{Entry, fold, load, log::read_log, meta_key};
use agent_zero_ports::{KeyValue, MemoryKv, block_on};

#[derive(Default)]
struct State {
    input: Vec<u8>,
    id: String,
    warm: Option<MemoryKv>,
    cold: Option<MemoryKv>,
    entries: Vec<Entry>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::default();
}

/// A buffer of `len` bytes for the host to write the snapshot into.
#[unsafe(no_mangle)]
pub extern "C" fn input(len: usize) -> *mut u8 {
    STATE.with_borrow_mut(|s| {
        s.input = vec![0; len];
        s.input.as_mut_ptr()
    })
}

/// Loads the snapshot into two stores (with and without the checkpoint);
/// the number of log entries.
#[unsafe(no_mangle)]
pub extern "C" fn setup() -> u32 {
    STATE.with_borrow_mut(|s| {
        let Ok(document) = serde_json::from_slice::<serde_json::Value>(&s.input) else { return 0 };
        let (Some(id), Some(store)) = (document["taskId"].as_str(), document["store"].as_object()) else { return 0 };
        let (warm, cold) = (MemoryKv::new(), MemoryKv::new());
        let meta = meta_key(id);
        for (key, value) in store {
            let value = value.as_str().unwrap_or_default().as_bytes();
            block_on(warm.put(key, value)).ok();
            if *key != meta {
                block_on(cold.put(key, value)).ok();
            }
        }
        s.entries = block_on(read_log(&warm, id)).ok().flatten().unwrap_or_default();
        s.id = id.to_owned();
        s.warm = Some(warm);
        s.cold = Some(cold);
        s.input = Vec::new();
        u32::try_from(s.entries.len()).unwrap_or(0)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn decode_log() -> u32 {
    STATE.with_borrow(|s| {
        let Some(kv) = &s.cold else { return 0 };
        block_on(read_log(kv, &s.id)).ok().flatten().map_or(0, |e| u32::try_from(e.len()).unwrap_or(0))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fold_log() -> u32 {
    STATE.with_borrow(|s| fold(&s.entries).ok().and_then(|r| r.seq).map_or(0, |seq| seq as u32 + 1))
}

fn load_from(kv: Option<&MemoryKv>, id: &str) -> u32 {
    let Some(kv) = kv else { return 0 };
    block_on(load(kv, id)).ok().flatten().and_then(|r| r.seq).map_or(0, |seq| seq as u32 + 1)
}

#[unsafe(no_mangle)]
pub extern "C" fn load_warm() -> u32 {
    STATE.with_borrow(|s| load_from(s.warm.as_ref(), &s.id))
}

#[unsafe(no_mangle)]
pub extern "C" fn load_cold() -> u32 {
    STATE.with_borrow(|s| load_from(s.cold.as_ref(), &s.id))
}
