// The last stream stage: writes each event to the client, waiting while the socket is full
// (backpressure reaches the upstream: nothing is read ahead). The response starts with the
// first event, or with the first keep-alive comment when nothing came for `keepAliveMs`
// (reasoning models think for minutes; proxies close connections idle for 60 s). `started`
// says whether a failure can still be answered with a status.
import type { SseEvent } from "../../apis/types.ts";
import type { StreamSink } from "../call.ts";

export class EventWriter {
  readonly #sink: StreamSink;
  readonly #onFirstEvent: () => void;
  readonly #keepAlive: NodeJS.Timeout | undefined;
  started = false;
  #wroteEvent = false;

  constructor(sink: StreamSink, onFirstEvent: () => void, keepAliveMs?: number) {
    this.#sink = sink;
    this.#onFirstEvent = onFirstEvent;
    if (keepAliveMs)
      this.#keepAlive = setInterval(() => {
        this.start();
        this.#sink.comment("keep-alive");
      }, keepAliveMs);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.#sink.start();
  }

  /** Writes the event; a promise only while the client's socket is full (wait for it before the next). */
  write(event: SseEvent): Promise<void> | undefined {
    this.start();
    if (!this.#wroteEvent) {
      this.#wroteEvent = true;
      this.#onFirstEvent();
    }
    // traffic of its own: the next keep-alive is due a whole interval from now
    this.#keepAlive?.refresh();
    return this.#sink.event(event.data, event.event);
  }

  async writeAll(events: AsyncIterable<SseEvent>): Promise<void> {
    for await (const event of events) await this.write(event);
  }

  /** Writes the events in order; none: nothing is written (the response does not start). */
  async writeEvents(events: readonly SseEvent[]): Promise<void> {
    for (const event of events) await this.write(event);
  }

  /** Stops the keep-alive; for a stream that ends without being written (its failure is a status). */
  dispose(): void {
    clearInterval(this.#keepAlive);
  }

  /** Ends the stream (after its last events, which the client API decides). */
  async end(): Promise<void> {
    this.dispose();
    this.start();
    this.#sink.end();
  }
}
