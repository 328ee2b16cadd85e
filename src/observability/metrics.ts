// Prometheus metrics, served at /metrics. One registry per gateway instance (tests start
// several in one process). Every label takes its values from the configuration or from a
// fixed list (routes, the error catalog, outcomes), never from what a client sends: a
// series per account only when `metrics.account_label` asks for it. docs/observability.md
// lists every series.
import { readFileSync } from "node:fs";
import { Counter, collectDefaultMetrics, Gauge, Histogram, type Metric, Registry } from "prom-client";
import type { GatewayError } from "../errors/index.ts";

/** The labelled children of `id`, made on first use: prom-client would hash the label set on every call. */
function cached<T>(cache: Map<string, T>, id: string, make: () => T): T {
  let children = cache.get(id);
  if (children === undefined) {
    children = make();
    cache.set(id, children);
  }
  return children;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** The gateway's version, as package.json says. */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
).version;

/**
 * Node's process_* and nodejs_* series, made once per process: they describe the process, not
 * a gateway, and each collection watches garbage collection and the event loop for as long as
 * the process lives. Every gateway's registry serves the same ones.
 */
let processSeries: Metric[] | undefined;

function processMetrics(): Metric[] {
  if (!processSeries) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    processSeries = registry.getMetricsAsArray() as unknown as Metric[];
  }
  return processSeries;
}

export interface MetricsOptions {
  /** `gateway_account_cost_usd_total{account}`: a series per account, off unless asked for */
  accountLabel?: boolean;
  /** the commit built from, when the build says (GATEWAY_COMMIT) */
  commit?: string | undefined;
}

export class Metrics {
  readonly registry = new Registry();
  readonly buildInfo = new Gauge({
    name: "gateway_build_info",
    help: "Always 1: the gateway's version, the Node.js version it runs on and the commit it was built from",
    labelNames: ["version", "node_version", "commit"] as const,
    registers: [this.registry],
  });

  constructor(options: MetricsOptions = {}) {
    for (const metric of processMetrics()) this.registry.registerMetric(metric);
    const commit = options.commit?.trim() || "unknown";
    this.buildInfo.set({ version: VERSION, node_version: process.version, commit }, 1);
    this.costByAccount = options.accountLabel
      ? new Counter({
          name: "gateway_account_cost_usd_total",
          help: "Cost charged in US dollars, by account (metrics.account_label)",
          labelNames: ["account"] as const,
          registers: [this.registry],
        })
      : undefined;
  }

