// The configuration file's schema: one place for every field, its type and its default.
// The README's configuration reference documents these fields; keep them in step.
import { z } from "zod";

const id = z
  .string()
  .min(1)
  .max(128)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:/-]*$/,
    "must be letters, digits and . _ : / - (starting with a letter or digit)",
  );

const positiveInt = z.number().int().positive();

/** Upstream timeouts; every one bounds a different way an upstream can stall. */
const timeouts = z
  .object({
    connect_ms: positiveInt.default(5_000),
    /** from sending the request to the response headers */
    first_byte_ms: positiveInt.default(60_000),
    /** longest silence between two body chunks */
    idle_ms: positiveInt.default(30_000),
    /** the whole upstream call */
    total_ms: positiveInt.default(600_000),
  })
  .strict()
  .prefault({});

const openaiCompatibleProvider = z
  .object({
    id,
    type: z.literal("openai-compatible"),
    base_url: z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/+$/, "")),
    /** name of the environment variable that holds the upstream key (the key itself never goes in the file) */
    api_key_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
      .optional(),
    /** extra headers sent upstream, e.g. an organisation id */
    headers: z.record(z.string(), z.string()).default({}),
    timeouts,
    max_connections: positiveInt.max(4096).default(256),
  })
  .strict();

const demoProvider = z
  .object({
    id,
    type: z.literal("demo"),
  })
  .strict();

export const providerSchema = z.discriminatedUnion("type", [openaiCompatibleProvider, demoProvider]);

export const modelSchema = z
  .object({
    /** the public name clients send and see */
    id,
    provider: id,
    /** the name sent upstream; defaults to the public name */
    upstream_model: z.string().min(1).optional(),
    owned_by: z.string().min(1).optional(),
    /** output bound reserved when a request gives no max_tokens */
    max_output_tokens: positiveInt.default(4096),
  })
  .strict();

/** Requests and tokens per minute; an absent field is no limit. */
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
    models: z.array(id).default([]),
    /** defaults for each key of the plan's accounts (a key may override them) and for the account as a whole */
    rate_limits: z
      .object({ key: rateLimits.prefault({}), account: rateLimits.prefault({}) })
      .strict()
      .prefault({}),
  })
  .strict();

export const configSchema = z
  .object({
    server: z
      .object({
        host: z.string().min(1).default("127.0.0.1"),
        port: z.number().int().min(0).max(65535).default(8080),
        /** largest request body accepted; larger ones get 413 before they are read */
        body_limit_bytes: positiveInt.default(1_048_576),
        /** how long SIGTERM waits for in-flight requests before closing them */
        shutdown_grace_ms: positiveInt.default(30_000),
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
      })
      .strict()
      .prefault({}),
    log_level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    /** plan given to accounts created without one */
    default_plan: id.default("default"),
    providers: z.array(providerSchema).min(1),
    models: z.array(modelSchema).min(1),
    plans: z.array(planSchema).min(1),
  })
  .strict()
  .superRefine((cfg, ctx) => {
    const dup = (items: { id: string }[], field: string) => {
      const seen = new Set<string>();
      items.forEach((item, i) => {
        if (seen.has(item.id))
          ctx.addIssue({ code: "custom", path: [field, i, "id"], message: `duplicate id "${item.id}"` });
        seen.add(item.id);
      });
    };
    dup(cfg.providers, "providers");
    dup(cfg.models, "models");
    dup(cfg.plans, "plans");
    const providers = new Set(cfg.providers.map((p) => p.id));
    cfg.models.forEach((m, i) => {
      if (!providers.has(m.provider))
        ctx.addIssue({
          code: "custom",
          path: ["models", i, "provider"],
          message: `unknown provider "${m.provider}" (providers: ${[...providers].join(", ")})`,
        });
    });
    const models = new Set(cfg.models.map((m) => m.id));
    cfg.plans.forEach((p, i) => {
      p.models.forEach((m, j) => {
        if (!models.has(m))
          ctx.addIssue({ code: "custom", path: ["plans", i, "models", j], message: `unknown model "${m}"` });
      });
    });
    if (!cfg.plans.some((p) => p.id === cfg.default_plan))
      ctx.addIssue({
        code: "custom",
        path: ["default_plan"],
        message: `no plan with id "${cfg.default_plan}"`,
      });
  });

export type ConfigInput = z.input<typeof configSchema>;
export type Config = z.output<typeof configSchema>;
export type ProviderConfig = z.output<typeof providerSchema>;
export type ModelConfig = z.output<typeof modelSchema>;
export type PlanConfig = z.output<typeof planSchema>;
