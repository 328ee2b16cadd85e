// The benchmark's floor: the least a Node proxy can do for a chat completion. A bare node:http
// server forwards POST /v1/chat/completions to the upstream through one keep-alive undici Pool
// and pipes the bytes both ways without parsing them: no auth, no JSON, no accounting.
// Whatever the gateway costs above this is the price of its features.
// With --paced-upstream, POST /paced/v1/chat/completions goes to that second upstream (the mock
// that paces its streams), through a pool of its own, so one process answers every mode as the
// one gateway process does.
//   node bench/passthrough.ts --upstream http://127.0.0.1:9100/v1 [--paced-upstream URL] [--port 0] [--connections 256]
// prints one line `{"url":"http://127.0.0.1:PORT/v1"}` (and `paced_url`) and exits on SIGTERM/SIGINT.
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { Pool } from "undici";

const ROUTE = "/v1/chat/completions";
const PACED_ROUTE = "/paced/v1/chat/completions";

interface Options {
  upstream: URL;
  pacedUpstream: URL | undefined;
  host: string;
  port: number;
  connections: number;
}

function readOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      upstream: { type: "string" },
      "paced-upstream": { type: "string" },
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string", default: "0" },
      // Same default as the gateway's max_connections, so both proxies get the same pool.
      connections: { type: "string", default: "256" },
    },
  });
  if (!values.upstream) throw new Error("--upstream URL is required");
  return {
    upstream: new URL(values.upstream),
    pacedUpstream: values["paced-upstream"] ? new URL(values["paced-upstream"]) : undefined,
    host: values.host,
    port: Number(values.port),
    connections: Number(values.connections),
  };
}

/** Only the headers the upstream needs to read the body; hop-by-hop ones stay behind. */
function upstreamHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {
    "content-type": req.headers["content-type"] ?? "application/json",
  };
  const length = req.headers["content-length"];
  if (length) headers["content-length"] = length;
  return headers;
}

/** The content headers of the upstream's answer; without content-length Node answers chunked. */
function clientHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  if (headers["content-type"]) out["content-type"] = headers["content-type"];
  if (headers["content-length"]) out["content-length"] = headers["content-length"];
  if (headers["cache-control"]) out["cache-control"] = headers["cache-control"];
  return out;
}

function fail(res: ServerResponse, err: Error): void {
  if (res.headersSent) {
    res.destroy(err);
    return;
  }
  res.writeHead(502, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message: `upstream failed: ${err.message}`, type: "upstream_error" } }));
}

/** An upstream and the chat completions path under its URL. */
interface Upstream {
  pool: Pool;
  path: string;
}

function forward(
  burst: Upstream,
  paced: Upstream | undefined,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const upstream =
    req.method !== "POST"
      ? undefined
      : req.url === ROUTE
        ? burst
        : req.url === PACED_ROUTE
          ? paced
          : undefined;
  if (!upstream) {
    res.writeHead(404).end();
    return;
  }
  upstream.pool.stream(
    { path: upstream.path, method: "POST", headers: upstreamHeaders(req), body: req },
    // The upstream's body is written straight into the client's response.
    ({ statusCode, headers }) => res.writeHead(statusCode, clientHeaders(headers)),
    (err) => {
      if (err) fail(res, err);
    },
  );
}

function upstream(url: URL, connections: number): Upstream {
  const pool = new Pool(url.origin, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    headersTimeout: 60_000,
    bodyTimeout: 30_000,
  });
  return { pool, path: `${url.pathname.replace(/\/+$/, "")}/chat/completions` };
}

async function main(): Promise<void> {
  const options = readOptions(process.argv.slice(2));
  const burst = upstream(options.upstream, options.connections);
  const paced = options.pacedUpstream ? upstream(options.pacedUpstream, options.connections) : undefined;
  const server = createServer((req, res) => forward(burst, paced, req, res));
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  const origin = `http://${host}:${port}`;
  const info = { url: `${origin}/v1`, ...(paced ? { paced_url: `${origin}/paced/v1` } : {}) };
  process.stdout.write(`${JSON.stringify(info)}\n`);

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    server.close();
    server.closeAllConnections();
    void Promise.all([burst.pool.close(), paced?.pool.close()]).finally(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`passthrough: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
