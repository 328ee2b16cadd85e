// The thread behind src/tokens/estimator.ts: it loads the tokenizer and counts, so neither
// stalls the calls in flight on the gateway's event loop. It counts a job by turns of a few
// milliseconds, as the gateway asks, and keeps each unfinished job's progress between them.
import { parentPort } from "node:worker_threads";
import { advance, type Counted, countSteps } from "./count.ts";
import type { CountReply, CountRequest } from "./estimator.ts";

/** the jobs counted in part, by id */
const started = new Map<number, Generator<void, Counted, undefined>>();

parentPort!.on("message", (request: CountRequest) => {
  const { id } = request;
  if ("drop" in request) {
    started.delete(id);
    return;
  }
  let reply: CountReply;
  try {
    const steps = started.get(id) ?? (request.job ? countSteps(request.job) : undefined);
    if (!steps) throw new Error(`no job ${id}`);
    const counted = advance(steps, request.ms);
    if (counted) {
      started.delete(id);
      reply = { id, ...counted };
    } else {
      started.set(id, steps);
      reply = { id, more: true };
    }
  } catch (err) {
    started.delete(id);
    reply = { id, error: err instanceof Error ? err.message : String(err) };
  }
  parentPort!.postMessage(reply);
});
