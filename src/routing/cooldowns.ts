// Which deployments are cooling down, and the count of failures that cools them. Reads are
// synchronous, from what this instance knows: routing a call never waits for a round trip.
// Changes go through one interface whether they stay in this process (MemoryCooldowns) or
// are shared by every instance (RedisCooldowns, when store.redis_url is set).

export type CooldownReason = "failures" | "rate_limited";

export interface Cooldown {
  /** Unix ms when it ends; after it, one call probes the deployment until the verdict */
  until: number;
  reason: CooldownReason;
}

export interface CooldownSettings {
  /** counted failures within windowMs that start a cooldown */
  failures: number;
  windowMs: number;
  /** how long a cooldown for failures lasts */
  ms: number;
}

/** Told of every cooldown this instance starts: metrics and logs. */
export type CooldownListener = (deployment: string, cooldown: Cooldown) => void;

export interface CooldownStore {
  /**
   * The deployment's cooldown as this instance knows it; undefined when it is healthy. A
   * cooldown whose `until` has passed stays until a probe decides.
   */
  get(deployment: string): Cooldown | undefined;
  /** whether a probe of the deployment is under way (as this instance knows) */
  probing(deployment: string): boolean;
  /** counted failures within the window, as this instance knows them (the health view) */
  failures(deployment: string): number;
  /** A failure that counts: the `failures`th within the window starts a cooldown. */
  fail(deployment: string): Promise<void>;
  /** Cools the deployment down at once (a rate limit, a failed probe), ending any probe. */
  coolDown(deployment: string, ms: number, reason: CooldownReason): Promise<void>;
  /** For a deployment whose cooldown is over: true for the one call that probes it. */
  takeProbe(deployment: string): Promise<boolean>;
  /** It answered while cooling down (a probe, or a try when all were cooling): it is back. */
  recovered(deployment: string): Promise<void>;
  /** A probe that ended without a verdict (the client left): another call may probe. */
  releaseProbe(deployment: string): Promise<void>;
  close(): Promise<void>;
}

/** Failure times of one deployment within the window (a sliding window, oldest first). */
export class FailureWindow {
  readonly #times = new Map<string, number[]>();
  readonly #windowMs: number;

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /** Adds a failure at `now`; the count within the window, this one included. */
  add(deployment: string, now: number): number {
    const times = this.#trimmed(deployment, now);
    times.push(now);
    this.#times.set(deployment, times);
    return times.length;
  }

  count(deployment: string, now = Date.now()): number {
    return this.#trimmed(deployment, now).length;
  }

  clear(deployment: string): void {
    this.#times.delete(deployment);
  }

  #trimmed(deployment: string, now: number): number[] {
    const times = this.#times.get(deployment) ?? [];
    const from = now - this.#windowMs;
    let drop = 0;
    while (drop < times.length && times[drop]! <= from) drop++;
    return drop ? times.slice(drop) : times;
  }
}

/** Cooldowns of this instance alone. */
export class MemoryCooldowns implements CooldownStore {
  readonly #settings: CooldownSettings;
  readonly #onCoolDown: CooldownListener;
  readonly #cooldowns = new Map<string, Cooldown>();
  readonly #probes = new Set<string>();
  readonly #window: FailureWindow;
  readonly #now: () => number;

  constructor(settings: CooldownSettings, onCoolDown: CooldownListener = () => {}, now = Date.now) {
    this.#settings = settings;
    this.#onCoolDown = onCoolDown;
    this.#window = new FailureWindow(settings.windowMs);
    this.#now = now;
  }

  get(deployment: string): Cooldown | undefined {
    return this.#cooldowns.get(deployment);
  }

  probing(deployment: string): boolean {
    return this.#probes.has(deployment);
  }

  failures(deployment: string): number {
    return this.#window.count(deployment, this.#now());
  }

  async fail(deployment: string): Promise<void> {
    if (this.#window.add(deployment, this.#now()) >= this.#settings.failures)
      await this.coolDown(deployment, this.#settings.ms, "failures");
  }

  async coolDown(deployment: string, ms: number, reason: CooldownReason): Promise<void> {
    const cooldown = { until: this.#now() + ms, reason };
    this.#cooldowns.set(deployment, cooldown);
    this.#probes.delete(deployment);
    // The probe after it decides afresh: failures before the cooldown do not count twice.
    this.#window.clear(deployment);
    this.#onCoolDown(deployment, cooldown);
  }

  async takeProbe(deployment: string): Promise<boolean> {
    if (this.#probes.has(deployment)) return false;
    this.#probes.add(deployment);
    return true;
  }

  async recovered(deployment: string): Promise<void> {
    this.#cooldowns.delete(deployment);
    this.#probes.delete(deployment);
  }

  async releaseProbe(deployment: string): Promise<void> {
    this.#probes.delete(deployment);
  }

  async close(): Promise<void> {}
}
