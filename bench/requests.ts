// The one request every run sends, and a preflight that checks each target answers it
// properly before any load: a fast stream of errors must not pass for a fast server.
import type { Target } from "./servers.ts";
import type { Mode } from "./types.ts";

/** A small chat: a system and a user message; `mock:tokens=N` sets the completion length. */
export function chatBody(model: string, tokens: number, mode: Mode): string {
  const body: Record<string, unknown> = {
    model,
    messages: [
      { role: "system", content: "You are a concise assistant." },
      { role: "user", content: `Write a short greeting. mock:tokens=${tokens}` },
    ],
  };
  // The gateway always asks its upstream for usage; asking for it directly too keeps the
  // mock's answer the same size on every path.
  if (mode === "stream") Object.assign(body, { stream: true, stream_options: { include_usage: true } });
  return JSON.stringify(body);
}

export function requestHeaders(target: Target): Record<string, string> {
  return { "content-type": "application/json", authorization: target.authorization };
}

function looksComplete(mode: Mode, text: string): boolean {
  if (mode === "stream") return text.includes('"delta"') && text.trimEnd().endsWith("data: [DONE]");
  try {
    const reply = JSON.parse(text) as { choices?: { message?: { content?: unknown } }[] };
    return typeof reply.choices?.[0]?.message?.content === "string";
  } catch {
    return false;
  }
}

/** Sends one request and throws, with what came back, unless it is a complete 200 answer. */
export async function preflight(target: Target, mode: Mode, tokens: number): Promise<void> {
  const response = await fetch(target.url, {
    method: "POST",
    headers: requestHeaders(target),
    body: chatBody(target.model, tokens, mode),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (response.status !== 200 || !looksComplete(mode, text))
    throw new Error(`${target.name} (${mode}) answered ${response.status}: ${text.slice(0, 500)}`);
}
