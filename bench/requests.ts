// The one question every run asks, in each client API's shape, and a preflight that checks
// each target answers it properly before any load: a fast stream of errors must not pass for
// a fast server.
import type { Target } from "./servers.ts";
import { type ClientApiName, isStream, type Mode } from "./types.ts";

const SYSTEM = "You are a concise assistant.";
/** `mock:tokens=N` sets the completion length. */
const question = (tokens: number) => `Write a short greeting. mock:tokens=${tokens}`;

/** The path of each API under the server's /v1. */
export const API_PATHS: Record<ClientApiName, string> = {
  chat: "/chat/completions",
  messages: "/messages",
  responses: "/responses",
};

/**
 * A small chat: a system and a user message. Every API's body becomes the same chat
 * completion upstream, so the targets differ only in the client API's own work.
 */
export function requestBody(api: ClientApiName, model: string, tokens: number, mode: Mode): string {
  const stream = isStream(mode);
  switch (api) {
    case "chat":
      return JSON.stringify({
        model,
        messages: [
          { role: "system", content: SYSTEM },
          { role: "user", content: question(tokens) },
        ],
        // The gateway always asks its upstream for usage; asking for it directly too keeps
        // the mock's answer the same size on every path.
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      });
    case "messages":
      return JSON.stringify({
        model,
        // required by the Messages API; above the completion, so the mock's cap never cuts it
        max_tokens: Math.max(1024, tokens),
        system: SYSTEM,
        messages: [{ role: "user", content: question(tokens) }],
        ...(stream ? { stream: true } : {}),
      });
    case "responses":
      return JSON.stringify({
        model,
        instructions: SYSTEM,
        input: question(tokens),
        // A stored response (the API's default) is one more insert per request: the store's
        // work, not the translation's, which is what this target measures.
        store: false,
        ...(stream ? { stream: true } : {}),
      });
  }
}

/** The key as each API's clients send it: Anthropic's SDKs in `x-api-key`, OpenAI's as a bearer. */
export function requestHeaders(target: Target): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (target.api === "messages") {
    headers["x-api-key"] = target.key;
    headers["anthropic-version"] = "2023-06-01";
  } else headers.authorization = `Bearer ${target.key}`;
  return headers;
}

/** The events of a server-sent event stream, in order: each one's `event:` name (or "") and `data:`. */
function sseEvents(text: string): { event: string; data: string }[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== "")
    .map((block) => {
      let event = "";
      const data: string[] = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      return { event, data: data.join("\n") };
    });
}

function parsed(text: string): Record<string, any> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === "object" ? (value as Record<string, any>) : undefined;
  } catch {
    return undefined;
  }
}

/** A text answer that ended as it should, in the API's own shape. */
function completeJson(api: ClientApiName, text: string): boolean {
  const reply = parsed(text);
  if (!reply) return false;
  switch (api) {
    case "chat":
      return typeof reply.choices?.[0]?.message?.content === "string";
    case "messages":
      return (
        reply.type === "message" &&
        reply.content?.[0]?.type === "text" &&
        typeof reply.content[0].text === "string" &&
        reply.stop_reason === "end_turn"
      );
    case "responses":
      return (
        reply.object === "response" &&
        reply.status === "completed" &&
        Array.isArray(reply.output) &&
        reply.output.some(
          (item: any) => item?.type === "message" && typeof item.content?.[0]?.text === "string",
        )
      );
  }
}

/** A stream that carried text and closed with the API's last event. */
function completeStream(api: ClientApiName, text: string): boolean {
  const events = sseEvents(text);
  const last = events.at(-1);
  if (!last) return false;
  switch (api) {
    case "chat":
      return events.some((e) => e.data.includes('"delta"')) && last.data === "[DONE]";
    case "messages":
      return (
        events.some((e) => e.event === "content_block_delta") &&
        last.event === "message_stop" &&
        parsed(last.data)?.type === "message_stop"
      );
    case "responses":
      return (
        events.some((e) => e.event === "response.output_text.delta") &&
        last.event === "response.completed" &&
        parsed(last.data)?.response?.status === "completed"
      );
  }
}

export function looksComplete(api: ClientApiName, mode: Mode, text: string): boolean {
  return isStream(mode) ? completeStream(api, text) : completeJson(api, text);
}

/**
 * Sends one request to each of the target's URLs (every gateway instance) and throws, with
 * what came back, unless each is a complete 200 answer.
 */
export async function preflight(target: Target, mode: Mode, tokens: number): Promise<void> {
  for (const url of target.urls) {
    const response = await fetch(url, {
      method: "POST",
      headers: requestHeaders(target),
      body: requestBody(target.api, target.model, tokens, mode),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    if (response.status !== 200 || !looksComplete(target.api, mode, text))
      throw new Error(
        `${target.name} (${mode}) at ${url} answered ${response.status}: ${text.slice(0, 500)}`,
      );
  }
}
