// A streamed Messages answer as Anthropic sends it: `message_start`, a `ping`, per content block
// `content_block_start` / `content_block_delta`* / `content_block_stop`, then `message_delta`
// (stop reason and cumulative usage) and `message_stop` once the call is recorded; `error` when
// it fails mid-way. From an Anthropic upstream its own events pass through (restamped, its
// message_delta and message_stop held until the record); from any other the canonical chunks
// are translated. The first chunk says which: one deployment answers a whole stream.
//
// Usage where Anthropic's clients read it: `message_start` carries the input figures (clients
// such as LangChain's ChatAnthropic take input tokens from a stream's first event only), and
// `message_delta` all four, cumulative and final. A translated upstream counts the prompt at
// the end, so its message_start says what is known when the answer starts: the upstream's own
// figures if its first chunks carried any, else the gateway's local count of the prompt
// (o200k_base, the count it estimates with). message_delta then carries the figures as
// charged (the upstream's when it reported them), which the SDKs' final message takes.
//
// A withheld answer ends as an ordinary turn (`end_turn`) whose last text block is the
// gateway's notice, naming the request: Claude Code words `stop_reason: refusal` as Anthropic's
// own usage-policy refusal.

import type { Chunk, NativeEvent, Usage } from "../../domain/completion.ts";
import type { GatewayError } from "../../errors/index.ts";
import { safetyExtension, withheldNotice } from "../../safety/withheld.ts";
import type { AnswerContext, AnswerUsage, SseEvent, StreamEnd, StreamRenderer } from "../types.ts";
import { anthropicUsage, messageId, reasoningOf, stopReason } from "./answer.ts";
import { anthropicErrorBody } from "./errors.ts";

const event = (data: { type: string; [field: string]: unknown }): SseEvent => ({
  event: data.type,
  data: JSON.stringify(data),
});

const PING = event({ type: "ping" });

type BlockKind = "text" | "thinking" | "tool_use";

/** Anthropic's usage object of a `message_start`: the input figures known, no output yet. */
function startUsage(usage: Pick<AnswerUsage, "prompt" | "cachedInput" | "cacheWrite"> | undefined) {
  const figures = usage ?? { prompt: 0, cachedInput: 0, cacheWrite: 0 };
  return {
    ...anthropicUsage({ ...figures, completion: 0, reasoning: 0, reported: undefined }),
    output_tokens: 0,
  };
}

interface ToolDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

export class MessagesStream implements StreamRenderer {
  readonly #context: AnswerContext;
  readonly #id: string;
  /** decided by the first chunk: the upstream's own events, or translated chunks */
  #native: boolean | undefined;
  #started = false;
  /** translated: the content block open now, and its index */
  #open: { kind: BlockKind; index: number } | undefined;
  #blocks = 0;
  /** translated: the block index of each tool call (by the canonical tool-call index) */
  readonly #tools = new Map<number, number>();
  #finish: Chunk["choices"][number]["finish_reason"] = null;
  /** translated: the input figures message_start announces (see begin()) */
  #startUsage: Usage | undefined;
  /** native: the content blocks started and not yet stopped */
  readonly #nativeOpen = new Set<number>();
  /** native: the index after the last content block the upstream started */
  #nativeNext = 0;
  /** native: the upstream's closing events, held until the call is recorded */
  #nativeDelta: Record<string, unknown> | undefined;
  #end: StreamEnd | undefined;

  constructor(context: AnswerContext) {
    this.#context = context;
    this.#id = messageId(context.requestId);
  }

