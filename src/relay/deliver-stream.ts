// Streamed delivery: the upstream's chunks through small stages (meter -> [review gate] ->
// the client API's renderer -> writer). Plain and reviewed streaming differ by the review
// gate alone; the APIs differ by their renderer alone.
import type { ClientCall, SseEvent, StreamRenderer } from "../apis/types.ts";
import type { Chunk, Usage } from "../domain/completion.ts";
import { ANSWERED, type CallOutcome, CLIENT_GONE, WITHHELD } from "../domain/outcomes.ts";
import { fromUpstream, type GatewayError } from "../errors/index.ts";
import { promptParts } from "../providers/prompt-bound.ts";
import type { SafetyPolicy } from "../safety/policy.ts";
import type { WithheldLimiter } from "../safety/withheld-limiter.ts";
import { estimator } from "../tokens/estimator.ts";
import type { CallContext, StreamSink } from "./call.ts";
import { type CallFinisher, isGatewayFault } from "./finish.ts";
import type { Hold } from "./hold.ts";
import type { OpenedStream } from "./open.ts";
import { lastUserText, type ReviewDeps, review } from "./review.ts";
import { Meter } from "./stream/meter.ts";
import { ReviewGate } from "./stream/review-gate.ts";
import { EventWriter } from "./stream/write-events.ts";
import { answerUsage, noteStreamUsage } from "./usage.ts";

export interface StreamDeps extends ReviewDeps {
  finisher: CallFinisher;
  safety: SafetyPolicy;
  /** SSE keep-alive comments while nothing else is sent; 0 for none */
  keepAliveMs: number;
  /** counts the answers withheld per key */
  withheld: WithheldLimiter;
}

/**
 * Opens the upstream stream with `open` and delivers it. Until the response has started (the
 * first event, or a keep-alive after a long silence) a failure is thrown for a status; after,
 * it ends the stream with an error event.
 */
export async function deliverStream(
  deps: StreamDeps,
  ctx: CallContext,
  call: ClientCall,
  open: () => Promise<OpenedStream>,
  reviewed: boolean,
  sink: StreamSink,
  hold: Hold,
): Promise<undefined> {
  const { draft } = ctx;
  const req = call.request;
  const renderer = call.stream({ requestId: draft.requestId, model: req.model, startedAt: draft.startedAt });
  const meter = new Meter();
  const gate = reviewed
    ? new ReviewGate(
        (text) => review(deps, ctx, "output", text, lastUserText(req.messages)),
        deps.safety.segmentTokens,
      )
    : undefined;
  const writer = new EventWriter(sink, () => draft.markFirstToken(), deps.keepAliveMs);
  // For a renderer that announces the prompt when it starts (src/apis/types.ts): what the
  // upstream reported so far, else the local count of the prompt.
  const usageSoFar = async (): Promise<Usage> =>
    meter.reported ?? {
      prompt: (await estimator.count(promptParts(req), { account: draft.accountId })).prompt,
      completion: 0,
      cachedInput: 0,
      cacheWrite: 0,
      reasoning: 0,
    };

  let opened: OpenedStream | undefined;
  try {
    opened = await open();
    if (gate) await writer.writeAll(rendered(renderer, gate.pass(meter.pass(opened.chunks)), usageSoFar));
    // The plain stream in one loop: each stage as a generator of its own cost a suspension
    // and promises per event, under every event of every stream.
    else {
      let first = renderer.begin !== undefined;
      for await (const chunk of opened.chunks) {
        meter.note(chunk);
        if (first) {
          first = false;
          await renderer.begin!(chunk, usageSoFar);
        }
        for (const event of renderer.chunk(chunk)) {
          const full = writer.write(event);
          if (full) await full;
        }
      }
      meter.ended = true;
    }
    opened.observe("ok");
  } catch (err) {
    if (gate) await opened?.stop();
    const failure = fromUpstream(err);
    // (a failure to open was observed by openAnswer itself)
    if (opened && failure.code !== "safety_unavailable") opened.observe("error");
    // The call ended here; the estimate below waits for the counting thread. Whether the
    // client had left is read now: a hang-up during the wait does not make it the cause.
    draft.markEnded();
    const gone = ctx.clientSignal.aborted;
    if (!gone && !writer.started && !meter.produced) {
      writer.dispose();
      draft.setUsage(0, 0, "none");
      throw failure;
    }
    // What the upstream produced is charged, delivered or not: it did the work. A client
    // gone before the first chunk is charged the prompt the upstream read: its own figure
    // when it reported one (message_start), else the local estimate.
    await noteStreamUsage(draft, meter, req, hold.reservation.tokens);
    if (gone) {
      writer.dispose();
      await deps.finisher.finish(draft, CLIENT_GONE, hold);
      return undefined;
    }
    if (!writer.started) {
      writer.dispose();
      throw failure;
    }
    return failMidStream(deps, ctx, hold, writer, renderer, failure);
  }

  const flagged = gate?.flagged;
  if (flagged) {
    await opened.stop();
    deps.withheld.note(ctx.auth.key.id);
  }
  // A flag at the very end comes after the upstream's usage; one earlier stopped it first,
  // and the call is charged what the upstream reported so far (noteStreamUsage).
  await noteStreamUsage(draft, meter, req, hold.reservation.tokens);
  await writer.writeEvents(
    await renderer.finish({
      usage: answerUsage(draft, meter.usage, hold.reservation.tokens),
      withheld: flagged,
      choices: meter.choices,
    }),
  );
  return endStream(deps, ctx, hold, writer, renderer, flagged ? WITHHELD : ANSWERED);
}

/** The renderer's events of each chunk, in order (its begin() first, with the first chunk). */
async function* rendered(
  renderer: StreamRenderer,
  chunks: AsyncIterable<Chunk>,
  usageSoFar: () => Promise<Usage>,
): AsyncGenerator<SseEvent> {
  let first = renderer.begin !== undefined;
  for await (const chunk of chunks) {
    if (first) {
      first = false;
      await renderer.begin!(chunk, usageSoFar);
    }
    yield* renderer.chunk(chunk);
  }
}

/**
 * The end of a stream that went well: the record, then the API's closing events (`[DONE]`).
 * A record that cannot be written makes it an error event instead: not recorded, not complete.
 */
async function endStream(
  deps: StreamDeps,
  ctx: CallContext,
  hold: Hold,
  writer: EventWriter,
  renderer: StreamRenderer,
  outcome: CallOutcome,
): Promise<undefined> {
  try {
    await deps.finisher.finish(ctx.draft, outcome, hold);
  } catch (err) {
    await writer.writeEvents(renderer.error(fromUpstream(err)));
    await writer.end();
    return undefined;
  }
  await writer.writeEvents(renderer.done());
  await writer.end();
  return undefined;
}

/** A failure after the stream began: the API's error event, and the stream ends without its closing events. */
async function failMidStream(
  deps: StreamDeps,
  ctx: CallContext,
  hold: Hold,
  writer: EventWriter,
  renderer: StreamRenderer,
  failure: GatewayError,
): Promise<undefined> {
  const status = isGatewayFault(failure) ? "error" : "upstream_error";
  if (isGatewayFault(failure)) ctx.draft.waiveCharge();
  // When the record cannot be written the writer has logged it; the client still hears why.
  await deps.finisher
    .finish(ctx.draft, { status, httpStatus: failure.status, errorCode: failure.code }, hold)
    .catch(() => undefined);
  await writer.writeEvents(renderer.error(failure));
  await writer.end();
  return undefined;
}
