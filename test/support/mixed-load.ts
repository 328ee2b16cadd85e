// A reproducible mixed load against a real gateway, and the accounting invariants checked
// afterwards. Shared by test/invariants.test.ts (200 requests at once) and bench/soak.ts
// (10,000 requests through a bounded pool).
//
// The load: several accounts (some with small quotas, explicit or from a small plan) and
// several keys each (some with small limits), and requests of every kind the relay has a
// path for, drawn from a seeded PRNG: plain JSON, streams with and without usage, an
// upstream 500, an upstream that never answers (first-byte timeout), streams that stall
// (idle timeout) or drop mid-way, a JSON answer whose connection drops, an upstream without
// usage, clients that hang up before the answer or after the first chunk, and calls to a
// model whose first deployment always fails (answered after a failover, or straight by the
// second once the first cools down). Small limits run out along the way, so over-limit and
// over-quota refusals happen on their own. With `messagesShare`, that share of the requests
// is sent as Anthropic Messages API calls instead (POST /v1/messages, translated to the
// mock, or native to an Anthropic mock where it can play the kind), over the same keys.
//
// The invariants, for every key and account: the records' total_tokens add up to the stored
// used_tokens, the ledger agrees with the store, nothing is reserved any more, and used stays
// within the quota and the limit. Every request has exactly one record, and each record is
// consistent with what the client saw.
//
// A share of the requests may speak OpenAI's Responses API (POST /v1/responses, the same
// kinds but the hang-up before the answer, whose record could not be told from another's:
// a Responses body has no `seed` to tie its record to it) through the same pipeline. Both
// shares may be set: one load of all three APIs at once over the same keys.
import type { IncomingMessage, Server } from "node:http";
import type { Kysely } from "kysely";
import { Agent, type Dispatcher, fetch } from "undici";
import type { ConfigInput } from "../../src/config/schema.ts";
import type { Counter } from "../../src/ledger/types.ts";
import type { CallRecord } from "../../src/records/call-record.ts";
import type { Database } from "../../src/store/schema.ts";
import { countText } from "../../src/tokens/count.ts";
import { TEST_MODEL, type TestGateway, testConfig } from "./gateway.ts";
import type { MockUpstream } from "./mock-openai-upstream.ts";

// ---------------------------------------------------------------------------
// Kinds of request
// ---------------------------------------------------------------------------

export const REQUEST_KINDS = [
  "json",
  "json-no-usage",
  "stream",
  "stream-usage",
  "stream-no-usage",
  "upstream-500",
  "upstream-timeout",
  "json-drop",
  "stream-stall",
  "stream-drop",
  "abort-before-answer",
  "abort-mid-stream",
  "failover",
] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

/** relative frequency of each kind */
const WEIGHTS: Record<RequestKind, number> = {
  json: 4,
  "json-no-usage": 1,
  stream: 2,
  "stream-usage": 2,
  "stream-no-usage": 1,
  "upstream-500": 1,
  "upstream-timeout": 1,
  "json-drop": 1,
  "stream-stall": 1,
  "stream-drop": 1,
  "abort-before-answer": 1,
  "abort-mid-stream": 1,
  failover: 2,
};
const WEIGHT_SUM = REQUEST_KINDS.reduce((sum, k) => sum + WEIGHTS[k], 0);

/** The kind at `point` (0 ≤ point < WEIGHT_SUM) of the weighted line. */
function pickKind(point: number): RequestKind {
  let rest = point;
  for (const kind of REQUEST_KINDS) {
    rest -= WEIGHTS[kind];
    if (rest < 0) return kind;
  }
  return REQUEST_KINDS[0];
}

/**
 * A model of two deployments on the mock: the first's provider asks the mock to fail every
 * call (503), the second answers. Its calls fail over, so their records hold a failed
 * attempt that must not be charged.
 */
export const FAILOVER_MODEL = "gpt-failover";
/** The invariant suites' subjects: 4 accounts of 3 keys, small quotas of 600 and limits of 300. */
export const INVARIANT_SUBJECTS = {
  accounts: 4,
  keysPerAccount: 3,
  smallQuota: 600,
  smallLimit: 300,
} as const;
/** The invariant suites' upstream: quick, streams a chunk every 2 ms, keeps no requests. */
export const INVARIANT_UPSTREAM = { latencyMs: 5, chunkDelayMs: 2, record: false } as const;

/** The plan whose quota is small: its accounts have no quota of their own (quota_tokens null). */
export const SMALL_PLAN = "small";

// ---------------------------------------------------------------------------
// Seeded PRNG (mulberry32)
// ---------------------------------------------------------------------------

export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seed from the environment variable, or a fresh one (print it). */
export function seedFrom(raw: string | undefined): number {
  if (raw !== undefined && raw !== "") {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new Error(`bad seed "${raw}"`);
    return n;
  }
  return Math.floor(Math.random() * 0xffffffff);
}

// ---------------------------------------------------------------------------
// Gateway configuration for the load
// ---------------------------------------------------------------------------

export interface LoadConfigOptions {
  /** the small plan's quota */
  smallPlanQuota: number;
  /** an Anthropic mock: the model NATIVE_MODEL on it, for Messages API calls sent natively */
  anthropic?: MockUpstream;
  /** upstream timeouts, small so that hangs and stalls end fast */
  timeouts?: { connect_ms: number; first_byte_ms: number; idle_ms: number; total_ms: number };
  logLevel?: ConfigInput["log_level"];
}

/** the most a record's end may trail the upstream timeout that ended its call, on a starved machine */
const TIMEOUT_TO_RECORD_MS = 100;

export const FAST_TIMEOUTS = { connect_ms: 1_000, first_byte_ms: 400, idle_ms: 400, total_ms: 5_000 };

/** The model on the Anthropic mock (LoadConfigOptions.anthropic), which Messages calls reach natively. */
export const NATIVE_MODEL = "claude-load";

/** Overrides for startTestGateway: short upstream timeouts and a plan with a small quota. */
/** USD per million tokens of the load's models. */
export const LOAD_PRICES = {
  [TEST_MODEL]: { input: 2.5, output: 10, cached_input: 1.25, cache_write: 3.125 },
  [FAILOVER_MODEL]: { input: 0.15, output: 0.6, cached_input: 0.075 },
} as const;

