import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { type MockModeration, startMockModeration } from "../../../test/support/mock-moderation.ts";
import { reviewerSchema } from "../../config/schema.ts";
import { ReviewerError, type ReviewRequest } from "../types.ts";
import { combine, MAX_INPUT_CHARS, ModerationApiReviewer, splitInput } from "./moderation-api.ts";

const KEY = "sk-mod-test-4f9a8b7c6d5e";
const ENV = { MOD_KEY: KEY };

let mock: MockModeration;
let open: MockModeration;
const reviewers: ModerationApiReviewer[] = [];

before(async () => {
  mock = await startMockModeration({ apiKey: KEY });
  open = await startMockModeration();
});

after(async () => {
  await Promise.all(reviewers.map((r) => r.close()));
  await Promise.all([mock.close(), open.close()]);
});

function moderation(config: Record<string, unknown> = {}, env: Record<string, string> = ENV) {
  const parsed = reviewerSchema.parse({
    type: "moderation-api",
    base_url: mock.url,
    api_key_env: "MOD_KEY",
    ...config,
  });
  if (parsed.type !== "moderation-api") throw new Error("not a moderation config");
  const reviewer = new ModerationApiReviewer(parsed, env);
  reviewers.push(reviewer);
  return reviewer;
}

function request(text: string, signal = new AbortController().signal): ReviewRequest {
  return { text, stage: "output", signal };
}

async function waitFor(cond: () => boolean, what: string): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > 5_000) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Rejects with a ReviewerError whose message matches, and never carries the key. */
async function assertFails(promise: Promise<unknown>, message: RegExp): Promise<ReviewerError> {
  const err = await promise.then(
    () => assert.fail("the review should have failed"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ReviewerError, `a ReviewerError, got ${String(err)}`);
  assert.match(err.message, message);
  assert.ok(!err.message.includes(KEY), `the key leaked: ${err.message}`);
  assert.ok(!err.message.includes(KEY.slice(3)), `part of the key leaked: ${err.message}`);
  return err;
}

/** A one-off loopback server answering every request with the given status and body. */
async function fixedServer(status: number, body: string, headers: Record<string, string> = {}) {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(body);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((done) => server.close(() => done()));
    },
  };
}

