import { type CatalogEntry, catalog, type ErrorName } from "./catalog.ts";

/** The one error type the gateway throws on purpose; the error handler turns it into the envelope. */
export class GatewayError extends Error {
  override name = "GatewayError";
  readonly entry: CatalogEntry;
  readonly errorName: ErrorName;
  readonly param: string | null;
  /** extra response headers, e.g. retry-after */
  readonly headers: Record<string, string> | undefined;

  constructor(
    name: ErrorName,
    options: {
      message?: string;
      param?: string | null;
      headers?: Record<string, string>;
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
    this.headers = options.headers;
  }

  get status(): number {
    return this.entry.status;
  }

  get code(): string {
    return this.entry.code;
  }

  /** The spec's envelope (section 7) plus OpenAI's `param`, which the SDKs read. */
  toBody(): ErrorBody {
    return {
      error: { message: this.message, type: this.entry.type, param: this.param, code: this.entry.code },
    };
  }
}

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}
