import assert from "node:assert/strict";
import { test } from "node:test";
import type { Chunk } from "../../domain/completion.ts";
import { ResponseEvents } from "./events.ts";
import { parseResponsesRequest } from "./request.ts";
import { outputItems, ResponseIds, responseObject, responsesUsage, statusOf } from "./response.ts";

const req = parseResponsesRequest({
  model: "m",
  input: "hi",
  stream: true,
  tools: [{ type: "custom", name: "p" }],
});
const usage = responsesUsage({ prompt: 10, completion: 5, cachedInput: 2, reasoning: 3 });

const chunk = (
  delta: Record<string, unknown>,
  finish: Chunk["choices"][number]["finish_reason"] = null,
): Chunk => ({
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta, finish_reason: finish }],
});

function run(chunks: Chunk[], withheld?: string) {
  const events = new ResponseEvents(req, new ResponseIds("req_abc"), 1700000000);
  const all = [...events.start()];
  for (const c of chunks) all.push(...events.chunk(c));
  all.push(...events.finish(usage, withheld));
  return { all, response: events.response! };
}

test("reasoning, text, a function call and a custom call: OpenAI's event sequence, numbered", () => {
  const { all, response } = run([
    chunk({ role: "assistant", content: "", reasoning_content: "Think" }),
    chunk({ reasoning_content: "ing." }),
    chunk({ content: "Hello" }),
    chunk({ content: " there" }),
    chunk({
      tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "shell", arguments: "" } }],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] }),
    chunk({
      tool_calls: [{ index: 1, id: "call_2", type: "custom", custom: { name: "p", input: "patch" } }],
    }),
    chunk({}, "tool_calls"),
    { object: "chat.completion.chunk", choices: [] },
  ]);
  assert.deepEqual(
    all.map((e) => e.type),
    [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.reasoning_text.delta",
      "response.reasoning_text.delta",
      "response.reasoning_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.output_item.added",
      "response.custom_tool_call_input.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.custom_tool_call_input.done",
      "response.output_item.done",
      "response.completed",
    ],
  );
  assert.deepEqual(
    all.map((e) => e.sequence_number),
    all.map((_, i) => i),
  );
  assert.equal(response.status, "completed");
  assert.equal(response.id, "resp_abc");
  assert.deepEqual(response.usage, usage);
  assert.deepEqual(
    response.output.map((i) => i.type),
    ["reasoning", "message", "function_call", "custom_tool_call"],
  );
  assert.deepEqual((response.output[0] as any).content, [{ type: "reasoning_text", text: "Thinking." }]);
  assert.equal((response.output[1] as any).content[0].text, "Hello there");
  assert.equal((response.output[2] as any).arguments, '{"a":1}');
  assert.equal((response.output[2] as any).call_id, "call_1");
  assert.deepEqual(
    { call_id: (response.output[3] as any).call_id, input: (response.output[3] as any).input },
    { call_id: "call_2", input: "patch" },
  );
  const ids = new Set(response.output.map((i) => i.id));
  assert.equal(ids.size, 4, "item ids are unique");
  const completed = all.at(-1)!;
  assert.equal(completed.response, response);
  const textDone = all.find((e) => e.type === "response.output_text.done")!;
  assert.equal(textDone.text, "Hello there");
  assert.equal(textDone.item_id, response.output[1]!.id);
});

test("a cut answer ends response.incomplete with the reason", () => {
  const cut = run([chunk({ content: "Hel" }), chunk({}, "length")]);
  assert.equal(cut.all.at(-1)!.type, "response.incomplete");
  assert.equal(cut.response.status, "incomplete");
  assert.deepEqual(cut.response.incomplete_details, { reason: "max_output_tokens" });
  assert.equal((cut.response.output[0] as any).status, "incomplete");
});

