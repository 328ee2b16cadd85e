// The one point where a call obtains its upstream answer: a whole completion, or a stream
// whose first chunk has already arrived. Nothing has been written to the client when it
// returns or throws, so this is where routing tries deployments.
import type { Metrics } from "../observability/metrics.ts";
import type { ResolvedModel } from "../providers/registry.ts";
import type { Chunk, Completion, UpstreamCall } from "../providers/types.ts";

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

export function openAnswer(
  metrics: Metrics,
  model: ResolvedModel,
  call: UpstreamCall,
  stream: true,
): Promise<OpenedStream>;
export function openAnswer(
  metrics: Metrics,
  model: ResolvedModel,
  call: UpstreamCall,
  stream: false,
): Promise<OpenedCompletion>;
export async function openAnswer(
  metrics: Metrics,
  model: ResolvedModel,
  call: UpstreamCall,
  stream: boolean,
): Promise<Opened> {
  const started = performance.now();
  const observe = (outcome: "ok" | "error") =>
    metrics.upstreamSeconds.observe(
      { provider: model.config.provider, outcome },
      (performance.now() - started) / 1000,
    );
  try {
    if (!stream) {
      const completion = await model.provider.complete(call);
      observe("ok");
      return { kind: "completion", completion };
    }
    const iterator = model.provider.stream(call)[Symbol.asyncIterator]();
    const first = await iterator.next();
    return {
      kind: "stream",
      chunks: withFirst(first, iterator),
      stop: async () => {
        await iterator.return?.(undefined)?.catch(() => undefined);
      },
      observe,
    };
  } catch (err) {
    observe("error");
    throw err;
  }
}

/** The stream again from its start, given its first result was already taken. */
async function* withFirst(first: IteratorResult<Chunk>, rest: AsyncIterator<Chunk>): AsyncGenerator<Chunk> {
  if (first.done) return;
  yield first.value;
  for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
}
