// The canonical chunk stream as the Responses API's event sequence: response.created and
// response.in_progress; per output item output_item.added, its parts and deltas (reasoning
// text, output text, refusal, function arguments, custom tool input) and their …done events,
// output_item.done; then response.completed (or response.incomplete) with usage, or
// response.failed. Every event carries its sequence_number. Pure: the caller writes the
// events and says when the stream ends and with what usage.

import type { Chunk, FinishReason } from "../../domain/completion.ts";
import { FlatText } from "../../lib/streamed-text.ts";
import { namespacesOf, type ToolNamespaces } from "./namespaces.ts";
import type { ResponsesRequest } from "./request.ts";
import {
  type OutputItem,
  type ResponseIds,
  type ResponseObject,
  type ResponsesUsage,
  reasoningOf,
  responseObject,
  statusOf,
} from "./response.ts";

export interface ResponseEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

/**
 * An item being streamed, with what it has received so far: kept flat (FlatText), since a
 * Response keeps its whole text for its closing events and the store, and a text built by `+=`
 * a delta at a time costs 5-10 times its size (src/lib/streamed-text.ts).
 */
type Open =
  | { kind: "reasoning"; index: number; id: string; text: FlatText }
  | {
      kind: "message";
      index: number;
      id: string;
      text: FlatText;
      refusal: FlatText | undefined;
      textOpen: boolean;
    }
  | {
      kind: "function";
      index: number;
      id: string;
      callId: string;
      /** the name the client knows, and the upstream's (a namespace's tool flattened: ./namespaces.ts) */
      name: string;
      flatName: string;
      args: FlatText;
    }
  | {
      kind: "custom";
      index: number;
      id: string;
      callId: string;
      name: string;
      flatName: string;
      input: FlatText;
    };

export class ResponseEvents {
  readonly #req: ResponsesRequest;
  readonly #ids: ResponseIds;
  /** the request's namespace tools, whose calls come back flattened from a translation */
  readonly #namespaces: ToolNamespaces;
  readonly #createdAt: number;
  #sequence = 0;
  readonly #output: OutputItem[] = [];
  /** the reasoning or message item being written; tool calls stay open to the end */
  #open: Open | undefined;
  /** tool-call index of the canonical stream -> its item */
  readonly #calls = new Map<number, Extract<Open, { kind: "function" | "custom" }>>();
  #finish: FinishReason | null = null;
  #response: ResponseObject | undefined;

  constructor(req: ResponsesRequest, ids: ResponseIds, createdAt: number) {
    this.#req = req;
    this.#ids = ids;
    this.#createdAt = createdAt;
    this.#namespaces = namespacesOf(req);
  }

  /** The finished Response (after finish()), as response.completed carried it. */
  get response(): ResponseObject | undefined {
    return this.#response;
  }

  #event(type: string, fields: Record<string, unknown>): ResponseEvent {
    return { type, sequence_number: this.#sequence++, ...fields };
  }

  #snapshot(status: "in_progress") {
    return responseObject(this.#req, { ids: this.#ids, createdAt: this.#createdAt, status, output: [] });
  }

  /** The opening events. */
  start(): ResponseEvent[] {
    return [
      this.#event("response.created", { response: this.#snapshot("in_progress") }),
      this.#event("response.in_progress", { response: this.#snapshot("in_progress") }),
    ];
  }

  /** The events one canonical chunk makes (choice 0: the Responses API has one answer). */
  chunk(chunk: Chunk): ResponseEvent[] {
    const events: ResponseEvent[] = [];
    for (const choice of chunk.choices) {
      if (choice.index !== 0) continue;
      const delta = choice.delta as Record<string, unknown>;
      const reasoning = reasoningOf(delta);
      if (reasoning) this.#reasoning(reasoning, events);
      if (typeof delta.content === "string" && delta.content) this.#text(delta.content, events);
      if (typeof delta.refusal === "string" && delta.refusal) this.#refusal(delta.refusal, events);
      if (Array.isArray(delta.tool_calls))
        for (const call of delta.tool_calls as Array<Record<string, unknown>>) this.#toolCall(call, events);
      if (choice.finish_reason) this.#finish = choice.finish_reason;
    }
    return events;
  }

  #add(item: OutputItem, events: ResponseEvent[]): number {
    const index = this.#output.length;
    this.#output.push(item);
    events.push(this.#event("response.output_item.added", { output_index: index, item }));
    return index;
  }

