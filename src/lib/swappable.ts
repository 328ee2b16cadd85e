// A value replaced while in use: each user holds the value it started with until it lets go,
// new users get the newest, and a replaced value is retired (its connections closed, say) once
// the last user of it let go. The gateway's call settings are one (src/relay/settings.ts): a
// configuration reload swaps them between calls, never under one.

export interface Held<T> {
  readonly value: T;
  /** lets go of the value; a second call does nothing */
  release(): void;
}

interface Slot<T> {
  value: T;
  users: number;
  replaced: boolean;
}

export class Swappable<T> {
  #slot: Slot<T>;
  readonly #retire: (value: T) => Promise<void>;
  /** retirements under way, so close() can wait for them */
  readonly #retiring = new Set<Promise<void>>();

  /** `retire` must not throw: it is called when nobody is left to tell. */
  constructor(value: T, retire: (value: T) => Promise<void>) {
    this.#slot = { value, users: 0, replaced: false };
    this.#retire = retire;
  }

  /** The newest value, for a use that holds nothing beyond the moment. */
  get current(): T {
    return this.#slot.value;
  }

  /** The newest value, kept from retirement until `release()`. */
  hold(): Held<T> {
    const slot = this.#slot;
    slot.users++;
    let released = false;
    return {
      value: slot.value,
      release: () => {
        if (released) return;
        released = true;
        slot.users--;
        if (slot.replaced && slot.users === 0) this.#retireSlot(slot);
      },
    };
  }

  /** New users get `next`; the value it replaces is retired once its last user let go. */
  replace(next: T): void {
    const old = this.#slot;
    this.#slot = { value: next, users: 0, replaced: false };
    old.replaced = true;
    if (old.users === 0) this.#retireSlot(old);
  }

  /**
   * Retires the newest value too, now, and resolves once every retirement is over: for the
   * end, once every user let go (a value still held when replaced is retired by its release).
   */
  async close(): Promise<void> {
    const last = this.#slot;
    if (!last.replaced) {
      last.replaced = true;
      this.#retireSlot(last);
    }
    while (this.#retiring.size) await Promise.all([...this.#retiring]);
  }

  #retireSlot(slot: Slot<T>): void {
    const retiring = this.#retire(slot.value).finally(() => this.#retiring.delete(retiring));
    this.#retiring.add(retiring);
  }
}
