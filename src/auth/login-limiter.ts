// Limits console login attempts: after 5 failures for one e-mail, or 20 from one client
// address, within 15 minutes, further attempts are refused (even with the right password)
// until the oldest failure leaves the window. In memory, per process: several instances each
// keep their own counts until the Redis implementation shares them, so N instances allow up
// to N times the attempts.

export interface LoginLimits {
  perEmail: number;
  perAddress: number;
  windowMs: number;
}

export const LOGIN_LIMITS: LoginLimits = { perEmail: 5, perAddress: 20, windowMs: 15 * 60_000 };

/** Beyond this many tracked e-mails and addresses, the stalest are forgotten first. */
const MAX_SUBJECTS = 100_000;

export class LoginLimiter {
  readonly #limits: LoginLimits;
  /** "e:<email>" or "a:<address>" -> times of recent failures, oldest first */
  readonly #failures = new Map<string, number[]>();

  constructor(limits: LoginLimits = LOGIN_LIMITS) {
    this.#limits = limits;
  }

  /** Milliseconds until an attempt is allowed again; 0 when it is allowed now. */
  retryAfterMs(email: string, address: string, now = Date.now()): number {
    return Math.max(
      this.#wait(`e:${email}`, this.#limits.perEmail, now),
      this.#wait(`a:${address}`, this.#limits.perAddress, now),
    );
  }

  fail(email: string, address: string, now = Date.now()): void {
    for (const subject of [`e:${email}`, `a:${address}`]) {
      const times = this.#recent(subject, now) ?? [];
      times.push(now);
      // re-inserted so the map's order is least recently failed first
      this.#failures.delete(subject);
      this.#failures.set(subject, times);
    }
    if (this.#failures.size > MAX_SUBJECTS) this.#sweep(now);
  }

  /** A successful login clears the e-mail's failures (not the address's). */
  succeed(email: string): void {
    this.#failures.delete(`e:${email}`);
  }

  #recent(subject: string, now: number): number[] | undefined {
    const times = this.#failures.get(subject);
    if (!times) return undefined;
    const from = now - this.#limits.windowMs;
    while (times.length && times[0]! <= from) times.shift();
    if (!times.length) {
      this.#failures.delete(subject);
      return undefined;
    }
    return times;
  }

  #wait(subject: string, limit: number, now: number): number {
    const times = this.#recent(subject, now);
    if (!times || times.length < limit) return 0;
    // allowed again once enough failures have left the window to be under the limit
    return times[times.length - limit]! + this.#limits.windowMs - now;
  }

  #sweep(now: number): void {
    for (const subject of [...this.#failures.keys()]) this.#recent(subject, now);
    for (const subject of this.#failures.keys()) {
      if (this.#failures.size <= MAX_SUBJECTS) break;
      this.#failures.delete(subject);
    }
  }
}
