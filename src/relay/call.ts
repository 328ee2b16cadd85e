// What the HTTP layer hands the relay for one call, and what the relay needs to run it.
import type { Logger } from "pino";
import type { AuthContext } from "../auth/key-cache.ts";
import type { Ledger } from "../ledger/types.ts";
import type { Registry } from "../models/registry.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { RateLimits, RateTicket } from "../rate-limits/rate-limiter.ts";
import type { CallDraft } from "../records/draft.ts";
import type { Router } from "../routing/route.ts";
import type { SafetyPolicy } from "../safety/policy.ts";
import type { WithheldLimiter } from "../safety/withheld-limiter.ts";
import type { CallFinisher } from "./finish.ts";

/** The reason the HTTP layer aborts with when the client goes away. */
export class ClientGone extends Error {
  override name = "ClientGone";
}

/** What the relay writes a stream to; the HTTP layer implements it over the raw response. */
export interface StreamSink {
  /** sends the status line and SSE headers; after this, errors travel as SSE events */
  start(): void;
  /**
   * Writes one event: an `event: <name>` line when named, then its `data:` line; resolves when
   * the socket can take more (backpressure).
   */
  event(data: string, name?: string): Promise<void> | undefined;
  /** writes an SSE comment line (`: text`), which clients ignore and proxies see as traffic */
  comment(text: string): void;
  end(): void;
}

export interface CallContext {
  auth: AuthContext;
  draft: CallDraft;
  /** aborted with ClientGone when the client disconnects */
  clientSignal: AbortSignal;
  /** sets response headers (the rate-limit windows) before the answer starts */
  setHeaders(headers: Record<string, string>): void;
  /** the call's request, already taken from its rate limits (admitRequest) */
  rateTicket: RateTicket;
}

/**
 * What a configuration reload replaces (./settings.ts): a call takes them at its start and
 * keeps them to its end.
 */
export interface SwappedSettings {
  registry: Registry;
  router: Router;
  safety: SafetyPolicy;
  /** the answers withheld per key, and the refusal of a key that collected too many */
  withheld: WithheldLimiter;
}

/** What one call runs with: the settings it took at its start, and the rest of the gateway. */
export interface RelayDeps extends SwappedSettings {
  ledger: Ledger;
  rates: RateLimits;
  finisher: CallFinisher;
  metrics: Metrics;
  logger: Logger;
  /** SSE keep-alive comments while a stream sends nothing else (server.sse_keepalive_ms) */
  keepAliveMs: number;
  /** the clock budget periods are read with */
  now: () => number;
}
