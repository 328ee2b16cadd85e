// The thread behind src/tokens/estimator.ts: it loads the tokenizer and counts, so neither
// stalls the calls in flight on the gateway's event loop.
import { parentPort } from "node:worker_threads";
import { countPromptTokens, countText } from "./count.ts";
import type { CountJob, CountReply } from "./estimator.ts";

parentPort!.on("message", ({ id, job }: { id: number; job: CountJob }) => {
  let reply: CountReply;
  try {
    reply = {
      id,
      prompt: job.messages ? countPromptTokens(job.messages, job.extra) : 0,
      completion: countText(job.text ?? ""),
    };
  } catch (err) {
    reply = { id, error: err instanceof Error ? err.message : String(err) };
  }
  parentPort!.postMessage(reply);
});
