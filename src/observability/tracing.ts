// OpenTelemetry traces, opt-in (`tracing.enabled`): a server span for each call and a client
// span for each of its upstream attempts, exported over OTLP/HTTP (docs/observability.md).
// This module is what the rest of the gateway sees: hooks that are absent when tracing is off
// (`draft.span?.…`), so a call then pays an undefined check per hook, and the SDK, in
// ./otel.ts, is imported only when tracing is on.
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";

export interface TracingSettings {
  enabled: boolean;
  /** the OTLP/HTTP traces URL (…/v1/traces); the standard environment variables override it */
  endpoint?: string | undefined;
  /** the share of calls traced that arrive without a sampled parent, 0 to 1 */
  sample_ratio: number;
  /** put the account's id on call spans */
  account_id: boolean;
}

/** What a call span is started from: the HTTP request of the call (a Fastify request is one). */
export interface TracedRequest {
  id: string;
  method: string;
  routeOptions: { url?: string | undefined };
  headers: IncomingHttpHeaders;
}

/** How the call ended, as its record says. */
export interface CallEnd {
  /** the record's status: ok, error, upstream_error, content_filter, … */
  status: string;
  httpStatus: number;
  errorCode: string | null;
  /** the public model asked for */
  model: string | null;
  accountId: string | null;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  attempts: number;
}

export interface AttemptStart {
  providerId: string;
  /** the provider's type, which names the API it speaks (gen_ai.provider.name) */
  providerType: string;
  /** provider/upstream_model */
  deployment: string;
  /** the public model this attempt answers for (a fallback's own) */
  model: string;
  upstreamModel: string;
  stream: boolean;
}

/** A completion or a chunk, as far as a span reads it. */
export interface AnswerPart {
  id?: string | undefined;
  model?: string | undefined;
  choices: ReadonlyArray<{ index: number; finish_reason: string | null }>;
  usage?: { prompt: number; completion: number } | undefined;
}

/** Why an attempt failed: the routing's word for it (timeout, server_error, …) and the upstream's status. */
export interface AttemptFailure {
  type: string;
  status: number | null;
}

export interface AttemptSpan {
  /** the first chunk of a stream arrived */
  firstChunk(): void;
  /** notes what a completion or a chunk says of the answer (model, finish reasons, usage) */
  answered(part: AnswerPart): void;
  /** the attempt is over: answered, or failed; only the first end counts */
  end(failure?: AttemptFailure): void;
}

export interface CallSpan {
  attempt(start: AttemptStart): AttemptSpan;
  /** only the first end counts */
  end(end: CallEnd): void;
}

export interface Tracing {
  readonly enabled: boolean;
  /** the span of a call arriving now; undefined when tracing is off or the call is not sampled */
  startCall(request: TracedRequest, api: string): CallSpan | undefined;
  /** exports what ended so far */
  flush(): Promise<void>;
  /** exports what ended so far, then stops */
  shutdown(): Promise<void>;
}

export const NO_TRACING: Tracing = {
  enabled: false,
  startCall: () => undefined,
  flush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

const DEFAULT_ENDPOINT = "http://localhost:4318/v1/traces";

/**
 * Where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else OTEL_EXPORTER_OTLP_ENDPOINT
 * with /v1/traces added (as the OpenTelemetry specification says of both), else
 * `tracing.endpoint`, else the collector's default on this host. The environment overrides the
 * file, as PORT and LOG_LEVEL do.
 */
export function tracesEndpoint(
  settings: Pick<TracingSettings, "endpoint">,
  env: Record<string, string | undefined>,
): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return checkedUrl(traces, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (base) {
    checkedUrl(base, "OTEL_EXPORTER_OTLP_ENDPOINT");
    return `${base.replace(/\/+$/, "")}/v1/traces`;
  }
  return settings.endpoint ?? DEFAULT_ENDPOINT;
}

/** Why tracing cannot start with what it was given. */
export class TracingConfigError extends Error {
  override name = "TracingConfigError";
}

function checkedUrl(value: string, name: string): string {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol))
    throw new TracingConfigError(`${name} must be an http:// or https:// URL`);
  return value;
}

/** The URL without what may be a secret in it (user, password, query), for the log. */
export function shownEndpoint(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
}

export interface TracingContext {
  env: Record<string, string | undefined>;
  logger: Logger;
  /** service.instance.id */
  instanceId: string;
  /** service.version */
  version: string;
}

/** The tracing of a gateway: NO_TRACING unless `tracing.enabled`; then the SDK is loaded. */
export async function startTracing(settings: TracingSettings, context: TracingContext): Promise<Tracing> {
  if (!settings.enabled) return NO_TRACING;
  const url = tracesEndpoint(settings, context.env);
  const { OtelTracing } = await import("./otel.ts");
  const tracing = new OtelTracing(settings, { ...context, url });
  context.logger.info({ endpoint: shownEndpoint(url) }, "tracing: exporting spans over OTLP/HTTP");
  return tracing;
}
