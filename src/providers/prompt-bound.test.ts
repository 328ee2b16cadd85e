import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type ChatRequest, parseChatRequest } from "../domain/chat-request.ts";
import { parseEmbeddingRequest } from "../domain/embedding-request.ts";
import { countText } from "../tokens/count.ts";
import {
  DEFAULT_PROMPT_OVERHEADS,
  embeddingPromptBound,
  localPromptTokens,
  promptUpperBound,
} from "./prompt-bound.ts";

const O = DEFAULT_PROMPT_OVERHEADS;
const req = (fields: Record<string, unknown>): ChatRequest => parseChatRequest({ model: "m", ...fields });
const bytes = (s: string) => Buffer.byteLength(s, "utf8");

/**
 * A template rendered as it is tokenized: special tokens, the template's own fixed text, and
 * the texts that come from the request (as the template renders them).
 */
class Rendered {
  specials = 0;
  fixed = "";
  request = "";
  special(n = 1): this {
    this.specials += n;
    return this;
  }
  own(text: string): this {
    this.fixed += text;
    return this;
  }
  text(text: string): this {
    this.request += text;
    return this;
  }
  /** JSON the template indents: its compact text, and per line a newline and a run of spaces */
  indented(value: unknown): this {
    this.specials += 2 * JSON.stringify(value, null, 4).split("\n").length;
    return this.text(JSON.stringify(value));
  }
  /**
   * The most tokens a byte-level tokenizer can make of it: one per special (or formatting) token, the fixed
   * text as it tokenizes (o200k standing in for the model's own vocabulary, whose counts of
   * English are alike), one per UTF-8 byte of the request's texts.
   */
  mostTokens(): number {
    return this.specials + countText(this.fixed) + bytes(this.request);
  }
}

type ToolCalls = { tool_calls?: { function: { name: string; arguments: string } }[] };

/** Llama 3.1's template: a default system block with its dates, tools inlined as indented JSON. */
function llama31(r: ChatRequest): Rendered {
  const out = new Rendered().special(3).own("system\n\n");
  if (r.tools) out.own("Environment: ipython\n");
  out.own("Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
  const messages = [...r.messages];
  if (messages[0]?.role === "system") out.text(String(messages.shift()!.content));
  out.special();
  messages.forEach((m, i) => {
    out.special(2).own(`${m.role === "tool" ? "ipython" : m.role}\n\n`);
    if (i === 0 && r.tools) {
      out.own(
        "Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" +
          'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.\n\n',
      );
      for (const t of r.tools) out.indented(t).own("\n\n");
    }
    if (typeof m.content === "string") out.text(m.content);
    for (const c of (m as ToolCalls).tool_calls ?? [])
      out
        .own('{"name": "')
        .text(c.function.name)
        .own('", "parameters": ')
        .text(c.function.arguments)
        .own("}");
    out.special();
  });
  return out.special(2).own("assistant\n\n");
}

/** Qwen 2.5's ChatML template, with its default system prompt and tool instructions. */
function qwen25(r: ChatRequest): Rendered {
  const messages = [...r.messages];
  const out = new Rendered().special().own("system\n");
  if (messages[0]?.role === "system") out.text(String(messages.shift()!.content));
  else out.own("You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  if (r.tools) {
    out.own(
      "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>",
    );
    for (const t of r.tools)
      out.own("\n").text(JSON.stringify(t).replaceAll(",", ", ").replaceAll(":", ": "));
    out.own(
      '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>',
    );
  }
  out.special().own("\n");
  for (const m of messages) {
    out.special().own(`${m.role}\n`);
    if (typeof m.content === "string") out.text(m.content);
    for (const c of (m as ToolCalls).tool_calls ?? [])
      out
        .own('\n<tool_call>\n{"name": "')
        .text(c.function.name)
        .own('", "arguments": ')
        .text(c.function.arguments)
        .own("}\n</tool_call>");
    out.special().own("\n");
  }
  return out.special().own("assistant\n");
}

const weather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The current weather in a city.",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", description: "The city, e.g. Paris" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] },
      },
      required: ["city"],
    },
  },
};

const SAMPLES: Record<string, ChatRequest> = {
  "one short message": req({ messages: [{ role: "user", content: "hi" }] }),
  "an empty message": req({ messages: [{ role: "user", content: "" }] }),
  "a conversation": req({
    messages: [
      { role: "system", content: "You answer briefly." },
      { role: "user", content: "What is the capital of France?" },
      { role: "assistant", content: "Paris." },
      { role: "user", content: "And of Japan? 日本の首都は？ 🗾" },
    ],
  }),
  tools: req({
    messages: [
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: '{"temp":21}' },
    ],
    tools: [weather],
  }),
};

