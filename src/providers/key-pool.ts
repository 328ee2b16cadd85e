// The upstream keys of one provider, used in turn. A key the upstream turns away (rate
// limited, or not accepted) cools down on its own, so one key's trouble neither stops the
// provider nor cools the whole deployment while its other keys still work
// (docs/decisions/0031-upstream-key-pools.md).
import type { KeyState } from "./types.ts";

/** Why the upstream turned a key away; each has its own cooldown and its own words. */
export type KeyFault =
  /** 429: this key's rate limit or quota */
  | "rate_limited"
  /** 401: the key is not (or no longer) valid */
  | "unauthorized"
  /** 403: the key may not do this */
  | "forbidden"
  /** a refusal of the key under another status (Gemini's 400 API_KEY_INVALID) */
  | "key_invalid";

export interface KeyPoolOptions {
  /** the clock, Unix ms; tests move their own */
  now?: () => number;
  /** a 429 without retry-after: the first cooldown, doubled on each 429 in a row */
  rateLimitedMs?: number;
  /** the longest cooldown for 429s in a row, and for a retry-after */
  rateLimitedMaxMs?: number;
  /** a key refused (401, 403): long, so a revoked key is not sent every call */
  refusedMs?: number;
}

export const RATE_LIMITED_MS = 30_000;
export const RATE_LIMITED_MAX_MS = 300_000;
export const REFUSED_MS = 300_000;
/** a retry-after above this is an upstream's mistake or a day's quota: the key is tried again then */
const RETRY_AFTER_MAX_MS = 3_600_000;

/** Fixed words, never the upstream's: its text may quote the key. */
const FAULT_WORDS: Readonly<Record<KeyFault, string>> = {
  rate_limited: "429 rate limited",
  unauthorized: "401 authentication failed",
  forbidden: "403 permission denied",
  key_invalid: "400 key invalid",
};

interface Entry {
  readonly key: string;
  readonly hint: string;
  /** Unix ms the cooldown ends; 0: never cooled */
  until: number;
  /** faults since the last success */
  failures: number;
  /** 429s in a row, which lengthen the next one's cooldown */
  rateLimited: number;
  lastError: string | null;
  calls: number;
}

/**
 * What a dashboard may show of a key: at most its last four characters, and fewer for short
 * keys, so that the hint is never most of the key.
 */
export function keyHint(key: string): string {
  return `…${key.slice(key.length - Math.min(4, Math.floor(key.length / 3)))}`;
}

export class KeyPool {
  readonly #entries: Entry[];
  readonly #byKey = new Map<string, Entry>();
  readonly #now: () => number;
  readonly #rateLimitedMs: number;
  readonly #rateLimitedMaxMs: number;
  readonly #refusedMs: number;
  /** where the next turn starts */
  #next = 0;

  /** `keys` in order; an empty or repeated one is left out (a repeat would get twice the turns). */
  constructor(keys: readonly string[], options: KeyPoolOptions = {}) {
    this.#entries = [];
    for (const key of keys) {
      if (!key || this.#byKey.has(key)) continue;
      const entry: Entry = {
        key,
        hint: keyHint(key),
        until: 0,
        failures: 0,
        rateLimited: 0,
        lastError: null,
        calls: 0,
      };
      this.#entries.push(entry);
      this.#byKey.set(key, entry);
    }
    this.#now = options.now ?? Date.now;
    this.#rateLimitedMs = options.rateLimitedMs ?? RATE_LIMITED_MS;
    this.#rateLimitedMaxMs = options.rateLimitedMaxMs ?? RATE_LIMITED_MAX_MS;
    this.#refusedMs = options.refusedMs ?? REFUSED_MS;
  }

  get size(): number {
    return this.#entries.length;
  }

  /**
   * The key for the next call: the next in turn of those not cooling down and not in
   * `except`; when there is none, the one whose cooldown ends first, since the upstream, not
   * the gateway, decides whether a key works. Undefined when the pool has no key.
   */
  pick(except?: ReadonlySet<string>): string | undefined {
    const n = this.#entries.length;
    if (!n) return undefined;
    const now = this.#now();
    for (let i = 0; i < n; i++) {
      const at = (this.#next + i) % n;
      const entry = this.#entries[at]!;
      if (entry.until > now || except?.has(entry.key)) continue;
      this.#next = (at + 1) % n;
      entry.calls++;
      return entry.key;
    }
    let first = this.#entries[0]!;
    for (const entry of this.#entries) if (entry.until < first.until) first = entry;
    first.calls++;
    return first.key;
  }

  /** Whether a key outside `except` is not cooling down: whether another try could use a fresh key. */
  hasReady(except: ReadonlySet<string>): boolean {
    const now = this.#now();
    return this.#entries.some((e) => e.until <= now && !except.has(e.key));
  }

  /**
   * Cools `key` down for what the upstream said: a 429 for its retry-after (bounded), else
   * for a time that doubles with each 429 in a row up to a cap; a refused key for longer.
   */
  cool(key: string, fault: KeyFault, retryAfterMs?: number): void {
    const entry = this.#byKey.get(key);
    if (!entry) return;
    entry.failures++;
    entry.lastError = FAULT_WORDS[fault];
    let ms: number;
    if (fault === "rate_limited") {
      entry.rateLimited++;
      ms =
        retryAfterMs !== undefined
          ? Math.min(Math.max(0, retryAfterMs), RETRY_AFTER_MAX_MS)
          : Math.min(this.#rateLimitedMs * 2 ** Math.min(entry.rateLimited - 1, 20), this.#rateLimitedMaxMs);
    } else ms = this.#refusedMs;
    entry.until = Math.max(entry.until, this.#now() + ms);
  }

  /** The upstream took the key: its failures are forgotten (its last error stays, as history). */
  succeeded(key: string): void {
    const entry = this.#byKey.get(key);
    if (!entry) return;
    entry.failures = 0;
    entry.rateLimited = 0;
  }

  /** Each key's state, in configured order, with its hint and never the key. */
  states(): KeyState[] {
    const now = this.#now();
    return this.#entries.map((e, index) => {
      const cooling = e.until > now;
      return {
        index,
        hint: e.hint,
        state: cooling ? "cooling" : "ready",
        cooling_until: cooling ? e.until : null,
        failures: e.failures,
        last_error: e.lastError,
        calls: e.calls,
      };
    });
  }
}
