// The tick worker's entry module (wrangler.ticks.toml). tests/scripts/build-worker.sh
// copies it to build-ticks/index.js beside worker-build's bundle of the
// `ticks` role, renamed build-ticks/glue.js. As in entry.mjs, a plain
// default export calls the shim's method (see there why): this worker only
// consumes the tick queue; the routes, the cron sweep and the Durable Object
// classes are the `front` worker's (entry.mjs).
import Glue from "./glue.js";

const rust = Glue.prototype;

export default {
  queue(batch, env, ctx) {
    return rust.queue.call({ env, ctx }, batch);
  },
};
