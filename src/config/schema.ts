// The configuration file's schema: one place for every field, its type and its default.
// The README's configuration reference documents these fields; keep them in step.
import { z } from "zod";
import { configId as id } from "../domain/config-id.ts";
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
    per_request: nonNegativeInt.default(DEFAULT_PROMPT_OVERHEADS.per_request),
    per_message: nonNegativeInt.default(DEFAULT_PROMPT_OVERHEADS.per_message),
    tools: nonNegativeInt.default(DEFAULT_PROMPT_OVERHEADS.tools),
    image: nonNegativeInt.default(DEFAULT_PROMPT_OVERHEADS.image),
    audio: nonNegativeInt.default(DEFAULT_PROMPT_OVERHEADS.audio),
    file: nonNegativeInt.default(DEFAULT_PROMPT_OVERHEADS.file),
  })
  .strict()
  .prefault({});

/** One place a public model can be answered from: a provider and its name for the model. */
export const deploymentSchema = z
  .object({
    provider: id,
    /** the name sent upstream; defaults to the public name */
    upstream_model: z.string().min(1).optional(),
    /** share of the calls under `routing: weighted` */
    weight: z.number().positive().default(1),
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
    input: usdPerMillion.optional(),
    output: usdPerMillion.optional(),
    /** cache reads (OpenAI cached_tokens, Anthropic cache_read_input_tokens, Gemini cachedContentTokenCount) */
    cached_input: usdPerMillion.optional(),
    /** cache writes (Anthropic cache_creation_input_tokens); reasoning tokens are output tokens */
    cache_write: usdPerMillion.optional(),
  })
  .strict();
export type PricingConfig = z.output<typeof pricingSchema>;

export const modelSchema = z
  .object({
    /** the public name clients send and see */
    id,
    /** the one-deployment shape: `provider` and `upstream_model`, or `deployments` */
    provider: id.optional(),
    /** the name sent upstream; defaults to the public name */
    upstream_model: z.string().min(1).optional(),
    /** several places one of which answers each call (instead of provider/upstream_model) */
    deployments: z.array(deploymentSchema).min(1).max(64).optional(),
    routing: z.enum(ROUTING_STRATEGIES).default("weighted"),
    /** further attempts after the first; default: each other deployment once */
    retries: z.number().int().nonnegative().max(16).optional(),
    /** public models tried in order when every deployment failed (their own fallbacks are not followed) */
    fallbacks: z.array(id).max(8).default([]),
    owned_by: z.string().min(1).optional(),
    /** output bound reserved when a request gives no max_tokens */
    max_output_tokens: positiveInt.default(4096),
    /** the field the output bound is sent upstream in, where the provider's setting is not right for this model */
    output_bound_field: outputBoundField.optional(),
    /** template overheads of the reservation's prompt bound */
    prompt_overhead: promptOverheadSchema,
    /** USD per million tokens; absent: the price table's, if it knows the upstream model (src/prices/) */
    pricing: pricingSchema.optional(),
    /** what the model takes (reasoning, images, tools); absent fields are inferred (src/providers/capabilities.ts) */
    capabilities: capabilitiesSchema.optional(),
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
    retry_on: z.array(retryOn).default([429, 500, 502, 503, 504, 529, "timeout", "network"]),
    /** `failures` within `window_s`: the deployment is skipped for `seconds`, then probed by one call */
    cooldown: z
      .object({
        failures: positiveInt.default(3),
        window_s: z.number().positive().max(86_400).default(60),
        seconds: z.number().positive().max(86_400).default(30),
      })
      .strict()
      .prefault({}),
    /** wait before attempt n (n ≥ 2): random in [0, min(max_ms, initial_ms · 2^(n-2))] */
    backoff: z
      .object({
        initial_ms: z.number().int().nonnegative().max(60_000).default(50),
        max_ms: z.number().int().nonnegative().max(60_000).default(2_000),
      })
      .strict()
      .prefault({}),
    /** send the deployment that answered in `x-gateway-deployment` */
    expose_deployment: z.boolean().default(false),
  })
  .strict()
  .prefault({});

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
    type: z.literal("rules"),
    /** words or phrases; matched whole, after normalisation, also when spelled out with separators */
    terms: z.array(z.string().min(1)).default([]),
    /** regular expressions, matched case-insensitively against the normalised text */
    patterns: z.array(pattern).default([]),
    /** the category a match is reported under */
    category: z.string().min(1).default("rules"),
  })
  .strict();

