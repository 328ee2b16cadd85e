// Requests and tokens per minute, as token buckets: each limit is a bucket of its size that
// refills continuously over a minute. A request takes one request and its reservation
// (prompt bound + output bound) from every bucket that applies to it (its key's and its
// account's); at settle the unused part is given back. RateLimits is the contract; this file
// holds the in-process buckets (one instance, or several each with their own), and
// redis-rate-limiter.ts the buckets several instances share.

export interface RateWindow {
  limit: number;
  remaining: number;
  /** time until the bucket is full again */
  resetMs: number;
}

export interface RateState {
  requests?: RateWindow;
  tokens?: RateWindow;
}

export interface RateSubject {
  /** "key:<id>" or "account:<id>" */
  id: string;
  rpm: number | undefined;
  tpm: number | undefined;
}

export interface RateTicket {
  readonly subjects: readonly RateSubject[];
  readonly tokens: number;
  /** shared buckets: the generation of the state the tokens were taken from */
  readonly epoch?: string;
}

/** A value, or a promise of it where the buckets are elsewhere (Redis). */
export type Maybe<T> = T | Promise<T>;

export interface RateLimits {
  /** Takes one request and `tokens` from every applicable bucket, or none if one is short. */
  admit(subjects: readonly RateSubject[], tokens: number): Maybe<Admission>;
  /** Takes `tokens` more for an admitted ticket, or none if a bucket is short. */
  admitTokens(ticket: RateTicket, tokens: number): Maybe<Admission>;
  /** Gives back the part of the admitted tokens that was not used. Never throws. */
  settle(ticket: RateTicket, actualTokens: number): void;
  /** The windows as they stand, without taking anything. */
  peek(subjects: readonly RateSubject[]): Maybe<RateState>;
  /** A subject's windows, for the live figures the CLI shows. */
  windows(subject: RateSubject): Maybe<RateState>;
  /** The subjects that changed since the last call. */
  drainChanged(): RateSubject[];
}

export type Admission =
  | { ok: true; ticket: RateTicket; state: RateState }
  | { ok: false; kind: "requests" | "tokens"; retryAfterMs: number; state: RateState };

const MINUTE = 60_000;

interface Bucket {
  capacity: number;
  level: number;
  at: number;
}

