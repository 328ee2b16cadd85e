// The OpenTelemetry SDK behind ./tracing.ts, imported only when tracing is on. Spans follow the
// semantic conventions: the call is an HTTP server span, each upstream attempt a GenAI client
// span ("chat {model}") under it. The GenAI names are spelled out here rather than imported:
// the conventions package marks them experimental, and its own advice is to copy such names.
// Nothing of a prompt, an answer or a key goes on a span.
import {
  type Attributes,
  type Context,
  createTraceState,
  type DiagLogger,
  DiagLogLevel,
  diag,
  isSpanContextValid,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import {
  detectResources,
  resourceAttributesEnvDetector,
  resourceFromAttributes,
  serviceNameEnvDetector,
} from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
} from "@opentelemetry/semantic-conventions";
import type { Logger } from "pino";
import type {
  AnswerPart,
  AttemptFailure,
  AttemptSpan,
  AttemptStart,
  CallEnd,
  CallSpan,
  TracedRequest,
  Tracing,
  TracingContext,
  TracingSettings,
} from "./tracing.ts";

const GEN_AI_OPERATION_NAME = "gen_ai.operation.name";
const GEN_AI_PROVIDER_NAME = "gen_ai.provider.name";
/** the older name of gen_ai.provider.name, which many backends still read */
const GEN_AI_SYSTEM = "gen_ai.system";
const GEN_AI_REQUEST_MODEL = "gen_ai.request.model";
const GEN_AI_REQUEST_STREAM = "gen_ai.request.stream";
const GEN_AI_RESPONSE_ID = "gen_ai.response.id";
const GEN_AI_RESPONSE_MODEL = "gen_ai.response.model";
const GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons";
const GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk";
const GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens";
const GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens";
const SERVICE_INSTANCE_ID = "service.instance.id";

/**
 * gen_ai.provider.name of each provider type: the conventions' name for the API it speaks.
 * Any OpenAI-compatible server (vLLM, Ollama, …) is "openai": the conventions set the name by
 * the protocol the instrumentation knows, and gen_ai.response.model tells the server's model.
 */
const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  "openai-compatible": "openai",
  anthropic: "anthropic",
  gemini: "gcp.gemini",
  "azure-openai": "azure.ai.openai",
};

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The caller's trace, from its W3C traceparent (and tracestate), so the call joins the trace of
 * the application that made it; a header that is not valid starts a trace of its own.
 */
function parentOf(headers: TracedRequest["headers"]): Context {
  const header = headers.traceparent;
  const m = typeof header === "string" ? TRACEPARENT.exec(header.trim()) : null;
  if (!m) return ROOT_CONTEXT;
  const state = headers.tracestate;
  const parent = {
    traceId: m[1]!,
    spanId: m[2]!,
    traceFlags: Number.parseInt(m[3]!, 16) & 1,
    isRemote: true,
    ...(typeof state === "string" && state ? { traceState: createTraceState(state) } : {}),
  };
  return isSpanContextValid(parent) ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
}

/** The SDK's own complaints (an export that failed) as warnings of the gateway's log, messages only. */
function diagLogger(logger: Logger): DiagLogger {
  const warn = (message: string, ...args: unknown[]) => {
    const err = args.find((a): a is Error => a instanceof Error);
    logger.warn({ component: "tracing", ...(err ? { error: err.message } : {}) }, `tracing: ${message}`);
  };
  const ignore = () => {};
  return { error: warn, warn, info: ignore, debug: ignore, verbose: ignore };
}

export class OtelTracing implements Tracing {
  readonly enabled = true;
  readonly #provider: TracerProvider;
  readonly #tracer: Tracer;
  readonly #accountId: boolean;