export function loadConfig(upstream: MockUpstream, options: LoadConfigOptions): Partial<ConfigInput> {
  const base = testConfig(upstream);
  const timeouts = options.timeouts ?? FAST_TIMEOUTS;
  const providers = base.providers.map((p) => (p.type === "openai-compatible" ? { ...p, timeouts } : p));
  const mock = providers.find((p) => p.id === "mock");
  if (mock?.type !== "openai-compatible") throw new Error("the load needs the mock upstream's provider");
  const native = options.anthropic ? [NATIVE_MODEL] : [];
  return {
    log_level: options.logLevel ?? "warn",
    providers: [
      ...providers,
      { ...mock, id: "mock-failing", headers: { "x-mock-directives": "mock:status=503" } },
      ...(options.anthropic
        ? [
            {
              id: "anthropic-mock",
              type: "anthropic" as const,
              base_url: options.anthropic.url,
              api_key_env: "MOCK_UPSTREAM_KEY",
              timeouts,
            },
          ]
        : []),
    ],
    models: [
      // Priced, so the books in money are checked beside the tokens: the models at different
      // prices, cache reads and writes priced apart from fresh input.
      ...base.models.map((m) => (m.id === TEST_MODEL ? { ...m, pricing: LOAD_PRICES[TEST_MODEL] } : m)),
      ...native.map((id) => ({
        id,
        provider: "anthropic-mock",
        upstream_model: "claude-mock",
        max_output_tokens: 256,
        pricing: { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 },
      })),
      {
        id: FAILOVER_MODEL,
        pricing: LOAD_PRICES[FAILOVER_MODEL],
        routing: "ordered",
        max_output_tokens: 256,
        deployments: [
          { provider: "mock-failing", upstream_model: "mock-model-failing" },
          // not TEST_MODEL's deployment (mock/mock-model), whose failures the load provokes
          { provider: "mock", upstream_model: "mock-model-b" },
        ],
      },
    ],
    plans: [
      ...base.plans.map((p) =>
        p.id === "default" ? { ...p, models: [...p.models!, FAILOVER_MODEL, ...native] } : p,
      ),
      {
        id: SMALL_PLAN,
        quota_tokens: options.smallPlanQuota,
        models: [TEST_MODEL, FAILOVER_MODEL, ...native],
      },
    ],
  };
}

// ---------------------------------------------------------------------------
// Accounts and keys
// ---------------------------------------------------------------------------

export interface AccountSubject {
  id: string;
  name: string;
  plan: string;
  /** the account's own quota; null: the plan's */
  quota: number | null;
}

export interface KeySubject {
  id: string;
  accountId: string;
  secret: string;
  /** null: no limit of its own */
  limit: number | null;
  /** the key has no limit and its account's quota cannot run out */
  open: boolean;
}

export interface Subjects {
  accounts: AccountSubject[];
  keys: KeySubject[];
}

export interface SubjectOptions {
  accounts: number;
  keysPerAccount: number;
  /** explicit quota of the small-quota accounts */
  smallQuota: number;
  /** limit of the small-limit keys */
  smallLimit: number;
  /** prefix of the account names */
  label?: string;
}

/**
 * Accounts cycle through three shapes: no effective quota (the default plan's billion), a
 * small quota of their own, and the small plan's quota (quota_tokens null). Keys alternate
 * between no limit and a small limit. Account 0, key 0 is always fully open.
 */
