// The abort signal of one upstream call: the caller's signal (client gone, shutdown) or the
// provider's total timeout, whichever comes first. Unlike AbortSignal.timeout, its timer is
// cleared when the call ends, so a finished call holds no timer for the rest of total_ms
// (with the 10-minute default that kept ~800 B per request alive under load).
export class Deadline {
  readonly #controller = new AbortController();
  readonly #parent: AbortSignal;
  readonly #timer: NodeJS.Timeout;
  readonly #onAbort = () => this.#controller.abort(this.#parent.reason);

  constructor(parent: AbortSignal, totalMs: number) {
    this.#parent = parent;
    if (parent.aborted) this.#controller.abort(parent.reason);
    else parent.addEventListener("abort", this.#onAbort, { once: true });
    this.#timer = setTimeout(
      () => this.#controller.abort(new DOMException("the total timeout passed", "TimeoutError")),
      totalMs,
    );
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Call when the upstream call is over, however it ended. */
  end(): void {
    clearTimeout(this.#timer);
    this.#parent.removeEventListener("abort", this.#onAbort);
  }
}
