// Responses API calls with OpenAI's built-in tools (web search, …), which only an upstream
// speaking OpenAI's Responses API serves (src/providers/builtin-tools.ts): the body it is sent,
// and its Response or events passed on to the client restamped, with the gateway's ids, the
// public model, the client's own settings (the upstream was sent `store: false`, no
// previous_response_id and the reserved bound) and the usage as charged. Its output items, the
// built-in tools' included, are what the gateway stores and a later turn sends back.
import type { ResponseEvent } from "./events.ts";
import type { InputItem, ResponsesRequest } from "./request.ts";
import {
  messageItem,
  type OutputItem,
  type ResponseIds,
  type ResponseObject,
  type ResponsesUsage,
} from "./response.ts";
import type { PriorItems } from "./to-chat.ts";

/**
 * The body a native upstream gets: the client's fields as it sent them (those the gateway does
 * not know included: the upstream's API is the client's), the input with its item references
 * resolved, the stored conversation a previous_response_id continues expanded in front of it
 * (the upstream stores nothing, the gateway does), and no
 * reasoning item without encrypted_content: OpenAI reads only those it encrypted, and the
 * translated upstreams' reasoning text is no such item.
 */
export function nativeResponsesBody(
  body: Record<string, unknown>,
  prior: PriorItems | undefined,
  resolvedInput: ResponsesRequest["input"],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(body))
    if (field !== "previous_response_id" && value !== null) out[field] = value;
  const input: unknown[] =
    typeof resolvedInput === "string"
      ? [{ type: "message", role: "user", content: resolvedInput }]
      : [...resolvedInput];
  out.input = [...(prior?.items ?? []), ...input].filter(
    (item) =>
      !(
        (item as InputItem).type === "reasoning" &&
        !(item as { encrypted_content?: unknown }).encrypted_content
      ),
  );
  return out;
}

/** What the Response repeats of the request: the client's values, not what the upstream was sent. */
function clientSettings(req: ResponsesRequest) {
  return {
    max_output_tokens: req.max_output_tokens ?? null,
    previous_response_id: req.previous_response_id ?? null,
    store: req.store ?? true,
  };
}

/** The upstream's Response as the gateway's: its id, the public model, the client's settings, usage as charged. */
export function restampResponse(
  native: Record<string, unknown>,
  req: ResponsesRequest,
  ids: ResponseIds,
  createdAt: number,
  usage: ResponsesUsage | null,
): ResponseObject {
  return {
    ...native,
    id: ids.id,
    created_at: createdAt,
    model: req.model,
    ...clientSettings(req),
    usage,
  } as unknown as ResponseObject;
}

const TERMINAL = new Set(["response.completed", "response.incomplete"]);

/**
 * A native stream's events for the client: renumbered (the gateway's sequence), their
 * Response snapshots restamped, and the upstream's closing event held until the call is
 * recorded and charged, when it goes out with the usage as charged (finish()).
 */
export class NativeResponseEvents {
  readonly #req: ResponsesRequest;
  readonly #ids: ResponseIds;
  readonly #createdAt: number;
  #sequence = 0;
  /** the items done so far, by output index: a failed or withheld Response lists them */
  readonly #output: OutputItem[] = [];
  /** the output index after the last item the upstream added */
  #nextIndex = 0;
  #closing: Record<string, unknown> | undefined;
  /** the upstream's latest Response (its snapshot, or the closing one): what a failure's Response is made from */
  #last: Record<string, unknown> | undefined;
  #response: ResponseObject | undefined;

  constructor(req: ResponsesRequest, ids: ResponseIds, createdAt: number) {
    this.#req = req;
    this.#ids = ids;
    this.#createdAt = createdAt;
  }

  /** The finished Response (after finish() or fail()). */
  get response(): ResponseObject | undefined {
    return this.#response;
  }

  #event(data: Record<string, unknown>): ResponseEvent {
    return { ...data, type: data.type as string, sequence_number: this.#sequence++ };
  }

