// The benchmark's knobs: flags win over BENCH_* environment variables, which win over the
// defaults (the --quick defaults when --quick or BENCH_QUICK=1 is given).
import { parseArgs } from "node:util";
import type { BenchProvider, Mode, StoreKind, TargetName } from "./types.ts";

export interface BenchOptions {
  /** seconds of each saturation run */
  duration: number;
  /** seconds of each fixed-rate run */
  rateDuration: number;
  /** seconds of the unmeasured run that warms each target before it is measured */
  warmup: number;
  connections: number;
  /** requests per second of the fixed-rate runs */
  rate: number;
  /** connections of the fixed-rate runs of json and stream; see rateConnectionsFor */
  rateConnections: number;
  /** connections of the fixed-rate runs of stream-paced, whose streams last longer */
  pacedRateConnections: number;
  /** the mock upstream's delay before its response headers, ms */
  latency: number;
  /**
   * ms the paced mock waits between the events of a stream (the stream-paced mode); the stream
   * mode's mock sends a whole stream in one write, which a pass-through forwards as one while
   * the gateway handles each event
   */
  chunkDelay: number;
  /** completion length the mock answers with */
  tokens: number;
  logLevel: string;
  targets: TargetName[];
  modes: Mode[];
  /**
   * the upstream's wire format: openai measures direct, pass-through and gateway; the others
   * measure the gateway's translating adapter against that provider's mock (gateway only: the
   * load speaks OpenAI's API, which their mocks do not)
   */
  provider: BenchProvider;
  /**
   * the gateway's stores, each measured in turn with the same load: SQLite, or a PostgreSQL
   * database made for the run (and Redis); in the order of STORES
   */
  stores: StoreKind[];
  /**
   * gateway processes sharing each PostgreSQL store (the SQLite setup has one); the load
   * spreads over them
   */
  instances: number;
  /** content safety on the gateway: off, or on with a rules reviewer (stream requests are then answered as JSON) */
  safety: "off" | "rules";
  /** Node and V8 flags of the gateway processes (e.g. --max-semi-space-size=8), to measure heap settings */
  nodeOptions: string[];
  /** write V8 CPU profiles of the gateway and the pass-through to .bench/profiles */
  profile: boolean;
  /** record the gateway and the pass-through with Linux perf (CPU time) to .bench/perf */
  perf: boolean;
  quick: boolean;
  help: boolean;
}

export const USAGE = `usage: npm run bench -- [options]

  --duration S          seconds of each saturation run            (BENCH_DURATION, default 15; quick 3)
  --rate-duration S     seconds of each fixed-rate run            (BENCH_RATE_DURATION, default 10; quick 3)
  --warmup S            unmeasured warm-up per target and mode    (BENCH_WARMUP, default 2; quick 1)
  --connections N       connections of the saturation runs        (BENCH_CONNECTIONS, default 50)
  --rate R              requests/s of the fixed-rate runs         (BENCH_RATE, default 500)
  --rate-connections N  connections of the fixed-rate runs        (BENCH_RATE_CONNECTIONS, default --connections)
  --latency MS          mock upstream latency                     (BENCH_LATENCY, default 20)
  --chunk-delay MS      the stream-paced mode's pause between stream events, as a
                        model's tokens come (openai only)         (BENCH_CHUNK_DELAY, default 1)
  --tokens N            completion tokens per answer              (BENCH_TOKENS, default 20)
  --log-level L         the gateway's LOG_LEVEL                   (BENCH_LOG_LEVEL, default warn)
  --targets LIST        direct,passthrough,gateway,routed,messages,responses
                                                                  (BENCH_TARGETS, default all)
  --modes LIST          json,stream,stream-paced: stream is the mock's whole stream in
                        one write, stream-paced one event every --chunk-delay ms
                                                                  (BENCH_MODES, default all three)
  --provider P          the upstream: openai (the default), anthropic, gemini or azure; the
                        last three measure the gateway alone against that provider's mock,
                        so its CPU µs/req is the cost of the translation (BENCH_PROVIDER)
  --safety off|rules    content safety on the gateway with a rules reviewer; streams are
                        reviewed streams                           (BENCH_SAFETY, default off)
  --store LIST          the gateway's stores, each measured in turn: sqlite, postgres (a
                        database made for the run on 127.0.0.1:5432, dropped at the end),
                        postgres+redis (and Redis on 127.0.0.1:6379 under a key prefix of
                        the run's own)           (BENCH_STORE, default sqlite,postgres+redis)
  --instances N         gateway processes sharing each PostgreSQL store; the load spreads
                        its connections over them                 (BENCH_INSTANCES, default 1)
  --node-options=FLAGS  Node and V8 flags of the gateway processes, space-separated, after
                        an "=": --node-options=--max-semi-space-size=8
                                                                  (BENCH_NODE_OPTIONS, default none)
  --profile             write .cpuprofile files of the gateway and the pass-through to .bench/profiles
  --perf                record the gateway and the pass-through with Linux perf, CPU time
                        only, to .bench/perf (needs perf on PATH)
  --quick               short runs, for a smoke test              (BENCH_QUICK=1)`;