test("a withheld answer completes: the released text ends incomplete, the gateway's notice follows as a message", () => {
  // Codex takes response.incomplete (content_filter) for a dropped stream and sends the turn again.
  const withheld = run([chunk({ content: "Released." })], "The notice (request req_abc).");
  assert.equal(withheld.all.at(-1)!.type, "response.completed");
  assert.equal(withheld.response.status, "completed");
  assert.equal(withheld.response.incomplete_details, null);
  const [released, notice] = withheld.response.output as any[];
  assert.equal(released.status, "incomplete");
  assert.equal(released.content[0].text, "Released.");
  assert.equal(notice.type, "message");
  assert.equal(notice.status, "completed");
  assert.equal(notice.content[0].text, "The notice (request req_abc).");
  assert.notEqual(notice.id, released.id);
  const deltas = withheld.all.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta);
  assert.deepEqual(deltas, ["Released.", "The notice (request req_abc)."]);
});

test("a refusal is a refusal part of the message", () => {
  const { all, response } = run([
    chunk({ role: "assistant", refusal: "" }),
    chunk({ refusal: "No." }),
    chunk({}, "stop"),
  ]);
  assert.ok(all.some((e) => e.type === "response.refusal.delta" && e.delta === "No."));
  assert.deepEqual((response.output[0] as any).content, [{ type: "refusal", refusal: "No." }]);
});

test("a failure after the start: response.failed with what was produced, then an error event", () => {
  const events = new ResponseEvents(req, new ResponseIds("req_x"), 1);
  events.start();
  events.chunk(chunk({ content: "part" }));
  const end = events.fail({ code: "upstream_error", message: "broke" }, usage);
  assert.deepEqual(
    end.map((e) => e.type),
    ["response.failed", "error"],
  );
  assert.equal((end[0]!.response as any).status, "failed");
  assert.deepEqual((end[0]!.response as any).error, { code: "upstream_error", message: "broke" });
  assert.equal(end[1]!.code, "upstream_error");
});

test("a whole answer as output items and a Response echoing the request's settings", () => {
  const ids = new ResponseIds("req_q");
  const items = outputItems(
    ids,
    {
      role: "assistant",
      content: "Done",
      tool_calls: [
        { id: "c1", type: "function", function: { name: "f", arguments: "{}" } },
        { id: "c2", type: "custom", custom: { name: "p", input: "x" } },
      ],
    },
    "completed",
  );
  assert.deepEqual(
    items.map((i) => i.type),
    ["message", "function_call", "custom_tool_call"],
  );
  const r = responseObject(req, { ids, createdAt: 5, status: "completed", output: items, usage });
  assert.equal(r.object, "response");
  assert.equal(r.store, true);
  assert.deepEqual(r.tools, req.tools);
  assert.equal(r.tool_choice, "auto");
  assert.equal(typeof r.completed_at, "number");
  assert.deepEqual(statusOf("tool_calls"), { status: "completed", incomplete_details: null });
  const onlyCalls = outputItems(
    ids,
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "" } }],
    },
    "completed",
  );
  assert.deepEqual(
    onlyCalls.map((i) => i.type),
    ["function_call"],
    "no empty message beside tool calls",
  );
});

test("a flattened namespace tool's call comes back under the name and namespace the client defined", async () => {
  const { ToolNamespaces } = await import("./namespaces.ts");
  const { outputItems, ResponseIds } = await import("./response.ts");
  const namespaces = ToolNamespaces.of([
    {
      type: "namespace",
      name: "functions",
      tools: [
        { type: "custom", name: "exec" },
        { type: "function", name: "wait" },
      ],
    } as never,
  ]);
  const items = outputItems(
    new ResponseIds("req_ns"),
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "c1", type: "custom", custom: { name: "functions__exec", input: "ls" } },
        { id: "c2", type: "function", function: { name: "functions__wait", arguments: "{}" } },
        { id: "c3", type: "function", function: { name: "plain", arguments: "{}" } },
      ],
    },
    "completed",
    namespaces,
  ) as unknown as Array<Record<string, unknown>>;
  assert.deepEqual(
    items.map((i) => [i.type, i.name, i.namespace]),
    [
      ["custom_tool_call", "exec", "functions"],
      ["function_call", "wait", "functions"],
      ["function_call", "plain", undefined],
    ],
  );
});
