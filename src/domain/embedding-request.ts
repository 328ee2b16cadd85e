// The request of POST /v1/embeddings, as OpenAI defines it: what is validated, and the inputs
// one by one, which the reservation bounds, translating adapters send and the local count
// reads. Fields the gateway does not read are kept (`extra`): OpenAI-shaped upstreams get them
// as they came, the others drop them with a notice (docs/decisions/0021-forward-compatible-edges.md).
// `null` counts as "not given" for every optional field, as for chat completions.
import { z } from "zod";
import { GatewayError } from "../errors/index.ts";
import { deepest, paramName } from "./chat-request.ts";
import { ID_MAX_CHARS, ID_PATTERN, ID_RULE } from "./config-id.ts";

/** OpenAI's limit on the inputs of one request. */
export const MAX_EMBEDDING_INPUTS = 2048;
/**
 * The most dimensions asked for: above any model's (the largest embed in a few thousand), so
 * a number cannot make an adapter that shortens or builds vectors itself allocate without end.
 */
export const MAX_EMBEDDING_DIMENSIONS = 65_536;

/** One input: a text, or a text already tokenized (the upstream's token ids). */
export type EmbeddingInput = string | readonly number[];

export const ENCODING_FORMATS = ["float", "base64"] as const;
export type EncodingFormat = (typeof ENCODING_FORMATS)[number];

// Token ids as every tokenizer numbers them: small non-negative integers (int32 in vLLM's tensors).
const tokenId = z.number().int().nonnegative().max(2_147_483_647);
const text = z.string().min(1, "must not be empty: OpenAI refuses an empty input");
const tokens = z.array(tokenId).min(1, "must not be empty");
const many = <T extends z.ZodType>(item: T) => z.array(item).min(1).max(MAX_EMBEDDING_INPUTS);

const opt = <T extends z.ZodType>(schema: T) =>
  schema
    .nullish()
    .transform((v) => v ?? undefined)
    .optional();

const embeddingSchema = z.object({
  model: z
    .string()
    .min(1)
    .max(ID_MAX_CHARS, `must be at most ${ID_MAX_CHARS} characters`)
    .regex(ID_PATTERN, `must be a model id: ${ID_RULE}`),
  // OpenAI's four shapes: one text, texts, one token array, token arrays (never mixed)
  input: z.union(
    [text, many(text), many(tokenId), many(tokens)],
    "must be a string, an array of strings, an array of token ids or an array of token-id arrays",
  ),
  dimensions: opt(z.number().int().positive().max(MAX_EMBEDDING_DIMENSIONS)),
  encoding_format: opt(z.enum(ENCODING_FORMATS)),
  user: opt(z.string()),
});

const KNOWN_FIELDS: ReadonlySet<string> = new Set(Object.keys(embeddingSchema.shape));

export interface EmbeddingRequest {
  model: string;
  /** the input as the client sent it, for upstreams that speak OpenAI's API */
  input: string | string[] | number[] | number[][];
  /** the inputs one by one: each a text or one text's token ids */
  inputs: readonly EmbeddingInput[];
  /** whether any input is token ids (a translating upstream may take text only) */
  tokenIds: boolean;
  dimensions?: number | undefined;
  encoding_format?: EncodingFormat | undefined;
  user?: string | undefined;
  /** top-level fields the gateway does not read, as the client sent them */
  extra: Readonly<Record<string, unknown>>;
}

/** Validates a parsed JSON body; throws invalid_request naming the first bad parameter. */
export function parseEmbeddingRequest(body: unknown): EmbeddingRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new GatewayError("invalid_request", { message: "The request body must be a JSON object." });
  const fields = body as Record<string, unknown>;
  if (fields.input === undefined || fields.input === null)
    throw new GatewayError("invalid_request", {
      message: "Missing required parameter: 'input'.",
      param: "input",
    });
  // said here: the union's branches would each say it in their own words
  if (Array.isArray(fields.input) && (!fields.input.length || fields.input.length > MAX_EMBEDDING_INPUTS))
    throw new GatewayError("invalid_request", {
      message: fields.input.length
        ? `Invalid parameter 'input': must have at most ${MAX_EMBEDDING_INPUTS} inputs, got ${fields.input.length}.`
        : "Invalid parameter 'input': must not be empty.",
      param: "input",
    });
  const result = embeddingSchema.safeParse(body);
  if (!result.success) {
    const issue = deepest(result.error.issues[0]!);
    const param = paramName(issue.path);
    throw new GatewayError("invalid_request", {
      message: param
        ? `Invalid parameter '${param}': ${issue.message}.`
        : `Invalid request: ${issue.message}.`,
      param: param || null,
    });
  }
  const { input, ...rest } = result.data;
  let inputs: EmbeddingInput[];
  if (typeof input === "string") inputs = [input];
  else if (typeof input[0] === "number") inputs = [input as number[]];
  else inputs = input as string[] | number[][];
  let extra: Record<string, unknown> | undefined;
  for (const field in fields)
    if (!KNOWN_FIELDS.has(field) && fields[field] !== undefined && fields[field] !== null) {
      extra ??= {};
      extra[field] = fields[field];
    }
  return {
    ...rest,
    input,
    inputs,
    tokenIds: typeof inputs[0] !== "string",
    extra: extra ?? NO_EXTRA,
  };
}

const NO_EXTRA: Readonly<Record<string, unknown>> = Object.freeze({});
