// The configuration file's schema: one place for every field, its type, its default and its
// description (`.describe()`), from which docs/configuration.md is generated
// (`npm run docs:config`, src/config/reference.ts).
import { z } from "zod";
import { configId as id } from "../domain/config-id.ts";
import { MODEL_KINDS } from "../domain/model-kinds.ts";
import { capabilitiesSchema } from "../providers/capabilities.ts";
import { providerSchema } from "../providers/catalog.ts";
import { outputBoundField } from "../providers/config-fields.ts";
import { DEFAULT_PROMPT_OVERHEADS } from "../providers/prompt-bound.ts";

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();

/**
 * What the model's chat template adds to the bytes of the texts, and what a non-text part can
 * cost: the reservation's prompt bound (src/providers/prompt-bound.ts documents the defaults).
 */
const promptOverheadSchema = z
  .object({
    per_request: nonNegativeInt
      .default(DEFAULT_PROMPT_OVERHEADS.per_request)
      .describe("once per request: BOS, the reply's opening, a default system prompt the template adds"),
    per_message: nonNegativeInt
      .default(DEFAULT_PROMPT_OVERHEADS.per_message)
      .describe("per message: its role header and end-of-turn markers"),
    tools: nonNegativeInt
      .default(DEFAULT_PROMPT_OVERHEADS.tools)
      .describe("once when tools or functions are given: the template's tool-use instructions"),
    image: nonNegativeInt.default(DEFAULT_PROMPT_OVERHEADS.image).describe("per image part"),
    audio: nonNegativeInt.default(DEFAULT_PROMPT_OVERHEADS.audio).describe("per audio part"),
    file: nonNegativeInt
      .default(DEFAULT_PROMPT_OVERHEADS.file)
      .describe("per file part, beyond the bytes of inline file data"),
  })
  .strict()
  .prefault({});

/** One place a public model can be answered from: a provider and its name for the model. */
export const deploymentSchema = z
  .object({
    provider: id.describe("the id of a provider in `providers`"),
    upstream_model: z
      .string()
      .min(1)
      .optional()
      .describe("the name sent upstream; defaults to the public name"),
    weight: z.number().positive().default(1).describe("share of the calls under `routing: weighted`"),
  })
  .strict();

/** How a model's deployments share its calls (src/routing/strategy.ts). */
export const ROUTING_STRATEGIES = ["weighted", "ordered", "least-busy", "latency"] as const;

/**
 * The dearest price a model may have, USD per million tokens: a dollar a token, over a
 * thousand times any list price. A price such as 1e300 was accepted, and its costs and money
 * holds ran far past what doubles hold as whole nanodollars (src/prices/pricing.ts): budgets
 * were compared with numbers that no longer meant an amount.
 */
export const MAX_USD_PER_MILLION = 1_000_000;
/** The most a plan's accounts may pay relative to the prices. */
export const MAX_PRICE_MULTIPLIER = 1_000;

/**
 * A number for money, with messages that say what is wrong: YAML's `.inf` parses to Infinity,
 * which zod refuses as "expected number", sending the reader to look for quotes; `.nan` is not
 * a number indeed.
 */
const moneyNumber = (unit: string, max: number, maxText: string) =>
  z
    .number({
      error: (issue) => {
        if (issue.code !== "invalid_type") return undefined;
        return typeof issue.input === "number" && !Number.isNaN(issue.input)
          ? `must be finite (${unit})`
          : `must be a number (${unit})`;
      },
    })
    .nonnegative({ error: `must not be negative (${unit})` })
    .max(max, { error: `must be at most ${maxText} (${unit})` });

