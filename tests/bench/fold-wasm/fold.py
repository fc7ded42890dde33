"""Times the tick's sync pieces (src/lib.rs) in wasmtime, the Spin host's
engine (the `wasmtime` package at the Spin host's major version):

    python3 fold.py MODULE.wasm SNAPSHOT.json [ROUNDS]

Prints one JSON line per piece: the first call on a fresh instance and the
median of ROUNDS calls after it, in microseconds of this thread's CPU time
(time.thread_time_ns: wasmtime compiles ahead of time, so no background
compiler runs meanwhile).
"""

import json
import statistics
import sys
import time

import wasmtime

module_path, snapshot_path = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
data = open(snapshot_path, "rb").read()
engine = wasmtime.Engine()
module = wasmtime.Module.from_file(engine, module_path)


def timed(store, f):
    started = time.thread_time_ns()
    result = f(store)
    spent = (time.thread_time_ns() - started) / 1000
    if result == 0:
        raise SystemExit("a piece failed")
    return spent


for piece in ["decode_log", "fold_log", "load_warm", "load_cold"]:
    store = wasmtime.Store(engine)
    exports = wasmtime.Instance(store, module, []).exports(store)
    at = exports["input"](store, len(data))
    exports["memory"].write(store, data, at)
    entries = exports["setup"](store)
    if entries == 0:
        raise SystemExit("setup failed: is SNAPSHOT.json from tick-log?")
    first = timed(store, exports[piece])
    samples = [timed(store, exports[piece]) for _ in range(rounds)]
    print(json.dumps({
        "engine": "wasmtime " + getattr(wasmtime, "__version__", "48"),
        "piece": piece,
        "entries": entries,
        "firstCpuUs": round(first),
        "cpuUs": round(statistics.median(samples)),
    }))