  constructor(settings: TracingSettings, context: TracingContext & { url: string }) {
    diag.setLogger(diagLogger(context.logger), {
      logLevel: DiagLogLevel.WARN,
      suppressOverrideMessage: true,
    });
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override these, as everywhere in OpenTelemetry.
    const resource = resourceFromAttributes({
      [ATTR_SERVICE_NAME]: "chat-gateway",
      [ATTR_SERVICE_VERSION]: context.version,
      [SERVICE_INSTANCE_ID]: context.instanceId,
    }).merge(detectResources({ detectors: [resourceAttributesEnvDetector, serviceNameEnvDetector] }));
    this.#provider = new TracerProvider({
      resource,
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sample_ratio) }),
      spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: context.url }) })],
    });
    this.#tracer = this.#provider.getTracer("chat-gateway", context.version);
    this.#accountId = settings.account_id;
  }

  startCall(request: TracedRequest, api: string): CallSpan | undefined {
    const route = request.routeOptions.url ?? "unmatched";
    const span = this.#tracer.startSpan(
      `${request.method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: request.method,
          [ATTR_HTTP_ROUTE]: route,
          "gateway.api": api,
          "gateway.request_id": request.id,
        },
      },
      parentOf(request.headers),
    );
    if (!span.isRecording()) return undefined;
    return new OtelCallSpan(span, this);
  }

  /** An attempt's span, under its call's. */
  startAttempt(parent: Span, start: AttemptStart): AttemptSpan {
    const provider = PROVIDER_NAMES[start.providerType] ?? start.providerType;
    const span = this.#tracer.startSpan(
      `chat ${start.upstreamModel}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [GEN_AI_OPERATION_NAME]: "chat",
          [GEN_AI_PROVIDER_NAME]: provider,
          [GEN_AI_SYSTEM]: provider,
          [GEN_AI_REQUEST_MODEL]: start.upstreamModel,
          [GEN_AI_REQUEST_STREAM]: start.stream,
          "gateway.provider.id": start.providerId,
          "gateway.deployment": start.deployment,
          "gateway.model": start.model,
        },
      },
      trace.setSpan(ROOT_CONTEXT, parent),
    );
    return new OtelAttemptSpan(span);
  }

  endAttributes(end: CallEnd): Attributes {
    const attributes: Attributes = {
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: end.httpStatus,
      "gateway.call.status": end.status,
      "gateway.attempts": end.attempts,
      "gateway.usage.prompt_tokens": end.promptTokens,
      "gateway.usage.completion_tokens": end.completionTokens,
      "gateway.cost_usd": end.costUsd,
    };
    if (end.model !== null) attributes["gateway.model"] = end.model;
    if (end.errorCode) attributes[ATTR_ERROR_TYPE] = end.errorCode;
    if (this.#accountId && end.accountId !== null) attributes["gateway.account.id"] = end.accountId;
    return attributes;
  }

  flush(): Promise<void> {
    return this.#provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.#provider.shutdown();
  }
}

class OtelCallSpan implements CallSpan {
  readonly #span: Span;
  readonly #tracing: OtelTracing;
  #ended = false;

  constructor(span: Span, tracing: OtelTracing) {
    this.#span = span;
    this.#tracing = tracing;
  }

  attempt(start: AttemptStart): AttemptSpan {
    return this.#tracing.startAttempt(this.#span, start);
  }

  end(end: CallEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#span.setAttributes(this.#tracing.endAttributes(end));
    // A server span fails with the server (5xx), not with a refused request; and a stream that
    // broke after its 200 failed too.
    if (end.httpStatus >= 500 || end.status === "upstream_error")
      this.#span.setStatus({ code: SpanStatusCode.ERROR });
    this.#span.end();
  }
}

class OtelAttemptSpan implements AttemptSpan {
  readonly #span: Span;
  readonly #started = performance.now();
  /** each choice's finish reason, by choice index */
  readonly #reasons = new Map<number, string>();
  #id: string | undefined;
  #model: string | undefined;
  #usage: { prompt: number; completion: number } | undefined;
  #ended = false;

  constructor(span: Span) {
    this.#span = span;
  }

  firstChunk(): void {
    this.#span.setAttribute(GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, (performance.now() - this.#started) / 1000);
  }

  answered(part: AnswerPart): void {
    if (part.id) this.#id ??= part.id;
    if (part.model) this.#model ??= part.model;
    for (const choice of part.choices)
      if (choice.finish_reason) this.#reasons.set(choice.index, choice.finish_reason);
    if (part.usage) this.#usage = part.usage;
  }

  end(failure?: AttemptFailure): void {
    if (this.#ended) return;
    this.#ended = true;
    const span = this.#span;
    if (this.#id) span.setAttribute(GEN_AI_RESPONSE_ID, this.#id);
    if (this.#model) span.setAttribute(GEN_AI_RESPONSE_MODEL, this.#model);
    if (this.#reasons.size)
      span.setAttribute(
        GEN_AI_RESPONSE_FINISH_REASONS,
        [...this.#reasons].sort(([a], [b]) => a - b).map(([, reason]) => reason),
      );
    if (this.#usage) {
      span.setAttribute(GEN_AI_USAGE_INPUT_TOKENS, this.#usage.prompt);
      span.setAttribute(GEN_AI_USAGE_OUTPUT_TOKENS, this.#usage.completion);
    }
    if (failure) {
      span.setAttribute(ATTR_ERROR_TYPE, failure.type);
      if (failure.status !== null) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, failure.status);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }
}