  /** The events to send for these upstream events. */
  pass(events: ReadonlyArray<{ event: string; data: Record<string, unknown> }>): ResponseEvent[] {
    const out: ResponseEvent[] = [];
    for (const { data } of events) {
      const type = data.type;
      if (typeof type !== "string") continue;
      const response = data.response as Record<string, unknown> | undefined;
      if (response && typeof response === "object") this.#last = response;
      if (TERMINAL.has(type)) {
        this.#closing = response;
        continue;
      }
      if (type === "response.output_item.done" && typeof data.output_index === "number")
        this.#output[data.output_index] = data.item as OutputItem;
      if (typeof data.output_index === "number")
        this.#nextIndex = Math.max(this.#nextIndex, data.output_index + 1);
      out.push(
        this.#event(
          response && typeof response === "object"
            ? { ...data, response: restampResponse(response, this.#req, this.#ids, this.#createdAt, null) }
            : data,
        ),
      );
    }
    return out;
  }

  /**
   * The closing event: the upstream's response.completed (or incomplete) with the usage as
   * charged. `withheld`: content safety held the rest back; the items sent before and a
   * message item with this notice, in a response.completed (an incomplete one is what Codex
   * takes for a dropped stream and sends again).
   */
  finish(usage: ResponsesUsage, withheld?: string): ResponseEvent[] {
    const closing = this.#closing;
    const events: ResponseEvent[] = [];
    if (withheld) events.push(...this.#notice(withheld));
    const response = restampResponse(
      withheld
        ? {
            ...this.#last,
            object: "response",
            status: "completed",
            incomplete_details: null,
            output: this.#output.filter(Boolean),
          }
        : (closing ?? {
            ...this.#last,
            object: "response",
            status: "incomplete",
            incomplete_details: { reason: "max_output_tokens" },
            output: this.#output.filter(Boolean),
          }),
      this.#req,
      this.#ids,
      this.#createdAt,
      usage,
    );
    this.#response = response;
    const type = response.status === "incomplete" ? "response.incomplete" : "response.completed";
    events.push(this.#event({ type, response }));
    return events;
  }

  /** The events of a message item of the gateway's own, after the upstream's items. */
  #notice(text: string): ResponseEvent[] {
    const output_index = this.#nextIndex++;
    const item = messageItem(this.#ids.item("msg"), text, undefined, "completed");
    const item_id = item.id;
    const part = { type: "output_text", text, annotations: [], logprobs: [] };
    this.#output[output_index] = item;
    return [
      this.#event({
        type: "response.output_item.added",
        output_index,
        item: { ...item, status: "in_progress", content: [] },
      }),
      this.#event({
        type: "response.content_part.added",
        item_id,
        output_index,
        content_index: 0,
        part: { ...part, text: "" },
      }),
      this.#event({
        type: "response.output_text.delta",
        item_id,
        output_index,
        content_index: 0,
        delta: text,
        logprobs: [],
      }),
      this.#event({
        type: "response.output_text.done",
        item_id,
        output_index,
        content_index: 0,
        text,
        logprobs: [],
      }),
      this.#event({ type: "response.content_part.done", item_id, output_index, content_index: 0, part }),
      this.#event({ type: "response.output_item.done", output_index, item }),
    ];
  }

  /** A failure after the stream began: response.failed with the items done, then an `error` event. */
  fail(error: { code: string; message: string; param?: string | null }): ResponseEvent[] {
    this.#response = restampResponse(
      {
        ...this.#last,
        object: "response",
        status: "failed",
        error: { code: error.code, message: error.message },
        output: this.#output.filter(Boolean),
      },
      this.#req,
      this.#ids,
      this.#createdAt,
      null,
    );
    return [
      this.#event({ type: "response.failed", response: this.#response }),
      this.#event({ type: "error", code: error.code, message: error.message, param: error.param ?? null }),
    ];
  }
}
