// Prometheus metrics, served at /metrics. One registry per gateway instance (tests start
// several in one process).
import { Counter, Gauge, Histogram, Registry } from "prom-client";

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

export class Metrics {
  readonly registry = new Registry();
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
    help: "Time of upstream calls, by provider and outcome",
    labelNames: ["provider", "outcome"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: "gateway_tokens_total",
    help: "Tokens charged, by public model, kind (prompt or completion) and client API",
    labelNames: ["model", "kind", "api"] as const,
    registers: [this.registry],
  });
  readonly calls = new Counter({
    name: "gateway_calls_total",
    help: "Calls recorded, by client API (chat.completions, messages, responses) and record status",
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

  readonly recordWriteErrors = new Counter({
    name: "gateway_record_write_errors_total",
    help: "Failed attempts to commit call records",
    registers: [this.registry],
  });
}
