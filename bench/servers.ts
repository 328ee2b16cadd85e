// Starts the three servers of a benchmark, each in its own process on a loopback port: the
// mock upstream, the bare pass-through and the gateway (with a fresh store and config).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { type ServerProcess, startServer } from "./processes.ts";
import type { BenchProvider, TargetName } from "./types.ts";

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
const GATEWAY_SCRIPT = join(ROOT, "src/main.ts");
const HOST = "127.0.0.1";

/** The public model name the gateway's config offers. */
const GATEWAY_MODEL = "gpt-bench";
/** The same upstream as two weighted deployments (two providers on the mock): what routing costs. */
const ROUTED_MODEL = "gpt-bench-routed";
/** The name the mock is asked for directly (the one the gateway sends upstream). */
const UPSTREAM_MODEL = UPSTREAMS.openai.model;
/** Far more tokens than any bench can use: the quota must never be the bottleneck. */
const QUOTA_TOKENS = 100_000_000_000;

/** Something the load is sent to. */
export interface Target {
  name: TargetName;
  /** the chat completions URL */
  url: string;
  /** the process whose CPU and memory are measured */
  pid: number;
  model: string;
  authorization: string;
  server: ServerProcess;
}

/** Node flags that write a V8 CPU profile of the process when it exits. */
function profileFlags(dir: string | undefined, name: string): string[] {
  return dir
    ? ["--cpu-prof", `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`]
    : [];
}

function chatUrl(server: ServerProcess): string {
  const base = server.info.url;
  if (typeof base !== "string") throw new Error(`${server.name} printed no url`);
  return `${base}/chat/completions`;
}

export function startMock(latencyMs: number, provider: BenchProvider = "openai"): Promise<ServerProcess> {
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
      "--no-record",
      ...args,
    ],
    process.env,
  );
}

/** The mock itself as a target: the baseline every latency is compared to. */
export function directTarget(mock: ServerProcess): Target {
  // A bearer of the same length as a gateway key keeps the requests the same size.
  const authorization = `Bearer sk-${"x".repeat(43)}`;
  return {
    name: "direct",
    url: chatUrl(mock),
    pid: mock.pid,
    model: UPSTREAM_MODEL,
    authorization,
    server: mock,
  };
}

export async function startPassthrough(mock: ServerProcess, profileDir?: string): Promise<Target> {
  const upstream = String(mock.info.url);
  const server = await startServer(
    "pass-through",
    [...profileFlags(profileDir, "passthrough"), PASSTHROUGH_SCRIPT, "--upstream", upstream, "--host", HOST],
    process.env,
  );
  const authorization = `Bearer sk-${"x".repeat(43)}`;
  return {
    name: "passthrough",
    url: chatUrl(server),
    pid: server.pid,
    model: UPSTREAM_MODEL,
    authorization,
    server,
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

function writeGatewayConfig(
  dir: string,
  upstream: string,
  logLevel: string,
  safety: "off" | "rules",
  provider: BenchProvider,
): string {
  const file = join(dir, "gateway.yaml");
  const config = {
    server: { host: HOST, port: 0, shutdown_grace_ms: 2_000 },
    store: { data_dir: join(dir, "data") },
    log_level: logLevel,
    providers: [
      { id: "mock", ...UPSTREAMS[provider].provider(upstream) },
      { id: "mock-b", ...UPSTREAMS[provider].provider(upstream) },
    ],
    models: [
      { id: GATEWAY_MODEL, provider: "mock", upstream_model: UPSTREAMS[provider].model },
      {
        id: ROUTED_MODEL,
        deployments: [
          { provider: "mock", upstream_model: UPSTREAMS[provider].model },
          { provider: "mock-b", upstream_model: UPSTREAMS[provider].model },
        ],
      },
    ],
    plans: [{ id: "default", quota_tokens: QUOTA_TOKENS, models: [GATEWAY_MODEL, ROUTED_MODEL] }],
    // Streams are measured as reviewed streams: the spec's JSON answer to a stream request is
    // the json mode's work again.
    ...(safety === "rules"
      ? { safety: { enabled: true, streaming: "reviewed", reviewers: [BENCH_RULES] } }
      : {}),
  };
  writeFileSync(file, stringify(config));
  return file;
}

/** The environment of the gateway: its own config and store, never the caller's database. */
function gatewayEnv(config: string, dataDir: string, logLevel: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  return {
    ...env,
    GATEWAY_CONFIG: config,
    GATEWAY_DATA_DIR: dataDir,
    HOST,
    PORT: "0",
    LOG_LEVEL: logLevel,
  };
}

/** Starts `node src/main.ts serve --json` on an empty store and takes the key it creates. */
export async function startGatewayTarget(
  mock: ServerProcess,
  dir: string,
  logLevel: string,
  safety: "off" | "rules",
  provider: BenchProvider,
  profileDir?: string,
): Promise<Target> {
  const dataDir = join(dir, "data");
  mkdirSync(dataDir, { recursive: true });
  const config = writeGatewayConfig(dir, String(mock.info.url), logLevel, safety, provider);
  const server = await startServer(
    "gateway",
    [...profileFlags(profileDir, "gateway"), GATEWAY_SCRIPT, "serve", "--json"],
    gatewayEnv(config, dataDir, logLevel),
  );
  // stdout is a pipe here, so the key is in the file the answer names, not in the answer
  const file = server.info.secrets_file;
  const secret =
    typeof file === "string" ? readFileSync(file, "utf8").match(/sk-[A-Za-z0-9_-]+/)?.[0] : undefined;
  if (!secret) throw new Error("the gateway created no first key: is its store really empty?");
  return {
    name: "gateway",
    url: chatUrl(server),
    pid: server.pid,
    model: GATEWAY_MODEL,
    authorization: `Bearer ${secret}`,
    server,
  };
}

/** The running gateway again, asked for the model of two deployments. */
export function routedTarget(gateway: Target): Target {
  return { ...gateway, name: "routed", model: ROUTED_MODEL };
}
