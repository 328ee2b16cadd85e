/**
 * Mock moderation server speaking OpenAI's wire format for `POST /v1/moderations`: the
 * request (`model`, `input` as a string, an array of strings or an array of content parts)
 * and the response (`id`, `model`, `results[]` with `flagged`, `categories`,
 * `category_scores` and `category_applied_input_types` for every omni-moderation category).
 *
 * Deterministic and quiet, for the content-safety tests. Scores come from trigger words in
 * each input element (case-insensitive):
 *   violent       violence 0.92, violence/graphic 0.41
 *   hateful       hate 0.81
 *   selfharm      self-harm 0.77
 *   borderline    violence 0.35 (below a 0.5 threshold, and not flagged by the server either)
 *   otherwise     every score tiny, nothing flagged
 * The server flags a category at a score of 0.5 or more, and an element when any category flags.
 *
 * Failure triggers, anywhere in the input:
 *   modfail       HTTP 500 with an OpenAI error envelope; its message repeats the bearer key it
 *                 was sent and an internal address, so tests can prove reviewers never pass them on
 *   modhang       never answer (until the client goes away)
 *   modgarbage    HTTP 200 with a body that is not JSON
 *   modslow=MS    wait MS milliseconds before answering (overrides `latencyMs`)
 *
 * Requests are validated like OpenAI does: 401 without the right key (when `apiKey` is set),
 * 400 with an error envelope for a body that is not JSON or has a missing or malformed
 * `input` or `model`, 404 for another model family or route.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:http";
import { listenForTests } from "./listen.ts";
import type { ReceivedRequest } from "./mock-openai-upstream.ts";

export interface MockModerationOptions {
  /** Delay before every answer (default 0); the per-request `modslow=MS` trigger overrides it. */
  latencyMs?: number;
  /** If set, requests must carry `Authorization: Bearer <apiKey>`, else 401 with an OpenAI error envelope. */
  apiKey?: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (random free port). */
  port?: number;
}

export interface ModerationRequest extends ReceivedRequest {
  /**
   * `performance.now()` just before the mock wrote its answer (any status), on this process's
   * clock, so tests can order it against what a client received. Unset while unanswered.
   */
  answeredAt?: number;
}

export interface MockModeration {
  /** Base URL ending in /v1, e.g. http://127.0.0.1:43123/v1 */
  url: string;
  /** Every moderation request received, in arrival order. */
  requests: ModerationRequest[];
  /** Moderation requests currently being answered (hanging ones included). */
  inFlight(): number;
  /** How many moderation requests the client closed before the mock answered. */
  aborted(): number;
  /** Clears `requests` (in place) and the `aborted` counter. */
  reset(): void;
  /** Closes the server and all sockets (including hanging ones) promptly. */
  close(): Promise<void>;
}

/** omni-moderation's categories, in the order OpenAI's API reference lists them. */
export const MODERATION_CATEGORIES = [
  "harassment",
  "harassment/threatening",
  "sexual",
  "hate",
  "hate/threatening",
  "illicit",
  "illicit/violent",
  "self-harm/intent",
  "self-harm/instructions",
  "self-harm",
  "sexual/minors",
  "violence",
  "violence/graphic",
] as const;
type Category = (typeof MODERATION_CATEGORIES)[number];

/** Categories omni-moderation also scores on images. */
const IMAGE_CATEGORIES = new Set<Category>([
  "sexual",
  "self-harm/intent",
  "self-harm/instructions",
  "self-harm",
  "violence",
  "violence/graphic",
]);

/** The scores of harmless text: tiny and different per category, like the real ones. */
const BASE_SCORES: Record<Category, number> = {
  harassment: 0.000012,
  "harassment/threatening": 0.0000031,
  sexual: 0.0000087,
  hate: 0.0000045,
  "hate/threatening": 0.00000052,
  illicit: 0.0000078,
  "illicit/violent": 0.0000019,
  "self-harm/intent": 0.0000021,
  "self-harm/instructions": 0.0000017,
  "self-harm": 0.0000044,
  "sexual/minors": 0.0000011,
  violence: 0.000023,
  "violence/graphic": 0.0000036,
};

const TRIGGERS: [word: string, scores: Partial<Record<Category, number>>][] = [
  ["violent", { violence: 0.92, "violence/graphic": 0.41 }],
  ["hateful", { hate: 0.81 }],
  ["selfharm", { "self-harm": 0.77 }],
  ["borderline", { violence: 0.35 }],
];

/** What the mock's own classifier flags at. */
export const MOCK_FLAG_AT = 0.5;

