// The moderation-api reviewer: asks a server speaking OpenAI's POST /moderations (OpenAI
// itself, or a compatible one) and applies the operator's per-category thresholds to the
// scores it returns. One keep-alive undici Pool per reviewer; never a connection per review.

import { z } from "zod";
import type { ReviewerConfig } from "../../config/schema.ts";
import { sanitizeUpstreamMessage } from "../../providers/sanitize.ts";
import { registerSecret } from "../../providers/secrets.ts";
import { Pool } from "../../providers/undici-pool.ts";
import { type Reviewer, ReviewerError, type ReviewRequest, type ReviewVerdict } from "../types.ts";

type ModerationConfig = Extract<ReviewerConfig, { type: "moderation-api" }>;

/**
 * Longest text sent as one `input` element. A longer text is split into several elements
 * (one request, one result each; the text flags if any element flags). OpenAI's own limit per
 * element is far larger, but not every compatible server's is, and 32,000 characters stays
 * well inside the context window of the moderation models that exist.
 */
export const MAX_INPUT_CHARS = 32_000;

/** Concurrent connections to the moderation server: reviews run once per chat call, in parallel. */
const MAX_CONNECTIONS = 64;
/** Bounds what is read of a reply, so a broken server cannot fill memory. */
const MAX_REPLY_BYTES = 4 * 1024 * 1024;
const MAX_ERROR_BYTES = 64 * 1024;

/** OpenAI's response, validated leniently: unknown fields and categories are fine. */
const replySchema = z.object({
  results: z.array(
    z.object({
      flagged: z.boolean(),
      categories: z.record(z.string(), z.unknown()),
      category_scores: z.record(z.string(), z.unknown()),
    }),
  ),
});
type ModerationResult = z.infer<typeof replySchema>["results"][number];

export class ModerationApiReviewer implements Reviewer {
  readonly type = "moderation-api";
  readonly #pool: Pool;
  readonly #path: string;
  readonly #headers: Record<string, string>;
  readonly #model: string;
  readonly #thresholds: ReadonlyMap<string, number>;
  readonly #apiKey: string | undefined;

  constructor(config: ModerationConfig, env: Record<string, string | undefined>) {
    const url = new URL(config.base_url);
    this.#path = `${url.pathname.replace(/\/+$/, "")}/moderations`;
    this.#pool = new Pool(url.origin, {
      connections: MAX_CONNECTIONS,
      connectTimeout: 5_000,
      keepAliveTimeout: 30_000,
      pipelining: 1,
    });
    this.#model = config.model;
    this.#thresholds = new Map(Object.entries(config.thresholds));
    if (config.api_key_env !== undefined) {
      this.#apiKey = env[config.api_key_env];
      registerSecret(this.#apiKey);
      if (!this.#apiKey) throw new Error(`the environment variable ${config.api_key_env} is not set`);
    }
    this.#headers = {
      "content-type": "application/json",
      accept: "application/json",
      ...(this.#apiKey ? { authorization: `Bearer ${this.#apiKey}` } : {}),
    };
  }

  async review(request: ReviewRequest): Promise<ReviewVerdict> {
    if (!request.text) return { flagged: false, categories: [] };
    const inputs = splitInput(request.text);
    const { signal } = request;
    let response: Awaited<ReturnType<Pool["request"]>>;
    try {
      response = await this.#pool.request({
        path: this.#path,
        method: "POST",
        headers: this.#headers,
        body: JSON.stringify({ model: this.#model, input: inputs.length === 1 ? inputs[0] : inputs }),
        signal,
      });
    } catch (err) {
      throw this.#failure(err, signal, "cannot reach the moderation API");
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      const body = await readBounded(response.body, MAX_ERROR_BYTES, false).catch(() => "");
      throw new ReviewerError(`the moderation API answered HTTP ${response.statusCode}${this.#detail(body)}`);
    }
    let text: string;
    try {
      text = await readBounded(response.body, MAX_REPLY_BYTES, true);
    } catch (err) {
      throw this.#failure(err, signal, "the moderation API's reply broke off");
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ReviewerError("the moderation API's reply is not JSON");
    }
    const parsed = replySchema.safeParse(json);
    if (!parsed.success) throw new ReviewerError("the moderation API's reply is not a moderation response");
    const { results } = parsed.data;
    if (results.length !== inputs.length)
      throw new ReviewerError(
        `the moderation API returned ${results.length} results for ${inputs.length} inputs`,
      );
    return combine(results, this.#thresholds);
  }

  /** The server's own error message, without the key, addresses or anything key-like. */
  #detail(body: string): string {
    let message: unknown;
    try {
      message = (JSON.parse(body) as { error?: { message?: unknown } })?.error?.message;
    } catch {
      return "";
    }
    if (typeof message !== "string" || !message) return "";
    // The key first: sanitising truncates, which could leave a key's prefix behind.
    const withoutKey = this.#apiKey ? message.replaceAll(this.#apiKey, "[redacted]") : message;
    return `: ${sanitizeUpstreamMessage(withoutKey)}`;
  }

  /** A ReviewerError whose message is safe to log: no address, key or library message. */
  #failure(err: unknown, signal: AbortSignal, what: string): ReviewerError {
    if (err instanceof ReviewerError) return err;
    if (signal.aborted)
      return new ReviewerError("the moderation review was stopped (its time was up or the client left)");
    const code = (err as { code?: unknown } | null)?.code;
    return new ReviewerError(
      typeof code === "string" && /^[A-Z0-9_]+$/.test(code) ? `${what} (${code})` : what,
    );
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }
}