export async function createSubjects(gw: LoadTarget, options: SubjectOptions): Promise<Subjects> {
  const accounts: AccountSubject[] = [];
  const keys: KeySubject[] = [];
  for (let a = 0; a < options.accounts; a++) {
    const shape = a % 3;
    const plan = shape === 2 ? SMALL_PLAN : "default";
    const quota = shape === 1 ? options.smallQuota : null;
    const name = `${options.label ?? "load"}-${a}`;
    const id = await gw.account(name, { plan, quota });
    accounts.push({ id, name, plan, quota });
    for (let k = 0; k < options.keysPerAccount; k++) {
      const limit = k % 2 === 1 ? options.smallLimit : null;
      const key = await gw.key(id, { name: `${name}-k${k}`, limit });
      keys.push({
        id: key.id,
        accountId: id,
        secret: key.secret,
        limit,
        open: shape === 0 && limit === null,
      });
    }
  }
  return { accounts, keys };
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/** The client APIs the load speaks. */
export type LoadApi = "chat.completions" | "messages" | "responses";

const API_PATHS: Record<LoadApi, string> = {
  "chat.completions": "chat/completions",
  messages: "messages",
  responses: "responses",
};

export interface PlannedRequest {
  index: number;
  kind: RequestKind;
  /** the client API it is sent in */
  api: LoadApi;
  key: KeySubject;
  stream: boolean;
  body: Record<string, unknown>;
  /** abort-before-answer: ms after the gateway received the request */
  abortAfterMs: number | undefined;
}

export interface PlanOptions {
  /** the share (0 to 1) of the requests sent as Messages API calls; default none */
  messagesShare?: number;
  /** the share (0 to 1) of the requests sent to POST /v1/responses; default none */
  responsesShare?: number;
  /** send the Messages calls that the Anthropic mock can play to NATIVE_MODEL (half of them) */
  native?: boolean;
  /**
   * Give every way a request can go (chat completions, and the Responses API, the Messages
   * API translated and natively where asked for) every kind twice on an open key before the
   * draws, as a chat-only load gives its kinds: a load of several APIs then takes every path
   * in each whatever the seed, where a share of a third left a native JSON answer to chance.
   */
  everyWay?: boolean;
}

/** A way a request can go: its API, and for Messages whether it goes to the Anthropic mock. */
interface Way {
  api: LoadApi;
  native: boolean;
}

/** The kinds the Anthropic mock can play (it has no mock:no-usage or mock:hang-after). */
const NATIVE_KINDS: ReadonlySet<RequestKind> = new Set<RequestKind>([
  "json",
  "stream",
  "stream-usage",
  "upstream-500",
  "upstream-timeout",
  "json-drop",
  "stream-drop",
  "abort-before-answer",
]);

/**
 * Messages has no `seed`: a Messages request's index travels in `temperature` (index / this),
 * which its record keeps as the seed of a chat request is kept.
 */
const INDEX_SCALE = 100_000;

/** A chat request's body as the same request in the Messages API. */
function messagesBody(index: number, chat: Record<string, unknown>, model: string): Record<string, unknown> {
  const [system, user] = chat.messages as { content: string }[];
  return {
    model,
    max_tokens: chat.max_tokens ?? chat.max_completion_tokens,
    system: system!.content,
    messages: [{ role: "user", content: user!.content }],
    temperature: index / INDEX_SCALE,
    ...(chat.stream ? { stream: true } : {}),
  };
}

/**
 * The requests of one run, all drawn from the seed. The first two of every kind (of every
 * kind in every way, with `everyWay`) go to a fully open key, so every kind happens at least
 * twice however the limits run out.
 */
export function planRequests(
  seed: number,
  count: number,
  subjects: Subjects,
  options: PlanOptions = {},
): PlannedRequest[] {
  const responsesShare = options.responsesShare ?? 0;
  const random = prng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const open = subjects.keys.filter((k) => k.open);
  if (!open.length) throw new Error("the load needs at least one open key (account 0, key 0)");
  const planned: PlannedRequest[] = [];
  const ways: readonly Way[] | undefined = options.everyWay
    ? [
        { api: "chat.completions", native: false },
        ...(responsesShare > 0 ? [{ api: "responses" as const, native: false }] : []),
        ...(options.messagesShare ? [{ api: "messages" as const, native: false }] : []),
        ...(options.messagesShare && options.native ? [{ api: "messages" as const, native: true }] : []),
      ]
    : undefined;
  /** every kind twice, once as JSON and once streamed where it goes either way */
  const round = REQUEST_KINDS.length * 2;
  const guaranteed = round * (ways?.length ?? 1);
  for (let index = 0; index < count; index++) {
    let kind: RequestKind;
    let key: KeySubject;
    const way = index < guaranteed ? ways?.[Math.floor(index / round)] : undefined;
    if (index < guaranteed) {
      kind = REQUEST_KINDS[index % REQUEST_KINDS.length]!;
      key = open[index % open.length]!;
    } else {
      kind = pickKind(random() * WEIGHT_SUM);
      key = subjects.keys[Math.floor(random() * subjects.keys.length)]!;
    }
    // kinds that go either way: the guaranteed pair is one JSON call and one stream
    const either = () => (index < guaranteed ? index % round >= REQUEST_KINDS.length : random() < 0.5);
    const tokens = int(1, 48);
    const maxTokens = int(16, 64);
    const directives: string[] = [];
    let stream = false;
    let includeUsage: boolean | undefined;
    let abortAfterMs: number | undefined;
    let model = TEST_MODEL;
    switch (kind) {
      case "json":
        break;
      case "json-no-usage":
        directives.push("mock:no-usage");
        break;
      case "stream":
        stream = true;
        break;
      case "stream-usage":
        stream = true;
        includeUsage = true;
        break;
      case "stream-no-usage":
        stream = true;
        includeUsage = random() < 0.5;
        directives.push("mock:no-usage");
        break;
      case "upstream-500":
        stream = either();
        directives.push("mock:status=500");
        break;
      case "upstream-timeout":
        stream = either();
        directives.push("mock:hang");
        break;
      case "json-drop":
        directives.push("mock:drop-after=0");
        break;
      case "stream-stall":
        stream = true;
        includeUsage = random() < 0.5;
        directives.push(`mock:hang-after=${int(0, 4)}`);
        break;
      case "stream-drop":
        stream = true;
        includeUsage = random() < 0.5;
        directives.push(`mock:drop-after=${int(0, 4)}`);
        break;
      case "abort-before-answer":
        stream = either();
        directives.push("mock:hang");
        // mostly while the upstream call is under way; sometimes right as the request arrives
        abortAfterMs = random() < 0.25 ? int(0, 3) : int(10, 150);
        break;
      case "abort-mid-stream":
        stream = true;
        includeUsage = random() < 0.5;
        directives.push(`mock:hang-after=${int(1, 4)}`);
        break;
      case "failover":
        stream = either();
        includeUsage = stream ? random() < 0.5 : undefined;
        model = FAILOVER_MODEL;
        break;
    }
    const instructions = "You are a terse test assistant.";
    const said = `Request ${index}: say something. mock:tokens=${tokens} ${directives.join(" ")}`;
    // (drawn only when there is a share, so a chat-only load's mix is what it was)
    // (a hang-up before the answer is never a Responses call, even in the Responses way)
    const api: LoadApi =
      kind !== "abort-before-answer" &&
      (way ? way.api === "responses" : responsesShare > 0 && random() < responsesShare)
        ? "responses"
        : "chat.completions";
    if (api === "responses") {
      const body: Record<string, unknown> = {
        model,
        instructions,
        input: said,
        max_output_tokens: maxTokens,
      };
      if (stream) body.stream = true;
      planned.push({ index, api, kind, key, stream, body, abortAfterMs });
      continue;
    }
    const body: Record<string, unknown> = {
      model,
      messages: [
        { role: "system", content: instructions },
        { role: "user", content: said },
      ],
      // recorded in call_records.params: ties every record to its request
      seed: index,
    };
    body[random() < 0.8 ? "max_tokens" : "max_completion_tokens"] = maxTokens;
    if (!kind.startsWith("abort") && (kind === "json" || kind === "stream") && random() < 0.15) body.n = 2;
    if (stream) body.stream = true;
    if (includeUsage !== undefined) body.stream_options = { include_usage: includeUsage };
    // (drawn only when Messages calls are asked for: a chat-only load's draws stay as they were)
    if (way ? way.api === "messages" : options.messagesShare && random() < options.messagesShare) {
      const native = way
        ? way.native && NATIVE_KINDS.has(kind)
        : options.native && NATIVE_KINDS.has(kind) && random() < 0.5;
      const messages = messagesBody(index, body, native ? NATIVE_MODEL : model);
      planned.push({ index, kind, api: "messages", key, stream, body: messages, abortAfterMs });
    } else planned.push({ index, kind, api: "chat.completions", key, stream, body, abortAfterMs });
  }
  return planned;
}

export interface Outcome {
  index: number;
  kind: RequestKind;
  api: LoadApi;
  keyId: string;
  stream: boolean;
  /** the HTTP status, or "aborted" (the client hung up), or "failed" (the connection broke) */
  status: number | "aborted" | "failed";
  /** error.code of a JSON error or of an SSE error event */
  code: string | null;
  /** a stream that ended complete: [DONE] (chat), response.completed or response.incomplete (Responses) */
  done: boolean;
  /** x-request-id, when response headers arrived */
  requestId: string | null;
  /** usage.total_tokens the client was told (JSON body or the stream's usage chunk) */
  usageTotal: number | null;
  /** streams: tokens of the content the client received (the record must charge at least these) */
  contentTokens: number | null;
  /** for "failed": what broke */
  detail: string | null;
  /** for "aborted": when the client hung up (epoch ms, the gateway's clock on this machine) */
  abortedAt: number | null;
}

/** A short label for the figures: "200", "200 stream [DONE]", "200 stream upstream_timeout", "429 key_limit_exceeded", "aborted". */
export function outcomeLabel(o: Outcome): string {
  if (o.status === "aborted") return o.requestId ? "aborted after headers" : "aborted";
  if (o.status === "failed") return `failed (${o.detail ?? "?"})`;
  if (o.status === 200 && o.stream) return `200 stream ${o.code ?? (o.done ? "[DONE]" : "no [DONE]")}`;
  return o.code ? `${o.status} ${o.code}` : String(o.status);
}

function isAbort(err: unknown): boolean {
  return (err as { name?: string } | undefined)?.name === "AbortError";
}

function describeError(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } } | undefined;
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}