/** USD per million tokens, as providers list them; an absent field costs 0. */
const usdPerMillion = moneyNumber("USD per million tokens", MAX_USD_PER_MILLION, "1000000");
const pricingSchema = z
  .object({
    input: usdPerMillion.optional().describe("prompt tokens"),
    output: usdPerMillion.optional().describe("completion tokens"),
    cached_input: usdPerMillion
      .optional()
      .describe(
        "cache reads (OpenAI cached_tokens, Anthropic cache_read_input_tokens, Gemini cachedContentTokenCount)",
      ),
    cache_write: usdPerMillion
      .optional()
      .describe("cache writes (Anthropic cache_creation_input_tokens); reasoning tokens are output tokens"),
  })
  .strict();
export type PricingConfig = z.output<typeof pricingSchema>;

export const modelSchema = z
  .object({
    id: id.describe("the public name clients send and see"),
    kind: z
      .enum(MODEL_KINDS)
      .default("chat")
      .describe(
        "`chat`: answers chat completions, Messages and Responses calls; `embedding`: answers `POST /v1/embeddings` (its providers must embed: openai-compatible, azure-openai, gemini, demo; its `pricing.input` is the price per input token). Each API refuses a model of the other kind.",
      ),
    provider: id
      .optional()
      .describe(
        "the provider that answers: the one-deployment shape is `provider` and `upstream_model`, the other `deployments`",
      ),
    upstream_model: z
      .string()
      .min(1)
      .optional()
      .describe("the name sent upstream; defaults to the public name"),
    deployments: z
      .array(deploymentSchema)
      .min(1)
      .max(64)
      .optional()
      .describe("several places one of which answers each call (instead of provider/upstream_model)"),
    routing: z
      .enum(ROUTING_STRATEGIES)
      .default("weighted")
      .describe("how the deployments share the calls (README, Routing and failover)"),
    retries: z
      .number()
      .int()
      .nonnegative()
      .max(16)
      .optional()
      .describe("further attempts after the first; default: each other deployment once"),
    fallbacks: z
      .array(id)
      .max(8)
      .default([])
      .describe(
        "public models tried in order when every deployment failed (their own fallbacks are not followed)",
      ),
    owned_by: z
      .string()
      .min(1)
      .optional()
      .describe(
        "what `GET /v1/models` shows as `owned_by`; defaults to the (first deployment's) provider id",
      ),
    max_output_tokens: positiveInt
      .default(4096)
      .describe("output bound reserved when a request gives no max_tokens"),
    output_bound_field: outputBoundField
      .optional()
      .describe(
        "the field the output bound is sent upstream in, where the provider's setting is not right for this model",
      ),
    prompt_overhead: promptOverheadSchema.describe("template overheads of the reservation's prompt bound"),
    pricing: pricingSchema
      .optional()
      .describe(
        "USD per million tokens; absent: the price table's, if it knows the upstream model (src/prices/)",
      ),
    capabilities: capabilitiesSchema
      .optional()
      .describe(
        "what the model takes (reasoning, images, tools); absent fields are inferred (src/providers/capabilities.ts)",
      ),
  })
  .strict();

/** A DNS name as a Host header carries it, without the port; compared lower-cased. */
const hostName = z
  .string()
  .regex(
    /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/,
    "must be a host name",
  )
  .transform((h) => h.toLowerCase());

/** An origin as browsers send it: scheme, host and port only, e.g. https://app.example.com. */
const webOrigin = z.url({ protocol: /^https?$/ }).refine((u) => URL.canParse(u) && new URL(u).origin === u, {
  message: "must be an origin: scheme://host[:port], no path",
});

/**
 * What an attempt may be retried on: upstream statuses that say "not now" (408, 409, 429 and
 * 5xx; other 4xx say the request is wrong and are never retried) and failures without one.
 */
const retryOn = z.union(
  [
    z
      .number()
      .int()
      .refine((s) => s === 408 || s === 409 || s === 429 || (s >= 500 && s <= 599), {
        message: "must be 408, 409, 429 or a 5xx status: other 4xx are never retried",
      }),
    z.enum(["timeout", "network", "malformed"]),
  ],
  { error: "must be a status (408, 409, 429 or 5xx) or one of timeout, network, malformed" },
);
export type RetryOn = z.output<typeof retryOn>;

