// What the conformance suite's cells share: the scripted agent model behind the mock upstreams,
// a gateway in front of them (one model per kind of upstream, a plan with content safety off
// and one with reviewed streaming), a recording proxy in front of the gateway, the real
// clients run as a user runs them (their own home folder, offline, default settings but for
// what makes them reach the gateway and let the agent's tool run), and the checks of a cell:
// the client succeeded, the tool really ran, the final answer arrived, every request was
// accepted, and the records match the mock's usage call for call.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { configSchema } from "../../src/config/cross-check.ts";
import type { ConfigInput } from "../../src/config/schema.ts";
import { openaiCompatibleConfig } from "../../src/providers/openai-compatible/config.ts";
import type { CallRecord } from "../../src/records/call-record.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { AGENT_DONE, AGENT_MARKER } from "../support/mock-agent.ts";
import { startMockAnthropic } from "../support/mock-anthropic-upstream.ts";
import { startMockGemini } from "../support/mock-gemini-upstream.ts";
import { type MockUpstream, startMockUpstream } from "../support/mock-openai-upstream.ts";
import { agentsDir, binOf, type ClientName, clientPath } from "./install.ts";
import { type Exchange, type Recorder, startRecorder } from "./recorder.ts";

/** What the user asks: the scripted model does the same whatever the words. */
export const AGENT_PROMPT = "Write the marker file with the shell tool, then say DONE.";

/** How long one client run may take before it is stopped (a cell that hangs fails, it does not block). */
const RUN_TIMEOUT_MS = 120_000;

export const UPSTREAM_KEYS = {
  MOCK_UPSTREAM_KEY: "sk-upstream-agents-1",
  ANTHROPIC_KEY: "sk-ant-agents-1",
  GEMINI_KEY: "AIzaAgents0123456789",
};

/** The kinds of upstream a cell reaches, and how the gateway gets there. */
export type UpstreamKind = "anthropic" | "chat" | "responses" | "gemini";

export const UPSTREAM_LABEL: Record<UpstreamKind, string> = {
  anthropic: "Anthropic upstream",
  chat: "chat completions upstream",
  responses: "Responses upstream",
  gemini: "Gemini upstream",
};

export interface Mocks {
  /** chat completions and Responses, in agent mode */
  openai: MockUpstream;
  /** Anthropic's Messages API, in agent mode */
  anthropic: MockUpstream;
  /** Google's Gemini API, in agent mode */
  gemini: MockUpstream;
}

/** The mocks check no key: the clients reach them directly too (the baseline), with keys of their own. */
export async function startAgentMocks(): Promise<Mocks> {
  return {
    openai: await startMockUpstream({ agent: true }),
    anthropic: await startMockAnthropic({ agent: true }),
    gemini: await startMockGemini({ agent: true }),
  };
}

/** The mock a kind of upstream is served by. */
export const mockOf = (mocks: Mocks, kind: UpstreamKind): MockUpstream =>
  kind === "anthropic" ? mocks.anthropic : kind === "gemini" ? mocks.gemini : mocks.openai;

export interface AgentGateway {
  gw: TestGateway;
  /** the recording proxy in front of the gateway: point the clients here */
  front: Recorder;
  close(): Promise<void>;
}

/** The plans of the suite's accounts: content safety off, and on with reviewed streaming. */
export type SafetyMode = "off" | "reviewed";

/**
 * A gateway serving `models` (public id → kind of upstream), behind a recording proxy. The
 * Responses upstream is an openai-compatible provider whose Responses API calls go natively
 * (the setting is named as the provider's schema names it today); the chat completions one
 * translates them. The body limit is docs/coding-agents.md's advice.
 */
