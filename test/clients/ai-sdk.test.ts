// The Vercel AI SDK (`ai`) through the gateway, with its three ways in: @ai-sdk/openai's
// default `openai(model)` (OpenAI's Responses API), `openai.chat(model)` (chat completions)
// and @ai-sdk/anthropic (the Messages API). generateText and streamText, tools run by the SDK
// (stopWhen), Output.object, and the conversation as the SDK builds it: the earlier turns and
// `response.messages` sent back, which the Responses provider sends as `item_reference`
// items when `store` is not false (the gateway resolves them from its store).
import assert from "node:assert/strict";
import { load } from "./install.ts";
import { type Client, type ClientContext, clientSuite, type Row, TOOL, type WireCall } from "./suite.ts";

// the SDK warns on the console about Anthropic model names it does not know (the gateway's are its own)
(globalThis as any).AI_SDK_LOG_WARNINGS = false;

const ai = await load("ai");
const { createOpenAI } = await load("@ai-sdk/openai");
const { createAnthropic } = await load("@ai-sdk/anthropic");
const { z } = await load("zod");

const citySchema = () => z.object({ city: z.string(), population: z.number() });

/** The scenarios with an AI SDK language model. */
function aiSdkClient(model: any, providerOptions?: Record<string, unknown>): Client {
  const common = { model, maxRetries: 0, ...(providerOptions ? { providerOptions } : {}) };
  const usage = (u: any) => ({ input: u.inputTokens, output: u.outputTokens });
  /** streamText reports errors to onError and ends the stream; a test wants them thrown */
  async function drain(result: any, failed: unknown[]): Promise<string> {
    let text = "";
    for await (const piece of result.textStream) text += piece;
    if (failed.length) throw failed[0];
    return text;
  }
  const tools = (run: (city: string) => string) => ({
    [TOOL.name]: ai.tool({
      description: TOOL.description,
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }: { city: string }) => run(city),
    }),
  });
  return {
    async plain(prompt) {
      const r = await ai.generateText({ ...common, prompt });
      return { text: r.text, usage: usage(r.usage) };
    },
    async stream(prompt) {
      const failed: unknown[] = [];
      const r = ai.streamText({ ...common, prompt, onError: ({ error }: any) => failed.push(error) });
      const text = await drain(r, failed);
      return { text, usage: usage(await r.usage) };
    },
    async tools(prompt, stream, run) {
      const options = { ...common, prompt, tools: tools(run), stopWhen: ai.stepCountIs(3) };
      if (!stream) return (await ai.generateText(options)).text;
      const failed: unknown[] = [];
      const r = ai.streamText({ ...options, onError: ({ error }: any) => failed.push(error) });
      return drain(r, failed);
    },
    async structured(prompt) {
      const r = await ai.generateText({
        ...common,
        prompt,
        output: ai.Output.object({ schema: citySchema() }),
      });
      return r.output;
    },
    async structuredStream(prompt) {
      const failed: unknown[] = [];
      const r = ai.streamText({
        ...common,
        prompt,
        output: ai.Output.object({ schema: citySchema() }),
        onError: ({ error }: any) => failed.push(error),
      });
      for await (const _partial of r.partialOutputStream) {
      }
      if (failed.length) throw failed[0];
      return r.output;
    },
    async conversation(turns) {
      const messages: any[] = [];
      const answers: string[] = [];
      for (const turn of turns) {
        messages.push({ role: "user", content: turn });
        const r = await ai.generateText({ ...common, messages });
        messages.push(...r.response.messages);
        answers.push(r.text);
      }
      return answers;
    },
  };
}

/** The SDK's errors: APICallError with the gateway's status. */
function typedError(err: unknown, status: 401 | 404) {
  assert.ok(ai.APICallError.isInstance(err), `an APICallError, not ${String(err)}`);
  assert.equal((err as any).statusCode, status);
  assert.match((err as any).message, status === 401 ? /API key/ : /no-such-model/);
}

/** The Responses provider sends the earlier answer back as an item_reference (store is not false). */
function sendsItemReference(sent: WireCall[]) {
  const second = sent.at(-1)!.body.input as any[];
  assert.ok(
    second.some((item) => item.type === "item_reference" && /^msg_/.test(item.id)),
    `the second turn refers to the first answer by id: ${JSON.stringify(second)}`,
  );
}

const openaiProvider = (ctx: ClientContext) =>
  createOpenAI({ baseURL: ctx.baseURL, apiKey: ctx.key, fetch: ctx.fetch });

const rows: Row[] = [
  {
    name: "AI SDK, @ai-sdk/openai openai(model): Responses API",
    packages: ["ai", "@ai-sdk/openai"],
    api: "responses",
    client: async (ctx) => aiSdkClient(openaiProvider(ctx)(ctx.model)),
    typedError,
    structured: [{ variant: "", label: "Output.object: text.format json_schema", via: "schema" }],
    conversations: [
      { variant: "", label: "response.messages sent back: item_reference items", check: sendsItemReference },
    ],
  },
  {
    name: "AI SDK, @ai-sdk/openai openai.chat(model): chat completions",
    packages: ["ai", "@ai-sdk/openai"],
    api: "chat.completions",
    client: async (ctx) => aiSdkClient(openaiProvider(ctx).chat(ctx.model)),
    typedError,
    structured: [{ variant: "", label: "Output.object: response_format json_schema", via: "schema" }],
    conversations: [{ variant: "", label: "response.messages sent back" }],
  },
  {
    name: "AI SDK, @ai-sdk/anthropic anthropic(model): Messages API",
    packages: ["ai", "@ai-sdk/anthropic"],
    api: "messages",
    client: async (ctx) => {
      const anthropic = createAnthropic({ baseURL: ctx.baseURL, apiKey: ctx.key, fetch: ctx.fetch });
      const client = aiSdkClient(anthropic(ctx.model));
      const native = aiSdkClient(anthropic(ctx.model), {
        anthropic: { structuredOutputMode: "outputFormat" },
      });
      return {
        ...client,
        structured: (prompt, variant) => (variant ? native : client).structured(prompt, ""),
        structuredStream: (prompt, variant) => (variant ? native : client).structuredStream(prompt, ""),
      };
    },
    typedError,
    structured: [
      // the SDK knows no gateway model name, so it takes its `json` tool, forced
      {
        variant: "",
        label: "Output.object, default for a model the SDK does not know: a forced json tool",
        via: "tool",
      },
      {
        variant: "outputFormat",
        label: "Output.object, structuredOutputMode outputFormat: output_config.format",
        via: "schema",
      },
    ],
    conversations: [{ variant: "", label: "response.messages sent back" }],
  },
];

for (const row of rows) clientSuite(row);
