// Samples the V8 CPU profile of a worker running in `wrangler dev` through
// its inspector port, while something else drives load, and prints the
// functions with the most self time. Build the worker with its name section
// (CARGO_PROFILE_RELEASE_STRIP=false tests/scripts/build-worker.sh) to see
// Rust function names instead of wasm-function[N].
// Usage: node profile.mjs INSPECTOR_PORT SECONDS [TOP=40]
import { createRequire } from "node:module";

const require = createRequire(new URL("../../node/package.json", import.meta.url));
const WebSocket = require("ws");

const [port, seconds, top = "40"] = process.argv.slice(2);
if (!port || !seconds) {
  console.error("usage: node profile.mjs INSPECTOR_PORT SECONDS [TOP]");
  process.exit(2);
}
const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
const target = targets.find((t) => t.webSocketDebuggerUrl);
if (!target) throw new Error(`no inspectable target on port ${port}: ${JSON.stringify(targets)}`);

const socket = new WebSocket(target.webSocketDebuggerUrl);
await new Promise((resolve, reject) => socket.on("open", resolve).on("error", reject));
let next = 0;
const waiting = new Map();
socket.on("message", (data) => {
  const message = JSON.parse(data);
  if (message.id && waiting.has(message.id)) {
    waiting.get(message.id)(message);
    waiting.delete(message.id);
  }
});
const call = (method, params = {}) =>
  new Promise((resolve) => {
    const id = ++next;
    waiting.set(id, resolve);
    socket.send(JSON.stringify({ id, method, params }));
  });

await call("Profiler.enable");
await call("Profiler.setSamplingInterval", { interval: 100 });
await call("Profiler.start");
await new Promise((r) => setTimeout(r, Number(seconds) * 1000));
const { result, error } = await call("Profiler.stop");
socket.close();
if (error) throw new Error(JSON.stringify(error));

const { nodes, samples, timeDeltas } = result.profile;
const byId = new Map(nodes.map((n) => [n.id, n]));
const self = new Map();
let total = 0;
samples.forEach((id, i) => {
  const node = byId.get(id);
  const frame = node.callFrame;
  const where = frame.url ? `${frame.url.split("/").pop()}:${frame.lineNumber + 1}:${frame.columnNumber + 1}` : "";
  const name = `${frame.functionName || "(anonymous)"} ${frame.url.endsWith(".js") ? where : frame.url.split("/").pop()}`.trim();
  const dt = timeDeltas[i] ?? 0;
  self.set(name, (self.get(name) ?? 0) + dt);
  total += dt;
});
const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(top));
console.log(`total sampled: ${(total / 1000).toFixed(1)} ms`);
for (const [name, us] of rows) {
  console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(1).padStart(8)} ms  ${name.slice(0, 150)}`);
}