export async function startAgentGateway(
  mocks: Mocks,
  models: Readonly<Record<string, UpstreamKind>>,
): Promise<AgentGateway> {
  const timeouts = { connect_ms: 2_000, first_byte_ms: 10_000, idle_ms: 10_000, total_ms: 60_000 };
  const shape = openaiCompatibleConfig.shape as Record<string, unknown>;
  const native: Record<string, unknown> = {};
  if ("responses_api" in shape) native.responses_api = "native";
  if ("responses_builtin_tools" in shape) native.responses_builtin_tools = ["web_search"];
  const providers = [
    { id: "anth", type: "anthropic", base_url: mocks.anthropic.url, api_key_env: "ANTHROPIC_KEY", timeouts },
    {
      id: "chat",
      type: "openai-compatible",
      base_url: mocks.openai.url,
      api_key_env: "MOCK_UPSTREAM_KEY",
      timeouts,
    },
    {
      id: "responses",
      type: "openai-compatible",
      base_url: mocks.openai.url,
      api_key_env: "MOCK_UPSTREAM_KEY",
      timeouts,
      ...native,
    },
    { id: "gem", type: "gemini", base_url: mocks.gemini.url, api_key_env: "GEMINI_KEY", timeouts },
  ] as NonNullable<ConfigInput["providers"]>;
  const upstreamModel: Record<UpstreamKind, [string, string]> = {
    anthropic: ["anth", "claude-sonnet-4-5"],
    chat: ["chat", "mock-model"],
    responses: ["responses", "mock-responses-model"],
    gemini: ["gem", "gemini-2.5-flash"],
  };
  const ids = Object.keys(models);
  const config: Partial<ConfigInput> = {
    server: {
      host: "127.0.0.1",
      port: 0,
      body_limit_bytes: 32 * 1024 * 1024,
      body_discard_ms: 1_000,
      shutdown_grace_ms: 5_000,
    },
    providers,
    models: Object.entries(models).map(([id, kind]) => ({
      id,
      provider: upstreamModel[kind][0],
      upstream_model: upstreamModel[kind][1],
    })),
    plans: [
      { id: "default", quota_tokens: 1_000_000_000_000, models: ids },
      {
        id: "reviewed",
        quota_tokens: 1_000_000_000_000,
        models: ids,
        safety: { enabled: true, streaming: "reviewed" as const },
      },
    ],
    // off unless a plan turns it on; the rules reviewer flags a word no answer of the agent has
    safety: {
      enabled: false,
      review_input: true,
      reviewers: [{ type: "rules" as const, terms: ["xyzzy-forbidden"], category: "blocked_terms" }],
    },
  };
  configSchema.parse({ ...config }); // a config the schema refuses fails here, naming the field
  const gw = await startTestGateway({ env: UPSTREAM_KEYS, config });
  const front = await startRecorder(gw.origin);
  return {
    gw,
    front,
    async close() {
      await front.close();
      await gw.close();
    },
  };
}

/** An account on the plan of a safety mode, and a key of it. */
export async function agentKey(
  gw: TestGateway,
  safety: SafetyMode,
  name: string,
): Promise<{ id: string; secret: string }> {
  const account = await gw.account(name, { plan: safety === "off" ? "default" : "reviewed" });
  return gw.key(account);
}

/**
 * How the client prints what it did: its final result alone (Claude Code's `--output-format
 * json`, Codex's plain output: the last message on stdout), or its stream of events as JSON
 * lines (Claude Code's `stream-json`, Codex's `--json`). Both stream from the API either way.
 */
export type OutputMode = "result" | "events";

export interface RunOptions {
  client: ClientName;
  /** the origin the client is pointed at (it adds its API's paths) */
  origin: string;
  key: string;
  /** the model to ask for; undefined: the client's own default */
  model: string | undefined;
  output: OutputMode;
}

export interface ClientRun {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** the client's working directory, where the agent's command writes its marker */
  workdir: string;
  /** the client's home folder */
  home: string;
  /** where the run's folders are (removed by `cleanup`) */
  root: string;
  ms: number;
  timedOut: boolean;
}

