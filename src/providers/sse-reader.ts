// Reads Server-Sent Events from a byte stream: yields each event's data (multi-line data
// joined by "\n"), in order. Shared by every adapter whose upstream streams SSE.

export interface SseEvent {
  event: string | undefined;
  data: string;
}

export async function* readSse(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent> {
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
  if (buffer.startsWith("data:")) data.push(buffer.charCodeAt(5) === 32 ? buffer.slice(6) : buffer.slice(5));
  if (data.length) yield { event, data: data.join("\n") };
}