/** Defaults of every model's routing (src/routing/). */
export const routingSchema = z
  .object({
    retry_on: z
      .array(retryOn)
      .default([429, 500, 502, 503, 504, 529, "timeout", "network"])
      .describe(
        "what an attempt may be retried on: statuses 408, 409, 429 and 5xx (other 4xx are never retried), `timeout`, `network`, `malformed`",
      ),
    cooldown: z
      .object({
        failures: positiveInt.default(3).describe("failures (that `retry_on` lists) that start a cooldown"),
        window_s: z
          .number()
          .positive()
          .max(86_400)
          .default(60)
          .describe("seconds within which the failures are counted"),
        seconds: z
          .number()
          .positive()
          .max(86_400)
          .default(30)
          .describe("how long the deployment is skipped (after a 429 without `retry-after` too)"),
      })
      .strict()
      .prefault({})
      .describe(
        "`failures` within `window_s`: the deployment is skipped for `seconds`, then probed by one call",
      ),
    backoff: z
      .object({
        initial_ms: z
          .number()
          .int()
          .nonnegative()
          .max(60_000)
          .default(50)
          .describe("the longest wait before the second attempt, doubled for each further one"),
        max_ms: z
          .number()
          .int()
          .nonnegative()
          .max(60_000)
          .default(2_000)
          .describe("the longest wait of any attempt"),
      })
      .strict()
      .prefault({})
      .describe("wait before attempt n (n ≥ 2): random in [0, min(max_ms, initial_ms · 2^(n-2))]"),
    expose_deployment: z
      .boolean()
      .default(false)
      .describe("send the deployment that answered in `x-gateway-deployment`"),
  })
  .strict()
  .prefault({})
  .describe("Defaults of every model's routing (README, Routing and failover).");

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");

/** A regular expression source, checked to compile (matched case-insensitively, Unicode). */
const pattern = z
  .string()
  .min(1)
  .refine(
    (source) => {
      try {
        new RegExp(source, "iu");
        return true;
      } catch {
        return false;
      }
    },
    { message: "is not a valid regular expression" },
  );

const rulesReviewer = z
  .object({
    type: z.literal("rules").describe("terms and patterns matched in the gateway (docs/safety-reviewers.md)"),
    terms: z
      .array(z.string().min(1))
      .default([])
      .describe(
        "words or phrases; matched whole, after normalisation, also when spelled out with separators",
      ),
    patterns: z
      .array(pattern)
      .default([])
      .describe("regular expressions, matched case-insensitively against the normalised text"),
    category: z.string().min(1).default("rules").describe("the category a match is reported under"),
  })
  .strict();

const moderationReviewer = z
  .object({
    type: z.literal("moderation-api").describe("a server speaking OpenAI's moderations API"),
    base_url: z
      .url({ protocol: /^https?$/ })
      .transform((u) => u.replace(/\/+$/, ""))
      .describe('base URL of a server speaking OpenAI\'s POST /moderations; ".../v1"'),
    api_key_env: envName
      .optional()
      .describe(
        "name of the environment variable that holds the server's key (the key itself never goes in the file)",
      ),
    model: z.string().min(1).default("omni-moderation-latest").describe("the moderation model asked"),
    thresholds: z
      .record(z.string(), z.number().min(0).max(1))
      .default({})
      .describe(
        "category -> score at or above which it flags; categories without one flag when the server says so",
      ),
  })
  .strict();

const judgeReviewer = z
  .object({
    type: z.literal("model-judge").describe("a model of this gateway judges the text"),
    model: id.describe(
      'a model id from `models`, answering in the Llama Guard style: "safe", or "unsafe" and category codes',
    ),
  })
  .strict();