  #reasoning(text: string, events: ResponseEvent[]): void {
    if (this.#open?.kind !== "reasoning") {
      this.#closeOpen(events);
      const id = this.#ids.item("rs");
      const index = this.#add({ type: "reasoning", id, summary: [], content: [] } as OutputItem, events);
      events.push(
        this.#event("response.content_part.added", {
          item_id: id,
          output_index: index,
          content_index: 0,
          part: { type: "reasoning_text", text: "" },
        }),
      );
      this.#open = { kind: "reasoning", index, id, text: new FlatText() };
    }
    const open = this.#open;
    open.text.add(text);
    events.push(
      this.#event("response.reasoning_text.delta", {
        item_id: open.id,
        output_index: open.index,
        content_index: 0,
        delta: text,
      }),
    );
  }

  #message(events: ResponseEvent[]): Extract<Open, { kind: "message" }> {
    if (this.#open?.kind === "message") return this.#open;
    this.#closeOpen(events);
    const id = this.#ids.item("msg");
    const index = this.#add(
      { type: "message", id, status: "in_progress", role: "assistant", content: [] } as unknown as OutputItem,
      events,
    );
    this.#open = { kind: "message", index, id, text: new FlatText(), refusal: undefined, textOpen: false };
    return this.#open;
  }

  #text(text: string, events: ResponseEvent[]): void {
    const open = this.#message(events);
    if (!open.textOpen) {
      open.textOpen = true;
      events.push(
        this.#event("response.content_part.added", {
          item_id: open.id,
          output_index: open.index,
          content_index: 0,
          part: { type: "output_text", text: "", annotations: [], logprobs: [] },
        }),
      );
    }
    open.text.add(text);
    events.push(
      this.#event("response.output_text.delta", {
        item_id: open.id,
        output_index: open.index,
        content_index: 0,
        delta: text,
        logprobs: [],
      }),
    );
  }

  #refusal(text: string, events: ResponseEvent[]): void {
    const open = this.#message(events);
    const contentIndex = open.textOpen ? 1 : 0;
    if (open.refusal === undefined) {
      open.refusal = new FlatText();
      events.push(
        this.#event("response.content_part.added", {
          item_id: open.id,
          output_index: open.index,
          content_index: contentIndex,
          part: { type: "refusal", refusal: "" },
        }),
      );
    }
    open.refusal.add(text);
    events.push(
      this.#event("response.refusal.delta", {
        item_id: open.id,
        output_index: open.index,
        content_index: contentIndex,
        delta: text,
      }),
    );
  }

  #toolCall(call: Record<string, unknown>, events: ResponseEvent[]): void {
    const at = typeof call.index === "number" ? call.index : 0;
    let open = this.#calls.get(at);
    const custom = call.custom as { name?: unknown; input?: unknown } | undefined;
    const fn = call.function as { name?: unknown; arguments?: unknown } | undefined;
    if (!open) {
      this.#closeOpen(events);
      const callId = typeof call.id === "string" ? call.id : "";
      if (call.type === "custom" || custom) {
        const id = this.#ids.item("ctc");
        const flat = typeof custom?.name === "string" ? custom.name : "";
        const { name, namespace } = this.#namespaces.restore(flat);
        const item = {
          type: "custom_tool_call",
          id,
          call_id: callId,
          name,
          ...(namespace ? { namespace } : {}),
          input: "",
        };
        const index = this.#add(item as OutputItem, events);
        open = { kind: "custom", index, id, callId, name, flatName: flat, input: new FlatText() };
      } else {
        const id = this.#ids.item("fc");
        const { name, namespace } = this.#namespaces.restore(typeof fn?.name === "string" ? fn.name : "");
        const item = {
          type: "function_call",
          id,
          call_id: callId,
          name,
          ...(namespace ? { namespace } : {}),
          arguments: "",
          status: "in_progress",
        };
        const index = this.#add(item as OutputItem, events);
        open = {
          kind: "function",
          index,
          id,
          callId,
          name,
          flatName: typeof fn?.name === "string" ? fn.name : "",
          args: new FlatText(),
        };
      }
      this.#calls.set(at, open);
    }
    if (open.kind === "custom" && typeof custom?.input === "string" && custom.input) {
      open.input.add(custom.input);
      events.push(
        this.#event("response.custom_tool_call_input.delta", {
          item_id: open.id,
          output_index: open.index,
          delta: custom.input,
        }),
      );
    } else if (open.kind === "function" && typeof fn?.arguments === "string" && fn.arguments) {
      open.args.add(fn.arguments);
      events.push(
        this.#event("response.function_call_arguments.delta", {
          item_id: open.id,
          output_index: open.index,
          delta: fn.arguments,
        }),
      );
    }
  }

  /** Closes the reasoning or message item being written. */
  #closeOpen(events: ResponseEvent[], status: "completed" | "incomplete" = "completed"): void {
    const open = this.#open;
    this.#open = undefined;
    if (!open) return;
    if (open.kind === "reasoning") {
      const text = open.text.toString();
      const part = { type: "reasoning_text", text };
      events.push(
        this.#event("response.reasoning_text.done", {
          item_id: open.id,
          output_index: open.index,
          content_index: 0,
          text,
        }),
        this.#event("response.content_part.done", {
          item_id: open.id,
          output_index: open.index,
          content_index: 0,
          part,
        }),
      );
      this.#done(
        open.index,
        { type: "reasoning", id: open.id, summary: [], content: [part] } as OutputItem,
        events,
      );
    } else if (open.kind === "message") {
      const content: Array<Record<string, unknown>> = [];
      if (open.textOpen) {
        const text = open.text.toString();
        const part = { type: "output_text", text, annotations: [], logprobs: [] };
        content.push(part);
        events.push(
          this.#event("response.output_text.done", {
            item_id: open.id,
            output_index: open.index,
            content_index: 0,
            text,
            logprobs: [],
          }),
          this.#event("response.content_part.done", {
            item_id: open.id,
            output_index: open.index,
            content_index: 0,
            part,
          }),
        );
      }
      if (open.refusal !== undefined) {
        const refusal = open.refusal.toString();
        const part = { type: "refusal", refusal };
        const contentIndex = content.length;
        content.push(part);
        events.push(
          this.#event("response.refusal.done", {
            item_id: open.id,
            output_index: open.index,
            content_index: contentIndex,
            refusal,
          }),
          this.#event("response.content_part.done", {
            item_id: open.id,
            output_index: open.index,
            content_index: contentIndex,
            part,
          }),
        );
      }
      const item = { type: "message", id: open.id, status, role: "assistant", content };
      this.#done(open.index, item as unknown as OutputItem, events);
    }
  }

  #closeCalls(events: ResponseEvent[]): void {
    for (const open of [...this.#calls.values()].sort((a, b) => a.index - b.index)) {
      if (open.kind === "custom") {
        const input = open.input.toString();
        events.push(
          this.#event("response.custom_tool_call_input.done", {
            item_id: open.id,
            output_index: open.index,
            input,
          }),
        );
        const item = {
          type: "custom_tool_call",
          id: open.id,
          call_id: open.callId,
          ...this.#namespaces.restore(open.flatName),
          input,
        };
        this.#done(open.index, item as OutputItem, events);
      } else {
        const args = open.args.toString();
        events.push(
          this.#event("response.function_call_arguments.done", {
            item_id: open.id,
            output_index: open.index,
            name: open.name,
            arguments: args,
          }),
        );
        const item = {
          type: "function_call",
          id: open.id,
          call_id: open.callId,
          ...this.#namespaces.restore(open.flatName),
          arguments: args,
          status: "completed",
        };
        this.#done(open.index, item as OutputItem, events);
      }
    }
    this.#calls.clear();
  }

  #done(index: number, item: OutputItem, events: ResponseEvent[]): void {
    this.#output[index] = item;
    events.push(this.#event("response.output_item.done", { output_index: index, item }));
  }

  /**
   * The closing events of a stream that ended well: every open item done, then
   * response.completed, or response.incomplete when the answer was cut (length).
   * `withheld`: content safety held the rest back; the item being written ends incomplete and
   * a message item with this notice follows, in a response.completed: Codex takes an
   * incomplete response (content_filter) for a dropped stream and sends the turn again.
   */
  finish(usage: ResponsesUsage, withheld?: string): ResponseEvent[] {
    const { status, incomplete_details } = withheld ? statusOf("stop") : statusOf(this.#finish);
    const events: ResponseEvent[] = [];
    this.#closeOpen(events, status === "incomplete" || withheld ? "incomplete" : "completed");
    this.#closeCalls(events);
    if (withheld) {
      this.#text(withheld, events);
      this.#closeOpen(events);
    }
    this.#response = responseObject(this.#req, {
      ids: this.#ids,
      createdAt: this.#createdAt,
      status,
      output: this.#output,
      incomplete_details,
      usage,
    });
    const type = status === "incomplete" ? "response.incomplete" : "response.completed";
    events.push(this.#event(type, { response: this.#response }));
    return events;
  }

  /**
   * The closing events of a stream that failed after it began: response.failed with what was
   * produced so far (Codex reads it), then an `error` event (the OpenAI SDKs raise it).
   */
  fail(
    error: { code: string; message: string; param?: string | null },
    usage?: ResponsesUsage,
  ): ResponseEvent[] {
    this.#response = responseObject(this.#req, {
      ids: this.#ids,
      createdAt: this.#createdAt,
      status: "failed",
      output: this.#output,
      error: { code: error.code, message: error.message },
      usage: usage ?? null,
    });
    return [
      this.#event("response.failed", { response: this.#response }),
      this.#event("error", { code: error.code, message: error.message, param: error.param ?? null }),
    ];
  }
}
