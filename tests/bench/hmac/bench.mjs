// HMAC-SHA256 verify of a webhook body: the worker's wasm `hmac`+`sha2`
// (built from ./src) against WebCrypto `crypto.subtle.verify`, in one V8.
// Usage: node bench.mjs <module.wasm> [sizes...]. Prints one markdown row
// per size: median microseconds per verify of each, and their ratio.
// Both include what a worker would pay: wasm copies the body into linear
// memory first (the worker does that anyway, to parse it); subtle awaits
// a promise. Indicative on a shared machine.
import { readFileSync } from "node:fs";
import { webcrypto as crypto } from "node:crypto";

const [wasmPath, ...sizeArgs] = process.argv.slice(2);
const sizes = sizeArgs.length ? sizeArgs.map(Number) : [28672, 265216, 2621440];
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath));
const { memory, alloc, verify } = instance.exports;
const secret = new TextEncoder().encode("bench-webhook-secret");
const key = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function time(fn, iterations) {
  const samples = [];
  for (let round = 0; round < 7; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1000 / iterations);
  }
  return median(samples);
}

console.log("| body bytes | wasm sha2 (µs) | crypto.subtle (µs) | sha2 / subtle |");
console.log("|---:|---:|---:|---:|");
for (const size of sizes) {
  const body = new Uint8Array(size);
  for (let i = 0; i < size; i++) body[i] = 32 + ((i * 7) % 90);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, body));
  const keyPtr = alloc(secret.length);
  const bodyPtr = alloc(size);
  const macPtr = alloc(32);
  new Uint8Array(memory.buffer, keyPtr, secret.length).set(secret);
  new Uint8Array(memory.buffer, macPtr, 32).set(mac);
  const wasm = () => {
    new Uint8Array(memory.buffer, bodyPtr, size).set(body);
    if (verify(keyPtr, secret.length, bodyPtr, size, macPtr) !== 1) throw new Error("wasm verify failed");
  };
  const subtle = async () => {
    if (!(await crypto.subtle.verify("HMAC", key, mac, body))) throw new Error("subtle verify failed");
  };
  const iterations = Math.max(3, Math.round(20_000_000 / size));
  await time(wasm, 3);
  await time(subtle, 3);
  const w = await time(wasm, iterations);
  const s = await time(subtle, iterations);
  console.log(`| ${size} | ${w.toFixed(1)} | ${s.toFixed(1)} | ${(w / s).toFixed(2)}x |`);
}
