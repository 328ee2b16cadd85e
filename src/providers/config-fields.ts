// Configuration fields every provider type shares, so each type's schema (beside its
// adapter) states only what is its own.
import { z } from "zod";
import { configId } from "../domain/config-id.ts";
import { passthroughFields } from "./passthrough.ts";

const positiveInt = z.number().int().positive();

/** Upstream timeouts; every one bounds a different way an upstream can stall. */
export const timeouts = z
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

export const httpProviderFields = {
  id: configId,
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
  /** what the upstream cannot carry: dropped with a notice, or refused (strict); names never passed natively */
  ...passthroughFields,
};

export type Timeouts = z.output<typeof timeouts>;

/**
 * Which field an OpenAI-shaped upstream gets the output bound in. `auto`: the field the
 * client used, and `max_completion_tokens` when it gave none and the upstream is OpenAI's own
 * API (its reasoning models refuse `max_tokens`); other servers get `max_tokens`, which
 * every OpenAI-compatible server accepts.
 */
export const outputBoundField = z.enum(["max_tokens", "max_completion_tokens"]);