  /** Translated: what message_start will say of the prompt, from the upstream or a local count. */
  async begin(first: Chunk, usageSoFar: () => Promise<Usage>): Promise<void> {
    this.#native ??= first.native !== undefined;
    if (!this.#native) this.#startUsage = await usageSoFar();
  }

  chunk(chunk: Chunk): readonly SseEvent[] {
    this.#native ??= chunk.native !== undefined;
    if (this.#native) return chunk.native ? this.#passNative(chunk.native) : [];
    const out: SseEvent[] = [];
    this.#start(out);
    for (const choice of chunk.choices) {
      if (choice.index !== 0) continue; // Messages has one answer per request
      const delta = choice.delta as Record<string, unknown>;
      const reasoning = reasoningOf(delta);
      if (reasoning) this.#delta(out, "thinking", { type: "thinking_delta", thinking: reasoning });
      if (typeof delta.content === "string" && delta.content)
        this.#delta(out, "text", { type: "text_delta", text: delta.content });
      if (Array.isArray(delta.tool_calls))
        for (const call of delta.tool_calls as ToolDelta[]) this.#tool(out, call);
      if (choice.finish_reason) this.#finish = choice.finish_reason;
    }
    return out;
  }

  finish(end: StreamEnd): readonly SseEvent[] {
    this.#end = end;
    const out: SseEvent[] = [];
    // The review may have held back everything, message_start included: it then says the
    // figures as charged.
    this.#startUsage ??= end.usage;
    this.#start(out);
    if (this.#native) {
      // What the review held back is not sent: its blocks end here.
      if (end.withheld)
        for (const index of this.#nativeOpen) out.push(event({ type: "content_block_stop", index }));
      this.#nativeOpen.clear();
    } else this.#close(out);
    if (end.withheld) {
      // The notice as a text block of its own after whatever was released before the flag.
      const next = this.#native ? this.#nativeNext : this.#blocks++;
      out.push(
        event({ type: "content_block_start", index: next, content_block: { type: "text", text: "" } }),
        event({
          type: "content_block_delta",
          index: next,
          delta: { type: "text_delta", text: withheldNotice(this.#context.requestId) },
        }),
        event({ type: "content_block_stop", index: next }),
      );
    }
    return out;
  }

  done(): readonly SseEvent[] {
    const end = this.#end!;
    let delta: Record<string, unknown>;
    if (this.#native && this.#nativeDelta && !end.withheld) delta = this.#nativeDelta;
    else
      delta = {
        type: "message_delta",
        delta: { stop_reason: end.withheld ? "end_turn" : stopReason(this.#finish), stop_sequence: null },
        usage: anthropicUsage(end.usage),
        ...(end.withheld ? { safety: safetyExtension(end.withheld) } : {}),
      };
    return [{ event: "message_delta", data: JSON.stringify(delta) }, event({ type: "message_stop" })];
  }

  error(error: GatewayError): readonly SseEvent[] {
    return [event(anthropicErrorBody(error))];
  }

  /** The upstream's events, but for the closing ones, which wait for the record. */
  #passNative(events: NativeEvent[]): SseEvent[] {
    const out: SseEvent[] = [];
    for (const e of events) {
      const data = e.data;
      switch (data.type) {
        case "message_start":
          this.#started = true;
          data.message = { ...(data.message as object), id: this.#id, model: this.#context.model };
          break;
        case "content_block_start":
          this.#nativeOpen.add(data.index as number);
          this.#nativeNext = Math.max(this.#nativeNext, (data.index as number) + 1);
          break;
        case "content_block_stop":
          this.#nativeOpen.delete(data.index as number);
          break;
        case "message_delta":
          this.#nativeDelta = data;
          continue;
        case "message_stop":
          continue;
      }
      out.push({ event: e.event, data: JSON.stringify(data) });
    }
    return out;
  }

  #start(out: SseEvent[]): void {
    if (this.#started) return;
    this.#started = true;
    out.push(
      event({
        type: "message_start",
        message: {
          id: this.#id,
          type: "message",
          role: "assistant",
          model: this.#context.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          // What is known of the prompt now (begin()); the final figures come with message_delta.
          usage: startUsage(this.#startUsage),
        },
      }),
      PING,
    );
  }

  #close(out: SseEvent[]): void {
    if (!this.#open) return;
    out.push(event({ type: "content_block_stop", index: this.#open.index }));
    this.#open = undefined;
  }

  /** Opens a block of `kind` unless one is open (text and thinking continue theirs). */
  #openBlock(out: SseEvent[], kind: BlockKind, block: Record<string, unknown>): number {
    this.#close(out);
    const index = this.#blocks++;
    this.#open = { kind, index };
    out.push(event({ type: "content_block_start", index, content_block: block }));
    return index;
  }

  #delta(out: SseEvent[], kind: "text" | "thinking", delta: Record<string, unknown>): void {
    let index = this.#open?.kind === kind ? this.#open.index : undefined;
    index ??= this.#openBlock(
      out,
      kind,
      kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" },
    );
    out.push(event({ type: "content_block_delta", index, delta }));
  }

  #tool(out: SseEvent[], call: ToolDelta): void {
    const key = call.index ?? 0;
    let index = this.#tools.get(key);
    if (index === undefined) {
      index = this.#openBlock(out, "tool_use", {
        type: "tool_use",
        id: call.id || `toolu_${this.#id.slice(4)}_${key}`,
        name: call.function?.name ?? "",
        input: {},
      });
      this.#tools.set(key, index);
    }
    const args = call.function?.arguments;
    // An earlier call's arguments arriving late still name its block.
    if (args)
      out.push(
        event({
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: args },
        }),
      );
  }
}
