// Turns the raw files of tests/bench/run.sh into the markdown report:
// medians over rounds, and ratios as medians of the per-round ratios (rounds
// alternate the workers, so each round's pair shares the machine's state);
// with several runs (BENCH_RUNS), each figure is the median of the runs'
// medians, and a table shows each run's headline ratios.
// Prints it and writes it to --out. Exits 1 when a round saw an answer other
// than 202 or a socket error (the figures would not be for the same work).
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const clk = Number(args.clk ?? 100);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fields = (text) => Object.fromEntries([...text.matchAll(/(\w+)=([\d.]+)/g)].map(([, k, v]) => [k, Number(v)]));
const fmt = (x, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : "n/a");
const int = (x) => Math.round(x).toLocaleString("en-US");

// --- intake rounds ---
const LABELS = {
  rust: "Rust worker (wasm)",
  ts: "TypeScript worker (issue 20's job: verify, parse, checks, one KV put)",
  "ts-nokv": "TypeScript worker, the same without the KV put (equal storage: none)",
  "ts-noop": "floor: TS, no-op (dev stack)",
  "rust-401": "Rust worker, wrong signature (401: verify only)",
  "ts-401": "TypeScript worker, wrong signature (401: verify only)",
};
const problems = [];
const bySize = {}; // bySize[bytes][run][round][name] = metrics
for (const line of readFileSync(args.rounds, "utf8").split("\n").filter(Boolean)) {
  const [run, round, size, name, ...rest] = line.split("\t");
  const f = fields(rest.join(" "));
  if (f.other > 0 || f.socket_errors > 0 || f.accepted !== f.requests) {
    problems.push(
      `run ${run}, round ${round}, ${size} bytes, ${name}: ${f.other} unexpected answers, ${f.socket_errors} socket errors`,
    );
  }
  const seconds = f.duration_us / 1e6;
  (((bySize[size] ??= {})[run] ??= {})[round] ??= {})[name] = {
    rps: f.accepted / seconds,
    p50: f.p50_us / 1e3,
    p90: f.p90_us / 1e3,
    p99: f.p99_us / 1e3,
    cpu: (f.worker_ticks * 1000) / clk / f.accepted,
    stack: (f.stack_ticks * 1000) / clk / f.accepted,
    requests: f.accepted,
  };
}
const sizes = Object.keys(bySize).map(Number).sort((a, b) => a - b);
const runsOf = (size) => Object.values(bySize[size]).map((run) => Object.values(run));
const roundsOf = (size) => runsOf(size).flat();
// The median over runs of each run's median over its rounds of `fn(round)`;
// `runs` narrows it to some runs (one, for the per-run table).
const overRuns = (size, fn, runs = runsOf(size)) =>
  median(runs.map((rounds) => median(rounds.map(fn).filter(Number.isFinite))).filter(Number.isFinite));
const med = (size, name, key) => overRuns(size, (r) => (r[name] ? r[name][key] : NaN));
const ratio = (size, fn, runs) => overRuns(size, fn, runs);
// A worker's own CPU: above the no-op floor (the dev stack reading the body).
const handler = (size, name) => overRuns(size, (r) => r[name].cpu - r["ts-noop"].cpu);
const label = (bytes) =>
  bytes >= 1024 * 1024 ? `${fmt(bytes / 1024 / 1024, 1)} MiB` : `${fmt(bytes / 1024, 0)} KiB`;

const natives = {};
for (const match of (args.native ? readFileSync(args.native, "utf8") : "").matchAll(/^BENCH native .*$/gm)) {
  const f = fields(match[0]);
  natives[f.bytes] = f;
}

