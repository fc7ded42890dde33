// The tick worker's entry module (wrangler.ticks.toml). tests/scripts/build-worker.sh
// copies it to build-ticks/index.js beside worker-build's bundle of the
// `ticks` role, renamed build-ticks/glue.js. As in entry.mjs, a plain
// default export calls the shim's method (see there why): this worker only
// consumes the tick queue; the routes, the cron sweep and the Durable Object
// classes are the `front` worker's (entry.mjs).
import Glue from "./glue.js";

const rust = Glue.prototype;

export default {
  // One structured line per invocation with its wall time: what the
  // platform's wall clock per Queues invocation is checked against
  // (Workers Logs in production; the end-to-end harness reads it locally).
  // It carries the fields of the app's own lines (src/lib.rs, one per tick,
  // whose request id is the message id): `request_id` here is the batch's
  // first message id.
  async queue(batch, env, ctx) {
    const started = Date.now();
    let outcome = "ok";
    try {
      return await rust.queue.call({ env, ctx }, batch);
    } catch (error) {
      outcome = "error";
      throw error;
    } finally {
      const wallMs = Date.now() - started;
      console.log(
        JSON.stringify({
          agent_zero: "queue-invocation",
          request_id: batch.messages[0]?.id ?? "",
          step: "queue",
          outcome,
          duration_ms: wallMs,
          agentZero: "queue-invocation",
          messages: batch.messages.length,
          wallMs,
        }),
      );
    }
  },
};
