// Helpers the end-to-end suites share: a bounded wait, reading an SSE answer as the client
// got it, and the mock upstream's prompt count.
import assert from "node:assert/strict";

/** Polls `check` until it holds; fails (never hangs) after `ms`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  ms = 3_000,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out after ${ms} ms waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface Stream {
  /** every JSON event, in order (error events included) */
  events: any[];
  /** the text of each content delta that carried text */
  contents: string[];
  /** whether it ended with data: [DONE] */
  done: boolean;
}

/**
 * An SSE body as the gateway sends it: `data: …` events, [DONE] at most once and last, and
 * keep-alive comments (`: …`), which clients ignore.
 */
export function parseStream(text: string): Stream {
  assert.ok(text.endsWith("\n\n"), "the SSE body ends with a blank line");
  const payloads = text
    .slice(0, -2)
    .split("\n\n")
    .filter((e) => !e.startsWith(": "))
    .map((e) => {
      assert.ok(e.startsWith("data: "), `event framed as "data: …": ${JSON.stringify(e)}`);
      return e.slice("data: ".length);
    });
  const done = payloads.at(-1) === "[DONE]";
  const data = done ? payloads.slice(0, -1) : payloads;
  assert.ok(!data.includes("[DONE]"), "[DONE] comes last, once");
  const events = data.map((p) => JSON.parse(p));
  const contents: string[] = [];
  for (const e of events)
    for (const c of e.choices ?? [])
      if (typeof c.delta?.content === "string" && c.delta.content) contents.push(c.delta.content);
  return { events, contents, done };
}

/** Words across the messages: what the mock upstream reports as prompt_tokens. */
export function mockPromptTokens(messages: { content: string }[]): number {
  return Math.max(
    1,
    messages.reduce((n, m) => n + m.content.split(/\s+/).filter(Boolean).length, 0),
  );
}

/** One event of a stream whose events are named (Anthropic's Messages API). */
export interface NamedEvent {
  event: string;
  data: any;
}

/**
 * An SSE body of named events (`event: <type>` then `data: {…}`, the name repeating the data's
 * `type`, as Anthropic frames them), keep-alive comments left out.
 */
export function parseNamedStream(text: string): NamedEvent[] {
  assert.ok(text.endsWith("\n\n"), "the SSE body ends with a blank line");
  return text
    .slice(0, -2)
    .split("\n\n")
    .filter((e) => !e.startsWith(": "))
    .map((e) => {
      const m = /^event: ([a-z_]+)\ndata: (.*)$/s.exec(e);
      assert.ok(m, `event framed as "event: …\\ndata: …": ${JSON.stringify(e)}`);
      const data = JSON.parse(m[2]!);
      assert.equal(data.type, m[1], "the event's name repeats its data's type");
      return { event: m[1]!, data };
    });
}
