// The loop every adapter whose upstream streams SSE runs: each event's data parsed as JSON and
// handed to the adapter's reader, whose chunks pass on as they come. What an event means, and
// when the answer is whole, stays the adapter's own (its StreamReader).

import type { Chunk } from "../domain/completion.ts";
import { UpstreamError } from "../errors/upstream-error.ts";
import { parseJson } from "./http-upstream.ts";
import type { SseEvent } from "./sse-reader.ts";

/** What an adapter makes of its upstream's events. */
export interface StreamReader {
  /** the data of the upstream's end event where it is not JSON (OpenAI's `[DONE]`) */
  readonly endMarker?: string;
  /**
   * Whether the upstream's end event came. The events after it are read to the body's end but
   * not handled: leaving early would destroy the body, and the keep-alive connection with it.
   * Absent (with `end`): the upstream sends no end event, and every event is handled.
   */
  readonly done?: boolean;
  /** The chunks one event makes, given its data as JSON; throws the failure an event reports. */
  read(data: unknown, event: SseEvent): Iterable<Chunk>;
  /**
   * Once the body has ended, for an upstream without an end event: the chunks that close the
   * answer, or undefined when it is not whole. Absent: it is whole when an end event came.
   */
  end?(): Iterable<Chunk> | undefined;
}

/**
 * The chunks of a stream that `open` starts when the first chunk is asked for (not before:
 * a stream asked for and never read sends nothing). A body that ends before the answer is
 * whole broke off.
 */
export async function* streamChunks(
  open: () => Promise<AsyncIterable<SseEvent>>,
  reader: StreamReader,
): AsyncGenerator<Chunk> {
  let ended = false;
  for await (const event of await open()) {
    if (ended || reader.done) continue;
    if (event.data === reader.endMarker) {
      ended = true;
      continue;
    }
    yield* reader.read(parseJson(event.data, "the upstream sent a stream event that is not JSON"), event);
  }
  if (reader.end) {
    const last = reader.end();
    if (!last) throw brokeOff();
    yield* last;
  } else if (!ended && !reader.done) throw brokeOff();
}

const brokeOff = () => new UpstreamError("network", "the upstream stream ended before it was complete");
