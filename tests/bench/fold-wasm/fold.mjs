// Times the tick's sync pieces (src/lib.rs) in node's V8, workerd's engine:
//   node fold.mjs MODULE.wasm SNAPSHOT.json [ROUNDS]
// Prints one JSON line per piece: the first call (on a fresh instance, as a
// fresh isolate runs it: Liftoff code, before tier-up) and the median of
// ROUNDS calls after it, in microseconds of wall time (performance.now:
// one thread, no I/O, so its CPU time on an idle core, more on a loaded
// one) and of process CPU (process.cpuUsage: this thread and V8's
// background compiler threads, which tier hot code up meanwhile).
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

const [modulePath, snapshotPath, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 30);
const bytes = readFileSync(snapshotPath);
const pieces = ["decode_log", "fold_log", "load_warm", "load_cold"];

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function time(f) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = f();
  const wallUs = (performance.now() - started) * 1000;
  const spent = process.cpuUsage(cpu);
  if (result === 0) throw new Error(`${f.name} failed`);
  return { wallUs, cpuUs: spent.user + spent.system };
}

// A fresh instance per piece: each piece's first call is a cold one.
for (const piece of pieces) {
  const compiled = await WebAssembly.compile(readFileSync(modulePath));
  const instance = await WebAssembly.instantiate(compiled, {});
  const e = instance.exports;
  const at = e.input(bytes.length);
  new Uint8Array(e.memory.buffer, at, bytes.length).set(bytes);
  const entries = e.setup();
  if (entries === 0) throw new Error("setup failed: is SNAPSHOT.json from tick-log?");
  const first = time(e[piece]);
  const samples = Array.from({ length: rounds }, () => time(e[piece]));
  console.log(
    JSON.stringify({
      engine: `v8 ${process.versions.v8}`,
      piece,
      entries,
      firstWallUs: Math.round(first.wallUs),
      firstCpuUs: first.cpuUs,
      wallUs: Math.round(median(samples.map((s) => s.wallUs))),
      cpuUs: Math.round(median(samples.map((s) => s.cpuUs))),
    }),
  );
}