/** Parses an SSE body: [DONE], the first error event's code, the last usage seen. */
function readSseText(text: string): {
  done: boolean;
  code: string | null;
  usageTotal: number | null;
  content: string;
} {
  let done = false;
  let code: string | null = null;
  let usageTotal: number | null = null;
  let content = "";
  // Only complete events: a hang-up may leave half of one in the buffer.
  const complete = text.slice(0, text.lastIndexOf("\n\n") + 2);
  for (const event of complete.split("\n\n")) {
    if (!event.startsWith("data: ")) continue;
    const data = event.slice(6);
    if (data === "[DONE]") {
      done = true;
      continue;
    }
    try {
      const parsed = JSON.parse(data) as {
        error?: { code?: string };
        usage?: { total_tokens?: number } | null;
        choices?: { delta?: { content?: unknown } }[];
      };
      if (parsed.error) code ??= parsed.error.code ?? "error";
      for (const c of parsed.choices ?? [])
        if (typeof c.delta?.content === "string") content += c.delta.content;
      if (typeof parsed.usage?.total_tokens === "number") usageTotal = parsed.usage.total_tokens;
    } catch {
      code ??= "unparsable_event";
    }
  }
  return { done, code, usageTotal, content };
}

/**
 * A Messages API stream: complete once message_stop came; the error event's catalog code; the
 * usage as the SDK adds it up (message_start's figures, overwritten by message_delta's).
 */
function readNamedSseText(text: string): {
  done: boolean;
  code: string | null;
  usageTotal: number | null;
  content: string;
} {
  let done = false;
  let code: string | null = null;
  let content = "";
  let usage: Record<string, number> | undefined;
  const complete = text.slice(0, text.lastIndexOf("\n\n") + 2);
  for (const event of complete.split("\n\n")) {
    const data = /^event: [a-z_]+\ndata: (.*)$/s.exec(event)?.[1];
    if (data === undefined) continue;
    try {
      const parsed = JSON.parse(data);
      if (parsed.type === "message_stop") done = true;
      else if (parsed.type === "error") code ??= parsed.error?.details?.error_code ?? "error";
      else if (parsed.type === "message_start") usage = { ...parsed.message.usage };
      else if (parsed.type === "message_delta") {
        for (const [k, v] of Object.entries(parsed.usage ?? {}))
          if (typeof v === "number") usage = { ...usage, [k]: v };
      } else if (parsed.type === "content_block_delta" && parsed.delta?.type === "text_delta")
        content += parsed.delta.text;
    } catch {
      code ??= "unparsable_event";
    }
  }
  return { done, code, usageTotal: done && usage ? messagesTotal(usage) : null, content };
}

/** The total a Messages API usage object adds up to: input, both cache figures, output. */
function messagesTotal(u: Record<string, number | null | undefined>): number {
  return (
    (u.input_tokens ?? 0) +
    (u.cache_creation_input_tokens ?? 0) +
    (u.cache_read_input_tokens ?? 0) +
    (u.output_tokens ?? 0)
  );
}

/**
 * Parses a Responses event stream the same way: complete when response.completed (or
 * response.incomplete, an answer cut at its bound) came, the `error` event's code, the
 * usage of the final Response, the output text.
 */
function readResponsesSse(text: string): ReturnType<typeof readSseText> {
  let done = false;
  let code: string | null = null;
  let usageTotal: number | null = null;
  let content = "";
  const complete = text.slice(0, text.lastIndexOf("\n\n") + 2);
  for (const event of complete.split("\n\n")) {
    const data = event.split("\n").find((line) => line.startsWith("data: "));
    if (!data) continue;
    try {
      const parsed = JSON.parse(data.slice(6)) as {
        type?: string;
        code?: string | null;
        delta?: unknown;
        response?: { usage?: { total_tokens?: number } | null };
      };
      if (parsed.type === "error") code ??= parsed.code ?? "error";
      if (parsed.type === "response.output_text.delta" && typeof parsed.delta === "string")
        content += parsed.delta;
      if (parsed.type === "response.completed" || parsed.type === "response.incomplete") {
        done = true;
        if (typeof parsed.response?.usage?.total_tokens === "number")
          usageTotal = parsed.response.usage.total_tokens;
      }
    } catch {
      code ??= "unparsable_event";
    }
  }
  return { done, code, usageTotal, content };
}

/** The header that tells the gateway-side observer which planned request arrived. */
export const INDEX_HEADER = "x-load-index";

/**
 * Learns which of the load's requests (by INDEX_HEADER) reached a gateway, without touching
 * how they are handled: from the server's events in process, or as gateway processes report. A request the client gave up on before it reached the
 * gateway needs no record; one that reached it needs exactly one. The hang-ups "before the
 * answer" start their timer when the gateway has the request, so they hit the relay.
 */
export class Arrivals {
  readonly seen = new Set<number>();
  readonly #waiters = new Map<number, () => void>();

  /** The gateway received request `index`. */
  mark(index: number): void {
    if (!Number.isInteger(index)) return;
    this.seen.add(index);
    this.#waiters.get(index)?.();
    this.#waiters.delete(index);
  }

  /** Watches an in-process gateway's server; returns the function that stops watching. */
  watch(server: Server): () => void {
    const listener = (req: IncomingMessage) => this.mark(Number(req.headers[INDEX_HEADER]));
    server.on("request", listener);
    return () => server.off("request", listener);
  }

  /** Calls `then` once request `index` has arrived; returns a function that cancels it. */
  onArrival(index: number, then: () => void): () => void {
    if (this.seen.has(index)) {
      then();
      return () => {};
    }
    this.#waiters.set(index, then);
    return () => this.#waiters.delete(index);
  }

  detach(): void {
    this.#waiters.clear();
  }
}

export interface SendOptions {
  /** the client's connection pool (undici); default: undici's global one */
  dispatcher?: Dispatcher;
  arrivals?: Arrivals;
}

