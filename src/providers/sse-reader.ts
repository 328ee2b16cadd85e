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

export async function* readSse(
  body: AsyncIterable<Uint8Array | string>,
  hooks: SseHooks = {},
): AsyncGenerator<SseEvent> {
  try {
    const decoder = new TextDecoder();
    let buffer = "";
    let data: string[] = [];
    let event: string | undefined;
    for await (const piece of body) {
      buffer += typeof piece === "string" ? piece : decoder.decode(piece, { stream: true });
      let start = 0;
      for (let nl = buffer.indexOf("\n", start); nl !== -1; nl = buffer.indexOf("\n", start)) {
        let line = buffer.slice(start, nl);
        start = nl + 1;
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "") {
          if (data.length) yield { event, data: data.join("\n") };
          data = [];
          event = undefined;
        } else if (line.startsWith("data:")) {
          data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
        } else if (line.startsWith("event:")) {
          event = line.slice(6).trim();
        }
        // comments (":") and id/retry fields carry nothing the relay uses
      }
      buffer = buffer.slice(start);
    }
    buffer += decoder.decode();
    if (buffer.endsWith("\r")) buffer = buffer.slice(0, -1);
    if (buffer.startsWith("data:"))
      data.push(buffer.charCodeAt(5) === 32 ? buffer.slice(6) : buffer.slice(5));
    if (data.length) yield { event, data: data.join("\n") };
  } catch (err) {
    throw hooks.failure ? hooks.failure(err) : err;
  } finally {
    hooks.done?.();
  }
}