/**
 * The command line and environment of a client run. Claude Code: `claude -p` with the gateway
 * as ANTHROPIC_BASE_URL and the key as ANTHROPIC_AUTH_TOKEN (docs/coding-agents.md, "Claude Code"), its
 * nonessential traffic (telemetry, update checks) off, and Bash allowed so the agent's command
 * runs without a prompt nobody answers. Codex: `codex exec` with a provider entry pointing at
 * the gateway (docs/coding-agents.md, "Codex CLI") in a config.toml of its own home, and the workspace-write
 * sandbox so the command may write its marker (the default, read-only, refuses), and its
 * plugins off. Gemini CLI: `gemini -p` with the gateway as GOOGLE_GEMINI_BASE_URL and the key
 * as GEMINI_API_KEY, the API-key sign-in chosen in its settings (docs/coding-agents.md, "Gemini
 * CLI"), its usage statistics and update checks off, the working folder trusted and tools
 * approved (`--approval-mode yolo`: headless, its shell tool is offered only so). All retry
 * less than by default: a refused request fails the cell in seconds rather than minutes.
 * None reaches anything but the gateway.
 */
function command(options: RunOptions, home: string): { args: string[]; env: Record<string, string> } {
  const base = { PATH: clientPath(), HOME: home, LANG: "C.UTF-8", TERM: "dumb", NO_COLOR: "1" };
  if (options.client === "claude-code") {
    return {
      args: [
        "-p",
        AGENT_PROMPT,
        "--output-format",
        options.output === "result" ? "json" : "stream-json",
        ...(options.output === "events" ? ["--verbose"] : []),
        "--allowedTools",
        "Bash",
      ],
      env: {
        ...base,
        ANTHROPIC_BASE_URL: options.origin,
        ANTHROPIC_AUTH_TOKEN: options.key,
        ...(options.model ? { ANTHROPIC_MODEL: options.model } : {}),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
        CLAUDE_CODE_MAX_RETRIES: "1",
      },
    };
  }
  if (options.client === "gemini-cli") {
    mkdirSync(join(home, ".gemini"), { recursive: true });
    writeFileSync(
      join(home, ".gemini", "settings.json"),
      JSON.stringify({
        security: { auth: { selectedType: "gemini-api-key" } },
        privacy: { usageStatisticsEnabled: false },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, maxAttempts: 1 },
      }),
    );
    return {
      args: [
        "-p",
        AGENT_PROMPT,
        "--output-format",
        options.output === "result" ? "json" : "stream-json",
        "--approval-mode",
        "yolo",
        ...(options.model ? ["--model", options.model] : []),
      ],
      env: {
        ...base,
        GOOGLE_GEMINI_BASE_URL: options.origin,
        GEMINI_API_KEY: options.key,
        GEMINI_CLI_TRUST_WORKSPACE: "true",
      },
    };
  }
  const codexHome = join(home, ".codex");
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, "config.toml"),
    [
      ...(options.model ? [`model = ${JSON.stringify(options.model)}`] : []),
      'model_provider = "gateway"',
      "",
      // its plugin marketplace is looked up on the internet at startup (the only traffic
      // besides the gateway's: Claude Code has none with its nonessential traffic off)
      "[features]",
      "plugins = false",
      "",
      "[model_providers.gateway]",
      'name = "chat-gateway"',
      `base_url = ${JSON.stringify(`${options.origin}/v1`)}`,
      'env_key = "GATEWAY_KEY"',
      'wire_api = "responses"',
      "request_max_retries = 0",
      "stream_max_retries = 0",
      "",
    ].join("\n"),
  );
  return {
    args: [
      "exec",
      "--skip-git-repo-check",
      "--sandbox",
      "workspace-write",
      ...(options.output === "events" ? ["--json"] : []),
      AGENT_PROMPT,
    ],
    env: { ...base, CODEX_HOME: codexHome, GATEWAY_KEY: options.key },
  };
}

/**
 * Runs a client once, in folders of its own under the install folder (not the system's
 * temporary folder, where Codex declines to set up its helpers); stopped, with everything it
 * started, after RUN_TIMEOUT_MS.
 */