/** Sends one planned request and reports what the client saw; never throws. */
export async function sendRequest(
  baseURL: string,
  req: PlannedRequest,
  { dispatcher, arrivals }: SendOptions = {},
): Promise<Outcome> {
  const outcome: Outcome = {
    index: req.index,
    kind: req.kind,
    api: req.api,
    keyId: req.key.id,
    stream: req.stream,
    status: "failed",
    code: null,
    done: false,
    requestId: null,
    usageTotal: null,
    contentTokens: null,
    detail: null,
    abortedAt: null,
  };
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let cancelWait = () => {};
  const stopTimer = () => {
    cancelWait();
    if (timer) clearTimeout(timer);
  };
  if (req.abortAfterMs !== undefined) {
    const delay = req.abortAfterMs;
    const arm = () => {
      timer = setTimeout(() => controller.abort(), delay);
    };
    if (arrivals) cancelWait = arrivals.onArrival(req.index, arm);
    else arm();
  }
  const messages = req.api === "messages";
  const readSse =
    req.api === "messages" ? readNamedSseText : req.api === "responses" ? readResponsesSse : readSseText;
  try {
    const res = await fetch(`${baseURL}/${API_PATHS[req.api]}`, {
      method: "POST",
      headers: {
        ...(messages ? { "x-api-key": req.key.secret } : { authorization: `Bearer ${req.key.secret}` }),
        "content-type": "application/json",
        [INDEX_HEADER]: String(req.index),
      },
      body: JSON.stringify(req.body),
      signal: controller.signal,
      ...(dispatcher ? { dispatcher } : {}),
    });
    // The answer came before the planned abort: it is that answer, not a hang-up.
    stopTimer();
    outcome.status = res.status;
    outcome.requestId = res.headers.get("x-request-id");
    const sse = res.status === 200 && (res.headers.get("content-type") ?? "").startsWith("text/event-stream");
    if (sse) {
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = "";
      for (let reads = 0; reads < 100_000; reads++) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        // abort-mid-stream: hang up once some content has arrived
        if (req.kind === "abort-mid-stream" && readSse(text).content) {
          outcome.abortedAt = Date.now();
          controller.abort();
          await reader.read().catch(() => undefined);
          outcome.status = "aborted";
          break;
        }
      }
      const parsed = readSse(text);
      outcome.done = parsed.done;
      outcome.code = parsed.code;
      outcome.usageTotal = parsed.usageTotal;
      outcome.contentTokens = countText(parsed.content);
    } else {
      const text = await res.text();
      try {
        const parsed = JSON.parse(text);
        if (messages) {
          outcome.code = parsed.type === "error" ? (parsed.error?.details?.error_code ?? "error") : null;
          if (parsed.usage) outcome.usageTotal = messagesTotal(parsed.usage);
        } else {
          outcome.code = parsed.error ? (parsed.error.code ?? "error") : null;
          if (typeof parsed.usage?.total_tokens === "number") outcome.usageTotal = parsed.usage.total_tokens;
        }
      } catch {
        outcome.code = "unparsable_body";
      }
    }
  } catch (err) {
    if (controller.signal.aborted && isAbort(err)) outcome.status = "aborted";
    else {
      outcome.status = "failed";
      outcome.detail = describeError(err);
    }
  } finally {
    stopTimer();
  }
  return outcome;
}

/** Runs the requests with at most `concurrency` in flight, spread over the gateways in turn; outcomes in request order. */
export async function runRequests(
  baseURLs: readonly string[],
  planned: readonly PlannedRequest[],
  concurrency: number,
  send: SendOptions = {},
  onDone?: (finished: number) => void,
): Promise<Outcome[]> {
  const outcomes = new Array<Outcome>(planned.length);
  let next = 0;
  let finished = 0;
  const worker = async () => {
    while (next < planned.length) {
      const req = planned[next++]!;
      outcomes[req.index] = await sendRequest(baseURLs[req.index % baseURLs.length]!, req, send);
      onDone?.(++finished);
    }
  };
  const workers = Math.max(1, Math.min(concurrency, planned.length));
  await Promise.all(Array.from({ length: workers }, worker));
  return outcomes;
}

// ---------------------------------------------------------------------------
// Invariants
// ---------------------------------------------------------------------------

/** What checkInvariants reads from a running gateway (or from the store several share). */
export interface Books {
  db: Kysely<Database>;
  /**
   * The ledger's used and reserved of an account or key: a shared ledger's shared state (the
   * store, Redis), else the gateway's own; undefined when the ledger has not met it.
   */
  counter(kind: "account" | "key", id: string): Promise<Counter | undefined>;
  /** holds still open: of every instance, where the ledger is shared */
  openHolds(): Promise<number>;
  /** the quota of a plan, for accounts without their own */
  planQuota(planId: string): number | undefined;
  /** commits every queued record */
  flush(): Promise<void>;
}

export function booksOf(gw: TestGateway): Books {
  const deps = gw.gateway.deps;
  const ledger = deps.ledger;
  return {
    db: deps.store.db,
    counter: async (kind, id) =>
      ledger.inspect ? ledger.inspect(kind, id) : kind === "key" ? ledger.key(id) : ledger.account(id),
    openHolds: async () => (ledger.openHolds ? ledger.openHolds() : ledger.openReservations()),
    planQuota: (id) => deps.registry.plans.get(id)?.quota_tokens,
    flush: () => deps.records.flush(),
  };
}

/** What the load runs against: one gateway in this process, or several gateway processes. */
export interface LoadTarget {
  /** base URLs ending in /v1; request i goes to baseURLs[i % length] */
  baseURLs: readonly string[];
  account(name: string, options?: { plan?: string; quota?: number | null }): Promise<string>;
  key(
    accountId: string,
    options?: { name?: string; limit?: number | null },
  ): Promise<{ id: string; secret: string }>;
  books: Books;
  /** reports into `arrivals` the load's requests the gateways receive; returns the function that stops */
  watch(arrivals: Arrivals): () => void;
}

export function loadTarget(gw: TestGateway): LoadTarget {
  return {
    baseURLs: [gw.baseURL],
    account: gw.account,
    key: gw.key,
    books: booksOf(gw),
    watch: (arrivals) => arrivals.watch(gw.gateway.app.server),
  };
}

export interface SubjectFigures {
  kind: "account" | "key";
  id: string;
  /** account name, or the key's account id */
  label: string;
  records: number;
  /** sum of the records' total_tokens */
  recorded: number;
  /** used_tokens in the store */
  stored: number;
  /** the ledger's used and reserved (0 when the ledger never met the subject) */
  ledgerUsed: number;
  ledgerReserved: number;
  /** the quota (account) or limit (key) in force; null: none */
  cap: number | null;
}

export type RecordRow = Pick<
  CallRecord,
  | "request_id"
  | "api"
  | "account_id"
  | "key_id"
  | "params"
  | "stream"
  | "status"
  | "http_status"
  | "error_code"
  | "prompt_tokens"
  | "completion_tokens"
  | "total_tokens"
  | "usage_source"
  | "attempts"
  | "reserved_tokens"
  | "overrun_tokens"
  | "cost_nanos"
  | "created_at"
  | "latency_ms"
