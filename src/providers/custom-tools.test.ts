import assert from "node:assert/strict";
import { test } from "node:test";
import { drain } from "../../test/support/adapter-kit.ts";
import { fakeProvider } from "../../test/support/models.ts";
import { parseChatRequest } from "../domain/chat-request.ts";
import type { Chunk, Completion } from "../domain/completion.ts";
import {
  customToolNames,
  customToolsAsFunctions,
  restoreCustomCallChunks,
  restoreCustomCalls,
  restoringCustomCalls,
} from "./custom-tools.ts";
import { DEFAULT_PROMPT_OVERHEADS, promptUpperBound } from "./prompt-bound.ts";
import type { UpstreamCall } from "./types.ts";

const GRAMMAR = 'start: "*** Begin Patch" LF body "*** End Patch"';
const patchTool = {
  type: "custom",
  custom: {
    name: "apply_patch",
    description: "Edit files",
    format: { type: "grammar", grammar: { syntax: "lark", definition: GRAMMAR } },
  },
};
const shellTool = { type: "function", function: { name: "shell", parameters: { type: "object" } } };

const request = (fields: Record<string, unknown> = {}) =>
  parseChatRequest({
    model: "m",
    messages: [{ role: "user", content: "fix it" }],
    tools: [patchTool, shellTool],
    ...fields,
  });

test("custom tools become function tools of one string argument whose description carries the grammar", () => {
  const out = customToolsAsFunctions(
    request({ tool_choice: { type: "custom", custom: { name: "apply_patch" } } }),
  );
  const fn = (out.tools![0] as any).function;
  assert.equal(out.tools![0]!.type, "function");
  assert.equal(fn.name, "apply_patch");
  assert.equal(fn.description, "Edit files");
  assert.deepEqual(fn.parameters.required, ["input"]);
  assert.equal(fn.parameters.properties.input.type, "string");
  assert.ok(fn.parameters.properties.input.description.includes(GRAMMAR));
  assert.ok(fn.parameters.properties.input.description.includes("lark"));
  assert.deepEqual(out.tools![1], shellTool, "function tools are left as they are");
  assert.deepEqual(out.tool_choice, { type: "function", function: { name: "apply_patch" } });
});

test("earlier custom calls go back as function calls with their input as the argument", () => {
  const req = request({
    messages: [
      { role: "user", content: "fix it" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_1", type: "custom", custom: { name: "apply_patch", input: "*** Begin Patch\n" } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "Done" },
    ],
  });
  const out = customToolsAsFunctions(req);
  assert.deepEqual((out.messages[1] as any).tool_calls, [
    {
      id: "call_1",
      type: "function",
      function: { name: "apply_patch", arguments: '{"input":"*** Begin Patch\\n"}' },
    },
  ]);
  assert.equal((req.messages[1] as any).tool_calls[0].type, "custom", "the client's request is not changed");
});

test("a request without custom tools or calls is returned as it is", () => {
  const req = parseChatRequest({
    model: "m",
    messages: [{ role: "user", content: "x" }],
    tools: [shellTool],
  });
  assert.equal(customToolsAsFunctions(req), req);
  assert.equal(customToolNames(req).size, 0);
});

test("the prompt bound covers the function form", () => {
  const req = request();
  const bound = promptUpperBound(req, DEFAULT_PROMPT_OVERHEADS);
  const asFunctions = promptUpperBound(customToolsAsFunctions(req), DEFAULT_PROMPT_OVERHEADS);
  assert.equal(bound, asFunctions);
  const withoutCustom = promptUpperBound(request({ tools: [patchTool] }), DEFAULT_PROMPT_OVERHEADS);
  assert.ok(withoutCustom > Buffer.byteLength(JSON.stringify(patchTool)) + 200);
});

const completion = (toolCalls: unknown[]): Completion => ({
  object: "chat.completion",
  choices: [
    {
      index: 0,
      message: { role: "assistant", content: null, tool_calls: toolCalls },
      finish_reason: "tool_calls",
    },
  ],
});

test("a function call of a custom tool comes back as a custom call; others stay function calls", () => {
  const names = customToolNames(request());
  const out = restoreCustomCalls(
    completion([
      { id: "c1", type: "function", function: { name: "apply_patch", arguments: '{"input":"patch text"}' } },
      { id: "c2", type: "function", function: { name: "shell", arguments: '{"cmd":"ls"}' } },
      { id: "c3", type: "function", function: { name: "apply_patch", arguments: "not json" } },
    ]),
    names,
  );
  assert.deepEqual(out.choices[0]!.message.tool_calls, [
    { id: "c1", type: "custom", custom: { name: "apply_patch", input: "patch text" } },
    { id: "c2", type: "function", function: { name: "shell", arguments: '{"cmd":"ls"}' } },
    { id: "c3", type: "custom", custom: { name: "apply_patch", input: "not json" } },
  ]);
});

async function* chunksOf(deltas: Array<[Record<string, unknown>, string | null]>): AsyncGenerator<Chunk> {
  for (const [delta, finish] of deltas)
    yield { object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish as any }] };
  yield {
    object: "chat.completion.chunk",
    choices: [],
    usage: { prompt: 1, completion: 2, cachedInput: 0, cacheWrite: 0, reasoning: 0 },
  };
}

