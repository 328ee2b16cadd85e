import assert from "node:assert/strict";
import { test } from "node:test";
import type { GatewayError } from "../../errors/index.ts";
import { parseResponsesRequest } from "./request.ts";
import { builtinToolUses, toChatRequest } from "./to-chat.ts";

const translateAll = (fields: Record<string, unknown>, prior?: unknown[]) =>
  toChatRequest(
    parseResponsesRequest({ model: "m", ...fields }),
    prior
      ? {
          items: parseResponsesRequest({ model: "m", input: prior }).input as any,
          param: "previous_response_id",
        }
      : undefined,
  );
const translate = (fields: Record<string, unknown>, prior?: unknown[]) => translateAll(fields, prior).request;

const refusal = (fields: Record<string, unknown>) => {
  try {
    translate(fields);
  } catch (err) {
    const e = err as GatewayError;
    return { name: e.errorName, param: e.param, message: e.message };
  }
  assert.fail("not refused");
};

test("a string input is one user message; instructions open the conversation as a system message", () => {
  const chat = translate({ input: "Hello", instructions: "Be brief." });
  assert.deepEqual(chat.messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hello" },
  ]);
});

test("a Codex-like turn: reasoning left out, the calls joined to the assistant turn, outputs as tool messages", () => {
  const chat = translate({
    input: [
      { type: "message", role: "developer", content: [{ type: "input_text", text: "<env>" }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "fix the test" }] },
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "Looking" }],
        encrypted_content: null,
      },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Let me look." }] },
      { type: "function_call", call_id: "call_1", name: "shell", arguments: '{"command":["ls"]}' },
      { type: "custom_tool_call", call_id: "call_2", name: "apply_patch", input: "*** Begin Patch" },
      { type: "function_call_output", call_id: "call_1", output: "a.ts" },
      { type: "custom_tool_call_output", call_id: "call_2", output: "Done!" },
    ],
  });
  assert.deepEqual(chat.messages, [
    { role: "developer", content: [{ type: "text", text: "<env>" }] },
    { role: "user", content: [{ type: "text", text: "fix the test" }] },
    {
      role: "assistant",
      content: "Let me look.",
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "shell", arguments: '{"command":["ls"]}' } },
        { id: "call_2", type: "custom", custom: { name: "apply_patch", input: "*** Begin Patch" } },
      ],
    },
    { role: "tool", tool_call_id: "call_1", content: "a.ts" },
    { role: "tool", tool_call_id: "call_2", content: "Done!" },
  ]);
});

test("the stored conversation comes first, then this input; a previous turn's instructions are not carried", () => {
  const chat = translate(
    { input: [{ type: "function_call_output", call_id: "c", output: "42" }], instructions: "New rules." },
    [
      { role: "user", content: "What is 6*7?" },
      { type: "function_call", id: "fc_1", call_id: "c", name: "calc", arguments: "{}", status: "completed" },
    ],
  );
  assert.deepEqual(
    chat.messages.map((m) => m.role),
    ["system", "user", "assistant", "tool"],
  );
  assert.equal(chat.messages[0]!.content, "New rules.");
});

test("tools, tool_choice, output settings and JSON schema output", () => {
  const chat = translate({
    input: "x",
    tools: [
      { type: "function", name: "shell", description: "Run", parameters: { type: "object" }, strict: false },
      {
        type: "custom",
        name: "apply_patch",
        format: { type: "grammar", syntax: "lark", definition: "start: x" },
      },
    ],
    tool_choice: { type: "custom", name: "apply_patch" },
    parallel_tool_calls: false,
    max_output_tokens: 500,
    temperature: 0.5,
    top_p: 0.9,
    reasoning: { effort: "high", summary: "auto" },
    text: {
      format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true },
      verbosity: "low",
    },
    store: false,
    metadata: { a: "b" },
    prompt_cache_key: "k",
  });
  assert.deepEqual(chat.tools, [
    {
      type: "function",
      function: { name: "shell", description: "Run", parameters: { type: "object" }, strict: false },
    },
    {
      type: "custom",
      custom: {
        name: "apply_patch",
        format: { type: "grammar", grammar: { syntax: "lark", definition: "start: x" } },
      },
    },
  ]);
  assert.deepEqual(chat.tool_choice, { type: "custom", custom: { name: "apply_patch" } });
  assert.equal(chat.parallel_tool_calls, false);
  assert.equal(chat.max_completion_tokens, 500);
  assert.equal(chat.temperature, 0.5);
  assert.equal(chat.top_p, 0.9);
  assert.equal(chat.reasoning_effort, "high");
  assert.equal(chat.verbosity, "low");
  assert.deepEqual(chat.response_format, {
    type: "json_schema",
    json_schema: { name: "out", schema: { type: "object" }, strict: true },
  });
  assert.equal(chat.prompt_cache_key, "k");
  assert.equal(chat.store, undefined, "store is the gateway's, never OpenAI's stored completions");
  assert.equal(chat.metadata, undefined);
});

test("images by URL are image parts; a file's data is a file part", () => {
  const chat = translate({
    input: [
      {
        role: "user",
        content: [
          { type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "low" },
          { type: "input_file", file_data: "data:application/pdf;base64,AA", filename: "a.pdf" },
        ],
      },
    ],
  });
  assert.deepEqual(chat.messages[0]!.content, [
    { type: "image_url", image_url: { url: "data:image/png;base64,AAAA", detail: "low" } },
    { type: "file", file: { file_data: "data:application/pdf;base64,AA", filename: "a.pdf" } },
  ]);
});