>;

export interface InvariantReport {
  accounts: SubjectFigures[];
  keys: SubjectFigures[];
  records: RecordRow[];
  openReservations: number;
  /** client hang-ups that never reached the gateway (so rightly have no record) */
  unreached: number;
  violations: string[];
}

/**
 * Waits, bounded, until the gateway is done with every request: no open reservation, every
 * request recorded, the counters still. Client hang-ups end on the gateway's side a little
 * after the client gave up. Returns whether it settled.
 */
export async function waitForQuiet(
  books: Books,
  subjects: Subjects,
  expectedRecords: number,
  maxWaitMs = 10_000,
): Promise<{ quiet: boolean; open: number; records: number }> {
  const keyIds = subjects.keys.map((k) => k.id);
  let last = "";
  let stableRounds = 0;
  let open = 0;
  let records = 0;
  for (let waited = 0; waited <= maxWaitMs; waited += 25) {
    await books.flush();
    const row = await books.db
      .selectFrom("call_records")
      .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.sum<number>("total_tokens").as("t")])
      .where("key_id", "in", keyIds)
      .executeTakeFirstOrThrow();
    open = await books.openHolds();
    records = Number(row.n);
    const state = `${open}|${records}|${Number(row.t ?? 0)}`;
    stableRounds = state === last ? stableRounds + 1 : 0;
    last = state;
    if (open === 0 && records >= expectedRecords && stableRounds >= 2) return { quiet: true, open, records };
    await new Promise((r) => setTimeout(r, 25));
  }
  return { quiet: false, open, records };
}

/** The index of the request a record belongs to: its seed, or a Messages call's temperature. */
function seedOf(params: string | null): number | undefined {
  if (!params) return undefined;
  try {
    const { seed, temperature } = JSON.parse(params) as { seed?: unknown; temperature?: unknown };
    if (typeof seed === "number") return seed;
    return typeof temperature === "number" ? Math.round(temperature * INDEX_SCALE) : undefined;
  } catch {
    return undefined;
  }
}

const REFUSAL_CODES = new Set([
  "key_limit_exceeded",
  "insufficient_quota",
  "rate_limit_exceeded",
  "tokens_held",
]);

function isRefusal(r: RecordRow): boolean {
  return r.status === "error" && r.http_status === 429 && REFUSAL_CODES.has(r.error_code ?? "");
}

/**
 * Checks the books against each other and against what the clients saw. Call after
 * waitForQuiet. `outcomes` may be omitted to check only the per-subject invariants;
 * `arrived` (the indexes the gateway received) lets hang-ups that never reached the gateway
 * go without a record.
 */