const moderationReviewer = z
  .object({
    type: z.literal("moderation-api"),
    /** base URL of a server speaking OpenAI's POST /moderations; ".../v1" */
    base_url: z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/+$/, "")),
    api_key_env: envName.optional(),
    model: z.string().min(1).default("omni-moderation-latest"),
    /** category -> score at or above which it flags; categories without one flag when the server says so */
    thresholds: z.record(z.string(), z.number().min(0).max(1)).default({}),
  })
  .strict();

const judgeReviewer = z
  .object({
    type: z.literal("model-judge"),
    /** a model id from `models`, answering in the Llama Guard style: "safe", or "unsafe" and category codes */
    model: id,
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
    /** the global default; plans and accounts may override it */
    enabled: z.boolean().default(false),
    /** also review the caller's messages before anything is sent upstream */
    review_input: z.boolean().default(false),
    /** one review (the whole reviewer chain over one text); past it the review has failed */
    timeout_ms: positiveInt.default(5_000),
    /**
     * How `stream: true` is answered. Unset: chat completions `json` (spec 4.2), Messages and
     * Responses `reviewed` (coding agents cannot read a JSON answer to a stream and send the
     * turn again); set, it applies to every API. Plans and accounts may override it.
     */
    streaming: safetyStreaming.optional(),
    /**
     * A key whose answers were withheld `max` times within `window_ms` is refused (429
     * `withheld_repeats`, `x-should-retry: false`) until the oldest of them leaves the window,
     * so an agent retrying a withheld turn in a loop stops; `max: 0` turns it off.
     */
    withheld_limit: z
      .object({
        max: z.number().int().nonnegative().max(1_000_000).default(10),
        window_ms: positiveInt.max(86_400_000).default(60_000),
      })
      .strict()
      .prefault({}),
    /** reviewed streaming: release text at a sentence end, or at the latest after this many tokens */
    segment_tokens: positiveInt.max(4096).default(64),
    /** run in order; the first flag blocks */
    reviewers: z.array(reviewerSchema).default([]),
  })
  .strict()
  .prefault({});

/** Call record retention (spec 8): a periodic job prunes the store; see docs/console.md. */
const retentionSchema = z
  .object({
    /** run the job on this instance */
    enabled: z.boolean().default(true),
    /** minutes between runs (the first runs a minute after start) */
    interval_minutes: positiveInt.max(10_080).default(60),
    /** per account, the newest consumption records kept (today's count towards them and are always kept) */
    records_kept: positiveInt.max(1_000_000).default(1_000),
    /** records older than this many UTC days (today included) are deleted */
    days: positiveInt.max(36_500).default(365),
    /** stored Responses API responses are kept this many days (OpenAI keeps its own 30) */
    responses_days: positiveInt.max(36_500).default(30),
  })
  .strict()
  .prefault({});

/** Requests and tokens per minute; an absent field is no limit. */
/** image and file URLs a request hands an upstream to fetch: the rule is src/apis/media-urls.ts */
const mediaUrlsSchema = z
  .object({
    /** plain-http image and file URLs (an upstream fetching them is open to tampering on the way) */
    allow_http: z.boolean().default(false),
    /** URLs whose host is a literal loopback, link-local or private address, or localhost */
    allow_private_hosts: z.boolean().default(false),
  })
  .strict()
  .prefault({});

const rateLimits = z
  .object({
    rpm: positiveInt.optional(),
    tpm: positiveInt.optional(),
  })
  .strict();