export const reviewerSchema = z.discriminatedUnion("type", [
  rulesReviewer,
  moderationReviewer,
  judgeReviewer,
]);

/** json: a streaming request is answered with one reviewed JSON body (spec 4.2); reviewed: SSE of reviewed segments */
const safetyStreaming = z.enum(["json", "reviewed"]);

const safetySchema = z
  .object({
    enabled: z.boolean().default(false).describe("the global default; plans and accounts may override it"),
    review_input: z
      .boolean()
      .default(false)
      .describe("also review the caller's messages before anything is sent upstream"),
    timeout_ms: positiveInt
      .default(5_000)
      .describe("one review (the whole reviewer chain over one text); past it the review has failed"),
    streaming: safetyStreaming
      .optional()
      .describe(
        "How `stream: true` is answered. Unset: chat completions `json` (spec 4.2), Messages and Responses `reviewed` (coding agents cannot read a JSON answer to a stream and send the turn again); set, it applies to every API. Plans and accounts may override it.",
      ),
    withheld_limit: z
      .object({
        max: z
          .number()
          .int()
          .nonnegative()
          .max(1_000_000)
          .default(10)
          .describe("withheld answers within the window that refuse the key; 0: no limit"),
        window_ms: positiveInt.max(86_400_000).default(60_000).describe("the window, in milliseconds"),
      })
      .strict()
      .prefault({})
      .describe(
        "A key whose answers were withheld `max` times within `window_ms` is refused (429 `withheld_repeats`, `x-should-retry: false`) until the oldest of them leaves the window, so an agent retrying a withheld turn in a loop stops; `max: 0` turns it off.",
      ),
    segment_tokens: positiveInt
      .max(4096)
      .default(64)
      .describe(
        "reviewed streaming: release text at a sentence end, or at the latest after this many tokens",
      ),
    reviewers: z.array(reviewerSchema).default([]).describe("run in order; the first flag blocks"),
  })
  .strict()
  .prefault({})
  .describe(
    "Content safety: reviewing answers (and optionally the caller's messages) before they are released (README, Content safety).",
  );

/** Call record retention (spec 8): a periodic job prunes the store; see docs/console.md. */
const retentionSchema = z
  .object({
    enabled: z.boolean().default(true).describe("run the job on this instance"),
    interval_minutes: positiveInt
      .max(10_080)
      .default(60)
      .describe("minutes between runs (the first runs a minute after start)"),
    records_kept: positiveInt
      .max(1_000_000)
      .default(1_000)
      .describe(
        "per account, the newest consumption records kept (today's count towards them and are always kept)",
      ),
    days: positiveInt
      .max(36_500)
      .default(365)
      .describe("records older than this many UTC days (today included) are deleted"),
    responses_days: positiveInt
      .max(36_500)
      .default(30)
      .describe("stored Responses API responses are kept this many days (OpenAI keeps its own 30)"),
  })
  .strict()
  .prefault({})
  .describe("Call record retention (spec 8): a periodic job prunes the store; see docs/console.md.");

/** image and file URLs a request hands an upstream to fetch: the rule is src/apis/media-urls.ts */
const mediaUrlsSchema = z
  .object({
    allow_http: z
      .boolean()
      .default(false)
      .describe("plain-http image and file URLs (an upstream fetching them is open to tampering on the way)"),
    allow_private_hosts: z
      .boolean()
      .default(false)
      .describe("URLs whose host is a literal loopback, link-local or private address, or localhost"),
  })
  .strict()
  .prefault({});

/** Requests and tokens per minute; an absent field is no limit. */
const rateLimits = z
  .object({
    rpm: positiveInt.optional().describe("requests per minute; absent: no limit"),
    tpm: positiveInt.optional().describe("tokens per minute; absent: no limit"),
  })
  .strict();