export async function checkInvariants(
  books: Books,
  subjects: Subjects,
  outcomes?: readonly Outcome[],
  arrived?: ReadonlySet<number>,
): Promise<InvariantReport> {
  const violations: string[] = [];
  const { db } = books;
  const keyIds = subjects.keys.map((k) => k.id);
  const accountIds = subjects.accounts.map((a) => a.id);

  const records = (
    await db
      .selectFrom("call_records")
      .select([
        "request_id",
        "api",
        "account_id",
        "key_id",
        "params",
        "stream",
        "status",
        "http_status",
        "error_code",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "usage_source",
        "attempts",
        "reserved_tokens",
        "overrun_tokens",
        "cost_nanos",
        "created_at",
        "latency_ms",
      ])
      .where((eb) => eb.or([eb("key_id", "in", keyIds), eb("account_id", "in", accountIds)]))
      .execute()
  ).map(
    (r): RecordRow => ({
      ...r,
      stream: Number(r.stream),
      http_status: Number(r.http_status),
      prompt_tokens: Number(r.prompt_tokens),
      completion_tokens: Number(r.completion_tokens),
      total_tokens: Number(r.total_tokens),
      reserved_tokens: Number(r.reserved_tokens),
      overrun_tokens: Number(r.overrun_tokens),
      cost_nanos: Number(r.cost_nanos),
      created_at: Number(r.created_at),
      latency_ms: Number(r.latency_ms),
    }),
  );
  const storedKeys = new Map(
    (
      await db
        .selectFrom("api_keys")
        .select(["id", "account_id", "used_tokens", "limit_tokens", "spent_nanos", "budget_nanos"])
        .where("id", "in", keyIds)
        .execute()
    ).map((r) => [r.id, r]),
  );
  const storedAccounts = new Map(
    (
      await db
        .selectFrom("accounts")
        .select(["id", "name", "plan_id", "used_tokens", "quota_tokens", "spent_nanos", "budget_nanos"])
        .where("id", "in", accountIds)
        .execute()
    ).map((r) => [r.id, r]),
  );

  // --- every key and account: records = counter = ledger, nothing reserved, within its cap
  const open = await books.openHolds();
  if (open !== 0) violations.push(`${open} reservation(s) still open`);
  const tally = (column: "key_id" | "account_id", id: string) => {
    let count = 0;
    let tokens = 0;
    let nanos = 0;
    for (const r of records)
      if (r[column] === id) {
        count++;
        tokens += r.total_tokens;
        nanos += r.cost_nanos;
      }
    return { count, tokens, nanos };
  };
  // Money: the records' costs add up to the stored spending exactly (integers), within any budget.
  const money = (kind: string, id: string, row: { spent_nanos: number; budget_nanos: number | null }) => {
    const { nanos } = tally(kind === "key" ? "key_id" : "account_id", id);
    const spent = Number(row.spent_nanos);
    if (nanos !== spent)
      violations.push(`${kind} ${id}: records cost ${nanos} nanodollars but spent_nanos is ${spent}`);
    if (row.budget_nanos !== null && spent > Number(row.budget_nanos))
      violations.push(`${kind} ${id}: spent ${spent} nanodollars exceeds its budget ${row.budget_nanos}`);
  };
  const counters = new Map<string, Counter | undefined>();
  for (const k of subjects.keys) counters.set(`key:${k.id}`, await books.counter("key", k.id));
  for (const a of subjects.accounts) counters.set(`account:${a.id}`, await books.counter("account", a.id));
  const figures = (
    kind: "account" | "key",
    id: string,
    label: string,
    stored: number,
    cap: number | null,
  ): SubjectFigures => {
    const { count, tokens } = tally(kind === "key" ? "key_id" : "account_id", id);
    const counter = counters.get(`${kind}:${id}`);
    const f: SubjectFigures = {
      kind,
      id,
      label,
      records: count,
      recorded: tokens,
      stored,
      // a ledger that has not met it (a shared state rebuilt since) agrees with the store
      ledgerUsed: counter?.used ?? stored,
      ledgerReserved: counter?.reserved ?? 0,
      cap,
    };
    const who = `${kind} ${id} (${label})`;
    if (f.recorded !== f.stored)
      violations.push(`${who}: records add up to ${f.recorded} tokens but used_tokens is ${f.stored}`);
    if (f.ledgerUsed !== f.stored)
      violations.push(`${who}: the ledger says used ${f.ledgerUsed} but the store says ${f.stored}`);
    if (f.ledgerReserved !== 0) violations.push(`${who}: ${f.ledgerReserved} tokens still reserved`);
    if (cap !== null && f.stored > cap) violations.push(`${who}: used ${f.stored} exceeds its cap ${cap}`);
    if (cap !== null && f.ledgerUsed > cap)
      violations.push(`${who}: the ledger's used ${f.ledgerUsed} exceeds its cap ${cap}`);
    return f;
  };

  const keys: SubjectFigures[] = [];
  for (const k of subjects.keys) {
    const row = storedKeys.get(k.id);
    if (!row) {
      violations.push(`key ${k.id} is missing from the store`);
      continue;
    }
    const limit = row.limit_tokens === null ? null : Number(row.limit_tokens);
    if (limit !== k.limit) violations.push(`key ${k.id}: limit ${limit} in the store, ${k.limit} created`);
    keys.push(figures("key", k.id, k.accountId, Number(row.used_tokens), limit));
    money("key", k.id, row);
  }
  const accounts: SubjectFigures[] = [];
  for (const a of subjects.accounts) {
    const row = storedAccounts.get(a.id);
    if (!row) {
      violations.push(`account ${a.id} is missing from the store`);
      continue;
    }
    const quota = row.quota_tokens === null ? books.planQuota(row.plan_id) : Number(row.quota_tokens);
    if (quota === undefined) violations.push(`account ${a.id}: its plan ${row.plan_id} is unknown`);
    const f = figures("account", a.id, a.name, Number(row.used_tokens), quota ?? null);
    accounts.push(f);
    money("account", a.id, row);
    const ofKeys = keys.filter((k) => k.label === a.id).reduce((sum, k) => sum + k.stored, 0);
    if (ofKeys !== f.stored)
      violations.push(
        `account ${a.id} (${a.name}): its keys used ${ofKeys} tokens but the account ${f.stored}`,
      );
  }

  // --- every record on its own
  const seen = new Set<string>();
  for (const r of records) {
    const who = `record ${r.request_id} (${r.status} ${r.http_status} ${r.error_code ?? ""})`;
    if (seen.has(r.request_id)) violations.push(`${who}: request_id recorded twice`);
    seen.add(r.request_id);
    if (r.total_tokens !== r.prompt_tokens + r.completion_tokens)
      violations.push(
        `${who}: total ${r.total_tokens} ≠ prompt ${r.prompt_tokens} + completion ${r.completion_tokens}`,
      );
    if (r.total_tokens < 0 || r.prompt_tokens < 0 || r.completion_tokens < 0)
      violations.push(`${who}: negative tokens`);
    if (r.usage_source === "none" && r.total_tokens !== 0)
      violations.push(`${who}: ${r.total_tokens} tokens charged with usage_source none`);
    if (r.error_code === "internal_error") violations.push(`${who}: the gateway failed internally`);
    // Attempts: only the last may have answered; an answered call's last attempt did.
    const attempts = r.attempts ? (JSON.parse(r.attempts) as { outcome: string }[]) : [];
    if (attempts.slice(0, -1).some((a) => a.outcome === "ok"))
      violations.push(`${who}: an attempt answered, yet another followed it`);
    if ((r.status === "ok" || r.status === "upstream_error") && attempts.at(-1)?.outcome !== "ok")
      violations.push(`${who}: answered, but its last attempt says ${attempts.at(-1)?.outcome ?? "nothing"}`);
    switch (r.status) {
      case "ok":
        if (r.http_status !== 200) violations.push(`${who}: status ok with HTTP ${r.http_status}`);
        break;
      case "error":
        // refused, or failed before the first byte: nothing charged
        if (r.total_tokens !== 0)
          violations.push(`${who}: an error before any answer charged ${r.total_tokens}`);
        break;
      case "client_disconnect":
        if (r.http_status !== 499) violations.push(`${who}: client_disconnect with HTTP ${r.http_status}`);
        // A client that left while its request waited for tokens held by calls in flight sent
        // nothing upstream (it held nothing): it is charged nothing.
        if (r.reserved_tokens > 0 && r.prompt_tokens <= 0)
          violations.push(`${who}: a client disconnect did not charge the prompt`);
        break;
      case "upstream_error":
        if (r.http_status !== 502 && r.http_status !== 504)
          violations.push(`${who}: a mid-stream upstream failure with HTTP ${r.http_status}`);
        if (r.stream !== 1) violations.push(`${who}: upstream_error outside a stream`);
        if (r.prompt_tokens <= 0) violations.push(`${who}: a mid-stream failure did not charge the prompt`);
        break;
      default:
        violations.push(`${who}: unknown status`);
    }
  }

  // --- every request: exactly one record, consistent with what the client saw
  let unreached = 0;
  if (outcomes) {
    const byId = new Map(records.map((r) => [r.request_id, r]));
    const bySeed = new Map<number, RecordRow>();
    for (const r of records) {
      const seed = seedOf(r.params);
      if (seed === undefined) continue;
      if (bySeed.has(seed)) violations.push(`request #${seed} has two records (${r.request_id})`);
      bySeed.set(seed, r);
    }
    const claimed = new Set<string>();
    const unmatched: Outcome[] = [];
    for (const o of outcomes) {
      const who = `request #${o.index} (${o.api} ${o.kind}, ${outcomeLabel(o)})`;
      if (o.status === "failed") violations.push(`${who}: the connection broke without an answer`);
      const r = (o.requestId ? byId.get(o.requestId) : undefined) ?? bySeed.get(o.index);
      if (!r) {
        unmatched.push(o);
        continue;
      }
      claimed.add(r.request_id);
      if (o.requestId && r.request_id !== o.requestId)
        violations.push(`${who}: answered as ${o.requestId} but recorded as ${r.request_id}`);
      const seed = seedOf(r.params);
      if (seed !== undefined && seed !== o.index) violations.push(`${who}: its record belongs to #${seed}`);
      if (r.key_id !== o.keyId)
        violations.push(`${who}: recorded against key ${r.key_id}, sent with ${o.keyId}`);
      // Delivered tokens are charged, however the stream ended.
      if (o.contentTokens !== null && r.completion_tokens < o.contentTokens)
        violations.push(
          `${who}: the client received ${o.contentTokens} tokens of content but the record charges ${r.completion_tokens}`,
        );
      if (o.status === "aborted") {
        // The client hung up: client_disconnect, unless the gateway had refused it already, or
        // (on a starved machine) the upstream's idle timeout had ended the stream before the
        // client, slow to read what had arrived, hung up. The record's end comes a little after
        // the timeout fired (the error event written, the record built): a hang-up within that
        // much of the record's end may have come after the timeout (seen once in the cluster
        // suite: a 504 upstream_timeout with the hang-up a few milliseconds before its end).
        const endedFirst =
          r.status === "upstream_error" &&
          (o.code !== null ||
            (o.abortedAt !== null && r.created_at + r.latency_ms <= o.abortedAt + TIMEOUT_TO_RECORD_MS));
        if (r.status !== "client_disconnect" && !isRefusal(r) && !endedFirst)
          violations.push(
            `${who}: the client hung up but the record says ${r.status} ${r.http_status} ${r.error_code ?? ""}`,
          );
        continue;
      }
      if (typeof o.status !== "number") continue;
      if (o.status === 200 && o.stream) {
        // A stream: ok with [DONE], or upstream_error with the error event.
        const expected = o.done && !o.code ? "ok" : "upstream_error";
        if (r.status !== expected)
          violations.push(
            `${who}: the stream ended ${o.done ? "with" : "without"} [DONE] but the record says ${r.status}`,
          );
        if (o.code && r.error_code !== o.code)
          violations.push(`${who}: the stream's error was ${o.code}, the record's ${r.error_code}`);
      } else if (r.http_status !== o.status || (o.code ?? null) !== (r.error_code ?? null))
        violations.push(
          `${who}: the client got ${o.status} ${o.code ?? ""} but the record says ${r.http_status} ${r.error_code ?? ""}`,
        );
      if (o.usageTotal !== null && o.usageTotal !== r.total_tokens)
        violations.push(`${who}: the client was told ${o.usageTotal} tokens but charged ${r.total_tokens}`);
    }
    // Records that carry no seed (refused before the body was read, or left before the relay)
    // pair with the requests that found no record by id or seed: hang-ups whose answer was a
    // refusal, or that hung up before their call reached the relay.
    const spare = records.filter((r) => !claimed.has(r.request_id));
    for (const o of unmatched) {
      if (o.status === "aborted" && arrived && !arrived.has(o.index)) {
        unreached++;
        continue;
      }
      const i =
        o.status === "aborted"
          ? spare.findIndex((r) => r.key_id === o.keyId && seedOf(r.params) === undefined)
          : -1;
      if (i < 0) {
        violations.push(`request #${o.index} (${o.kind}, ${outcomeLabel(o)}): no record`);
        continue;
      }
      const r = spare.splice(i, 1)[0]!;
      // a refusal, or a hang-up noticed before the body was read (nothing charged)
      const leftEarly = r.status === "client_disconnect" && r.total_tokens === 0;
      if (!isRefusal(r) && !leftEarly)
        violations.push(
          `request #${o.index} (${o.kind}, aborted): paired with record ${r.request_id} ${r.status}`,
        );
    }
    for (const r of spare)
      violations.push(
        `record ${r.request_id} (${r.status} ${r.http_status} ${r.error_code ?? ""}) belongs to no request`,
      );
  }

  return { accounts, keys, records, openReservations: open, unreached, violations };
}

