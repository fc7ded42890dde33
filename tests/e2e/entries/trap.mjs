// A test wrapper around the worker's entry module (functions/cloudflare/entry.mjs,
// built to functions/cloudflare/build/index.js), for the e2e case
// `worker_serves_again_after_its_wasm_instance_is_terminated`. It adds one
// route, `POST /__e2e/terminate`, that makes a call into wasm end the way a
// trap does: an exception through the wasm frames (here a JS one, thrown by
// a request whose `url` getter throws; a panic is `abort` -> `unreachable`,
// a `WebAssembly.RuntimeError`). The glue then marks its instance
// terminated and, through its abort handler, schedules a fresh one; every
// other request goes to the entry unchanged.
import entry, { LeaseCoordinator, TaskStore } from "../../../functions/cloudflare/build/index.js";
import Glue from "../../../functions/cloudflare/build/glue.js";

export { LeaseCoordinator, TaskStore };

export default {
  fetch(request, env, ctx) {
    if (request.method === "POST" && new URL(request.url).pathname === "/__e2e/terminate") {
      const poisoned = {
        get url() {
          throw new Error("e2e: thrown through the wasm frames");
        },
      };
      try {
        Glue.prototype.webhookAnswer(poisoned, env, undefined, undefined, "");
      } catch (error) {
        return new Response(`terminated: ${error.message}`, { status: 500 });
      }
      return new Response("the call returned", { status: 200 });
    }
    return entry.fetch(request, env, ctx);
  },
  scheduled: entry.scheduled,
};