const out = [];
const p = (s = "") => out.push(s);
const cpuModel = cpus()[0]?.model ?? "unknown CPU";
const runCount = Math.max(...sizes.map((size) => runsOf(size).length));
const roundCount = Math.max(...sizes.flatMap((size) => runsOf(size).map((rounds) => rounds.length)));
p("## Benchmarks (tests/bench/run.sh)");
p();
p(
  `Machine: ${cpus().length} cores (${cpuModel}), shared with other work (load average at start: ${args.load ?? "n/a"}). ` +
    `\`wrangler dev --local\` (wrangler ${args.wrangler ?? "?"}), wrk 1 thread, ${args.connections} connections, ` +
    `${runCount === 1 ? "" : `${runCount} runs (the workers started afresh for each) of `}` +
    `${roundCount} alternating rounds of ${args.duration} s per case and size; bodies of ` +
    `${sizes.map((b) => `${int(b)}`).join(", ")} bytes (\`pull_request\` \`closed\` fixture, padded), ` +
    "a distinct `X-GitHub-Delivery` per request. Medians over rounds; ratios are medians of the per-round ratios" +
    (runCount === 1 ? "." : "; each figure is the median of the runs' medians."),
);
p();
p("### Rust / TypeScript at every payload size");
p();
p(
  "TS is issue 20's job (one KV put per delivery); \"equal storage\" is TS without the put, as the Rust worker " +
    "answers an ignored delivery without storage.",
);
p();
p(
  "| Payload | throughput, Rust / TS | (equal storage) | CPU per request (workerd), TS / Rust | (equal storage) | " +
    "401 path throughput, Rust / TS | 401 path CPU, TS / Rust |",
);
p("|---|---:|---:|---:|---:|---:|---:|");
for (const size of sizes) {
  p(
    `| ${label(size)} | ${fmt(ratio(size, (r) => r.rust.rps / r.ts.rps))}x | ` +
      `${fmt(ratio(size, (r) => r.rust.rps / r["ts-nokv"].rps))}x | ` +
      `${fmt(ratio(size, (r) => r.ts.cpu / r.rust.cpu))}x | ` +
      `${fmt(ratio(size, (r) => r["ts-nokv"].cpu / r.rust.cpu))}x | ` +
      `${fmt(ratio(size, (r) => r["rust-401"].rps / r["ts-401"].rps))}x | ` +
      `${fmt(ratio(size, (r) => r["ts-401"].cpu / r["rust-401"].cpu))}x |`,
  );
}
p();
if (runCount > 1) {
  p("Each run's medians (throughput Rust / TS, CPU TS / Rust; the 401 path's the same):");
  p();
  p("| Payload | Run | throughput | CPU | 401 throughput | 401 CPU |");
  p("|---|---:|---:|---:|---:|---:|");
  for (const size of sizes) {
    runsOf(size).forEach((rounds, i) => {
      const one = (fn) => `${fmt(ratio(size, fn, [rounds]))}x`;
      p(
        `| ${label(size)} | ${i + 1} | ${one((r) => r.rust.rps / r.ts.rps)} | ${one((r) => r.ts.cpu / r.rust.cpu)} | ` +
          `${one((r) => r["rust-401"].rps / r["ts-401"].rps)} | ${one((r) => r["ts-401"].cpu / r["rust-401"].cpu)} |`,
      );
    });
  }
  p();
}
p("### Cost against payload size (chart-ready)");
p();
p(
  "| Payload bytes | Rust CPU ms/req | TS CPU ms/req | TS without the put, CPU ms/req | " +
    "Rust above the no-op floor, µs | TS without the put above the no-op floor, µs | " +
    "Rust 401 CPU ms/req | TS 401 CPU ms/req | native verify + parse, µs |",
);
p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const size of sizes) {
  p(
    `| ${size} | ${fmt(med(size, "rust", "cpu"), 3)} | ${fmt(med(size, "ts", "cpu"), 3)} | ` +
      `${fmt(med(size, "ts-nokv", "cpu"), 3)} | ` +
      `${fmt(handler(size, "rust") * 1e3, 0)} | ${fmt(handler(size, "ts-nokv") * 1e3, 0)} | ` +
      `${fmt(med(size, "rust-401", "cpu"), 3)} | ${fmt(med(size, "ts-401", "cpu"), 3)} | ` +
      `${fmt((natives[size]?.floor_ns ?? NaN) / 1e3, 1)} |`,
  );
}
p();
for (const size of sizes) {
  p(`### Intake, ${label(size)} (${int(size)} bytes)`);
  p();
  p("| Worker | req/s | p50 ms | p90 ms | p99 ms | CPU ms/req, worker's workerd (estimate) | CPU ms/req, whole dev stack (estimate) |");
  p("|---|---:|---:|---:|---:|---:|---:|");
  for (const name of Object.keys(LABELS)) {
    if (!roundsOf(size).some((r) => r[name])) continue;
    p(
      `| ${LABELS[name]} | ${fmt(med(size, name, "rps"), 0)} | ${fmt(med(size, name, "p50"), 1)} | ` +
        `${fmt(med(size, name, "p90"), 1)} | ${fmt(med(size, name, "p99"), 1)} | ${fmt(med(size, name, "cpu"), 3)} | ` +
        `${fmt(med(size, name, "stack"), 3)} |`,
    );
  }
  p();
  p(`| Ratio (median of per-round ratios${runCount === 1 ? "" : ", then of the runs"}) | Value |`);
  p("|---|---:|");
  p(`| throughput, Rust / TS | ${fmt(ratio(size, (r) => r.rust.rps / r.ts.rps))}x |`);
  p(`| throughput, Rust / TS without the put (equal storage) | ${fmt(ratio(size, (r) => r.rust.rps / r["ts-nokv"].rps))}x |`);
  p(`| p50 latency, TS / Rust | ${fmt(ratio(size, (r) => r.ts.p50 / r.rust.p50))}x |`);
  p(`| p99 latency, TS / Rust | ${fmt(ratio(size, (r) => r.ts.p99 / r.rust.p99))}x |`);
  p(`| CPU per request (workerd), TS / Rust | ${fmt(ratio(size, (r) => r.ts.cpu / r.rust.cpu))}x |`);
  p(`| CPU per request (workerd), TS without the put / Rust | ${fmt(ratio(size, (r) => r["ts-nokv"].cpu / r.rust.cpu))}x |`);
  p(`| 401 path (verify only): throughput, Rust / TS | ${fmt(ratio(size, (r) => r["rust-401"].rps / r["ts-401"].rps))}x |`);
  p(`| 401 path (verify only): CPU per request, TS / Rust | ${fmt(ratio(size, (r) => r["ts-401"].cpu / r["rust-401"].cpu))}x |`);
  p(`| CPU above the no-op floor, Rust | ${fmt(handler(size, "rust") * 1e3, 0)} µs/req (estimate) |`);
  p(`| CPU above the no-op floor, TS without the put | ${fmt(handler(size, "ts-nokv") * 1e3, 0)} µs/req (estimate) |`);
  p();
}
p(
  "CPU is utime+stime of the workerd process that runs the worker (`/proc/PID/stat`), across a round, over the " +
    "requests answered; `wrangler dev` reports no CPU time. It includes workerd's HTTP handling and its local KV " +
    "simulation (SQLite), which the TS rows with and without the put isolate; \"whole dev stack\" adds wrangler's proxy workerd and node. " +
    "Clock-tick resolution is 1/" + clk + " s per round. The 401 rows send a wrong signature: body read, " +
    "HMAC-SHA256 and an error answer, with no KV and no parse, so they show each worker's own cost without the KV " +
    "simulation.",
);
p();
const finish = () => {
  if (problems.length) {
    p();
    p("**Warning: some rounds did not do the compared work:**");
    for (const problem of problems) p(`- ${problem}`);
  }
  const text = out.join("\n") + "\n";
  process.stdout.write(text);
  writeFileSync(args.out, text);
  process.exit(problems.length ? 1 : 0);
};
// run.sh's BENCH_INTAKE_ONLY=1: the intake rounds only.
if (!args.native) finish();

