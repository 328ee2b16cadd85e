// Starts the servers of a benchmark, each in its own process on a loopback port: the mock
// upstream, the bare pass-through and the gateway (a fresh store and config; one process, or
// several on one PostgreSQL store).
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { START_ENTRY, START_FLAGS } from "../test/support/start-command.ts";
import { type ServerProcess, startServer } from "./processes.ts";
import { API_PATHS } from "./requests.ts";
import type { BenchStore } from "./stores.ts";
import type { BenchProvider, ClientApiName, Mode, StoreKind, TargetName } from "./types.ts";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** Each provider's mock (test/support), the gateway's provider entry for it, and its model name. */
const UPSTREAMS: Record<
  BenchProvider,
  { script: string; args: string[]; provider(url: string): Record<string, unknown>; model: string }
> = {
  openai: {
    script: "test/support/mock-openai-upstream.ts",
    args: [],
    provider: (url) => ({ type: "openai-compatible", base_url: url }),
    model: "mock-model",
  },
  anthropic: {
    script: "test/support/mock-anthropic-upstream.ts",
    args: [],
    provider: (url) => ({ type: "anthropic", base_url: url }),
    model: "claude-sonnet-4-5",
  },
  gemini: {
    script: "test/support/mock-gemini-upstream.ts",
    args: [],
    provider: (url) => ({ type: "gemini", base_url: url }),
    model: "gemini-2.5-flash",
  },
  azure: {
    script: "test/support/mock-openai-upstream.ts",
    args: ["--azure"],
    // the mock's url names /v1; Azure's base_url is the resource's origin
    provider: (url) => ({ type: "azure-openai", base_url: url.replace(/\/v1$/, "") }),
    model: "bench-deployment",
  },
};
const PASSTHROUGH_SCRIPT = join(ROOT, "bench/passthrough.ts");
const GATEWAY_SCRIPT = join(ROOT, START_ENTRY);
const HOST = "127.0.0.1";

/** The public model name the gateway's config offers. */
const GATEWAY_MODEL = "gpt-bench";
/** The same upstream as two weighted deployments (two providers on the mock): what routing costs. */
const ROUTED_MODEL = "gpt-bench-routed";
/** The same two models on the mock that paces its streams (the stream-paced mode). */
const PACED_MODEL = "gpt-bench-paced";
const ROUTED_PACED_MODEL = "gpt-bench-routed-paced";
/** The name the mock is asked for directly (the one the gateway sends upstream). */
const UPSTREAM_MODEL = UPSTREAMS.openai.model;
/** Far more tokens than any bench can use: the quota must never be the bottleneck. */
const QUOTA_TOKENS = 100_000_000_000;

/** Something the load is sent to. */
export interface Target {
  name: TargetName;
  /** the client API it is asked through */
  api: ClientApiName;
  /** that API's URL at each server: one, or one per gateway instance (the load spreads over them) */
  urls: string[];
  /** the processes whose CPU (summed) and memory (the highest) are measured */
  pids: number[];
  model: string;
  /** the API key (for the mock and the pass-through, a made-up one of a gateway key's length) */
  key: string;
  servers: ServerProcess[];
  /** the gateway's store; none for direct and passthrough */
  store?: StoreKind;
  /**
   * The same target in the stream-paced mode, whose upstream is the mock that paces its streams:
   * the mock itself for direct, another route of the same process for the others
   */
  paced?: TargetVariant;
}

/** What a target's paced form changes: where the load goes, what it asks for, whose CPU is measured. */
export interface TargetVariant {
  urls: string[];
  model: string;
  pids: number[];
}

/** The target as a mode asks it: its paced form in the stream-paced mode. */
export function targetFor(target: Target, mode: Mode): Target {
  if (mode !== "stream-paced") return target;
  if (!target.paced) throw new Error(`${target.name} has no paced upstream for the stream-paced mode`);
  return { ...target, ...target.paced };
}

/** A key of a gateway key's length, so every request has the same size. */
const NO_KEY = `sk-${"x".repeat(43)}`;

/**
 * Node flags that write V8 CPU profiles of the process when it exits, into a folder of its own:
 * one file per thread, named by Node with the thread's id (a fixed --cpu-prof-name made the
 * gateway's token-counting worker write over the main thread's profile). collectProfiles
 * names them afterwards.
 */
function profileFlags(profiling: Profiling, name: string): string[] {
  return [
    ...(profiling.dir
      ? ["--cpu-prof", `--cpu-prof-dir=${join(profiling.dir, `${name}-${Date.now()}`)}`]
      : []),
    // names the process's JIT code for perf, in /tmp/perf-<pid>.map (Node's fixed place); V8
    // then also logs its heap's chunks, by default into an isolate-*-v8.log per thread in the
    // working directory, which "+" keeps in a temporary file that goes with the process
    ...(profiling.perf ? ["--perf-basic-prof", "--no-logfile-per-isolate", "--logfile=+"] : []),
  ];
}

/** How the servers are profiled: V8 profiles into `dir`, and JIT names for a perf recording. */
export interface Profiling {
  dir?: string | undefined;
  perf: boolean;
}

