// Configuration fields every provider type shares, so each type's schema (beside its
// adapter) states only what is its own.
import { z } from "zod";
import { configId } from "../domain/config-id.ts";
import { passthroughFields } from "./passthrough.ts";

const positiveInt = z.number().int().positive();
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");

export const timeouts = z
  .object({
    connect_ms: positiveInt.default(5_000).describe("opening the connection"),
    first_byte_ms: positiveInt.default(60_000).describe("from sending the request to the response headers"),
    idle_ms: positiveInt.default(30_000).describe("longest silence between two body chunks"),
    total_ms: positiveInt.default(600_000).describe("the whole upstream call"),
  })
  .strict()
  .prefault({})
  .describe(
    "Upstream timeouts in milliseconds; every one bounds a different way an upstream can stall. connect, first byte and idle run on coarse timers (about half-second ticks): use values of a second or more.",
  );

/**
 * Takes a provider out of service without deleting it (the console's "disable"): its
 * deployments are left out of routing, and a model with no other deployment is not served.
 */
export const disabledField = z
  .boolean()
  .default(false)
  .describe(
    "out of service: its deployments are not routed to, and a model left with none is not served (not listed, `model_not_found`)",
  );

export const httpProviderFields = {
  id: configId.describe("the provider's name, which models' `provider` refers to"),
  base_url: z
    .url({ protocol: /^https?$/ })
    .transform((u) => u.replace(/\/+$/, ""))
    .describe("the upstream's base URL"),
  api_key_env: envName
    .optional()
    .describe(
      "name of the environment variable that holds the upstream key (the key itself never goes in the file)",
    ),
  api_keys_env: z
    .array(envName)
    .optional()
    .describe(
      "names of environment variables holding more upstream keys: with api_key_env and api_keys, a pool used in turn, each key cooling down on its own when the upstream rate-limits or refuses it (docs/providers.md)",
    ),
  api_keys: z
    .array(z.string().min(1))
    .optional()
    .describe(
      "the upstream keys themselves: only through the admin API or the console, stored encrypted; the file names variables instead (api_key_env, api_keys_env)",
    ),
  headers: z
    .record(z.string(), z.string())
    .default({})
    .describe("extra headers sent upstream, e.g. an organisation id"),
  timeouts,
  max_connections: positiveInt.max(4096).default(256).describe("keep-alive connections to this upstream"),
  disabled: disabledField,
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