const KNOWN_MODEL = /^(omni|text)-moderation-/;

const INCORRECT_KEY_MESSAGE =
  "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.";
const MISSING_KEY_MESSAGE =
  "You didn't provide an API key. You need to provide your API key in an Authorization header using " +
  "Bearer auth (i.e. Authorization: Bearer YOUR_KEY). You can obtain an API key from " +
  "https://platform.openai.com/account/api-keys.";
const INVALID_JSON_MESSAGE =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your " +
  "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)";

const ID_PREFIX = randomBytes(8).toString("hex");
let idCounter = 0;

type ErrorSpec = [status: number, message: string, type: string, param: string | null, code: string | null];

interface Input {
  text: string;
  image: boolean;
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "number") return Number.isInteger(v) ? "an integer" : "a decimal";
  if (typeof v === "object") return "an object";
  return `a ${typeof v}`;
}

/** The request's inputs, one per result, or the 400 OpenAI would answer. */
function fail(...error: ErrorSpec): { error: ErrorSpec } {
  return { error };
}

function readInputs(body: any): { inputs: Input[] } | { error: ErrorSpec } {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    return fail(400, "The request body must be a JSON object.", "invalid_request_error", null, null);
  if (body.model !== undefined && typeof body.model !== "string")
    return fail(
      400,
      `Invalid type for 'model': expected a string, but got ${typeName(body.model)} instead.`,
      "invalid_request_error",
      "model",
      "invalid_type",
    );
  if (typeof body.model === "string" && !KNOWN_MODEL.test(body.model))
    return fail(
      404,
      `The model \`${body.model}\` does not exist or you do not have access to it.`,
      "invalid_request_error",
      null,
      "model_not_found",
    );
  const input = body.input;
  if (input === undefined)
    return fail(
      400,
      "Missing required parameter: 'input'.",
      "invalid_request_error",
      "input",
      "missing_required_parameter",
    );
  if (typeof input === "string") return { inputs: [{ text: input, image: false }] };
  if (!Array.isArray(input))
    return fail(
      400,
      `Invalid type for 'input': expected one of a string, an array of strings, or an array of objects, but got ${typeName(input)} instead.`,
      "invalid_request_error",
      "input",
      "invalid_type",
    );
  if (input.length === 0)
    return fail(
      400,
      "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      "invalid_request_error",
      "input",
      "empty_array",
    );
  // An array of strings: one result each. An array of content parts: one result for them all.
  if (typeof input[0] === "string") {
    for (let i = 0; i < input.length; i++) {
      if (typeof input[i] !== "string")
        return fail(
          400,
          `Invalid type for 'input[${i}]': expected a string, but got ${typeName(input[i])} instead.`,
          "invalid_request_error",
          `input[${i}]`,
          "invalid_type",
        );
    }
    return { inputs: input.map((text: string) => ({ text, image: false })) };
  }
  const texts: string[] = [];
  let image = false;
  for (let i = 0; i < input.length; i++) {
    const part = input[i];
    if (part?.type === "text" && typeof part.text === "string") texts.push(part.text);
    else if (part?.type === "image_url" && typeof part.image_url?.url === "string") image = true;
    else
      return fail(
        400,
        `Invalid value for 'input[${i}]': expected an object with type 'text' and a string 'text', or type 'image_url' and an 'image_url' object with a string 'url'.`,
        "invalid_request_error",
        `input[${i}]`,
        "invalid_value",
      );
  }
  return { inputs: [{ text: texts.join(" "), image }] };
}

function result(input: Input) {
  const lower = input.text.toLowerCase();
  const scores: Record<string, number> = { ...BASE_SCORES };
  for (const [word, hits] of TRIGGERS) {
    if (!lower.includes(word)) continue;
    for (const [category, score] of Object.entries(hits))
      scores[category] = Math.max(scores[category]!, score);
  }
  const categories: Record<string, boolean> = {};
  const applied: Record<string, string[]> = {};
  for (const category of MODERATION_CATEGORIES) {
    categories[category] = scores[category]! >= MOCK_FLAG_AT;
    const types = input.text || !input.image ? ["text"] : [];
    if (input.image && IMAGE_CATEGORIES.has(category)) types.push("image");
    applied[category] = types;
  }
  return {
    flagged: Object.values(categories).some(Boolean),
    categories,
    category_scores: scores,
    category_applied_input_types: applied,
  };
}

function sendJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "openai-version": "2020-10-01",
  });
  res.end(body);
}

