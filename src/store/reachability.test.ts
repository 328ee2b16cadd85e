import assert from "node:assert/strict";
import { once } from "node:events";
import { type AddressInfo, connect, createServer } from "node:net";
import { Writable } from "node:stream";
import { test } from "node:test";
import { createLogger } from "../observability/logger.ts";
import { failureText, isConnectionFailure, Reachability, warnUnlessUnreachable } from "./reachability.ts";

/** A logger at debug level whose lines the test reads. */
function capture() {
  const lines: { level: number; msg: string; [k: string]: unknown }[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, logger: createLogger("debug", sink) };
}

/** What connecting to a port nobody listens on gives, as the drivers meet it. */
async function refused(): Promise<Error> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, "close");
  const socket = connect(port, "127.0.0.1");
  const [err] = (await once(socket, "error").catch((e) => [e])) as [Error];
  return err;
}

test("a refused or cut connection is a connection failure; a refusal of the work is not", async () => {
  assert.ok(isConnectionFailure(await refused()));
  assert.ok(isConnectionFailure(new Error("Connection terminated unexpectedly")), "pg");
  assert.ok(isConnectionFailure(new Error("Stream isn't writeable and enableOfflineQueue options is false")));
  assert.ok(isConnectionFailure(Object.assign(new Error("terminating connection"), { code: "57P01" })));
  assert.ok(
    isConnectionFailure(new AggregateError([await refused(), await refused()])),
    "every address refused",
  );
  assert.ok(isConnectionFailure(new Error("could not reserve", { cause: await refused() })));
  assert.ok(!isConnectionFailure(new Error('relation "x" does not exist')));
  assert.ok(!isConnectionFailure(Object.assign(new Error("duplicate key"), { code: "23505" })));
  assert.ok(!isConnectionFailure("ECONNREFUSED"), "not an error");
});

test("failureText: one line, credentials in URLs masked", () => {
  const text = failureText(new Error("cannot reach postgres://gw:s3cret@db.internal:5432/gw\n  at x"));
  assert.equal(text, "cannot reach postgres://***@db.internal:5432/gw at x");
  assert.equal(failureText(new AggregateError([new Error("a"), new Error("b")])), "a; b");
});

test("Reachability logs the change to unreachable once, and back once every part reached it again", () => {
  const { lines, logger } = capture();
  const redis = new Reachability("redis", logger, { down: "Redis down", up: "Redis back" });
  assert.equal(redis.status, "ok");
  redis.reached("commands"); // nothing to tell
  redis.failed("commands", new Error("connect ECONNREFUSED 127.0.0.1:6379"));
  redis.failed("commands", new Error("connect ECONNREFUSED 127.0.0.1:6379"));
  redis.failed("wake-ups", new Error("Connection is closed."));
  assert.equal(redis.reachable, false);
  assert.equal(redis.status, "unreachable: Connection is closed.");
  redis.reached("commands");
  assert.equal(redis.reachable, false, "the wake-ups still fail");
  redis.reached("wake-ups");
  assert.equal(redis.status, "ok");
  redis.failed("commands", new Error("connect ECONNREFUSED 127.0.0.1:6379"));
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg, l.reason]),
    [
      [40, "Redis down", "connect ECONNREFUSED 127.0.0.1:6379"],
      [30, "Redis back", undefined],
      [40, "Redis down", "connect ECONNREFUSED 127.0.0.1:6379"],
    ],
  );
  assert.ok(
    lines.every((l) => !("err" in l)),
    "no stack trace",
  );
});

test("warnUnlessUnreachable: a connection failure at debug with its reason, anything else a warning with its stack", async () => {
  const { lines, logger } = capture();
  const onError = warnUnlessUnreachable(logger, "could not publish");
  onError(await refused());
  onError(new Error("disk full"));
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg]),
    [
      [20, "could not publish"],
      [40, "could not publish"],
    ],
  );
  assert.match(String(lines[0]!.reason), /ECONNREFUSED/);
  assert.match(JSON.stringify(lines[1]!.err), /disk full.*stack/);
});