  readonly requests = new Counter({
    name: "gateway_http_requests_total",
    help: "HTTP requests answered, by route and status",
    labelNames: ["route", "status"] as const,
    registers: [this.registry],
  });
  readonly requestSeconds = new Histogram({
    name: "gateway_http_request_duration_seconds",
    help: "Time from request to the end of the response, by route",
    labelNames: ["route"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly upstreamSeconds = new Histogram({
    name: "gateway_upstream_duration_seconds",
    help: "Time of each upstream attempt to its whole answer (streams: to their end), by provider, public model and outcome",
    labelNames: ["provider", "model", "outcome"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly upstreamFirstByteSeconds = new Histogram({
    name: "gateway_upstream_first_byte_seconds",
    help: "Time of each upstream attempt that answered to its first chunk (JSON: to its whole answer), by provider and public model",
    labelNames: ["provider", "model"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  /** labelled children by provider, model (and outcome), as for requests below */
  readonly #byUpstream = new Map<string, { observe(v: number): void }>();
  readonly #byFirstByte = new Map<string, { observe(v: number): void }>();

  observeUpstream(provider: string, model: string, outcome: "ok" | "error", seconds: number): void {
    cached(this.#byUpstream, `${provider} ${model} ${outcome}`, () =>
      this.upstreamSeconds.labels({ provider, model, outcome }),
    ).observe(seconds);
  }

  observeFirstByte(provider: string, model: string, seconds: number): void {
    cached(this.#byFirstByte, `${provider} ${model}`, () =>
      this.upstreamFirstByteSeconds.labels({ provider, model }),
    ).observe(seconds);
  }

  readonly tokens = new Counter({
    name: "gateway_tokens_total",
    help: "Tokens charged, by public model, kind (prompt or completion) and client API",
    labelNames: ["model", "kind", "api"] as const,
    registers: [this.registry],
  });
  readonly costByModel = new Counter({
    name: "gateway_cost_usd_total",
    help: "Cost charged in US dollars, by public model (the records hold exact nanodollars)",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  /** made only with `metrics.account_label`: accounts are as many as the store holds */
  readonly costByAccount: Counter<"account"> | undefined;

  /** A call's charge, in dollars: by model, and by account when asked for. */
  observeCost(model: string, account: string | null, dollars: number): void {
    this.costByModel.inc({ model }, dollars);
    if (account !== null) this.costByAccount?.inc({ account }, dollars);
  }
  readonly calls = new Counter({
    name: "gateway_calls_total",
    help: "Calls recorded, by client API (chat.completions, messages, responses, embeddings, gemini) and record status",
    labelNames: ["api", "status"] as const,
    registers: [this.registry],
  });
  /** labelled children by API and status, as for requests below */
  readonly #byCall = new Map<string, { inc(): void }>();

  observeCall(api: string, status: string): void {
    cached(this.#byCall, `${api} ${status}`, () => this.calls.labels({ api, status })).inc();
  }
  readonly overrunTokens = new Counter({
    name: "gateway_overrun_tokens_total",
    help: "Tokens upstreams reported beyond what was reserved for the call, by public model",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  /** labelled children by route and status: prom-client would hash the label set on every call */
  readonly #byRoute = new Map<string, { requests: { inc(): void }; seconds: { observe(v: number): void } }>();

  observeRequest(route: string, status: number, seconds: number): void {
    const children = cached(this.#byRoute, `${route} ${status}`, () => ({
      requests: this.requests.labels({ route, status }),
      seconds: this.requestSeconds.labels({ route }),
    }));
    children.requests.inc();
    children.seconds.observe(seconds);
  }

  readonly safetyReviews = new Counter({
    name: "gateway_safety_reviews_total",
    help: "Content safety reviews, by stage (input or output), reviewer and outcome (pass, flag, error)",
    labelNames: ["stage", "reviewer", "outcome"] as const,
    registers: [this.registry],
  });
  readonly safetyFlags = new Counter({
    name: "gateway_safety_flags_total",
    help: "Categories flagged by content safety, by stage and category",
    labelNames: ["stage", "category"] as const,
    registers: [this.registry],
  });
  readonly safetySeconds = new Histogram({
    name: "gateway_safety_review_duration_seconds",
    help: "Time of each reviewer's review, by reviewer and outcome",
    labelNames: ["reviewer", "outcome"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  /** labelled children by stage, reviewer and outcome, as for requests above */
  readonly #byReview = new Map<string, { reviews: { inc(): void }; seconds: { observe(v: number): void } }>();

  observeReview(stage: string, reviewer: string, outcome: string, seconds: number): void {
    const children = cached(this.#byReview, `${stage} ${reviewer} ${outcome}`, () => ({
      reviews: this.safetyReviews.labels({ stage, reviewer, outcome }),
      seconds: this.safetySeconds.labels({ reviewer, outcome }),
    }));
    children.reviews.inc();
    children.seconds.observe(seconds);
  }

  readonly deploymentAttempts = new Counter({
    name: "gateway_deployment_attempts_total",
    help: "Upstream attempts, by deployment (provider/upstream_model) and outcome",
    labelNames: ["deployment", "outcome"] as const,
    registers: [this.registry],
  });
  readonly deploymentCooldowns = new Counter({
    name: "gateway_deployment_cooldowns_total",
    help: "Cooldowns this instance started, by deployment and reason (failures or rate_limited)",
    labelNames: ["deployment", "reason"] as const,
    registers: [this.registry],
  });
  /** what the gauges below read at each scrape; set by the server once routing exists */
  #deployments: () => Iterable<{ id: string; inFlight: number; coolingDown: boolean }> = () => [];
  readonly deploymentInFlight = new Gauge({
    name: "gateway_deployment_in_flight",
    help: "Upstream calls in flight on this instance, by deployment",
    labelNames: ["deployment"] as const,
    registers: [this.registry],
    collect: () => {
      for (const d of this.#deployments()) this.deploymentInFlight.set({ deployment: d.id }, d.inFlight);
    },
  });
  readonly deploymentCoolingDown = new Gauge({
    name: "gateway_deployment_cooling_down",
    help: "1 while the deployment is cooling down (as this instance knows), else 0",
    labelNames: ["deployment"] as const,
    registers: [this.registry],
    collect: () => {
      for (const d of this.#deployments())
        this.deploymentCoolingDown.set({ deployment: d.id }, d.coolingDown ? 1 : 0);
    },
  });

  watchDeployments(source: () => Iterable<{ id: string; inFlight: number; coolingDown: boolean }>): void {
    this.#deployments = source;
  }

  /** labelled children by deployment and outcome, as for requests above */
  readonly #byAttempt = new Map<string, { inc(): void }>();

  observeAttempt(deployment: string, outcome: string): void {
    cached(this.#byAttempt, `${deployment} ${outcome}`, () =>
      this.deploymentAttempts.labels({ deployment, outcome }),
    ).inc();
  }

  readonly refusals = new Counter({
    name: "gateway_refusals_total",
    help: "Requests answered with an error, by the error catalog's code and type and the HTTP status sent",
    labelNames: ["code", "type", "status"] as const,
    registers: [this.registry],
  });
  /** labelled children by code, type and status, as for requests above */
  readonly #byRefusal = new Map<string, { inc(): void }>();

  /**
   * An error answered with `status` (a client API may answer another than the catalog's).
   * Labelled with the catalog's own code: the envelope may carry an upstream's instead.
   */
  observeRefusal(error: GatewayError, status: number): void {
    const { code, type } = error.entry;
    cached(this.#byRefusal, `${code} ${type} ${status}`, () =>
      this.refusals.labels({ code, type, status }),
    ).inc();
  }

  readonly recordWriteErrors = new Counter({
    name: "gateway_record_write_errors_total",
    help: "Failed attempts to commit call records",
    registers: [this.registry],
  });
}