test("streamed: a custom call's deltas are held and sent whole before the finish; function calls pass as they come", async () => {
  const names = customToolNames(request());
  const fnCall = (index: number, fields: Record<string, unknown>) => ({ tool_calls: [{ index, ...fields }] });
  const { chunks, error } = await drain(
    restoreCustomCallChunks(
      chunksOf([
        [{ role: "assistant", content: null }, null],
        [fnCall(0, { id: "c1", type: "function", function: { name: "apply_patch", arguments: "" } }), null],
        [fnCall(0, { function: { arguments: '{"input":"line 1\\n' } }), null],
        [fnCall(1, { id: "c2", type: "function", function: { name: "shell", arguments: '{"cmd"' } }), null],
        [fnCall(0, { function: { arguments: 'line 2"}' } }), null],
        [fnCall(1, { function: { arguments: ':"ls"}' } }), null],
        [{}, "tool_calls"],
      ]),
      names,
    ),
  );
  assert.equal(error, undefined);
  const deltas = chunks.flatMap((c) => c.choices.map((ch) => [ch.delta, ch.finish_reason]));
  assert.deepEqual(deltas, [
    [{ role: "assistant", content: null }, null],
    [fnCall(1, { id: "c2", type: "function", function: { name: "shell", arguments: '{"cmd"' } }), null],
    [fnCall(1, { function: { arguments: ':"ls"}' } }), null],
    [fnCall(0, { id: "c1", type: "custom", custom: { name: "apply_patch", input: "line 1\nline 2" } }), null],
    [{}, "tool_calls"],
  ]);
  assert.deepEqual(chunks.at(-1)!.usage?.completion, 2, "the usage chunk passes");
});

test("streamed: a custom call of a stream that never finishes is still sent, at the end", async () => {
  const names = customToolNames(request());
  const { chunks } = await drain(
    restoreCustomCallChunks(
      chunksOf([
        [
          {
            tool_calls: [
              { index: 0, id: "c1", function: { name: "apply_patch", arguments: '{"input":"x"}' } },
            ],
          },
          null,
        ],
      ]),
      names,
    ),
  );
  const custom = chunks.flatMap((c) => c.choices).find((c) => c.delta.tool_calls);
  assert.deepEqual((custom!.delta.tool_calls as any)[0].custom, { name: "apply_patch", input: "x" });
});

test("a provider that sends a call's custom tools as functions gets its calls turned back; others as they came", async () => {
  const call = (translated: boolean) => ({ request: request(), translated }) as unknown as UpstreamCall;
  const answer = () =>
    completion([
      { id: "c1", type: "function", function: { name: "apply_patch", arguments: '{"input":"x"}' } },
    ]);
  const stream = () =>
    chunksOf([
      [{ tool_calls: [{ index: 0, id: "c1", function: { name: "apply_patch", arguments: "{}" } }] }, null],
    ]);
  const plain = fakeProvider({ complete: async () => answer(), stream });
  assert.equal(restoringCustomCalls(plain), plain, "a provider that never does is left as it is");
  const provider = restoringCustomCalls(
    Object.assign(fakeProvider({ complete: async () => answer(), stream }), {
      sendsCustomToolsAsFunctions: (c: UpstreamCall) => (c as unknown as { translated: boolean }).translated,
    }),
  );
  const typeOf = (c: Completion) => (c.choices[0]!.message.tool_calls as Array<{ type: string }>)[0]!.type;
  assert.equal(typeOf(await provider.complete(call(true))), "custom");
  assert.equal(typeOf(await provider.complete(call(false))), "function");
  const streamed = async (translated: boolean) =>
    (await drain(provider.stream(call(translated)))).chunks
      .flatMap((c) => c.choices)
      .flatMap((c) => (c.delta.tool_calls as Array<{ type?: string }> | undefined) ?? [])
      .map((d) => d.type ?? "function")[0];
  assert.equal(await streamed(true), "custom");
  assert.equal(await streamed(false), "function");
});
