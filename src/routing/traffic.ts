// What this instance sees of each deployment's traffic: calls in flight (least-busy) and a
// moving average of the time to first byte (latency). Per instance: a least-busy choice
// balances this instance's calls, which is what it can know without a round trip.

/** weight of the newest sample in the moving average */
const ALPHA = 0.3;

interface Figures {
  inFlight: number;
  /** undefined before the first answer */
  latencyMs: number | undefined;
}

export class Traffic {
  readonly #figures = new Map<string, Figures>();

  #of(deployment: string): Figures {
    let f = this.#figures.get(deployment);
    if (!f) {
      f = { inFlight: 0, latencyMs: undefined };
      this.#figures.set(deployment, f);
    }
    return f;
  }

  started(deployment: string): void {
    this.#of(deployment).inFlight++;
  }

  ended(deployment: string): void {
    this.#of(deployment).inFlight--;
  }

  /** Time to first byte of an answer (a stream's first chunk, or a whole JSON answer). */
  answered(deployment: string, ms: number): void {
    const f = this.#of(deployment);
    f.latencyMs = f.latencyMs === undefined ? ms : f.latencyMs + ALPHA * (ms - f.latencyMs);
  }

  inFlight(deployment: string): number {
    return this.#figures.get(deployment)?.inFlight ?? 0;
  }

  latencyMs(deployment: string): number | undefined {
    return this.#figures.get(deployment)?.latencyMs;
  }
}