export const planSchema = z
  .object({
    id: id.describe("the plan's name, which accounts and `default_plan` refer to"),
    quota_tokens: z
      .number()
      .int()
      .nonnegative()
      .describe("the tokens each account of the plan may use (an account may have its own quota)"),
    price_multiplier: moneyNumber("a factor of the prices", MAX_PRICE_MULTIPLIER, "1000")
      .default(1)
      .describe("what the plan's accounts pay relative to list prices"),
    models: z
      .array(id)
      .default([])
      .describe("the public models the plan's accounts may call (what `GET /v1/models` lists for them)"),
    rate_limits: z
      .object({
        key: rateLimits.prefault({}).describe("each key of the plan's accounts (a key may override them)"),
        account: rateLimits.prefault({}).describe("all keys of an account together"),
      })
      .strict()
      .prefault({})
      .describe(
        "defaults for each key of the plan's accounts (a key may override them) and for the account as a whole",
      ),
    safety: z
      .object({
        enabled: z
          .boolean()
          .optional()
          .describe("content safety for the plan's accounts; absent: the global switch"),
        streaming: safetyStreaming
          .optional()
          .describe("how `stream: true` is answered for them; absent: `safety.streaming`"),
      })
      .strict()
      .prefault({})
      .describe("overrides of the global safety switch for the plan's accounts"),
  })
  .strict();

