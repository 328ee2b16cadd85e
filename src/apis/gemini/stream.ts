// A streamed Gemini answer as `:streamGenerateContent?alt=sse` sends it: `data:` events, each a
// GenerateContentResponse holding what is new, the one carrying the finishReason last, with
// the usage. Gemini's stream has no end marker but that last event: it is sent once the call
// is recorded (as chat's `[DONE]` is), so a stream without it is not complete. From a Gemini
// upstream its own events pass on, restamped, the finishing ones held until the record; from
// any other the canonical chunks are translated, function calls sent whole (Gemini streams
// them so). A failure mid-way is an `{"error": …}` event, which Google's SDKs raise.
import type { Chunk, FinishReason, NativeEvent } from "../../domain/completion.ts";
import type { GatewayError } from "../../errors/index.ts";
import { safetyExtension, withheldNotice } from "../../safety/withheld.ts";
import type { AnswerContext, SseEvent, StreamEnd, StreamRenderer } from "../types.ts";
import { finishReason, functionCallPart, type RenderOptions, reasoningOf, usageMetadata } from "./answer.ts";
import { googleErrorBody } from "./errors.ts";

type Json = Record<string, unknown>;

interface ToolDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** A function call being streamed in pieces, sent once whole. */
interface PendingCall {
  id: string | undefined;
  name: string;
  arguments: string;
}

export class GeminiStream implements StreamRenderer {
  readonly #context: AnswerContext;
  readonly #options: RenderOptions;
  /** decided by the first chunk: the upstream's own events, or translated chunks */
  #native: boolean | undefined;
  /** native: the upstream's events from its first finishing one on, held until the record */
  readonly #held: Json[] = [];
  /** translated: the function calls of each candidate not yet sent, by their canonical index */
  readonly #calls = new Map<number, Map<number, PendingCall>>();
  readonly #finish = new Map<number, FinishReason>();
  /** the candidates something was sent for */
  readonly #sent = new Set<number>();
  #end: StreamEnd | undefined;

  constructor(context: AnswerContext, options: RenderOptions) {
    this.#context = context;
    this.#options = options;
  }

  chunk(chunk: Chunk): readonly SseEvent[] {
    this.#native ??= chunk.native !== undefined;
    if (this.#native) return chunk.native ? this.#passNative(chunk.native) : [];
    const candidates: Json[] = [];
    for (const choice of chunk.choices) {
      const delta = choice.delta as Json;
      const parts: Json[] = [];
      const reasoning = this.#options.thoughts ? reasoningOf(delta) : undefined;
      if (reasoning) parts.push({ text: reasoning, thought: true });
      if (typeof delta.content === "string" && delta.content) parts.push({ text: delta.content });
      if (Array.isArray(delta.tool_calls))
        for (const call of delta.tool_calls as ToolDelta[]) this.#collect(choice.index, call);
      if (choice.finish_reason) {
        this.#finish.set(choice.index, choice.finish_reason);
        parts.push(...this.#whole(choice.index));
      }
      if (parts.length) candidates.push(this.#candidate(choice.index, parts));
    }
    return candidates.length ? [this.#event({ candidates })] : [];
  }

  finish(end: StreamEnd): readonly SseEvent[] {
    this.#end = end;
    const out: SseEvent[] = [];
    if (!this.#native && !end.withheld) {
      // calls of a candidate whose finish never came still go whole
      const candidates = [...this.#calls.keys()].flatMap((index) => {
        const parts = this.#whole(index);
        return parts.length ? [this.#candidate(index, parts)] : [];
      });
      if (candidates.length) out.push(this.#event({ candidates }));
    }
    if (end.withheld) {
      // The notice after whatever was released before the flag, in each candidate.
      const candidates = this.#indexes(end).map((index) =>
        this.#candidate(index, [
          { text: `${this.#sent.has(index) ? "\n\n" : ""}${withheldNotice(this.#context.requestId)}` },
        ]),
      );
      out.push(this.#event({ candidates }));
    }
    return out;
  }

  done(): readonly SseEvent[] {
    const end = this.#end!;
    if (this.#native && !end.withheld) return this.#held.map((data) => ({ data: JSON.stringify(data) }));
    // Withheld: an ordinary end of turn (STOP), as for a whole answer (./answer.ts).
    const candidates = this.#indexes(end).map((index) => ({
      content: { parts: [{ text: "" }], role: "model" },
      finishReason: end.withheld ? "STOP" : finishReason(this.#finish.get(index)),
      index,
    }));
    return [
      this.#event({
        candidates,
        usageMetadata: usageMetadata(end.usage),
        ...(end.withheld ? { safety: safetyExtension(end.withheld) } : {}),
      }),
    ];
  }

  error(error: GatewayError): readonly SseEvent[] {
    return [{ data: JSON.stringify(googleErrorBody(error)) }];
  }

  /** The candidates the stream carried, or the first when it carried none. */
  #indexes(end: StreamEnd): number[] {
    const indexes = new Set([...end.choices, ...this.#sent]);
    return indexes.size ? [...indexes].sort((a, b) => a - b) : [0];
  }

  #event(fields: Json): SseEvent {
    return {
      data: JSON.stringify({
        ...fields,
        modelVersion: this.#context.model,
        responseId: this.#context.requestId,
      }),
    };
  }

  #candidate(index: number, parts: Json[]): Json {
    this.#sent.add(index);
    return { content: { parts, role: "model" }, index };
  }

  #collect(choice: number, call: ToolDelta): void {
    let calls = this.#calls.get(choice);
    if (!calls) {
      calls = new Map();
      this.#calls.set(choice, calls);
    }
    const key = call.index ?? 0;
    const pending = calls.get(key);
    if (!pending)
      calls.set(key, {
        id: call.id,
        name: call.function?.name ?? "",
        arguments: call.function?.arguments ?? "",
      });
    else {
      if (call.function?.name) pending.name ||= call.function.name;
      if (call.function?.arguments) pending.arguments += call.function.arguments;
    }
  }

  /** The candidate's pending calls as whole functionCall parts, in their order. */
  #whole(choice: number): Json[] {
    const calls = this.#calls.get(choice);
    if (!calls) return [];
    this.#calls.delete(choice);
    return [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => functionCallPart({ id: c.id, function: { name: c.name, arguments: c.arguments } }));
  }

  /**
   * The upstream's events, restamped; from the first that finishes a candidate (or says the
   * prompt was blocked) on, held for the record.
   */
  #passNative(events: NativeEvent[]): SseEvent[] {
    const out: SseEvent[] = [];
    for (const e of events) {
      const data: Json = {
        ...e.data,
        modelVersion: this.#context.model,
        responseId: this.#context.requestId,
      };
      const candidates = Array.isArray(data.candidates) ? (data.candidates as Json[]) : [];
      for (const [i, c] of candidates.entries()) this.#sent.add(typeof c.index === "number" ? c.index : i);
      const finishing =
        candidates.some((c) => c.finishReason) || (data.promptFeedback as Json | undefined)?.blockReason;
      if (this.#held.length || finishing) this.#held.push(data);
      else out.push({ data: JSON.stringify(data) });
    }
    return out;
  }
}
