// The one point where a call obtains its upstream answer: a whole completion, or a stream
// whose first chunk has already arrived. Nothing has been written to the client when it
// returns or throws, so this is where routing tries deployments (src/routing/route.ts):
// each attempt is opened here, and the route decides what follows a failure.

import type { RetryOn } from "../config/schema.ts";
import type { Chunk, Completion } from "../domain/completion.ts";
import type { Deployment } from "../models/registry.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { AttemptFailure, AttemptSpan, CallSpan } from "../observability/tracing.ts";
import { type Capabilities, capabilitiesOf } from "../providers/capabilities.ts";
import { droppedHeader, prepareAttempt } from "../providers/passthrough.ts";
import type { EmbeddingCall, EmbeddingResult, UpstreamCall } from "../providers/types.ts";
import { judge } from "../routing/failure.ts";
import type { Attempt, Route } from "../routing/route.ts";
import type { CallContext } from "./call.ts";

export type Opened =
  | { kind: "completion"; completion: Completion }
  | {
      kind: "stream";
      /** the whole stream, the first chunk included; ends when the upstream's does */
      chunks: AsyncIterable<Chunk>;
      /** stops reading the upstream (the stream's own iterator is returned) */
      stop(): Promise<void>;
      /** reports the upstream call's outcome and duration once the stream is over */
      observe(outcome: "ok" | "error"): void;
    };

export type OpenedStream = Extract<Opened, { kind: "stream" }>;
export type OpenedCompletion = Extract<Opened, { kind: "completion" }>;

type RouteContext = Pick<CallContext, "draft" | "setHeaders">;

export function openAnswer(
  metrics: Metrics,
  ctx: RouteContext,
  route: Route,
  call: UpstreamCall,
  stream: true,
): Promise<OpenedStream>;
export function openAnswer(
  metrics: Metrics,
  ctx: RouteContext,
  route: Route,
  call: UpstreamCall,
  stream: false,
): Promise<OpenedCompletion>;
export async function openAnswer(
  metrics: Metrics,
  ctx: RouteContext,
  route: Route,
  call: UpstreamCall,
  stream: boolean,
): Promise<Opened> {
  /** what the answering attempt left out of the client's request */
  let dropped: readonly string[] = [];
  try {
    return await route.open(call, async (attempt) => {
      const { deployment } = attempt;
      const prepared = prepareAttempt(attempt.call, deployment.provider, capabilitiesFor(deployment));
      const opened = await openAttempt(metrics, { ...attempt, call: prepared }, stream, ctx.draft.span);
      dropped = prepared.dropped ?? [];
      return opened;
    });
  } finally {
    noteRoute(ctx, route, dropped);
  }
}

/**
 * The embeddings of a call, routed as a chat call is (deployments, retries, fallbacks, each
 * attempt a whole answer). Nothing has reached the client when it returns or throws.
 */
export async function openEmbeddings(
  metrics: Metrics,
  ctx: RouteContext,
  route: Route,
  base: EmbeddingCall,
): Promise<EmbeddingResult> {
  let dropped: readonly string[] = [];
  try {
    return await route.openWith(
      (deployment): EmbeddingCall => ({
        ...base,
        upstreamModel: deployment.upstreamModel,
        signal: route.signal,
        dropped: undefined,
      }),
      async ({ deployment, call }) => {
        const watch = watchAttempt(metrics, deployment, false, ctx.draft.span, call.signal);
        try {
          // the configuration deploys embedding models only where the adapter embeds
          if (!deployment.provider.embed) throw new Error(`provider ${deployment.providerId} does not embed`);
          const result = await deployment.provider.embed(call);
          watch.firstByte();
          watch.span?.answered({
            choices: NO_CHOICES,
            usage:
              result.promptTokens === undefined ? undefined : { prompt: result.promptTokens, completion: 0 },
          });
          watch.observe("ok");
          dropped = call.dropped ?? [];
          return result;
        } catch (err) {
          watch.failed(err);
          throw err;
        }
      },
    );
  } finally {
    noteRoute(ctx, route, dropped);
  }
}

const NO_CHOICES: readonly never[] = [];

/** Before the first byte either way: the record and the headers say what was tried. */
function noteRoute(ctx: RouteContext, route: Route, dropped: readonly string[]): void {
  const { draft } = ctx;
  draft.attempts = route.attempts;
  if (route.deployment) {
    draft.provider = route.deployment.providerId;
    draft.upstreamModel = route.deployment.upstreamModel;
    draft.pricing = route.deployment.pricing;
  }
  draft.dropped = dropped;
  const notice = droppedHeader(dropped);
  ctx.setHeaders(notice ? { ...route.headers(), "x-gateway-dropped": notice } : route.headers());
}

/** Each deployment's capabilities, inferred once: a deployment is rebuilt with its configuration. */
const CAPABILITIES = new WeakMap<Deployment, Capabilities>();

