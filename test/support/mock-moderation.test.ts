import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { AuthenticationError } from "openai";
import { MODERATION_CATEGORIES, type MockModeration, startMockModeration } from "./mock-moderation.ts";

const KEY = "sk-mock-moderation-key-9876";

let mock: MockModeration;
let keyed: MockModeration;
let slow: MockModeration;
let client: OpenAI;

before(async () => {
  mock = await startMockModeration();
  keyed = await startMockModeration({ apiKey: KEY });
  slow = await startMockModeration({ latencyMs: 60_000 });
  client = new OpenAI({ apiKey: "sk-anything", baseURL: mock.url, maxRetries: 0 });
});

after(async () => {
  await Promise.all([mock.close(), keyed.close(), slow.close()]);
});

function post(
  base: MockModeration,
  body: unknown,
  init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
) {
  return fetch(`${base.url}/moderations`, {
    method: "POST",
    headers: { "content-type": "application/json", ...init.headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(init.signal ? { signal: init.signal } : {}),
  });
}

async function json(res: Response): Promise<any> {
  return res.json();
}

async function waitFor(cond: () => boolean, what: string): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > 5_000) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("OpenAI SDK against the mock moderation server", () => {
  test("a harmless text: OpenAI's exact shape, every category, nothing flagged", async () => {
    const res = await client.moderations.create({ model: "omni-moderation-latest", input: "hello there" });
    assert.match(res.id, /^modr-[0-9a-f]+$/);
    assert.equal(res.model, "omni-moderation-latest");
    assert.equal(res.results.length, 1);
    const result = res.results[0]!;
    assert.equal(result.flagged, false);
    for (const field of ["categories", "category_scores", "category_applied_input_types"] as const)
      assert.deepEqual(Object.keys(result[field]), [...MODERATION_CATEGORIES], field);
    for (const category of MODERATION_CATEGORIES) {
      const key = category as keyof typeof result.categories;
      assert.equal(result.categories[key], false);
      assert.ok(result.category_scores[key] > 0 && result.category_scores[key] < 0.001);
      assert.deepEqual(result.category_applied_input_types[key], ["text"]);
    }
  });

  test("trigger words give their scores; the server flags at 0.5", async () => {
    const res = await client.moderations.create({
      model: "omni-moderation-latest",
      input: ["a VIOLENT scene", "hateful", "selfharm", "borderline", "calm"],
    });
    const [violent, hateful, selfharm, borderline, calm] = res.results;
    assert.equal(violent!.flagged, true);
    assert.equal(violent!.category_scores.violence, 0.92);
    assert.equal(violent!.categories.violence, true);
    assert.equal(violent!.category_scores["violence/graphic"], 0.41);
    assert.equal(violent!.categories["violence/graphic"], false);
    assert.equal(hateful!.categories.hate, true);
    assert.equal(hateful!.category_scores.hate, 0.81);
    assert.equal(selfharm!.categories["self-harm"], true);
    assert.equal(selfharm!.category_scores["self-harm"], 0.77);
    assert.equal(borderline!.flagged, false);
    assert.equal(borderline!.category_scores.violence, 0.35);
    assert.equal(calm!.flagged, false);
  });

  test("content parts: one result for them all; images count for the image categories", async () => {
    const res = await client.moderations.create({
      model: "omni-moderation-latest",
      input: [
        { type: "text", text: "a violent" },
        { type: "text", text: "story" },
        { type: "image_url", image_url: { url: "https://example.com/x.png" } },
      ],
    });
    assert.equal(res.results.length, 1);
    assert.equal(res.results[0]!.flagged, true);
    assert.deepEqual(res.results[0]!.category_applied_input_types.violence, ["text", "image"]);
    assert.deepEqual(res.results[0]!.category_applied_input_types.hate, ["text"]);
  });

  test("the key is checked when one is set", async () => {
    const wrong = new OpenAI({ apiKey: "sk-wrong", baseURL: keyed.url, maxRetries: 0 });
    await assert.rejects(wrong.moderations.create({ input: "hi" }), AuthenticationError);
    const missing = await post(keyed, { input: "hi" });
    assert.equal(missing.status, 401);
    assert.match((await json(missing)).error.message, /didn't provide an API key/);
    const right = new OpenAI({ apiKey: KEY, baseURL: keyed.url, maxRetries: 0 });
    assert.equal((await right.moderations.create({ input: "hi" })).results.length, 1);
  });
});

describe("what the mock records", () => {
  test("each request, and when it was answered, on this process's clock", async () => {
    mock.reset();
    const before = performance.now();
    const res = await post(mock, { model: "omni-moderation-latest", input: "hello" });
    await res.json();
    const received = performance.now();
    assert.equal(mock.requests.length, 1);
    const rec = mock.requests[0]!;
    assert.equal(rec.method, "POST");
    assert.equal(rec.path, "/v1/moderations");
    assert.deepEqual(rec.body, { model: "omni-moderation-latest", input: "hello" });
    assert.ok(rec.answeredAt !== undefined && rec.answeredAt >= before && rec.answeredAt <= received);
  });

  test("a request never answered has no answeredAt", async () => {
    mock.reset();
    const controller = new AbortController();
    const pending = post(mock, { input: "modhang" }, { signal: controller.signal });
    await waitFor(() => mock.inFlight() === 1, "the request to arrive");
    controller.abort();
    await assert.rejects(pending);
    await waitFor(() => mock.inFlight() === 0, "the mock to see the client leave");
    assert.equal(mock.requests[0]!.answeredAt, undefined);
  });
});

describe("request validation, as OpenAI answers", () => {
  const cases: [name: string, body: unknown, status: number, param: string | null, code: string | null][] = [
    ["not JSON", "{nope", 400, null, null],
    ["not an object", [1], 400, null, null],
    ["no input", { model: "omni-moderation-latest" }, 400, "input", "missing_required_parameter"],
    ["input a number", { input: 3 }, 400, "input", "invalid_type"],
    ["input null", { input: null }, 400, "input", "invalid_type"],
    ["input empty", { input: [] }, 400, "input", "empty_array"],
    ["mixed array", { input: ["a", 2] }, 400, "input[1]", "invalid_type"],
    ["bad content part", { input: [{ type: "audio" }] }, 400, "input[0]", "invalid_value"],
    ["model not a string", { input: "a", model: 5 }, 400, "model", "invalid_type"],
    ["another model family", { input: "a", model: "gpt-4o" }, 404, null, "model_not_found"],
  ];
  for (const [name, body, status, param, code] of cases) {
    test(`${name}: ${status} with an error envelope`, async () => {
      const res = await post(mock, body);
      assert.equal(res.status, status);
      const { error } = await json(res);
      assert.equal(typeof error.message, "string");
      assert.equal(error.type, "invalid_request_error");
      assert.equal(error.param, param);
      assert.equal(error.code, code);
    });
  }

  test("other routes: 404", async () => {
    const res = await fetch(`${mock.url}/moderation`, { method: "POST", body: "{}" });
    assert.equal(res.status, 404);
    assert.equal((await json(res)).error.type, "invalid_request_error");
  });
});

describe("failure triggers", () => {
  test("modfail: 500 with an error envelope that repeats the key it was sent", async () => {
    const res = await post(keyed, { input: "modfail" }, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(res.status, 500);
    const { error } = await json(res);
    assert.equal(error.type, "server_error");
    assert.ok(error.message.includes(KEY));
  });

  test("modgarbage: 200 with a body that is not JSON", async () => {
    const res = await post(mock, { input: "modgarbage" });
    assert.equal(res.status, 200);
    await assert.rejects(res.json());
  });

  test("modhang: no answer until the client leaves", async () => {
    mock.reset();
    const controller = new AbortController();
    const pending = post(mock, { input: ["fine", "modhang"] }, { signal: controller.signal });
    await waitFor(() => mock.inFlight() === 1, "the request to arrive");
    controller.abort();
    await assert.rejects(pending);
    await waitFor(() => mock.inFlight() === 0, "the mock to see the client leave");
    assert.equal(mock.aborted(), 1);
  });

  test("modslow=MS delays the answer and overrides latencyMs", async () => {
    const res = await post(slow, { input: "modslow=1 violent" });
    assert.equal(res.status, 200);
    assert.equal((await json(res)).results[0].flagged, true);
  });

  test("latencyMs holds every answer back", async () => {
    slow.reset();
    const controller = new AbortController();
    const pending = post(slow, { input: "hello" }, { signal: controller.signal });
    await waitFor(() => slow.inFlight() === 1, "the request to arrive");
    assert.equal(slow.requests.length, 1);
    controller.abort();
    await assert.rejects(pending);
    await waitFor(() => slow.inFlight() === 0, "the mock to see the client leave");
    assert.equal(slow.aborted(), 1);
  });
});