const MAX_SECONDS = 300;
const TARGETS: readonly TargetName[] = [
  "direct",
  "passthrough",
  "gateway",
  "routed",
  "messages",
  "responses",
];
const STORES: readonly StoreKind[] = ["sqlite", "postgres", "postgres+redis"];
/** The default path and the production one, so that one plain run reports the goals. */
const DEFAULT_STORES = "sqlite,postgres+redis";
/** More gateway instances than that only fight over the machine's cores. */
const MAX_INSTANCES = 16;
const MODES: readonly Mode[] = ["json", "stream", "stream-paced"];
const PROVIDERS: readonly BenchProvider[] = ["openai", "anthropic", "gemini", "azure"];

type Env = Record<string, string | undefined>;

function number(name: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > max)
    throw new Error(`${name} must be a number from 0 to ${max}, got "${raw}"`);
  return value;
}

function list<T extends string>(name: string, raw: string | undefined, allowed: readonly T[]): T[] {
  if (!raw) return [...allowed];
  const items = raw.split(",").map((s) => s.trim());
  for (const item of items)
    if (!allowed.includes(item as T))
      throw new Error(`${name}: unknown "${item}" (use ${allowed.join(",")})`);
  return allowed.filter((a) => items.includes(a));
}

/**
 * Connections of a fixed-rate run. Each connection sends rate/connections requests per
 * second, one after another (see bench/load.ts), so that share times the target's latency
 * must stay well under a second for the rate to be reached: keep it under half a second.
 */
export function rateConnectionsFor(rate: number, latencyMs: number, connections: number): number {
  return Math.max(connections, Math.ceil((rate * latencyMs * 2) / 1000));
}

/** Flags only: anything else would be taken for the script to run. */
function nodeOptions(raw: string | undefined): string[] {
  const flags = (raw ?? "").split(/\s+/).filter(Boolean);
  for (const flag of flags)
    if (!/^--[a-z0-9][a-z0-9-]*(=\S+)?$/.test(flag))
      throw new Error(`--node-options: "${flag}" is not a flag like --max-semi-space-size=8`);
  return flags;
}

/** Several gateway instances need a store they can share. */
function instancesFor(stores: StoreKind[], raw: string | undefined): number {
  const instances = number("--instances", raw, 1, MAX_INSTANCES);
  if (!Number.isInteger(instances) || instances < 1)
    throw new Error(`--instances must be a whole number from 1 to ${MAX_INSTANCES}, got "${raw}"`);
  if (instances > 1 && !stores.some((s) => s !== "sqlite"))
    throw new Error("several instances share a PostgreSQL store: add --store postgres or postgres+redis");
  return instances;
}

/** The targets the gateway process (or instances) answers. */
export const GATEWAY_TARGETS: readonly TargetName[] = ["gateway", "routed", "messages", "responses"];

/**
 * The gateway's targets on each store: every one asked for on the first store; on the others
 * `gateway` alone. Routed, messages and responses are read against the gateway row of their
 * own process, which a store moves as much as theirs; measuring them once keeps the default
 * run of two stores near 13 minutes instead of 17.5.
 */
export function storeTargets(
  options: Pick<BenchOptions, "targets" | "stores">,
): Map<StoreKind, TargetName[]> {
  const asked = options.targets.filter((t) => GATEWAY_TARGETS.includes(t));
  return new Map(
    options.stores.map((store, i) => [store, i === 0 ? asked : asked.filter((t) => t === "gateway")]),
  );
}

/** The instances of one store's gateway: SQLite's file is one process's. */
export function instancesOn(store: StoreKind, options: Pick<BenchOptions, "instances">): number {
  return store === "sqlite" ? 1 : options.instances;
}

/**
 * Only the openai mock paces its streams for the bench: another provider's run leaves the paced
 * mode out unless it is asked for, and then refuses it.
 */
