// The bound on answers withheld for one key: a key whose answers content safety withheld
// `max` times within `window_ms` is refused (429 `withheld_repeats`, `x-should-retry: false`)
// until the oldest of them leaves the window. Coding agents retry what looks like a failure:
// a scripted model whose every answer was withheld kept Codex sending the same turn 469 times
// in two minutes, each one an upstream call charged to the key. The answers themselves no
// longer look like failures (src/relay/review.ts, withheldNotice); this is the backstop for a
// client that loops anyway.
//
// Per instance, by design (docs/decisions/0022-coding-agents.md): a loop is one client on one connection, which
// stays on one instance; behind N instances the bound is at most N × max per window, still
// bounded, while the shared rate limits, quotas and budgets go on applying to every call.
import { GatewayError } from "../errors/index.ts";

/** Keys with withheld answers kept before the expired ones are swept out. */
const SWEEP_AT = 10_000;

export class WithheldLimiter {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  /** per key, when its answers were withheld within the window (oldest first, at most `max`) */
  readonly #times = new Map<string, number[]>();

  constructor(limit: { max: number; window_ms: number }, now: () => number = Date.now) {
    this.#max = limit.max;
    this.#windowMs = limit.window_ms;
    this.#now = now;
  }

  /** Notes an answer of this key that content safety withheld. */
  note(keyId: string): void {
    if (!this.#max) return;
    const now = this.#now();
    if (this.#times.size >= SWEEP_AT) this.#sweep(now);
    const times = this.#recent(keyId, now) ?? [];
    times.push(now);
    if (times.length > this.#max) times.shift();
    this.#times.set(keyId, times);
  }

  /** Throws 429 withheld_repeats while the key has `max` withheld answers within the window. */
  check(keyId: string): void {
    if (!this.#max || !this.#times.size) return;
    const now = this.#now();
    const times = this.#recent(keyId, now);
    if (!times || times.length < this.#max) return;
    const retryAfter = Math.max(1, Math.ceil((times[0]! + this.#windowMs - now) / 1000));
    throw new GatewayError("withheld_repeats", {
      message:
        `This API key's answers were withheld by the gateway's content policy ${times.length} times ` +
        `in the last ${Math.round(this.#windowMs / 1000)} s, so its calls are refused for ${retryAfter} s. ` +
        "Change the request rather than sending it again.",
      headers: { "retry-after": String(retryAfter) },
    });
  }

  /** The key's withheld answers still within the window (undefined, and forgotten, when none). */
  #recent(keyId: string, now: number): number[] | undefined {
    const times = this.#times.get(keyId);
    if (!times) return undefined;
    const from = now - this.#windowMs;
    while (times.length && times[0]! <= from) times.shift();
    if (times.length) return times;
    this.#times.delete(keyId);
    return undefined;
  }

  #sweep(now: number): void {
    for (const key of [...this.#times.keys()]) this.#recent(key, now);
  }
}
