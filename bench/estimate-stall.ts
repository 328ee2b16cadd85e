// node bench/estimate-stall.ts: how long the event loop stalls while the gateway estimates
// usage locally, as it does for a call its client cancels or its upstream cut off and for
// /v1/messages/count_tokens. Counted on the event loop (src/tokens/count.ts, as before) and
// through the estimator's worker thread (src/tokens/estimator.ts, as the relay does now); each
// for the first count of a process (the tokenizer loads) and for a coding agent's long prompt.
// The worker runs first: the in-thread rows would otherwise leave the tokenizer loaded in it.

import { readdirSync, readFileSync } from "node:fs";
import { type CountJob, countPromptTokens } from "../src/tokens/count.ts";
import { TokenEstimator } from "../src/tokens/estimator.ts";
import { longestStall } from "../test/support/event-loop.ts";

/** about 240K tokens of code and prose, as a coding agent's conversation grows to */
const source = (file: string) => readFileSync(new URL(`../${file}`, import.meta.url), "utf8");
// the decision records (docs/decisions/), in order: the prose this prompt has always held
const decisions = readdirSync(new URL("../docs/decisions/", import.meta.url))
  .filter((name) => /^\d{4}-.*\.md$/.test(name))
  .sort()
  .map((name) => source(`docs/decisions/${name}`))
  .join("\n");
const long = `${source("src/ledger/redis-ledger.ts").repeat(20)}${decisions.repeat(3)}`;
const prompt = (text: string): CountJob => ({
  messages: [
    { role: "system", content: "You are a coding agent." },
    { role: "user", content: text },
  ],
});

async function measure(label: string, count: (job: CountJob) => Promise<number>, job: CountJob) {
  const rss = process.memoryUsage().rss;
  const started = performance.now();
  const { value: tokens, stall } = await longestStall(() => count(job));
  const ms = performance.now() - started - 40;
  const grew = (process.memoryUsage().rss - rss) / 2 ** 20;
  console.log(
    `${label.padEnd(30)} ${String(tokens).padStart(7)} tokens  ${ms.toFixed(0).padStart(4)} ms` +
      `  longest stall ${stall.toFixed(1).padStart(6)} ms  RSS ${grew >= 0 ? "+" : ""}${grew.toFixed(0)} MB`,
  );
}

const estimator = new TokenEstimator();
const viaWorker = async (job: CountJob) => (await estimator.count(job)).prompt;
const here = async (job: CountJob) => countPromptTokens(job.messages ?? []);

await measure("worker: first count", viaWorker, prompt("hello"));
await measure("worker: 240K-token prompt", viaWorker, prompt(long));
await estimator.close();
await measure("event loop: first count", here, prompt("hello"));
await measure("event loop: 240K-token prompt", here, prompt(long));
