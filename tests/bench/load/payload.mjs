// Writes the benchmark delivery: the real `pull_request` `closed` fixture,
// compact as GitHub sends it, its `pull_request.body` padded so the whole
// body is TARGET bytes. Prints the `X-Hub-Signature-256` value for SECRET.
// Usage: node payload.mjs FIXTURE OUT SECRET [TARGET=25600]
import { createHmac } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";

const [fixture, out, secret, target = "25600"] = process.argv.slice(2);
if (!fixture || !out || !secret) {
  console.error("usage: node payload.mjs FIXTURE OUT SECRET [TARGET]");
  process.exit(2);
}
const payload = JSON.parse(readFileSync(fixture, "utf8"));
if (payload.action !== "closed") throw new Error(`${fixture}: expected action "closed", got ${payload.action}`);
const sentence = "This change needs a careful look at the intake path and its tests. ";
const base = payload.pull_request.body ?? "";
const missing = Number(target) - Buffer.byteLength(JSON.stringify(payload));
if (missing < 0) throw new Error(`${fixture} is already larger than ${target} bytes`);
payload.pull_request.body = (base + " " + sentence.repeat(Math.ceil(missing / sentence.length))).slice(0, base.length + missing);
const body = JSON.stringify(payload);
if (Buffer.byteLength(body) !== Number(target)) throw new Error(`padding produced ${Buffer.byteLength(body)} bytes`);
writeFileSync(out, body);
process.stdout.write(`sha256=${createHmac("sha256", secret).update(body).digest("hex")}\n`);
