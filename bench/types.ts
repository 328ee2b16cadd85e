// Shapes shared by the orchestrator (run.ts) and the load-generator child (load.ts), which
// talk to each other only through a JSON argument and one JSON line on stdout.

/** What one load-generator process is asked to do. */
export interface LoadSpec {
  /** where to send it: one URL, or one per gateway instance (the connections take them in turn) */
  urls: string[];
  headers: Record<string, string>;
  body: string;
  connections: number;
  durationS: number;
  /** requests per second over all connections; absent = as fast as the target answers */
  overallRate?: number;
  timeoutS: number;
}

/** Latency percentiles in milliseconds, from every 2xx response (sub-millisecond precision). */
export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** What the load-generator process reports back. */
export interface LoadResult {
  /** responses received, whatever their status */
  responses: number;
  /** the rate the target sustained */
  reqPerS: number;
  ok: number;
  non2xx: number;
  /** connection errors and timeouts (autocannon's `errors`, which includes `timeouts`) */
  errors: number;
  timeouts: number;
  durationS: number;
  bytes: number;
  statusCodes: Record<string, number>;
  latencyMs: LatencySummary;
  /** from each 2xx request's start to its response's headers: a stream's first byte */
  firstByteMs: LatencySummary;
  /** CPU (user + system) the load generator itself spent, whole process, microseconds */
  cpuMicros: number;
}

/**
 * `stream` is the mock writing a whole stream at once (burst), `stream-paced` the mock pausing
 * between its events as a model's tokens come (see --chunk-delay)
 */
export type Mode = "json" | "stream" | "stream-paced";

/** Whether a mode's requests ask for a stream. */
export function isStream(mode: Mode): boolean {
  return mode !== "json";
}
/** the upstream wire format a benchmark runs against */
export type BenchProvider = "openai" | "anthropic" | "gemini" | "azure";
/**
 * `routed`: the gateway again, asked for a model of two deployments (the cost of routing);
 * `messages` and `responses`: the gateway again, asked the same question through Anthropic's
 * Messages API and OpenAI's Responses API (the cost of translating them to a chat completion)
 */
export type TargetName = "direct" | "passthrough" | "gateway" | "routed" | "messages" | "responses";
/** the client API a target is asked through */
export type ClientApiName = "chat" | "messages" | "responses";
export type LoadKind = "saturation" | "rate";
/** the gateway's store: SQLite, or PostgreSQL (with Redis sharing the ledger and rate limits) */
export type StoreKind = "sqlite" | "postgres" | "postgres+redis";

/** One measured run: one target, one mode, one kind of load. */
export interface RunResult {
  mode: Mode;
  target: TargetName;
  /** the store of the gateway that answered; none for direct and passthrough */
  store?: StoreKind;
  /** the pass-through's second reading in its mode, after the gateways */
  again?: true;
  load: LoadKind;
  connections: number;
  /** the requested rate for a fixed-rate run */
  rate?: number;
  reqPerS: number;
  latencyMs: LatencySummary;
  /** to the response's headers, a stream's first byte */
  firstByteMs: LatencySummary;
  /** the target's p50 minus the direct target's p50 under the same load and mode */
  addedP50Ms?: number;
  /** CPU (user + system) the target's own processes (every gateway instance) spent per response */
  cpuUsPerReq: number;
  /**
   * PostgreSQL stores: CPU the store's processes spent per response (the backends serving the
   * run's database, and the whole Redis server where it runs on this machine)
   */
  storeCpuUsPerReq?: number;
  /**
   * storeCpuUsPerReq's parts: the run database's PostgreSQL backends (of them, the hold
   * journal's connections, by their application_name), and the Redis server
   */
  storeCpuParts?: { postgresUsPerReq: number; holdsUsPerReq?: number; redisUsPerReq: number };
  /** CPU the mock upstream spent per response, for comparison across targets */
  upstreamCpuUsPerReq: number;
  /** CPU the load generator spent per response */
  loadgenCpuUsPerReq: number;
  /**
   * Cores kept busy by processes outside the benchmark during the run (machine CPU minus the
   * benchmark's servers and load generator): well above zero means the numbers are disturbed.
   */
  otherLoadCores: number;
  /** the highest resident set size of the target's processes (of any one instance) during the run */
  peakRssMb: number;
  responses: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  bytesPerResponse: number;
  statusCodes: Record<string, number>;
}