test("built-in tools are left out of the canonical request and listed with their params, items too", () => {
  const req = parseResponsesRequest({
    model: "m",
    input: [
      { role: "user", content: "search" },
      { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search" } },
    ],
    tools: [{ type: "function", name: "f" }, { type: "web_search_preview_2025_03_11" }],
    tool_choice: { type: "file_search" },
  });
  const prior = {
    items: parseResponsesRequest({ model: "m", input: [{ type: "file_search_call", id: "fs_1" }] })
      .input as any,
    param: "previous_response_id",
  };
  const chat = toChatRequest(req, prior).request;
  assert.deepEqual(
    chat.tools?.map((t) => t.type),
    ["function"],
  );
  assert.equal(chat.tool_choice, undefined);
  assert.deepEqual(chat.messages, [{ role: "user", content: "search" }]);
  assert.deepEqual(builtinToolUses(req, prior), [
    { type: "web_search_preview_2025_03_11", param: "tools[1]" },
    { type: "file_search", param: "tool_choice" },
    { type: "file_search_call", param: "previous_response_id" },
    { type: "web_search_call", param: "input[1]" },
  ]);
  assert.deepEqual(
    builtinToolUses(
      parseResponsesRequest({ model: "m", input: "x", tools: [{ type: "function", name: "f" }] }),
    ),
    [],
  );
});

test("what the gateway cannot honour is refused with its param", () => {
  assert.equal(refusal({ input: "x", background: true }).param, "background");
  assert.equal(refusal({ input: "x", conversation: "conv_1" }).param, "conversation");
  assert.equal(refusal({ input: "x", prompt: { id: "p" } }).param, "prompt");
  // one left unresolved by the edge is none of the account's (./api.ts resolves the others)
  assert.equal(refusal({ input: [{ type: "item_reference", id: "msg_1" }] }).param, "input[0]");
  assert.equal(
    refusal({ input: [{ role: "user", content: [{ type: "input_image", file_id: "file-1" }] }] }).param,
    "input[0].content[0].file_id",
  );
  assert.equal(refusal({ input: [] }).param, "input");
  assert.equal(refusal({ input: [], instructions: "only this" }).param, "input");
});

test("settings that change nothing here pass: background false, truncation disabled, include", () => {
  const chat = translate({
    input: "x",
    background: false,
    truncation: "disabled",
    include: ["reasoning.encrypted_content"],
    top_logprobs: 0,
  });
  assert.equal(chat.messages.length, 1);
});

test("what only this API carries is listed as untranslated, by place: settings, unknown fields and items", () => {
  const { untranslated } = translateAll({
    input: [
      { role: "user", content: "x" },
      { type: "compaction", id: "c1", encrypted_content: "e" },
    ],
    truncation: "auto",
    top_logprobs: 3,
    context_management: [{ type: "compaction" }],
    client_metadata: { thread: "t" },
    prompt_cache_key: "t",
    include: ["reasoning.encrypted_content"],
  });
  assert.deepEqual(untranslated, [
    { param: "truncation", name: "truncation" },
    { param: "top_logprobs", name: "top_logprobs" },
    { param: "context_management", name: "context_management" },
    { param: "client_metadata", name: "client_metadata" },
    { param: "input[1]", name: "compaction" },
  ]);
});

test("namespace tools are flattened into tools of their own; calls in history go by the flattened name", () => {
  const chat = translate({
    input: [
      { role: "user", content: "spawn one" },
      {
        type: "function_call",
        call_id: "c1",
        name: "spawn_agent",
        namespace: "multi_agent_v1",
        arguments: "{}",
      },
      { type: "function_call_output", call_id: "c1", output: "ok" },
    ],
    tools: [
      { type: "function", name: "shell", parameters: { type: "object" } },
      {
        type: "namespace",
        name: "multi_agent_v1",
        description: "agents",
        tools: [
          { type: "function", name: "spawn_agent", parameters: { type: "object" } },
          { type: "function", name: "wait", parameters: { type: "object" } },
        ],
      },
      { type: "tool_search" },
    ],
  });
  assert.deepEqual(
    chat.tools?.map((t) => (t as unknown as { function: { name: string } }).function.name),
    ["shell", "multi_agent_v1__spawn_agent", "multi_agent_v1__wait"],
  );
  assert.equal((chat.messages[1] as any).tool_calls[0].function.name, "multi_agent_v1__spawn_agent");
});

test("additional_tools items add their tools; their built-in tools are listed as untranslated", () => {
  const { request, untranslated } = translateAll({
    input: [
      {
        type: "additional_tools",
        role: "developer",
        tools: [{ type: "function", name: "late", parameters: { type: "object" } }, { type: "web_search" }],
      },
      { role: "user", content: "x" },
    ],
  });
  assert.deepEqual(
    request.tools?.map((t) => (t as unknown as { function: { name: string } }).function.name),
    ["late"],
  );
  assert.deepEqual(untranslated, [{ param: "input[0].tools[1]", name: "web_search" }]);
});

test("a namespace's custom tool (Codex's functions.exec) is flattened, and its calls in history too", () => {
  const chat = translate({
    input: [
      {
        type: "additional_tools",
        role: "developer",
        tools: [
          {
            type: "namespace",
            name: "functions",
            description: "",
            tools: [{ type: "custom", name: "exec" }],
          },
        ],
      },
      { role: "user", content: "run it" },
      { type: "custom_tool_call", call_id: "c1", name: "exec", namespace: "functions", input: "ls" },
      { type: "custom_tool_call_output", call_id: "c1", output: [{ type: "input_text", text: "ok" }] },
    ],
  });
  assert.deepEqual(chat.tools, [{ type: "custom", custom: { name: "functions__exec" } }]);
  assert.deepEqual((chat.messages[1] as any).tool_calls[0].custom, { name: "functions__exec", input: "ls" });
});