describe("promptUpperBound", () => {
  for (const [name, r] of Object.entries(SAMPLES)) {
    test(`${name}: at least what Llama 3.1's and Qwen 2.5's templates can count`, () => {
      const bound = promptUpperBound(r, O);
      const llama = llama31(r).mostTokens();
      const qwen = qwen25(r).mostTokens();
      assert.ok(bound >= llama, `bound ${bound} < ${llama} (Llama 3.1)`);
      assert.ok(bound >= qwen, `bound ${bound} < ${qwen} (Qwen 2.5)`);
    });

    test(`${name}: at least the local o200k count with OpenAI's framing`, () => {
      assert.ok(promptUpperBound(r, O) >= localPromptTokens(r));
    });

    test(`${name}: at least ceil(characters of the messages JSON / 4) + 3`, () => {
      assert.ok(promptUpperBound(r, O) >= Math.ceil(JSON.stringify(r.messages).length / 4) + 3);
    });
  }

  test("counts UTF-8 bytes, not characters", () => {
    const ascii = promptUpperBound(req({ messages: [{ role: "user", content: "aaaa" }] }), O);
    const cjk = promptUpperBound(req({ messages: [{ role: "user", content: "日本語で" }] }), O);
    assert.equal(cjk - ascii, 12 - 4);
  });

  test("names, tool calls, tool results, tools, schemas and predictions are text the model reads", () => {
    const base = req({ messages: [{ role: "user", content: "x" }] });
    const b = promptUpperBound(base, O);
    const named = req({ messages: [{ role: "user", content: "x", name: "alice" }] });
    assert.equal(promptUpperBound(named, O), b + 5);
    const schema = { type: "json_schema", json_schema: { name: "answer", schema: { type: "object" } } };
    assert.equal(
      promptUpperBound(req({ messages: base.messages, response_format: schema }), O),
      b + bytes(JSON.stringify(schema)),
    );
    const lines = JSON.stringify([weather], null, 1).split("\n").length;
    assert.equal(
      promptUpperBound(req({ messages: base.messages, tools: [weather] }), O),
      b + O.tools + bytes(JSON.stringify([weather])) + 2 * lines,
    );
    const prediction = { type: "content", content: "the predicted text" };
    assert.equal(
      promptUpperBound(req({ messages: base.messages, prediction }), O),
      b + bytes(JSON.stringify(prediction)),
    );
  });

  test("each non-text part has its own bound; inline file data counts on top", () => {
    const parts = (...content: unknown[]) => req({ messages: [{ role: "user", content }] });
    const text = { type: "text", text: "look" };
    const b = promptUpperBound(parts(text), O);
    assert.equal(
      promptUpperBound(parts(text, { type: "image_url", image_url: { url: "https://x/a.png" } }), O),
      b + O.image,
    );
    assert.equal(
      promptUpperBound(parts(text, { type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }), O),
      b + O.audio,
    );
    assert.equal(
      promptUpperBound(parts(text, { type: "file", file: { file_data: "JVBERi0=" } }), O),
      b + O.file + 8,
    );
  });

  test("the overheads are the model's: per request, per message", () => {
    const r = req({
      messages: [
        { role: "user", content: "a" },
        { role: "user", content: "b" },
      ],
    });
    const zero = { ...O, per_request: 0, per_message: 0 };
    assert.equal(promptUpperBound(r, zero), 2);
    assert.equal(promptUpperBound(r, { ...zero, per_request: 100, per_message: 10 }), 122);
  });
});

describe("embeddingPromptBound", () => {
  const embed = (body: Record<string, unknown>) => parseEmbeddingRequest({ model: "m", ...body });

  test("each text's UTF-8 bytes plus its markers, token ids as given, the request's share once", () => {
    const texts = ["héllo wörld", "日本語のテキスト", "emoji 🙂🙂", "plain"];
    assert.equal(
      embeddingPromptBound(embed({ input: texts }), O),
      O.per_request + texts.reduce((n, t) => n + O.per_message + bytes(t), 0),
    );
    assert.equal(embeddingPromptBound(embed({ input: [1, 2, 3] }), O), O.per_request + O.per_message + 3);
    assert.equal(
      embeddingPromptBound(embed({ input: [[1, 2], [3]] }), O),
      O.per_request + 2 * O.per_message + 3,
    );
  });

  test("never below what a byte-level tokenizer counts, with a BOS and an EOS per input", () => {
    const texts = [
      "The quick brown fox",
      "Ünïcödé everywhere",
      "数学と物理",
      "🙂".repeat(40),
      "a".repeat(500),
    ];
    for (const text of texts)
      assert.ok(
        embeddingPromptBound(embed({ input: text }), O) >= countText(text) + 2,
        `the bound of ${JSON.stringify(text.slice(0, 20))} covers its count`,
      );
  });

  test("fields the gateway does not read count: a server may read them as input", () => {
    const extra = { instruction: "Represent this sentence for retrieval:" };
    assert.equal(
      embeddingPromptBound(embed({ input: "a", ...extra }), O),
      O.per_request + O.per_message + 1 + bytes(extra.instruction),
    );
  });
});
