// A body over `server.body_limit_bytes` reaches every client as the 413 envelope. The gateway
// answers before reading the body; had it closed the connection at once, a client still
// sending would meet a reset, and fetch (the `openai` SDK's transport) would report EPIPE or
// ECONNRESET instead of the 413, which the SDK retries, sending the whole body again. The
// clients run in a worker (their own event loop, see client-worker.ts) and each is tried
// repeatedly, since the failure is a race.
import assert from "node:assert/strict";
import { Agent, request as httpRequest } from "node:http";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { type ClientRun, callFromWorker } from "./support/client-worker.ts";
import { startTestGateway, type TestGateway, testConfig } from "./support/gateway.ts";

const CALLS = 10;
/** a message of 30 MB: far over the test gateway's 64 KiB limit, so the client is still sending */
const BIG = 30 * 1024 * 1024;
/** bound on every exchange: an answer or a close that takes longer counts as a hang */
const CLIENT_TIMEOUT_MS = 20_000;
const EXPECTED = Array.from({ length: CALLS }, () => "413 request_too_large");

/** The test gateway's server settings; the discard bounds left to what is given. */
function serverConfig(discard: { body_discard_bytes?: number; body_discard_ms?: number }) {
  const { body_discard_bytes: _bytes, body_discard_ms: _ms, ...server } = testConfig(undefined).server!;
  return { server: { ...server, ...discard } };
}

describe("a body over the limit is answered 413 to every client (default discard bounds)", () => {
  let gw: TestGateway;
  let apiKey: string;
  /** chat completion requests the gateway's HTTP server received */
  let chatRequests = 0;

  before(async () => {
    gw = await startTestGateway({ config: serverConfig({}) });
    apiKey = (await gw.key(await gw.account("body-limit"))).secret;
    gw.gateway.app.server.on("request", (req: { url?: string }) => {
      if (req.url === "/v1/chat/completions") chatRequests++;
    });
  });
  after(async () => {
    await gw?.close();
  });

  const run = (client: ClientRun["client"], key = apiKey): Promise<string[]> =>
    callFromWorker({
      client,
      baseURL: gw.baseURL,
      apiKey: key,
      model: "demo",
      contentLength: BIG,
      calls: CALLS,
      timeoutMs: CLIENT_TIMEOUT_MS,
    });

  test(`fetch gets the envelope in ${CALLS} of ${CALLS} calls`, async () => {
    assert.deepEqual(await run("fetch"), EXPECTED);
  });

  test(`the openai SDK without retries gets its 413 APIError in ${CALLS} of ${CALLS} calls`, async () => {
    assert.deepEqual(await run("sdk"), EXPECTED);
  });

  test("the openai SDK with its default retries sends the body once per call", async () => {
    const before = chatRequests;
    assert.deepEqual(await run("sdk-default-retries"), EXPECTED);
    assert.equal(chatRequests - before, CALLS, "requests the gateway received");
  });

  test("any answer before the body gets through the same way: an unknown key's 401", async () => {
    const unknownKey = `sk-${"A".repeat(43)}`;
    assert.deepEqual(
      await run("fetch", unknownKey),
      Array.from({ length: CALLS }, () => "401 invalid_api_key"),
    );
  });
});

describe("the rest of a refused body is discarded within bounds", () => {
  /** small enough to pass quickly; the time bound is far beyond the hang guard */
  const DISCARD_BYTES = 1024 * 1024;
  let gw: TestGateway;
  let apiKey: string;
  let port: number;

  before(async () => {
    gw = await startTestGateway({
      config: serverConfig({ body_discard_bytes: DISCARD_BYTES, body_discard_ms: 10 * CLIENT_TIMEOUT_MS }),
    });
    apiKey = (await gw.key(await gw.account("body-discard"))).secret;
    port = Number(new URL(gw.origin).port);
  });
  after(async () => {
    await gw?.close();
  });

  test("a body within the discard bound is read to its end: the connection serves the next request", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (method: string, path: string, body?: Buffer) =>
      new Promise<{ status: number; reused: boolean; text: string }>((resolve, reject) => {
        const req = httpRequest(
          {
            agent,
            host: "127.0.0.1",
            port,
            method,
            path,
            headers: {
              authorization: `Bearer ${apiKey}`,
              ...(body ? { "content-type": "application/json", "content-length": body.length } : {}),
            },
            timeout: CLIENT_TIMEOUT_MS,
          },
          (res) => {
            let text = "";
            res.setEncoding("utf8").on("data", (d: string) => {
              text += d;
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket, text }));
          },
        );
        req.on("timeout", () => req.destroy(new Error("no answer in time")));
        req.on("error", reject);
        req.end(body);
      });
    try {
      const refused = await send("POST", "/v1/chat/completions", Buffer.alloc(DISCARD_BYTES / 2, " "));
      assert.equal(refused.status, 413, refused.text);
      assert.equal(JSON.parse(refused.text).error.code, "request_too_large");
      const next = await send("GET", "/v1/models");
      assert.equal(next.status, 200, next.text);
      assert.equal(next.reused, true, "the second request went over the same connection");
    } finally {
      agent.destroy();
    }
  });

  test("a body beyond the discard bound is cut: the gateway closes the connection", async () => {
    const total = 16 * DISCARD_BYTES;
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => undefined); // the reset when the gateway gives up is expected
    const closed = new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => {
        socket.destroy();
        reject(new Error("the gateway kept reading past its discard bound"));
      }, CLIENT_TIMEOUT_MS);
      socket.once("close", () => {
        clearTimeout(t);
        resolve();
      });
    });
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${apiKey}\r\n` +
        `content-type: application/json\r\ncontent-length: ${total}\r\n\r\n`,
    );
    // keep sending until the whole body is out or the gateway closed the connection
    const chunk = Buffer.alloc(64 * 1024, " ");
    for (let sent = 0; sent < total && socket.writable; sent += chunk.length)
      if (!socket.write(chunk)) await new Promise((r) => socket.once("drain", r).once("close", r));
    await closed;
  });
});