function sendError(res: ServerResponse, [status, message, type, param, code]: ErrorSpec): void {
  sendJson(res, status, JSON.stringify({ error: { message, type, param, code } }));
}

interface Active {
  entry: ModerationRequest;
  done: boolean;
  closed: boolean;
  gen: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export function startMockModeration(options: MockModerationOptions = {}): Promise<MockModeration> {
  const defaultLatency = Math.max(0, options.latencyMs ?? 0);
  const expectedAuth = options.apiKey !== undefined ? `Bearer ${options.apiKey}` : undefined;
  const host = options.host ?? "127.0.0.1";
  const requests: ModerationRequest[] = [];
  const active = new Set<Active>();
  let aborted = 0;
  let gen = 0;
  let closing = false;

  /** Marks the request answered; called just before the answer is written. */
  function answered(state: Active): void {
    state.done = true;
    state.entry.answeredAt = performance.now();
  }

  function finish(state: Active): void {
    if (state.closed) return;
    state.closed = true;
    active.delete(state);
    if (state.timer !== undefined) clearTimeout(state.timer);
    if (!state.done && !closing && state.gen === gen) aborted++;
  }

  function answer(req: IncomingMessage, res: ServerResponse, state: Active, raw: string): void {
    const auth = req.headers.authorization;
    if (expectedAuth !== undefined && auth !== expectedAuth) {
      answered(state);
      sendError(res, [
        401,
        auth ? INCORRECT_KEY_MESSAGE : MISSING_KEY_MESSAGE,
        "invalid_request_error",
        null,
        auth ? "invalid_api_key" : null,
      ]);
      return;
    }
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      answered(state);
      sendError(res, [400, INVALID_JSON_MESSAGE, "invalid_request_error", null, null]);
      return;
    }
    const read = readInputs(body);
    if ("error" in read) {
      answered(state);
      sendError(res, read.error);
      return;
    }
    const { inputs } = read;
    const all = inputs.map((i) => i.text).join("\n");
    if (all.includes("modhang")) return; // never answer; 'close' accounts for the client leaving
    const slow = /modslow=(\d+)/.exec(all);
    const latency = slow ? Number(slow[1]) : defaultLatency;
    const go = (): void => {
      state.timer = undefined;
      if (state.closed) return;
      answered(state);
      if (all.includes("modfail")) {
        const key = auth?.replace(/^Bearer\s+/i, "") ?? "none";
        sendError(res, [
          500,
          `The server had an error while processing your request. (shard http://10.0.0.9:8080/moderate failed for key ${key})`,
          "server_error",
          null,
          null,
        ]);
        return;
      }
      if (all.includes("modgarbage")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end("<html><body>502 Bad Gateway</body></html>");
        return;
      }
      idCounter++;
      sendJson(
        res,
        200,
        JSON.stringify({
          id: `modr-${ID_PREFIX}${idCounter.toString(16).padStart(16, "0")}`,
          model: body.model ?? "omni-moderation-latest",
          results: inputs.map(result),
        }),
      );
    };
    if (latency > 0) state.timer = setTimeout(go, latency);
    else go();
  }

  const server = createServer({ keepAliveTimeout: 65_000, noDelay: true }, (req, res) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const method = req.method ?? "GET";
    if (path !== "/v1/moderations" || method !== "POST")
      return sendError(res, [404, `Invalid URL (${method} ${path})`, "invalid_request_error", null, null]);
    const entry: ModerationRequest = { method, path, headers: req.headers, body: undefined, at: Date.now() };
    requests.push(entry);
    const state: Active = { entry, done: false, closed: false, gen, timer: undefined };
    active.add(state);
    res.once("close", () => finish(state));
    req.once("error", () => finish(state));
    const chunks: Buffer[] = [];
    req.on("data", (b: Buffer) => chunks.push(b));
    req.on("end", () => {
      if (state.closed) return;
      const raw = Buffer.concat(chunks).toString("utf8");
      try {
        entry.body = JSON.parse(raw);
      } catch {
        entry.body = raw;
      }
      answer(req, res, state, raw);
    });
  });

  let closePromise: Promise<void> | undefined;
  return listenForTests(server, options.port ?? 0, host).then(
    (url): MockModeration => ({
      url,
      requests,
      inFlight: () => active.size,
      aborted: () => aborted,
      reset: () => {
        requests.length = 0;
        aborted = 0;
        gen++;
      },
      close: () => {
        closePromise ??= new Promise<void>((done) => {
          closing = true;
          server.close(() => {
            for (const state of active) finish(state);
            done();
          });
          server.closeAllConnections();
        });
        return closePromise;
      },
    }),
  );
}
