// A local OTLP/HTTP traces receiver, as a collector is to the gateway: POST /v1/traces with a
// JSON body (OTLP/JSON, what @opentelemetry/exporter-trace-otlp-http sends; gzip too), answered
// with the empty success the protocol asks for. The spans it received, flattened with their
// attributes decoded, are kept in arrival order.
import { createServer, type IncomingMessage } from "node:http";
import { gunzipSync } from "node:zlib";
import { listenForTests } from "./listen.ts";

export type AttributeValue = string | number | boolean | AttributeValue[] | null;

/** One span as received, its attributes as plain values; kind and status as OTLP numbers them. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span */
  parentSpanId: string;
  name: string;
  /** 2 server, 3 client (OTLP's SpanKind) */
  kind: number;
  /** 0 unset, 1 ok, 2 error */
  status: number;
  attributes: Record<string, AttributeValue>;
  /** the attributes of the resource that sent it (service.name, …) */
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  /** the traces URL, http://127.0.0.1:PORT/v1/traces */
  url: string;
  /** http://127.0.0.1:PORT, what OTEL_EXPORTER_OTLP_ENDPOINT names */
  origin: string;
  spans: ReceivedSpan[];
  /** the request headers of each export */
  exports: IncomingMessage["headers"][];
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}

type OtlpKeyValue = { key: string; value: OtlpValue };

function plain(v: OtlpValue): AttributeValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(plain);
  return null;
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const exports: IncomingMessage["headers"][] = [];
  const server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    if (req.method !== "POST" || req.url !== "/v1/traces") {
      res.writeHead(404).end();
      return;
    }
    if (!String(req.headers["content-type"]).startsWith("application/json")) {
      res.writeHead(415).end();
      return;
    }
    let body = Buffer.concat(parts);
    if (req.headers["content-encoding"] === "gzip") body = gunzipSync(body);
    exports.push(req.headers);
    const request = JSON.parse(body.toString("utf8")) as {
      resourceSpans?: {
        resource?: { attributes?: OtlpKeyValue[] };
        scopeSpans?: {
          spans?: {
            traceId: string;
            spanId: string;
            parentSpanId?: string;
            name: string;
            kind: number;
            status?: { code?: number };
            attributes?: OtlpKeyValue[];
          }[];
        }[];
      }[];
    };
    for (const rs of request.resourceSpans ?? []) {
      const resource = attributesOf(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? "",
            name: s.name,
            kind: s.kind,
            status: s.status?.code ?? 0,
            attributes: attributesOf(s.attributes),
            resource,
          });
    }
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  const base = await listenForTests(server, 0, "127.0.0.1");
  const origin = base.replace(/\/v1$/, "");
  return {
    url: `${origin}/v1/traces`,
    origin,
    spans,
    exports,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
