// The front worker's entry module (the `front` role: the routes, the cron
// sweep and the Durable Object classes; the tick queue's consumer is the
// tick worker's, entry-ticks.mjs). tests/scripts/build-worker.sh copies it to
// build/index.js (wrangler.toml's `main`) beside worker-build's bundle,
// renamed build/glue.js: the wasm-bindgen glue and worker-build's shim.
//
// - A plain `export default { fetch, scheduled }`. The shim's default
//   export is a `WorkerEntrypoint` class behind a `Proxy` that wraps every
//   method call in another `Proxy` with an `async apply`: an extra promise
//   and closures per request, for a reinitialisation the glue does anyway.
//   After a trap (a panic is `abort` -> `unreachable`), the glue's abort
//   handler schedules a fresh instance and its termination check on the next
//   call into wasm builds it, whichever entry made the call. The shim's
//   methods are its class's prototype's (the class proxy traps only
//   `construct`), called here with the `env` and `ctx` they read.
// - The Durable Object classes are the shim's, proxies included: an object
//   made before a reinitialisation is rebuilt on the new instance.
// - `POST /webhooks/github`: the body and its HMAC are awaited here, natively
//   (`arrayBuffer`, then `crypto.subtle` with the key the wasm side imported),
//   and the wasm side answers in one synchronous call
//   (functions/cloudflare/src/front/intake.rs), given only the headers intake reads;
//   the entry builds the `Response` from its status, headers and body. A
//   delivery that is acted on comes back verified and parsed, and the
//   entry hands it to the async `webhookAct`, which stores it: one check,
//   one parse. What it does not take on goes to the async `fetch`, unchanged. The one answer
//   the entry gives without that call is the refusal of a wrong MAC (see
//   `claimedMac`): a refusal, never an acceptance.
import Glue, { LeaseCoordinator, TaskStore } from "./glue.js";

export { LeaseCoordinator, TaskStore };

const rust = Glue.prototype;

// `[key, limit, headers, mismatch, path]` once the async path has imported
// the webhook key: fixed for the isolate's life, like the secret it comes
// from (`mismatch`: the answer to a MAC that does not match, which has no
// inputs; `path`: intake's, under AGENT_ZERO_BASE_PATH).
let webhookKey;

// As functions/cloudflare/src/front/body.rs describes a failed read.
const describe = (error) => (typeof error === "string" ? error : error instanceof Error ? error.message : "");

// Possibly intake's path: the exact path (the base path's, without a query)
// is `webhookKey`'s, checked once it is known.
const isWebhook = (url) => url.endsWith("/webhooks/github");

// The request headers intake reads, as src/front/intake.rs takes them: each name
// and value followed by a line feed (a header value holds none).
function intakeHeaders(request, names) {
  let fields = "";
  for (const name of names) {
    const value = request.headers.get(name);
    if (value !== null) fields += `${name}\n${value}\n`;
  }
  return fields;
}

// `[status, headers, body]` from src/front/intake.rs as the arguments of the
// `Response` that src/lib.rs's `from_http` builds. Headers as a plain object
// (an array of pairs when a name repeats, as `append` would add them) and a
// text body are what workerd builds a `Response` from fastest (measured).
function prepare([status, fields, body]) {
  const parts = fields.split("\n");
  let headers = {};
  for (let i = 0; i + 1 < parts.length; i += 2) {
    if (parts[i] === "__proto__" || Object.hasOwn(headers, parts[i])) {
      headers = [];
      for (let j = 0; j + 1 < parts.length; j += 2) headers.push([parts[j], parts[j + 1]]);
      break;
    }
    headers[parts[i]] = parts[i + 1];
  }
  return [body ?? null, { status, headers }];
}

const respond = ([body, init]) => new Response(body, init);

// The answer to a wrong MAC, prepared once from `webhookKey`'s `mismatch`.
let mismatch;

