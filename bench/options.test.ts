// The bench's flags and BENCH_* variables: the targets, the store and the instances.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { instancesOn, parseOptions, storeTargets } from "./options.ts";

describe("bench options", () => {
  test("by default: every target, SQLite then PostgreSQL with Redis, one gateway instance each", () => {
    const o = parseOptions([], {});
    assert.deepEqual(o.targets, ["direct", "passthrough", "gateway", "routed", "messages", "responses"]);
    assert.deepEqual(o.stores, ["sqlite", "postgres+redis"]);
    assert.equal(o.instances, 1);
  });

  test("every gateway target on the first store, gateway alone on the others", () => {
    assert.deepEqual(
      [...storeTargets(parseOptions([], {}))],
      [
        ["sqlite", ["gateway", "routed", "messages", "responses"]],
        ["postgres+redis", ["gateway"]],
      ],
    );
    assert.deepEqual(
      [...storeTargets(parseOptions(["--store", "postgres", "--targets", "passthrough,messages"], {}))],
      [["postgres", ["messages"]]],
    );
    assert.deepEqual(
      [...storeTargets(parseOptions(["--store", "postgres+redis,sqlite", "--targets", "direct,routed"], {}))],
      [
        ["sqlite", ["routed"]],
        ["postgres+redis", []],
      ],
      "a store left with no target of its own starts no gateway",
    );
  });

  test("--profile and --perf are off unless asked for, and each alone", () => {
    const none = parseOptions([], {});
    assert.deepEqual([none.profile, none.perf], [false, false]);
    const perf = parseOptions(["--perf"], {});
    assert.deepEqual([perf.profile, perf.perf], [false, true]);
    const both = parseOptions(["--perf", "--profile"], {});
    assert.deepEqual([both.profile, both.perf], [true, true]);
  });

  test("--targets picks targets in the table's order, the new APIs among them", () => {
    assert.deepEqual(parseOptions(["--targets", "responses,gateway,messages"], {}).targets, [
      "gateway",
      "messages",
      "responses",
    ]);
    assert.throws(() => parseOptions(["--targets", "gateway,anthropic"], {}), /unknown "anthropic"/);
  });

  test("--store and --instances, or BENCH_STORE and BENCH_INSTANCES; flags win", () => {
    const flags = parseOptions(["--store", "postgres+redis", "--instances", "2"], {});
    assert.deepEqual(flags.stores, ["postgres+redis"]);
    assert.equal(flags.instances, 2);
    const env = parseOptions([], { BENCH_STORE: "postgres", BENCH_INSTANCES: "3" });
    assert.deepEqual(env.stores, ["postgres"]);
    assert.equal(env.instances, 3);
    const both = parseOptions(["--store", "sqlite", "--instances", "1"], {
      BENCH_STORE: "postgres",
      BENCH_INSTANCES: "3",
    });
    assert.deepEqual(both.stores, ["sqlite"]);
    assert.equal(both.instances, 1);
  });

  test("a list of stores, measured in a fixed order: SQLite first, the one the others are compared with", () => {
    assert.deepEqual(parseOptions(["--store", "postgres+redis, sqlite"], {}).stores, [
      "sqlite",
      "postgres+redis",
    ]);
    assert.deepEqual(parseOptions([], { BENCH_STORE: "postgres,postgres+redis,sqlite" }).stores, [
      "sqlite",
      "postgres",
      "postgres+redis",
    ]);
  });

  test("several instances only on a store they can share, and only there", () => {
    assert.throws(
      () => parseOptions(["--store", "sqlite", "--instances", "2"], {}),
      /share a PostgreSQL store/,
    );
    assert.throws(
      () => parseOptions([], { BENCH_STORE: "sqlite", BENCH_INSTANCES: "2" }),
      /share a PostgreSQL/,
    );
    assert.equal(parseOptions(["--store", "postgres", "--instances", "4"], {}).instances, 4);
    const mixed = parseOptions(["--instances", "2"], {});
    assert.equal(instancesOn("sqlite", mixed), 1, "SQLite's file is one process's");
    assert.equal(instancesOn("postgres+redis", mixed), 2);
  });

  test("an unknown store or a count of instances that is not 1 to 16 is refused", () => {
    assert.throws(() => parseOptions(["--store", "mysql"], {}), /--store: unknown "mysql"/);
    assert.throws(() => parseOptions(["--store", "postgres,"], {}), /--store: unknown ""/);
    for (const n of ["0", "1.5", "17", "two"])
      assert.throws(() => parseOptions(["--store", "postgres", "--instances", n], {}), /--instances/, n);
  });

  test("the modes: json, burst streams and paced streams, all three by default", () => {
    assert.deepEqual(parseOptions([], {}).modes, ["json", "stream", "stream-paced"]);
    assert.deepEqual(parseOptions(["--modes", "stream-paced,json"], {}).modes, ["json", "stream-paced"]);
    assert.deepEqual(parseOptions([], { BENCH_MODES: "stream" }).modes, ["stream"]);
    assert.throws(() => parseOptions(["--modes", "paced"], {}), /--modes: unknown "paced"/);
  });

  test("--chunk-delay paces the stream-paced mode's mock, whose fixed rate gets the connections its longer streams need", () => {
    const defaults = parseOptions([], {});
    assert.equal(defaults.chunkDelay, 1);
    assert.equal(defaults.rateConnections, 50);
    assert.equal(defaults.pacedRateConnections, 50);
    const paced = parseOptions(["--chunk-delay", "5"], {});
    assert.equal(paced.chunkDelay, 5);
    // 500/s of streams lasting 20 + 5 × 22 ms: 130 connections keep each under half a second
    assert.equal(paced.pacedRateConnections, 130);
    assert.equal(paced.rateConnections, 50, "the burst modes' streams are no longer");
    assert.equal(
      parseOptions(["--chunk-delay", "5", "--rate-connections", "80"], {}).pacedRateConnections,
      80,
    );
    assert.equal(parseOptions([], { BENCH_CHUNK_DELAY: "2" }).chunkDelay, 2);
    assert.throws(() => parseOptions(["--chunk-delay", "0"], {}), /above 0/);
    assert.throws(() => parseOptions(["--chunk-delay", "-1"], {}), /--chunk-delay/);
  });

  test("only the openai mock paces its streams: another provider's run leaves stream-paced out, or refuses it", () => {
    assert.deepEqual(parseOptions(["--provider", "gemini"], {}).modes, ["json", "stream"]);
    assert.throws(
      () => parseOptions(["--provider", "anthropic", "--modes", "stream-paced"], {}),
      /only the openai mock/,
    );
    assert.throws(
      () => parseOptions(["--chunk-delay", "1", "--provider", "gemini"], {}),
      /only the openai mock/,
    );
  });

  test("another provider's mock still measures the gateway alone", () => {
    assert.deepEqual(parseOptions(["--provider", "anthropic"], {}).targets, ["gateway"]);
  });

  test("--node-options or BENCH_NODE_OPTIONS: the gateway's Node flags, flags only", () => {
    assert.deepEqual(parseOptions([], {}).nodeOptions, []);
    assert.deepEqual(
      parseOptions(["--node-options=--max-semi-space-size=8  --max-old-space-size=256 "], {}).nodeOptions,
      ["--max-semi-space-size=8", "--max-old-space-size=256"],
    );
    assert.deepEqual(parseOptions([], { BENCH_NODE_OPTIONS: "--max-semi-space-size=4" }).nodeOptions, [
      "--max-semi-space-size=4",
    ]);
    assert.throws(() => parseOptions(["--node-options=evil.js"], {}), /"evil.js" is not a flag/);
    assert.throws(() => parseOptions(["--node-options=--eval=1 x"], {}), /"x" is not a flag/);
  });
});
