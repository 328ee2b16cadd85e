// Limits console login attempts: after 5 failures for one e-mail, or 20 from one client
// address, within 15 minutes, further attempts are refused (even with the right password)
// until the oldest failure leaves the window. An attempt counts as a failure from the moment
// it is admitted, before its password is checked, and the check of the limit and the count
// are one synchronous step: concurrent attempts cannot all pass the check while the first
// ones are still hashing. A successful login takes its own count back. In memory, per
// process: several instances each keep their own counts until the Redis implementation shares
// them, so N instances allow up to N times the attempts.

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

  /**
   * Admits an attempt and counts it as a failure at once, or refuses it: `retryAfterMs` is 0
   * when admitted (`at` then names the attempt for succeed()), else how long until one is.
   */
  attempt(email: string, address: string, now = Date.now()): { retryAfterMs: number; at: number } {
    const retryAfterMs = Math.max(
      this.#wait(`e:${email}`, this.#limits.perEmail, now),
      this.#wait(`a:${address}`, this.#limits.perAddress, now),
    );
    if (retryAfterMs === 0) this.#count(email, address, now);
    return { retryAfterMs, at: now };
  }

  #count(email: string, address: string, now: number): void {
    for (const subject of [`e:${email}`, `a:${address}`]) {
      const times = this.#recent(subject, now) ?? [];
      times.push(now);
      // re-inserted so the map's order is least recently failed first
      this.#failures.delete(subject);
      this.#failures.set(subject, times);
    }
    if (this.#failures.size > MAX_SUBJECTS) this.#sweep(now);
  }

  /**
   * A successful login clears the e-mail's failures, and takes back the count of its own
   * attempt (`at`, from attempt()) from the address; the address's other failures stay.
   */
  succeed(email: string, address: string, at: number): void {
    this.#failures.delete(`e:${email}`);
    const times = this.#failures.get(`a:${address}`);
    const i = times?.indexOf(at) ?? -1;
    if (i >= 0) times!.splice(i, 1);
    if (times && !times.length) this.#failures.delete(`a:${address}`);
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
