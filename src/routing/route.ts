// One call's way through its candidates: the model's deployments (chosen by its strategy,
// `retries` further attempts after the first), then each fallback model's the same way. A
// failed attempt is retried only before anything reached the client (the opener returns
// once a stream's first chunk arrived, and this loop is over by then), only on what
// `routing.retry_on` lists, with jittered backoff, and within the providers' total timeout.
// Cooled-down deployments get no traffic while any candidate is usable; when none is, the
// one whose cooldown ends first is tried rather than failing without trying.
import { setTimeout as sleep } from "node:timers/promises";
import type { RetryOn, RoutingConfig } from "../config/schema.ts";
import { GatewayError } from "../errors/index.ts";
import type { Deployment, ResolvedModel } from "../models/registry.ts";
import type { Metrics } from "../observability/metrics.ts";
import { Deadline } from "../providers/deadline.ts";
import type { UpstreamCall } from "../providers/types.ts";
import type { AttemptOutcome, AttemptRecord } from "../records/draft.ts";
import type { CooldownStore } from "./cooldowns.ts";
import { judge, type Verdict } from "./failure.ts";
import { pick } from "./strategy.ts";
import type { Traffic } from "./traffic.ts";

/** An upstream's retry-after is honoured up to this long: beyond, the cooldown's probe decides. */
const MAX_RATE_LIMIT_COOLDOWN_MS = 10 * 60_000;

export interface RouterDeps {
  settings: RoutingConfig;
  cooldowns: CooldownStore;
  traffic: Traffic;
  metrics: Metrics;
  /** for tests; Math.random otherwise */
  random?: () => number;
  /** for tests, the cooldowns' clock; Date.now otherwise */
  now?: () => number;
}

/** One attempt, as the opener (src/relay/open.ts) sees it. */
export interface Attempt<Call = UpstreamCall> {
  deployment: Deployment;
  /** the call translated for this deployment: its upstream model, output bound and field */
  call: Call;
  /**
   * Says the answer goes on after the opener returns (a stream): the attempt stays in flight
   * until the returned function is called, with the error if the stream failed.
   */
  continues(): (err?: unknown) => void;
}

interface Group {
  model: ResolvedModel;
  /** attempts this model may take: 1 + retries */
  budget: number;
  used: number;
}

interface Active {
  deployment: Deployment;
  /** this attempt holds the deployment's probe and owes it a verdict */
  probe: boolean;
  ended: boolean;
}

export class Router {
  readonly #deps: RouterDeps;
  readonly #retryOn: ReadonlySet<RetryOn>;

  constructor(deps: RouterDeps) {
    this.#deps = deps;
    this.#retryOn = new Set(deps.settings.retry_on);
  }

  /** The routing of one call; `end()` it when the call is over, however it ended. */
  route(model: ResolvedModel, clientSignal: AbortSignal): Route {
    return new Route(this.#deps, this.#retryOn, model, clientSignal);
  }
}

export class Route {
  readonly #deps: RouterDeps;
  readonly #retryOn: ReadonlySet<RetryOn>;
  readonly #random: () => number;
  readonly #now: () => number;
  readonly #clientSignal: AbortSignal;
  readonly #groups: Group[];
  readonly #tried = new Set<string>();
  /** the attempts together stay within the longest total timeout among the candidates */
  readonly #deadline: Deadline | undefined;
  readonly #endsAt: number;
  #active: Active | undefined;
  /** every upstream attempt so far, for the record */
  readonly attempts: AttemptRecord[] = [];
  /** the deployment that answered, or the last one tried */
  deployment: Deployment | undefined;
  answered = false;
  /** aborts the attempts: the client gone, or the routing's time up */
  readonly signal: AbortSignal;

