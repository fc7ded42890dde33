"""Markdown tables for tests/bench/cost.sh from its raw measurements.

    report.py tick TICKS.tsv FOLD.jsonl [OPS.json]
    report.py workerd WORKERD.tsv
    report.py cold COLD.tsv FRONT_BUILD TICKS_BUILD SPIN_DIR

Medians throughout; times in milliseconds unless a column says otherwise.
"""

import gzip
import json
import os
import statistics
import sys


def rows(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def med(values):
    return statistics.median(values) if values else float("nan")


def ms(us):
    return f"{us / 1000:.2f}"


def gzip_kib(path):
    with open(path, "rb") as f:
        return f"{len(gzip.compress(f.read(), 9)) / 1024:.0f} KiB"


def app_ops(ops_path):
    with open(ops_path) as f:
        ops = json.load(f)
    kinds = ["get", "put", "delete", "list", "insert", "cas"]
    print("## Intake and a tick at the app's key-value port, by store\n")
    print("Counted by `tick-log` while the app's own code wrote the log: the labelled issue's intake"
          " (`POST /webhooks/github`), and the last admission retry (a warm tick whose state does not change, so"
          " the listing index is not rewritten). The store is the one each key goes to on Cloudflare; on Spin"
          " every operation is its one store's (an insert there is several of the store's own operations).\n")
    print("| | Durable Object get/put/delete/list/insert/cas | Workers KV get/put/delete/list | all |")
    print("|---|---|---|---:|")
    for label, key in [("intake of a labelled issue", "intake"), ("a warm tick (admission retry)", "tick")]:
        got = ops[key]
        do = "/".join(str(got.get(f"durableObject.{k}", 0)) for k in kinds)
        kv = "/".join(str(got.get(f"workersKv.{k}", 0)) for k in kinds[:4])
        print(f"| {label} | {do} | {kv} | {sum(got.values())} |")
    print()


def tick(ticks_path, fold_path):
    data = rows(ticks_path)
    lengths = sorted({int(r[1]) for r in data if r[0] == "tick"})
    log_bytes = {int(r[1]): int(r[2]) for r in data if r[0] == "log"}
    # Every tick-component invocation of a round, in order: one for a warm
    # tick; for a cold one on a log longer than a rebuild's chunk, one per
    # chunk, then the tick's own.
    invocations = {}
    for r in data:
        if r[0] == "tick":
            invocations.setdefault((int(r[1]), r[2]), {}).setdefault(r[3], []).append(json.loads(r[4]))
    # Per round, its longest invocation: what one invocation costs at most.
    runs = {key: [max(got, key=lambda i: i["handlerCpuUs"]) for got in by_round.values()]
            for key, by_round in invocations.items()}
    rounds = max((len(v) for v in runs.values()), default=0)
    print("## One tick's CPU in the wasm build (the Spin tick component, wasmtime 48, our Spin host)\n")
    print(f"Thread CPU time of the tick component's invocation (its handler: the guest and the host calls it makes),"
          f" medians of {rounds} round(s); instantiation apart. The tick is one more admission attempt"
          " (sync, claim, one GitHub request answered 503, commit, yield).\n")
    print("Of the tick's CPU, `store` is the work of the host's store (this host's file per key, under its lock:"
          " a write is a temporary file and a rename), which a platform replaces with its own (SQLite on Spin, the"
          " Durable Object on Cloudflare); `guest` is the rest, median of each round's difference: the component's"
          " code and the calls into the host around it. Warm: the checkpoint (`task/{id}/meta`) present, as after"
          " every committed tick; cold: removed, so the tick reads, decodes and folds every entry, a chunk of at"
          " most `MAX_FOLD_PER_TICK` (256) entries per invocation: the cold figures are each round's longest"
          " invocation, and the last column all of a round's invocations together.\n")
    print("| log entries | entries' bytes | warm tick | store (ops) | guest | cold tick (longest invocation) | store (ops) | guest | cold: invocations, CPU of all | instantiation (wall / CPU) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def cell(got, key):
        return f"{ms(med([r[key] for r in got]))} ms"

    def guest(got):
        return f"{ms(med([r['handlerCpuUs'] - r['storeCpuUs'] for r in got]))} ms"

    def all_of(n):
        by_round = invocations.get((n, "cold"), {}).values()
        if not by_round:
            return "—"
        count = med([len(got) for got in by_round])
        return f"{count:.0f}, {ms(med([sum(i['handlerCpuUs'] for i in got) for got in by_round]))} ms"

    for n in lengths:
        warm = runs.get((n, "warm"), [])
        cold = runs.get((n, "cold"), [])
        both = warm + cold
        print(f"| {n:,} | {log_bytes.get(n, 0):,}"
              f" | {cell(warm, 'handlerCpuUs')} | {cell(warm, 'storeCpuUs')} ({med([r['storeOps'] for r in warm]):.0f})"
              f" | **{guest(warm)}**"
              f" | {cell(cold, 'handlerCpuUs')} | {cell(cold, 'storeCpuUs')} ({med([r['storeOps'] for r in cold]):.0f})"
              f" | **{guest(cold)}**"
              f" | {all_of(n)}"
              f" | {cell(both, 'instantiateUs')} / {cell(both, 'instantiateCpuUs')} |")
    fronts = [json.loads(r[2]) for r in data if r[0] == "front"]
    if fronts:
        print(f"\nThe HTTP component's invocations meanwhile (health, the sweeps that re-drove the tick):"
              f" {ms(med([f['handlerCpuUs'] for f in fronts]))} ms CPU median over {len(fronts)}.")

    pieces = {}
    with open(fold_path) as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                pieces[(d["engine"].split()[0], d["entries"], d["piece"])] = d
    print("\n## The tick's sync alone, in wasm (tests/bench/fold-wasm, the product's release profile)\n")
    print("The engine's own read path over an in-memory store: `decode` reads and decodes every entry, `fold` folds"
          " the decoded entries, `warm sync` decodes the checkpoint (and probes past it), `cold sync` is `load`"
          " without a checkpoint (decode and fold of every entry). wasmtime: this thread's CPU, median of 30 calls"
          " after the first; V8 (node): wall time of one thread, median of 30 after the first, and the first call on"
          " a fresh instance (Liftoff code, as a fresh isolate runs it).\n")
    print("| entries | engine | decode | fold | warm sync | cold sync | cold sync, first call |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n in sorted({k[1] for k in pieces}):
        for engine, key, first in [("wasmtime", "cpuUs", "firstCpuUs"), ("v8", "wallUs", "firstWallUs")]:
            got = {p: pieces.get((engine, n, p)) for p in ["decode_log", "fold_log", "load_warm", "load_cold"]}
            if not all(got.values()):
                continue
            print(f"| {n:,} | {got['decode_log']['engine']} | {ms(got['decode_log'][key])} ms | {ms(got['fold_log'][key])} ms"
                  f" | {ms(got['load_warm'][key])} ms | {ms(got['load_cold'][key])} ms | {ms(got['load_cold'][first])} ms |")
    print()


def workerd(path):
    data = [r for r in rows(path) if r[0] == "workerd"]
    runs = {}
    for r in data:
        runs.setdefault((int(r[1]), r[2]), []).append((int(r[4]), int(r[5])))
    rounds = max((len(v) for v in runs.values()), default=0)
    print("## One tick on workerd (both workers under `wrangler dev --local`)\n")
    print("CPU of the workerd process running the workers (the tick worker's isolate, the front worker's with the"
          " task's Durable Object, and Miniflare's local KV and queue) across the measured sweep and the tick it"
          " re-drove, less a sweep alone (1.3 s window); medians of"
          f" {rounds} round(s). An upper bound on the tick worker's own CPU, which workerd does not report per"
          " isolate locally.\n")
    print("| log entries | sweep alone | warm tick | cold tick |")
    print("|---:|---:|---:|---:|")
    for n in sorted({k[0] for k in runs}):
        warm, cold = runs.get((n, "warm"), []), runs.get((n, "cold"), [])
        sweeps = [s for s, _ in warm + cold]
        tick = lambda got: f"{ms(med([t - s for s, t in got]))} ms" if got else "—"
        print(f"| {n:,} | {ms(med(sweeps))} ms | {tick(warm)} | {tick(cold)} |")
    print()


def cold(cold_path, front_build, ticks_build, spin_dir):
    data = rows(cold_path)
    wrangler = {}
    for r in data:
        if r[0] == "wrangler":
            wrangler.setdefault(r[1], []).append((int(r[3]), int(r[4]), int(r[5]), int(r[6])))
    rounds = max((len(v) for v in wrangler.values()), default=0)
    print("## Cold start on workerd (`wrangler dev --local`, started afresh)\n")
    print(f"From spawning `wrangler dev` to its first HTTP answer (`GET /api/v1/health`; the tick worker has no"
          f" fetch handler, so it answers 500 once its script loaded), medians of {rounds} round(s). The trivial"
          " TypeScript worker is wrangler's and workerd's own start: the difference is what our artefact adds."
          " First request: wrangler's own timing of it (workerd loads the script into a fresh isolate, compiling"
          " the wasm, then serves it); next: the same isolate again.\n")
    print("| artefact | wasm gzip | first answer | over the trivial worker | first request | next requests |")
    print("|---|---:|---:|---:|---:|---:|")
    base = med([w[0] for w in wrangler.get("ts", [])])
    labels = {"ts": ("trivial TS worker (tests/bench/ts-worker)", None),
              "front": ("front worker (wrangler.toml)", os.path.join(front_build, "index_bg.wasm")),
              "ticks": ("tick worker (wrangler.ticks.toml)", os.path.join(ticks_build, "index_bg.wasm"))}
    for name in ["front", "ticks", "ts"]:
        if name not in wrangler:
            continue
        label, wasm = labels[name]
        answered = med([w[0] for w in wrangler[name]])
        first = med([w[1] for w in wrangler[name]])
        following = med([w[2] for w in wrangler[name]] + [w[3] for w in wrangler[name]])
        print(f"| {label} | {gzip_kib(wasm) if wasm else '—'} | {answered:.0f} ms"
              f" | {'—' if name == 'ts' else f'{answered - base:+.0f} ms'} | {first:.0f} ms | {following:.0f} ms |")

    starts = [int(r[2]) for r in data if r[0] == "spin-start"]
    compiles = {}
    for r in data:
        if r[0] == "spin-compile":
            d = json.loads(r[2])
            compiles.setdefault(d["component"], []).append(d["compileMs"])
    requests = {}
    for r in data:
        if r[0] == "spin-request":
            d = json.loads(r[2])
            requests.setdefault(d["component"], []).append(d)
    print("\n## Cold start on Spin (our Spin host: wasmtime 48, Cranelift)\n")
    print(f"The host compiles each component once at start (as `spin up` does before serving), then instantiates a"
          f" fresh instance per request, as Spin does. Host start to first answer: {med(starts) / 1000:.0f} ms"
          f" (median of {len(starts)}), both components compiled in it.\n")
    print("| component | gzip | compile at start | instantiation per request (wall) | its CPU | `GET /api/v1/health` handler CPU |")
    print("|---|---:|---:|---:|---:|---:|")
    files = {"agent-zero": "agent_zero_spin.wasm", "agent-zero-ticks": "agent_zero_spin_ticks.wasm"}
    for component, file in files.items():
        got = requests.get(component, [])
        handler = f"{ms(med([g['handlerCpuUs'] for g in got]))} ms" if got else "— (private: see the tick table)"
        inst = f"{ms(med([g['instantiateUs'] for g in got]))} ms" if got else "see the tick table"
        inst_cpu = f"{ms(med([g['instantiateCpuUs'] for g in got]))} ms" if got else "—"
        print(f"| {component} | {gzip_kib(os.path.join(spin_dir, file))} | {med(compiles.get(component, [])):.0f} ms"
              f" | {inst} | {inst_cpu} | {handler} |")
    print()


if __name__ == "__main__":
    if sys.argv[1] == "tick":
        if len(sys.argv) > 4:
            app_ops(sys.argv[4])
        tick(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "workerd":
        workerd(sys.argv[2])
    elif sys.argv[1] == "cold":
        cold(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        raise SystemExit(__doc__)