p("### Native floor (`cargo bench -p agent-zero-github --bench intake`, same bodies)");
p();
p("| Step | " + sizes.map(label).join(" | ") + " |");
p("|---|" + sizes.map(() => "---:").join("|") + "|");
const row = (text, key) => p(`| ${text} | ${sizes.map((size) => `${fmt((natives[size]?.[key] ?? NaN) / 1e3)} µs`).join(" | ")} |`);
row("HMAC-SHA256 verify (`agent_zero_github::verify`)", "verify_ns");
row("`parse_delivery` (what the handler parses for `closed`)", "parse_ns");
row("verify + `parse_delivery`: the floor", "floor_ns");
row("full `serde_json::Value` parse (what `JSON.parse` builds)", "value_parse_ns");
p(
  "| Rust worker CPU above the no-op floor / native floor | " +
    sizes.map((size) => `${fmt((handler(size, "rust") * 1e6) / (natives[size]?.floor_ns ?? NaN), 1)}x`).join(" | ") +
    " |",
);
p();

// --- sizes ---
p("### Sizes");
p();
p("| Artefact | Path | Bytes | gzip -9 |");
p("|---|---|---:|---:|");
for (const line of readFileSync(args.sizes, "utf8").split("\n").filter(Boolean)) {
  const [label, path, raw, gz] = line.split("\t");
  p(`| ${label} | \`${path}\` | ${int(Number(raw))} | ${int(Number(gz))} |`);
}
p();

// --- task-run costs ---
p("### KV operations and subrequests per task run");
p();
const costs = readFileSync(args.costs, "utf8");
const totals = costs.match(/totals: kv ops (\d+), subrequests (\d+)/);
const perTick = costs.match(/ticks: (\d+); max kv ops per tick: (\d+)/);
if (totals && perTick) {
  p(`Measured (runtime harness, \`per_tick_cost_is_bounded\`: fix run, one repair): ${perTick[1]} ticks, ` +
    `${totals[1]} KV operations, ${totals[2]} subrequests in total; at most ${perTick[2]} KV operations in one tick.`);
} else if (perTick) {
  p(`Measured (runtime harness, \`per_tick_cost_is_bounded\`: fix run, one repair): ${perTick[1]} ticks, at most ` +
    `${perTick[2]} KV operations per tick (so at most ${Number(perTick[1]) * Number(perTick[2])} in total; the test ` +
    "prints no totals).");
} else {
  p("The runtime cost test did not run; figures below are the documented model only.");
}
p();
p("Documented model (`shared/engine/README.md` \"Cost model\", quoted, not measured here): warm tick = 7 KV " +
  "operations, at most 4 subrequests + 1 enqueue; cold tick at most 55 KV operations; \"a full fix run: 13 ticks " +
  "(1 repair: 17), ≈ 90 KV ops in total\"; Cloudflare allows 1,000 KV operations and 50 subrequests per invocation.");

finish();