/**
 * A category flags when its score reaches the operator's threshold for it, or, without a
 * threshold, when the server says it flags. The text flags when any element's result does.
 * A result the server marks `flagged` without naming any category still flags (no category).
 */
export function combine(results: ModerationResult[], thresholds: ReadonlyMap<string, number>): ReviewVerdict {
  const categories = new Set<string>();
  let flagged = false;
  for (const result of results) {
    const names = new Set([...Object.keys(result.categories), ...Object.keys(result.category_scores)]);
    let named = false;
    for (const name of names) {
      if (result.categories[name] === true) named = true;
      const threshold = thresholds.get(name);
      const score = result.category_scores[name];
      const hit =
        threshold === undefined
          ? result.categories[name] === true
          : typeof score === "number" && score >= threshold;
      if (hit) {
        categories.add(name);
        flagged = true;
      }
    }
    if (result.flagged && !named) flagged = true;
  }
  return { flagged, categories: [...categories] };
}

/**
 * The text as `input` elements of at most `max` characters, cut after whitespace where there
 * is some in the window's last eighth (so words stay whole), and never inside a surrogate pair.
 */
export function splitInput(text: string, max = MAX_INPUT_CHARS): string[] {
  if (text.length <= max) return [text];
  const parts: string[] = [];
  let start = 0;
  while (text.length - start > max) {
    let end = start + max;
    const floor = start + Math.floor((max * 7) / 8);
    let cut = -1;
    for (let i = end; i > floor; i--) {
      if (isSpace(text.charCodeAt(i - 1))) {
        cut = i;
        break;
      }
    }
    if (cut > 0) end = cut;
    else if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
    parts.push(text.slice(start, end));
    start = end;
  }
  parts.push(text.slice(start));
  return parts;
}

function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x3000 || (c >= 0x2000 && c <= 0x200a);
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

/** The body as text; past `limit` bytes, a failure (`strict`) or the text so far. */
async function readBounded(
  body: AsyncIterable<Buffer> & { destroy(): void },
  limit: number,
  strict: boolean,
): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of body) {
    size += part.length;
    if (size > limit) {
      body.destroy();
      if (strict) throw new ReviewerError("the moderation API's reply is too large");
      break;
    }
    parts.push(part);
  }
  return Buffer.concat(parts).toString("utf8");
}