export function runClient(options: RunOptions): Promise<ClientRun> {
  const root = join(agentsDir(), "runs", `${options.client}-${randomBytes(4).toString("hex")}`);
  const home = join(root, "home");
  const workdir = join(root, "work");
  mkdirSync(home, { recursive: true });
  mkdirSync(workdir, { recursive: true });
  const { args, env } = command(options, home);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(binOf(options.client), args, {
      cwd: workdir,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout.on("data", (b: Buffer) => {
      stdout += b.toString("utf8");
    });
    child.stderr.on("data", (b: Buffer) => {
      stderr += b.toString("utf8");
    });
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {}
    }, RUN_TIMEOUT_MS);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, workdir, home, root, ms: Date.now() - started, timedOut });
    });
  });
}

/** Removes a run's folders, unless AGENTS_KEEP=1 (to look at them after a failure). */
export function cleanup(run: ClientRun): void {
  if (process.env.AGENTS_KEEP !== "1") rmSync(run.root, { recursive: true, force: true });
}

/** The final answer as the client printed it, in each of its output modes. */
export function finalAnswer(client: ClientName, output: OutputMode, stdout: string): string | undefined {
  const lines = stdout
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const parsed = lines.flatMap((l) => {
    try {
      return [JSON.parse(l)];
    } catch {
      return [];
    }
  });
  if (client === "claude-code") {
    if (output === "result") {
      try {
        return JSON.parse(stdout).result;
      } catch {
        return undefined;
      }
    }
    return parsed.findLast((e) => e?.type === "result")?.result;
  }
  if (client === "gemini-cli") {
    if (output === "result") {
      try {
        return JSON.parse(stdout).response;
      } catch {
        return undefined;
      }
    }
    // the assistant's message deltas after the last tool's result
    const after = parsed.findLastIndex((e) => e?.type === "tool_result");
    return parsed
      .slice(after + 1)
      .filter((e) => e?.type === "message" && e.role === "assistant")
      .map((e) => e.content)
      .join("");
  }
  if (output === "events")
    return parsed.findLast((e) => e?.type === "item.completed" && e.item?.type === "agent_message")?.item
      ?.text;
  return stdout.trim() || undefined;
}

/** The marker the agent's command wrote, or undefined. */
export function markerOf(run: ClientRun): string | undefined {
  const file = join(run.workdir, AGENT_MARKER.file);
  return existsSync(file) ? readFileSync(file, "utf8").trim() : undefined;
}

/** The end of a text, for failure messages. */
const tail = (text: string, n = 1_500) => (text.length > n ? `…${text.slice(-n)}` : text);

/** The requests of the exchanges that reached an API route (not /v1/models and the like). */
export const apiExchanges = (exchanges: readonly Exchange[]): Exchange[] =>
  exchanges.filter((e) => e.method === "POST");

/** A refused exchange as a failure message names it: the status and the gateway's own message. */
export function refusal(e: Exchange): string {
  let message = e.response;
  try {
    const body = JSON.parse(e.response);
    message = body?.error?.message ?? body?.message ?? e.response;
    const param = body?.error?.param;
    if (param) message = `${message} (param: ${param})`;
  } catch {}
  return `${e.method} ${e.path} answered ${e.status}: ${message}`;
}

/**
 * The checks of a run that should have completed the agent loop, most telling first: a
 * request the gateway (or the mock) refused names its message, which names the field.
 */
export function assertCompleted(
  run: ClientRun,
  exchanges: readonly Exchange[],
  output: OutputMode,
  client: ClientName,
) {
  // a client that adapts (Claude Code drops a beta the API refused and asks again) may still
  // complete: the refusal is the failure all the same, and each distinct one is named
  const refused = apiExchanges(exchanges).filter((e) => e.status >= 400 || e.status === 0);
  const reasons = [...new Set(refused.map(refusal))];
  assert.equal(
    refused.length,
    0,
    `${refused.length} of ${apiExchanges(exchanges).length} requests refused:\n${reasons.join("\n")}`,
  );
  const context = `exit ${run.code}${run.signal ? ` (${run.signal})` : ""}${run.timedOut ? " after the time limit" : ""}\nstderr: ${tail(run.stderr)}\nstdout: ${tail(run.stdout)}`;
  assert.equal(run.code, 0, `the client failed: ${context}`);
  assert.equal(markerOf(run), AGENT_MARKER.text, `the tool did not run (no marker written): ${context}`);
  const answer = finalAnswer(client, output, run.stdout);
  assert.ok(
    answer?.includes(AGENT_DONE) && answer.includes(AGENT_MARKER.text),
    `the final answer did not arrive with the tool's output: ${JSON.stringify(answer)}\n${context}`,
  );
}