export class RateLimiter implements RateLimits {
  readonly #buckets = new Map<string, Bucket>();
  readonly #now: () => number;
  /** subjects whose windows changed since the last drainChanged(), for the live figures */
  #changed = new Map<string, RateSubject>();

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  #bucket(name: string, capacity: number, now: number): Bucket {
    let b = this.#buckets.get(name);
    if (!b) {
      b = { capacity, level: capacity, at: now };
      this.#buckets.set(name, b);
      return b;
    }
    b.level = Math.min(capacity, b.level + ((now - b.at) * capacity) / MINUTE);
    b.capacity = capacity; // a limit changed by the CLI applies from now on
    b.at = now;
    return b;
  }

  /** Takes one request and `tokens` from every applicable bucket, or none if one is short. */
  admit(subjects: readonly RateSubject[], tokens: number): Admission {
    const now = this.#now();
    const taken: [Bucket, number][] = [];
    for (const s of subjects) {
      for (const [kind, limit, need] of [
        ["requests", s.rpm, 1],
        ["tokens", s.tpm, tokens],
      ] as const) {
        if (limit === undefined) continue;
        const b = this.#bucket(`${s.id}|${kind}`, limit, now);
        // A request larger than the whole bucket passes when the bucket is full, and then
        // leaves it in debt, instead of never passing.
        const wanted = Math.min(need, b.capacity);
        if (b.level < wanted)
          return {
            ok: false,
            kind,
            retryAfterMs: Math.ceil(((wanted - b.level) * MINUTE) / b.capacity),
            state: this.#state(subjects, now),
          };
        taken.push([b, need]);
      }
    }
    for (const [b, need] of taken) b.level -= need;
    for (const s of subjects) this.#changed.set(s.id, s);
    return { ok: true, ticket: { subjects, tokens }, state: this.#state(subjects, now) };
  }

  /**
   * Takes `tokens` more for an admitted ticket from its token buckets, or none if one is
   * short. The request itself stays counted either way: it was admitted.
   */
  admitTokens(ticket: RateTicket, tokens: number): Admission {
    const now = this.#now();
    const taken: Bucket[] = [];
    for (const s of ticket.subjects) {
      if (s.tpm === undefined) continue;
      const b = this.#bucket(`${s.id}|tokens`, s.tpm, now);
      const wanted = Math.min(tokens, b.capacity);
      if (b.level < wanted)
        return {
          ok: false,
          kind: "tokens",
          retryAfterMs: Math.ceil(((wanted - b.level) * MINUTE) / b.capacity),
          state: this.#state(ticket.subjects, now),
        };
      taken.push(b);
    }
    for (const b of taken) b.level -= tokens;
    return {
      ok: true,
      ticket: { subjects: ticket.subjects, tokens: ticket.tokens + tokens },
      state: this.#state(ticket.subjects, now),
    };
  }

  /** Gives back the part of the admitted tokens that was not used (or takes the excess). */
  settle(ticket: RateTicket, actualTokens: number): void {
    const now = this.#now();
    for (const s of ticket.subjects) {
      this.#changed.set(s.id, s);
      if (s.tpm === undefined) continue;
      const b = this.#bucket(`${s.id}|tokens`, s.tpm, now);
      b.level = Math.min(b.capacity, b.level + ticket.tokens - actualTokens);
    }
  }

  /** The windows as they stand, without taking anything. */
  peek(subjects: readonly RateSubject[]): RateState {
    return this.#state(subjects, this.#now());
  }

  /** The tighter window of each kind across the subjects: what the client must respect. */
  #state(subjects: readonly RateSubject[], now: number): RateState {
    const state: RateState = {};
    for (const s of subjects) {
      for (const [kind, limit] of [
        ["requests", s.rpm],
        ["tokens", s.tpm],
      ] as const) {
        if (limit === undefined) continue;
        const b = this.#bucket(`${s.id}|${kind}`, limit, now);
        const window: RateWindow = {
          limit,
          remaining: Math.max(0, Math.floor(b.level)),
          resetMs: Math.ceil(((b.capacity - b.level) * MINUTE) / b.capacity),
        };
        const current = state[kind];
        if (!current || window.remaining < current.remaining) state[kind] = window;
      }
    }
    return state;
  }

  /** A subject's windows, for the live figures the CLI shows. */
  windows(subject: RateSubject): RateState {
    return this.#state([subject], this.#now());
  }

  /** The subjects that changed since the last call. */
  drainChanged(): RateSubject[] {
    const changed = [...this.#changed.values()];
    this.#changed.clear();
    return changed;
  }
}

/** OpenAI's duration format for the reset headers: "120ms", "1s", "6m0s". */
export function formatReset(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const seconds = Math.ceil(ms / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}

/** The x-ratelimit-* headers OpenAI clients read, for the windows that apply. */
export function rateHeaders(state: RateState): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const kind of ["requests", "tokens"] as const) {
    const w = state[kind];
    if (!w) continue;
    headers[`x-ratelimit-limit-${kind}`] = String(w.limit);
    headers[`x-ratelimit-remaining-${kind}`] = String(w.remaining);
    headers[`x-ratelimit-reset-${kind}`] = formatReset(w.resetMs);
  }
  return headers;
}

/** The buckets a request of this key draws from: the key's own (or its plan's) and its account's. */
export function rateSubjects(
  key: { id: string; rpm_limit: number | null; tpm_limit: number | null },
  accountId: string,
  plan:
    | { rate_limits: { key: { rpm?: number; tpm?: number }; account: { rpm?: number; tpm?: number } } }
    | undefined,
): RateSubject[] {
  const limits = plan?.rate_limits;
  return [
    {
      id: `key:${key.id}`,
      rpm: key.rpm_limit ?? limits?.key.rpm,
      tpm: key.tpm_limit ?? limits?.key.tpm,
    },
    { id: `account:${accountId}`, rpm: limits?.account.rpm, tpm: limits?.account.tpm },
  ];
}