function capabilitiesFor(deployment: Deployment): Capabilities {
  let caps = CAPABILITIES.get(deployment);
  if (!caps) {
    caps = capabilitiesOf(deployment.model.capabilities, deployment.upstreamModel);
    CAPABILITIES.set(deployment, caps);
  }
  return caps;
}

/** One upstream call to one deployment, up to its first chunk or its whole answer. */
async function openAttempt(
  metrics: Metrics,
  attempt: Attempt,
  stream: boolean,
  parent: CallSpan | undefined,
): Promise<Opened> {
  const { deployment, call } = attempt;
  const { span, observe, firstByte, failed } = watchAttempt(metrics, deployment, stream, parent, call.signal);
  try {
    if (!stream) {
      const completion = await deployment.provider.complete(call);
      firstByte();
      span?.answered(completion);
      observe("ok");
      return { kind: "completion", completion };
    }
    const iterator = deployment.provider.stream(call)[Symbol.asyncIterator]();
    const first = await iterator.next();
    firstByte();
    span?.firstChunk();
    const continues = attempt.continues();
    const ended = span
      ? (err?: unknown) => {
          continues(err);
          span.end(err === undefined ? undefined : failureOf(err, call.signal));
        }
      : continues;
    return {
      kind: "stream",
      chunks: withFirst(first, iterator, ended, span),
      stop: async () => {
        span?.end();
        await iterator.return?.(undefined)?.catch(() => undefined);
      },
      observe,
    };
  } catch (err) {
    failed(err);
    throw err;
  }
}

/** What an attempt reports as it goes: its times (metrics) and its span, when the call is traced. */
function watchAttempt(
  metrics: Metrics,
  deployment: Deployment,
  stream: boolean,
  parent: CallSpan | undefined,
  signal: AbortSignal,
) {
  const provider = deployment.providerId;
  const model = deployment.model.id;
  const started = performance.now();
  const span = parent?.attempt({
    providerId: provider,
    providerType: deployment.providerType,
    deployment: deployment.id,
    model,
    upstreamModel: deployment.upstreamModel,
    stream,
  });
  const observe = (outcome: "ok" | "error") => {
    metrics.observeUpstream(provider, model, outcome, (performance.now() - started) / 1000);
    // An upstream that failed ended the span with its cause already (failed): an error here
    // that did not is the client gone or a fault of the gateway's.
    span?.end(outcome === "ok" ? undefined : { type: signal.aborted ? "aborted" : "internal", status: null });
  };
  return {
    span,
    observe,
    firstByte: () => metrics.observeFirstByte(provider, model, (performance.now() - started) / 1000),
    /** the attempt failed before its answer */
    failed: (err: unknown) => {
      span?.end(failureOf(err, signal));
      observe("error");
    },
  };
}

const NO_RETRIES: ReadonlySet<RetryOn> = new Set();

/** What a failed attempt's span says of it: the routing's outcome (src/routing/failure.ts). */
function failureOf(err: unknown, signal: AbortSignal): AttemptFailure {
  const { outcome, status } = judge(err, NO_RETRIES);
  return { type: outcome === "internal" && signal.aborted ? "aborted" : outcome, status };
}

/**
 * The stream again from its start, given its first result was already taken; `ended` is
 * told when it ends, with the error if it failed, and a traced attempt's `span` reads each
 * chunk. (A stream never read to its end is ended by the route's own end().) An iterator of
 * its own rather than an async generator: it sits under every event of every stream, and a
 * generator would add a suspension and a promise per chunk to what `rest.next()` already costs.
 */
function withFirst(
  first: IteratorResult<Chunk>,
  rest: AsyncIterator<Chunk>,
  ended: (err?: unknown) => void,
  span: AttemptSpan | undefined,
): AsyncIterableIterator<Chunk> {
  let taken: IteratorResult<Chunk> | undefined = first;
  let over = false;
  const end = (err?: unknown): void => {
    over = true;
    ended(err);
  };
  const passOn = (result: IteratorResult<Chunk>): IteratorResult<Chunk> => {
    if (result.done) end();
    else span?.answered(result.value);
    return result;
  };
  const fail = (err: unknown): never => {
    end(err);
    throw err;
  };
  const iterator: AsyncIterableIterator<Chunk> = {
    [Symbol.asyncIterator]: () => iterator,
    next(): Promise<IteratorResult<Chunk>> {
      if (taken) {
        const result = taken;
        taken = undefined;
        return Promise.resolve(passOn(result));
      }
      if (over) return Promise.resolve({ done: true, value: undefined });
      return rest.next().then(passOn, fail);
    },
    // the consumer stopped early: the attempt is over; `rest` is left to the route's end()
    return(): Promise<IteratorResult<Chunk>> {
      if (!over) end();
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return iterator;
}