/** A call's usage in the gateway's terms, from the usage the mock reported in its API's fields. */
export interface CallUsage {
  prompt: number;
  completion: number;
  cached: number;
  cacheWrite: number;
}

/** The usage a mock reported, read as its API defines it. */
export function reportedUsage(usage: Record<string, any>): CallUsage {
  if ("cache_creation_input_tokens" in usage) {
    const write = usage.cache_creation_input_tokens ?? 0;
    const read = usage.cache_read_input_tokens ?? 0;
    return {
      prompt: usage.input_tokens + write + read,
      completion: usage.output_tokens,
      cached: read,
      cacheWrite: write,
    };
  }
  if ("promptTokenCount" in usage)
    return {
      prompt: usage.promptTokenCount + (usage.toolUsePromptTokenCount ?? 0),
      completion: (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
      cached: usage.cachedContentTokenCount ?? 0,
      cacheWrite: 0,
    };
  if ("prompt_tokens" in usage)
    return {
      prompt: usage.prompt_tokens,
      completion: usage.completion_tokens,
      cached: usage.prompt_tokens_details?.cached_tokens ?? 0,
      cacheWrite: 0,
    };
  return {
    prompt: usage.input_tokens,
    completion: usage.output_tokens,
    cached: usage.input_tokens_details?.cached_tokens ?? 0,
    cacheWrite: 0,
  };
}

const recordUsage = (r: CallRecord): CallUsage => ({
  prompt: Number(r.prompt_tokens),
  completion: Number(r.completion_tokens),
  cached: Number(r.cached_tokens),
  cacheWrite: Number(r.cache_write_tokens),
});

/** A key's call records, oldest first. */
export function recordsOf(gw: TestGateway, keyId: string): Promise<CallRecord[]> {
  return gw.gateway.deps.store.db
    .selectFrom("call_records")
    .selectAll()
    .where("key_id", "=", keyId)
    .orderBy("created_at")
    .execute();
}

/**
 * The key's records match what the mock reported, call for call: one record per upstream
 * request, each ok, charged the mock's usage, and the calls as the client's requests were
 * answered (the request ids the gateway gave the client); reviewed by content safety, and
 * passed, exactly where the plan turns it on.
 */
export async function assertRecordsMatch(
  gw: TestGateway,
  keyId: string,
  mock: MockUpstream,
  exchanges: readonly Exchange[],
  api: string,
  safety: SafetyMode,
): Promise<void> {
  const records = await recordsOf(gw, keyId);
  const reported = mock.requests.map((r, i) => {
    assert.ok(r.usage, `the mock's answer ${i + 1} (${r.path}) noted no usage`);
    return reportedUsage(r.usage);
  });
  const ids = apiExchanges(exchanges).map((e) => e.responseHeaders["x-request-id"]);
  assert.deepEqual(
    records.map((r) => r.request_id),
    ids,
    "one record per request the client sent, in order",
  );
  assert.deepEqual(
    records.map((r) => `${r.api} ${r.status}`),
    records.map(() => `${api} ok`),
    "every call recorded as ok, in the client's API",
  );
  assert.deepEqual(records.map(recordUsage), reported, "each record charged what the mock reported");
  for (const r of records) assert.equal(r.usage_source, "upstream");
  // the streams were reviewed where the plan says so, and passed
  assert.deepEqual(
    records.map((r) => [r.safety_mode, r.safety_verdict]),
    records.map(() => (safety === "off" ? [null, null] : ["reviewed", "pass"])),
    "content safety as the plan says",
  );
}
