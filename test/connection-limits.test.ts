// Slow and greedy clients on real sockets (node:net), against a gateway with short configured
// limits: headers and bodies that trickle in are timed out (408 with the envelope where an
// answer is possible), idle keep-alive connections are closed, connections over the total
// and per-address caps are closed as they arrive; a response, however long, is never cut.
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import type { ConfigInput } from "../src/config/schema.ts";
import { startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

/** Without a limit in force, the server would keep these connections open far longer. */
const TEST_TIMEOUT = { timeout: 20_000 };

interface Conn {
  socket: Socket;
  /** everything the server sent so far */
  received(): string;
  /** resolves when the server closes (or resets) the connection */
  closed: Promise<void>;
}

function open(port: number, localAddress = "127.0.0.1"): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1", localAddress });
    let data = "";
    socket.setEncoding("utf8").on("data", (d: string) => {
      data += d;
    });
    const closed = new Promise<void>((res) => socket.once("close", () => res()));
    socket.on("error", () => {}); // a reset is a close here
    socket.once("connect", () => resolve({ socket, received: () => data, closed }));
    socket.once("error", reject);
  });
}

/** Writes `chunks` one after another, `everyMs` apart, while the connection is open. */
function trickle(conn: Conn, chunks: string[], everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (conn.socket.destroyed || i >= chunks.length) return clearInterval(timer);
    conn.socket.write(chunks[i++]!);
  }, everyMs);
  conn.closed.then(() => clearInterval(timer));
}

async function get(origin: string, path: string): Promise<number> {
  const res = await fetch(`${origin}${path}`);
  await res.arrayBuffer();
  return res.status;
}

/** The server sees a client's close a moment after the client does: waits until it has. */
async function connectionsAtMost(gw: TestGateway, n: number): Promise<void> {
  const server = gw.gateway.app.server;
  const count = () => new Promise<number>((r) => server.getConnections((_err, open) => r(open)));
  while ((await count()) > n) await new Promise((r) => setTimeout(r, 10));
}

function limits(server: Partial<NonNullable<ConfigInput["server"]>>): { config: Partial<ConfigInput> } {
  return { config: { server: { host: "127.0.0.1", port: 0, ...server } } };
}

describe("slow requests are timed out", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let port: number;
  before(async () => {
    upstream = await startMockUpstream();
    gw = await startTestGateway({
      upstream,
      ...limits({ headers_timeout_ms: 500, request_timeout_ms: 1_000, keep_alive_timeout_ms: 500 }),
    });
    port = Number(new URL(gw.origin).port);
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  test("headers that trickle in: the connection is closed", TEST_TIMEOUT, async () => {
    const conn = await open(port);
    conn.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    trickle(
      conn,
      Array.from({ length: 200 }, (_, i) => `x-slow-${i}: a\r\n`),
      50,
    );
    await conn.closed;
    assert.match(conn.received(), /^(HTTP\/1\.1 408 |$)/, "at most a 408 before the close");
  });

  test("a connection that never sends anything is closed", TEST_TIMEOUT, async () => {
    const conn = await open(port);
    await conn.closed;
    assert.doesNotMatch(conn.received(), /HTTP\/1\.1 [^4]/);
  });

  test(
    "a body that trickles in, without any authentication: 408 with the envelope",
    TEST_TIMEOUT,
    async () => {
      const conn = await open(port);
      const body = JSON.stringify({ email: "someone@example.test", password: "x".repeat(500) });
      conn.socket.write(
        `POST /api/console/login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
          `Origin: ${gw.origin}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      trickle(conn, body.match(/.{1,4}/g)!, 50);
      await conn.closed;
      const text = conn.received();
      assert.match(text, /^HTTP\/1\.1 408 /, text);
      const envelope = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4));
      assert.equal(envelope.error.code, "request_timeout");
      assert.equal(envelope.error.type, "invalid_request_error");
    },
  );

  test("an idle keep-alive connection is closed after keep_alive_timeout_ms", TEST_TIMEOUT, async () => {
    const conn = await open(port);
    conn.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await conn.closed;
    assert.match(conn.received(), /^HTTP\/1\.1 200 /);
    assert.doesNotMatch(conn.received(), /connection: close/i, "the answer itself kept the connection");
  });

  test("a response that takes longer than the request timeout is not cut", TEST_TIMEOUT, async () => {
    const { secret } = await gw.key(await gw.account("slow-answers"));
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: TEST_MODEL,
        stream: true,
        // the upstream waits 2.5 s before answering: longer than request_timeout_ms
        messages: [{ role: "user", content: "take your time mock:latency=2500" }],
      }),
    });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /data: \[DONE\]\n\n$/);
  });
});

describe("connection caps", () => {
  let gw: TestGateway;
  let port: number;
  const held: Conn[] = [];
  before(async () => {
    gw = await startTestGateway(limits({ max_connections: 6, max_connections_per_address: 3 }));
    port = Number(new URL(gw.origin).port);
  });
  after(async () => {
    for (const c of held) c.socket.destroy();
    await gw?.close();
  });

  test(
    "over the per-address cap a connection is closed; other addresses still get through",
    TEST_TIMEOUT,
    async () => {
      for (let i = 0; i < 3; i++) held.push(await open(port));
      const over = await open(port);
      over.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      await over.closed;
      assert.equal(over.received(), "", "closed without an answer");
      // from another loopback address
      const other = await open(port, "127.0.0.2");
      other.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
      await other.closed;
      assert.match(other.received(), /^HTTP\/1\.1 200 /);
      // one of the first address's connections closes: it may open another
      const first = held.shift()!;
      first.socket.destroy();
      await connectionsAtMost(gw, 2);
      const again = await open(port);
      again.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
      await again.closed;
      assert.match(again.received(), /^HTTP\/1\.1 200 /);
    },
  );

  test("over the total cap a connection is closed, whatever its address", TEST_TIMEOUT, async () => {
    // 2 held from 127.0.0.1 after the test above; 4 more from two other addresses make 6
    for (const address of ["127.0.0.3", "127.0.0.3", "127.0.0.4", "127.0.0.4"])
      held.push(await open(port, address));
    const over = await open(port, "127.0.0.5");
    over.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await over.closed;
    assert.equal(over.received(), "");
    for (const c of held.splice(0)) c.socket.destroy();
    await connectionsAtMost(gw, 0);
    assert.equal(await get(gw.origin, "/healthz"), 200);
  });
});