  constructor(
    deps: RouterDeps,
    retryOn: ReadonlySet<RetryOn>,
    model: ResolvedModel,
    clientSignal: AbortSignal,
  ) {
    this.#deps = deps;
    this.#retryOn = retryOn;
    this.#random = deps.random ?? Math.random;
    this.#now = deps.now ?? Date.now;
    this.#clientSignal = clientSignal;
    this.#groups = [model, ...model.fallbacks].map((m) => ({
      model: m,
      budget: 1 + (m.config.retries ?? m.deployments.length - 1),
      used: 0,
    }));
    let possible = 0;
    let totalMs: number | undefined;
    for (const g of this.#groups) {
      possible += g.budget;
      for (const d of g.model.deployments)
        if (d.totalMs !== undefined) totalMs = Math.max(totalMs ?? 0, d.totalMs);
    }
    // One possible attempt is bounded by its provider's own timeout: no timer of ours.
    if (possible > 1 && totalMs !== undefined) {
      this.#deadline = new Deadline(clientSignal, totalMs);
      this.#endsAt = performance.now() + totalMs;
      this.signal = this.#deadline.signal;
    } else {
      this.#endsAt = Number.POSITIVE_INFINITY;
      this.signal = clientSignal;
    }
  }

  /**
   * Opens the call's answer: `opener` is called once per attempt and throws on failure.
   * Resolves with the first answer; throws the failure that ends the call (the last cause,
   * or upstream_rate_limited when every attempt was rate-limited), or the client's abort.
   */
  open<T>(base: UpstreamCall, opener: (attempt: Attempt) => Promise<T>): Promise<T> {
    return this.openWith((deployment) => this.#callFor(base, deployment), opener);
  }

  /**
   * open() for a call of any kind (a chat completion, embeddings): `callFor` makes the call a
   * deployment is sent, whose signal must be the route's (`signal`).
   */
  async openWith<Call, T>(
    callFor: (deployment: Deployment) => Call,
    opener: (attempt: Attempt<Call>) => Promise<T>,
  ): Promise<T> {
    let last: unknown;
    let lastOther: unknown;
    for (;;) {
      const next = await this.#next();
      if (!next) break;
      const { group, deployment, probe } = next;
      if (this.attempts.length) {
        const wait = this.#backoff(this.attempts.length + 1);
        if (performance.now() + wait >= this.#endsAt || !(await this.#sleep(wait))) {
          if (probe) await this.#deps.cooldowns.releaseProbe(deployment.id);
          if (this.#clientSignal.aborted) throw this.#clientSignal.reason;
          break;
        }
      }
      group.used++;
      this.#tried.add(deployment.id);
      this.deployment = deployment;
      const active: Active = { deployment, probe, ended: false };
      this.#active = active;
      this.#deps.traffic.started(deployment.id);
      const started = performance.now();
      let continues = false;
      try {
        const result = await opener({
          deployment,
          call: callFor(deployment),
          continues: () => {
            continues = true;
            return (err?: unknown) => this.#end(active, err);
          },
        });
        const ms = performance.now() - started;
        this.#record(group.model, deployment, "ok", null, ms);
        this.#deps.traffic.answered(deployment.id, ms);
        this.answered = true;
        if (probe || this.#deps.cooldowns.get(deployment.id)) {
          active.probe = false;
          await this.#deps.cooldowns.recovered(deployment.id);
        }
        if (!continues) this.#end(active);
        return result;
      } catch (err) {
        this.#end(active);
        const verdict = judge(err, this.#retryOn);
        const outcome = this.#clientSignal.aborted ? "aborted" : verdict.outcome;
        this.#record(group.model, deployment, outcome, verdict.status, performance.now() - started);
        if (outcome === "aborted" || outcome === "internal") throw err; // end() releases a probe
        await this.#judged(active, verdict);
        last = err;
        if (!verdict.rateLimited) lastOther = err;
        if (!verdict.retry && !verdict.rateLimited) throw err;
        if (!verdict.retry || performance.now() >= this.#endsAt) break;
      }
    }
    // Every attempt was rate-limited: the client is told when a candidate will take calls again.
    if (lastOther === undefined && last !== undefined) throw this.#rateLimited();
    throw lastOther ?? last;
  }

  /** Response headers: the attempts made, and the deployment that answered if the operator wants it told. */
  headers(): Record<string, string> {
    const headers: Record<string, string> = { "x-gateway-attempts": String(this.attempts.length) };
    if (this.answered && this.#deps.settings.expose_deployment)
      headers["x-gateway-deployment"] = this.deployment!.id;
    return headers;
  }

  /** The call is over: the deadline's timer cleared, the attempt in flight ended, a probe owed released. */
  end(): void {
    this.#deadline?.end();
    const active = this.#active;
    if (!active) return;
    this.#end(active);
    if (active.probe) {
      active.probe = false;
      void this.#deps.cooldowns.releaseProbe(active.deployment.id);
    }
  }

  /** The next attempt: a usable deployment of the first model that has one and attempts left. */
  async #next(): Promise<{ group: Group; deployment: Deployment; probe: boolean } | undefined> {
    const { cooldowns, traffic } = this.#deps;
    const now = this.#now();
    for (const group of this.#groups) {
      if (group.used >= group.budget) continue;
      let pool = group.model.deployments.filter((d) => this.#usable(d.id, now));
      while (pool.length) {
        const untried = pool.filter((d) => !this.#tried.has(d.id));
        const deployment = pick(
          group.model.config.routing,
          untried.length ? untried : pool,
          traffic,
          this.#random,
        );
        if (!cooldowns.get(deployment.id)) return { group, deployment, probe: false };
        // Its cooldown is over: one call probes it, the others go elsewhere meanwhile.
        if (await cooldowns.takeProbe(deployment.id)) return { group, deployment, probe: true };
        pool = pool.filter((d) => d !== deployment);
      }
    }
    if (this.attempts.length) return undefined;
    // Every candidate is cooling down: rather than fail without trying, the one whose
    // cooldown ends first.
    let first: { group: Group; deployment: Deployment; until: number } | undefined;
    for (const group of this.#groups)
      for (const deployment of group.model.deployments) {
        const until = cooldowns.get(deployment.id)?.until ?? now;
        if (!first || until < first.until) first = { group, deployment, until };
      }
    return first && { group: first.group, deployment: first.deployment, probe: false };
  }

  #usable(deployment: string, now: number): boolean {
    const cooldown = this.#deps.cooldowns.get(deployment);
    return !cooldown || (cooldown.until <= now && !this.#deps.cooldowns.probing(deployment));
  }

  /** The deployment's health after a failed attempt. */
  async #judged(active: Active, verdict: Verdict): Promise<void> {
    const { cooldowns, settings } = this.#deps;
    const id = active.deployment.id;
    const cooling = active.probe || cooldowns.get(id) !== undefined;
    const probe = active.probe;
    active.probe = false;
    if (verdict.rateLimited)
      await cooldowns.coolDown(
        id,
        Math.min(verdict.retryAfterMs ?? settings.cooldown.seconds * 1000, MAX_RATE_LIMIT_COOLDOWN_MS),
        "rate_limited",
      );
    // A deployment failing while it cools down (its probe, or a try when all were cooling)
    // is not back: a new cooldown at once.
    else if (verdict.counts)
      await (cooling
        ? cooldowns.coolDown(id, settings.cooldown.seconds * 1000, "failures")
        : cooldowns.fail(id));
    else if (probe)
      // It answered the probe with a client error: it is up. Anything else is no verdict.
      await (verdict.outcome === "client_error" ? cooldowns.recovered(id) : cooldowns.releaseProbe(id));
  }

  /** Ends an attempt once: no longer in flight; a stream that failed after it answered counts against it. */
  #end(active: Active, err?: unknown): void {
    if (active.ended) return;
    active.ended = true;
    this.#deps.traffic.ended(active.deployment.id);
    if (err !== undefined && judge(err, this.#retryOn).counts)
      void this.#deps.cooldowns.fail(active.deployment.id);
  }

  #record(model: ResolvedModel, d: Deployment, outcome: AttemptOutcome, status: number | null, ms: number) {
    this.attempts.push({
      model: model.config.id,
      provider: d.providerId,
      upstream_model: d.upstreamModel,
      outcome,
      status,
      ms: Math.round(ms),
    });
    this.#deps.metrics.observeAttempt(d.id, outcome);
  }

  /** The call for a deployment: its upstream model, and its model's output bound when the client gave none. */
  #callFor(base: UpstreamCall, d: Deployment): UpstreamCall {
    const asked = base.request.max_completion_tokens ?? base.request.max_tokens;
    return {
      ...base,
      upstreamModel: d.upstreamModel,
      outputBound:
        asked === undefined ? Math.min(base.outputBound, d.model.max_output_tokens) : base.outputBound,
      outputBoundField: d.model.output_bound_field,
      signal: this.signal,
    };
  }

  /** Full jitter: random in [0, min(max, initial · 2^(n-2))] before attempt n. */
  #backoff(n: number): number {
    const { initial_ms, max_ms } = this.#deps.settings.backoff;
    return this.#random() * Math.min(max_ms, initial_ms * 2 ** (n - 2));
  }

  /** False when the wait was cut: the client left, or the routing's time is up. */
  async #sleep(ms: number): Promise<boolean> {
    if (ms <= 0) return !this.signal.aborted;
    try {
      await sleep(ms, undefined, { signal: this.signal });
      return true;
    } catch {
      return false;
    }
  }

  #rateLimited(): GatewayError {
    const now = this.#now();
    let wait = Number.POSITIVE_INFINITY;
    for (const group of this.#groups)
      for (const d of group.model.deployments)
        wait = Math.min(wait, Math.max(0, (this.#deps.cooldowns.get(d.id)?.until ?? now) - now));
    const ms = Math.ceil(wait);
    return new GatewayError("upstream_rate_limited", {
      headers: { "retry-after": String(Math.max(1, Math.ceil(ms / 1000))), "retry-after-ms": String(ms) },
    });
  }
}
