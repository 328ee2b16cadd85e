// Reads Server-Sent Events from a byte stream: yields each event's data (multi-line data
// joined by "\n"), in order. Shared by every adapter whose upstream streams SSE.

export interface SseEvent {
  event: string | undefined;
  data: string;
}

/**
 * What the caller does when reading fails or ends, inside the reader itself rather than in a
 * generator around it: a stream's every event passes through each generator it is read by.
 */
export interface SseHooks {
  /** what a read failure becomes (thrown instead of it) */
  failure?(err: unknown): unknown;
  /** after the last event, a failure, or the consumer stopping */
  done?(): void;
}

/** the decoder's option for every piece but the last: a piece may end inside a character */
const STREAM = { stream: true };

export async function* readSse(
  body: AsyncIterable<Uint8Array | string>,
  hooks: SseHooks = {},
): AsyncGenerator<SseEvent> {
  try {
    const decoder = new TextDecoder();
    let buffer = "";
    // One data line is the common event: its text, without an array to join.
    let data: string | undefined;
    let event: string | undefined;
    for await (const piece of body) {
      buffer += typeof piece === "string" ? piece : decoder.decode(piece, STREAM);
      let start = 0;
      for (let nl = buffer.indexOf("\n", start); nl !== -1; nl = buffer.indexOf("\n", start)) {
        const end = nl > start && buffer.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
        if (end === start) {
          if (data !== undefined) yield { event, data };
          data = undefined;
          event = undefined;
        } else if (buffer.startsWith("data:", start)) {
          const value = buffer.slice(buffer.charCodeAt(start + 5) === 32 ? start + 6 : start + 5, end);
          data = data === undefined ? value : `${data}\n${value}`;
        } else if (buffer.startsWith("event:", start)) {
          event = buffer.slice(start + 6, end).trim();
        }
        // comments (":") and id/retry fields carry nothing the relay uses
        start = nl + 1;
      }
      if (start) buffer = buffer.slice(start);
    }
    buffer += decoder.decode();
    if (buffer.endsWith("\r")) buffer = buffer.slice(0, -1);
    if (buffer.startsWith("data:")) {
      const value = buffer.charCodeAt(5) === 32 ? buffer.slice(6) : buffer.slice(5);
      data = data === undefined ? value : `${data}\n${value}`;
    }
    if (data !== undefined) yield { event, data };
  } catch (err) {
    throw hooks.failure ? hooks.failure(err) : err;
  } finally {
    hooks.done?.();
  }
}
