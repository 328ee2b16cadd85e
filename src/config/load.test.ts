import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ConfigError, EMBEDDED_DEFAULTS, loadConfig } from "./load.ts";

let dir: string;
let counter = 0;

before(() => {
  dir = mkdtempSync(join(tmpdir(), "gw-config-test-"));
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

function file(text: string): string {
  const path = join(dir, `config-${++counter}.yaml`);
  writeFileSync(path, text);
  return path;
}

/** A valid configuration with every documented section; tests replace parts of it. */
const FULL = `# every documented field
server:
  host: 0.0.0.0
  port: 9090
  body_limit_bytes: 2048
  agent_body_limit_bytes: 8192
  body_discard_bytes: 4096
  body_discard_ms: 500
  shutdown_grace_ms: 1500
  headers_timeout_ms: 5000
  request_timeout_ms: 30000
  keep_alive_timeout_ms: 10000
  max_connections: 500
  max_connections_per_address: 50
  cors_origins: [https://app.example.com, "http://localhost:5173"]
  allowed_hosts: [Gateway.Example.com]
store:
  data_dir: /var/lib/gateway
ledger:
  wait_ms: 2500
  lease_ms: 9000
log_level: warn
default_plan: starter
metrics:
  token_env: METRICS_TOKEN
providers:
  - id: demo
    type: demo
  - id: openai
    type: openai-compatible
    base_url: https://api.openai.com/v1/
    api_key_env: OPENAI_API_KEY
    headers:
      OpenAI-Organization: org-123
    timeouts:
      connect_ms: 1000
      idle_ms: 2000
    max_connections: 64
models:
  - id: demo
    provider: demo
  - id: gpt-4o-mini
    provider: openai
    upstream_model: gpt-4o-mini-2024-07-18
    owned_by: openai
    max_output_tokens: 1024
    prompt_overhead:
      image: 48169
plans:
  - id: starter
    quota_tokens: 100000
    models: [demo]
  - id: pro
    quota_tokens: 5000000
    models: [demo, gpt-4o-mini]
`;

/** A minimal valid file, with the given sections appended or replaced. */
function minimal(extra = ""): string {
  return `providers:
  - id: demo
    type: demo
models:
  - id: demo
    provider: demo
plans:
  - id: default
    quota_tokens: 10
    models: [demo]
${extra}`;
}

/** Loads and expects a ConfigError; returns its message. */
function failure(env: Record<string, string | undefined>, path?: string): string {
  try {
    loadConfig(env, path);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail("the configuration was accepted");
}

/** Expects one line of the message to name the source, the field path and the problem. */
function assertLine(message: string, source: string, path: string, problem: RegExp): void {
  const lines = message.split("\n");
  const line = lines.find((l) => l.startsWith(`${source}: ${path}: `));
  assert.ok(line, `no line "${source}: ${path}: …" in:\n${message}`);
  assert.match(line, problem);
}

describe("loadConfig: embedded defaults", () => {
  test("with no file and no environment, the demo models on the default plan", () => {
    const c = loadConfig({});
    assert.deepEqual(
      c.providers.map((p) => [p.id, p.type]),
      [["demo", "demo"]],
    );
    assert.deepEqual(
      c.models.map((m) => [m.id, m.kind, m.provider, m.upstream_model]),
      [
        ["demo", "chat", "demo", "demo-echo"],
        ["demo-embedding", "embedding", "demo", "demo-embedding"],
      ],
    );
    assert.equal(c.plans.length, 1);
    assert.equal(c.plans[0]!.id, "default");
    assert.deepEqual(c.plans[0]!.models, ["demo", "demo-embedding"]);
    assert.ok(c.plans[0]!.quota_tokens > 0);
    assert.equal(c.default_plan, "default");
    assert.deepEqual(c.server, {
      host: "127.0.0.1",
      port: 8080,
      body_limit_bytes: 1_048_576,
      agent_body_limit_bytes: 32 * 1_048_576,
      body_discard_bytes: 64 * 1_048_576,
      body_discard_ms: 10_000,
      sse_keepalive_ms: 15_000,
      stream_stall_ms: 60_000,
      shutdown_grace_ms: 30_000,
      headers_timeout_ms: 20_000,
      request_timeout_ms: 60_000,
      keep_alive_timeout_ms: 65_000,
      max_connections: 10_000,
      max_connections_per_address: 1_000,
      cors_origins: [],
      allowed_hosts: [],
    });
    assert.deepEqual(c.metrics, { account_label: false });
    assert.deepEqual(c.tracing, { enabled: false, sample_ratio: 1, account_id: false });
    assert.deepEqual(c.store, {
      data_dir: "./data",
      redis_prefix: "gateway:",
      records_journal: true,
    });
    assert.deepEqual(c.ledger, { wait_ms: 5_000, lease_ms: 15_000 });
    assert.equal(c.log_level, "info");
    assert.equal(c.models[0]!.max_output_tokens, 4096);
  });

  test("loading does not change the embedded defaults", () => {
    const before = JSON.stringify(EMBEDDED_DEFAULTS);
    loadConfig({ PORT: "1234", HOST: "::1", LOG_LEVEL: "debug" });
    assert.equal(JSON.stringify(EMBEDDED_DEFAULTS), before);
    assert.equal(loadConfig({}).server.port, 8080);
  });
});

describe("loadConfig: the YAML file", () => {
  test("a file with every documented section loads, with defaults filled in", () => {
    const c = loadConfig({}, file(FULL));
    assert.deepEqual(c.server, {
      host: "0.0.0.0",
      port: 9090,
      body_limit_bytes: 2048,
      agent_body_limit_bytes: 8192,
      body_discard_bytes: 4096,
      body_discard_ms: 500,
      sse_keepalive_ms: 15_000,
      stream_stall_ms: 60_000,
      shutdown_grace_ms: 1500,
      headers_timeout_ms: 5000,
      request_timeout_ms: 30_000,
      keep_alive_timeout_ms: 10_000,
      max_connections: 500,
      max_connections_per_address: 50,
      cors_origins: ["https://app.example.com", "http://localhost:5173"],
      allowed_hosts: ["gateway.example.com"],
    });
    assert.deepEqual(c.metrics, { token_env: "METRICS_TOKEN", account_label: false });
    assert.deepEqual(c.store, {
      data_dir: "/var/lib/gateway",
      redis_prefix: "gateway:",
      records_journal: true,
    });
    assert.deepEqual(c.ledger, { wait_ms: 2500, lease_ms: 9000 });
    assert.equal(c.log_level, "warn");
    assert.equal(c.default_plan, "starter");
    const openai = c.providers[1]!;
    assert.equal(openai.type, "openai-compatible");
    if (openai.type !== "openai-compatible") return;
    assert.equal(openai.base_url, "https://api.openai.com/v1", "trailing slash removed");
    assert.equal(openai.api_key_env, "OPENAI_API_KEY");
    assert.deepEqual(openai.headers, { "OpenAI-Organization": "org-123" });
    assert.deepEqual(openai.timeouts, {
      connect_ms: 1000,
      first_byte_ms: 60_000,
      idle_ms: 2000,
      total_ms: 600_000,
    });
    assert.equal(openai.max_connections, 64);
    assert.deepEqual(c.models[1], {
      id: "gpt-4o-mini",
      kind: "chat",
      provider: "openai",
      upstream_model: "gpt-4o-mini-2024-07-18",
      owned_by: "openai",
      max_output_tokens: 1024,
      routing: "weighted",
      fallbacks: [],
      prompt_overhead: {
        per_request: 32,
        per_message: 8,
        tools: 256,
        image: 48_169,
        audio: 4096,
        file: 16_384,
      },
    });
    assert.equal(c.models[0]!.max_output_tokens, 4096);
    assert.deepEqual(
      c.plans.map((p) => [p.id, p.quota_tokens, p.models]),
      [
        ["starter", 100_000, ["demo"]],
        ["pro", 5_000_000, ["demo", "gpt-4o-mini"]],
      ],
    );
  });

  test("an openai-compatible provider gets default timeouts, headers and connections", () => {
    const c = loadConfig(
      {},
      file(`providers:
  - id: up
    type: openai-compatible
    base_url: http://127.0.0.1:11434/v1
models:
  - id: m
    provider: up
plans:
  - id: default
    quota_tokens: 0
`),
    );
    const p = c.providers[0]!;
    assert.equal(p.type, "openai-compatible");
    if (p.type !== "openai-compatible") return;
    assert.equal(p.base_url, "http://127.0.0.1:11434/v1");
    assert.equal(p.api_key_env, undefined);
    assert.deepEqual(p.headers, {});
    assert.deepEqual(p.timeouts, {
      connect_ms: 5000,
      first_byte_ms: 60_000,
      idle_ms: 30_000,
      total_ms: 600_000,
    });
    assert.equal(p.max_connections, 256);
    assert.deepEqual(p.responses_builtin_tools, [], "built-in tools refused unless the operator lists them");
    assert.deepEqual(c.plans[0]!.models, []);
  });

  test("responses_builtin_tools: OpenAI's tool names load; another name is refused, naming the entry", () => {
    const provider = (tools: string) => `providers:
  - id: up
    type: openai-compatible
    base_url: https://api.openai.com/v1
    responses_builtin_tools: ${tools}
models:
  - id: m
    provider: up
plans:
  - id: default
    quota_tokens: 0
`;
    const c = loadConfig({}, file(provider("[web_search, file_search]")));
    const p = c.providers[0]!;
    assert.ok(p.type === "openai-compatible");
    assert.deepEqual(p.responses_builtin_tools, ["web_search", "file_search"]);
    const path = file(provider("[web_search, web_crawl]"));
    assertLine(failure({}, path), path, "providers[0].responses_builtin_tools[1]", /./);
  });

  test("a key pool: api_key_env then api_keys_env load; keys themselves (api_keys) are refused, never echoed", () => {
    const provider = (keys: string) => `providers:
  - id: up
    type: anthropic
    api_key_env: KEY_A
${keys}
models:
  - id: m
    provider: up
plans:
  - id: default
    quota_tokens: 0
`;
    const c = loadConfig({}, file(provider("    api_keys_env: [KEY_B, KEY_C]")));
    const p = c.providers[0]!;
    assert.ok(p.type === "anthropic");
    assert.deepEqual([p.api_key_env, p.api_keys_env, p.api_keys], ["KEY_A", ["KEY_B", "KEY_C"], undefined]);
    const path = file(provider("    api_keys: [sk-ant-literal-key-9876]"));
    const message = failure({}, path);
    assertLine(message, path, "providers[0].api_keys", /never go in the file.*api_keys_env/);
    assert.equal(message.includes("9876"), false, "the key is not repeated");
    const bad = file(provider("    api_keys_env: [KEY_B, 1B]"));
    assertLine(failure({}, bad), bad, "providers[0].api_keys_env[1]", /environment variable name/);
  });

  test("the file named by GATEWAY_CONFIG is read when no file is passed", () => {
    const path = file(FULL);
    const c = loadConfig({ GATEWAY_CONFIG: path });
    assert.equal(c.default_plan, "starter");
    assert.equal(c.server.port, 9090);
  });

  test("a missing file names the file", () => {
    const path = join(dir, "does-not-exist.yaml");
    const m = failure({}, path);
    assert.ok(m.startsWith(`${path}: `), m);
    assert.match(m, /cannot read/);
    assert.match(m, /ENOENT/);
  });

  test("a YAML syntax error names the file, the line and the column", () => {
    const path = file("providers:\n  - id: demo\n    type: demo\n  models: [\n");
    const m = failure({}, path);
    assert.ok(m.startsWith(`${path}: `), m);
    assert.match(m, /line 4, column \d+/);
  });

  test("a YAML error further down reports that line", () => {
    const path = file(`${minimal()}log_level: info\nlog_level: warn\n`);
    const m = failure({}, path);
    assert.ok(m.startsWith(`${path}: `), m);
    // the duplicate key is on line 12 (the minimal file has 10 lines)
    assert.match(m, /line 12, column 1\b/);
  });

  test("a file that is not a mapping is refused", () => {
    const path = file("- a\n- b\n");
    const m = failure({}, path);
    assert.ok(m.startsWith(`${path}: `), m);
    assert.match(m, /mapping/);
  });

  test("an empty file reports the missing sections", () => {
    const path = file("# nothing here\n");
    const m = failure({}, path);
    for (const field of ["providers", "models", "plans"]) assertLine(m, path, field, /./);
  });

  test("a model naming an unknown provider", () => {
    const path = file(minimal().replace("provider: demo", "provider: openai"));
    assertLine(failure({}, path), path, "models[0].provider", /unknown provider "openai"/);
  });

  test("prices: a negative price, a price as a string, an unknown field under pricing", () => {
    const priced = (pricing: string) =>
      file(minimal().replace("    provider: demo\n", `    provider: demo\n    pricing: ${pricing}\n`));
    let path = priced("{ input: -1, output: 15 }");
    assertLine(failure({}, path), path, "models[0].pricing.input", /must not be negative/);
    path = priced('{ input: "3.00", output: 15 }');
    assertLine(
      failure({}, path),
      path,
      "models[0].pricing.input",
      /must be a number \(USD per million tokens\)/,
    );
    path = priced("{ input: 3, outptu: 15 }");
    assertLine(failure({}, path), path, "models[0].pricing", /outptu/);
    path = file(minimal().replace("quota_tokens: 10", "quota_tokens: 10\n    price_multiplier: -0.5"));
    assertLine(failure({}, path), path, "plans[0].price_multiplier", /must not be negative/);
  });

  // A price of 1e300 was accepted, and costs and money holds overflowed what doubles hold as
  // whole nanodollars: each price is capped, and so is the plan's multiplier.
  test("prices: above the cap, infinite or not a number", () => {
    const priced = (pricing: string) =>
      file(minimal().replace("    provider: demo\n", `    provider: demo\n    pricing: ${pricing}\n`));
    let path = priced("{ input: 1e300 }");
    assertLine(
      failure({}, path),
      path,
      "models[0].pricing.input",
      /must be at most 1000000 \(USD per million tokens\)/,
    );
    path = priced("{ input: 3, cache_write: 1000000.01 }");
    assertLine(failure({}, path), path, "models[0].pricing.cache_write", /must be at most 1000000/);
    path = priced("{ output: .inf }");
    assertLine(
      failure({}, path),
      path,
      "models[0].pricing.output",
      /must be finite \(USD per million tokens\)/,
    );
    path = priced("{ cached_input: -.inf }");
    assertLine(failure({}, path), path, "models[0].pricing.cached_input", /must be finite/);
    path = priced("{ input: .nan }");
    assertLine(failure({}, path), path, "models[0].pricing.input", /must be a number/);
    const plan = (multiplier: string) =>
      file(minimal().replace("quota_tokens: 10", `quota_tokens: 10\n    price_multiplier: ${multiplier}`));
    path = plan("1001");
    assertLine(failure({}, path), path, "plans[0].price_multiplier", /must be at most 1000/);
    path = plan(".inf");
    assertLine(failure({}, path), path, "plans[0].price_multiplier", /must be finite/);
    // the caps themselves are prices one may set
    path = file(
      minimal()
        .replace(
          "    provider: demo\n",
          "    provider: demo\n    pricing: { input: 1000000, output: 1000000 }\n",
        )
        .replace("quota_tokens: 10", "quota_tokens: 10\n    price_multiplier: 1000"),
    );
    const config = loadConfig({}, path);
    assert.deepEqual(config.models[0]!.pricing, { input: 1_000_000, output: 1_000_000 });
    assert.equal(config.plans[0]!.price_multiplier, 1000);
  });

  test("prices: every field is optional; a model without pricing loads", () => {
    const path = file(
      minimal().replace(
        "    provider: demo\n",
        "    provider: demo\n    pricing: { input: 0.15, cache_write: 0 }\n",
      ),
    );
    const config = loadConfig({}, path);
    assert.deepEqual(config.models[0]!.pricing, { input: 0.15, cache_write: 0 });
    assert.equal(config.plans[0]!.price_multiplier, 1);
  });

  test("a plan naming an unknown model", () => {
    const path = file(minimal().replace("models: [demo]", "models: [demo, gpt-5]"));
    assertLine(failure({}, path), path, "plans[0].models[1]", /unknown model "gpt-5"/);
  });

  test("duplicate provider, model and plan ids", () => {
    const path = file(`providers:
  - id: demo
    type: demo
  - id: demo
    type: demo
models:
  - id: m
    provider: demo
  - id: n
    provider: demo
  - id: m
    provider: demo
plans:
  - id: default
    quota_tokens: 1
  - id: default
    quota_tokens: 2
`);
    const m = failure({}, path);
    assertLine(m, path, "providers[1].id", /duplicate id "demo"/);
    assertLine(m, path, "models[2].id", /duplicate id "m"/);
    assertLine(m, path, "plans[1].id", /duplicate id "default"/);
  });

  test("a model of several deployments, with routing, retries and fallbacks; the routing defaults", () => {
    const c = loadConfig(
      {},
      file(`providers:
  - id: demo
    type: demo
  - id: east
    type: openai-compatible
    base_url: http://127.0.0.1:9000/v1
models:
  - id: demo
    provider: demo
  - id: smart
    owned_by: acme
    deployments:
      - { provider: east, upstream_model: gpt-4o, weight: 3 }
      - { provider: demo }
    routing: least-busy
    retries: 2
    fallbacks: [demo]
plans:
  - id: default
    quota_tokens: 10
    models: [smart]
`),
    );
    const smart = c.models[1]!;
    assert.deepEqual(smart.deployments, [
      { provider: "east", upstream_model: "gpt-4o", weight: 3 },
      { provider: "demo", weight: 1 },
    ]);
    assert.equal(smart.routing, "least-busy");
    assert.equal(smart.retries, 2);
    assert.deepEqual(smart.fallbacks, ["demo"]);
    assert.equal(c.models[0]!.routing, "weighted", "the default strategy");
    assert.deepEqual(c.routing, {
      retry_on: [429, 500, 502, 503, 504, 529, "timeout", "network"],
      cooldown: { failures: 3, window_s: 60, seconds: 30 },
      backoff: { initial_ms: 50, max_ms: 2000 },
      expose_deployment: false,
    });
  });

  test("routing fields out of range name the field", () => {
    const path = file(
      minimal(`routing:
  retry_on: [400, 503, timeout, sometimes]
`).replace("provider: demo", "provider: demo\n    routing: fastest"),
    );
    const m = failure({}, path);
    assertLine(m, path, "models[0].routing", /weighted/);
    assertLine(m, path, "routing.retry_on[0]", /other 4xx are never retried/);
    assertLine(m, path, "routing.retry_on[3]", /timeout, network, malformed/);
  });

  test("a model with both shapes, neither, or one deployment twice", () => {
    const path = file(`providers:
  - id: demo
    type: demo
models:
  - id: both
    provider: demo
    deployments: [{ provider: demo }]
  - id: neither
  - id: twice
    deployments: [{ provider: demo, upstream_model: x }, { provider: demo, upstream_model: x }]
plans:
  - id: default
    quota_tokens: 10
`);
    const m = failure({}, path);
    assertLine(m, path, "models[0].deployments", /either provider\/upstream_model or deployments/);
    assertLine(m, path, "models[1].provider", /needs a provider \(or deployments\)/);
    assertLine(m, path, "models[2].deployments[1]", /"demo\/x" is listed twice/);
  });

  test("a deployment or fallback naming what does not exist", () => {
    const path = file(`providers:
  - id: demo
    type: demo
models:
  - id: ghost
    deployments: [{ provider: nowhere }]
    fallbacks: [ghost, missing]
plans:
  - id: default
    quota_tokens: 10
`);
    const m = failure({}, path);
    assertLine(m, path, "models[0].deployments[0].provider", /unknown provider "nowhere"/);
    assertLine(m, path, "models[0].fallbacks[0]", /cannot be its own fallback/);
    assertLine(m, path, "models[0].fallbacks[1]", /unknown model "missing"/);
  });

  test("an embedding model: only on providers that embed, with embedding fallbacks; a judge is a chat model", () => {
    const path = file(`providers:
  - id: demo
    type: demo
  - id: claude
    type: anthropic
    base_url: https://api.anthropic.com
models:
  - id: chat
    provider: demo
  - id: embed
    kind: embedding
    deployments: [{ provider: demo }, { provider: claude }]
    fallbacks: [chat]
  - id: chat-too
    provider: demo
    fallbacks: [embed]
plans:
  - id: default
    quota_tokens: 10
safety:
  reviewers: [{ type: model-judge, model: embed }]
`);
    const m = failure({}, path);
    assertLine(
      m,
      path,
      "models[1].deployments[1].provider",
      /provider "claude" is of type anthropic, which does not embed \(embedding providers: openai-compatible, gemini, azure-openai, demo\)/,
    );
    assertLine(
      m,
      path,
      "models[1].fallbacks[0]",
      /"chat" is of kind chat: a model's fallbacks must be of its own kind \(embedding\)/,
    );
    assertLine(
      m,
      path,
      "models[2].fallbacks[0]",
      /"embed" is of kind embedding: a model's fallbacks must be of its own kind \(chat\)/,
    );
    assertLine(
      m,
      path,
      "safety.reviewers[0].model",
      /"embed" is an embedding model: a judge must be a chat model/,
    );
    assert.doesNotMatch(m, /models\[1\]\.deployments\[0\]/, "demo embeds");
  });

  test("a bad base_url", () => {
    for (const url of ["not a url", "ftp://files.example.com/v1", "api.openai.com/v1"]) {
      const path = file(`providers:
  - id: up
    type: openai-compatible
    base_url: "${url}"
models:
  - id: m
    provider: up
plans:
  - id: default
    quota_tokens: 1
`);
      assertLine(failure({}, path), path, "providers[0].base_url", /./);
    }
  });

  test("an unknown field is refused (strict), at any level", () => {
    let path = file(minimal("colour: blue\n"));
    let m = failure({}, path);
    assert.ok(m.startsWith(`${path}: `), m);
    assert.match(m, /colour/);

    path = file(minimal("server:\n  prot: 80\n"));
    m = failure({}, path);
    assertLine(m, path, "server", /prot/);

    path = file(minimal().replace("    type: demo\n", "    type: demo\n    base_url: http://x\n"));
    m = failure({}, path);
    assertLine(m, path, "providers[0]", /base_url/);

    path = file(minimal().replace("    quota_tokens: 10\n", "    quota_tokens: 10\n    quota: 5\n"));
    assertLine(failure({}, path), path, "plans[0]", /quota/);
  });

  test("wrong types and ranges name the field", () => {
    let path = file(minimal("server:\n  port: 70000\n"));
    assertLine(failure({}, path), path, "server.port", /./);
    path = file(minimal().replace("quota_tokens: 10", "quota_tokens: -1"));
    assertLine(failure({}, path), path, "plans[0].quota_tokens", /./);
    path = file(minimal().replace("quota_tokens: 10", "quota_tokens: lots"));
    assertLine(failure({}, path), path, "plans[0].quota_tokens", /./);
    path = file(minimal("log_level: loud\n"));
    assertLine(failure({}, path), path, "log_level", /./);
    path = file(minimal().replace("  - id: demo\n    type: demo", "  - id: demo\n    type: no-such-type"));
    assertLine(failure({}, path), path, "providers[0].type", /./);
    path = file(minimal().replace("  - id: default", "  - id: has space"));
    assertLine(failure({}, path), path, "plans[0].id", /letters, digits/);
  });

  test("server limits, CORS origins, allowed hosts and the metrics token variable are checked", () => {
    let path = file(minimal("server:\n  headers_timeout_ms: 9000\n  request_timeout_ms: 5000\n"));
    assertLine(failure({}, path), path, "server.headers_timeout_ms", /request_timeout_ms/);
    path = file(minimal("server:\n  cors_origins: [https://app.example.com/path]\n"));
    assertLine(failure({}, path), path, "server.cors_origins[0]", /origin/);
    path = file(minimal("server:\n  cors_origins: ['*']\n"));
    assertLine(failure({}, path), path, "server.cors_origins[0]", /./);
    path = file(minimal("server:\n  allowed_hosts: ['evil.example:80']\n"));
    assertLine(failure({}, path), path, "server.allowed_hosts[0]", /host name/);
    path = file(minimal("server:\n  max_connections_per_address: 0\n"));
    assertLine(failure({}, path), path, "server.max_connections_per_address", /./);
    path = file(minimal("metrics:\n  token_env: not a name\n"));
    assertLine(failure({}, path), path, "metrics.token_env", /environment variable/);
  });

  test("tracing: an http(s) endpoint and a sample ratio from 0 to 1", () => {
    const c = loadConfig(
      {},
      file(
        minimal(
          "tracing:\n  enabled: true\n  endpoint: https://collector:4318/v1/traces\n  sample_ratio: 0.25\n",
        ),
      ),
    );
    assert.deepEqual(c.tracing, {
      enabled: true,
      endpoint: "https://collector:4318/v1/traces",
      sample_ratio: 0.25,
      account_id: false,
    });
    let path = file(minimal("tracing:\n  endpoint: collector:4318\n"));
    assertLine(failure({}, path), path, "tracing.endpoint", /./);
    path = file(minimal("tracing:\n  sample_ratio: 2\n"));
    assertLine(failure({}, path), path, "tracing.sample_ratio", /./);
  });

  test("a default_plan that does not exist", () => {
    const path = file(minimal("default_plan: gold\n"));
    assertLine(failure({}, path), path, "default_plan", /no plan with id "gold"/);
  });

  test("every problem gets its own line", () => {
    const path = file(`providers:
  - id: demo
    type: demo
models:
  - id: m
    provider: ghost
plans:
  - id: p
    quota_tokens: 5
    models: [m, phantom]
default_plan: missing
`);
    const m = failure({}, path);
    const lines = m.split("\n");
    assert.equal(lines.length, 3, m);
    for (const line of lines) assert.ok(line.startsWith(`${path}: `), line);
    assertLine(m, path, "models[0].provider", /unknown provider "ghost"/);
    assertLine(m, path, "plans[0].models[1]", /unknown model "phantom"/);
    assertLine(m, path, "default_plan", /no plan with id "missing"/);
  });
});

describe("loadConfig: environment overrides", () => {
  test("PORT, HOST, GATEWAY_DATA_DIR, DATABASE_URL and LOG_LEVEL override the file", () => {
    const c = loadConfig(
      {
        PORT: "0",
        HOST: "::1",
        GATEWAY_DATA_DIR: "/tmp/elsewhere",
        DATABASE_URL: "postgres://gw@db.example:5432/gateway",
        LOG_LEVEL: "debug",
      },
      file(FULL),
    );
    assert.equal(c.server.port, 0);
    assert.equal(c.server.host, "::1");
    assert.equal(c.server.body_limit_bytes, 2048, "fields without an override keep the file's value");
    assert.equal(c.store.data_dir, "/tmp/elsewhere");
    assert.equal(c.store.database_url, "postgres://gw@db.example:5432/gateway");
    assert.equal(c.log_level, "debug");
  });

  test("overrides apply over the embedded defaults too", () => {
    const c = loadConfig({ PORT: "3000", DATABASE_URL: "postgresql://localhost/x" });
    assert.equal(c.server.port, 3000);
    assert.equal(c.store.database_url, "postgresql://localhost/x");
    assert.equal(c.server.host, "127.0.0.1");
  });

  test("empty variables are ignored", () => {
    const c = loadConfig(
      { PORT: "", HOST: "", GATEWAY_DATA_DIR: "", DATABASE_URL: "", LOG_LEVEL: "" },
      file(FULL),
    );
    assert.equal(c.server.port, 9090);
    assert.equal(c.server.host, "0.0.0.0");
    assert.equal(c.store.data_dir, "/var/lib/gateway");
    assert.equal(c.store.database_url, undefined);
    assert.equal(c.log_level, "warn");
  });

  test("a PORT that is not a whole number is refused, naming the variable", () => {
    for (const port of ["abc", "-1", "80.5", "8080x", "1e3", " 80"]) {
      const m = failure({ PORT: port });
      assert.match(m, /^environment: PORT: /, `PORT=${port}: ${m}`);
      assert.ok(m.includes(`"${port}"`), m);
    }
  });

  test("a PORT out of range is refused, naming the variable", () => {
    const m = failure({ PORT: "70000" }, file(FULL));
    assert.match(m, /server\.port/);
    assert.match(m, /PORT|environment/, `the message should say the value came from the environment:\n${m}`);
  });

  test("a bad LOG_LEVEL is refused, naming the variable", () => {
    const m = failure({ LOG_LEVEL: "loud" });
    assert.match(m, /log_level/);
    assert.match(
      m,
      /LOG_LEVEL|environment/,
      `the message should say the value came from the environment:\n${m}`,
    );
  });

  test("REDIS_URL sets store.redis_url, beside DATABASE_URL", () => {
    const c = loadConfig({ DATABASE_URL: "postgres://db/gw", REDIS_URL: "redis://cache:6379/0" }, file(FULL));
    assert.equal(c.store.redis_url, "redis://cache:6379/0");
    assert.equal(c.store.database_url, "postgres://db/gw");
  });

  test("Redis without PostgreSQL, or a REDIS_URL that is not redis://, is refused", () => {
    assert.match(
      failure({ REDIS_URL: "redis://cache:6379" }),
      /^environment: REDIS_URL \(store\.redis_url\): .*set database_url too$/m,
    );
    const m = failure({ DATABASE_URL: "postgres://db/gw", REDIS_URL: "http://cache" });
    assert.match(m, /^environment: REDIS_URL \(store\.redis_url\): must be a redis:\/\//m);
  });

  test("a DATABASE_URL that is not postgres:// is refused, naming the variable", () => {
    const m = failure({ DATABASE_URL: "mysql://localhost/db" });
    assert.match(m, /store\.database_url/);
    assert.match(m, /postgres/);
    assert.match(
      m,
      /DATABASE_URL|environment/,
      `the message should say the value came from the environment:\n${m}`,
    );
  });
});

describe("loadConfig: the result", () => {
  test("is deeply frozen", () => {
    const c = loadConfig({}, file(FULL));
    assert.ok(Object.isFrozen(c));
    assert.ok(Object.isFrozen(c.server));
    assert.ok(Object.isFrozen(c.store));
    assert.ok(Object.isFrozen(c.providers));
    assert.ok(Object.isFrozen(c.providers[1]));
    assert.ok(Object.isFrozen(c.models[0]));
    assert.ok(Object.isFrozen(c.plans[1]!.models));
    const p = c.providers[1]!;
    if (p.type === "openai-compatible") {
      assert.ok(Object.isFrozen(p.headers));
      assert.ok(Object.isFrozen(p.timeouts));
    }
    assert.throws(() => {
      (c.server as { port: number }).port = 1;
    }, TypeError);
    assert.throws(() => {
      (c.plans[0]!.models as string[]).push("x");
    }, TypeError);
    assert.throws(() => {
      (c as { default_plan: string }).default_plan = "pro";
    }, TypeError);
    assert.equal(c.server.port, 9090);
    assert.equal(c.default_plan, "starter");
  });

  test("the embedded defaults' result is frozen too", () => {
    const c = loadConfig({});
    assert.ok(Object.isFrozen(c));
    assert.ok(Object.isFrozen(c.plans[0]!.models));
  });
});
