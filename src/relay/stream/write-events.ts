// The last stream stage: writes each event to the client, waiting while the socket is full
// (backpressure reaches the upstream: nothing is read ahead). The response starts with the
// first event; `started` says whether errors can still be answered with a status.
import type { StreamSink } from "../call.ts";

export class EventWriter {
  readonly #sink: StreamSink;
  readonly #onStart: () => void;
  started = false;

  constructor(sink: StreamSink, onStart: () => void) {
    this.#sink = sink;
    this.#onStart = onStart;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.#sink.start();
    this.#onStart();
  }

  async write(event: string): Promise<void> {
    this.start();
    const wait = this.#sink.event(event);
    if (wait) await wait;
  }

  async writeAll(events: AsyncIterable<string>): Promise<void> {
    for await (const event of events) await this.write(event);
  }

  /** Ends the stream: with `[DONE]` when it completed, without when it failed. */
  end(done: boolean): Promise<void> | void {
    this.start();
    if (!done) return this.#sink.end();
    return this.write("[DONE]").then(() => this.#sink.end());
  }
}