/** Node's own profile names: CPU.<date>.<time>.<pid>.<thread id>.<sequence>.cpuprofile */
const NODE_PROFILE = /^CPU\.\d+\.\d+\.\d+\.(\d+)\.\d+\.cpuprofile$/;

/**
 * After the servers exited: each process's main thread profile becomes <process>.cpuprofile
 * and each worker thread's workers/<process>-thread<id>.cpuprofile.
 */
export function collectProfiles(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === "workers") continue;
    const folder = join(dir, entry.name);
    for (const file of readdirSync(folder)) {
      const thread = NODE_PROFILE.exec(file)?.[1];
      if (thread === undefined) continue;
      if (thread === "0") renameSync(join(folder, file), join(dir, `${entry.name}.cpuprofile`));
      else {
        mkdirSync(join(dir, "workers"), { recursive: true });
        renameSync(join(folder, file), join(dir, "workers", `${entry.name}-thread${thread}.cpuprofile`));
      }
    }
    rmSync(folder, { recursive: true, force: true });
  }
}

/** The API's URL at a server whose answer named its /v1 URL. */
function apiUrl(server: ServerProcess, api: ClientApiName): string {
  const base = server.info.url;
  if (typeof base !== "string") throw new Error(`${server.name} printed no url`);
  return `${base}${API_PATHS[api]}`;
}

export function startMock(
  latencyMs: number,
  provider: BenchProvider = "openai",
  chunkDelayMs = 0,
): Promise<ServerProcess> {
  const { script, args } = UPSTREAMS[provider];
  return startServer(
    "mock upstream",
    [
      join(ROOT, script),
      "--host",
      HOST,
      "--port",
      "0",
      "--latency",
      String(latencyMs),
      ...(chunkDelayMs > 0 ? ["--chunk-delay", String(chunkDelayMs)] : []),
      "--no-record",
      ...args,
    ],
    process.env,
  );
}

/**
 * The mock itself as a target: the baseline every latency is compared to; in the stream-paced
 * mode, the mock that paces its streams.
 */
export function directTarget(mock: ServerProcess, pacedMock?: ServerProcess): Target {
  return {
    name: "direct",
    api: "chat",
    urls: [apiUrl(mock, "chat")],
    pids: [mock.pid],
    model: UPSTREAM_MODEL,
    key: NO_KEY,
    servers: [mock],
    ...(pacedMock
      ? { paced: { urls: [apiUrl(pacedMock, "chat")], model: UPSTREAM_MODEL, pids: [pacedMock.pid] } }
      : {}),
  };
}

/** One pass-through process in front of both mocks, as the one gateway process is. */
export async function startPassthrough(
  mock: ServerProcess,
  profiling: Profiling,
  pacedMock?: ServerProcess,
): Promise<Target> {
  const server = await startServer(
    "pass-through",
    [
      ...profileFlags(profiling, "passthrough"),
      PASSTHROUGH_SCRIPT,
      "--upstream",
      String(mock.info.url),
      ...(pacedMock ? ["--paced-upstream", String(pacedMock.info.url)] : []),
      "--host",
      HOST,
    ],
    process.env,
  );
  const pacedUrl = server.info.paced_url;
  if (pacedMock && typeof pacedUrl !== "string") throw new Error("the pass-through printed no paced_url");
  return {
    name: "passthrough",
    api: "chat",
    urls: [apiUrl(server, "chat")],
    pids: [server.pid],
    model: UPSTREAM_MODEL,
    key: NO_KEY,
    servers: [server],
    ...(pacedMock
      ? { paced: { urls: [`${pacedUrl}${API_PATHS.chat}`], model: UPSTREAM_MODEL, pids: [server.pid] } }
      : {}),
  };
}

/**
 * The rules reviewer of a safety benchmark: a realistic list of terms and patterns, none of
 * which the mock's words match, so every answer is reviewed in full and passes.
 */
const BENCH_RULES = {
  type: "rules",
  terms: [
    "credit card dump",
    "bomb recipe",
    "nerve agent",
    "ransomware kit",
    "credential stuffing",
    "card skimmer",
    "meth synthesis",
    "untraceable gun",
    "swatting",
    "doxxing",
  ],
  patterns: ["\\b\\d{4}[ -]?\\d{4}[ -]?\\d{4}[ -]?\\d{4}\\b", "\\bssn:?\\s*\\d{3}-\\d{2}-\\d{4}\\b"],
  category: "blocked",
};

export interface GatewayOptions {
  logLevel: string;
  safety: "off" | "rules";
  provider: BenchProvider;
  /** gateway processes; more than one share a PostgreSQL store */
  instances: number;
  /** Node and V8 flags of each gateway process */
  nodeOptions: string[];
  store: BenchStore;
  /** the mock that paces its streams, behind models of their own (the stream-paced mode) */
  pacedUpstream?: string | undefined;
  /** in the processes' names, when the run has a gateway per store */
  label?: string | undefined;
}