export const planSchema = z
  .object({
    id,
    quota_tokens: z.number().int().nonnegative(),
    /** what the plan's accounts pay relative to list prices */
    price_multiplier: moneyNumber("a factor of the prices", MAX_PRICE_MULTIPLIER, "1000").default(1),
    models: z.array(id).default([]),
    /** defaults for each key of the plan's accounts (a key may override them) and for the account as a whole */
    rate_limits: z
      .object({ key: rateLimits.prefault({}), account: rateLimits.prefault({}) })
      .strict()
      .prefault({}),
    /** overrides of the global safety switch for the plan's accounts */
    safety: z
      .object({ enabled: z.boolean().optional(), streaming: safetyStreaming.optional() })
      .strict()
      .prefault({}),
  })
  .strict();

/** The configuration's sections; checked against each other in ./cross-check.ts (configSchema). */
export const configSections = z
  .object({
    server: z
      .object({
        host: z.string().min(1).default("127.0.0.1"),
        port: z.number().int().min(0).max(65535).default(8080),
        /** largest request body accepted; larger ones get 413 before they are read */
        body_limit_bytes: positiveInt.default(1_048_576),
        /**
         * the same for the coding agents' APIs (`/v1/messages`, its count_tokens, `/v1/responses`),
         * whose clients send the whole conversation every turn: Anthropic's own limit, 32 MiB
         */
        agent_body_limit_bytes: positiveInt.default(32 * 1_048_576),
        /** a streamed answer that sends nothing for this long sends an SSE comment line (0: never) */
        sse_keepalive_ms: z.number().int().nonnegative().default(15_000),
        /** a streaming client that reads nothing for this long is cut off, as if it had left */
        stream_stall_ms: positiveInt.default(60_000),
        /**
         * after answering a request before its body was read (413, 401), how much more of the
         * body is read and dropped so the client, still sending, gets the answer, not a reset
         */
        body_discard_bytes: positiveInt.default(64 * 1_048_576),
        /** and for how long; past either bound the connection is closed */
        body_discard_ms: positiveInt.default(10_000),
        /** how long SIGTERM waits for in-flight requests before closing them */
        shutdown_grace_ms: positiveInt.default(30_000),
        /** receiving a request's line and headers; past it the connection is closed (408) */
        headers_timeout_ms: positiveInt.default(20_000),
        /** receiving a whole request, headers and body, from its first byte; never the response */
        request_timeout_ms: positiveInt.default(60_000),
        /** how long a keep-alive connection may sit idle between requests */
        keep_alive_timeout_ms: positiveInt.default(65_000),
        /** open connections in all; more are closed as they arrive */
        max_connections: positiveInt.default(10_000),
        /** open connections from one client address; more from it are closed as they arrive */
        max_connections_per_address: positiveInt.default(1_000),
        /** origins of browser applications allowed to call /v1 (CORS); none by default */
        cors_origins: z.array(webOrigin).default([]),
        /** host names the console answers to besides loopback names and IP addresses (DNS rebinding) */
        allowed_hosts: z.array(hostName).default([]),
      })
      .strict()
      .prefault({}),
    store: z
      .object({
        /** folder of the SQLite file when no database_url is given */
        data_dir: z.string().min(1).default("./data"),
        /** postgres://… to use PostgreSQL instead of SQLite */
        database_url: z
          .string()
          .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
          .optional(),
        /** redis://… (or rediss://) shared by every instance: the ledger, rate limits and routing cooldowns (env REDIS_URL) */
        redis_url: z
          .string()
          .regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL")
          .optional(),
        /** the prefix of every key the gateway keeps in Redis, so several gateways can share one */
        redis_prefix: z.string().min(1).max(100).default("gateway:"),
        /**
         * SQLite: each call's record is appended to a journal beside the file before the answer
         * completes, and committed with the others of `records_commit_ms` in one transaction
         * (a start replays what a crash left). false: each answer waits for its record's commit.
         */
        records_journal: z.boolean().default(true),
        /** with the journal: how long records gather before one commit (the console sees them this much later) */
        records_commit_ms: z.number().int().min(1).max(1_000).default(20),
      })
      .strict()
      .prefault({}),
    ledger: z
      .object({
        /**
         * how long a request that fits only once calls in flight settle waits for them (first
         * come, first served) before it is refused; 0: refused at once
         */
        wait_ms: z.number().int().nonnegative().max(600_000).default(5_000),
        /**
         * shared ledger (PostgreSQL): how long an instance's holds outlive its last renewal;
         * a crashed instance's holds are released by the others within this and a third of it
         */
        lease_ms: z.number().int().min(300).max(300_000).default(15_000),
      })
      .strict()
      .prefault({}),
    log_level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    /** plan given to accounts created without one */
    default_plan: id.default("default"),
    providers: z.array(providerSchema).min(1),
    models: z.array(modelSchema).min(1),
    plans: z.array(planSchema).min(1),
    routing: routingSchema,
    safety: safetySchema,
    retention: retentionSchema,
    /** the web console (docs/console.md) */
    console: z
      .object({
        /**
         * the e-mail of the admin user the first start on an empty store creates (env
         * GATEWAY_FIRST_ADMIN_EMAIL overrides it); later starts ignore it
         */
        first_admin_email: z
          .string()
          .max(254)
          .regex(
            /^[^\s@\p{Cc}\p{Cf}\p{Co}\p{Cs}]+@[^\s@\p{Cc}\p{Cf}\p{Co}\p{Cs}]+$/u,
            "must be an e-mail address",
          )
          .default("admin@localhost"),
      })
      .strict()
      .prefault({}),
    /** the Responses API's stored responses (src/apis/responses/stored.ts) */
    responses: z
      .object({
        /**
         * who may read, continue and delete a stored response: `key`, the key that made it
         * (the default: a key is handed to one application or person); `account`, every key of
         * its account
         */
        visibility: z.enum(["key", "account"]).default("key"),
        /** the most one stored response's input and output may hold */
        max_stored_bytes: positiveInt.default(16 * 1024 * 1024),
        /** the most an account's stored responses may hold together */
        max_account_bytes: positiveInt.default(1024 * 1024 * 1024),
        /** the most a conversation continued by previous_response_id may expand to */
        max_continued_bytes: positiveInt.default(32 * 1024 * 1024),
      })
      .strict()
      .prefault({}),
    metrics: z
      .object({
        /** the environment variable holding the bearer token GET /metrics then requires */
        token_env: envName.optional(),
        /**
         * gateway_account_cost_usd_total{account}: a series per account, as many as the store
         * holds, so off unless asked for (docs/observability.md)
         */
        account_label: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    /** OpenTelemetry traces over OTLP/HTTP (docs/observability.md) */
    tracing: z
      .object({
        enabled: z.boolean().default(false),
        /**
         * the OTLP/HTTP traces URL, e.g. http://collector:4318/v1/traces (env
         * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT plus /v1/traces);
         * http://localhost:4318/v1/traces when none is given
         */
        endpoint: z.url({ protocol: /^https?$/ }).optional(),
        /** the share of calls traced when the caller's trace does not decide, 0 to 1 */
        sample_ratio: z.number().min(0).max(1).default(1),
        /** put the account's id on call spans */
        account_id: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    /**
     * The local token counts (count_tokens, usage estimates) share one thread, whose queue
     * takes each account's counts in turn (src/tokens/estimator.ts). Past either bound
     * count_tokens is refused (429 `count_queue_full`, 503 `count_queue_busy`) and an estimate
     * is the byte bound of what it counts.
     */
    counting: z
      .object({
        /** counts one account may have queued or running */
        queue_per_account: positiveInt.max(100_000).default(8),
        /** counts queued or running in all */
        queue_total: positiveInt.max(1_000_000).default(64),
      })
      .strict()
      .prefault({}),
    /** image and file URLs a request hands an upstream to fetch (src/apis/media-urls.ts) */
    media_urls: mediaUrlsSchema,
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