function modesFor(provider: BenchProvider, raw: string | undefined): Mode[] {
  const modes = list("--modes", raw, MODES);
  if (provider === "openai") return modes;
  if (raw && modes.includes("stream-paced"))
    throw new Error(`--modes stream-paced: only the openai mock paces its streams, not the ${provider} one`);
  return modes.filter((m) => m !== "stream-paced");
}

/** Only the gateway speaks OpenAI's API in front of another provider's mock. */
function targetsFor(provider: BenchProvider, targets: TargetName[]) {
  if (provider === "openai") return { provider, targets };
  if (!targets.includes("gateway")) throw new Error(`--provider ${provider} measures the gateway only`);
  return { provider, targets: ["gateway"] as TargetName[] };
}

export function parseOptions(argv: string[], env: Env): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: "string" },
      "rate-duration": { type: "string" },
      warmup: { type: "string" },
      connections: { type: "string" },
      rate: { type: "string" },
      "rate-connections": { type: "string" },
      latency: { type: "string" },
      tokens: { type: "string" },
      "chunk-delay": { type: "string" },
      "log-level": { type: "string" },
      targets: { type: "string" },
      modes: { type: "string" },
      safety: { type: "string" },
      provider: { type: "string" },
      store: { type: "string" },
      instances: { type: "string" },
      "node-options": { type: "string" },
      profile: { type: "boolean" },
      perf: { type: "boolean" },
      quick: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const quick = values.quick ?? env.BENCH_QUICK === "1";
  const pick = (flag: string | undefined, name: string) => flag ?? env[name];
  const latency = number("--latency", pick(values.latency, "BENCH_LATENCY"), 20, 10_000);
  const rate = Math.max(1, Math.round(number("--rate", pick(values.rate, "BENCH_RATE"), 500, 100_000)));
  const connections = Math.max(
    1,
    number("--connections", pick(values.connections, "BENCH_CONNECTIONS"), 50, 10_000),
  );
  const stores = list("--store", pick(values.store, "BENCH_STORE") || DEFAULT_STORES, STORES);
  const rawChunkDelay = pick(values["chunk-delay"], "BENCH_CHUNK_DELAY");
  const chunkDelay = number("--chunk-delay", rawChunkDelay, 1, 1_000);
  // 0 would make stream-paced the stream mode again
  if (chunkDelay <= 0) throw new Error("--chunk-delay must be above 0: the stream mode is the unpaced one");
  const tokens = number("--tokens", pick(values.tokens, "BENCH_TOKENS"), 20, 100_000);
  const provider = list("--provider", pick(values.provider, "BENCH_PROVIDER") ?? "openai", PROVIDERS)[0]!;
  if (rawChunkDelay && provider !== "openai")
    throw new Error(`--chunk-delay: only the openai mock paces its streams, not the ${provider} one`);
  const rateConnections = (streamMs: number) =>
    Math.max(
      1,
      number(
        "--rate-connections",
        pick(values["rate-connections"], "BENCH_RATE_CONNECTIONS"),
        rateConnectionsFor(rate, streamMs, connections),
        10_000,
      ),
    );
  return {
    duration: number("--duration", pick(values.duration, "BENCH_DURATION"), quick ? 3 : 15, MAX_SECONDS),
    rateDuration: number(
      "--rate-duration",
      pick(values["rate-duration"], "BENCH_RATE_DURATION"),
      quick ? 3 : 10,
      MAX_SECONDS,
    ),
    warmup: number("--warmup", pick(values.warmup, "BENCH_WARMUP"), quick ? 1 : 2, MAX_SECONDS),
    connections,
    rate,
    rateConnections: rateConnections(latency),
    // a paced stream lasts its latency and a pause per event (the tokens, a finish, usage)
    pacedRateConnections: rateConnections(latency + chunkDelay * (tokens + 2)),
    latency,
    chunkDelay,
    tokens,
    logLevel: pick(values["log-level"], "BENCH_LOG_LEVEL") ?? "warn",
    ...targetsFor(provider, list("--targets", pick(values.targets, "BENCH_TARGETS"), TARGETS)),
    modes: modesFor(provider, pick(values.modes, "BENCH_MODES")),
    stores,
    instances: instancesFor(stores, pick(values.instances, "BENCH_INSTANCES")),
    safety: list("--safety", pick(values.safety, "BENCH_SAFETY") ?? "off", ["off", "rules"] as const)[0]!,
    nodeOptions: nodeOptions(pick(values["node-options"], "BENCH_NODE_OPTIONS")),
    profile: values.profile ?? false,
    perf: values.perf ?? false,
    quick,
    help: values.help ?? false,
  };
}
