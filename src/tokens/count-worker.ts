// The thread behind src/tokens/estimator.ts: it loads the tokenizer and counts, so neither
// stalls the calls in flight on the gateway's event loop.
import { parentPort } from "node:worker_threads";
import { type CountJob, countJob } from "./count.ts";
import type { CountReply } from "./estimator.ts";

parentPort!.on("message", ({ id, job }: { id: number; job: CountJob }) => {
  let reply: CountReply;
  try {
    reply = { id, ...countJob(job) };
  } catch (err) {
    reply = { id, error: err instanceof Error ? err.message : String(err) };
  }
  parentPort!.postMessage(reply);
});
