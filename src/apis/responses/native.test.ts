import assert from "node:assert/strict";
import { test } from "node:test";
import { NativeResponseEvents, nativeResponsesBody, restampResponse } from "./native.ts";
import { parseResponsesRequest } from "./request.ts";
import { ResponseIds } from "./response.ts";

const req = parseResponsesRequest({ model: "public", input: "x", tools: [{ type: "web_search" }] });
const usage = {
  input_tokens: 30,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 5,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 35,
};
const upstream = (status: string, output: unknown[] = []) => ({
  id: "resp_upstream",
  object: "response",
  created_at: 1,
  status,
  model: "gpt-4.1-2025-04-14",
  output,
  store: false,
  previous_response_id: null,
  max_output_tokens: 4096,
  usage: status === "completed" ? { ...usage, input_tokens: 999 } : null,
});
const search = {
  id: "ws_1",
  type: "web_search_call",
  status: "completed",
  action: { type: "search", query: "q" },
};
const ev = (data: Record<string, unknown>) => ({ event: data.type as string, data });

test("the body: the client's fields as sent (unknown ones too), the stored conversation in front, no previous id, no unencrypted reasoning", () => {
  const body = nativeResponsesBody(
    {
      model: "public",
      input: "and now?",
      previous_response_id: "resp_1",
      tools: [{ type: "web_search" }],
      unknown_field: 1,
      temperature: null,
    },
    {
      items: [
        { type: "message", role: "user", content: "first" },
        { type: "reasoning", id: "rs_1", summary: [] },
        { type: "reasoning", id: "rs_2", summary: [], encrypted_content: "enc" },
        search as any,
      ],
      param: "previous_response_id",
    },
    "and now?",
  );
  assert.deepEqual(body, {
    model: "public",
    tools: [{ type: "web_search" }],
    unknown_field: 1,
    input: [
      { type: "message", role: "user", content: "first" },
      { type: "reasoning", id: "rs_2", summary: [], encrypted_content: "enc" },
      search,
      { type: "message", role: "user", content: "and now?" },
    ],
  });
});

test("a Response restamped: the gateway's id, the public model, the client's settings, the usage charged", () => {
  const r = restampResponse(
    upstream("completed", [search]),
    req,
    new ResponseIds("req_abc"),
    7,
    usage,
  ) as any;
  assert.equal(r.id, "resp_abc");
  assert.equal(r.model, "public");
  assert.equal(r.created_at, 7);
  assert.equal(r.store, true);
  assert.equal(r.max_output_tokens, null);
  assert.equal(r.usage.input_tokens, 30);
  assert.deepEqual(r.output, [search]);
});

test("events: renumbered and restamped; the closing event held until finish, which carries the usage charged", () => {
  const events = new NativeResponseEvents(req, new ResponseIds("req_abc"), 7);
  const first = events.pass([
    ev({ type: "response.created", sequence_number: 0, response: upstream("in_progress") }),
    ev({ type: "response.output_item.added", sequence_number: 1, output_index: 0, item: search }),
  ]);
  assert.deepEqual(
    first.map((e) => [e.type, e.sequence_number]),
    [
      ["response.created", 0],
      ["response.output_item.added", 1],
    ],
  );
  assert.equal((first[0]!.response as any).id, "resp_abc");
  assert.equal((first[0]!.response as any).model, "public");
  const more = events.pass([
    ev({ type: "response.output_item.done", sequence_number: 7, output_index: 0, item: search }),
    ev({ type: "response.completed", sequence_number: 8, response: upstream("completed", [search]) }),
  ]);
  assert.deepEqual(
    more.map((e) => [e.type, e.sequence_number]),
    [["response.output_item.done", 2]],
    "the closing event waits",
  );
  const [done] = events.finish(usage);
  assert.equal(done!.type, "response.completed");
  assert.equal(done!.sequence_number, 3);
  assert.equal(
    (done!.response as any).usage.input_tokens,
    30,
    "the usage charged, not the upstream's figure",
  );
  assert.equal(events.response!.id, "resp_abc");
});

test("withheld: the items sent before, the notice as a message of its own, response.completed; failure: response.failed then error", () => {
  const withheld = new NativeResponseEvents(req, new ResponseIds("req_abc"), 7);
  withheld.pass([
    ev({ type: "response.created", sequence_number: 0, response: upstream("in_progress") }),
    ev({ type: "response.output_item.done", sequence_number: 1, output_index: 0, item: search }),
  ]);
  const out0 = withheld.finish(usage, "withheld (request req_abc)");
  // Completed, not incomplete: Codex takes an incomplete response for a dropped stream and retries.
  assert.deepEqual(
    out0.map((e) => e.type),
    [
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ],
  );
  assert.deepEqual(
    out0.map((e) => e.sequence_number),
    [2, 3, 4, 5, 6, 7, 8],
  );
  const end = out0.at(-1)!;
  assert.equal((end.response as any).status, "completed");
  assert.equal((end.response as any).incomplete_details, null);
  const [first, notice] = (end.response as any).output;
  assert.deepEqual(first, search);
  assert.equal(notice.type, "message");
  assert.equal(out0[0]!.output_index, 1, "after the upstream's items");
  assert.deepEqual(notice.content[0].text, "withheld (request req_abc)");

  const failed = new NativeResponseEvents(req, new ResponseIds("req_abc"), 7);
  failed.pass([ev({ type: "response.created", sequence_number: 0, response: upstream("in_progress") })]);
  const out = failed.fail({ code: "upstream_error", message: "broke" });
  assert.deepEqual(
    out.map((e) => e.type),
    ["response.failed", "error"],
  );
  assert.equal((out[0]!.response as any).status, "failed");
  assert.equal((out[0]!.response as any).id, "resp_abc");
});