/** The configuration's sections; checked against each other in ./cross-check.ts (configSchema). */
export const configSections = z
  .object({
    server: z
      .object({
        host: z.string().min(1).default("127.0.0.1").describe("the address the gateway listens on"),
        port: z
          .number()
          .int()
          .min(0)
          .max(65535)
          .default(8080)
          .describe("the port it listens on (0: any free one)"),
        body_limit_bytes: positiveInt
          .default(1_048_576)
          .describe("largest request body accepted; larger ones get 413 before they are read"),
        agent_body_limit_bytes: positiveInt
          .default(32 * 1_048_576)
          .describe(
            "the same for the coding agents' APIs (`/v1/messages`, its count_tokens, `/v1/responses`), whose clients send the whole conversation every turn: Anthropic's own limit, 32 MiB",
          ),
        sse_keepalive_ms: z
          .number()
          .int()
          .nonnegative()
          .default(15_000)
          .describe(
            "a streamed answer that sends nothing for this long sends an SSE comment line (0: never)",
          ),
        stream_stall_ms: positiveInt
          .default(60_000)
          .describe("a streaming client that reads nothing for this long is cut off, as if it had left"),
        body_discard_bytes: positiveInt
          .default(64 * 1_048_576)
          .describe(
            "after answering a request before its body was read (413, 401), how much more of the body is read and dropped so the client, still sending, gets the answer, not a reset",
          ),
        body_discard_ms: positiveInt
          .default(10_000)
          .describe("and for how long; past either bound the connection is closed"),
        shutdown_grace_ms: positiveInt
          .default(30_000)
          .describe("how long SIGTERM waits for in-flight requests before closing them"),
        headers_timeout_ms: positiveInt
          .default(20_000)
          .describe("receiving a request's line and headers; past it the connection is closed (408)"),
        request_timeout_ms: positiveInt
          .default(60_000)
          .describe("receiving a whole request, headers and body, from its first byte; never the response"),
        keep_alive_timeout_ms: positiveInt
          .default(65_000)
          .describe("how long a keep-alive connection may sit idle between requests"),
        max_connections: positiveInt
          .default(10_000)
          .describe("open connections in all; more are closed as they arrive"),
        max_connections_per_address: positiveInt
          .default(1_000)
          .describe("open connections from one client address; more from it are closed as they arrive"),
        cors_origins: z
          .array(webOrigin)
          .default([])
          .describe("origins of browser applications allowed to call /v1 (CORS); none by default"),
        allowed_hosts: z
          .array(hostName)
          .default([])
          .describe(
            "host names the console answers to besides loopback names and IP addresses (DNS rebinding)",
          ),
      })
      .strict()
      .prefault({})
      .describe("The HTTP server: where it listens, request limits and timeouts, connections."),
    store: z
      .object({
        data_dir: z
          .string()
          .min(1)
          .default("./data")
          .describe("folder of the SQLite file when no database_url is given"),
        database_url: z
          .string()
          .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
          .optional()
          .describe("postgres://… to use PostgreSQL instead of SQLite"),
        redis_url: z
          .string()
          .regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL")
          .optional()
          .describe(
            "redis://… (or rediss://) shared by every instance: the ledger, rate limits and routing cooldowns (needs database_url)",
          ),
        redis_prefix: z
          .string()
          .min(1)
          .max(100)
          .default("gateway:")
          .describe("the prefix of every key the gateway keeps in Redis, so several gateways can share one"),
        records_journal: z
          .boolean()
          .default(true)
          .describe(
            "each call's record is journaled before the answer completes, and committed with the others of `records_commit_ms` in one commit: on SQLite in a file beside the store (a start replays what a crash left), on PostgreSQL with Redis in Redis (the instance that sweeps a crashed one's holds commits its records; decision 0040). PostgreSQL without Redis has no journal. false: each answer waits for its record's commit.",
          ),
        records_commit_ms: z
          .number()
          .int()
          .min(1)
          .max(1_000)
          .optional()
          .describe(
            "with the journal: how long records gather before one commit (the console sees them this much later; on PostgreSQL with Redis a hold also closes this much after its call). Unset: 20 on SQLite, 100 on PostgreSQL with Redis (decision 0043)",
          ),
      })
      .strict()
      .prefault({})
      .describe(
        "Where accounts, keys, the ledger and call records are kept: SQLite, or PostgreSQL and Redis.",
      ),
    ledger: z
      .object({
        wait_ms: z
          .number()
          .int()
          .nonnegative()
          .max(600_000)
          .default(5_000)
          .describe(
            "how long a request that fits only once calls in flight settle waits for them (first come, first served) before it is refused; 0: refused at once",
          ),
        lease_ms: z
          .number()
          .int()
          .min(300)
          .max(300_000)
          .default(15_000)
          .describe(
            "shared ledger (PostgreSQL): how long an instance's holds outlive its last renewal; a crashed instance's holds are released by the others within this and a third of it",
          ),
      })
      .strict()
      .prefault({})
      .describe("The token and money ledger: what calls in flight hold."),
    log_level: z
      .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
      .default("info")
      .describe("the least severe log lines written (JSON lines on stdout)"),
    default_plan: id.default("default").describe("plan given to accounts created without one"),
    catalog: z
      .object({
        source: z
          .enum(["file", "store"])
          .default("file")
          .describe(
            "`file`: this file's providers, models and plans are the catalog, applied at start and on reload; the console and the admin API show them read-only. `store`: the file seeds the store's catalog once (on a store without one), and from then on the admin API and the console edit it, every instance following within two seconds",
          ),
      })
      .strict()
      .prefault({})
      .describe(
        "Where providers, models and plans are managed (docs/control-plane.md). Upstream keys held by the store are encrypted under `GATEWAY_SECRET_KEY`.",
      ),
    providers: z
      .array(providerSchema)
      .min(1)
      .describe("The upstreams the gateway forwards to, one entry each, its `type` choosing its fields."),
    models: z
      .array(modelSchema)
      .min(1)
      .describe("The public models clients call, each answered by its deployments."),
    plans: z
      .array(planSchema)
      .min(1)
      .describe("What accounts may use: token quota, prices, models, rate limits, content safety."),
    routing: routingSchema,
    safety: safetySchema,
    retention: retentionSchema,
    console: z
      .object({
        first_admin_email: z
          .string()
          .max(254)
          .regex(
            /^[^\s@\p{Cc}\p{Cf}\p{Co}\p{Cs}]+@[^\s@\p{Cc}\p{Cf}\p{Co}\p{Cs}]+$/u,
            "must be an e-mail address",
          )
          .default("admin@localhost")
          .describe(
            "the e-mail of the admin user the first start on an empty store creates (env GATEWAY_FIRST_ADMIN_EMAIL overrides it); later starts ignore it",
          ),
      })
      .strict()
      .prefault({})
      .describe("The web console (docs/console.md)."),
    responses: z
      .object({
        visibility: z
          .enum(["key", "account"])
          .default("key")
          .describe(
            "who may read, continue and delete a stored response: `key`, the key that made it (the default: a key is handed to one application or person); `account`, every key of its account",
          ),
        max_stored_bytes: positiveInt
          .default(16 * 1024 * 1024)
          .describe("the most one stored response's input and output may hold"),
        max_account_bytes: positiveInt
          .default(1024 * 1024 * 1024)
          .describe("the most an account's stored responses may hold together"),
        max_continued_bytes: positiveInt
          .default(32 * 1024 * 1024)
          .describe("the most a conversation continued by previous_response_id may expand to"),
      })
      .strict()
      .prefault({})
      .describe("The Responses API's stored responses (src/apis/responses/stored.ts)."),
    metrics: z
      .object({
        token_env: envName
          .optional()
          .describe("the environment variable holding the bearer token GET /metrics then requires"),
        account_label: z
          .boolean()
          .default(false)
          .describe(
            "gateway_account_cost_usd_total{account}: a series per account, as many as the store holds, so off unless asked for (docs/observability.md)",
          ),
      })
      .strict()
      .prefault({})
      .describe("The Prometheus metrics at GET /metrics."),
    tracing: z
      .object({
        enabled: z.boolean().default(false).describe("export OpenTelemetry traces"),
        endpoint: z
          .url({ protocol: /^https?$/ })
          .optional()
          .describe(
            "the OTLP/HTTP traces URL, e.g. http://collector:4318/v1/traces (env OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT plus /v1/traces); http://localhost:4318/v1/traces when none is given",
          ),
        sample_ratio: z
          .number()
          .min(0)
          .max(1)
          .default(1)
          .describe("the share of calls traced when the caller's trace does not decide, 0 to 1"),
        account_id: z.boolean().default(false).describe("put the account's id on call spans"),
      })
      .strict()
      .prefault({})
      .describe("OpenTelemetry traces over OTLP/HTTP (docs/observability.md)."),
    counting: z
      .object({
        queue_per_account: positiveInt
          .max(100_000)
          .default(8)
          .describe("counts one account may have queued or running"),
        queue_total: positiveInt.max(1_000_000).default(64).describe("counts queued or running in all"),
      })
      .strict()
      .prefault({})
      .describe(
        "The local token counts (count_tokens, usage estimates) share one thread, whose queue takes each account's counts in turn (src/tokens/estimator.ts). Past either bound count_tokens is refused (429 `count_queue_full`, 503 `count_queue_busy`) and an estimate is the byte bound of what it counts.",
      ),
    media_urls: mediaUrlsSchema.describe(
      "Image and file URLs a request hands an upstream to fetch (src/apis/media-urls.ts).",
    ),
  })
  .strict();

export type ConfigInput = z.input<typeof configSections>;
export type Config = z.output<typeof configSections>;
export type { ProviderConfig } from "../providers/catalog.ts";
export type ModelConfig = z.output<typeof modelSchema>;
export type PlanConfig = z.output<typeof planSchema>;
export type SafetyConfig = z.output<typeof safetySchema>;
export type RetentionConfig = z.output<typeof retentionSchema>;
export type ReviewerConfig = z.output<typeof reviewerSchema>;
export type RoutingConfig = z.output<typeof routingSchema>;
export type DeploymentConfig = z.output<typeof deploymentSchema>;
export type MediaUrlPolicy = z.output<typeof mediaUrlsSchema>;
