import { type CatalogEntry, catalog, type ErrorName } from "./catalog.ts";

/** The one error type the gateway throws on purpose; the error handler turns it into the envelope. */
export class GatewayError extends Error {
  override name = "GatewayError";
  readonly entry: CatalogEntry;
  readonly errorName: ErrorName;
  readonly param: string | null;
  /** response headers: the caller's (e.g. retry-after), and what the catalog says of retrying */
  readonly headers: Record<string, string> | undefined;
  /** the upstream's own code, kept for a client error the upstream reported (issue #17) */
  readonly #code: string | undefined;
  /**
   * The capability a refusal is about (`mid_conv_system`, `effort_unsupported`, …), for
   * clients whose fallbacks key on it: the Messages API words such a refusal as Claude Code's
   * gateway contract asks (src/apis/messages/errors.ts).
   */
  readonly capability: string | undefined;

  constructor(
    name: ErrorName,
    options: {
      message?: string;
      param?: string | null;
      headers?: Record<string, string>;
      /** replaces the catalog's code: an upstream's own code for the error it reported */
      code?: string | undefined;
      capability?: string | undefined;
      cause?: unknown;
    } = {},
  ) {
    const entry = catalog[name];
    super(
      options.message ?? entry.message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.entry = entry;
    this.errorName = name;
    this.param = options.param ?? null;
    this.#code = options.code;
    this.capability = options.capability;
    this.headers = retryHeaders(entry, options.headers);
  }

  get status(): number {
    return this.entry.status;
  }

  get code(): string {
    return this.#code ?? this.entry.code;
  }

  /** The spec's envelope (section 7) plus OpenAI's `param`, which the SDKs read. */
  toBody(): ErrorBody {
    return {
      error: { message: this.message, type: this.entry.type, param: this.param, code: this.code },
    };
  }
}

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

function retryHeaders(
  entry: CatalogEntry,
  headers: Record<string, string> | undefined,
): Record<string, string> | undefined {
  if (entry.retry === "never") return { ...headers, "x-should-retry": "false" };
  if (typeof entry.retry === "number" && !headers?.["retry-after"])
    return { ...headers, "retry-after": String(entry.retry) };
  return headers;
}
