// The TypeScript Worker the intake benchmark compares against: the intake job
// issue 20 names, as a hand-written TS webhook receiver does it, in the Rust
// worker's order (shared/app/src/routes/webhooks.rs): configuration -> size ->
// signature over the raw bytes (WebCrypto, constant time) -> headers ->
// JSON.parse -> field checks -> the answer recorded (ONE KV put, keyed by the
// delivery). No redelivery `get`: GitHub keeps its own delivery log.
// Modes (a var) for reading the figures:
// - BENCH_MODE=nokv: the same job minus storage (no put). This is what the
//   Rust worker does for a delivery it does not act on (ping, ignored
//   actions): it answers from the body and the settings alone, so this is the
//   equal-storage comparison.
// - BENCH_MODE=noop: answers 202 after reading the body (the dev stack alone).

interface KVNamespace {
  put(key: string, value: string): Promise<void>;
}

interface Env {
  KV: KVNamespace;
  GITHUB_WEBHOOK_SECRET?: string;
  BENCH_MODE?: string;
}

const MAX_BODY_BYTES = 25 * 1024 * 1024;
const PROACTIVE_ACTIONS = ["opened", "reopened", "synchronize", "ready_for_review"];
const encoder = new TextEncoder();
const decoder = new TextDecoder();

let cachedKey: { secret: string; key: CryptoKey } | undefined;

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

function error(status: number, code: string, message: string): Response {
  return json(status, { error: { code, message } });
}

async function hmacKey(secret: string): Promise<CryptoKey> {
  if (cachedKey?.secret !== secret) {
    const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "verify",
    ]);
    cachedKey = { secret, key };
  }
  return cachedKey.key;
}

function hexToBytes(hex: string): Uint8Array | undefined {
  if (hex.length !== 64 || !/^[0-9a-fA-F]+$/.test(hex)) return undefined;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

async function verify(secret: string, header: string | null, body: ArrayBuffer): Promise<boolean> {
  const value = header?.trim() ?? "";
  if (!value.startsWith("sha256=")) return false;
  const expected = hexToBytes(value.slice("sha256=".length));
  if (!expected) return false;
  return crypto.subtle.verify("HMAC", await hmacKey(secret), expected, body);
}

function deliveryKey(delivery: string): string {
  const clean = [...delivery].filter((c) => /[A-Za-z0-9-]/.test(c)).slice(0, 100).join("");
  return `delivery/github/gh-${clean}`;
}

async function intake(request: Request, env: Env): Promise<Response> {
  const secret = env.GITHUB_WEBHOOK_SECRET;
  if (!secret) return error(503, "not-configured", "GITHUB_WEBHOOK_SECRET is not set");
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) return error(413, "payload-too-large", "webhook body is too large");
  const body = await request.arrayBuffer();
  if (body.byteLength > MAX_BODY_BYTES) return error(413, "payload-too-large", "webhook body is too large");
  if (env.BENCH_MODE === "noop") return json(202, { ignored: true, reason: "noop" });

  if (!(await verify(secret, request.headers.get("x-hub-signature-256"), body))) {
    return error(401, "unauthorized", "signature rejected");
  }
  const contentType = request.headers.get("content-type") ?? "";
  if (contentType.split(";")[0].trim().toLowerCase() !== "application/json") {
    return error(400, "invalid-request", "content type is not supported");
  }
  const event = request.headers.get("x-github-event");
  if (!event) return error(400, "invalid-request", "missing X-GitHub-Event header");
  const delivery = request.headers.get("x-github-delivery");
  if (!delivery || delivery.length > 64 || !/^[A-Za-z0-9-]+$/.test(delivery)) {
    return error(400, "invalid-request", "invalid X-GitHub-Delivery header");
  }

  let payload: { action?: unknown };
  try {
    payload = JSON.parse(decoder.decode(body));
  } catch (e) {
    return error(400, "invalid-request", `invalid ${event} payload: ${(e as Error).message}`);
  }
  const action = typeof payload.action === "string" ? payload.action : "";
  if (event === "pull_request" && PROACTIVE_ACTIONS.includes(action)) {
    // The Rust worker would create a task here; the benchmark never sends these.
    return error(501, "not-implemented", "the benchmark worker only ignores deliveries");
  }
  const answer = {
    ignored: true,
    reason: "unsupported-action",
    message: `${event} action \`${action}\` is not handled`,
  };
  if (env.BENCH_MODE !== "nokv") await env.KV.put(deliveryKey(delivery), JSON.stringify(answer));
  return json(202, answer);
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/api/v1/health") return json(200, { status: "ok" });
    if (url.pathname === "/webhooks/github" && request.method === "POST") return intake(request, env);
    return error(404, "not-found", "no such route");
  },
};