// The wrong-MAC answer is the one the entry gives without the wasm side, so
// it gives it the request id and the JSON log line that src/lib.rs's
// `log_request` gives every other answer (the same fields; no secret is in
// either).
function refuseMismatch(path, started) {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  const requestId = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const [body, init] = mismatch;
  const headers = Array.isArray(init.headers) ? [...init.headers, ["x-request-id", requestId]] : { ...init.headers, "x-request-id": requestId };
  console.log(
    JSON.stringify({
      agent_zero: "request",
      request_id: requestId,
      step: `POST ${path}`,
      outcome: String(init.status),
      duration_ms: Date.now() - started,
    }),
  );
  return new Response(body, { status: init.status, headers });
}

// The MAC an `X-Hub-Signature-256` claims, when the value is exactly
// `sha256=` and 64 hex digits (what GitHub sends), else `undefined`: a strict
// subset of what the signature's parser (shared/github/src/signature.rs)
// accepts, so for such a value the wasm side would compare this MAC. The
// entry reaches it only past the checks that precede that comparison there:
// the settings' (the key exists only once the async path passed them; the
// settings are fixed for the isolate), a `Content-Length` of digits within
// the limit, and a body read within it. So when `crypto.subtle.verify`
// says it is not the body's HMAC, the wasm side's answer is `mismatch`, and
// the entry gives it without the call; when it is, this MAC is the HMAC the
// wasm side is handed. Any other value (none, malformed, several joined,
// padded) is signed and left to the wasm side's parser.
function claimedMac(value) {
  if (value === null || !/^sha256=[0-9a-fA-F]{64}$/.test(value)) return undefined;
  const mac = new Uint8Array(32);
  for (let i = 0; i < 32; i++) mac[i] = parseInt(value.substr(7 + 2 * i, 2), 16);
  return mac;
}

async function webhook(request, env, ctx) {
  const started = Date.now();
  webhookKey ??= rust.webhookKey(env);
  const declared = request.headers.get("content-length");
  // Unknown, malformed or over the limit: the async path refuses it unread.
  if (
    webhookKey === undefined ||
    new URL(request.url).pathname !== webhookKey[4] ||
    !/^[0-9]{1,15}$/.test(declared ?? "") ||
    Number(declared) > webhookKey[1]
  ) {
    return rust.fetch.call({ env, ctx }, request);
  }
  const [key, limit, names] = webhookKey;
  mismatch ??= prepare(webhookKey[3]);
  let body;
  try {
    body = await request.arrayBuffer();
  } catch (error) {
    const refusal = rust.webhookAnswer(env, intakeHeaders(request, names), undefined, undefined, describe(error));
    return refusal === undefined ? rust.fetch.call({ env, ctx }, request) : respond(prepare(refusal));
  }
  // A body over the limit is signed and left to the wasm side (413).
  let mac = body.byteLength <= limit ? claimedMac(request.headers.get("x-hub-signature-256")) : undefined;
  try {
    if (mac === undefined) mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, body));
    else if (!(await crypto.subtle.verify("HMAC", key, mac, body))) return refuseMismatch("/webhooks/github", started);
  } catch {
    // The async path verifies again (and falls back to the hmac crate).
    return rust.fetch.call({ env, ctx }, new Request(request, { body }));
  }
  const answer = rust.webhookAnswer(env, intakeHeaders(request, names), new Uint8Array(body), mac, undefined);
  if (answer === undefined) return rust.fetch.call({ env, ctx }, new Request(request, { body }));
  if (answer === null) return refuseMismatch("/webhooks/github", started);
  // A delivery acted on, verified and parsed: stored without a second check.
  return Array.isArray(answer) ? respond(prepare(answer)) : rust.webhookAct(env, answer).then((stored) => respond(prepare(stored)));
}

export default {
  fetch(request, env, ctx) {
    if (request.method === "POST" && isWebhook(request.url)) return webhook(request, env, ctx);
    return rust.fetch.call({ env, ctx }, request);
  },
  scheduled(event, env, ctx) {
    return rust.scheduled.call({ env, ctx }, event);
  },
};