/** A model of one deployment and one of two (routing), on the providers `<id>` and `<id>-b`. */
function benchModels(provider: BenchProvider, id: string, model: string, routed: string) {
  const upstreamModel = UPSTREAMS[provider].model;
  return [
    { id: model, provider: id, upstream_model: upstreamModel },
    {
      id: routed,
      deployments: [
        { provider: id, upstream_model: upstreamModel },
        { provider: `${id}-b`, upstream_model: upstreamModel },
      ],
    },
  ];
}

function writeGatewayConfig(dir: string, upstream: string, options: GatewayOptions): string {
  const { provider, safety, pacedUpstream } = options;
  const file = join(dir, "gateway.yaml");
  const providers = (id: string, url: string) => [
    { id, ...UPSTREAMS[provider].provider(url) },
    { id: `${id}-b`, ...UPSTREAMS[provider].provider(url) },
  ];
  const config = {
    server: { host: HOST, port: 0, shutdown_grace_ms: 2_000 },
    // data_dir is each instance's own (GATEWAY_DATA_DIR): the SQLite file, or only the
    // first-start secrets file on PostgreSQL
    store: { data_dir: join(dir, "data"), ...options.store.config },
    log_level: options.logLevel,
    providers: [...providers("mock", upstream), ...(pacedUpstream ? providers("paced", pacedUpstream) : [])],
    models: [
      ...benchModels(provider, "mock", GATEWAY_MODEL, ROUTED_MODEL),
      ...(pacedUpstream ? benchModels(provider, "paced", PACED_MODEL, ROUTED_PACED_MODEL) : []),
    ],
    plans: [
      {
        id: "default",
        quota_tokens: QUOTA_TOKENS,
        models: [GATEWAY_MODEL, ROUTED_MODEL, ...(pacedUpstream ? [PACED_MODEL, ROUTED_PACED_MODEL] : [])],
      },
    ],
    // Streams are measured as reviewed streams: the spec's JSON answer to a stream request is
    // the json mode's work again.
    ...(safety === "rules"
      ? { safety: { enabled: true, streaming: "reviewed", reviewers: [BENCH_RULES] } }
      : {}),
  };
  writeFileSync(file, stringify(config));
  return file;
}

/** The environment of a gateway: its own config and data folder, never the caller's database or Redis. */
function gatewayEnv(config: string, dataDir: string, logLevel: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  return {
    ...env,
    GATEWAY_CONFIG: config,
    GATEWAY_DATA_DIR: dataDir,
    HOST,
    PORT: "0",
    LOG_LEVEL: logLevel,
  };
}

/** The key a first start wrote to its secrets file (stdout is a pipe, so not in its answer). */
function firstKey(server: ServerProcess): string | undefined {
  const file = server.info.secrets_file;
  return typeof file === "string" ? readFileSync(file, "utf8").match(/sk-[A-Za-z0-9_-]+/)?.[0] : undefined;
}

/**
 * Starts `npm start`'s command (`serve --json`) on an empty store and takes the key its first start
 * creates; then the other instances, on the same store, which find the account there and
 * create none: the one key works on all of them.
 */
export async function startGatewayTarget(
  mock: ServerProcess,
  dir: string,
  options: GatewayOptions,
  profiling: Profiling,
): Promise<Target> {
  const config = writeGatewayConfig(dir, String(mock.info.url), options);
  const start = (n: number) => {
    const name = ["gateway", options.label, options.instances > 1 ? n : undefined]
      .filter((part) => part !== undefined)
      .join("-");
    const dataDir = join(dir, `data-${n}`);
    mkdirSync(dataDir, { recursive: true });
    return startServer(
      name,
      // npm start's flags first, so that --node-options (later on the line) wins over them
      [
        ...START_FLAGS,
        ...options.nodeOptions,
        ...profileFlags(profiling, name),
        GATEWAY_SCRIPT,
        "serve",
        "--json",
      ],
      gatewayEnv(config, dataDir, options.logLevel),
    );
  };
  const first = await start(1);
  const key = firstKey(first);
  if (!key) throw new Error("the gateway created no first key: is its store really empty?");
  const others = await Promise.all(Array.from({ length: options.instances - 1 }, (_, i) => start(i + 2)));
  const servers = [first, ...others];
  const urls = servers.map((s) => apiUrl(s, "chat"));
  const pids = servers.map((s) => s.pid);
  return {
    name: "gateway",
    api: "chat",
    urls,
    pids,
    model: GATEWAY_MODEL,
    key,
    servers,
    store: options.store.kind,
    ...(options.pacedUpstream ? { paced: { urls, pids, model: PACED_MODEL } } : {}),
  };
}

/** The running gateway again, asked for the model of two deployments. */
export function routedTarget(gateway: Target): Target {
  const { paced } = gateway;
  return {
    ...gateway,
    name: "routed",
    model: ROUTED_MODEL,
    ...(paced ? { paced: { ...paced, model: ROUTED_PACED_MODEL } } : {}),
  };
}

/** The running gateway again, asked the same question through another client API. */
export function apiTarget(gateway: Target, api: "messages" | "responses"): Target {
  const urls = gateway.servers.map((s) => apiUrl(s, api));
  const { paced } = gateway;
  return { ...gateway, name: api, api, urls, ...(paced ? { paced: { ...paced, urls } } : {}) };
}
