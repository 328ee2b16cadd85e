// Streamed delivery: the upstream's chunks through small stages (meter -> [review gate] ->
// restamp -> writer). Plain and reviewed streaming differ by the review gate alone.
import type { ChatRequest } from "../apis/chat-completions/request.ts";
import { fromUpstream, type GatewayError } from "../errors/index.ts";
import { localPromptTokens } from "../providers/prompt-bound.ts";
import { ANSWERED, type CallOutcome, CLIENT_GONE, WITHHELD } from "../records/outcomes.ts";
import type { SafetyPolicy } from "../safety/policy.ts";
import { countText } from "../tokens/count.ts";
import type { CallContext, StreamSink } from "./call.ts";
import { type CallFinisher, isGatewayFault } from "./finish.ts";
import type { Hold } from "./hold.ts";
import type { OpenedStream } from "./open.ts";
import { lastUserText, type ReviewDeps, review, safetyExtension } from "./review.ts";
import { Meter } from "./stream/meter.ts";
import { ChunkStamp } from "./stream/restamp.ts";
import { ReviewGate } from "./stream/review-gate.ts";
import { EventWriter } from "./stream/write-events.ts";
import { clientUsage, noteUsage } from "./usage.ts";

export interface StreamDeps extends ReviewDeps {
  finisher: CallFinisher;
  safety: SafetyPolicy;
  /** SSE keep-alive comments while nothing else is sent; 0 for none */
  keepAliveMs: number;
}

/**
 * Opens the upstream stream with `open` and delivers it. Until the response has started (the
 * first event, or a keep-alive after a long silence) a failure is thrown for a status; after,
 * it ends the stream with an error event.
 */
export async function deliverStream(
  deps: StreamDeps,
  ctx: CallContext,
  req: ChatRequest,
  open: () => Promise<OpenedStream>,
  reviewed: boolean,
  sink: StreamSink,
  hold: Hold,
): Promise<undefined> {
  const { draft } = ctx;
  const withUsage = req.stream_options?.include_usage === true;
  const stamp = new ChunkStamp(draft.requestId, req.model, draft.startedAt);
  const meter = new Meter();
  const gate = reviewed
    ? new ReviewGate(
        (text) => review(deps, ctx, "output", text, lastUserText(req.messages)),
        deps.safety.segmentTokens,
      )
    : undefined;
  const writer = new EventWriter(sink, () => draft.markFirstToken(), deps.keepAliveMs);

  let opened: OpenedStream | undefined;
  try {
    opened = await open();
    const metered = meter.pass(opened.chunks);
    await writer.writeAll(stamp.events(gate ? gate.pass(metered) : metered, withUsage));
    opened.observe("ok");
  } catch (err) {
    if (gate) await opened?.stop();
    const failure = fromUpstream(err);
    // (a failure to open was observed by openAnswer itself)
    if (opened && failure.code !== "safety_unavailable") opened.observe("error");
    // What the upstream produced is charged, delivered or not: it did the work. A client
    // gone before the first chunk is charged the prompt the upstream read.
    draft.setUsage(localPromptTokens(req), countText(meter.text), "estimated");
    if (ctx.clientSignal.aborted) {
      writer.dispose();
      await deps.finisher.finish(draft, CLIENT_GONE, hold);
      return undefined;
    }
    if (!writer.started) {
      writer.dispose();
      if (!meter.text) draft.setUsage(0, 0, "none");
      throw failure;
    }
    return failMidStream(deps, ctx, hold, writer, failure);
  }

  const flagged = gate?.flagged;
  if (flagged) await opened.stop();
  // A flag at the very end comes after the upstream's usage; one earlier stopped it first.
  noteUsage(draft, meter.usage, req, meter.text);
  if (flagged)
    await writer.write(
      stamp.event({
        choices: [...(meter.choices.size ? meter.choices : [0])].map((index) => ({
          index,
          delta: {},
          logprobs: null,
          finish_reason: "content_filter",
        })),
        safety: safetyExtension(flagged),
      }),
    );
  // The client asked for usage and the upstream's never reached it (stopped, or none): ours.
  if (withUsage && (flagged || !meter.usage))
    await writer.write(stamp.event({ choices: [], usage: clientUsage(draft, undefined) }));
  return endStream(deps, ctx, hold, writer, flagged ? WITHHELD : ANSWERED);
}

/**
 * The end of a stream that went well: the record, then `[DONE]`. A record that cannot be
 * written makes it an error event and no `[DONE]`: not recorded, not complete.
 */
async function endStream(
  deps: StreamDeps,
  ctx: CallContext,
  hold: Hold,
  writer: EventWriter,
  outcome: CallOutcome,
): Promise<undefined> {
  try {
    await deps.finisher.finish(ctx.draft, outcome, hold);
  } catch (err) {
    await writer.write(JSON.stringify(fromUpstream(err).toBody()));
    await writer.end(false);
    return undefined;
  }
  await writer.end(true);
  return undefined;
}

/** A failure after the stream began: an SSE error event, and the stream ends without [DONE]. */
async function failMidStream(
  deps: StreamDeps,
  ctx: CallContext,
  hold: Hold,
  writer: EventWriter,
  failure: GatewayError,
): Promise<undefined> {
  const status = isGatewayFault(failure) ? "error" : "upstream_error";
  if (isGatewayFault(failure)) ctx.draft.waiveCharge();
  // When the record cannot be written the writer has logged it; the client still hears why.
  await deps.finisher
    .finish(ctx.draft, { status, httpStatus: failure.status, errorCode: failure.code }, hold)
    .catch(() => undefined);
  await writer.write(JSON.stringify(failure.toBody()));
  await writer.end(false);
  return undefined;
}
