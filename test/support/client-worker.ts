// Runs a client's chat calls in a worker thread: its own event loop, as a client process has.
// A client sharing the gateway's loop only runs between the gateway's steps, which hides races
// on the wire, e.g. the gateway closing a connection while the client is still writing to it.
import { once } from "node:events";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import OpenAI, { APIError } from "openai";

export interface ClientRun {
  /** fetch, the `openai` SDK without retries, or the SDK with its default retries */
  client: "fetch" | "sdk" | "sdk-default-retries";
  /** ending in /v1 */
  baseURL: string;
  apiKey: string;
  model: string;
  /** length of the one user message */
  contentLength: number;
  /** calls made one after the other */
  calls: number;
  timeoutMs: number;
}

/**
 * Makes `run.calls` chat calls from a worker; one outcome per call: "<status> <error code>" for
 * an HTTP answer, or what the client reported instead (e.g. a connection error and its cause).
 */
export async function callFromWorker(run: ClientRun): Promise<string[]> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { clientRun: run } });
  try {
    const [outcomes] = (await once(worker, "message")) as [string[]];
    return outcomes;
  } finally {
    await worker.terminate();
  }
}

function failure(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  return `${e.constructor.name}: ${e.message} (${e.cause?.code ?? e.cause?.message ?? "no cause"})`;
}

async function call(run: ClientRun, body: string, sdk: OpenAI | undefined): Promise<string> {
  try {
    if (sdk) {
      await sdk.chat.completions.create(JSON.parse(body));
      return "200";
    }
    const res = await fetch(`${run.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${run.apiKey}`, "content-type": "application/json" },
      body,
      signal: AbortSignal.timeout(run.timeoutMs),
    });
    const answer = (await res.json()) as { error?: { code?: string } };
    return `${res.status} ${answer.error?.code}`;
  } catch (err) {
    if (err instanceof APIError && err.status !== undefined) return `${err.status} ${err.code}`;
    return failure(err);
  }
}

async function runCalls(run: ClientRun): Promise<string[]> {
  const body = JSON.stringify({
    model: run.model,
    messages: [{ role: "user", content: "x".repeat(run.contentLength) }],
  });
  const sdk =
    run.client === "fetch"
      ? undefined
      : new OpenAI({
          apiKey: run.apiKey,
          baseURL: run.baseURL,
          timeout: run.timeoutMs,
          ...(run.client === "sdk" ? { maxRetries: 0 } : {}),
        });
  const outcomes: string[] = [];
  for (let i = 0; i < run.calls; i++) outcomes.push(await call(run, body, sdk));
  return outcomes;
}

const clientRun = isMainThread ? undefined : (workerData as { clientRun?: ClientRun } | null)?.clientRun;
if (clientRun) parentPort!.postMessage(await runCalls(clientRun));