describe("ModerationApiReviewer against the mock moderation server", () => {
  test("sends OpenAI's request: POST /v1/moderations, model, input, bearer key", async () => {
    mock.reset();
    const verdict = await moderation().review(request("a friendly hello"));
    assert.deepEqual(verdict, { flagged: false, categories: [] });
    assert.equal(mock.requests.length, 1);
    const sent = mock.requests[0]!;
    assert.equal(sent.method, "POST");
    assert.equal(sent.path, "/v1/moderations");
    assert.deepEqual(sent.body, { model: "omni-moderation-latest", input: "a friendly hello" });
    assert.equal(sent.headers.authorization, `Bearer ${KEY}`);
    assert.match(String(sent.headers["content-type"]), /^application\/json/);
  });

  test("without api_key_env no authorization header is sent", async () => {
    open.reset();
    const parsed = reviewerSchema.parse({
      type: "moderation-api",
      base_url: open.url,
      model: "text-moderation-latest",
    });
    if (parsed.type !== "moderation-api") throw new Error("not a moderation config");
    const reviewer = new ModerationApiReviewer(parsed, {});
    reviewers.push(reviewer);
    assert.equal((await reviewer.review(request("violent"))).flagged, true);
    assert.equal(open.requests[0]!.headers.authorization, undefined);
    assert.equal(open.requests[0]!.body.model, "text-moderation-latest");
  });

  test("flags the categories the server flags, named as the API names them", async () => {
    const reviewer = moderation();
    assert.deepEqual(await reviewer.review(request("a violent scene")), {
      flagged: true,
      categories: ["violence"],
    });
    assert.deepEqual(await reviewer.review(request("hateful and selfharm")), {
      flagged: true,
      categories: ["hate", "self-harm"],
    });
    // 0.35 is below the server's own bar
    assert.deepEqual(await reviewer.review(request("borderline")), { flagged: false, categories: [] });
  });

  test("a threshold decides its category by score, lower or higher than the server's bar", async () => {
    const strict = moderation({ thresholds: { violence: 0.3 } });
    assert.deepEqual(await strict.review(request("borderline")), { flagged: true, categories: ["violence"] });
    const lenient = moderation({ thresholds: { violence: 0.95 } });
    assert.deepEqual(await lenient.review(request("violent")), { flagged: false, categories: [] });
    // at the threshold exactly flags; categories without a threshold still follow the server
    const both = moderation({ thresholds: { "violence/graphic": 0.41, hate: 0.99 } });
    assert.deepEqual(await both.review(request("violent hateful")), {
      flagged: true,
      categories: ["violence", "violence/graphic"],
    });
  });

  test("a threshold for a category the server does not report changes nothing", async () => {
    const reviewer = moderation({ thresholds: { "made-up": 0 } });
    assert.deepEqual(await reviewer.review(request("hello")), { flagged: false, categories: [] });
  });

  test("a long text is sent as several input elements and flags if any element flags", async () => {
    mock.reset();
    const reviewer = moderation();
    const long = `${"calm words here ".repeat(6_000)}violent`;
    assert.deepEqual(await reviewer.review(request(long)), { flagged: true, categories: ["violence"] });
    const input = mock.requests[0]!.body.input as string[];
    assert.ok(Array.isArray(input) && input.length > 1, "split into several elements");
    assert.ok(input.every((part) => part.length <= MAX_INPUT_CHARS));
    assert.equal(input.join(""), long);
    assert.deepEqual(await reviewer.review(request("calm words here ".repeat(6_000))), {
      flagged: false,
      categories: [],
    });
  });

  test("an empty text passes without a request", async () => {
    mock.reset();
    assert.deepEqual(await moderation().review(request("")), { flagged: false, categories: [] });
    assert.equal(mock.requests.length, 0);
  });

  test("keeps connections alive across reviews: not one connection per review", async () => {
    const sockets = new Set<unknown>();
    const server = createServer((req, res) => {
      sockets.add(req.socket);
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            id: "modr-1",
            model: "m",
            results: [{ flagged: false, categories: {}, category_scores: {} }],
          }),
        );
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const reviewer = moderation({
        base_url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      });
      for (let i = 0; i < 10; i++) await reviewer.review(request(`hello ${i}`));
      // undici may open a second connection while the first is being handed back; never ten
      assert.ok(sockets.size <= 3, `${sockets.size} connections for 10 sequential reviews`);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe("ModerationApiReviewer failures", () => {
  test("HTTP 500: a ReviewerError without the key or the server's internal address", async () => {
    const err = await assertFails(
      moderation().review(request("modfail")),
      /moderation API answered HTTP 500/,
    );
    assert.ok(!err.message.includes("10.0.0.9"), err.message);
    // the mock really did repeat the key: the redaction is what kept it out
    assert.match(err.message, /\[redacted\]|\[url\]/);
  });

  test("HTTP 401 on a wrong key: a ReviewerError without either key", async () => {
    const err = await assertFails(
      moderation({}, { MOD_KEY: "sk-wrong-key-1234567890" }).review(request("hello")),
      /HTTP 401/,
    );
    assert.ok(!err.message.includes("sk-wrong-key-1234567890"));
  });

  test("a body that is not JSON", async () => {
    await assertFails(moderation().review(request("modgarbage")), /not JSON/);
  });

  test("JSON that is not a moderation response, the wrong number of results, a redirect, a huge reply", async () => {
    const wrongShape = await fixedServer(200, JSON.stringify({ results: [{ flagged: "yes" }] }));
    const tooFew = await fixedServer(200, JSON.stringify({ id: "x", model: "m", results: [] }));
    const redirect = await fixedServer(302, "", { location: "http://127.0.0.1:1/elsewhere" });
    const huge = await fixedServer(200, `{"results":[${" ".repeat(5 * 1024 * 1024)}]}`);
    try {
      await assertFails(moderation({ base_url: huge.url }).review(request("hi")), /too large/);
      await assertFails(
        moderation({ base_url: wrongShape.url }).review(request("hi")),
        /not a moderation response/,
      );
      await assertFails(moderation({ base_url: tooFew.url }).review(request("hi")), /0 results for 1 inputs/);
      await assertFails(moderation({ base_url: redirect.url }).review(request("hi")), /HTTP 302/);
    } finally {
      await Promise.all([wrongShape.close(), tooFew.close(), redirect.close(), huge.close()]);
    }
  });

  test("a server that cannot be reached", async () => {
    const gone = await fixedServer(200, "{}");
    await gone.close();
    const err = await assertFails(moderation({ base_url: gone.url }).review(request("hi")), /cannot reach/);
    assert.ok(!err.message.includes("127.0.0.1"), err.message);
  });

  test("a hanging server: aborting the signal rejects the review and closes the connection", async () => {
    mock.reset();
    const controller = new AbortController();
    const review = moderation().review(request("modhang", controller.signal));
    await waitFor(() => mock.inFlight() === 1, "the request to arrive");
    controller.abort(new Error("review timed out"));
    await assertFails(review, /stopped/);
    await waitFor(() => mock.inFlight() === 0, "the mock to see the client leave");
    assert.equal(mock.aborted(), 1);
  });

  test("a slow server (modslow): aborting while it waits rejects the review and closes the connection", async () => {
    mock.reset();
    const controller = new AbortController();
    const review = moderation().review(request("modslow=60000 violent", controller.signal));
    await waitFor(() => mock.inFlight() === 1, "the request to arrive");
    controller.abort();
    await assertFails(review, /stopped/);
    await waitFor(() => mock.inFlight() === 0, "the mock to see the client leave");
  });

  test("a signal aborted before the review sends nothing", async () => {
    mock.reset();
    const controller = new AbortController();
    controller.abort();
    await assertFails(moderation().review(request("hello", controller.signal)), /stopped/);
    assert.equal(mock.requests.length, 0);
  });

  test("an unset api_key_env is refused at construction", () => {
    assert.throws(() => moderation({}, {}), /MOD_KEY is not set/);
  });
});

describe("combine", () => {
  const result = (
    flagged: boolean,
    categories: Record<string, unknown>,
    scores: Record<string, unknown>,
  ) => ({
    flagged,
    categories,
    category_scores: scores,
  });

  test("a result flagged without any category still flags, with no category", () => {
    assert.deepEqual(combine([result(true, { violence: false }, { violence: 0.1 })], new Map()), {
      flagged: true,
      categories: [],
    });
  });

  test("categories are collected once across elements, in order of appearance", () => {
    const verdict = combine(
      [
        result(true, { hate: true, violence: false }, { hate: 0.9, violence: 0.1 }),
        result(true, { hate: true, violence: true }, { hate: 0.9, violence: 0.9 }),
      ],
      new Map(),
    );
    assert.deepEqual(verdict, { flagged: true, categories: ["hate", "violence"] });
  });

  test("null and missing scores never reach a threshold", () => {
    const verdict = combine([result(false, { illicit: null }, { illicit: null })], new Map([["illicit", 0]]));
    assert.deepEqual(verdict, { flagged: false, categories: [] });
  });
});

describe("splitInput", () => {
  test("short text stays one element", () => {
    assert.deepEqual(splitInput("hello"), ["hello"]);
    assert.deepEqual(splitInput("x".repeat(MAX_INPUT_CHARS)), ["x".repeat(MAX_INPUT_CHARS)]);
  });

  test("cuts after whitespace in the window's last eighth, so words stay whole", () => {
    const text = `${"a".repeat(14)} ${"b".repeat(14)} ${"c".repeat(5)}`;
    assert.deepEqual(splitInput(text, 16), [`${"a".repeat(14)} `, `${"b".repeat(14)} `, "c".repeat(5)]);
  });

  test("without whitespace, cuts hard but never inside a surrogate pair", () => {
    const text = "😀".repeat(10); // 20 UTF-16 units
    const parts = splitInput(text, 7);
    assert.equal(parts.join(""), text);
    for (const part of parts) {
      assert.ok(part.length <= 7);
      assert.ok(!/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/.test(part), `split pair in ${JSON.stringify(part)}`);
    }
  });
});