// ---------------------------------------------------------------------------
// One whole run
// ---------------------------------------------------------------------------

export interface MixedLoadOptions extends SubjectOptions, PlanOptions {
  seed: number;
  requests: number;
  /** requests in flight at once (the number of requests: all at once) */
  concurrency: number;
  /** how long the gateways may take to come to rest after the last answer (default 10 s) */
  quietMs?: number;
  onProgress?: (finished: number) => void;
}

export interface MixedLoadResult {
  seed: number;
  subjects: Subjects;
  outcomes: Outcome[];
  /** milliseconds from the first request to the last answer */
  durationMs: number;
  /** whether the gateway came to rest (no reservation open, every record written) in time */
  quiet: boolean;
  report: InvariantReport;
}

export async function runMixedLoad(target: LoadTarget, options: MixedLoadOptions): Promise<MixedLoadResult> {
  const subjects = await createSubjects(target, options);
  const planned = planRequests(options.seed, options.requests, subjects, options);
  const books = target.books;
  const arrivals = new Arrivals();
  const unwatch = target.watch(arrivals);
  // The load's own connection pool, closed at the end: after a hang-up undici opens a spare
  // connection that never carries a request, and such a connection would hold the gateway's
  // graceful shutdown for its whole grace period (Node's closeIdleConnections skips it).
  const dispatcher = new Agent({ connections: options.concurrency });
  const started = performance.now();
  let outcomes: Outcome[];
  let rest: Awaited<ReturnType<typeof waitForQuiet>>;
  let durationMs: number;
  try {
    outcomes = await runRequests(
      target.baseURLs,
      planned,
      options.concurrency,
      { dispatcher, arrivals },
      options.onProgress,
    );
    durationMs = performance.now() - started;
    rest = await waitForQuiet(books, subjects, arrivals.seen.size, options.quietMs);
  } finally {
    unwatch();
    arrivals.detach();
    await dispatcher.close();
  }
  const report = await checkInvariants(books, subjects, outcomes, arrivals.seen);
  if (!rest.quiet)
    report.violations.unshift(
      `the gateway did not come to rest within ${(options.quietMs ?? 10_000) / 1000} s after the last answer: ${rest.open} reservation(s) open, ${rest.records} records for ${arrivals.seen.size} requests received`,
    );
  return { seed: options.seed, subjects, outcomes, durationMs, quiet: rest.quiet, report };
}

/** Counts of outcome labels per kind, and of record statuses. */
export function summarize(result: MixedLoadResult) {
  const byKind = new Map<RequestKind, Map<string, number>>();
  const byLabel = new Map<string, number>();
  for (const o of result.outcomes) {
    const label = outcomeLabel(o);
    let m = byKind.get(o.kind);
    if (!m) {
      m = new Map();
      byKind.set(o.kind, m);
    }
    m.set(label, (m.get(label) ?? 0) + 1);
    byLabel.set(label, (byLabel.get(label) ?? 0) + 1);
  }
  const byRecord = new Map<string, number>();
  for (const r of result.report.records) {
    const label = `${r.status} ${r.http_status}${r.error_code ? ` ${r.error_code}` : ""}`;
    byRecord.set(label, (byRecord.get(label) ?? 0) + 1);
  }
  return { byKind, byLabel, byRecord };
}
